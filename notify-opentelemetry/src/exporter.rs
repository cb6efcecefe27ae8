//! [`OpenTelemetryExporter`]: the subscription side (events in, a bounded queue, an exporter
//! thread that converts and calls the `SpanExporter` in batches).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use notify_core::export::{DropReporter, Handoff, Overflow};
use notify_core::failure::ExportDrops;
use notify_core::{Event, Notifier, OwnedEventSubscriber, Pattern, Subscriber, Subscription};
use opentelemetry::InstrumentationScope;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};
use opentelemetry_sdk::Resource;

use crate::span::span_data;
use crate::stats::{DropReport, ExportError, ExportStats};
use crate::tail::{TailSampler, TailSampling};

/// What the subscription does with an event when the publishing thread's queue is full.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum OverflowPolicy {
    /// Drop the new event (counted `dropped_queue_full`): the instrumenting thread never waits.
    /// The default.
    DropNewest,
    /// Drop the oldest event of the publishing thread's queue to make room (counted
    /// `dropped_queue_full`): the newest events survive a burst.
    DropOldest,
    /// Block the instrumenting thread until there is room, at most this long per event; then drop
    /// the new event (counted `dropped_queue_full`). `Duration::MAX` waits as long as it takes.
    /// A shutdown ends the wait (the event is counted `dropped_shutdown`). A thread that exits
    /// never waits: what its queue still holds goes to the queue left behind by exited threads,
    /// and what that one has no room for (see [`Builder::queue_capacity`]) is counted
    /// `dropped_queue_full`, also with `Duration::MAX`.
    Wait(Duration),
}

impl From<Overflow> for OverflowPolicy {
    /// notify-core's policy: `DropNewest` and `DropOldest` as such, `Block` as
    /// `Wait(Duration::MAX)`; a policy notify-core adds later acts as `DropNewest` here.
    fn from(overflow: Overflow) -> OverflowPolicy {
        match overflow {
            Overflow::DropOldest => OverflowPolicy::DropOldest,
            Overflow::Block => OverflowPolicy::Wait(Duration::MAX),
            _ => OverflowPolicy::DropNewest,
        }
    }
}

/// At most this many events' room is reserved up front for a batch: `max_batch_size` bounds a
/// batch, and a batch only grows to what is queued.
const MAX_RESERVED: usize = 4_096;

/// The drop hook: called on the exporter thread, once per burst of drops.
type DropHook = Arc<dyn Fn(&DropReport) + Send + Sync>;

/// Configures an [`OpenTelemetryExporter`]: [`OpenTelemetryExporter::builder`].
pub struct Builder<E> {
    exporter: E,
    capacity: usize,
    batch: usize,
    delay: Duration,
    policy: OverflowPolicy,
    service_name: Option<String>,
    resource: Option<Resource>,
    tail: Option<TailSampling>,
    /// `None`: the notifier's failure hook (see `on_drops`).
    on_drops: Option<DropHook>,
    report_interval: Duration,
}

