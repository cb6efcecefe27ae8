//! [`Exporter`]: finished events, batched onto NATS subjects from a thread of its own.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use async_nats::jetstream;
use async_nats::HeaderMap;
use bytes::Bytes;
use futures_util::future;
use notify_core::escape::Escaped;
use notify_core::export::Overflow;
use notify_core::failure::ExportDrops;
use notify_core::{Event, Notifier, OwnedEventSubscriber, Pattern, Subscriber, Subscription};
use notify_export::{DropReporter, Handoff, TailSampler, TailSampling, TailStats};
use parking_lot::{Condvar, Mutex};

use crate::confirm::{Tally, Window};
use crate::connect::{self, spawn_connected, ConnectError, ConnectErrorKind, NatsOptions, RoundTrip};
use crate::jetstream::JetStream;
use crate::subject::{check_prefix, subject_for};
use crate::wire::{BatchEncoder, Encoding, PushError, WIRE_VERSION, WRITABLE_VERSIONS};

/// Header naming the encoding of a message body: `postcard` (notify's binary batches: postcard's
/// encoding up to wire version 2, version 3's own compact layout since; [`VERSION_HEADER`] and the
/// body's version say which) or `json`.
pub const ENCODING_HEADER: &str = "Notify-Encoding";
/// Header with the wire-format version of a message body.
pub const VERSION_HEADER: &str = "Notify-Version";
/// Header with the W3C `traceparent` of the first event of a batch (each event carries its own
/// ids in the body).
pub const TRACEPARENT_HEADER: &str = notify_core::trace_context::TRACEPARENT;

/// Configures and starts an [`Exporter`].
///
/// ```no_run
/// use notify_core::{Notifier, Pattern};
/// use notify_nats::{Exporter, NatsOptions};
///
/// let notifier = Notifier::new();
/// let exporter = Exporter::builder(NatsOptions::new("nats://127.0.0.1:4222")).prefix("bookstore").start()?;
/// let subscription = notifier.subscribe(Pattern::all(), exporter.subscriber());
/// // ... instrumented code runs; its events go to subjects "bookstore.<event name>" ...
/// subscription.unsubscribe()?;
/// let report = exporter.shutdown(std::time::Duration::from_secs(5));
/// assert_eq!(report.stats.pending, 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct ExporterBuilder {
    options: NatsOptions,
    prefix: String,
    encoding: Encoding,
    wire_version: u16,
    capacity: usize,
    overflow: Overflow,
    max_message_bytes: usize,
    flush_timeout: Duration,
    jetstream: Option<JetStream>,
    tail: Option<TailSampling>,
}

impl ExporterBuilder {
    /// The subject prefix (default `"notify"`): events go to `<prefix>.<event name>`. One or more
    /// dot-separated tokens, none empty, without whitespace or wildcards (`*`, `>`); another
    /// prefix is a [`ConnectErrorKind::Subject`] error from [`ExporterBuilder::start`].
    #[must_use]
    pub fn prefix(mut self, prefix: impl Into<String>) -> ExporterBuilder {
        self.prefix = prefix.into();
        self
    }

    /// The encoding (default [`Encoding::Binary`]).
    #[must_use]
    pub fn encoding(mut self, encoding: Encoding) -> ExporterBuilder {
        self.encoding = encoding;
        self
    }

    /// The wire-format version of binary batches (default [`WIRE_VERSION`], 3): 2 keeps writing
    /// the previous version during a rolling upgrade, since an importer refuses a batch newer than
    /// it reads ([`DecodeError::UnsupportedVersion`](crate::DecodeError::UnsupportedVersion),
    /// counted in `ImporterStats::unsupported_version`): set 2 on the exporters until every
    /// importer reads version 3, then
    /// drop the setting. Version 3 batches are about a quarter the size of version 2's for
    /// events of one name with repeated payload text. JSON batches are unaffected (they keep
    /// version 2's shape and say version 2).
    ///
    /// ```
    /// use notify_nats::{Exporter, NatsOptions};
    /// let builder = Exporter::builder(NatsOptions::new("nats://127.0.0.1:4222")).wire_version(2);
    /// # drop(builder);
    /// ```
    ///
    /// Another version (version 1 is read, no longer written) is a
    /// [`ConnectErrorKind::WireVersion`] error from [`ExporterBuilder::start`].
    #[must_use]
    pub fn wire_version(mut self, version: u16) -> ExporterBuilder {
        self.wire_version = version;
        self
    }

    /// How many events may wait in each publishing thread's queue (default 8,192; at least 1);
    /// beyond it the overflow policy decides. The instrumenting thread hands events over through
    /// a queue of its own ([`notify_export::Handoff`]: no lock, no read-modify-write shared
    /// with other threads), allocated whole on the thread's first event (8 bytes per event:
    /// 64 KiB by default). Memory is bounded by this many events per live publishing thread, plus,
    /// for what threads that exited left queued, this many per thread that published at once
    /// (threads that come and go one after another do not add up; beyond it the overflow policy
    /// keeps the oldest or the newest, the rest counted as overflow), also while the server is
    /// unreachable, plus the round being sent (a shared event is about 480 bytes plus what its
    /// payload owns). At most
    /// [`Handoff::MAX_PER_THREAD`](notify_export::Handoff::MAX_PER_THREAD) (2^24 events):
    /// a larger capacity is clamped to it.
    #[must_use]
    pub fn capacity(mut self, events: usize) -> ExporterBuilder {
        self.capacity = events.clamp(1, notify_export::Handoff::MAX_PER_THREAD);
        self
    }

    /// What happens to an event when its thread's queue is full (default
    /// [`Overflow::DropNewest`]: the instrumenting thread never waits). [`Overflow::DropOldest`]
    /// drops the oldest event of that queue. [`Overflow::Block`] makes the thread wait for room
    /// (it looks again every 200 µs) or for shutdown, except on the exporter's and importer's own
    /// threads, where the event is dropped and counted.
    #[must_use]
    pub fn overflow(mut self, overflow: Overflow) -> ExporterBuilder {
        self.overflow = overflow;
        self
    }

