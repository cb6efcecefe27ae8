//! [`Collector`] and its [`CollectorBuilder`]: the handle the instrumenting threads push into,
//! and the requests (flush, shutdown) of the application.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::Duration;

use notify_core::export::Overflow;
use notify_core::{Event, Subscription};

use crate::drop_report::DropReporter;
use crate::handoff::Handoff;
use crate::runtime::{Driver, ExportRuntime};
use crate::shared::{lock, Control, Counters, DropHook, Shared};
use crate::sink::Sink;
use crate::stats::{DropReport, ExportError, ExportStats};
use crate::tail::{TailSampler, TailSampling, TailStats};
use crate::worker::Worker;

/// Configures a [`Collector`]: [`Collector::builder`].
pub struct CollectorBuilder<S> {
    name: Cow<'static, str>,
    sink: S,
    capacity: usize,
    batch: usize,
    delay: Duration,
    overflow: Overflow,
    block_limit: Option<Duration>,
    tail: Option<TailSampling>,
    on_drops: Option<DropHook>,
    report_interval: Duration,
    runtime: ExportRuntime,
}

impl<S: Sink> CollectorBuilder<S> {
    /// How many events each publishing thread's queue holds (default 8,192; at least 1, at most
    /// [`Handoff::MAX_PER_THREAD`]): the instrumenting thread hands events over through a queue of
    /// its own ([`Handoff`]: no lock, no shared read-modify-write per event), made whole on its
    /// first event (8 bytes per event). Memory is bounded by this many events per live publishing
    /// thread, plus, for what threads that exited left queued, this many per thread that published
    /// at once (beyond it the oldest are kept, the newest with [`Overflow::DropOldest`], the rest
    /// counted `dropped_queue_full`), plus one batch being exported.
    pub fn queue_capacity(mut self, events: usize) -> CollectorBuilder<S> {
        self.capacity = events.clamp(1, Handoff::MAX_PER_THREAD);
        self
    }

    /// At most this many events per [`Sink::export`] call (default 512; at least 1). The
    /// collector's thread is woken when a thread's queue holds this many events (at most its
    /// capacity).
    pub fn max_batch_size(mut self, events: usize) -> CollectorBuilder<S> {
        self.batch = events.max(1);
        self
    }

    /// How long queued events may wait for a batch to fill before they are exported anyway
    /// (default 1 s).
    pub fn scheduled_delay(mut self, delay: Duration) -> CollectorBuilder<S> {
        self.delay = delay;
        self
    }

    /// What a push onto a full queue does (default [`Overflow::DropNewest`]; every drop is counted
    /// `dropped_queue_full`): see [`Handoff`]. With [`Overflow::Block`], the instrumenting thread
    /// waits for room, without limit unless [`block_limit`](Self::block_limit) sets one; a
    /// shutdown ends the wait (the event is counted `dropped_shutdown`), and a thread that exits
    /// never waits.
    pub fn overflow(mut self, overflow: Overflow) -> CollectorBuilder<S> {
        self.overflow = overflow;
        self
    }

    /// With [`Overflow::Block`]: wait at most `limit` per event, then drop it (counted
    /// `dropped_queue_full`). Without it, a blocked publisher waits until there is room or the
    /// collector shuts down.
    pub fn block_limit(mut self, limit: Duration) -> CollectorBuilder<S> {
        self.block_limit = Some(limit);
        self
    }

    /// Runs a [`TailSampler`] on the collector's thread, in front of the sink: only the traces it
    /// keeps are exported; what it drops is counted in `dropped_tail_sampling` and in detail by
    /// [`Collector::tail_stats`]. Events it holds wait for their root (at most the configured
    /// `max_wait`; a [`shutdown`](Collector::shutdown) decides them all).
    pub fn tail_sampling(mut self, config: TailSampling) -> CollectorBuilder<S> {
        self.tail = Some(config);
        self
    }

