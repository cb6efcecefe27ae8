//! [`OpenTelemetryExporter`]: the subscription side (events in) on the export collector
//! ([`notify_export::Collector`]: queues, batching, tail sampling, accounting, flush, shutdown,
//! the tokio runtime), with [`SpanSink`] as its sink.

use std::sync::Arc;
use std::time::Duration;

use notify_core::export::Overflow;
use notify_core::{Event, Notifier, OwnedEventSubscriber, Pattern, Subscriber, Subscription};
use notify_export::{
    Collector, CollectorBuilder, DropReport, ExportError, ExportRuntime, ExportStats, TailSampling, TailStats,
};
use opentelemetry_sdk::trace::SpanExporter;
use opentelemetry_sdk::Resource;

use crate::resource::resource;
use crate::sink::SpanSink;

/// Configures an [`OpenTelemetryExporter`]: [`OpenTelemetryExporter::builder`]. Everything but
/// the resource is the collector's configuration ([`CollectorBuilder`]).
pub struct Builder<E> {
    collector: CollectorBuilder<SpanSink<E>>,
    service_name: Option<String>,
    resource: Option<Resource>,
}

impl<E: SpanExporter + 'static> Builder<E> {
    /// How many events each publishing thread's queue holds (default 8,192; at least 1, at most
    /// [`Handoff::MAX_PER_THREAD`](notify_export::Handoff::MAX_PER_THREAD)): see
    /// [`CollectorBuilder::queue_capacity`].
    pub fn queue_capacity(mut self, events: usize) -> Builder<E> {
        self.collector = self.collector.queue_capacity(events);
        self
    }

    /// At most this many spans per `SpanExporter::export` call (default 512; at least 1).
    pub fn max_batch_size(mut self, spans: usize) -> Builder<E> {
        self.collector = self.collector.max_batch_size(spans);
        self
    }

    /// How long queued events may wait for a batch to fill before they are exported anyway
    /// (default 1 s).
    pub fn scheduled_delay(mut self, delay: Duration) -> Builder<E> {
        self.collector = self.collector.scheduled_delay(delay);
        self
    }

    /// What a push onto a full queue does (default [`Overflow::DropNewest`]; notify's one
    /// overflow policy, as for its other queues): see [`CollectorBuilder::overflow`].
    ///
    /// ```
    /// use notify_core::export::Overflow;
    /// use notify_opentelemetry::OpenTelemetryExporter;
    /// # let spans = opentelemetry_sdk::trace::InMemorySpanExporter::default();
    /// let builder = OpenTelemetryExporter::builder(spans)
    ///     .overflow(Overflow::Block)
    ///     .block_limit(std::time::Duration::from_millis(5));
    /// assert!(format!("{builder:?}").contains("overflow: Block"));
    /// ```
    pub fn overflow(mut self, overflow: Overflow) -> Builder<E> {
        self.collector = self.collector.overflow(overflow);
        self
    }

    /// With [`Overflow::Block`]: wait at most `limit` per event, then drop it (counted
    /// `dropped_queue_full`); see [`CollectorBuilder::block_limit`].
    pub fn block_limit(mut self, limit: Duration) -> Builder<E> {
        self.collector = self.collector.block_limit(limit);
        self
    }

    /// The `service.name` of the [`Resource`] given to the `SpanExporter`. The precedence is the
    /// OpenTelemetry specification's: this value, then `OTEL_SERVICE_NAME`, then `service.name`
    /// in `OTEL_RESOURCE_ATTRIBUTES`, then `unknown_service`.
    pub fn service_name(mut self, name: impl Into<String>) -> Builder<E> {
        self.service_name = Some(name.into());
        self
    }

    /// The whole [`Resource`] given to the `SpanExporter` (a [`service_name`](Self::service_name)
    /// set too replaces its `service.name`).
    pub fn resource(mut self, resource: Resource) -> Builder<E> {
        self.resource = Some(resource);
        self
    }

    /// Runs a [`TailSampler`](notify_export::TailSampler) on the collector's thread, in front of
    /// the conversion: only the traces it keeps are exported; see
    /// [`CollectorBuilder::tail_sampling`].
    pub fn tail_sampling(mut self, config: TailSampling) -> Builder<E> {
        self.collector = self.collector.tail_sampling(config);
        self
    }

    /// Called on the collector's thread with a [`DropReport`] once per burst of drops, instead of
    /// the default (the failure hook of the notifier this exporter was first subscribed to with
    /// [`OpenTelemetryExporter::subscribe`], else a `log::warn!`); see
    /// [`CollectorBuilder::on_drops`].
    pub fn on_drops(mut self, hook: impl Fn(&DropReport) + Send + Sync + 'static) -> Builder<E> {
        self.collector = self.collector.on_drops(hook);
        self
    }

    /// Under sustained overload, drops are reported at most this often (default 1 s).
    pub fn report_interval(mut self, interval: Duration) -> Builder<E> {
        self.collector = self.collector.report_interval(interval);
        self
    }

    /// The tokio runtime `SpanExporter::export` runs on (default [`ExportRuntime::Auto`]: the
    /// runtime of the thread calling [`build`](Self::build) when there is one, else a
    /// current-thread runtime of the collector's own); see [`ExportRuntime`]. The OTLP exporters
    /// over tonic and reqwest need one; opentelemetry-otlp's tonic exporter must also be *built*
    /// inside a runtime (build it within the runtime you give here).
    pub fn runtime(mut self, runtime: impl Into<ExportRuntime>) -> Builder<E> {
        self.collector = self.collector.runtime(runtime);
        self
    }

    /// Starts the collector (its thread is named `notify-export`, telemetry-suppressed).
    ///
    /// # Panics
    /// As [`CollectorBuilder::build`].
    pub fn build(mut self) -> OpenTelemetryExporter {
        let resource = resource(self.resource, self.service_name, |name| std::env::var(name).ok());
        self.collector.sink_mut().exporter_mut().set_resource(&resource);
        OpenTelemetryExporter {
            collector: self.collector.build(),
            resource,
        }
    }
}

