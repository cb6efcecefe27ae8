//! OTLP over HTTP through notify-opentelemetry.

use std::time::Duration;

use notify_core::{Notifier, Pattern, Subscription};
use notify_opentelemetry::OpenTelemetryExporter;
use opentelemetry_otlp::{Protocol, WithExportConfig};

use crate::config::Otlp;
use crate::SetupError;

/// Spans to the OTLP endpoint, subscribed to every event of `notifier`.
pub(crate) struct OtlpSink {
    subscription: Option<Subscription>,
    exporter: OpenTelemetryExporter,
}

/// The one function that wires OpenTelemetry: today notify-opentelemetry's own queue and thread
/// drive opentelemetry-otlp's HTTP exporter (reqwest's blocking client, no tokio needed).
pub(crate) fn start(notifier: &Notifier, otlp: &Otlp, service_name: &str) -> Result<OtlpSink, SetupError> {
    let protocol = if otlp.json {
        Protocol::HttpJson
    } else {
        Protocol::HttpBinary
    };
    let spans = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_endpoint(otlp.traces_endpoint.clone())
        .with_protocol(protocol)
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