    /// The largest message body, in bytes (default 256 KiB, and never more than the server's
    /// `max_payload`). Events of one name go into one message up to this size.
    #[must_use]
    pub fn max_message_bytes(mut self, bytes: usize) -> ExporterBuilder {
        self.max_message_bytes = bytes.max(128);
        self
    }

    /// Core mode: how long the server may take to confirm a round of messages (default 2 s).
    ///
    /// After publishing a round, the exporter publishes one more message to a private inbox it
    /// subscribes to and waits up to this long for it to come back: the server handles a
    /// connection's messages in order, so the echo proves that it processed the whole round.
    /// When the echo takes longer than 1 ms, the next rounds are published meanwhile (at most 4
    /// rounds unconfirmed at once, each with its own echo); this limit then runs from the moment
    /// the exporter has to wait (4 rounds out, or going idle), so a round may stay unconfirmed
    /// somewhat longer before it counts as lost.
    /// The same limit bounds each wait of a publish for room in the client's buffer. The events of
    /// a round not confirmed in time, or whose connection was replaced by a reconnection before
    /// the echo came back, are counted in [`Dropped::disconnected`], never as exported.
    #[must_use]
    pub fn flush_timeout(mut self, timeout: Duration) -> ExporterBuilder {
        self.flush_timeout = timeout;
        self
    }

    /// JetStream mode (at-least-once, see [`JetStream`]) instead of core NATS (at-most-once).
    #[must_use]
    pub fn jetstream(mut self, jetstream: JetStream) -> ExporterBuilder {
        self.jetstream = Some(jetstream);
        self
    }

    /// Runs a tail-sampling stage ([`notify_export::TailSampler`]) on the exporter's thread,
    /// between the queue and the encoder: a trace's events are held until its local root arrives,
    /// then sent whole when it has an error, a root slower than the threshold, or falls in the
    /// ratio, and dropped whole otherwise (counted in [`Dropped::tail_sampling`], by cause in
    /// [`Exporter::tail_stats`]). Held events are [`ExporterStats::held`], not pending:
    /// [`Exporter::flush`] does not wait for them; [`Exporter::shutdown`] decides them first. When
    /// traces are held, the thread wakes by the oldest one's `max_wait` to decide it.
    #[must_use]
    pub fn tail_sampling(mut self, config: TailSampling) -> ExporterBuilder {
        self.tail = Some(config);
        self
    }

    /// Connects (and in JetStream mode creates the stream if missing), then starts the exporter's
    /// thread, which runs its own single-threaded tokio runtime.
    ///
    /// # Errors
    ///
    /// A [`ConnectError`]: an invalid prefix ([`ConnectErrorKind::Subject`], naming the bad
    /// token, before connecting), a wire version not written ([`ConnectErrorKind::WireVersion`],
    /// before connecting), wrong credentials ([`ConnectErrorKind::Authorization`]), no server,
    /// TLS, or JetStream not enabled on the server.
    pub fn start(self) -> Result<Exporter, ConnectError> {
        if let Err(why) = check_prefix(&self.prefix) {
            return Err(ConnectError::new(
                self.options.servers(),
                ConnectErrorKind::Subject,
                why,
            ));
        }
        if !WRITABLE_VERSIONS.contains(&self.wire_version) {
            return Err(ConnectError::new(
                self.options.servers(),
                ConnectErrorKind::WireVersion,
                format!(
                    "notify-nats exporters write wire version 2 or {WIRE_VERSION}, not {}",
                    self.wire_version
                ),
            ));
        }
        let wake = Arc::new(tokio::sync::Notify::new());
        let waker = wake.clone();
        // Woken by the first event after the exporter's thread found every queue empty (one
        // wake per idle period), by a full queue, and by shutdown.
        let handoff = Handoff::new(self.capacity, self.overflow)
            .wake_at(1)
            .wake_with(move || waker.notify_one());
        let shared = Arc::new(Shared {
            handoff,
            wake,
            counts: ConsumerCounts::default(),
            finished: AtomicBool::new(false),
            connected: AtomicBool::new(true),
            connection: tokio::sync::Notify::new(),
            abandon: AtomicBool::new(false),
            abandon_now: tokio::sync::Notify::new(),
            progress: Mutex::new(()),
            progressed: Condvar::new(),
            batches: AtomicU64::new(0),
            not_reexported: AtomicU64::new(0),
            tail: Mutex::new(None),
            drop_reporter: DropReporter::new(),
            reported: Mutex::new((Dropped::default(), Instant::now())),
        });
        let thread_shared = shared.clone();
        let servers = self.options.servers().to_owned();
        let (source, thread) = spawn_connected("notify-nats-exporter", &servers, "connecting", move |ready| {
            run_thread(self, thread_shared, ready)
        })?;
        Ok(Exporter {
            shared,
            source,
            thread: Mutex::new(Some(thread)),
        })
    }
}

/// What the exporter's thread counts (the hand-off counts what the instrumenting threads
/// queued and dropped).
#[derive(Default)]
struct ConsumerCounts {
    exported: AtomicU64,
    disconnected: AtomicU64,
    too_large: AtomicU64,
    encode: AtomicU64,
    shutdown: AtomicU64,
}

/// What the exporter's thread and its handles share.
struct Shared {
    /// The instrumenting threads' queues (one per thread), drained by the exporter's thread.
    handoff: Handoff,
    /// Wakes the exporter's task: the hand-off's wake hook, and shutdown.
    wake: Arc<tokio::sync::Notify>,
    counts: ConsumerCounts,
    /// The exporter's thread ended: what a racing push left in a queue was dropped at shutdown.
    finished: AtomicBool,
    connected: AtomicBool,
    connection: tokio::sync::Notify,
    /// Set when the shutdown deadline passed: stop retrying, count what is left.
    abandon: AtomicBool,
    abandon_now: tokio::sync::Notify,
    progress: Mutex<()>,
    progressed: Condvar,
    batches: AtomicU64,
    /// [`ExporterStats::not_reexported`].
    not_reexported: AtomicU64,
    /// The tail sampler's counters as of its last batch (one lock: an event moving from held to
    /// dropped is never seen in both).
    tail: Mutex<Option<TailStats>>,
    /// Where drops are reported: the subscriptions made with [`Exporter::subscribe`].
    drop_reporter: DropReporter,
    /// The drops last reported, and when.
    reported: Mutex<(Dropped, Instant)>,
}

