//! [`NatsSink`]: the NATS exporter's sink on the export collector
//! ([`notify_export::Collector`]): each batch grouped by event name, encoded into messages,
//! published, and confirmed, pipelined (core mode: an echo per batch through the exporter's own
//! inbox, [`Window`]; JetStream: the publish acknowledgements), every event settled through
//! [`Settle`].

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream;
use async_nats::HeaderMap;
use bytes::Bytes;
use futures_util::{future, FutureExt};
use notify_core::escape::Escaped;
use notify_core::Event;
use notify_export::{Settle, Sink, SinkError, SinkFuture};

use crate::confirm::{Tally, Window};
pub(crate) use crate::counts::SinkCounts;
use crate::subject::subject_for;
use crate::wire::{BatchEncoder, Encoding, PushError};

/// Header naming the encoding of a message body: `postcard` (notify's binary batches: postcard's
/// encoding up to wire version 2, version 3's own compact layout since; [`VERSION_HEADER`] and the
/// body's version say which) or `json`.
pub const ENCODING_HEADER: &str = "Notify-Encoding";
/// Header with the wire-format version of a message body.
pub const VERSION_HEADER: &str = "Notify-Version";
/// Header with the W3C `traceparent` of the first event of a batch (each event carries its own
/// ids in the body).
pub const TRACEPARENT_HEADER: &str = notify_core::trace_context::TRACEPARENT;

/// Event names whose grouping buffers are kept between batches.
const MAX_KEPT_GROUPS: usize = 64;

/// JetStream: at most this many messages whose acknowledgement has not come back; the next
/// batch waits for the oldest beyond it.
const MAX_UNACKED: usize = 256;

/// How many characters of an event name a warning quotes (names come from the instrumented code,
/// or from another process through an importer).
const NAME_CHARS: usize = 200;

/// Whether the client is connected (its event callback sets it), and a signal when that changes.
#[derive(Debug)]
pub(crate) struct Link {
    pub(crate) connected: AtomicBool,
    pub(crate) changed: tokio::sync::Notify,
}

impl Default for Link {
    fn default() -> Link {
        Link {
            connected: AtomicBool::new(true),
            changed: tokio::sync::Notify::new(),
        }
    }
}

/// One message: subject, headers, body, the number of events in it.
#[derive(Clone)]
pub(crate) struct Message {
    subject: String,
    headers: HeaderMap,
    body: Bytes,
    events: u64,
}

/// How batches are published and confirmed.
pub(crate) enum Mode {
    /// Core NATS: each batch confirmed by an echo through the exporter's own inbox, up to
    /// [`MAX_UNCONFIRMED`](crate::confirm::MAX_UNCONFIRMED) batches on the wire at once.
    Core {
        window: Box<Window>,
        flush_timeout: Duration,
    },
    /// JetStream: the publish acknowledgements, up to [`MAX_UNACKED`] messages awaited at once;
    /// a message not acknowledged is re-sent with the same message id until it is.
    JetStream {
        context: Box<jetstream::Context>,
        acks: VecDeque<Acking>,
        retry: Vec<Message>,
        backoff: Duration,
    },
}

/// A JetStream message whose acknowledgement is awaited.
pub(crate) struct Acking {
    message: Message,
    ack: Pin<Box<dyn Future<Output = Result<jetstream::publish::PublishAck, jetstream::context::PublishError>> + Send>>,
}

/// The NATS exporter's [`Sink`]: what [`Exporter`](crate::Exporter) puts behind its collector;
/// [`ExporterBuilder::into_sink`](crate::ExporterBuilder::into_sink) connects one to put behind
/// a collector configured otherwise.
///
/// Each batch is grouped by event name and encoded into messages of up to the largest message
/// size, published (messages and confirmation together, one write), and confirmed pipelined
/// ([`Sink::pipeline`]): core mode, an echo through the exporter's own inbox per batch, up to 4
/// batches unconfirmed; JetStream, the publish acknowledgements, up to 256 messages
/// unacknowledged, re-sent with the same message id until acknowledged. Every event is settled
/// ([`Settle`]): exported when confirmed; `dropped_exporter_error` when too large alone, not
/// encodable, refused by the client or not confirmed in time; what a timed-out shutdown leaves
/// in flight, `dropped_shutdown`.
pub struct NatsSink {
    client: async_nats::Client,
    mode: Mode,
    pub(crate) counts: Arc<SinkCounts>,
    link: Arc<Link>,
    prefix: String,
    encoding: Encoding,
    max_bytes: usize,
    encoder: BatchEncoder,
    pub(crate) source: u64,
    /// JetStream message ids: `<source>-<sequence>`, one sequence number per message.
    sequence: u64,
    /// A batch's events grouped by name (reused between batches).
    groups: Vec<(String, Vec<Arc<Event>>)>,
    messages: Vec<Message>,
    settle: Option<Settle>,
}

