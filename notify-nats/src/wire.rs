//! The wire format: a batch of events of one name, versioned, encoded with postcard (compact
//! binary, the default) or JSON (for humans and other languages).
//!
//! A binary batch starts with the magic bytes `NB`. A batch is `{ version, source, events }`: `version` first so that a reader can refuse a newer
//! format before decoding the rest, `source` the exporter's random 64-bit id (event ids are unique
//! per process only, so `(source, event id)` names an event across processes). Each event is the
//! envelope [`EventOut`]/[`EventIn`]: name, wall-clock start and end (ns since the Unix epoch),
//! duration (ns), event id, parent id, transaction id, trace id (128 bits), outcome, payload (a
//! list of key/value pairs, in order).

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use notify_core::{Event, Outcome, Payload, TraceId, Value};
use serde::ser::SerializeSeq;
use serde::{Deserialize, Serialize, Serializer};

use crate::keys;

/// The first bytes of a binary (postcard) batch: tells a notify batch from other traffic before
/// its version is read.
const MAGIC: &[u8; 2] = b"NB";

/// The newest wire-format version this crate writes and reads.
pub const WIRE_VERSION: u16 = 1;

/// How events are encoded on the wire.
///
/// ```
/// assert_eq!(notify_nats::Encoding::default(), notify_nats::Encoding::Binary);
/// assert_eq!(notify_nats::Encoding::Json.header_value(), "json");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// postcard: compact binary (varints), about 40 bytes for an event with a small payload (default).
    #[default]
    Binary,
    /// JSON, one object per batch: readable with `nats sub`, larger and slower.
    Json,
}

impl Encoding {
    /// The value of the `Notify-Encoding` header: `"postcard"` or `"json"`.
    pub fn header_value(self) -> &'static str {
        match self {
            Encoding::Binary => "postcard",
            Encoding::Json => "json",
        }
    }

    /// The encoding named by a `Notify-Encoding` header value; `None` for an unknown one.
    ///
    /// ```
    /// use notify_nats::Encoding;
    /// assert_eq!(Encoding::from_header_value("postcard"), Some(Encoding::Binary));
    /// assert_eq!(Encoding::from_header_value("xml"), None);
    /// ```
    pub fn from_header_value(value: &str) -> Option<Encoding> {
        match value {
            "postcard" => Some(Encoding::Binary),
            "json" => Some(Encoding::Json),
            _ => None,
        }
    }

    /// The encoding of a body without header: JSON when it starts with `{`, else postcard.
    pub(crate) fn sniff(body: &[u8]) -> Encoding {
        if body.first() == Some(&b'{') {
            Encoding::Json
        } else {
            Encoding::Binary
        }
    }
}

/// Why a message could not be turned into events. Nothing is republished from such a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// The message was written by a newer version of the wire format than this importer reads.
    UnsupportedVersion {
        /// The version in the message.
        found: u16,
        /// The newest version this importer reads ([`WIRE_VERSION`]).
        supported: u16,
    },
    /// The bytes are not a batch in the announced encoding (truncated, corrupt, not notify's).
    Malformed {
        /// The encoding tried.
        encoding: Encoding,
        /// What the decoder said.
        reason: String,
    },
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::UnsupportedVersion { found, supported } => write!(
                f,
                "event batch of wire version {found}, newer than the version {supported} this importer reads: upgrade notify-nats on the importing side"
            ),
            DecodeError::Malformed { encoding, reason } => {
                write!(f, "malformed event batch ({} encoding): {reason}", encoding.header_value())
            }
        }
    }
}

impl std::error::Error for DecodeError {}

/// A payload value on the wire; strings borrow when encoding and own when decoded.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub(crate) enum WireValue<'a> {
    Bool(bool),
    I64(i64),
    U64(u64),
    F64(f64),
    Str(Cow<'a, str>),
    Duration {
        secs: u64,
        nanos: u32,
    },
    Exception {
        type_name: Cow<'a, str>,
        message: Cow<'a, str>,
    },
}