/// During a burst of drops, at most one report per this interval; the rest when the burst ends.
const REPORT_INTERVAL: Duration = Duration::from_secs(1);

impl Shared {
    /// Reports the drops (tail sampling's choices excepted) since the last report through the
    /// failure hook of the first live notifier subscribed with [`Exporter::subscribe`], else as a
    /// `log` warning: when the burst is over (`quiet`: the queue is empty, or shutdown) or once
    /// [`REPORT_INTERVAL`] has passed since the last report.
    fn report_drops(&self, quiet: bool) {
        let now = self.stats().dropped;
        let drops = {
            let mut reported = self.reported.lock();
            let (last, at) = &mut *reported;
            let burst = [
                ("queue full", now.overflow - last.overflow),
                ("disconnected", now.disconnected - last.disconnected),
                ("too large", now.too_large - last.too_large),
                ("encode", now.encode - last.encode),
                ("shutdown", now.shutdown - last.shutdown),
            ];
            if burst.iter().all(|(_, n)| *n == 0) || (!quiet && at.elapsed() < REPORT_INTERVAL) {
                return;
            }
            *last = now;
            *at = Instant::now();
            burst
                .into_iter()
                .fold(ExportDrops::new("nats"), |drops, (cause, n)| drops.with(cause, n))
        };
        if !self.drop_reporter.report(drops.clone()) {
            log::warn!(target: "notify::nats", "{drops}");
        }
    }

    /// Where core mode's confirmation window counts rounds.
    fn tally(&self) -> Tally<'_> {
        Tally {
            exported: &self.counts.exported,
            messages: &self.batches,
            lost: &self.counts.disconnected,
        }
    }

    fn stats(&self) -> ExporterStats {
        let c = &self.counts;
        // Consumer counts first: an event moves from pending to a consumer count, never back, so
        // reading them before the producer side never shows more resolved than published.
        let exported = c.exported.load(Ordering::Acquire);
        let disconnected = c.disconnected.load(Ordering::Acquire);
        let too_large = c.too_large.load(Ordering::Acquire);
        let encode = c.encode.load(Ordering::Acquire);
        let shutdown = c.shutdown.load(Ordering::Acquire);
        // After the other consumer counts: an event leaves `held` (for exported or a drop) only
        // after this is updated, so it is never counted twice.
        let tail = self.tail.lock().unwrap_or_default();
        // Last: every event the counts above resolved was drained before.
        let handed = self.handoff.stats();
        // Pushes that raced past the closed check after the thread's last drain.
        let stranded = if self.finished.load(Ordering::Acquire) {
            handed.queued
        } else {
            0
        };
        let dropped = Dropped {
            overflow: handed.dropped_full,
            disconnected,
            too_large,
            encode,
            shutdown: shutdown + handed.dropped_closed + stranded,
            tail_sampling: tail.dropped(),
        };
        let published = handed.pushed();
        ExporterStats {
            published,
            exported,
            pending: published - exported - dropped.total() - tail.held,
            held: tail.held,
            dropped,
            messages: self.batches.load(Ordering::Relaxed),
            not_reexported: self.not_reexported.load(Ordering::Relaxed),
        }
    }

    /// Shutdown began and nothing is queued: nothing left to take.
    fn closed_and_empty(&self) -> bool {
        self.handoff.is_closed() && self.handoff.is_empty()
    }

    fn progressed(&self) {
        let _guard = self.progress.lock();
        self.progressed.notify_all();
    }
}

/// Events dropped by the exporter, by cause. Every event handed to the exporter ends up exactly
/// once in [`ExporterStats::exported`], in one of these, or in [`ExporterStats::pending`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dropped {
    /// The publishing thread's queue was full (see [`ExporterBuilder::overflow`]); with
    /// [`Overflow::DropOldest`] the evicted events.
    pub overflow: u64,
    /// Core mode: lost with the connection, or not confirmed: the publish failed, or the server
    /// did not echo the round's confirmation within [`ExporterBuilder::flush_timeout`] (a frozen
    /// or overloaded server, a dead connection not yet noticed), or the client reconnected before
    /// the echo came back. Some of them may still have reached the server (a frozen server that
    /// resumes delivers what it had read).
    pub disconnected: u64,
    /// The event alone encodes larger than the largest message.
    pub too_large: u64,
    /// The event could not be encoded: the serializer failed, or a payload value nests lists and
    /// maps deeper than `notify_core::Value::MAX_NESTING` (32), which importers refuse (the event
    /// is refused alone, so that the rest of its batch arrives; a warning names it).
    pub encode: u64,
    /// Refused after shutdown began, or still unconfirmed when the shutdown deadline passed.
    pub shutdown: u64,
    /// Left out by tail sampling ([`ExporterBuilder::tail_sampling`]), whatever the cause (the
    /// causes are in [`Exporter::tail_stats`]).
    pub tail_sampling: u64,
}

impl Dropped {
    /// The sum of every cause.
    pub fn total(&self) -> u64 {
        self.overflow + self.disconnected + self.too_large + self.encode + self.shutdown + self.tail_sampling
    }
}

/// A snapshot of an exporter's counters (counts of events unless said otherwise).
///
/// `published == exported + dropped.total() + pending + held` always holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExporterStats {
    /// Events handed to the exporter by its subscriber.
    pub published: u64,
    /// Events the server confirmed: core mode, a round trip through the exporter's own inbox
    /// after their round, on the same connection (see [`ExporterBuilder::flush_timeout`]);
    /// JetStream mode, the stream's publish acknowledgement.
    pub exported: u64,
    /// Events dropped, by cause.
    pub dropped: Dropped,
    /// Events queued or in flight.
    pub pending: u64,
    /// Events the tail-sampling stage holds, waiting for their trace's local root (0 without
    /// [`ExporterBuilder::tail_sampling`]).
    pub held: u64,
    /// NATS messages (batches) confirmed.
    pub messages: u64,
    /// Events an [`Importer`](crate::Importer) of this process republished that this exporter's
    /// subscriber received and did not export again: exporting them would send them back to
    /// where they came from (a process that exports and imports the same subjects, or two that
    /// export and import each other's, would pass every event round for ever). Not counted in
    /// `published`.
    pub not_reexported: u64,
}