/// What [`NatsSink::new`] needs.
pub(crate) struct SinkConfig {
    pub(crate) prefix: String,
    pub(crate) encoding: Encoding,
    pub(crate) wire_version: u16,
    pub(crate) propagate_baggage: bool,
    pub(crate) max_bytes: usize,
    pub(crate) source: u64,
}

impl NatsSink {
    pub(crate) fn new(
        client: async_nats::Client,
        mode: Mode,
        config: SinkConfig,
        counts: Arc<SinkCounts>,
        link: Arc<Link>,
    ) -> NatsSink {
        NatsSink {
            client,
            mode,
            counts,
            link,
            prefix: config.prefix,
            encoding: config.encoding,
            max_bytes: config.max_bytes,
            encoder: BatchEncoder::with_version(config.encoding, config.source, config.wire_version)
                .propagate_baggage(config.propagate_baggage),
            source: config.source,
            sequence: 0,
            groups: Vec::new(),
            messages: Vec::new(),
            settle: None,
        }
    }

    fn settle(&self) -> Settle {
        self.settle.clone().expect("the collector calls Sink::pipeline first")
    }

    /// Encodes, publishes and (pipelined) confirms one batch of the collector.
    async fn send(&mut self, batch: &[Arc<Event>]) {
        let settle = self.settle();
        if matches!(self.mode, Mode::Core { .. }) && !self.link.connected.load(Ordering::Acquire) {
            // Batches on the wire when the connection went: their echoes may never come (counted
            // lost once `flush_timeout` passes); then wait for the connection, leaving later
            // events in the bounded queues (the overflow policy decides).
            self.settle_all(&settle).await;
            if !wait_connected(&self.link, &settle).await {
                return;
            }
        }
        self.encode(batch, &settle);
        let messages = std::mem::take(&mut self.messages);
        if messages.is_empty() {
            return;
        }
        // One write per batch: the messages and the echo go into the client's buffer without a
        // flush of their own, and its connection task writes them out together when this task
        // next waits (for the echo). A flush per message made the exporter's thread spend its
        // time in the kernel's write calls under load (docs/benchmarks.md, issue 49).
        match &mut self.mode {
            Mode::Core { window, flush_timeout } => {
                let tally = Tally {
                    settle: &settle,
                    counts: &self.counts,
                };
                let Some(published) =
                    until_given_up(&settle, publish_core(&self.client, messages, *flush_timeout)).await
                else {
                    return;
                };
                if published.lost > 0 {
                    tally.lost(published.lost, "the client refused the publish (connection closed)");
                }
                if published.stalled {
                    // Not confirmable: what was written before the stall may be lost with it.
                    tally.lost(
                        published.sent,
                        "no room in the client's buffer within flush_timeout (server frozen or gone)",
                    );
                } else if published.sent > 0 {
                    let push = window.push(
                        &self.client,
                        published.sent,
                        published.messages,
                        published.connection,
                        &tally,
                    );
                    if until_given_up(&settle, push).await.is_none() {
                        return;
                    }
                }
                settle_window(&settle, &self.client, window, &tally, false).await;
            }
            Mode::JetStream { .. } => {
                for message in messages {
                    if !self.publish_jetstream(&settle, message).await {
                        return;
                    }
                }
                self.settle_acks(&settle, false).await;
            }
        }
    }

    /// Everything in flight settled (confirmed or lost), unless a timed-out shutdown gives up
    /// first (what is left is then counted `dropped_shutdown` by the collector).
    async fn settle_all(&mut self, settle: &Settle) {
        match &mut self.mode {
            Mode::Core { window, .. } => {
                let tally = Tally {
                    settle,
                    counts: &self.counts,
                };
                settle_window(settle, &self.client, window, &tally, true).await;
            }
            Mode::JetStream { .. } => self.settle_acks(settle, true).await,
        }
    }

