//! OTLP over HTTP (ureq) or gRPC (tonic, feature `otlp-grpc`) through notify-opentelemetry.

use std::io::Read as _;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use notify_core::{Notifier, Pattern, Subscription};
use notify_opentelemetry::OpenTelemetryExporter;
use opentelemetry_http::{HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};

use crate::config::{Otlp, OtlpProtocol};
use crate::SetupError;

/// The most of a collector's response that is read (its body is a small status message).
const RESPONSE_LIMIT: u64 = 1024 * 1024;

/// Spans to the OTLP endpoint, subscribed to every event of `notifier`.
pub(crate) struct OtlpSink {
    subscription: Option<Subscription>,
    exporter: OpenTelemetryExporter,
}

/// The one function that wires OpenTelemetry: notify-opentelemetry's export collector drives
/// opentelemetry-otlp's exporter (HTTP over ureq, or gRPC over tonic) on a current-thread tokio
/// runtime of its own, on the collector's thread. Not the application's runtime: export then
/// works the same from a plain `main`, a multi-thread or a current-thread runtime (whose I/O
/// would stall while its one thread drops the guard), and the guard still flushes after the
/// application's runtime has ended.
pub(crate) fn start(notifier: &Notifier, otlp: &Otlp, service_name: &str) -> Result<OtlpSink, SetupError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .thread_name("notify-export")
        .build()
        .map_err(|e| SetupError::sink("OTLP exporter", e))?;
    let spans = {
        // tonic's channel is made inside the runtime that will drive it.
        let _inside = runtime.enter();
        span_exporter(otlp)
    };
    let spans = match spans {
        Ok(spans) => spans,
        Err(error) => {
            // Dropping a runtime blocks, which panics inside an application's async context.
            runtime.shutdown_background();
            return Err(SetupError::sink("OTLP exporter", error));
        }
    };
    let exporter = OpenTelemetryExporter::builder(spans)
        .service_name(service_name)
        .runtime(runtime)
        .build();
    let subscription = exporter.subscribe(notifier, Pattern::all());
    Ok(OtlpSink {
        subscription: Some(subscription),
        exporter,
    })
}

/// opentelemetry-otlp's exporter for `otlp`'s protocol, endpoint, timeout and headers.
fn span_exporter(otlp: &Otlp) -> Result<opentelemetry_otlp::SpanExporter, opentelemetry_otlp::ExporterBuildError> {
    let protocol = match otlp.protocol {
        OtlpProtocol::HttpProtobuf => Protocol::HttpBinary,
        OtlpProtocol::HttpJson => Protocol::HttpJson,
        #[cfg(feature = "otlp-grpc")]
        OtlpProtocol::Grpc => return grpc::span_exporter(otlp),
        // features::check refuses `grpc` without the feature before any sink starts.
        #[cfg(not(feature = "otlp-grpc"))]
        OtlpProtocol::Grpc => {
            return Err(opentelemetry_otlp::ExporterBuildError::InternalFailure(
                "grpc needs the `otlp-grpc` feature".to_owned(),
            ))
        }
    };
    opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(Blocking::new(otlp.timeout))
        .with_endpoint(otlp.traces_endpoint.clone())
        .with_protocol(protocol)
        .with_timeout(otlp.timeout)
        .with_headers(otlp.headers.iter().cloned().collect())
        .build()
}

#[cfg(feature = "otlp-grpc")]
mod grpc {
    use opentelemetry_otlp::tonic_types::metadata::MetadataMap;
    use opentelemetry_otlp::{ExporterBuildError, WithExportConfig, WithTonicConfig};

    use crate::config::Otlp;

    /// opentelemetry-otlp's tonic exporter; must be called inside the runtime that drives it.
    pub(super) fn span_exporter(otlp: &Otlp) -> Result<opentelemetry_otlp::SpanExporter, ExporterBuildError> {
        let mut headers = http::HeaderMap::new();
        for (name, value) in &otlp.headers {
            // The configuration checked both (a token name, printable ASCII value).
            let invalid =
                |e: &dyn std::fmt::Display| ExporterBuildError::InvalidConfiguration(format!("header {name}: {e}"));
            let header_name = http::HeaderName::from_bytes(name.as_bytes()).map_err(|e| invalid(&e))?;
            let value = http::HeaderValue::from_str(value).map_err(|e| invalid(&e))?;
            headers.append(header_name, value);
        }
        opentelemetry_otlp::SpanExporter::builder()
            .with_tonic()
            .with_endpoint(otlp.traces_endpoint.clone())
            .with_timeout(otlp.timeout)
            .with_metadata(MetadataMap::from_headers(headers))
            .build()
    }
}

impl OtlpSink {
    /// Stops taking events, then exports what is queued within `deadline`.
    pub(crate) fn shutdown(&mut self, deadline: Duration) {
        if let Some(s) = self.subscription.take() {
            let _ = s.unsubscribe();
        }
        if let Err(e) = self.exporter.shutdown(deadline) {
            log::warn!(target: "instrumentation_setup", "OpenTelemetry export did not finish: {e}");
        }
    }
}

/// opentelemetry-http's client trait over a ureq agent: the request is sent on the export
/// collector's thread, blocking it inside its own current-thread runtime (nothing else runs
/// there), so no async I/O is involved.
#[derive(Debug)]
struct Blocking(ureq::Agent);

impl Blocking {
    fn new(timeout: Duration) -> Blocking {
        let config = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            // A collector's 4xx/5xx is a response to report, not a transport error.
            .http_status_as_error(false)
            .build();
        Blocking(ureq::Agent::new_with_config(config))
    }
}

#[async_trait]
impl HttpClient for Blocking {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let (parts, body) = request.into_parts();
        let request = Request::from_parts(parts, body.to_vec());
        let response = self.0.run(request)?;
        let (parts, body) = response.into_parts();
        let mut bytes = Vec::new();
        body.into_reader().take(RESPONSE_LIMIT).read_to_end(&mut bytes)?;
        Ok(Response::from_parts(parts, Bytes::from(bytes)))
    }
}