/// What [`Exporter::shutdown`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShutdownReport {
    /// The final counters (`pending` is 0: what could not be sent by the deadline is in
    /// `dropped.shutdown`).
    pub stats: ExporterStats,
    /// True when everything was resolved before the deadline (nothing abandoned).
    pub drained: bool,
}

/// [`Exporter::flush`] gave up: events published before the call were still pending.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlushTimeout {
    /// The counters when it gave up.
    pub stats: ExporterStats,
}

impl fmt::Display for FlushTimeout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "exporter flush timed out with {} events pending", self.stats.pending)
    }
}

impl std::error::Error for FlushTimeout {}

/// Exports finished events to NATS.
///
/// The instrumenting thread only enqueues (an `Arc` clone and a push into a queue of its own,
/// [`notify_export::Handoff`]: no lock, no read-modify-write shared with other threads); the
/// exporter's thread takes everything queued (each thread's events in the order it published
/// them), groups it by event name, encodes each group into
/// messages of up to [`ExporterBuilder::max_message_bytes`], publishes them under
/// `<prefix>.<event name>` ([`subject_for`]) with the headers [`ENCODING_HEADER`],
/// [`VERSION_HEADER`] and [`TRACEPARENT_HEADER`], and confirms them (core mode: one message to a
/// private inbox the exporter subscribes to, which the server echoes after it processed the round;
/// JetStream: the publish acknowledgements, re-sending unacknowledged messages with the same
/// `Nats-Msg-Id` until the server has them). Batches form by themselves: what queues while one
/// round is on the wire goes in the next; the exporter's thread is woken once per idle period
/// (by the first event after it found every queue empty), never per event, and has no timer
/// when idle (one of a millisecond as it goes idle, see
/// [`Handoff::prepare_wait`](notify_export::Handoff::prepare_wait)). Encoded events are
/// given back for reuse ([`notify_core::export::recycle_all`]), so in a steady flow the
/// instrumenting thread allocates no owned event.
pub struct Exporter {
    shared: Arc<Shared>,
    source: u64,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Exporter {
    /// A builder for an exporter connecting with `options`.
    pub fn builder(options: NatsOptions) -> ExporterBuilder {
        ExporterBuilder {
            options,
            prefix: "notify".into(),
            encoding: Encoding::default(),
            wire_version: WIRE_VERSION,
            capacity: 8_192,
            overflow: Overflow::DropNewest,
            max_message_bytes: 256 * 1024,
            flush_timeout: Duration::from_secs(2),
            jetstream: None,
            tail: None,
        }
    }

    /// An owned-event subscriber that hands each event to this exporter; subscribe it to the
    /// events to export (`notifier.subscribe(Pattern::glob("*.sql")?, exporter.subscriber())`).
    /// Events an [`Importer`](crate::Importer) of this process republishes are not exported
    /// again (counted in [`ExporterStats::not_reexported`]).
    pub fn subscriber(&self) -> Subscriber {
        Subscriber::owned(ExportSubscriber(self.shared.clone())).named("notify-nats exporter")
    }

    /// Subscribes [`Exporter::subscriber`] to `pattern` on `notifier`, and reports this
    /// exporter's drops through that notifier's failure hook
    /// ([`Notifier::set_failure_hook`]; [`Subscription::report_export_drops`]): one
    /// [`SubscriberFailure`](notify_core::failure::SubscriberFailure) per burst of drops, whose
    /// [`export_drops`](notify_core::failure::SubscriberFailure::export_drops) gives the counts by
    /// cause (`queue full`, `disconnected`, `too large`, `encode`, `shutdown`: the fields of
    /// [`Dropped`]), counted in [`Notifier::failures`]. A report goes out when the queues run
    /// empty after drops, at most once a second while they go on, and at shutdown. Tail
    /// sampling's drops are choices, not failures: never reported. With several subscriptions,
    /// through the first whose notifier is alive (among the first 16); with none, or none alive,
    /// as a `log` warning (target `notify::nats`).
    ///
    /// ```no_run
    /// use notify_core::{Notifier, Pattern};
    /// use notify_nats::{Exporter, NatsOptions};
    ///
    /// let notifier = Notifier::new();
    /// notifier.set_failure_hook(|failure| eprintln!("{failure}"));
    /// let exporter = Exporter::builder(NatsOptions::new("nats://127.0.0.1:4222")).start()?;
    /// let subscription = exporter.subscribe(&notifier, Pattern::all());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn subscribe(&self, notifier: &Notifier, pattern: impl Into<Pattern>) -> Subscription {
        let subscription = notifier.subscribe(pattern, self.subscriber());
        self.shared.drop_reporter.keep(&subscription);
        subscription
    }

    /// Hands one event to the exporter (what [`Exporter::subscriber`] does for each event):
    /// queued in the calling thread's queue, or counted as dropped (a full queue, by the
    /// [`ExporterBuilder::overflow`] policy; after shutdown began).
    #[inline]
    pub fn export(&self, event: &Arc<Event>) {
        self.shared.handoff.push(event);
    }

    /// This exporter's random 64-bit id: with an event id it names an event across processes
    /// (and in JetStream mode it is part of every message id).
    pub fn source(&self) -> u64 {
        self.source
    }

    /// The counters now.
    pub fn stats(&self) -> ExporterStats {
        self.shared.stats()
    }

    /// The tail-sampling stage's counters (traces by decision, events by fate) as of the
    /// exporter thread's last batch, when [`ExporterBuilder::tail_sampling`] is on.
    pub fn tail_stats(&self) -> Option<TailStats> {
        *self.shared.tail.lock()
    }