impl<E: SpanExporter + 'static> Builder<E> {
    /// How many events each publishing thread's queue holds (default 8,192; at least 1): the
    /// instrumenting thread hands events over through a queue of its own
    /// ([`notify_core::export::Handoff`]: no lock, no shared read-modify-write per event), made
    /// whole on its first event (8 bytes per event). Memory is bounded by this many events per
    /// live publishing thread, plus, for what threads that exited left queued, this many per
    /// thread that published at once (threads that come and go one after another do not add
    /// up; beyond it the oldest are kept, the newest with `DropOldest`, the rest counted as
    /// `dropped_queue_full`), plus one batch being converted (a shared event is about 480 bytes
    /// plus what its payload owns). At most
    /// [`Handoff::MAX_PER_THREAD`](notify_core::export::Handoff::MAX_PER_THREAD) (2^24 events, a
    /// 128 MiB ring per publishing thread): a larger capacity is clamped to it (one the allocator
    /// could not give aborted the process on the first event).
    pub fn queue_capacity(mut self, events: usize) -> Builder<E> {
        self.capacity = events.clamp(1, notify_core::export::Handoff::MAX_PER_THREAD);
        self
    }

    /// At most this many spans per `SpanExporter::export` call (default 512; at least 1). The
    /// exporter thread is woken when a thread's queue holds this many events (at most its
    /// capacity).
    pub fn max_batch_size(mut self, spans: usize) -> Builder<E> {
        self.batch = spans.max(1);
        self
    }

    /// How long queued events may wait for a batch to fill before they are exported anyway
    /// (default 1 s).
    pub fn scheduled_delay(mut self, delay: Duration) -> Builder<E> {
        self.delay = delay;
        self
    }

    /// What to do when the publishing thread's queue is full (default
    /// [`OverflowPolicy::DropNewest`]). notify-core's [`Overflow`] (the policy of notify's other
    /// queues) converts: `Block` is [`OverflowPolicy::Wait`] without a limit.
    ///
    /// ```
    /// use notify_core::export::Overflow;
    /// use notify_opentelemetry::{OpenTelemetryExporter, OverflowPolicy};
    /// # let spans = opentelemetry_sdk::trace::InMemorySpanExporter::default();
    /// let builder = OpenTelemetryExporter::builder(spans).overflow_policy(Overflow::Block);
    /// assert!(format!("{builder:?}").contains("Wait(18446744073709551615."));
    /// assert_eq!(OverflowPolicy::from(Overflow::DropOldest), OverflowPolicy::DropOldest);
    /// ```
    pub fn overflow_policy(mut self, policy: impl Into<OverflowPolicy>) -> Builder<E> {
        self.policy = policy.into();
        self
    }

    /// The `service.name` of the [`Resource`] given to the `SpanExporter`. Without it (and without
    /// [`resource`](Self::resource)), the SDK's default resource: `OTEL_SERVICE_NAME` (or
    /// `service.name` in `OTEL_RESOURCE_ATTRIBUTES`), else `unknown_service`. When set, it wins
    /// over the environment.
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

    /// Runs a [`TailSampler`] on the exporter thread, in front of the conversion: only the traces
    /// it keeps are exported; what it drops is counted in `dropped_tail_sampling` and in detail by
    /// [`OpenTelemetryExporter::tail_stats`]. Events it holds wait for their root (at most the
    /// configured `max_wait`; a [`shutdown`](OpenTelemetryExporter::shutdown) decides them all).
    pub fn tail_sampling(mut self, config: TailSampling) -> Builder<E> {
        self.tail = Some(config);
        self
    }

    /// Called on the exporter thread with a [`DropReport`] once per burst of drops, instead of the
    /// default. A panic in the hook is swallowed.
    ///
    /// The default reports the burst's failures (queue full, exporter error, shutdown; not what
    /// tail sampling chose to drop) through the failure hook of the notifier this exporter was
    /// first subscribed to with [`OpenTelemetryExporter::subscribe`]
    /// ([`Subscription::report_export_drops`]: one [`notify_core::failure::SubscriberFailure`] whose
    /// `export_drops()` has the counts by cause and the exporter's last error, counted in
    /// [`Notifier::failures`]); when there is none (subscribed otherwise, or that notifier is
    /// gone), a `log::warn!` with target `notify::opentelemetry`.
    pub fn on_drops(mut self, hook: impl Fn(&DropReport) + Send + Sync + 'static) -> Builder<E> {
        self.on_drops = Some(Arc::new(hook));
        self
    }

    /// Under sustained overload (the queue never drains), drops are reported at most this often
    /// (default 1 s).
    pub fn report_interval(mut self, interval: Duration) -> Builder<E> {
        self.report_interval = interval;
        self
    }

    /// Starts the exporter thread (named `notify-otel`), telemetry-suppressed
    /// ([`notify_core::suppression::suppress_telemetry_on_this_thread`]): what the `SpanExporter` logs or
    /// traces there is not bridged back into notify.
    ///
    /// # Panics
    /// When the thread cannot be spawned (as `std::thread::spawn`).
    pub fn build(self) -> OpenTelemetryExporter {
        let Builder {
            mut exporter,
            capacity,
            batch,
            delay,
            policy,
            service_name,
            resource,
            tail,
            on_drops,
            report_interval,
        } = self;
        let resource = match (resource, service_name) {
            (None, None) => Resource::builder().build(),
            (None, Some(name)) => Resource::builder().with_service_name(name).build(),
            (Some(resource), None) => resource,
            (Some(resource), Some(name)) => Resource::builder_empty()
                .with_attributes(
                    resource
                        .iter()
                        .map(|(k, v)| opentelemetry::KeyValue::new(k.clone(), v.clone())),
                )
                .with_service_name(name)
                .build(),
        };
        exporter.set_resource(&resource);
        let overflow = match policy {
            OverflowPolicy::DropNewest => Overflow::DropNewest,
            OverflowPolicy::DropOldest => Overflow::DropOldest,
            OverflowPolicy::Wait(_) => Overflow::Block,
        };
        let mut handoff = Handoff::new(capacity, overflow).wake_at(batch);
        if let OverflowPolicy::Wait(limit) = policy {
            if limit != Duration::MAX {
                handoff = handoff.block_limit(limit);
            }
        }
        let shared = Arc::new(Shared {
            handoff,
            policy,
            batch,
            requests: Mutex::new(Vec::new()),
            closed: AtomicBool::new(false),
            finished: AtomicBool::new(false),
            given_up: Mutex::new(false),
            counters: Counters::default(),
            tail_stats: Mutex::new(None),
            resource,
            drop_reporter: DropReporter::new(),
        });
        let worker = Worker {
            shared: shared.clone(),
            exporter,
            scope: InstrumentationScope::builder("notify")
                .with_version(env!("CARGO_PKG_VERSION"))
                .build(),
            tail: tail.map(TailSampler::new),
            delay,
            on_drops,
            report_interval,
            reported: ExportStats::default(),
            last_report: Instant::now(),
            last_error: None,
        };
        let (started, ready) = mpsc::sync_channel(1);
        thread::Builder::new()
            .name("notify-otel".into())
            .spawn(move || {
                // The consumer of the hand-off: the thread it parks and wakes.
                worker.shared.handoff.set_consumer_thread();
                let _ = started.send(());
                worker.run()
            })
            .expect("spawn the notify-otel exporter thread");
        // Registered before any event or request can need to wake it.
        let _ = ready.recv();
        OpenTelemetryExporter {
            inner: Arc::new(Owner { shared }),
        }
    }
}