impl<'a> From<&'a Value> for WireValue<'a> {
    fn from(value: &'a Value) -> WireValue<'a> {
        match value {
            Value::Bool(v) => WireValue::Bool(*v),
            Value::I64(v) => WireValue::I64(*v),
            Value::U64(v) => WireValue::U64(*v),
            Value::F64(v) => WireValue::F64(*v),
            Value::Str(v) => WireValue::Str(Cow::Borrowed(v)),
            Value::Duration(d) => WireValue::Duration {
                secs: d.as_secs(),
                nanos: d.subsec_nanos(),
            },
            Value::Exception { type_name, message } => WireValue::Exception {
                type_name: Cow::Borrowed(type_name),
                message: Cow::Borrowed(message),
            },
            // Null, 128-bit integers, times, lists and maps (Value is #[non_exhaustive]): their
            // Display text until the wire format carries them.
            other => WireValue::Str(Cow::Owned(other.to_string())),
        }
    }
}

impl WireValue<'_> {
    fn into_value(self) -> Value {
        match self {
            WireValue::Bool(v) => Value::Bool(v),
            WireValue::I64(v) => Value::I64(v),
            WireValue::U64(v) => Value::U64(v),
            WireValue::F64(v) => Value::F64(v),
            WireValue::Str(v) => Value::Str(Cow::Owned(v.into_owned())),
            WireValue::Duration { secs, nanos } => Value::Duration(Duration::new(secs, nanos)),
            WireValue::Exception { type_name, message } => Value::Exception {
                type_name: Cow::Owned(type_name.into_owned()),
                message: message.into_owned(),
            },
        }
    }
}

#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
enum WireOutcome {
    Completed,
    Panicked,
    Cancelled,
}

/// A payload borrowed for encoding: a sequence of `(key, value)` pairs.
struct PayloadOut<'a>(&'a Payload);

impl Serialize for PayloadOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for (key, value) in self.0.iter() {
            seq.serialize_element(&(key, WireValue::from(value)))?;
        }
        seq.end()
    }
}

fn unix_ns(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// One event as encoded; the field order is the wire format (see [`EventIn`]).
#[derive(Serialize)]
pub(crate) struct EventOut<'a> {
    name: &'a str,
    start_unix_ns: u64,
    end_unix_ns: u64,
    duration_ns: u64,
    id: u64,
    parent_id: Option<u64>,
    transaction_id: u64,
    trace_id: u128,
    outcome: WireOutcome,
    payload: PayloadOut<'a>,
}