    /// Waits until every event handed to the exporter before the call is exported or dropped,
    /// at most `timeout`.
    ///
    /// # Errors
    ///
    /// [`FlushTimeout`] with the counters when `timeout` passed first (server down, JetStream
    /// still re-sending).
    pub fn flush(&self, timeout: Duration) -> Result<ExporterStats, FlushTimeout> {
        let target = self.shared.handoff.stats().pushed();
        let deadline = Instant::now() + timeout;
        let mut guard = self.shared.progress.lock();
        // Held events wait for their root, not for the network; after shutdown began the thread
        // decides them, and they are waited for.
        let unresolved =
            |stats: &ExporterStats| stats.pending + if self.shared.handoff.is_closed() { stats.held } else { 0 };
        loop {
            let stats = self.shared.stats();
            if stats.published - unresolved(&stats) >= target || unresolved(&stats) == 0 {
                return Ok(stats);
            }
            if self.shared.progressed.wait_until(&mut guard, deadline).timed_out() {
                let stats = self.shared.stats();
                return if stats.published - unresolved(&stats) >= target {
                    Ok(stats)
                } else {
                    Err(FlushTimeout { stats })
                };
            }
        }
    }

    /// Stops the exporter: refuses new events (counted in `dropped.shutdown`), sends what is
    /// queued, waits for it to be confirmed until `deadline` has passed, then counts what is left
    /// in `dropped.shutdown` and joins the thread. Calling it again returns the same counters.
    /// Unsubscribe [`Exporter::subscriber`] first, or events published meanwhile are counted as
    /// dropped at shutdown.
    pub fn shutdown(&self, deadline: Duration) -> ShutdownReport {
        self.shared.handoff.close();
        self.shared.wake.notify_one();
        let Some(thread) = self.thread.lock().take() else {
            return ShutdownReport {
                stats: self.stats(),
                drained: !self.shared.abandon.load(Ordering::Acquire),
            };
        };
        let drained = self.flush(deadline).is_ok();
        if !drained {
            self.shared.abandon.store(true, Ordering::Release);
            self.shared.abandon_now.notify_one();
        }
        self.shared.wake.notify_one();
        let _ = thread.join();
        self.shared.finished.store(true, Ordering::Release);
        self.shared.report_drops(true);
        ShutdownReport {
            stats: self.stats(),
            drained,
        }
    }
}

impl Drop for Exporter {
    /// Shuts down with a 1 s deadline if [`Exporter::shutdown`] was not called.
    fn drop(&mut self) {
        if self.thread.lock().is_some() {
            self.shutdown(Duration::from_secs(1));
        }
    }
}

impl fmt::Debug for Exporter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Exporter")
            .field("source", &self.source)
            .field("stats", &self.stats())
            .finish()
    }
}

struct ExportSubscriber(Arc<Shared>);

impl OwnedEventSubscriber for ExportSubscriber {
    #[inline]
    fn deliver(&self, event: &Arc<Event>) {
        // Head sampling: only sampled traces are exported (notify_core::export::Sampler).
        if !event.is_sampled() {
            return;
        }
        if crate::imported::is_republishing() {
            self.0.not_reexported.fetch_add(1, Ordering::Relaxed);
            return;
        }
        self.0.handoff.push(event);
    }
}

/// A random 64-bit id from the standard library's randomly keyed hasher, the clock and the pid.
pub(crate) fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.write_u32(std::process::id());
    h.finish()
}

fn run_thread(config: ExporterBuilder, shared: Arc<Shared>, ready: std::sync::mpsc::Sender<Result<u64, ConnectError>>) {
    // With `Overflow::Block` this thread drops onto a full queue instead of waiting: the
    // exporter's queues may be drained only by a thread that would wait, or one waiting for it.
    notify_export::Handoff::never_block_this_thread();
    let runtime = match connect::runtime() {
        Ok(runtime) => runtime,
        Err(e) => {
            let _ = ready.send(Err(ConnectError::new(
                config.options.servers(),
                ConnectErrorKind::Thread,
                e.to_string(),
            )));
            return;
        }
    };
    runtime.block_on(async move {
        let events_shared = shared.clone();
        let client = match config
            .options
            .connect(move |event| {
                let up = match event {
                    async_nats::Event::Connected => true,
                    async_nats::Event::Disconnected => false,
                    _ => return,
                };
                events_shared.connected.store(up, Ordering::Release);
                events_shared.connection.notify_waiters();
            })
            .await
        {
            Ok(client) => client,
            Err(e) => {
                let _ = ready.send(Err(e));
                return;
            }
        };
        let server_max = client.server_info().max_payload;
        let max_bytes = config
            .max_message_bytes
            .min(if server_max > 0 { server_max } else { usize::MAX });
        let sink = match &config.jetstream {
            None => match RoundTrip::new(&client).await {
                Ok(round_trip) => Sink::Core {
                    flush_timeout: config.flush_timeout,
                    window: Box::new(Window::new(round_trip, config.flush_timeout)),
                },
                Err(e) => {
                    let _ = ready.send(Err(ConnectError::new(
                        config.options.servers(),
                        ConnectErrorKind::Unreachable,
                        format!("subscribing to the exporter's confirmation inbox: {e}"),
                    )));
                    return;
                }
            },
            Some(js) => {
                let mut context = jetstream::new(client.clone());
                context.set_timeout(js.ack_timeout_value());
                if let Err(e) = js.stream(&context, config.options.servers(), &config.prefix).await {
                    let _ = ready.send(Err(e));
                    return;
                }
                Sink::JetStream(Box::new(context))
            }
        };
        let source = random_u64();
        let _ = ready.send(Ok(source));
        let mut round = Round {
            client,
            sink,
            shared: shared.clone(),
            prefix: config.prefix,
            encoding: config.encoding,
            max_bytes,
            encoder: BatchEncoder::with_version(config.encoding, source, config.wire_version),
            source,
            groups: Vec::new(),
            messages: Vec::new(),
            tail: config.tail.map(TailSampler::new),
        };
        round.run().await;
    });
}

/// At most this many events per round (the rest stay queued for the next rounds, which follow at
/// once). Half the process-wide list of recycled events
/// ([`notify_core::export::MAX_SPARE_EVENTS`]): every event of a round goes back for reuse after
/// it is encoded, so that a steady flow allocates no owned event on the instrumenting threads (a
/// round of all 8,192 events of a full queue would have half of them freed, and as many allocated
/// again by the instrumenting thread).
const MAX_ROUND: usize = notify_core::export::MAX_SPARE_EVENTS / 2;

