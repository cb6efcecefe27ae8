//! [`Importer`]: events from NATS, republished into a local notifier.

use std::collections::{HashSet, VecDeque};
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use async_nats::jetstream::{self, consumer::pull};
use async_nats::HeaderMap;
use futures_util::future;
use futures_util::StreamExt;
use notify_core::escape::Escaped;
use notify_core::Notifier;
use parking_lot::{Condvar, Mutex};

use crate::connect::{self, spawn_connected, ConnectError, ConnectErrorKind, NatsOptions, RoundTrip};
use crate::jetstream::JetStream;
use crate::sink::ENCODING_HEADER;
use crate::subject::{check_filter, check_queue_group};
use crate::wire::{self, DecodeError, Encoding};

type ErrorHook = Arc<dyn Fn(&ImportError) + Send + Sync>;

/// Configures and starts an [`Importer`].
///
/// ```no_run
/// use notify_core::{Event, Notifier, Pattern, Subscriber};
/// use notify_nats::{Importer, NatsOptions};
///
/// let notifier = Notifier::new();
/// notifier.subscribe(Pattern::glob("*.sql")?, Subscriber::event(|e: &Event| println!("{} {:?}", e.name(), e.duration())));
/// let importer = Importer::builder(NatsOptions::new("nats://127.0.0.1:4222"))
///     .prefix("bookstore")
///     .subject("*.sql")          // NATS wildcards, after the prefix
///     .queue_group("dashboards") // importers of one group share the events
///     .start(&notifier)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct ImporterBuilder {
    options: NatsOptions,
    prefix: String,
    subject: String,
    queue_group: Option<String>,
    jetstream: Option<JetStream>,
    duplicate_memory: usize,
    on_error: ErrorHook,
}

impl ImporterBuilder {
    /// The subject prefix (default `"notify"`), as the exporter's (checked with the subject by
    /// [`ImporterBuilder::start`]).
    #[must_use]
    pub fn prefix(mut self, prefix: impl Into<String>) -> ImporterBuilder {
        self.prefix = prefix.into();
        self
    }

    /// The subjects to import, after the prefix, with NATS wildcards (default `">"`: every
    /// event): `"query.sql"`, `"*.sql"` (the `sql` namespace), `"request.>"`. `*` must be a whole
    /// token and `>` the whole last one (`"a.>.b"` is refused by [`ImporterBuilder::start`]).
    #[must_use]
    pub fn subject(mut self, subject: impl Into<String>) -> ImporterBuilder {
        self.subject = subject.into();
        self
    }

    /// Shares the events among the importers of one group: each message goes to one of them
    /// (core NATS queue group; in JetStream mode the name of the shared durable consumer).
    #[must_use]
    pub fn queue_group(mut self, group: impl Into<String>) -> ImporterBuilder {
        self.queue_group = Some(group.into());
        self
    }

    /// JetStream mode: read the stream through a durable pull consumer (named by the queue group,
    /// default `"notify-importer"`), acknowledge each message after its events were republished,
    /// and drop events already republished (redeliveries after a lost acknowledgement). A message
    /// that cannot be imported (counted as malformed or of a newer version) is terminated
    /// (JetStream's `+TERM` acknowledgement): it is never redelivered.
    #[must_use]
    pub fn jetstream(mut self, jetstream: JetStream) -> ImporterBuilder {
        self.jetstream = Some(jetstream);
        self
    }

    /// JetStream mode: how many `(exporter, event id)` pairs are remembered to drop duplicates
    /// (default 1,000,000, about 40 MB at most; the oldest are forgotten first).
    #[must_use]
    pub fn duplicate_memory(mut self, events: usize) -> ImporterBuilder {
        self.duplicate_memory = events.max(1);
        self
    }

    /// Called on the importer's thread for each message that could not be imported (default: a
    /// `log::warn!` with target `notify::nats`). The message is counted either way.
    #[must_use]
    pub fn on_error(mut self, hook: impl Fn(&ImportError) + Send + Sync + 'static) -> ImporterBuilder {
        self.on_error = Arc::new(hook);
        self
    }