/// Exports finished notify events as OpenTelemetry spans through any `opentelemetry_sdk`
/// [`SpanExporter`] (OTLP, stdout, in-memory), with exact accounting.
///
/// Subscribed ([`subscribe`](Self::subscribe)), it is an owned-event subscriber: the instrumenting
/// thread only puts the shared event (`Arc<Event>`, built once per event by the notifier for every
/// owned subscriber) into a bounded queue. The exporter's own thread takes events in batches,
/// converts them ([`span_data`]: the event's trace id, its id as span id, its parent's id as
/// parent span id, times, payload as typed attributes, span kind, status, exception) and calls
/// `SpanExporter::export` itself, one batch at a time; the SDK's `BatchSpanProcessor` is not used.
///
/// **Nothing is dropped silently**: [`stats`](Self::stats) counts what the `SpanExporter` accepted
/// (`exported`) and every drop by cause (queue full, exporter error, shutdown, tail sampling);
/// drops are reported through the drop hook once per burst ([`Builder::on_drops`]), and
/// [`force_flush`](Self::force_flush) and [`shutdown`](Self::shutdown) return the counters.
/// What a full queue does is the [`OverflowPolicy`].
///
/// **Parents.** A notify event's parent is the innermost event *listened to by anyone* that is
/// current when it starts, not the innermost one this exporter exports. To get linked traces,
/// subscribe the exporter to every event whose span should appear in them (`Pattern::all()`, or a
/// pattern that covers the enclosing events too).
///
/// Cloning shares the queue and thread. When the last clone (and subscription) is dropped, the
/// thread exports what is queued and ends; call [`shutdown`](Self::shutdown) to wait for it.
///
/// ```
/// use notify_core::{Notifier, Pattern, Payload};
/// use notify_opentelemetry::OpenTelemetryExporter;
/// use opentelemetry_sdk::trace::InMemorySpanExporter;
///
/// let spans = InMemorySpanExporter::default();
/// // With OTLP: OpenTelemetryExporter::new(opentelemetry_otlp::SpanExporter::builder().with_tonic().build()?)
/// let exporter = OpenTelemetryExporter::new(spans.clone());
/// let notifier = Notifier::new();
/// let _subscription = exporter.subscribe(&notifier, Pattern::all());
/// notifier.instrument("request.http", || Payload::new().with("path", "/"), |_| {
///     notifier.instrument("query.sql", Payload::new, |_| ());
/// });
/// let stats = exporter.force_flush()?;
/// assert_eq!((stats.exported, stats.dropped()), (2, 0));
/// let spans = spans.get_finished_spans()?;
/// assert_eq!(spans[0].name, "query.sql");
/// assert_eq!(spans[0].parent_span_id, spans[1].span_context.span_id());
/// assert_eq!(spans[0].span_context.trace_id(), spans[1].span_context.trace_id());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct OpenTelemetryExporter {
    inner: Arc<Owner>,
}