/// Event names whose grouping buffers are kept between rounds.
const MAX_KEPT_GROUPS: usize = 64;

enum Sink {
    /// Core NATS: each round is confirmed by a round trip through the exporter's own inbox, up to
    /// [`MAX_UNCONFIRMED`](crate::confirm::MAX_UNCONFIRMED) rounds on the wire at once.
    Core {
        flush_timeout: Duration,
        window: Box<Window>,
    },
    JetStream(Box<jetstream::Context>),
}

/// One message: subject, headers, body, the number of events in it.
struct Message {
    subject: String,
    headers: HeaderMap,
    body: Bytes,
    events: u64,
}

struct Round {
    client: async_nats::Client,
    sink: Sink,
    shared: Arc<Shared>,
    prefix: String,
    encoding: Encoding,
    max_bytes: usize,
    encoder: BatchEncoder,
    source: u64,
    /// Events of the current round grouped by name (reused between rounds).
    groups: Vec<(String, Vec<Arc<Event>>)>,
    messages: Vec<Message>,
    /// The tail-sampling stage between the queue and the encoder, when configured.
    tail: Option<TailSampler>,
}

/// How many characters of an event name a warning quotes (names come from the instrumented code,
/// or from another process through an importer).
const NAME_CHARS: usize = 200;

/// The warning for an event whose encoding alone is larger than the largest message: its name
/// escaped as notify-core's own lines escape text (control, bidirectional-formatting and line
/// separator characters: [`notify_core::escape`]) and cut to [`NAME_CHARS`] characters.
fn too_large_warning(name: &str, bytes: usize, max_bytes: usize) -> String {
    format!(
        "event {} encodes to {bytes} bytes, more than the largest message ({max_bytes} bytes): dropped",
        Escaped::truncated(name, NAME_CHARS)
    )
}

#[cfg(test)]
mod warning_tests {
    use super::too_large_warning;

    /// Issue 33 item 11: the name was written raw (a newline forged a log line, ESC/OSC drove the
    /// terminal, bidi controls reordered the text).
    #[test]
    fn the_too_large_warning_escapes_the_event_name() {
        let name = "big.test\n[WARN notify::nats] forged\u{1b}]0;title\u{7}\u{202e}txt.exe";
        assert_eq!(
            too_large_warning(name, 2_000_000, 1_048_576),
            r"event big.test\n[WARN notify::nats] forged\u{1b}]0;title\u{7}\u{202e}txt.exe encodes to 2000000 bytes, more than the largest message (1048576 bytes): dropped"
        );
        let long = "a".repeat(1_000);
        assert_eq!(
            too_large_warning(&long, 9, 8),
            format!(
                "event {}…[1000 bytes] encodes to 9 bytes, more than the largest message (8 bytes): dropped",
                "a".repeat(200)
            )
        );
    }
}

impl Round {
    async fn run(&mut self) {
        let mut taken = Vec::new();
        loop {
            if matches!(self.sink, Sink::Core { .. }) {
                if !self.shared.connected.load(Ordering::Acquire) {
                    // Rounds on the wire when the connection went: their echoes may never come
                    // (counted lost once `flush_timeout` passes), not pending until it is back.
                    self.settle_all().await;
                }
                self.wait_connected().await;
            }
            let mut decided = false;
            if self.shared.handoff.drain(&mut taken, MAX_ROUND) == 0 {
                if self.shared.handoff.is_closed() && self.shared.handoff.drain(&mut taken, MAX_ROUND) == 0 {
                    // Shutdown: decide what tail sampling holds, send what it keeps, then end.
                    if !self.finish_tail(&mut taken) {
                        self.settle_all().await;
                        return;
                    }
                    decided = true;
                } else if taken.is_empty() {
                    // Idle: every round on the wire confirmed (or lost), then the end of a burst
                    // of drops, if there was one.
                    self.settle_all().await;
                    self.shared.report_drops(true);
                    if !self.wait_for_work().await {
                        continue;
                    }
                }
            }
            if !decided {
                self.tail_sample(&mut taken);
            }
            if taken.is_empty() {
                self.shared.progressed();
                continue;
            }
            if self.shared.abandon.load(Ordering::Acquire) {
                let n = taken.len() as u64;
                notify_core::export::recycle_all(&mut taken);
                self.shared.counts.shutdown.fetch_add(n, Ordering::AcqRel);
                self.shared.progressed();
                continue;
            }
            self.encode(&mut taken);
            self.send().await;
            self.shared.progressed();
            self.shared.report_drops(false);
        }
    }

    /// Waits until events are queued, or until the oldest trace tail sampling holds is due
    /// (`true`: decide it now). With nothing held, no timer once idle: one short look again
    /// ([`WAIT_GRACE`]), then no wake-up until an event comes.
    async fn wait_for_work(&mut self) -> bool {
        let handoff = &self.shared.handoff;
        if !handoff.prepare_wait() {
            return false;
        }
        let due = self.tail.as_ref().and_then(TailSampler::next_expiry);
        let grace = Instant::now() + WAIT_GRACE;
        // A push racing with the announcement may have missed it: look again after the grace.
        if wait(&self.shared.wake, Some(due.map_or(grace, |due| due.min(grace)))).await {
            return false;
        }
        if due.is_some_and(|due| due <= Instant::now()) {
            return true;
        }
        if !handoff.is_empty() || handoff.is_closed() {
            return false;
        }
        // Still announced: every later push sees it.
        !wait(&self.shared.wake, due).await
    }

    /// Passes `taken` through the tail-sampling stage (when configured): what it keeps stays in
    /// `taken`, with the traces now due; the counters are published before anything kept is sent.
    fn tail_sample(&mut self, taken: &mut Vec<Arc<Event>>) {
        let Some(tail) = &mut self.tail else {
            return;
        };
        let now = Instant::now();
        let mut kept = Vec::new();
        for event in taken.drain(..) {
            tail.offer(event, now, &mut kept);
        }
        tail.expire(now, &mut kept);
        taken.extend(kept);
        *self.shared.tail.lock() = Some(tail.stats());
    }

