//! [`Exporter`]: finished events onto NATS subjects, through the export collector
//! ([`notify_export::Collector`]: the hand-off, batching, tail sampling, accounting, drop reports,
//! flush, shutdown, the runtime) with [`NatsSink`] as its sink.

use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream;
use notify_core::export::Overflow;
use notify_core::{Event, Notifier, OwnedEventSubscriber, Pattern, Subscriber, Subscription};
use notify_export::{Collector, ExportError, ExportRuntime, ExportStats, TailSampling, TailStats};
use parking_lot::Mutex;
use tokio::runtime::{Handle, RuntimeFlavor};

use crate::confirm::Window;
use crate::connect::{self, ConnectError, ConnectErrorKind, NatsOptions, RoundTrip};
use crate::jetstream::JetStream;
use crate::sink::{Link, Mode, NatsSink, SinkConfig, SinkCounts};
use crate::subject::check_prefix;
use crate::wire::{Encoding, WIRE_VERSION, WRITABLE_VERSIONS};

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
    propagate_baggage: bool,
    capacity: usize,
    overflow: Overflow,
    max_message_bytes: usize,
    flush_timeout: Duration,
    max_batch_size: usize,
    scheduled_delay: Duration,
    jetstream: Option<JetStream>,
    tail: Option<TailSampling>,
    runtime: Option<Handle>,
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

    /// Whether each event's W3C baggage ([`Event::baggage`]: the request's, where the event
    /// finished) is sent with it (default true), so that the importer's events carry it again.
    /// The services reading a subject are downstream of the one that exported, as the server of
    /// an HTTP call is, and notify-http's `ClientLayer` sends the baggage with every call; turn
    /// it off when the subject's readers must not see the requests' baggage (it is user data:
    /// a tenant, a user id). Written in wire version 3 and JSON batches, only for events that
    /// have baggage; version 2 has no field for it.
    ///
    /// ```
    /// use notify_nats::{Exporter, NatsOptions};
    /// let builder = Exporter::builder(NatsOptions::new("nats://127.0.0.1:4222")).propagate_baggage(false);
    /// # drop(builder);
    /// ```
    #[must_use]
    pub fn propagate_baggage(mut self, yes: bool) -> ExporterBuilder {
        self.propagate_baggage = yes;
        self
    }

    /// How many events may wait in each publishing thread's queue (default 8,192; at least 1, at
    /// most [`Handoff::MAX_PER_THREAD`](notify_export::Handoff::MAX_PER_THREAD), 2^24: a larger
    /// capacity is clamped to it); beyond it the overflow policy decides. See
    /// [`CollectorBuilder::queue_capacity`](notify_export::CollectorBuilder::queue_capacity): the
    /// instrumenting thread hands events over through a queue of its own, and memory is bounded
    /// by this many events per live publishing thread (also while the server is unreachable),
    /// plus the batch being sent.
    #[must_use]
    pub fn capacity(mut self, events: usize) -> ExporterBuilder {
        self.capacity = events.clamp(1, notify_export::Handoff::MAX_PER_THREAD);
        self
    }

    /// What happens to an event when its thread's queue is full (default
    /// [`Overflow::DropNewest`]: the instrumenting thread never waits). [`Overflow::DropOldest`]
    /// drops the oldest event of that queue. [`Overflow::Block`] makes the thread wait for room
    /// or for shutdown, except on the exporter's and importer's own threads, where the event is
    /// dropped and counted ([`CollectorBuilder::overflow`](notify_export::CollectorBuilder::overflow)).
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

    /// At most this many events per batch the collector hands to the sink (default 2,048, half
    /// of [`MAX_SPARE_EVENTS`](notify_core::export::MAX_SPARE_EVENTS), so that every event of a
    /// batch goes back for reuse; at least 1). A batch is grouped by event name into messages of
    /// up to [`max_message_bytes`](Self::max_message_bytes), published together and confirmed by
    /// one round trip (core) or their acknowledgements (JetStream).
    #[must_use]
    pub fn max_batch_size(mut self, events: usize) -> ExporterBuilder {
        self.max_batch_size = events.max(1);
        self
    }

    /// How long queued events may wait for a batch to fill before they are sent anyway (default
    /// 20 ms): the latency an event may gain, traded for fewer, larger messages and writes.
    #[must_use]
    pub fn scheduled_delay(mut self, delay: Duration) -> ExporterBuilder {
        self.scheduled_delay = delay;
        self
    }

    /// Core mode: how long the server may take to confirm a batch's messages (default 2 s).
    ///
    /// After publishing a batch, the exporter publishes one more message to a private inbox it
    /// subscribes to and waits up to this long for it to come back: the server handles a
    /// connection's messages in order, so the echo proves that it processed the whole batch.
    /// When the echo takes longer than 1 ms, the next batches are published meanwhile (at most 4
    /// batches unconfirmed at once, each with its own echo; the collector counts them
    /// [`ExportStats::in_flight`](notify_export::ExportStats::in_flight)); this limit then runs
    /// from the moment the exporter has to wait (4 batches out, or going idle), so a batch may
    /// stay unconfirmed somewhat longer before it counts as lost.
    /// The same limit bounds each wait of a publish for room in the client's buffer. The events of
    /// a batch not confirmed in time, or whose connection was replaced by a reconnection before
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

    /// Runs the collector's tail sampling ([`notify_export::TailSampler`]) in front of the
    /// encoder: a trace's events are held until its local root arrives, then sent whole when it
    /// has an error, a root slower than the threshold, or falls in the ratio, and dropped whole
    /// otherwise (counted in [`Dropped::tail_sampling`], by cause in [`Exporter::tail_stats`]).
    /// Held events are [`ExporterStats::held`], not pending: [`Exporter::flush`] does not wait
    /// for them; [`Exporter::shutdown`] decides them first.
    #[must_use]
    pub fn tail_sampling(mut self, config: TailSampling) -> ExporterBuilder {
        self.tail = Some(config);
        self
    }

    /// Runs the NATS client on the application's tokio runtime (a multi-thread one) instead of a
    /// current-thread runtime of the exporter's own (the default). The exporter's own runtime is
    /// driven by the collector's thread, telemetry-suppressed, so the client's own log and
    /// tracing output never comes back as events to export; on the application's runtime that
    /// holds only if the tracing bridge ignores the client's targets (`async_nats`).
    #[must_use]
    pub fn runtime(mut self, handle: Handle) -> ExporterBuilder {
        self.runtime = Some(handle);
        self
    }

    /// Connects (and in JetStream mode creates the stream if missing), then starts the export
    /// collector ([`notify_export::Collector`], its thread named `notify-export`) with a
    /// [`NatsSink`].
    ///
    /// # Errors
    ///
    /// A [`ConnectError`]: an invalid prefix ([`ConnectErrorKind::Subject`], naming the bad
    /// token, before connecting), a wire version not written ([`ConnectErrorKind::WireVersion`],
    /// before connecting), a current-thread runtime given to [`runtime`](Self::runtime)
    /// ([`ConnectErrorKind::Thread`]), wrong credentials ([`ConnectErrorKind::Authorization`]),
    /// no server, TLS, or JetStream not enabled on the server.
    pub fn start(self) -> Result<Exporter, ConnectError> {
        let max_batch_size = self.max_batch_size;
        let scheduled_delay = self.scheduled_delay;
        let capacity = self.capacity;
        let overflow = self.overflow;
        let tail = self.tail.clone();
        let (sink, runtime) = self.into_sink()?;
        let counts = sink.counts.clone();
        let source = sink.source;
        let mut collector = Collector::builder("nats", sink)
            .queue_capacity(capacity)
            .overflow(overflow)
            .max_batch_size(max_batch_size)
            .scheduled_delay(scheduled_delay)
            .runtime(runtime);
        if let Some(tail) = tail {
            collector = collector.tail_sampling(tail);
        }
        Ok(Exporter {
            collector: collector.build(),
            counts,
            source,
            shut: Mutex::new(None),
        })
    }

    /// Connects as [`start`](Self::start) does and returns the [`NatsSink`] with the runtime its
    /// client runs on, to put behind a [`Collector`] configured otherwise
    /// (`Collector::builder("nats", sink).runtime(runtime)`; only the sink settings of this
    /// builder apply: prefix, encoding, wire version, baggage, message size, flush timeout,
    /// JetStream).
    ///
    /// # Errors
    /// As [`start`](Self::start).
    pub fn into_sink(self) -> Result<(NatsSink, ExportRuntime), ConnectError> {
        let servers = self.options.servers().to_owned();
        if let Err(why) = check_prefix(&self.prefix) {
            return Err(ConnectError::new(&servers, ConnectErrorKind::Subject, why));
        }
        if !WRITABLE_VERSIONS.contains(&self.wire_version) {
            return Err(ConnectError::new(
                &servers,
                ConnectErrorKind::WireVersion,
                format!(
                    "notify-nats exporters write wire version 2 or {WIRE_VERSION}, not {}",
                    self.wire_version
                ),
            ));
        }
        let thread_error = |e: &dyn fmt::Display| ConnectError::new(&servers, ConnectErrorKind::Thread, e.to_string());
        let (owned, handle) = match self.runtime.clone() {
            Some(handle) if handle.runtime_flavor() == RuntimeFlavor::CurrentThread => {
                return Err(thread_error(&"notify-nats needs a multi-thread tokio runtime's Handle (a current-thread runtime is driven by the thread that would wait for the connection)"));
            }
            Some(handle) => (None, handle),
            None => {
                let runtime = connect::runtime().map_err(|e| thread_error(&e))?;
                let handle = runtime.handle().clone();
                (Some(runtime), handle)
            }
        };
        let link = Arc::new(Link::default());
        let setup = {
            let link = link.clone();
            let config = &self;
            async move { connect_sink(config, link).await }
        };
        // Connected on a thread of its own (telemetry-suppressed): `start` may be called inside a
        // tokio runtime, where blocking on another future would panic.
        let connected = std::thread::scope(|scope| {
            std::thread::Builder::new()
                .name("notify-nats-connect".into())
                .spawn_scoped(scope, || {
                    notify_core::suppression::suppress_telemetry_on_this_thread();
                    match &owned {
                        Some(runtime) => runtime.block_on(setup),
                        None => handle.block_on(setup),
                    }
                })
                .map_err(|e| thread_error(&e))?
                .join()
                .map_err(|_| thread_error(&"the connecting thread panicked"))?
        })?;
        let (client, mode, max_bytes) = connected;
        let sink = NatsSink::new(
            client,
            mode,
            SinkConfig {
                prefix: self.prefix,
                encoding: self.encoding,
                wire_version: self.wire_version,
                propagate_baggage: self.propagate_baggage,
                max_bytes,
                source: random_u64(),
            },
            Arc::new(SinkCounts::default()),
            link,
        );
        let runtime = match owned {
            Some(runtime) => ExportRuntime::Owned(runtime),
            None => ExportRuntime::Handle(handle),
        };
        Ok((sink, runtime))
    }
}