/// What the user's clones share; dropping the last one closes the queue.
struct Owner {
    shared: Arc<Shared>,
}

impl Drop for Owner {
    fn drop(&mut self) {
        self.shared.request(Request::Close);
    }
}

/// The state shared by the subscription (instrumenting threads) and the exporter thread.
struct Shared {
    /// The instrumenting threads' queues (one per thread), drained by the exporter thread.
    handoff: Handoff,
    policy: OverflowPolicy,
    batch: usize,
    requests: Mutex<Vec<Request>>,
    /// Shutdown began: new events are dropped (counted `shutdown`).
    closed: AtomicBool,
    /// The exporter thread ended: what is still queued was dropped at shutdown.
    finished: AtomicBool,
    /// A shutdown's timeout ran out: the exporter thread takes nothing more from the queue (it
    /// checks under this lock before each batch), so what is queued is dropped at shutdown, and
    /// what it took but has not exported yet, after its current export, too.
    given_up: Mutex<bool>,
    counters: Counters,
    tail_stats: Mutex<Option<crate::tail::TailStats>>,
    resource: Resource,
    /// What [`OpenTelemetryExporter::subscribe`] made, in order: the default drop report goes
    /// through the first whose notifier is alive. (A `Subscription` holds its notifier weakly.)
    drop_reporter: DropReporter,
}

/// The exporter thread's counters (the hand-off counts what the producers dropped).
#[derive(Default)]
struct Counters {
    exported: AtomicU64,
    exporter_error: AtomicU64,
    tail: AtomicU64,
    held: AtomicU64,
    /// Events the thread had taken from the queue and did not export because a shutdown gave up.
    shutdown: AtomicU64,
}

/// A request to the exporter thread.
enum Request {
    /// Export everything queued now, then answer.
    Flush(mpsc::SyncSender<ExportStats>),
    /// Export everything queued (deciding held traces), answer, and end.
    Shutdown(mpsc::SyncSender<ExportStats>),
    /// The last handle is gone: as `Shutdown`, nobody waiting.
    Close,
}