    /// Connects, subscribes (JetStream: creates the stream and the durable consumer if missing)
    /// and starts the importer's thread, which republishes events into `notifier`. Synchronous
    /// subscribers of `notifier` run on that thread.
    ///
    /// # Errors
    ///
    /// A [`ConnectError`]: an invalid `<prefix>.<subject>` or queue group
    /// ([`ConnectErrorKind::Subject`], naming the bad token, before connecting: tokens not empty,
    /// without whitespace, `*` a whole token, `>` only the whole last token), wrong credentials,
    /// no server, JetStream not enabled.
    pub fn start(self, notifier: &Notifier) -> Result<Importer, ConnectError> {
        let checked = check_filter(&format!("{}.{}", self.prefix, self.subject))
            .and_then(|()| self.queue_group.as_deref().map_or(Ok(()), check_queue_group));
        if let Err(why) = checked {
            return Err(ConnectError::new(
                self.options.servers(),
                ConnectErrorKind::Subject,
                why,
            ));
        }
        let shared = Arc::new(Shared {
            stats: Counters::default(),
            stop: AtomicBool::new(false),
            stop_now: tokio::sync::Notify::new(),
            progress: Mutex::new(()),
            progressed: Condvar::new(),
        });
        let thread_shared = shared.clone();
        let notifier = notifier.clone();
        let servers = self.options.servers().to_owned();
        let ((), thread) = spawn_connected("notify-nats-importer", &servers, "subscribing", move |ready| {
            run_thread(self, notifier, thread_shared, ready)
        })?;
        Ok(Importer {
            shared,
            thread: Mutex::new(Some(thread)),
        })
    }
}

impl fmt::Debug for ImporterBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ImporterBuilder")
            .field("options", &self.options)
            .field("prefix", &self.prefix)
            .field("subject", &self.subject)
            .field("queue_group", &self.queue_group)
            .field("jetstream", &self.jetstream)
            .finish_non_exhaustive()
    }
}

/// A message that could not be imported; none of its events was republished.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportError {
    /// The subject it came on.
    pub subject: String,
    /// What was wrong with it.
    pub error: DecodeError,
}

/// `message on <subject>: <error>`, the subject escaped as notify-core's own lines escape text
/// (newline, ESC, OSC, bidirectional-formatting characters: [`notify_core::escape`]) and cut to
/// 200 characters; the error escapes what it quotes ([`DecodeError`]'s Display).
impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "message on {}: {}",
            Escaped::truncated(&self.subject, 200),
            self.error
        )
    }
}

impl std::error::Error for ImportError {}

/// A snapshot of an importer's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ImporterStats {
    /// NATS messages received.
    pub messages: u64,
    /// Events republished into the local notifier.
    pub events: u64,
    /// JetStream mode: events received again and not republished.
    pub duplicates: u64,
    /// Messages that were not a batch of events (truncated, corrupt, unknown encoding).
    pub malformed: u64,
    /// Messages of a newer wire-format version than this importer reads.
    pub unsupported_version: u64,
}

#[derive(Default)]
struct Counters {
    messages: AtomicU64,
    events: AtomicU64,
    duplicates: AtomicU64,
    malformed: AtomicU64,
    unsupported_version: AtomicU64,
}

struct Shared {
    stats: Counters,
    stop: AtomicBool,
    stop_now: tokio::sync::Notify,
    progress: Mutex<()>,
    progressed: Condvar,
}

impl Shared {
    fn stats(&self) -> ImporterStats {
        let c = &self.stats;
        ImporterStats {
            messages: c.messages.load(Ordering::Acquire),
            events: c.events.load(Ordering::Acquire),
            duplicates: c.duplicates.load(Ordering::Acquire),
            malformed: c.malformed.load(Ordering::Acquire),
            unsupported_version: c.unsupported_version.load(Ordering::Acquire),
        }
    }
}