    /// Called on the collector's thread with a [`DropReport`] once per burst of drops, instead of
    /// the default. A panic in the hook is swallowed.
    ///
    /// The default reports the burst's failures (queue full, exporter error, shutdown; not what
    /// tail sampling chose to drop) through the failure hook of the first notifier kept with
    /// [`Collector::report_through`] that is still alive
    /// ([`Subscription::report_export_drops`](notify_core::Subscription::report_export_drops),
    /// counted in [`Notifier::failures`](notify_core::Notifier::failures)); when there is none, a
    /// `log::warn!` with target `notify::export`.
    pub fn on_drops(mut self, hook: impl Fn(&DropReport) + Send + Sync + 'static) -> CollectorBuilder<S> {
        self.on_drops = Some(Arc::new(hook));
        self
    }

    /// Under sustained overload (the queues never drain), drops are reported at most this often
    /// (default 1 s).
    pub fn report_interval(mut self, interval: Duration) -> CollectorBuilder<S> {
        self.report_interval = interval;
        self
    }

    /// The tokio runtime the sink's futures run on (default [`ExportRuntime::Auto`]: the
    /// building thread's runtime, else one of the collector's own); a
    /// [`tokio::runtime::Handle`] or an owned [`tokio::runtime::Runtime`] converts.
    pub fn runtime(mut self, runtime: impl Into<ExportRuntime>) -> CollectorBuilder<S> {
        self.runtime = runtime.into();
        self
    }

    /// The sink, to configure it before the collector starts (an exporter's builder sets what it
    /// learns last, e.g. the OpenTelemetry resource).
    pub fn sink_mut(&mut self) -> &mut S {
        &mut self.sink
    }

    /// Starts the collector's thread (named `notify-export`), telemetry-suppressed
    /// ([`notify_core::suppression::suppress_telemetry_on_this_thread`]): what the sink logs or
    /// traces there is not bridged back into notify as events to export.
    ///
    /// # Panics
    /// When the thread cannot be spawned (as `std::thread::spawn`), or a runtime of the
    /// collector's own cannot be built.
    pub fn build(self) -> Collector {
        let CollectorBuilder {
            name,
            sink,
            capacity,
            batch,
            delay,
            overflow,
            block_limit,
            tail,
            on_drops,
            report_interval,
            runtime,
        } = self;
        let driver = Driver::new(runtime);
        let mut handoff = Handoff::new(capacity, overflow).wake_at(batch);
        // A runtime of the collector's own is driven while the thread waits for work: the wakes
        // that unpark the thread notify it there too.
        let idle_wake = matches!(driver, Driver::Owned(_)).then(|| Arc::new(tokio::sync::Notify::new()));
        if let Some(wake) = &idle_wake {
            let wake = wake.clone();
            handoff = handoff.wake_with(move || wake.notify_one());
        }
        if let Some(limit) = block_limit {
            handoff = handoff.block_limit(limit);
        }
        let shared = Arc::new(Shared {
            name,
            runtime: driver.describe(),
            handoff,
            overflow,
            block_limit,
            batch,
            control: Mutex::new(Control::default()),
            changed: Condvar::new(),
            closed: AtomicBool::new(false),
            finished: AtomicBool::new(false),
            given_up: Mutex::new(false),
            counters: Counters::default(),
            tail_stats: Mutex::new(None),
            drop_reporter: DropReporter::new(),
            last_error: Mutex::new(None),
            gave_up_signal: tokio::sync::Notify::new(),
            idle_wake,
        });
        let worker = Worker::new(
            shared.clone(),
            sink,
            driver,
            tail.map(TailSampler::new),
            delay,
            on_drops,
            report_interval,
        );
        let ready = shared.clone();
        thread::Builder::new()
            .name("notify-export".into())
            .spawn(move || {
                ready.handoff.set_consumer_thread();
                // Its own pushes (a sink that instruments) must never wait for itself.
                Handoff::never_block_this_thread();
                worker.run();
            })
            .expect("notify-export: spawn the collector thread");
        Collector {
            inner: Arc::new(Inner { shared }),
        }
    }
}

