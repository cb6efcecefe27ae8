//! The exporter thread is telemetry-suppressed: a SpanExporter that traces its own work (as OTLP
//! clients do) does not feed those spans back through notify-tracing's bridge as events to export.
//! (Its own test binary: it sets the global tracing subscriber, which the exporter thread uses.)

use std::time::Duration;

use notify_core::{Notifier, Pattern, Payload};
use notify_opentelemetry::OpenTelemetryExporter;
use notify_tracing::NotifyLayer;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};
use tracing_subscriber::prelude::*;

/// A SpanExporter that logs each export through `tracing`.
#[derive(Debug)]
struct Chatty;

impl SpanExporter for Chatty {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        tracing::info!(target: "collector_client", spans = batch.len(), "sent a batch");
        Ok(())
    }
}

#[test]
fn what_the_span_exporter_traces_is_not_exported_again() {
    let notifier = Notifier::new();
    tracing_subscriber::registry()
        .with(NotifyLayer::with_notifier(notifier.clone()))
        .init();
    let exporter = OpenTelemetryExporter::new(Chatty);
    let _s = exporter.subscribe(&notifier, Pattern::all());
    notifier.instrument("request.suppression", Payload::new, |_| ());
    // The bridge works on this thread: a tracing event here is a notify event, exported.
    tracing::info!(target: "app", "hello");
    let first = exporter.force_flush().unwrap();
    assert_eq!(first.exported, 2, "{first:?}");
    // Without suppression the export's own log line would be an event to export, and so on.
    std::thread::sleep(Duration::from_millis(50));
    let second = exporter.force_flush().unwrap();
    assert_eq!((second.exported, second.received()), (2, 2), "{second:?}");
}
