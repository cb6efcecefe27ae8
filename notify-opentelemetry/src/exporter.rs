//! [`OpenTelemetryExporter`]: the subscription side (events in, spans out through a processor).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use notify_core::{Event, EventSubscriber, Notifier, Pattern, Subscriber, Subscription};
use opentelemetry::InstrumentationScope;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{BatchSpanProcessor, SpanExporter, SpanProcessor};
use opentelemetry_sdk::Resource;

use crate::span::span_data;

/// Exports finished notify events as OpenTelemetry spans through an `opentelemetry_sdk`
/// [`SpanProcessor`] — a [`BatchSpanProcessor`] around your exporter by default — so OTLP, stdout,
/// in-memory or any other [`SpanExporter`] works unchanged. The mapping is [`span_data`]: the
/// event's trace id, its id as span id, its parent's id as parent span id, its times, its payload
/// as typed attributes, its outcome as status and a recorded error as an `exception` event.
///
/// Subscribed, it is an event-object subscriber: at each finished event it builds the span and
/// calls the processor's `on_end` on the instrumenting thread (the batch processor only queues
/// it; its own thread exports). Every span is sampled: what to export is chosen by the
/// subscription's pattern. The processor's `on_start` is not called (there is no SDK `Span` for a
/// notify event); processors that only act at `on_end`, as the SDK's batch and simple processors
/// do, see every span. Cloning shares the processor.
///
/// **Parents.** A notify event's parent is the innermost event *listened to by anyone* that is
/// current when it starts, not the innermost one this exporter exports. With the exporter on
/// `*.sql` only, a query inside a request is a root span while nobody listens to the request, and
/// the child of an unexported span (parent span id set, parent never exported) as soon as some
/// other subscriber listens to it. Backends show such a span as having a missing parent. To get
/// linked traces, subscribe the exporter to every event whose span should appear in them
/// (`Pattern::all()`, or a pattern that covers the enclosing events too).
///
/// **Span ids** are the notify event ids: unique in one process, but small counters that start at
/// 1 in every process, not the random 8 bytes W3C trace-context asks for. Spans of two processes
/// sharing a trace (through NATS or a propagated context) can therefore have equal span ids.
///
/// ```
/// use notify_core::{Notifier, Pattern, Payload};
/// use notify_opentelemetry::OpenTelemetryExporter;
/// use opentelemetry_sdk::trace::{InMemorySpanExporter, SimpleSpanProcessor};
///
/// let spans = InMemorySpanExporter::default();
/// // With OTLP: OpenTelemetryExporter::new(opentelemetry_otlp::SpanExporter::builder().with_tonic().build()?)
/// let exporter = OpenTelemetryExporter::with_processor(SimpleSpanProcessor::new(spans.clone()));
/// let notifier = Notifier::new();
/// let _subscription = exporter.subscribe(&notifier, Pattern::all());
/// notifier.instrument("request.http", || Payload::new().with("path", "/"), |_| {
///     notifier.instrument("query.sql", Payload::new, |_| ());
/// });
/// exporter.force_flush()?;
/// let spans = spans.get_finished_spans()?;
/// assert_eq!(spans[0].name, "query.sql");
/// assert_eq!(spans[0].parent_span_id, spans[1].span_context.span_id());
/// assert_eq!(spans[0].span_context.trace_id(), spans[1].span_context.trace_id());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct OpenTelemetryExporter {
    inner: Arc<Inner>,
}

struct Inner {
    processor: Box<dyn SpanProcessor>,
    scope: InstrumentationScope,
    exported: AtomicU64,
}

impl OpenTelemetryExporter {
    /// Spans go to `exporter` through a [`BatchSpanProcessor`] with its default configuration
    /// (queue of 2,048 spans, exported every 5 s or 512 at a time; spans beyond a full queue are
    /// dropped by the processor), under an empty [`Resource`].
    pub fn new(exporter: impl SpanExporter + 'static) -> OpenTelemetryExporter {
        OpenTelemetryExporter::with_processor(BatchSpanProcessor::builder(exporter).build())
    }

    /// Spans go to `processor` (say a `BatchSpanProcessor` you configured, or a
    /// `SimpleSpanProcessor` for tests).
    pub fn with_processor(processor: impl SpanProcessor + 'static) -> OpenTelemetryExporter {
        OpenTelemetryExporter::with_processor_and_resource(processor, None)
    }

    /// As [`OpenTelemetryExporter::with_processor`], telling the processor (so its exporter) the
    /// `resource` (service name and such).
    pub fn with_processor_and_resource(
        mut processor: impl SpanProcessor + 'static,
        resource: Option<Resource>,
    ) -> OpenTelemetryExporter {
        if let Some(resource) = resource {
            processor.set_resource(&resource);
        }
        OpenTelemetryExporter {
            inner: Arc::new(Inner {
                processor: Box::new(processor),
                scope: InstrumentationScope::builder("notify")
                    .with_version(env!("CARGO_PKG_VERSION"))
                    .build(),
                exported: AtomicU64::new(0),
            }),
        }
    }

    /// Subscribes this exporter to the events `pattern` matches on `notifier`.
    pub fn subscribe(&self, notifier: &Notifier, pattern: impl Into<Pattern>) -> Subscription {
        notifier.subscribe(pattern, Subscriber::from(self.clone()))
    }

    /// Hands the span of `event` to the processor (what the subscription does per event).
    pub fn export(&self, event: &Event) {
        self.inner.processor.on_end(span_data(event, &self.inner.scope));
        self.inner.exported.fetch_add(1, Ordering::Relaxed);
    }

    /// Spans handed to the processor so far (what it then dropped, if anything, it reports itself).
    pub fn exported(&self) -> u64 {
        self.inner.exported.load(Ordering::Relaxed)
    }

    /// Exports what the processor holds now and waits for it.
    ///
    /// # Errors
    /// The processor's error (a failed or timed-out export).
    pub fn force_flush(&self) -> OTelSdkResult {
        self.inner.processor.force_flush()
    }

    /// Flushes and shuts the processor down (later spans are dropped by it), waiting at most
    /// `timeout`.
    ///
    /// # Errors
    /// The processor's error (already shut down, timed out).
    pub fn shutdown(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.processor.shutdown_with_timeout(timeout)
    }
}

impl EventSubscriber for OpenTelemetryExporter {
    fn call(&self, event: &Event) {
        // Head sampling: only sampled traces are exported (notify_core::Sampler).
        if event.is_sampled() {
            self.export(event);
        }
    }
}

impl From<OpenTelemetryExporter> for Subscriber {
    /// An event-object subscriber labelled `"opentelemetry"`.
    fn from(exporter: OpenTelemetryExporter) -> Subscriber {
        Subscriber::event(exporter).named("opentelemetry")
    }
}

impl std::fmt::Debug for OpenTelemetryExporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenTelemetryExporter")
            .field("processor", &self.inner.processor)
            .field("exported", &self.exported())
            .finish()
    }
}