/// The export collector: what every notify exporter (OpenTelemetry, NATS, the live page, a
/// file, a vendor) sits on, as fastrace's collector sits under its reporters.
///
/// The instrumenting threads [`push`](Collector::push) shared events (`Arc<Event>`) into a
/// [`Handoff`] (a wait-free queue per publishing thread, the [`Overflow`] policy when full). The
/// collector's thread drains the queues, runs tail sampling ([`TailSampler`]), cuts batches of
/// [`max_batch_size`](CollectorBuilder::max_batch_size) and hands each to the [`Sink`] on its
/// tokio runtime ([`ExportRuntime`]), counts every event exactly once ([`ExportStats`]: exported
/// or dropped by cause, held, queued), reports each burst of drops once ([`DropReport`]), gives
/// exported events back to notify for reuse, and answers [`force_flush`](Collector::force_flush)
/// and [`shutdown`](Collector::shutdown) within their deadlines.
///
/// Cloning is cheap (the clones share the collector); when the last clone is dropped the
/// collector shuts down in the background (exports what is queued, decides what tail sampling
/// holds, shuts the sink down).
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use std::time::{Duration, Instant};
/// use notify_core::{Event, Payload};
/// use notify_export::{ready, Collector, Sink, SinkFuture};
///
/// struct Names(Arc<Mutex<Vec<String>>>);
/// impl Sink for Names {
///     fn export<'a>(&'a mut self, batch: &'a [Arc<Event>]) -> SinkFuture<'a> {
///         self.0.lock().unwrap().extend(batch.iter().map(|e| e.name().to_owned()));
///         ready(Ok(()))
///     }
/// }
///
/// let names = Arc::new(Mutex::new(Vec::new()));
/// let collector = Collector::builder("names", Names(names.clone())).build();
/// let now = Instant::now();
/// collector.push(&Arc::new(Event::new("job.run", now, now, Payload::new())));
/// let stats = collector.force_flush(Duration::from_secs(5))?;
/// assert_eq!((stats.exported, stats.dropped()), (1, 0));
/// assert_eq!(*names.lock().unwrap(), ["job.run"]);
/// # Ok::<(), notify_export::ExportError>(())
/// ```
#[derive(Clone)]
pub struct Collector {
    inner: Arc<Inner>,
}

/// The last handle's drop shuts the collector down.
struct Inner {
    shared: Arc<Shared>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.shared.begin_shutdown();
    }
}

impl Collector {
    /// A [`CollectorBuilder`] for a collector named `name` (the exporter's name in drop reports
    /// and errors: `"opentelemetry"`, `"nats"`) in front of `sink`: queues of 8,192 events,
    /// batches of 512, scheduled delay 1 s, [`Overflow::DropNewest`], no tail sampling, drops
    /// reported through the notifier's failure hook, [`ExportRuntime::Auto`].
    pub fn builder<S: Sink>(name: impl Into<Cow<'static, str>>, sink: S) -> CollectorBuilder<S> {
        CollectorBuilder {
            name: name.into(),
            sink,
            capacity: 8_192,
            batch: 512,
            delay: Duration::from_secs(1),
            overflow: Overflow::DropNewest,
            block_limit: None,
            tail: None,
            on_drops: None,
            report_interval: Duration::from_secs(1),
            runtime: ExportRuntime::Auto,
        }
    }

    /// Hands `event` to the collector's thread: queued in this thread's queue (returns `true`),
    /// or counted as dropped by the [`Overflow`] policy or because the collector shut down. This
    /// is all an exporter's subscription does on the instrumenting thread (after its own
    /// filtering, e.g. head sampling's [`Event::is_sampled`]).
    #[inline]
    pub fn push(&self, event: &Arc<Event>) -> bool {
        self.inner.shared.handoff.push(event)
    }

    /// Keeps `subscription` to report drops through: the default drop report goes through the
    /// failure hook of the first kept subscription whose notifier is alive (the first 16 kept).
    pub fn report_through(&self, subscription: &Subscription) {
        self.inner.shared.drop_reporter.keep(subscription);
    }

    /// The collector's name (as given to [`Collector::builder`]).
    pub fn name(&self) -> &str {
        &self.inner.shared.name
    }

    /// The counters now (see [`ExportStats`]).
    pub fn stats(&self) -> ExportStats {
        self.inner.shared.stats()
    }

    /// The tail sampler's detailed counters as of the collector thread's last batch, when tail
    /// sampling is on.
    pub fn tail_stats(&self) -> Option<TailStats> {
        *lock(&self.inner.shared.tail_stats)
    }