impl<E> std::fmt::Debug for Builder<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Builder")
            .field("collector", &self.collector)
            .field("service_name", &self.service_name)
            .finish_non_exhaustive()
    }
}

/// Exports notify events as OpenTelemetry spans: an owned-event subscriber that hands each
/// sampled event to an export [`Collector`], whose sink ([`SpanSink`]) converts batches into
/// [`SpanData`](opentelemetry_sdk::trace::SpanData) and awaits any `SpanExporter` (OTLP over gRPC
/// or HTTP, stdout, in-memory) on a tokio runtime.
///
/// Cloning is cheap (the clones share the collector); when the last clone and subscription are
/// gone, the collector shuts down in the background.
#[derive(Clone)]
pub struct OpenTelemetryExporter {
    collector: Collector,
    resource: Resource,
}

impl OpenTelemetryExporter {
    /// An exporter to `exporter` with the default configuration ([`builder`](Self::builder)).
    ///
    /// # Panics
    /// When the collector's thread cannot be spawned.
    pub fn new(exporter: impl SpanExporter + 'static) -> OpenTelemetryExporter {
        OpenTelemetryExporter::builder(exporter).build()
    }

    /// A [`Builder`] for an exporter to `exporter`: the collector's defaults (queues of 8,192
    /// events, batches of 512, scheduled delay 1 s, [`Overflow::DropNewest`], no tail sampling,
    /// drops reported through the notifier's failure hook, [`ExportRuntime::Auto`]) and the
    /// resource from the environment.
    pub fn builder<E: SpanExporter + 'static>(exporter: E) -> Builder<E> {
        Builder {
            collector: Collector::builder("opentelemetry", SpanSink::new(exporter)),
            service_name: None,
            resource: None,
        }
    }

    /// Subscribes this exporter to the events `pattern` matches on `notifier`. Drops are then
    /// reported through `notifier`'s failure hook (unless [`Builder::on_drops`] says otherwise;
    /// with several subscriptions, through the first whose notifier is alive, among the first 16).
    pub fn subscribe(&self, notifier: &Notifier, pattern: impl Into<Pattern>) -> Subscription {
        let subscription = notifier.subscribe(pattern, Subscriber::from(self.clone()));
        self.collector.report_through(&subscription);
        subscription
    }

    /// Hands `event` to the collector (what the subscription does per event, except that the
    /// subscription first skips events of traces head sampling did not keep, and this does not
    /// look at [`Event::is_sampled`]): queued, or counted as dropped by the [`Overflow`] policy.
    pub fn export(&self, event: &Arc<Event>) {
        self.collector.push(event);
    }

    /// Spans the `SpanExporter` accepted so far (`stats().exported`).
    pub fn exported(&self) -> u64 {
        self.collector.stats().exported
    }

    /// The counters now (see [`ExportStats`]).
    pub fn stats(&self) -> ExportStats {
        self.collector.stats()
    }

    /// The tail sampler's detailed counters as of the collector's last batch, when tail sampling
    /// is on.
    pub fn tail_stats(&self) -> Option<TailStats> {
        self.collector.tail_stats()
    }

    /// The [`Resource`] given to the `SpanExporter`.
    pub fn resource(&self) -> &Resource {
        &self.resource
    }

    /// The collector underneath.
    pub fn collector(&self) -> &Collector {
        &self.collector
    }

    /// Exports everything queued before this call (events held by tail sampling stay held), and
    /// returns the counters after it. Waits at most 30 s.
    ///
    /// # Errors
    /// [`ExportError::TimedOut`] when the collector did not get there in time;
    /// [`ExportError::ShutDown`] after [`shutdown`](Self::shutdown).
    pub fn force_flush(&self) -> Result<ExportStats, ExportError> {
        self.force_flush_with_timeout(Duration::from_secs(30))
    }

    /// [`force_flush`](Self::force_flush), waiting at most `timeout`; a request that times out
    /// leaves nothing behind ([`Collector::force_flush`]).
    ///
    /// # Errors
    /// As [`force_flush`](Self::force_flush).
    pub fn force_flush_with_timeout(&self, timeout: Duration) -> Result<ExportStats, ExportError> {
        self.collector.force_flush(timeout)
    }

    /// Stops taking events (later ones are counted `dropped_shutdown`), exports what is queued,
    /// decides what tail sampling holds, shuts the `SpanExporter` down, and returns the final
    /// counters; waits at most `timeout`.
    ///
    /// # Errors
    /// [`ExportError::TimedOut`] when the collector did not finish in time (it still stops after
    /// its current export); [`ExportError::ShutDown`] when already shut down.
    pub fn shutdown(&self, timeout: Duration) -> Result<ExportStats, ExportError> {
        self.collector.shutdown(timeout)
    }
}

impl OwnedEventSubscriber for OpenTelemetryExporter {
    #[inline]
    fn deliver(&self, event: &Arc<Event>) {
        // Head sampling: only sampled traces are exported (notify_core::export::Sampler).
        if event.is_sampled() {
            self.collector.push(event);
        }
    }
}

impl From<OpenTelemetryExporter> for Subscriber {
    /// An owned-event subscriber labelled `"opentelemetry"`.
    fn from(exporter: OpenTelemetryExporter) -> Subscriber {
        Subscriber::owned(exporter).named("opentelemetry")
    }
}

impl std::fmt::Debug for OpenTelemetryExporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenTelemetryExporter")
            .field("collector", &self.collector)
            .finish_non_exhaustive()
    }
}