    /// At shutdown: decides every held trace, leaving the kept events in `taken`; `false` when
    /// nothing was held (nothing more to do).
    fn finish_tail(&mut self, taken: &mut Vec<Arc<Event>>) -> bool {
        let Some(tail) = &mut self.tail else {
            return false;
        };
        if tail.traces_held() == 0 {
            return false;
        }
        let mut kept = Vec::new();
        tail.finish(&mut kept);
        taken.extend(kept);
        // The kept events are pending from here on (no longer held): counted before they are sent.
        *self.shared.tail.lock() = Some(tail.stats());
        true
    }

    /// Core mode: while disconnected, leave events in the bounded queues (the overflow policy
    /// decides), unless shutdown gave up or was called with nothing left to send.
    async fn wait_connected(&self) {
        while !self.shared.connected.load(Ordering::Acquire)
            && !self.shared.abandon.load(Ordering::Acquire)
            && !self.shared.closed_and_empty()
        {
            let changed = self.shared.connection.notified();
            let abandoned = self.shared.abandon_now.notified();
            tokio::pin!(changed, abandoned);
            if self.shared.connected.load(Ordering::Acquire) {
                return;
            }
            let timer = tokio::time::sleep(Duration::from_millis(250));
            tokio::pin!(timer);
            let _ = future::select(future::select(changed, abandoned), timer).await;
        }
    }

    fn encode(&mut self, taken: &mut Vec<Arc<Event>>) {
        for event in taken.drain(..) {
            let name = event.name();
            let index = match self.groups.iter().position(|(n, _)| n == name) {
                Some(i) => i,
                None => {
                    self.groups.push((name.to_owned(), Vec::new()));
                    self.groups.len() - 1
                }
            };
            self.groups[index].1.push(event);
        }
        let shared = self.shared.clone();
        let counts = &shared.counts;
        let mut groups = std::mem::take(&mut self.groups);
        for (name, events) in &mut groups {
            if events.is_empty() {
                continue;
            }
            let subject = subject_for(&self.prefix, name);
            let mut first: Option<&Event> = None;
            for event in events.iter() {
                loop {
                    match self.encoder.push(event, self.max_bytes) {
                        Ok(true) => {
                            first.get_or_insert(event);
                            break;
                        }
                        Ok(false) => {
                            let message = self.message(&subject, first.take());
                            self.messages.push(message);
                        }
                        Err(PushError::TooLarge(bytes)) => {
                            log::warn!(target: "notify::nats", "{}", too_large_warning(name, bytes, self.max_bytes));
                            counts.too_large.fetch_add(1, Ordering::AcqRel);
                            break;
                        }
                        Err(PushError::Encode(e)) => {
                            log::warn!(target: "notify::nats", "could not encode event {}: {}", Escaped::truncated(name, NAME_CHARS), Escaped::new(&e));
                            counts.encode.fetch_add(1, Ordering::AcqRel);
                            break;
                        }
                    }
                }
            }
            if self.encoder.len() > 0 {
                let message = self.message(&subject, first.take());
                self.messages.push(message);
            }
            // Encoded: their allocations go back for the next events (emptied on this thread;
            // the instrumenting threads neither allocate nor free an owned event).
            notify_core::export::recycle_all(events);
        }
        // The groups are kept for the next round (their buffers reused), unless there are many:
        // a stream of distinct names must not grow them without bound.
        if groups.len() > MAX_KEPT_GROUPS {
            groups.clear();
        }
        self.groups = groups;
    }

    fn message(&mut self, subject: &str, first: Option<&Event>) -> Message {
        let events = self.encoder.len() as u64;
        let body = Bytes::from(self.encoder.finish());
        let mut headers = HeaderMap::new();
        headers.insert(ENCODING_HEADER, self.encoding.header_value());
        headers.insert(VERSION_HEADER, self.encoder.version().to_string().as_str());
        if let Some(traceparent) = first.and_then(traceparent) {
            headers.insert(TRACEPARENT_HEADER, traceparent.as_str());
        }
        if matches!(self.sink, Sink::JetStream(_)) {
            let sequence = self.shared.batches.load(Ordering::Relaxed) + self.messages.len() as u64;
            headers.insert(
                async_nats::header::NATS_MESSAGE_ID,
                format!("{:016x}-{sequence}", self.source).as_str(),
            );
        }
        Message {
            subject: subject.to_owned(),
            headers,
            body,
            events,
        }
    }

    async fn send(&mut self) {
        let messages = std::mem::take(&mut self.messages);
        match &mut self.sink {
            Sink::Core { flush_timeout, window } => {
                let counts = &self.shared.counts;
                let events: u64 = messages.iter().map(|m| m.events).sum();
                let published = publish_core(&self.client, messages, *flush_timeout);
                let Some(published) = until_abandoned(&self.shared, published).await else {
                    // Shutdown gave up while the round was being published.
                    counts.shutdown.fetch_add(events, Ordering::AcqRel);
                    return;
                };
                counts.disconnected.fetch_add(published.lost, Ordering::AcqRel);
                let tally = self.shared.tally();
                if published.stalled {
                    // Not confirmable: what was written before the stall may be lost with it.
                    counts.disconnected.fetch_add(published.sent, Ordering::AcqRel);
                } else if published.sent > 0 {
                    let push = window.push(
                        &self.client,
                        published.sent,
                        published.messages,
                        published.connection,
                        &tally,
                    );
                    if until_abandoned(&self.shared, push).await.is_none() {
                        // Before its echo was sent: the round is not in the window.
                        counts.shutdown.fetch_add(published.sent, Ordering::AcqRel);
                    }
                }
                settle(&self.shared, &self.client, window, false).await;
            }
            Sink::JetStream(context) => {
                let context = context.clone();
                self.send_jetstream(&context, messages).await;
            }
        }
    }

    /// Core mode: waits until every published round is confirmed or lost, then wakes the
    /// waiters of `flush` and `shutdown` (called before going idle, without a connection, and at
    /// the end, so that they see every round counted).
    async fn settle_all(&mut self) {
        if let Sink::Core { window, .. } = &mut self.sink {
            settle(&self.shared, &self.client, window, true).await;
        }
        self.shared.progressed();
    }