    /// Exports everything queued before this call (events held by tail sampling stay held), calls
    /// [`Sink::flush`], and returns the counters after it; waits at most `timeout`. A request
    /// that times out leaves nothing behind: the thread serves it with the next flush it does,
    /// and any number of timed-out requests take no memory.
    ///
    /// # Errors
    /// [`ExportError::TimedOut`] when the collector's thread did not get there in time (a slow or
    /// hung sink); [`ExportError::ShutDown`] after [`shutdown`](Self::shutdown).
    pub fn force_flush(&self, timeout: Duration) -> Result<ExportStats, ExportError> {
        let shared = &self.inner.shared;
        if shared.closed.load(Ordering::SeqCst) {
            return Err(ExportError::ShutDown(shared.stats()));
        }
        let ticket = {
            let mut control = lock(&shared.control);
            control.flush_requested += 1;
            control.flush_requested
        };
        shared.handoff.wake();
        let mut flushed = false;
        let done = shared.wait(timeout, |c| {
            flushed = c.flushed >= ticket;
            flushed || c.finished
        });
        match (done, flushed) {
            (true, true) => Ok(shared.stats()),
            (true, false) => Err(ExportError::ShutDown(shared.stats())),
            (false, _) => Err(ExportError::TimedOut(shared.stats())),
        }
    }

    /// Stops taking events (later ones are counted `dropped_shutdown`), exports what is queued,
    /// decides what tail sampling holds, calls [`Sink::shutdown`], and returns the final counters;
    /// waits at most `timeout`.
    ///
    /// # Errors
    /// [`ExportError::TimedOut`] when the thread did not finish in time: it takes nothing more
    /// from the queues (what they hold is counted `dropped_shutdown` in the attached counters)
    /// and stops after its current export; a pipelining sink learns of it through
    /// [`Settle::given_up`](crate::Settle::given_up). [`ExportError::ShutDown`] when already shut
    /// down.
    pub fn shutdown(&self, timeout: Duration) -> Result<ExportStats, ExportError> {
        let shared = &self.inner.shared;
        if !shared.begin_shutdown() {
            return Err(ExportError::ShutDown(shared.stats()));
        }
        if shared.wait(timeout, |c| c.finished) {
            return Ok(shared.stats());
        }
        // The thread is stuck in (or slow at) an export: it takes nothing more from the queues,
        // so what is queued is dropped now and counted so in these stats.
        *lock(&shared.given_up) = true;
        // A pipelining sink that retries stops (`Settle::given_up`).
        shared.gave_up_signal.notify_waiters();
        Err(ExportError::TimedOut(shared.stats()))
    }
}

impl Collector {
    /// Waits until the collector's thread ended, at most `timeout`, and returns the final
    /// counters. The thread ends after a [`shutdown`](Self::shutdown) (or the last handle's
    /// drop); after one that timed out, once the sink's current future returns (a pipelining
    /// sink stops at [`Settle::given_up`](crate::Settle::given_up)), having counted what it
    /// still held.
    ///
    /// # Errors
    /// [`ExportError::TimedOut`] when the thread still runs (no shutdown began, or the sink's
    /// future has not returned).
    pub fn join(&self, timeout: Duration) -> Result<ExportStats, ExportError> {
        let shared = &self.inner.shared;
        if shared.wait(timeout, |c| c.finished) {
            Ok(shared.stats())
        } else {
            Err(ExportError::TimedOut(shared.stats()))
        }
    }
}

impl std::fmt::Debug for Collector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shared = &self.inner.shared;
        f.debug_struct("Collector")
            .field("name", &shared.name)
            .field("overflow", &shared.overflow)
            .field("block_limit", &shared.block_limit)
            .field("max_batch_size", &shared.batch)
            .field("runtime", &shared.runtime)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl<S> std::fmt::Debug for CollectorBuilder<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CollectorBuilder")
            .field("name", &self.name)
            .field("queue_capacity", &self.capacity)
            .field("max_batch_size", &self.batch)
            .field("scheduled_delay", &self.delay)
            .field("overflow", &self.overflow)
            .field("block_limit", &self.block_limit)
            .field("tail_sampling", &self.tail)
            .field("runtime", &self.runtime)
            .finish_non_exhaustive()
    }
}