/// Imports events from NATS into a local notifier, on a thread of its own.
///
/// Memory: the event names and payload keys it reads are interned for the life of the process
/// (shared by every event, never freed), at most 256 KiB in all and 128 bytes each; past that they
/// are copied per event. Payload values are never interned.
pub struct Importer {
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Importer {
    /// A builder for an importer connecting with `options`.
    pub fn builder(options: NatsOptions) -> ImporterBuilder {
        ImporterBuilder {
            options,
            prefix: "notify".into(),
            subject: ">".into(),
            queue_group: None,
            jetstream: None,
            duplicate_memory: 1_000_000,
            on_error: Arc::new(|e: &ImportError| log::warn!(target: "notify::nats", "{e}")),
        }
    }

    /// The counters now.
    pub fn stats(&self) -> ImporterStats {
        self.shared.stats()
    }

    /// Waits until `done(stats)` holds or `timeout` passed; returns the counters then (check them:
    /// on timeout `done` does not hold).
    pub fn wait_until(&self, timeout: Duration, mut done: impl FnMut(&ImporterStats) -> bool) -> ImporterStats {
        let deadline = Instant::now() + timeout;
        let mut guard = self.shared.progress.lock();
        loop {
            let stats = self.stats();
            if done(&stats) || self.shared.progressed.wait_until(&mut guard, deadline).timed_out() {
                return self.stats();
            }
        }
    }

    /// Stops importing (a message being republished is finished first), joins the thread and
    /// returns the final counters. In JetStream mode messages not yet acknowledged are
    /// redelivered to the next importer of the durable consumer.
    pub fn shutdown(&self) -> ImporterStats {
        self.shared.stop.store(true, Ordering::Release);
        self.shared.stop_now.notify_one();
        if let Some(thread) = self.thread.lock().take() {
            let _ = thread.join();
        }
        self.stats()
    }
}

impl Drop for Importer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl fmt::Debug for Importer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Importer").field("stats", &self.stats()).finish()
    }
}

/// The `(exporter, event id)` pairs seen, oldest forgotten first.
struct Seen {
    set: HashSet<(u64, u64)>,
    order: VecDeque<(u64, u64)>,
    capacity: usize,
}

impl Seen {
    fn new(capacity: usize) -> Seen {
        Seen {
            set: HashSet::new(),
            order: VecDeque::new(),
            capacity,
        }
    }

    /// True the first time `key` is offered.
    fn first(&mut self, key: (u64, u64)) -> bool {
        if !self.set.insert(key) {
            return false;
        }
        self.order.push_back(key);
        if self.order.len() > self.capacity {
            if let Some(old) = self.order.pop_front() {
                self.set.remove(&old);
            }
        }
        true
    }
}

struct Republisher {
    notifier: Notifier,
    shared: Arc<Shared>,
    on_error: ErrorHook,
    seen: Option<Seen>,
    /// The events of the message being republished: one buffer for every message.
    events: Vec<notify_core::Event>,
}

impl Republisher {
    /// Decodes one message and republishes its events; counts everything. False when the message
    /// could not be imported (malformed, newer wire version): none of its events was republished.
    fn handle(&mut self, subject: &str, headers: Option<&HeaderMap>, body: &[u8]) -> bool {
        let c = &self.shared.stats;
        c.messages.fetch_add(1, Ordering::AcqRel);
        let encoding = match headers.and_then(|h| h.get(ENCODING_HEADER)) {
            Some(value) => match Encoding::from_header_value(value.as_str()) {
                Some(encoding) => encoding,
                None => {
                    let error = DecodeError::Malformed {
                        encoding: Encoding::sniff(body),
                        reason: format!(
                            "unknown {ENCODING_HEADER} \"{}\"",
                            Escaped::truncated(value.as_str(), 64)
                        ),
                    };
                    self.fail(subject, error);
                    return false;
                }
            },
            None => Encoding::sniff(body),
        };
        match wire::decode_into(encoding, body, &mut self.events) {
            Ok((_, source)) => {
                let decoded = self.events.len() as u64;
                // JetStream's duplicates out first, each event marked seen as it is kept: a batch is
                // then published whole. (A `FailurePolicy::Strict` notifier whose subscriber fails
                // ends the batch with a panic, and the events after it, marked seen, are not
                // published on a redelivery either: that notifier asked for the panic.)
                if let Some(seen) = &mut self.seen {
                    self.events.retain(|event| seen.first((source, event.id().get())));
                }
                let events = self.events.len() as u64;
                let duplicates = decoded - events;
                // One batch publish: the listeners of a name are looked up once per run of it.
                let notifier = &self.notifier;
                crate::imported::republishing(|| notifier.publish_events(&mut self.events));
                c.duplicates.fetch_add(duplicates, Ordering::AcqRel);
                c.events.fetch_add(events, Ordering::AcqRel);
            }
            Err(error) => {
                self.fail(subject, error);
                return false;
            }
        }
        let _guard = self.shared.progress.lock();
        self.shared.progressed.notify_all();
        true
    }