/// Connects with `config`'s options, marks `link` as the connection comes and goes, and sets
/// up the confirmation: the inbox (core) or the stream (JetStream). The client, the mode and the
/// largest message body.
async fn connect_sink(
    config: &ExporterBuilder,
    link: Arc<Link>,
) -> Result<(async_nats::Client, Mode, usize), ConnectError> {
    let servers = config.options.servers();
    let client = config
        .options
        .connect(move |event| {
            let up = match event {
                async_nats::Event::Connected => true,
                async_nats::Event::Disconnected => false,
                _ => return,
            };
            link.connected.store(up, Ordering::Release);
            link.changed.notify_waiters();
        })
        .await?;
    let server_max = client.server_info().max_payload;
    let max_bytes = config
        .max_message_bytes
        .min(if server_max > 0 { server_max } else { usize::MAX });
    let mode = match &config.jetstream {
        None => match RoundTrip::new(&client).await {
            Ok(round_trip) => Mode::Core {
                window: Box::new(Window::new(round_trip, config.flush_timeout)),
                flush_timeout: config.flush_timeout,
            },
            Err(e) => {
                return Err(ConnectError::new(
                    servers,
                    ConnectErrorKind::Unreachable,
                    format!("subscribing to the exporter's confirmation inbox: {e}"),
                ))
            }
        },
        Some(js) => {
            let mut context = jetstream::new(client.clone());
            context.set_timeout(js.ack_timeout_value());
            js.stream(&context, servers, &config.prefix).await?;
            Mode::JetStream {
                context: Box::new(context),
                acks: Default::default(),
                retry: Vec::new(),
                backoff: Duration::from_millis(50),
            }
        }
    };
    Ok((client, mode, max_bytes))
}