impl Shared {
    fn stats(&self) -> ExportStats {
        let c = &self.counters;
        // Whether anything still leaves the queue, before the queue's snapshot: read after it, a
        // shutdown that ended (or gave up) in between would count as dropped events the thread
        // drained after the snapshot (and exports or counts again).
        let stopped = self.finished.load(Ordering::Acquire) || self.gave_up();
        // The exporter thread's counters first: an event it counts was drained before.
        let exported = c.exported.load(Ordering::Acquire);
        let dropped_exporter_error = c.exporter_error.load(Ordering::Acquire);
        let dropped_tail_sampling = c.tail.load(Ordering::Acquire);
        let held = c.held.load(Ordering::Acquire);
        let given_up = c.shutdown.load(Ordering::Acquire);
        let handed = self.handoff.stats();
        let mut stats = ExportStats {
            exported,
            dropped_queue_full: handed.dropped_full,
            dropped_exporter_error,
            dropped_shutdown: handed.dropped_closed + given_up,
            dropped_tail_sampling,
            held,
            dequeued: handed.drained,
            taken_at_shutdown: given_up,
        };
        if stopped {
            // Nothing leaves the queue any more: events that raced past the `closed` check after
            // the thread's last look at the queues, or that a timed-out shutdown left there.
            stats.dropped_shutdown += handed.queued;
        }
        stats
    }

    /// True once a shutdown's timeout ran out ([`OpenTelemetryExporter::shutdown`]).
    fn gave_up(&self) -> bool {
        *self.given_up.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn wake(&self) {
        self.handoff.wake();
    }

    fn request(&self, request: Request) {
        if matches!(request, Request::Shutdown(_) | Request::Close) {
            self.closed.store(true, Ordering::SeqCst);
            self.handoff.close();
        }
        self.requests.lock().unwrap_or_else(|e| e.into_inner()).push(request);
        self.wake();
    }

    /// The hot path: hand `event` to the exporter thread (a push into this thread's queue; the
    /// hand-off counts what the policy drops, and what comes after shutdown began).
    #[inline]
    fn enqueue(&self, event: &Arc<Event>) {
        self.handoff.push(event);
    }
}

impl<E> std::fmt::Debug for Builder<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Builder")
            .field("queue_capacity", &self.capacity)
            .field("max_batch_size", &self.batch)
            .field("scheduled_delay", &self.delay)
            .field("overflow_policy", &self.policy)
            .field("service_name", &self.service_name)
            .field("tail_sampling", &self.tail)
            .finish_non_exhaustive()
    }
}

impl OpenTelemetryExporter {
    /// An exporter to `exporter` with the default configuration ([`builder`](Self::builder)).
    ///
    /// # Panics
    /// When the exporter thread cannot be spawned.
    pub fn new(exporter: impl SpanExporter + 'static) -> OpenTelemetryExporter {
        OpenTelemetryExporter::builder(exporter).build()
    }