    fn fail(&self, subject: &str, error: DecodeError) {
        let counter = match error {
            DecodeError::UnsupportedVersion { .. } => &self.shared.stats.unsupported_version,
            DecodeError::Malformed { .. } => &self.shared.stats.malformed,
        };
        counter.fetch_add(1, Ordering::AcqRel);
        (self.on_error)(&ImportError {
            subject: subject.to_owned(),
            error,
        });
        let _guard = self.shared.progress.lock();
        self.shared.progressed.notify_all();
    }
}

fn run_thread(
    config: ImporterBuilder,
    notifier: Notifier,
    shared: Arc<Shared>,
    ready: std::sync::mpsc::Sender<Result<(), ConnectError>>,
) {
    // With `Overflow::Block` this thread drops onto a full queue instead of waiting: the
    // exporter's queues may be drained only by a thread that would wait, or one waiting for it.
    notify_export::Handoff::never_block_this_thread();
    let servers = config.options.servers().to_owned();
    let runtime = match connect::runtime() {
        Ok(runtime) => runtime,
        Err(e) => {
            let _ = ready.send(Err(ConnectError::new(
                &servers,
                ConnectErrorKind::Thread,
                e.to_string(),
            )));
            return;
        }
    };
    runtime.block_on(async move {
        let client = match config.options.connect(|_| {}).await {
            Ok(client) => client,
            Err(e) => {
                let _ = ready.send(Err(e));
                return;
            }
        };
        let subject = format!("{}.{}", config.prefix, config.subject);
        let mut republisher = Republisher {
            notifier,
            shared: shared.clone(),
            on_error: config.on_error.clone(),
            seen: config.jetstream.as_ref().map(|_| Seen::new(config.duplicate_memory)),
            events: Vec::new(),
        };
        match &config.jetstream {
            None => {
                let subscribed = match &config.queue_group {
                    Some(group) => client.queue_subscribe(subject.clone(), group.clone()).await,
                    None => client.subscribe(subject.clone()).await,
                };
                let mut subscriber = match subscribed {
                    Ok(s) => s,
                    Err(e) => {
                        // Subjects and queue groups were checked in `start`: this is the client.
                        let _ = ready.send(Err(ConnectError::new(
                            &servers,
                            ConnectErrorKind::Unreachable,
                            format!("subscribing to {subject}: {e}"),
                        )));
                        return;
                    }
                };
                // The subscription is registered once the server processed it: a round trip after
                // it (async-nats's flush only writes the socket) proves that.
                let confirmed = match RoundTrip::new(&client).await {
                    Ok(mut round_trip) => {
                        let confirm = round_trip.confirm(&client);
                        matches!(tokio::time::timeout(config.options.timeout(), confirm).await, Ok(true))
                    }
                    Err(_) => false,
                };
                if !confirmed {
                    let _ = ready.send(Err(ConnectError::new(
                        &servers,
                        ConnectErrorKind::Unreachable,
                        format!(
                            "the server did not confirm the subscription to {subject} within {:?}",
                            config.options.timeout()
                        ),
                    )));
                    return;
                }
                let _ = ready.send(Ok(()));
                while !shared.stop.load(Ordering::Acquire) {
                    let stop = shared.stop_now.notified();
                    tokio::pin!(stop);
                    match future::select(subscriber.next(), stop).await {
                        future::Either::Left((Some(message), _)) => {
                            republisher.handle(message.subject.as_str(), message.headers.as_ref(), &message.payload);
                        }
                        future::Either::Left((None, _)) | future::Either::Right(_) => break,
                    }
                }
                let _ = subscriber.unsubscribe().await;
            }
            Some(js) => {
                let context = jetstream::new(client.clone());
                let durable = config
                    .queue_group
                    .clone()
                    .unwrap_or_else(|| "notify-importer".to_owned());
                let consumer = async {
                    let stream = js.stream(&context, &servers, &config.prefix).await?;
                    stream
                        .get_or_create_consumer::<pull::Config>(
                            &durable,
                            pull::Config {
                                durable_name: Some(durable.clone()),
                                filter_subject: subject.clone(),
                                ack_policy: jetstream::consumer::AckPolicy::Explicit,
                                ack_wait: Duration::from_secs(10),
                                max_ack_pending: 100_000,
                                ..Default::default()
                            },
                        )
                        .await
                        .map_err(|e| {
                            ConnectError::new(
                                &servers,
                                ConnectErrorKind::JetStream,
                                format!("consumer {durable}: {e}"),
                            )
                        })
                }
                .await;
                let consumer = match consumer {
                    Ok(c) => c,
                    Err(e) => {
                        let _ = ready.send(Err(e));
                        return;
                    }
                };
                let _ = ready.send(Ok(()));
                consume_jetstream(&consumer, &mut republisher, &shared).await;
            }
        }
    });
}