/// Events dropped by the exporter, by cause. Every event handed to the exporter ends up exactly
/// once in [`ExporterStats::exported`], in one of these, in [`ExporterStats::pending`] or in
/// [`ExporterStats::held`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dropped {
    /// The publishing thread's queue was full (see [`ExporterBuilder::overflow`]); with
    /// [`Overflow::DropOldest`] the evicted events (the collector's `dropped_queue_full`).
    pub overflow: u64,
    /// Core mode: lost with the connection, or not confirmed: the publish failed, or the server
    /// did not echo the batch's confirmation within [`ExporterBuilder::flush_timeout`] (a frozen
    /// or overloaded server, a dead connection not yet noticed), or the client reconnected before
    /// the echo came back. Some of them may still have reached the server (a frozen server that
    /// resumes delivers what it had read). Also the events of a batch during which the sink
    /// panicked. With `too_large` and `encode`, the collector's `dropped_exporter_error`.
    pub disconnected: u64,
    /// The event alone encodes larger than the largest message.
    pub too_large: u64,
    /// The event could not be encoded: the serializer failed, or a payload value nests lists and
    /// maps deeper than `notify_core::Value::MAX_NESTING` (32), which importers refuse (the event
    /// is refused alone, so that the rest of its batch arrives; a warning names it).
    pub encode: u64,
    /// Refused after shutdown began, or still queued or unconfirmed when the shutdown deadline
    /// passed (the collector's `dropped_shutdown`).
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