    /// A [`Builder`] for an exporter to `exporter`: queue of 8,192 events, batches of 512,
    /// scheduled delay 1 s, [`OverflowPolicy::DropNewest`], the SDK's default resource, no tail
    /// sampling, drops reported through the notifier's failure hook ([`Builder::on_drops`]).
    pub fn builder<E: SpanExporter + 'static>(exporter: E) -> Builder<E> {
        Builder {
            exporter,
            capacity: 8_192,
            batch: 512,
            delay: Duration::from_secs(1),
            policy: OverflowPolicy::DropNewest,
            service_name: None,
            resource: None,
            tail: None,
            on_drops: None,
            report_interval: Duration::from_secs(1),
        }
    }

    /// Subscribes this exporter to the events `pattern` matches on `notifier`. Drops are then
    /// reported through `notifier`'s failure hook (unless [`Builder::on_drops`] says otherwise;
    /// with several subscriptions, through the first whose notifier is alive, among the first 16).
    pub fn subscribe(&self, notifier: &Notifier, pattern: impl Into<Pattern>) -> Subscription {
        let subscription = notifier.subscribe(pattern, Subscriber::from(self.clone()));
        self.inner.shared.drop_reporter.keep(&subscription);
        subscription
    }

    /// Hands `event` to the exporter thread (what the subscription does per event, except that
    /// the subscription first skips events of traces head sampling did not keep, and this does
    /// not look at [`Event::is_sampled`]): queued, or counted as dropped by the
    /// [`OverflowPolicy`].
    pub fn export(&self, event: &Arc<Event>) {
        self.inner.shared.enqueue(event);
    }

    /// Spans the `SpanExporter` accepted so far (`stats().exported`).
    pub fn exported(&self) -> u64 {
        self.inner.shared.counters.exported.load(Ordering::Acquire)
    }

    /// The counters now (see [`ExportStats`]).
    pub fn stats(&self) -> ExportStats {
        self.inner.shared.stats()
    }

    /// The tail sampler's detailed counters as of the exporter thread's last batch, when tail
    /// sampling is on.
    pub fn tail_stats(&self) -> Option<crate::tail::TailStats> {
        *self.inner.shared.tail_stats.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The [`Resource`] given to the `SpanExporter`.
    pub fn resource(&self) -> &Resource {
        &self.inner.shared.resource
    }

    /// Exports everything queued before this call (events held by tail sampling stay held), and
    /// returns the counters after it. Waits at most 30 s.
    ///
    /// # Errors
    /// [`ExportError::TimedOut`] when the exporter thread did not get there in time;
    /// [`ExportError::ShutDown`] after [`shutdown`](Self::shutdown).
    pub fn force_flush(&self) -> Result<ExportStats, ExportError> {
        self.force_flush_with_timeout(Duration::from_secs(30))
    }

    /// [`force_flush`](Self::force_flush), waiting at most `timeout`.
    ///
    /// # Errors
    /// As [`force_flush`](Self::force_flush).
    pub fn force_flush_with_timeout(&self, timeout: Duration) -> Result<ExportStats, ExportError> {
        let shared = &self.inner.shared;
        if shared.closed.load(Ordering::SeqCst) {
            return Err(ExportError::ShutDown(shared.stats()));
        }
        let (tx, rx) = mpsc::sync_channel(1);
        shared.request(Request::Flush(tx));
        match rx.recv_timeout(timeout) {
            Ok(stats) => Ok(stats),
            Err(mpsc::RecvTimeoutError::Timeout) => Err(ExportError::TimedOut(shared.stats())),
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(ExportError::ShutDown(shared.stats())),
        }
    }

    /// Stops taking events (later ones are counted `dropped_shutdown`), exports what is queued,
    /// decides what tail sampling holds, shuts the `SpanExporter` down, and returns the final
    /// counters; waits at most `timeout`.
    ///
    /// # Errors
    /// [`ExportError::TimedOut`] when the thread did not finish in time (it still stops after
    /// its current export); [`ExportError::ShutDown`] when already shut down.
    pub fn shutdown(&self, timeout: Duration) -> Result<ExportStats, ExportError> {
        let shared = &self.inner.shared;
        if shared.closed.swap(true, Ordering::SeqCst) {
            return Err(ExportError::ShutDown(shared.stats()));
        }
        shared.handoff.close();
        let (tx, rx) = mpsc::sync_channel(1);
        shared.request(Request::Shutdown(tx));
        match rx.recv_timeout(timeout) {
            Ok(_) => Ok(shared.stats()),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                // The thread is stuck in (or slow at) an export: it takes nothing more from the
                // queue, so what is queued is dropped now and counted so in these stats.
                *shared.given_up.lock().unwrap_or_else(|e| e.into_inner()) = true;
                Err(ExportError::TimedOut(shared.stats()))
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => Ok(shared.stats()),
        }
    }
}