impl<'a> EventOut<'a> {
    pub(crate) fn new(event: &'a Event) -> EventOut<'a> {
        let start = unix_ns(event.start_time());
        let duration_ns = u64::try_from(event.duration().as_nanos()).unwrap_or(u64::MAX);
        EventOut {
            name: event.name(),
            start_unix_ns: start,
            end_unix_ns: start.saturating_add(duration_ns),
            duration_ns,
            id: event.id(),
            parent_id: event.parent_id(),
            transaction_id: event.transaction_id(),
            trace_id: event.trace_id().get(),
            outcome: match event.outcome() {
                Outcome::Completed => WireOutcome::Completed,
                Outcome::Panicked => WireOutcome::Panicked,
                Outcome::Cancelled => WireOutcome::Cancelled,
            },
            payload: PayloadOut(event.payload()),
        }
    }
}

/// One event as decoded: the fields of [`EventOut`], in the same order, owned.
#[derive(Deserialize, Debug, Clone, PartialEq)]
pub(crate) struct EventIn {
    pub(crate) name: String,
    pub(crate) start_unix_ns: u64,
    pub(crate) end_unix_ns: u64,
    pub(crate) duration_ns: u64,
    pub(crate) id: u64,
    pub(crate) parent_id: Option<u64>,
    pub(crate) transaction_id: u64,
    pub(crate) trace_id: u128,
    outcome: WireOutcome,
    payload: Vec<(String, WireValue<'static>)>,
}

impl EventIn {
    /// The event, with its original name, times, ids, outcome and payload.
    pub(crate) fn into_event(self) -> Event {
        let mut payload = Payload::new();
        for (key, value) in self.payload {
            match keys::intern(&key) {
                Some(key) => payload.insert(key, value.into_value()),
                None => payload.insert(
                    keys::OVERFLOW_KEY,
                    Value::Str(format!("{key}={}", value.into_value()).into()),
                ),
            };
        }
        let start = SystemTime::UNIX_EPOCH + Duration::from_nanos(self.start_unix_ns);
        let event = Event::at_wall_clock(self.name, start, Duration::from_nanos(self.duration_ns), payload).with_ids(
            self.id,
            self.parent_id,
            self.transaction_id,
        );
        // 0 is no trace id (W3C forbids it): the event keeps the fresh one it was built with.
        let event = match TraceId::new(self.trace_id) {
            Some(trace_id) => event.with_trace_id(trace_id),
            None => event,
        };
        event.with_outcome(match self.outcome {
            WireOutcome::Completed => Outcome::Completed,
            WireOutcome::Panicked => Outcome::Panicked,
            WireOutcome::Cancelled => Outcome::Cancelled,
        })
    }
}

/// A decoded batch: the exporter's id and its events, in export order.
#[derive(Deserialize, Debug, Clone, PartialEq)]
pub(crate) struct BatchIn {
    pub(crate) version: u16,
    pub(crate) source: u64,
    pub(crate) events: Vec<EventIn>,
}

#[derive(Deserialize)]
struct VersionProbe {
    version: u16,
}

/// Decodes a batch, refusing a newer version before looking at the rest.
pub(crate) fn decode(encoding: Encoding, body: &[u8]) -> Result<BatchIn, DecodeError> {
    let malformed = |reason: String| DecodeError::Malformed { encoding, reason };
    let body = match encoding {
        Encoding::Binary => body
            .strip_prefix(MAGIC)
            .ok_or_else(|| malformed("not a notify event batch (no \"NB\" magic)".to_owned()))?,
        Encoding::Json => body,
    };
    let version = match encoding {
        Encoding::Binary => postcard::take_from_bytes::<u16>(body)
            .map(|(v, _)| v)
            .map_err(|e| malformed(e.to_string()))?,
        Encoding::Json => serde_json::from_slice::<VersionProbe>(body)
            .map(|p| p.version)
            .map_err(|e| malformed(e.to_string()))?,
    };
    if version > WIRE_VERSION {
        return Err(DecodeError::UnsupportedVersion {
            found: version,
            supported: WIRE_VERSION,
        });
    }
    if version == 0 {
        return Err(malformed("version 0 does not exist".to_owned()));
    }
    let batch: BatchIn = match encoding {
        Encoding::Binary => postcard::from_bytes(body).map_err(|e| malformed(e.to_string()))?,
        Encoding::Json => serde_json::from_slice(body).map_err(|e| malformed(e.to_string()))?,
    };
    Ok(batch)
}

/// Builds batches event by event under a size limit; one encoder per exporter, buffers reused.
pub(crate) struct BatchEncoder {
    encoding: Encoding,
    source: u64,
    /// The events of the batch being built, encoded back to back.
    body: Vec<u8>,
    /// One event's encoding (to check its size before it joins `body`).
    scratch: Vec<u8>,
    count: usize,
}

/// Why one event could not join a batch.
#[derive(Debug)]
pub(crate) enum PushError {
    /// Its encoding alone exceeds the message size limit (bytes).
    TooLarge(usize),
    /// The serializer failed.
    Encode(String),
}

impl BatchEncoder {
    pub(crate) fn new(encoding: Encoding, source: u64) -> BatchEncoder {
        BatchEncoder {
            encoding,
            source,
            body: Vec::new(),
            scratch: Vec::new(),
            count: 0,
        }
    }

    /// Number of events in the batch being built.
    pub(crate) fn len(&self) -> usize {
        self.count
    }

