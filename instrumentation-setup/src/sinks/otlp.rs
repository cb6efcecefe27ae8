//! OTLP over HTTP through notify-opentelemetry.

use std::io::Read as _;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use notify_core::{Notifier, Pattern, Subscription};
use notify_opentelemetry::OpenTelemetryExporter;
use opentelemetry_http::{HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};

use crate::config::Otlp;
use crate::SetupError;

/// How long one export request may take, connection and response included.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// The most of a collector's response that is read (its body is a small status message).
const RESPONSE_LIMIT: u64 = 1024 * 1024;

/// Spans to the OTLP endpoint, subscribed to every event of `notifier`.
pub(crate) struct OtlpSink {
    subscription: Option<Subscription>,
    exporter: OpenTelemetryExporter,
}

/// The one function that wires OpenTelemetry: today notify-opentelemetry's own queue and thread
/// drive opentelemetry-otlp's HTTP exporter over ureq (blocking, no async runtime needed).
pub(crate) fn start(notifier: &Notifier, otlp: &Otlp, service_name: &str) -> Result<OtlpSink, SetupError> {
    let protocol = if otlp.json {
        Protocol::HttpJson
    } else {
        Protocol::HttpBinary
    };
    let spans = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(Blocking::new())
        .with_endpoint(otlp.traces_endpoint.clone())
        .with_protocol(protocol)
        .with_timeout(REQUEST_TIMEOUT)
        .build()
        .map_err(|e| SetupError::sink("OTLP exporter", e))?;
    let exporter = OpenTelemetryExporter::builder(spans).service_name(service_name).build();
    let subscription = exporter.subscribe(notifier, Pattern::all());
    Ok(OtlpSink {
        subscription: Some(subscription),
        exporter,
    })
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

/// opentelemetry-http's client trait over a ureq agent: the request is sent on the calling
/// thread (notify-opentelemetry's exporter thread), so no async runtime is involved.
#[derive(Debug)]
struct Blocking(ureq::Agent);

impl Blocking {
    fn new() -> Blocking {
        let config = ureq::Agent::config_builder()
            .timeout_global(Some(REQUEST_TIMEOUT))
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