impl OwnedEventSubscriber for OpenTelemetryExporter {
    #[inline]
    fn deliver(&self, event: &Arc<Event>) {
        // Head sampling: only sampled traces are exported (notify_core::export::Sampler).
        if event.is_sampled() {
            self.inner.shared.enqueue(event);
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
            .field("policy", &self.inner.shared.policy)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

/// The exporter thread's state.
struct Worker<E> {
    shared: Arc<Shared>,
    exporter: E,
    scope: InstrumentationScope,
    tail: Option<TailSampler>,
    delay: Duration,
    on_drops: Option<DropHook>,
    report_interval: Duration,
    reported: ExportStats,
    last_report: Instant,
    last_error: Option<String>,
}

impl<E: SpanExporter> Worker<E> {
    fn run(mut self) {
        // What the SpanExporter logs or traces (an OTLP client's own tracing output) must not come
        // back through notify's bridges as events to export, forever.
        notify_core::suppression::suppress_telemetry_on_this_thread();
        let mut events = Vec::with_capacity(self.shared.batch.min(MAX_RESERVED));
        let mut last_export = Instant::now();
        loop {
            let requests = std::mem::take(&mut *self.shared.requests.lock().unwrap_or_else(|e| e.into_inner()));
            if !requests.is_empty() {
                // Everything queued before the requests were made is in the queue now.
                self.drain(&mut events);
                let closing = requests.iter().any(|r| !matches!(r, Request::Flush(_)));
                if closing {
                    self.close(requests);
                    return;
                }
                self.report_drops(true);
                let stats = self.shared.stats();
                for request in requests {
                    if let Request::Flush(reply) = request {
                        let _ = reply.send(stats);
                    }
                }
                last_export = Instant::now();
                continue;
            }
            // A batch, or as much as one thread's queue holds (a queue smaller than a batch).
            let full = self.shared.handoff.len() >= self.shared.batch.min(self.shared.handoff.per_thread());
            if full || last_export.elapsed() >= self.delay {
                self.take_batch(&mut events);
                self.process(&mut events);
                last_export = Instant::now();
                self.report_drops(self.shared.handoff.is_empty());
                if full {
                    continue;
                }
            }
            if let Some(tail) = &mut self.tail {
                let mut kept = Vec::new();
                tail.expire(Instant::now(), &mut kept);
                if !kept.is_empty() {
                    self.export_kept(kept);
                }
            }
            if self.has_requests() {
                continue;
            }
            // Woken by a producer whose queue holds a batch, by a request, or at the delay.
            let waited = last_export.elapsed();
            self.shared
                .handoff
                .park(self.delay.saturating_sub(waited).max(Duration::from_millis(1)));
        }
    }

    fn has_requests(&self) -> bool {
        !self
            .shared
            .requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_empty()
    }

    fn take_batch(&mut self, events: &mut Vec<Arc<Event>>) {
        // Under the lock a timed-out shutdown sets: once it gave up, the queue stays as counted.
        let given_up = self.shared.given_up.lock().unwrap_or_else(|e| e.into_inner());
        if *given_up {
            return;
        }
        let room = self.shared.batch.saturating_sub(events.len());
        self.shared.handoff.drain(events, room);
    }

    /// Exports batches until the queue is empty.
    fn drain(&mut self, events: &mut Vec<Arc<Event>>) {
        loop {
            self.take_batch(events);
            if events.is_empty() {
                return;
            }
            self.process(events);
        }
    }

    /// Tail-samples, converts and exports `events` (emptied).
    fn process(&mut self, events: &mut Vec<Arc<Event>>) {
        if events.is_empty() {
            return;
        }
        let kept = match &mut self.tail {
            Some(tail) => {
                let now = Instant::now();
                let mut kept = Vec::with_capacity(events.len());
                for event in events.drain(..) {
                    tail.offer(event, now, &mut kept);
                }
                tail.expire(now, &mut kept);
                kept
            }
            None => std::mem::take(events),
        };
        self.export_kept(kept);
        events.reserve(self.shared.batch.min(MAX_RESERVED));
    }

    /// Converts and exports `kept` in batches, then publishes the tail sampler's counters.
    fn export_kept(&mut self, mut kept: Vec<Arc<Event>>) {
        for chunk in kept.chunks(self.shared.batch) {
            if self.shared.gave_up() {
                // A timed-out shutdown: stop after the current export (tail sampling can release
                // more than one batch at once).
                let n = chunk.len() as u64;
                self.shared.counters.shutdown.fetch_add(n, Ordering::AcqRel);
                continue;
            }
            let spans: Vec<SpanData> = chunk.iter().map(|event| span_data(event, &self.scope)).collect();
            let n = spans.len() as u64;
            let result = catch_unwind(AssertUnwindSafe(|| {
                futures_executor::block_on(self.exporter.export(spans))
            }));
            let counters = &self.shared.counters;
            match result {
                Ok(Ok(())) => {
                    counters.exported.fetch_add(n, Ordering::AcqRel);
                }
                Ok(Err(error)) => {
                    counters.exporter_error.fetch_add(n, Ordering::AcqRel);
                    self.last_error = Some(error.to_string());
                }
                Err(panic) => {
                    counters.exporter_error.fetch_add(n, Ordering::AcqRel);
                    self.last_error = Some(format!("panicked: {}", notify_core::failure::panic_message(&*panic)));
                    notify_core::failure::drop_panic_payload(panic);
                }
            }
        }
        // Converted: their allocations go back for the next events (emptied here, on this
        // thread: the instrumenting threads neither allocate nor free an owned event).
        notify_core::export::recycle_all(&mut kept);
        if let Some(tail) = &self.tail {
            let stats = tail.stats();
            self.shared.counters.tail.store(stats.dropped(), Ordering::Release);
            self.shared.counters.held.store(stats.held, Ordering::Release);
            *self.shared.tail_stats.lock().unwrap_or_else(|e| e.into_inner()) = Some(stats);
        }
    }

    /// Reports the drops since the last report, once the burst is over (`quiet`) or the report
    /// interval passed.
    fn report_drops(&mut self, quiet: bool) {
        let now = self.shared.stats();
        if now.dropped() == self.reported.dropped() {
            return;
        }
        if !quiet && self.last_report.elapsed() < self.report_interval {
            return;
        }
        let burst = now.since(&self.reported);
        let report = DropReport {
            burst,
            total: now,
            last_error: if burst.dropped_exporter_error > 0 {
                self.last_error.clone()
            } else {
                None
            },
        };
        match self.on_drops.clone() {
            Some(hook) => {
                if let Err(panic) = catch_unwind(AssertUnwindSafe(|| hook(&report))) {
                    notify_core::failure::drop_panic_payload(panic);
                }
            }
            None => self.report_to_notifier(&report),
        }
        self.reported = now;
        self.last_report = Instant::now();
    }

    /// The default drop report: the burst's failures (not tail sampling's choices) through the
    /// failure hook of the first subscribed notifier still alive, else a warning.
    fn report_to_notifier(&self, report: &DropReport) {
        let burst = &report.burst;
        let mut drops = ExportDrops::new("opentelemetry")
            .with("queue full", burst.dropped_queue_full)
            .with("exporter error", burst.dropped_exporter_error)
            .with("shutdown", burst.dropped_shutdown);
        if drops.dropped() == 0 {
            return;
        }
        if let Some(error) = &report.last_error {
            drops = drops.detail(error.clone());
        }
        if !self.shared.drop_reporter.report(drops) {
            log::warn!(target: "notify::opentelemetry", "{report}");
        }
    }

    /// The end: drain, decide held traces, shut the exporter down, answer, count what is left.
    fn close(&mut self, requests: Vec<Request>) {
        let mut events = Vec::new();
        self.drain(&mut events);
        if let Some(tail) = &mut self.tail {
            let mut kept = Vec::new();
            tail.finish(&mut kept);
            self.export_kept(kept);
        }
        if let Err(panic) = catch_unwind(AssertUnwindSafe(|| self.exporter.shutdown())) {
            notify_core::failure::drop_panic_payload(panic);
        }
        // Later events are counted by the producers (closed) or by `stats` (left in the queue).
        self.shared.finished.store(true, Ordering::SeqCst);
        self.report_drops(true);
        let stats = self.shared.stats();
        for request in requests {
            match request {
                Request::Flush(reply) | Request::Shutdown(reply) => {
                    let _ = reply.send(stats);
                }
                Request::Close => {}
            }
        }
    }
}