    /// Encodes `event` and adds it if the batch stays within `max_bytes`; returns `Ok(false)`
    /// (event not added) when the batch is full, so the caller finishes it and tries again.
    pub(crate) fn push(&mut self, event: &Event, max_bytes: usize) -> Result<bool, PushError> {
        self.scratch.clear();
        let out = EventOut::new(event);
        match self.encoding {
            Encoding::Binary => postcard::to_io(&out, &mut self.scratch)
                .map(drop)
                .map_err(|e| PushError::Encode(e.to_string()))?,
            Encoding::Json => {
                serde_json::to_writer(&mut self.scratch, &out).map_err(|e| PushError::Encode(e.to_string()))?
            }
        }
        const FRAME: usize = 64; // version, source, count, JSON brackets: an upper bound
        if self.scratch.len() + FRAME > max_bytes {
            return Err(PushError::TooLarge(self.scratch.len()));
        }
        if self.count > 0 && self.body.len() + self.scratch.len() + 1 + FRAME > max_bytes {
            return Ok(false);
        }
        if self.encoding == Encoding::Json && self.count > 0 {
            self.body.push(b',');
        }
        self.body.extend_from_slice(&self.scratch);
        self.count += 1;
        Ok(true)
    }

    /// The finished message body (version, source, events); the encoder is empty afterwards.
    pub(crate) fn finish(&mut self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.body.len() + 24);
        match self.encoding {
            Encoding::Binary => {
                out.extend_from_slice(MAGIC);
                // postcard's encoding of BatchIn: its fields back to back, the Vec as varint length + elements.
                let header = (WIRE_VERSION, self.source, self.count);
                postcard::to_io(&header, &mut out).expect("writing to a Vec cannot fail");
            }
            Encoding::Json => {
                out.extend_from_slice(
                    format!("{{\"version\":{WIRE_VERSION},\"source\":{},\"events\":[", self.source).as_bytes(),
                );
            }
        }
        out.extend_from_slice(&self.body);
        if self.encoding == Encoding::Json {
            out.extend_from_slice(b"]}");
        }
        self.body.clear();
        self.count = 0;
        out
    }
}

/// Decodes one message body (a batch written by an exporter or [`encode_batch`]) into the
/// exporter's id ([`Exporter::source`](crate::Exporter::source)) and its events, with their
/// original names, times, ids, outcome and payload; for transports other than NATS.
///
/// ```
/// use std::sync::Arc;
/// use notify_nats::{decode_batch, encode_batch, Encoding};
/// let now = std::time::Instant::now();
/// let event = Arc::new(notify_core::Event::new("query.sql", now, now, notify_core::Payload::new()));
/// let body = encode_batch(Encoding::Binary, 7, std::slice::from_ref(&event));
/// let (source, events) = decode_batch(Encoding::Binary, &body)?;
/// assert_eq!((source, events[0].id()), (7, event.id()));
/// # Ok::<(), notify_nats::DecodeError>(())
/// ```
///
/// # Errors
///
/// [`DecodeError::UnsupportedVersion`] for a batch of a newer wire version, else
/// [`DecodeError::Malformed`] when the body is not a batch in `encoding`.
pub fn decode_batch(encoding: Encoding, body: &[u8]) -> Result<(u64, Vec<Event>), DecodeError> {
    let batch = decode(encoding, body)?;
    Ok((
        batch.source,
        batch.events.into_iter().map(EventIn::into_event).collect(),
    ))
}

/// Encodes `events` as one batch with no size limit, `source` standing for the exporter's id
/// (for transports other than NATS, benchmarks and tests).
///
/// # Panics
///
/// If an event cannot be serialized (postcard and JSON serialize every payload value).
pub fn encode_batch(encoding: Encoding, source: u64, events: &[Arc<Event>]) -> Vec<u8> {
    let mut encoder = BatchEncoder::new(encoding, source);
    for event in events {
        encoder.push(event, usize::MAX / 2).expect("events encode");
    }
    encoder.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Event {
        let start = SystemTime::UNIX_EPOCH + Duration::from_nanos(1_764_547_200_123_456_789);
        let payload = Payload::new()
            .with("sql", "SELECT 1")
            .with("rows", 3_u64)
            .with("delta", -2_i64)
            .with("ratio", 0.5)
            .with("cached", true)
            .with("wait", Duration::from_micros(1_500));
        let mut payload = payload;
        payload.record_error(&std::fmt::Error);
        Event::at_wall_clock("query.sql", start, Duration::from_nanos(42_000), payload)
            .with_ids(10, Some(9), 77)
            .with_outcome(Outcome::Panicked)
    }

    fn assert_same(a: &Event, b: &Event) {
        assert_eq!(a.name(), b.name());
        assert_eq!(a.start_time(), b.start_time());
        assert_eq!(a.duration(), b.duration());
        assert_eq!(
            (a.id(), a.parent_id(), a.transaction_id()),
            (b.id(), b.parent_id(), b.transaction_id())
        );
        assert_eq!(a.outcome(), b.outcome());
        assert_eq!(a.trace_id(), b.trace_id());
        assert_eq!(a.payload(), b.payload());
    }

    #[test]
    fn batches_round_trip_in_both_encodings() {
        let events: Vec<Arc<Event>> = (0..3).map(|_| Arc::new(sample())).collect();
        for encoding in [Encoding::Binary, Encoding::Json] {
            let body = encode_batch(encoding, 0xfeed, &events);
            assert_eq!(Encoding::sniff(&body), encoding);
            let batch = decode(encoding, &body).unwrap();
            assert_eq!(
                (batch.version, batch.source, batch.events.len()),
                (WIRE_VERSION, 0xfeed, 3)
            );
            for (sent, got) in events.iter().zip(batch.events) {
                assert_eq!(got.end_unix_ns - got.start_unix_ns, 42_000);
                assert_same(sent, &got.into_event());
            }
        }
    }

    #[test]
    fn empty_batch_round_trips() {
        for encoding in [Encoding::Binary, Encoding::Json] {
            let batch = decode(encoding, &encode_batch(encoding, 1, &[])).unwrap();
            assert!(batch.events.is_empty());
        }
    }

    #[test]
    fn newer_version_is_refused_with_both_versions_named() {
        let mut body = encode_batch(Encoding::Binary, 1, &[Arc::new(sample())]);
        body[2] = 2; // the version varint, after the magic
        let err = decode(Encoding::Binary, &body).unwrap_err();
        assert_eq!(err, DecodeError::UnsupportedVersion { found: 2, supported: 1 });
        assert!(
            err.to_string().contains("wire version 2, newer than the version 1"),
            "{err}"
        );
        let json = br#"{"version":7,"source":1,"events":[{"from":"the future"}]}"#;
        assert_eq!(
            decode(Encoding::Json, json).unwrap_err(),
            DecodeError::UnsupportedVersion { found: 7, supported: 1 }
        );
    }

    #[test]
    fn truncated_and_garbage_bodies_are_malformed() {
        let body = encode_batch(Encoding::Binary, 1, &[Arc::new(sample())]);
        for bad in [
            &body[..body.len() / 2],
            &[][..],
            &[0u8][..],
            b"NB\xff\xff\xff\xff\xff\xff",
            b"no magic",
        ] {
            match decode(Encoding::Binary, bad) {
                Err(DecodeError::Malformed {
                    encoding: Encoding::Binary,
                    ..
                }) => {}
                other => panic!("{bad:?}: {other:?}"),
            }
        }
        assert!(matches!(
            decode(Encoding::Json, b"{\"version\":1,\"source\":1,\"events\":[{}]}"),
            Err(DecodeError::Malformed { .. })
        ));
        assert!(matches!(
            decode(Encoding::Json, b"not json"),
            Err(DecodeError::Malformed { .. })
        ));
    }

    #[test]
    fn batch_respects_the_size_limit_and_refuses_an_event_too_large_alone() {
        let mut encoder = BatchEncoder::new(Encoding::Binary, 1);
        let event = sample();
        let mut added = 0;
        while encoder.push(&event, 1_000).unwrap() {
            added += 1;
        }
        let body = encoder.finish();
        assert!(body.len() <= 1_000, "{}", body.len());
        assert_eq!(decode(Encoding::Binary, &body).unwrap().events.len(), added);
        assert!(matches!(encoder.push(&event, 80), Err(PushError::TooLarge(n)) if n > 16));
        assert_eq!(encoder.len(), 0);
    }
}