/// A snapshot of an exporter's counters (counts of events unless said otherwise): the
/// collector's [`ExportStats`] with the causes of the sink's own drops.
///
/// `published == exported + dropped.total() + pending + held` always holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExporterStats {
    /// Events handed to the exporter by its subscriber.
    pub published: u64,
    /// Events the server confirmed: core mode, a round trip through the exporter's own inbox
    /// after their batch, on the same connection (see [`ExporterBuilder::flush_timeout`]);
    /// JetStream mode, the stream's publish acknowledgement.
    pub exported: u64,
    /// Events dropped, by cause.
    pub dropped: Dropped,
    /// Events queued, being sent, or sent and not confirmed yet.
    pub pending: u64,
    /// Events the tail-sampling stage holds, waiting for their trace's local root (0 without
    /// [`ExporterBuilder::tail_sampling`]).
    pub held: u64,
    /// NATS messages confirmed.
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
/// The instrumenting thread only enqueues (the export collector's
/// [`push`](notify_export::Collector::push): an `Arc` clone into a queue of its own, no lock);
/// the collector's thread takes batches (each thread's events in the order it published them),
/// tail-samples them when configured, and hands each to the [`NatsSink`], which groups it by
/// event name, encodes each group into messages of up to [`ExporterBuilder::max_message_bytes`],
/// publishes them under `<prefix>.<event name>` ([`subject_for`](crate::subject_for)) with the
/// headers [`ENCODING_HEADER`](crate::ENCODING_HEADER), [`VERSION_HEADER`](crate::VERSION_HEADER)
/// and [`TRACEPARENT_HEADER`](crate::TRACEPARENT_HEADER), and confirms them, pipelined (core
/// mode: one message to a private inbox the exporter subscribes to, which the server echoes after
/// it processed the batch; JetStream: the publish acknowledgements, re-sending unacknowledged
/// messages with the same `Nats-Msg-Id` until the server has them). Drops are counted by cause
/// and reported once per burst by the collector. Encoded events are given back for reuse
/// ([`notify_core::export::recycle_all`]), so in a steady flow the instrumenting thread
/// allocates no owned event.
pub struct Exporter {
    collector: Collector,
    counts: Arc<SinkCounts>,
    source: u64,
    shut: Mutex<Option<ShutdownReport>>,
}