    /// JetStream: publishes `message`, its acknowledgement awaited later; a publish the client
    /// refuses is re-sent later.
    /// `false` when a timed-out shutdown gave up first (the client waits for room among the
    /// acknowledgements it awaits: a server gone does not free any).
    async fn publish_jetstream(&mut self, settle: &Settle, message: Message) -> bool {
        let Mode::JetStream {
            context, acks, retry, ..
        } = &mut self.mode
        else {
            return true;
        };
        let publish =
            context.publish_with_headers(message.subject.clone(), message.headers.clone(), message.body.clone());
        match until_given_up(settle, publish).await {
            None => false,
            Some(Ok(ack)) => {
                acks.push_back(Acking {
                    message,
                    ack: std::future::IntoFuture::into_future(ack),
                });
                true
            }
            Some(Err(_)) => {
                retry.push(message);
                true
            }
        }
    }

    /// JetStream: counts the acknowledgements that came back; re-sends what was not
    /// acknowledged (same message id: the stream stores each once), after a backoff; waits for
    /// acknowledgements while more than [`MAX_UNACKED`] are awaited, or with `all` until none is
    /// (or a timed-out shutdown gives up).
    async fn settle_acks(&mut self, settle: &Settle, all: bool) {
        loop {
            while let Some((acked, message)) = self.ready_ack() {
                self.counted(settle, acked, message);
            }
            if let Some((again, wait)) = self.take_retries() {
                if until_given_up(settle, tokio::time::sleep(wait)).await.is_none() {
                    if let Mode::JetStream { retry, .. } = &mut self.mode {
                        *retry = again;
                    }
                    return;
                }
                for message in again {
                    if !self.publish_jetstream(settle, message).await {
                        return;
                    }
                }
                continue;
            }
            let Mode::JetStream { acks, .. } = &mut self.mode else {
                return;
            };
            if acks.is_empty() || (!all && acks.len() <= MAX_UNACKED) {
                return;
            }
            let front = acks.front_mut().expect("not empty");
            let Some(acked) = until_given_up(settle, &mut front.ack).await else {
                return;
            };
            let done = acks.pop_front().expect("looked at above");
            self.counted(settle, acked.is_ok(), done.message);
        }
    }

    /// JetStream: the oldest awaited acknowledgement, when it is back: whether it acknowledged,
    /// and its message.
    fn ready_ack(&mut self) -> Option<(bool, Message)> {
        let Mode::JetStream { acks, .. } = &mut self.mode else {
            return None;
        };
        let acked = (&mut acks.front_mut()?.ack).now_or_never()?;
        Some((acked.is_ok(), acks.pop_front()?.message))
    }

    /// JetStream: the messages to re-send, and how long to wait first (doubling up to 1 s while
    /// nothing is acknowledged); `None` when there are none.
    fn take_retries(&mut self) -> Option<(Vec<Message>, Duration)> {
        let Mode::JetStream { retry, backoff, .. } = &mut self.mode else {
            return None;
        };
        if retry.is_empty() {
            return None;
        }
        let wait = *backoff;
        *backoff = (*backoff * 2).min(Duration::from_secs(1));
        Some((std::mem::take(retry), wait))
    }

    /// JetStream: an acknowledgement came back (`acked`) or failed (the message is re-sent).
    fn counted(&mut self, settle: &Settle, acked: bool, message: Message) {
        let Mode::JetStream { retry, backoff, .. } = &mut self.mode else {
            return;
        };
        if acked {
            settle.exported(message.events);
            self.counts.messages.fetch_add(1, Ordering::Relaxed);
            *backoff = Duration::from_millis(50);
        } else {
            retry.push(message);
        }
    }

