//! [`SpanSink`]: the OpenTelemetry exporter's sink on the collector: events to [`SpanData`], then
//! the `SpanExporter`.

use std::sync::Arc;

use notify_core::Event;
use notify_export::{Sink, SinkError, SinkFuture};
use opentelemetry::InstrumentationScope;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};

use crate::span::span_data;

/// A [`Sink`] that converts each batch of events into spans ([`span_data`]) and awaits
/// `SpanExporter::export` on the collector's runtime: what
/// [`OpenTelemetryExporter`](crate::OpenTelemetryExporter) puts behind its
/// [`Collector`](notify_export::Collector). Use it directly to put a `SpanExporter` behind a
/// collector configured otherwise.
///
/// `Err` from the exporter (or a panic) counts the batch `dropped_exporter_error`, with the
/// error's text in the drop report. `flush` is the exporter's `force_flush`, `shutdown` its
/// `shutdown`.
#[derive(Debug)]
pub struct SpanSink<E> {
    exporter: E,
    scope: InstrumentationScope,
}

impl<E: SpanExporter + 'static> SpanSink<E> {
    /// A sink exporting to `exporter`, with the instrumentation scope `notify` and this crate's
    /// version.
    pub fn new(exporter: E) -> SpanSink<E> {
        SpanSink {
            exporter,
            scope: InstrumentationScope::builder("notify")
                .with_version(env!("CARGO_PKG_VERSION"))
                .build(),
        }
    }

    /// The `SpanExporter`, to configure it before the collector starts (its resource).
    pub(crate) fn exporter_mut(&mut self) -> &mut E {
        &mut self.exporter
    }
}

impl<E: SpanExporter + 'static> Sink for SpanSink<E> {
    fn export<'a>(&'a mut self, batch: &'a [Arc<Event>]) -> SinkFuture<'a> {
        let spans: Vec<SpanData> = batch.iter().map(|event| span_data(event, &self.scope)).collect();
        let export = self.exporter.export(spans);
        Box::pin(async move { export.await.map_err(|error| SinkError::new(error.to_string())) })
    }

    fn flush(&mut self) -> SinkFuture<'_> {
        notify_export::ready(
            self.exporter
                .force_flush()
                .map_err(|error| SinkError::new(error.to_string())),
        )
    }

    fn shutdown(&mut self) -> SinkFuture<'_> {
        notify_export::ready(
            self.exporter
                .shutdown()
                .map_err(|error| SinkError::new(error.to_string())),
        )
    }
}