impl Exporter {
    /// A builder for an exporter connecting with `options`.
    pub fn builder(options: NatsOptions) -> ExporterBuilder {
        ExporterBuilder {
            options,
            prefix: "notify".into(),
            encoding: Encoding::default(),
            wire_version: WIRE_VERSION,
            propagate_baggage: true,
            capacity: 8_192,
            overflow: Overflow::DropNewest,
            max_message_bytes: 256 * 1024,
            flush_timeout: Duration::from_secs(2),
            max_batch_size: notify_core::export::MAX_SPARE_EVENTS / 2,
            scheduled_delay: Duration::from_millis(20),
            jetstream: None,
            tail: None,
            runtime: None,
        }
    }

    /// An owned-event subscriber that hands each event to this exporter; subscribe it to the
    /// events to export (`notifier.subscribe(Pattern::glob("*.sql")?, exporter.subscriber())`).
    /// Events an [`Importer`](crate::Importer) of this process republishes are not exported
    /// again (counted in [`ExporterStats::not_reexported`]).
    pub fn subscriber(&self) -> Subscriber {
        Subscriber::owned(ExportSubscriber {
            collector: self.collector.clone(),
            counts: self.counts.clone(),
        })
        .named("notify-nats exporter")
    }

    /// Subscribes [`Exporter::subscriber`] to `pattern` on `notifier`, and reports this
    /// exporter's drops through that notifier's failure hook
    /// ([`Notifier::set_failure_hook`]; [`Subscription::report_export_drops`]): one
    /// [`SubscriberFailure`](notify_core::failure::SubscriberFailure) per burst of drops, whose
    /// [`export_drops`](notify_core::failure::SubscriberFailure::export_drops) gives the counts by
    /// the collector's causes (`queue full`, `exporter error`, `shutdown`; the sink's last error
    /// as the detail), counted in [`Notifier::failures`]. A report goes out when the queues run
    /// empty after drops, at most once a second while they go on, and at shutdown. Tail
    /// sampling's drops are choices, not failures: never reported. With several subscriptions,
    /// through the first whose notifier is alive (among the first 16); with none, or none alive,
    /// as a `log` warning (target `notify::export`).
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
        self.collector.report_through(&subscription);
        subscription
    }

    /// Hands one event to the exporter (what [`Exporter::subscriber`] does for each event):
    /// queued in the calling thread's queue, or counted as dropped (a full queue, by the
    /// [`ExporterBuilder::overflow`] policy; after shutdown began).
    #[inline]
    pub fn export(&self, event: &Arc<Event>) {
        self.collector.push(event);
    }

    /// This exporter's random 64-bit id: with an event id it names an event across processes
    /// (and in JetStream mode it is part of every message id).
    pub fn source(&self) -> u64 {
        self.source
    }

    /// The counters now.
    pub fn stats(&self) -> ExporterStats {
        // The sink's causes first: it counts them after the collector's `dropped_exporter_error`
        // (through `Settle::failed`), so they never exceed it in this snapshot.
        let too_large = self.counts.too_large.load(Ordering::Acquire);
        let encode = self.counts.encode.load(Ordering::Acquire);
        let messages = self.counts.messages.load(Ordering::Relaxed);
        let stats = self.collector.stats();
        exporter_stats(
            &stats,
            too_large,
            encode,
            messages,
            self.counts.not_reexported.load(Ordering::Relaxed),
        )
    }

    /// The collector's counters (see [`ExportStats`]): what [`stats`](Self::stats) is made of.
    pub fn export_stats(&self) -> ExportStats {
        self.collector.stats()
    }

    /// The tail-sampling stage's counters (traces by decision, events by fate) as of the
    /// collector thread's last batch, when [`ExporterBuilder::tail_sampling`] is on.
    pub fn tail_stats(&self) -> Option<TailStats> {
        self.collector.tail_stats()
    }

    /// Waits until every event handed to the exporter before the call is exported or dropped
    /// (held events excepted: they wait for their root), at most `timeout`
    /// ([`Collector::force_flush`]).
    ///
    /// # Errors
    ///
    /// [`FlushTimeout`] with the counters when `timeout` passed first (server down, JetStream
    /// still re-sending).
    pub fn flush(&self, timeout: Duration) -> Result<ExporterStats, FlushTimeout> {
        match self.collector.force_flush(timeout) {
            Ok(_) => Ok(self.stats()),
            Err(ExportError::ShutDown(_)) if self.stats().pending == 0 => Ok(self.stats()),
            Err(_) => Err(FlushTimeout { stats: self.stats() }),
        }
    }

    /// Stops the exporter: refuses new events (counted in `dropped.shutdown`), sends what is
    /// queued, decides what tail sampling holds, waits for it to be confirmed until `deadline`
    /// has passed, then counts what is left in `dropped.shutdown` ([`Collector::shutdown`]).
    /// Calling it again returns the same report. Unsubscribe [`Exporter::subscriber`] first, or
    /// events published meanwhile are counted as dropped at shutdown.
    pub fn shutdown(&self, deadline: Duration) -> ShutdownReport {
        let mut shut = self.shut.lock();
        if let Some(report) = *shut {
            return report;
        }
        let drained = match self.collector.shutdown(deadline) {
            Ok(_) => true,
            Err(_) => {
                // The sink stops waiting and retrying at once (`Settle::given_up`): the thread
                // ends and counts what it still had.
                let _ = self.collector.join(Duration::from_secs(5));
                false
            }
        };
        let report = ShutdownReport {
            stats: self.stats(),
            drained,
        };
        *shut = Some(report);
        report
    }
}