/// Reads the durable consumer until stopped, acknowledging each message after its events were
/// republished; starts reading again after the server went away and came back.
async fn consume_jetstream(
    consumer: &jetstream::consumer::Consumer<pull::Config>,
    republisher: &mut Republisher,
    shared: &Shared,
) {
    while !shared.stop.load(Ordering::Acquire) {
        let mut messages = match consumer.messages().await {
            Ok(m) => m,
            Err(e) => {
                log::debug!(target: "notify::nats", "JetStream consumer: {e}; retrying");
                let stop = shared.stop_now.notified();
                let timer = tokio::time::sleep(Duration::from_millis(200));
                tokio::pin!(stop, timer);
                let _ = future::select(stop, timer).await;
                continue;
            }
        };
        while !shared.stop.load(Ordering::Acquire) {
            let stop = shared.stop_now.notified();
            tokio::pin!(stop);
            match future::select(messages.next(), stop).await {
                future::Either::Left((Some(Ok(message)), _)) => {
                    let imported =
                        republisher.handle(message.subject.as_str(), message.headers.as_ref(), &message.payload);
                    // A lost acknowledgement means a redelivery, which the duplicate check drops.
                    // A message that cannot be imported is terminated: the server never redelivers
                    // it (to this consumer or another), whatever its ack wait or delivery limit.
                    let acked = if imported {
                        message.ack().await
                    } else {
                        message.ack_with(jetstream::AckKind::Term).await
                    };
                    if let Err(e) = acked {
                        log::debug!(target: "notify::nats", "JetStream ack: {e}");
                    }
                }
                future::Either::Left((Some(Err(e)), _)) => {
                    log::debug!(target: "notify::nats", "JetStream messages: {e}");
                }
                future::Either::Left((None, _)) => break,
                future::Either::Right(_) => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 33 item 11: the subject and what the error quotes were written raw into the
    /// importer's warning.
    #[test]
    fn import_errors_escape_the_subject_and_the_reason() {
        let error = ImportError {
            subject: "notify.a\n[WARN notify::nats] forged\u{1b}]0;t\u{7}.\u{202e}gpj".into(),
            error: DecodeError::Malformed {
                encoding: Encoding::Json,
                reason: "event 3 (x\ny\u{2066}): time out of the range this platform represents".into(),
            },
        };
        assert_eq!(
            error.to_string(),
            r"message on notify.a\n[WARN notify::nats] forged\u{1b}]0;t\u{7}.\u{202e}gpj: malformed event batch (json encoding): event 3 (x\ny\u{2066}): time out of the range this platform represents"
        );
        let long = ImportError {
            subject: "s".repeat(300),
            error: DecodeError::UnsupportedVersion { found: 9, supported: 2 },
        };
        assert_eq!(
            long.to_string(),
            format!(
                "message on {}…[300 bytes]: event batch of wire version 9, newer than the version 2 this importer reads: upgrade notify-nats on the importing side",
                "s".repeat(200)
            )
        );
    }

    /// The event name a decoder error quotes is escaped and cut where it is made.
    #[test]
    fn a_decode_error_naming_an_event_escapes_its_name() {
        let name = format!("a\u{1b}[2J{}", "n".repeat(300));
        let json = format!(
            r#"{{"version":2,"source":1,"events":[{{"name":"{}","start_unix_ns":0,"end_unix_ns":0,"duration_ns":0,"id":3,"parent_id":null,"transaction_id":1,"trace_id":1,"outcome":"Completed","payload":[["at",{{"Time":{{"secs":0,"nanos":1000000000}}}}]],"cpu_time_ns":null,"allocations":null}}]}}"#,
            name.replace('\u{1b}', "\\u001b")
        );
        let error = wire::decode(Encoding::Json, json.as_bytes()).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                r"malformed event batch (json encoding): event 3 (a\u{{1b}}[2J{}…[305 bytes]): time with nanoseconds out of range (at most 999999999)",
                "n".repeat(195)
            )
        );
    }
}