    /// Publishes every message and waits for its acknowledgement; re-sends the unacknowledged
    /// ones (same message id, so the server stores each once) until acknowledged or shutdown
    /// gives up.
    async fn send_jetstream(&self, context: &jetstream::Context, mut messages: Vec<Message>) {
        let counts = &self.shared.counts;
        let mut backoff = Duration::from_millis(50);
        loop {
            let mut acks = Vec::with_capacity(messages.len());
            for m in &messages {
                let ack = context
                    .publish_with_headers(m.subject.clone(), m.headers.clone(), m.body.clone())
                    .await;
                acks.push(ack);
            }
            let mut unacked = Vec::new();
            for (m, ack) in messages.into_iter().zip(acks) {
                let acked = match ack {
                    Ok(future) => future.await.is_ok(),
                    Err(_) => false,
                };
                if acked {
                    counts.exported.fetch_add(m.events, Ordering::AcqRel);
                    self.shared.batches.fetch_add(1, Ordering::Relaxed);
                } else {
                    unacked.push(m);
                }
            }
            self.shared.progressed();
            if unacked.is_empty() {
                return;
            }
            if self.shared.abandon.load(Ordering::Acquire) {
                let n: u64 = unacked.iter().map(|m| m.events).sum();
                counts.shutdown.fetch_add(n, Ordering::AcqRel);
                return;
            }
            messages = unacked;
            let abandoned = self.shared.abandon_now.notified();
            let timer = tokio::time::sleep(backoff);
            tokio::pin!(abandoned, timer);
            let _ = future::select(abandoned, timer).await;
            backoff = (backoff * 2).min(Duration::from_secs(1));
        }
    }
}

/// What publishing a core-mode round did: `sent + lost` is every event of it.
struct Published {
    /// Events in messages the client accepted.
    sent: u64,
    /// Messages the client accepted.
    messages: u64,
    /// Events whose publish failed, or that were not tried after a stall.
    lost: u64,
    /// A publish waited longer than the timeout for room (a frozen or dead server): the round is
    /// not confirmable.
    stalled: bool,
    /// The client's connection count before the first publish.
    connection: u64,
}

/// Publishes a round of messages (confirmed later through the [`Window`]). A publish that fails
/// counts its events lost; one that waits longer than `timeout` for room in the client's buffer
/// stalls the round: the rest is not tried.
async fn publish_core(client: &async_nats::Client, messages: Vec<Message>, timeout: Duration) -> Published {
    let mut published = Published {
        sent: 0,
        messages: 0,
        lost: 0,
        stalled: false,
        connection: client.statistics().connects.load(Ordering::Acquire),
    };
    for m in messages {
        if published.stalled {
            published.lost += m.events;
            continue;
        }
        match tokio::time::timeout(timeout, client.publish_with_headers(m.subject, m.headers, m.body)).await {
            Ok(Ok(())) => {
                published.sent += m.events;
                published.messages += 1;
            }
            Ok(Err(_)) => published.lost += m.events,
            Err(_) => {
                published.lost += m.events;
                published.stalled = true;
            }
        }
    }
    published
}

/// [`Window::settle`] until shutdown gives up; then what is left in the window counts as
/// dropped at shutdown.
async fn settle(shared: &Shared, client: &async_nats::Client, window: &mut Window, all: bool) {
    let tally = shared.tally();
    if until_abandoned(shared, window.settle(client, all, &tally))
        .await
        .is_none()
    {
        shared.counts.shutdown.fetch_add(window.abandon(), Ordering::AcqRel);
    }
}

/// How long the exporter's thread, going idle, waits before it looks at the queues once more
/// (then it waits without a timer): see [`Handoff::prepare_wait`].
const WAIT_GRACE: Duration = Duration::from_millis(1);

/// Waits for `wake` until `until` (without a limit when `None`); `true` when woken.
async fn wait(wake: &tokio::sync::Notify, until: Option<Instant>) -> bool {
    let notified = wake.notified();
    match until {
        None => {
            notified.await;
            true
        }
        Some(until) => tokio::time::timeout_at(until.into(), notified).await.is_ok(),
    }
}

/// Runs `work` to its end, or until shutdown gives up (`None`; `work` is dropped unfinished).
async fn until_abandoned<T>(shared: &Shared, work: impl std::future::Future<Output = T>) -> Option<T> {
    let abandoned = shared.abandon_now.notified();
    tokio::pin!(abandoned, work);
    // Registered before the flag is read: a give-up signalled in between still wakes it.
    abandoned.as_mut().enable();
    if shared.abandon.load(Ordering::Acquire) {
        return None;
    }
    match future::select(work, abandoned).await {
        future::Either::Left((done, _)) => Some(done),
        future::Either::Right(_) => None,
    }
}

/// The W3C `traceparent` of `event` (notify_core's formatter): version 00, the event's trace id,
/// its event id as the parent span id and its trace's sampled flag, as notify-opentelemetry names
/// the same event's span. `None` for an event id 0 (W3C forbids the all-zero span id).
fn traceparent(event: &Event) -> Option<String> {
    event.context().traceparent().map(|t| t.to_string())
}

#[cfg(test)]
mod tests {
    use super::traceparent;
    use notify_core::trace_context::TraceParent;
    use notify_core::{context::TransactionId, event::EventId, Event, Payload};

    #[test]
    fn traceparent_carries_the_events_trace_id_event_id_and_sampled_flag() {
        let now = std::time::Instant::now();
        let event = Event::new("query.sql", now, now, Payload::new());
        let header = traceparent(&event).unwrap();
        assert_eq!(header, format!("00-{}-{:016x}-01", event.trace_id(), event.id().get()));
        let parsed: TraceParent = header.parse().unwrap();
        assert_eq!((parsed.trace_id(), parsed.parent_id()), (event.trace_id(), event.id()));
        let unsampled = traceparent(&event.clone().with_sampled(false)).unwrap();
        assert!(unsampled.ends_with("-00"), "{unsampled}");
        let zero = event.with_ids(EventId::new(0), None, TransactionId::new(1));
        assert_eq!(traceparent(&zero), None, "no all-zero parent id is sent");
    }
}