/// [`ExporterStats`] from the collector's counters and the sink's.
fn exporter_stats(
    stats: &ExportStats,
    too_large: u64,
    encode: u64,
    messages: u64,
    not_reexported: u64,
) -> ExporterStats {
    let dropped = Dropped {
        overflow: stats.dropped_queue_full,
        disconnected: stats.dropped_exporter_error.saturating_sub(too_large + encode),
        too_large,
        encode,
        shutdown: stats.dropped_shutdown,
        tail_sampling: stats.dropped_tail_sampling,
    };
    let published = stats.received() + stats.queued;
    ExporterStats {
        published,
        exported: stats.exported,
        pending: published.saturating_sub(stats.exported + dropped.total() + stats.held),
        held: stats.held,
        dropped,
        messages,
        not_reexported,
    }
}

impl Drop for Exporter {
    /// Shuts down with a 1 s deadline if [`Exporter::shutdown`] was not called.
    fn drop(&mut self) {
        if self.shut.lock().is_none() {
            self.shutdown(Duration::from_secs(1));
        }
    }
}

impl fmt::Debug for Exporter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Exporter")
            .field("source", &self.source)
            .field("collector", &self.collector)
            .field("stats", &self.stats())
            .finish()
    }
}

/// The subscription: head sampling, no re-export of imported events, then the collector.
struct ExportSubscriber {
    collector: Collector,
    counts: Arc<SinkCounts>,
}

impl OwnedEventSubscriber for ExportSubscriber {
    #[inline]
    fn deliver(&self, event: &Arc<Event>) {
        // Head sampling: only sampled traces are exported (notify_core::export::Sampler).
        if !event.is_sampled() {
            return;
        }
        if crate::imported::is_republishing() {
            self.counts.not_reexported.fetch_add(1, Ordering::Relaxed);
            return;
        }
        self.collector.push(event);
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