    /// Groups `batch` by event name and encodes each group into messages of up to `max_bytes`
    /// (into `self.messages`); an event too large alone, or that cannot be encoded, is settled
    /// lost on its own, with a warning naming it.
    fn encode(&mut self, batch: &[Arc<Event>], settle: &Settle) {
        for event in batch {
            let name = event.name();
            let index = match self.groups.iter().position(|(n, _)| n == name) {
                Some(i) => i,
                None => {
                    self.groups.push((name.to_owned(), Vec::new()));
                    self.groups.len() - 1
                }
            };
            self.groups[index].1.push(event.clone());
        }
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
                            let warning = too_large_warning(name, bytes, self.max_bytes);
                            log::warn!(target: "notify::nats", "{warning}");
                            let n = settle.failed(1, &SinkError::new(warning));
                            self.counts.too_large.fetch_add(n, Ordering::AcqRel);
                            break;
                        }
                        Err(PushError::Encode(e)) => {
                            let warning = format!(
                                "could not encode event {}: {}",
                                Escaped::truncated(name, NAME_CHARS),
                                Escaped::new(&e)
                            );
                            log::warn!(target: "notify::nats", "{warning}");
                            let n = settle.failed(1, &SinkError::new(warning));
                            self.counts.encode.fetch_add(n, Ordering::AcqRel);
                            break;
                        }
                    }
                }
            }
            if self.encoder.len() > 0 {
                let message = self.message(&subject, first.take());
                self.messages.push(message);
            }
            // The collector gives the events back for reuse once this batch's future completed.
            events.clear();
        }
        // The groups are kept for the next batch (their buffers reused), unless there are many:
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
        if matches!(self.mode, Mode::JetStream { .. }) {
            self.sequence += 1;
            headers.insert(
                async_nats::header::NATS_MESSAGE_ID,
                format!("{:016x}-{}", self.source, self.sequence).as_str(),
            );
        }
        Message {
            subject: subject.to_owned(),
            headers,
            body,
            events,
        }
    }
}

impl Sink for NatsSink {
    fn export<'a>(&'a mut self, batch: &'a [Arc<Event>]) -> SinkFuture<'a> {
        // Always `Ok`: every event of the batch is settled by the sink (now or when confirmed),
        // or left in flight for the collector to count at shutdown.
        Box::pin(async move {
            self.send(batch).await;
            Ok(())
        })
    }

    fn flush(&mut self) -> SinkFuture<'_> {
        Box::pin(async move {
            let settle = self.settle();
            self.settle_all(&settle).await;
            Ok(())
        })
    }

    fn shutdown(&mut self) -> SinkFuture<'_> {
        Box::pin(async move {
            let settle = self.settle();
            self.settle_all(&settle).await;
            // What was published went out with the confirmations; the connection closes when
            // the client is dropped with the sink.
            Ok(())
        })
    }

    fn pipeline(&mut self, settle: Settle) -> bool {
        self.settle = Some(settle);
        true
    }
}

/// Core mode: waits until connected; `false` when a timed-out shutdown gave up first.
async fn wait_connected(link: &Link, settle: &Settle) -> bool {
    while !link.connected.load(Ordering::Acquire) {
        let changed = link.changed.notified();
        let mut changed = std::pin::pin!(changed);
        changed.as_mut().enable();
        if link.connected.load(Ordering::Acquire) {
            return true;
        }
        let tick = tokio::time::sleep(Duration::from_millis(250));
        if until_given_up(settle, future::select(changed, std::pin::pin!(tick)))
            .await
            .is_none()
        {
            return false;
        }
    }
    true
}

/// [`Window::settle`] until a timed-out shutdown gives up; then the window forgets its batches
/// (still in flight for the collector, which counts them `dropped_shutdown`).
async fn settle_window(
    settle: &Settle,
    client: &async_nats::Client,
    window: &mut Window,
    tally: &Tally<'_>,
    all: bool,
) {
    if until_given_up(settle, window.settle(client, all, tally))
        .await
        .is_none()
    {
        window.abandon();
    }
}

/// What publishing a core-mode batch did: `sent + lost` is every event of it.
struct Published {
    /// Events in messages the client accepted.
    sent: u64,
    /// Messages the client accepted.
    messages: u64,
    /// Events whose publish failed, or that were not tried after a stall.
    lost: u64,
    /// A publish waited longer than the timeout for room (a frozen or dead server): the batch is
    /// not confirmable.
    stalled: bool,
    /// The client's connection count before the first publish.
    connection: u64,
}

/// Publishes a batch's messages (confirmed later through the [`Window`]). A publish that fails
/// counts its events lost; one that waits longer than `timeout` for room in the client's buffer
/// stalls the batch: the rest is not tried.
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

/// Runs `work` to its end, or until a timed-out shutdown gives up (`None`; `work` is dropped
/// unfinished).
async fn until_given_up<T>(settle: &Settle, work: impl Future<Output = T>) -> Option<T> {
    let given_up = settle.given_up();
    match future::select(std::pin::pin!(work), std::pin::pin!(given_up)).await {
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
