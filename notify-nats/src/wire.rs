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

use crate::intern::Recent;
use notify_core::escape::Escaped;
use notify_core::{
    context::TransactionId,
    event::{EventId, Outcome},
    payload::Text,
    Event, Payload, TraceId, Value,
};
use serde::de::{self, DeserializeSeed, EnumAccess, SeqAccess, VariantAccess, Visitor};
use serde::ser::SerializeSeq;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The first bytes of a binary (postcard) batch: tells a notify batch from other traffic before
/// its version is read.
const MAGIC: &[u8; 2] = b"NB";

/// The newest wire-format version this crate writes and reads.
pub const WIRE_VERSION: u16 = 2;

/// How events are encoded on the wire.
///
/// ```
/// assert_eq!(notify_nats::Encoding::default(), notify_nats::Encoding::Binary);
/// assert_eq!(notify_nats::Encoding::Json.header_value(), "json");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
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
#[non_exhaustive]
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
        /// What the decoder said: never a payload value; it may name an event (escaped and cut
        /// to 200 characters) or the part of the message that is wrong. Display escapes it again
        /// (an application's decoder error may hold anything).
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
            // The reason may quote the message (an event name): escaped as notify-core's own
            // lines escape text.
            DecodeError::Malformed { encoding, reason } => write!(
                f,
                "malformed event batch ({} encoding): {}",
                encoding.header_value(),
                Escaped::new(reason)
            ),
        }
    }
}

impl std::error::Error for DecodeError {}

/// A payload value as decoded: an externally tagged enum, so that every [`Value`] variant comes
/// back as itself in both encodings (postcard is not self-describing, and JSON alone cannot tell
/// a duration from a number or a time from a string). The variants of wire version 1 keep their
/// positions (postcard writes the position); version 2 appended `Null` … `Map`.
///
/// Deserialized by hand ([`WireSeed`]), not derived: lists and maps nest at most
/// [`Value::MAX_NESTING`] deep, so that a hostile message cannot overflow the importer's stack
/// (postcard has no depth limit; one message nesting 1,500 lists, 3 KB, aborted the process).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum WireValue {
    Bool(bool),
    I64(i64),
    U64(u64),
    F64(f64),
    Str(String),
    Duration {
        secs: u64,
        nanos: u32,
    },
    Exception {
        type_name: String,
        message: String,
    },
    Null,
    I128(i128),
    U128(u128),
    /// Seconds since the Unix epoch (negative before it) and nanoseconds forward from there.
    Time {
        secs: i64,
        nanos: u32,
    },
    List(Vec<WireValue>),
    /// Entries in order.
    Map(Vec<(String, WireValue)>),
}

/// The names of [`WireValue`]'s variants, in position order.
const VARIANTS: &[&str] = &[
    "Bool",
    "I64",
    "U64",
    "F64",
    "Str",
    "Duration",
    "Exception",
    "Null",
    "I128",
    "U128",
    "Time",
    "List",
    "Map",
];

/// The error of a value nested deeper than [`Value::MAX_NESTING`] lists and maps (notify-core's
/// text for the same limit): it names the limit, never a value.
fn too_deep() -> String {
    format!("payload value nested deeper than {} lists and maps", Value::MAX_NESTING)
}

thread_local! {
    /// Set when [`WireSeed`] refused a value nested too deep on this thread: postcard's errors
    /// drop a custom message (`Error::SerdeDeCustom`), so [`parse`] asks here what it was.
    static REFUSED_TOO_DEEP: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

impl<'de> Deserialize<'de> for WireValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<WireValue, D::Error> {
        WireSeed { depth: 0 }.deserialize(d)
    }
}

/// Reads a [`WireValue`] at `depth` (a payload's own values are at 0, the items of a list or map
/// at depth `d` are at `d + 1`); a list or a map at depth [`Value::MAX_NESTING`] is refused, so
/// the recursion is bounded whatever the input.
#[derive(Clone, Copy)]
struct WireSeed {
    depth: usize,
}

impl WireSeed {
    /// The depth of the items of a list or map at this depth, or the error.
    fn inner<E: de::Error>(self) -> Result<usize, E> {
        if self.depth >= Value::MAX_NESTING {
            REFUSED_TOO_DEEP.with(|refused| refused.set(true));
            Err(E::custom(too_deep()))
        } else {
            Ok(self.depth + 1)
        }
    }
}

impl<'de> DeserializeSeed<'de> for WireSeed {
    type Value = WireValue;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<WireValue, D::Error> {
        d.deserialize_enum("WireValue", VARIANTS, self)
    }
}

/// A variant of [`WireValue`] by position (postcard) or name (JSON).
struct Tag(usize);

impl<'de> Deserialize<'de> for Tag {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Tag, D::Error> {
        struct TagVisitor;
        impl Visitor<'_> for TagVisitor {
            type Value = Tag;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a payload value variant")
            }

            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Tag, E> {
                match usize::try_from(v) {
                    Ok(i) if i < VARIANTS.len() => Ok(Tag(i)),
                    _ => Err(E::custom(format_args!(
                        "unknown payload value variant {v} (0 to {} known)",
                        VARIANTS.len() - 1
                    ))),
                }
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<Tag, E> {
                match VARIANTS.iter().position(|&n| n == v) {
                    Some(i) => Ok(Tag(i)),
                    // The name is not quoted: it is text from the message.
                    None => Err(E::custom("unknown payload value variant")),
                }
            }
        }
        d.deserialize_identifier(TagVisitor)
    }
}

/// The fields of the two-field variants `Duration`, `Time` (`secs`, `nanos`).
#[derive(Deserialize)]
struct SecsNanos<T> {
    secs: T,
    nanos: u32,
}

/// The fields of `Exception`.
#[derive(Deserialize)]
struct ExceptionParts {
    type_name: String,
    message: String,
}

impl<'de> Visitor<'de> for WireSeed {
    type Value = WireValue;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a payload value")
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<WireValue, A::Error> {
        let (Tag(tag), v) = data.variant::<Tag>()?;
        // The struct variants are read as a newtype holding a struct: the same bytes in postcard
        // (fields back to back) and the same text in JSON (`{"secs": .., "nanos": ..}`).
        Ok(match VARIANTS[tag] {
            "Bool" => WireValue::Bool(v.newtype_variant()?),
            "I64" => WireValue::I64(v.newtype_variant()?),
            "U64" => WireValue::U64(v.newtype_variant()?),
            "F64" => WireValue::F64(v.newtype_variant()?),
            "Str" => WireValue::Str(v.newtype_variant()?),
            "Duration" => {
                let SecsNanos { secs, nanos } = v.newtype_variant()?;
                WireValue::Duration { secs, nanos }
            }
            "Exception" => {
                let ExceptionParts { type_name, message } = v.newtype_variant()?;
                WireValue::Exception { type_name, message }
            }
            "Null" => {
                v.unit_variant()?;
                WireValue::Null
            }
            "I128" => WireValue::I128(v.newtype_variant()?),
            "U128" => WireValue::U128(v.newtype_variant()?),
            "Time" => {
                let SecsNanos { secs, nanos } = v.newtype_variant()?;
                WireValue::Time { secs, nanos }
            }
            "List" => WireValue::List(v.newtype_variant_seed(ListSeed { depth: self.inner()? })?),
            _ => WireValue::Map(v.newtype_variant_seed(MapSeed { depth: self.inner()? })?),
        })
    }
}

/// A list whose items are at `depth`.
struct ListSeed {
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for ListSeed {
    type Value = Vec<WireValue>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Vec<WireValue>, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for ListSeed {
    type Value = Vec<WireValue>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of payload values")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<WireValue>, A::Error> {
        // The length comes from the message: not trusted for more than a small reservation.
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
        while let Some(item) = seq.next_element_seed(WireSeed { depth: self.depth })? {
            items.push(item);
        }
        Ok(items)
    }
}

/// A map (a list of `(key, value)` pairs) whose values are at `depth`.
struct MapSeed {
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for MapSeed {
    type Value = Vec<(String, WireValue)>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for MapSeed {
    type Value = Vec<(String, WireValue)>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of (key, payload value) pairs")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut entries = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
        while let Some(entry) = seq.next_element_seed(EntrySeed { depth: self.depth })? {
            entries.push(entry);
        }
        Ok(entries)
    }
}

/// One `(key, value)` pair of a map, its value at `depth`.
struct EntrySeed {
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for EntrySeed {
    type Value = (String, WireValue);

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_tuple(2, self)
    }
}

impl<'de> Visitor<'de> for EntrySeed {
    type Value = (String, WireValue);

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a (key, payload value) pair")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let key = seq
            .next_element::<String>()?
            .ok_or_else(|| de::Error::invalid_length(0, &self))?;
        let value = seq
            .next_element_seed(WireSeed { depth: self.depth })?
            .ok_or_else(|| de::Error::invalid_length(1, &self))?;
        Ok((key, value))
    }
}

/// The position and name of each [`WireValue`] variant: what [`ValueOut`] writes.
mod variant {
    pub(super) const BOOL: (u32, &str) = (0, "Bool");
    pub(super) const I64: (u32, &str) = (1, "I64");
    pub(super) const U64: (u32, &str) = (2, "U64");
    pub(super) const F64: (u32, &str) = (3, "F64");
    pub(super) const STR: (u32, &str) = (4, "Str");
    pub(super) const DURATION: (u32, &str) = (5, "Duration");
    pub(super) const EXCEPTION: (u32, &str) = (6, "Exception");
    pub(super) const NULL: (u32, &str) = (7, "Null");
    pub(super) const I128: (u32, &str) = (8, "I128");
    pub(super) const U128: (u32, &str) = (9, "U128");
    pub(super) const TIME: (u32, &str) = (10, "Time");
    pub(super) const LIST: (u32, &str) = (11, "List");
    pub(super) const MAP: (u32, &str) = (12, "Map");
}

/// A value borrowed for encoding, written in [`WireValue`]'s form without copying it (nested
/// lists and maps included).
struct ValueOut<'a>(&'a Value);

impl Serialize for ValueOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStructVariant;
        const NAME: &str = "WireValue";
        // `WireValue::<variant>(value)`, the form of every variant that holds one value.
        macro_rules! newtype {
            ($variant:expr, $value:expr) => {{
                let (i, n) = $variant;
                s.serialize_newtype_variant(NAME, i, n, $value)
            }};
        }
        // `WireValue::<variant> { a, b }`, the form of the two-field variants.
        macro_rules! pair {
            ($variant:expr, $a:literal: $va:expr, $b:literal: $vb:expr) => {{
                let (i, n) = $variant;
                let mut st = s.serialize_struct_variant(NAME, i, n, 2)?;
                st.serialize_field($a, $va)?;
                st.serialize_field($b, $vb)?;
                st.end()
            }};
        }
        match self.0 {
            Value::Null => {
                let (i, n) = variant::NULL;
                s.serialize_unit_variant(NAME, i, n)
            }
            Value::Bool(v) => newtype!(variant::BOOL, v),
            Value::I64(v) => newtype!(variant::I64, v),
            Value::U64(v) => newtype!(variant::U64, v),
            Value::I128(v) => newtype!(variant::I128, v),
            Value::U128(v) => newtype!(variant::U128, v),
            Value::F64(v) => newtype!(variant::F64, v),
            Value::Str(v) => newtype!(variant::STR, &**v),
            Value::Duration(d) => pair!(variant::DURATION, "secs": &d.as_secs(), "nanos": &d.subsec_nanos()),
            Value::Time(t) => {
                let (secs, nanos) = time_parts(*t);
                pair!(variant::TIME, "secs": &secs, "nanos": &nanos)
            }
            Value::List(items) => newtype!(variant::LIST, &ListOut(items)),
            Value::Map(map) => newtype!(variant::MAP, &PayloadOut(map)),
            Value::Exception { type_name, message } => {
                pair!(variant::EXCEPTION, "type_name": &**type_name, "message": message)
            }
            // A variant added to notify-core after this wire version: its Display text.
            other => newtype!(variant::STR, &other.to_string()),
        }
    }
}

struct ListOut<'a>(&'a [Value]);

impl Serialize for ListOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for item in self.0 {
            seq.serialize_element(&ValueOut(item))?;
        }
        seq.end()
    }
}

/// `time` as whole seconds since the Unix epoch (negative before it) and nanoseconds forward.
fn time_parts(time: SystemTime) -> (i64, u32) {
    match time.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(after) => (i64::try_from(after.as_secs()).unwrap_or(i64::MAX), after.subsec_nanos()),
        Err(before) => {
            let before = before.duration();
            let secs = i64::try_from(before.as_secs()).unwrap_or(i64::MAX);
            match before.subsec_nanos() {
                0 => (-secs, 0),
                nanos => (-secs - 1, 1_000_000_000 - nanos),
            }
        }
    }
}

/// The time `secs` seconds and `nanos` nanoseconds after the Unix epoch, if this platform's
/// `SystemTime` holds it.
fn time_from_parts(secs: i64, nanos: u32) -> Option<SystemTime> {
    let epoch = SystemTime::UNIX_EPOCH;
    let nanos = Duration::from_nanos(u64::from(nanos));
    if secs >= 0 {
        epoch
            .checked_add(Duration::from_secs(secs.unsigned_abs()))?
            .checked_add(nanos)
    } else {
        epoch
            .checked_sub(Duration::from_secs(secs.unsigned_abs()))?
            .checked_add(nanos)
    }
}

impl WireValue {
    /// The value; a time this platform cannot represent, or a duration or time whose nanoseconds
    /// are out of range, is an error naming what is wrong, never the value (a payload may hold
    /// secrets, and decode errors are logged).
    fn into_value(self) -> Result<Value, String> {
        Ok(match self {
            WireValue::Null => Value::Null,
            WireValue::Bool(v) => Value::Bool(v),
            WireValue::I64(v) => Value::I64(v),
            WireValue::U64(v) => Value::U64(v),
            WireValue::I128(v) => Value::I128(v),
            WireValue::U128(v) => Value::U128(v),
            WireValue::F64(v) => Value::F64(v),
            WireValue::Str(v) => Value::Str(v.into()),
            WireValue::Duration { secs, nanos } => {
                if nanos >= 1_000_000_000 {
                    return Err("duration with nanoseconds out of range (at most 999999999)".to_owned());
                }
                Value::Duration(Duration::new(secs, nanos))
            }
            WireValue::Time { secs, nanos } => {
                if nanos >= 1_000_000_000 {
                    return Err("time with nanoseconds out of range (at most 999999999)".to_owned());
                }
                Value::Time(
                    time_from_parts(secs, nanos)
                        .ok_or_else(|| "time out of the range this platform represents".to_owned())?,
                )
            }
            WireValue::Exception { type_name, message } => Value::Exception {
                type_name: Cow::Owned(type_name),
                message,
            },
            WireValue::List(items) => {
                Value::List(items.into_iter().map(WireValue::into_value).collect::<Result<_, _>>()?)
            }
            WireValue::Map(entries) => Value::Map(Box::new(payload_from(entries)?)),
        })
    }
}

/// A payload from decoded entries (owned keys, in order).
fn payload_from(entries: Vec<(String, WireValue)>) -> Result<Payload, String> {
    let mut payload = Payload::new();
    for (key, value) in entries {
        payload.insert(key, value.into_value()?);
    }
    Ok(payload)
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
            seq.serialize_element(&(key, ValueOut(value)))?;
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
    /// Since version 2.
    cpu_time_ns: Option<u64>,
    /// Since version 2.
    allocations: Option<u64>,
}

impl<'a> EventOut<'a> {
    pub(crate) fn new(event: &'a Event) -> EventOut<'a> {
        let start = unix_ns(event.start_time());
        let duration_ns = saturating_ns(event.duration());
        EventOut {
            name: event.name(),
            start_unix_ns: start,
            end_unix_ns: start.saturating_add(duration_ns),
            duration_ns,
            id: event.id().get(),
            parent_id: event.parent_id().map(EventId::get),
            transaction_id: event.transaction_id().get(),
            trace_id: event.trace_id().get(),
            outcome: match event.outcome() {
                Outcome::Completed => WireOutcome::Completed,
                Outcome::Panicked => WireOutcome::Panicked,
                Outcome::Cancelled => WireOutcome::Cancelled,
                // An outcome added to notify-core after this wire version (Outcome is
                // non_exhaustive): the event did not simply complete, and did not panic here.
                _ => WireOutcome::Cancelled,
            },
            payload: PayloadOut(event.payload()),
            cpu_time_ns: event.cpu_time().map(saturating_ns),
            allocations: event.allocations(),
        }
    }
}

impl EventOut<'_> {
    /// Appends the event's postcard encoding to `out`: the bytes `postcard::to_io(self, out)`
    /// writes (the round-trip and byte-equality tests compare the two), without serde's layers
    /// (about half the exporter's encoding instructions).
    fn write_postcard(&self, out: &mut Vec<u8>) {
        put_str(out, self.name);
        put_varint_u64(out, self.start_unix_ns);
        put_varint_u64(out, self.end_unix_ns);
        put_varint_u64(out, self.duration_ns);
        put_varint_u64(out, self.id);
        put_option_u64(out, self.parent_id);
        put_varint_u64(out, self.transaction_id);
        put_varint_u128(out, self.trace_id);
        put_varint_u64(
            out,
            match self.outcome {
                WireOutcome::Completed => 0,
                WireOutcome::Panicked => 1,
                WireOutcome::Cancelled => 2,
            },
        );
        put_payload(out, self.payload.0);
        put_option_u64(out, self.cpu_time_ns);
        put_option_u64(out, self.allocations);
    }
}

/// The low 56 bits of `value` spread into 8 groups of 7 bits, one a byte (the inverse of
/// [`packed_7`]); the high bit of each byte clear.
#[inline(always)]
fn spread_7(value: u64) -> u64 {
    let x = (value & 0x0000_0000_0fff_ffff) | (value & 0x00ff_ffff_f000_0000) << 4;
    let x = (x & 0x0000_3fff_0000_3fff) | (x & 0x0fff_c000_0fff_c000) << 2;
    (x & 0x007f_007f_007f_007f) | (x & 0x3f80_3f80_3f80_3f80) << 1
}

/// Appends the 8 bytes of `word` (little-endian), keeping the first `used`.
#[inline(always)]
fn put_word(out: &mut Vec<u8>, word: u64, used: usize) {
    let len = out.len();
    out.extend_from_slice(&word.to_le_bytes());
    out.truncate(len + used);
}

/// Continuation bits for the first `used - 1` bytes of a word (`used` in 1..=8).
#[inline(always)]
fn continued(used: usize) -> u64 {
    0x8080_8080_8080_8080 & ((1_u64 << (8 * (used - 1))) - 1)
}

/// A varint as postcard writes one: 7 bits a byte, least significant first, each byte but the
/// last with its high bit set; written 8 bytes at a time.
#[inline(always)]
fn put_varint_u64(out: &mut Vec<u8>, value: u64) {
    if value < 0x80 {
        out.push(value as u8);
        return;
    }
    if value < 1 << 56 {
        let used = (64 - value.leading_zeros() as usize).div_ceil(7);
        put_word(out, spread_7(value) | continued(used), used);
        return;
    }
    put_word(out, spread_7(value) | 0x8080_8080_8080_8080, 8);
    let high = value >> 56;
    if high < 0x80 {
        out.push(high as u8);
    } else {
        out.extend_from_slice(&[high as u8 | 0x80, (high >> 7) as u8]);
    }
}

#[inline]
fn put_varint_u128(out: &mut Vec<u8>, value: u128) {
    if value < 1 << 56 {
        return put_varint_u64(out, value as u64);
    }
    put_word(out, spread_7(value as u64) | 0x8080_8080_8080_8080, 8);
    let mut rest = value >> 56;
    while rest > u128::from(u64::MAX) {
        out.push(rest as u8 | 0x80);
        rest >>= 7;
    }
    put_varint_u64(out, rest as u64);
}

#[inline(always)]
fn put_str(out: &mut Vec<u8>, text: &str) {
    put_varint_u64(out, text.len() as u64);
    out.extend_from_slice(text.as_bytes());
}

#[inline(always)]
fn put_option_u64(out: &mut Vec<u8>, value: Option<u64>) {
    match value {
        None => out.push(0),
        Some(value) => {
            out.push(1);
            put_varint_u64(out, value);
        }
    }
}

/// A payload or map: its length, then each key and value ([`PayloadOut`] through postcard).
fn put_payload(out: &mut Vec<u8>, payload: &Payload) {
    put_varint_u64(out, payload.len() as u64);
    for (key, value) in payload.iter() {
        put_str(out, key);
        put_value(out, value);
    }
}

/// A value as [`ValueOut`] writes it through postcard: its variant's position, then its fields.
fn put_value(out: &mut Vec<u8>, value: &Value) {
    let zigzag_64 = |v: i64| ((v << 1) ^ (v >> 63)) as u64;
    let zigzag_128 = |v: i128| ((v << 1) ^ (v >> 127)) as u128;
    let tag = |out: &mut Vec<u8>, (index, _): (u32, &str)| put_varint_u64(out, u64::from(index));
    match value {
        Value::Null => tag(out, variant::NULL),
        Value::Bool(v) => {
            tag(out, variant::BOOL);
            out.push(u8::from(*v));
        }
        Value::I64(v) => {
            tag(out, variant::I64);
            put_varint_u64(out, zigzag_64(*v));
        }
        Value::U64(v) => {
            tag(out, variant::U64);
            put_varint_u64(out, *v);
        }
        Value::I128(v) => {
            tag(out, variant::I128);
            put_varint_u128(out, zigzag_128(*v));
        }
        Value::U128(v) => {
            tag(out, variant::U128);
            put_varint_u128(out, *v);
        }
        Value::F64(v) => {
            tag(out, variant::F64);
            out.extend_from_slice(&v.to_bits().to_le_bytes());
        }
        Value::Str(v) => {
            tag(out, variant::STR);
            put_str(out, v);
        }
        Value::Duration(d) => {
            tag(out, variant::DURATION);
            put_varint_u64(out, d.as_secs());
            put_varint_u64(out, u64::from(d.subsec_nanos()));
        }
        Value::Time(t) => {
            let (secs, nanos) = time_parts(*t);
            tag(out, variant::TIME);
            put_varint_u64(out, zigzag_64(secs));
            put_varint_u64(out, u64::from(nanos));
        }
        Value::List(items) => {
            tag(out, variant::LIST);
            put_varint_u64(out, items.len() as u64);
            for item in items {
                put_value(out, item);
            }
        }
        Value::Map(map) => {
            tag(out, variant::MAP);
            put_payload(out, map);
        }
        Value::Exception { type_name, message } => {
            tag(out, variant::EXCEPTION);
            put_str(out, type_name);
            put_str(out, message);
        }
        // A variant added to notify-core after this wire version: its Display text (as ValueOut).
        other => {
            tag(out, variant::STR);
            put_str(out, &other.to_string());
        }
    }
}

fn saturating_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// One event as read from the wire (version 2): the fields of [`EventOut`], in the same order.
#[derive(Deserialize)]
struct RawEvent {
    name: String,
    start_unix_ns: u64,
    end_unix_ns: u64,
    duration_ns: u64,
    id: u64,
    parent_id: Option<u64>,
    transaction_id: u64,
    trace_id: u128,
    outcome: WireOutcome,
    payload: Vec<(String, WireValue)>,
    cpu_time_ns: Option<u64>,
    allocations: Option<u64>,
}

/// One event of wire version 1: version 2 without its last two fields.
#[derive(Deserialize)]
struct RawEventV1 {
    name: String,
    start_unix_ns: u64,
    end_unix_ns: u64,
    duration_ns: u64,
    id: u64,
    parent_id: Option<u64>,
    transaction_id: u64,
    trace_id: u128,
    outcome: WireOutcome,
    payload: Vec<(String, WireValue)>,
}

impl From<RawEventV1> for RawEvent {
    fn from(v1: RawEventV1) -> RawEvent {
        RawEvent {
            name: v1.name,
            start_unix_ns: v1.start_unix_ns,
            end_unix_ns: v1.end_unix_ns,
            duration_ns: v1.duration_ns,
            id: v1.id,
            parent_id: v1.parent_id,
            transaction_id: v1.transaction_id,
            trace_id: v1.trace_id,
            outcome: v1.outcome,
            payload: v1.payload,
            cpu_time_ns: None,
            allocations: None,
        }
    }
}

/// One event as decoded and checked: its payload already built, so that a message with an
/// impossible value is refused whole before any of its events is republished.
#[derive(Debug, Clone, PartialEq)]
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
    payload: Payload,
    cpu_time_ns: Option<u64>,
    allocations: Option<u64>,
}

impl RawEvent {
    fn check(self) -> Result<EventIn, String> {
        let payload = payload_from(self.payload)
            .map_err(|e| format!("event {} ({}): {e}", self.id, Escaped::truncated(&self.name, 200)))?;
        Ok(EventIn {
            name: self.name,
            start_unix_ns: self.start_unix_ns,
            end_unix_ns: self.end_unix_ns,
            duration_ns: self.duration_ns,
            id: self.id,
            parent_id: self.parent_id,
            transaction_id: self.transaction_id,
            trace_id: self.trace_id,
            outcome: self.outcome,
            payload,
            cpu_time_ns: self.cpu_time_ns,
            allocations: self.allocations,
        })
    }
}

impl EventIn {
    /// The event, with its original name, times, ids, outcome, payload, CPU time and allocation
    /// count.
    pub(crate) fn into_event(self) -> Event {
        Envelope {
            start_unix_ns: self.start_unix_ns,
            duration_ns: self.duration_ns,
            id: self.id,
            parent_id: self.parent_id,
            transaction_id: self.transaction_id,
            trace_id: self.trace_id,
            outcome: self.outcome,
            cpu_time_ns: self.cpu_time_ns,
            allocations: self.allocations,
        }
        .into_event(self.name, self.payload)
    }
}

/// The fields of an event but its name and payload, as read from the wire: what both decoders
/// ([`decode`] and [`decode_into`]) turn into an [`Event`] the same way.
#[derive(Clone, Copy)]
struct Envelope {
    start_unix_ns: u64,
    duration_ns: u64,
    id: u64,
    parent_id: Option<u64>,
    transaction_id: u64,
    trace_id: u128,
    outcome: WireOutcome,
    cpu_time_ns: Option<u64>,
    allocations: Option<u64>,
}

impl Envelope {
    /// The event, with its original name, times, ids, outcome, payload, CPU time and allocation
    /// count.
    #[inline(always)]
    fn into_event(self, name: impl Into<Cow<'static, str>>, payload: Payload) -> Event {
        let start = SystemTime::UNIX_EPOCH + Duration::from_nanos(self.start_unix_ns);
        let event = Event::at_wall_clock(name, start, Duration::from_nanos(self.duration_ns), payload)
            .with_ids(
                EventId::new(self.id),
                self.parent_id.map(EventId::new),
                TransactionId::new(self.transaction_id),
            )
            .with_cpu_time(self.cpu_time_ns.map(Duration::from_nanos))
            .with_allocations(self.allocations);
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
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BatchIn {
    pub(crate) version: u16,
    pub(crate) source: u64,
    pub(crate) events: Vec<EventIn>,
}

#[derive(Deserialize)]
struct RawBatch<E> {
    version: u16,
    source: u64,
    events: Vec<E>,
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
            .map_err(|e| malformed(json_reason(&e)))?,
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
    let raw: RawBatch<RawEvent> = if version == 1 {
        let v1: RawBatch<RawEventV1> = parse(encoding, body).map_err(malformed)?;
        RawBatch {
            version: v1.version,
            source: v1.source,
            events: v1.events.into_iter().map(RawEvent::from).collect(),
        }
    } else {
        parse(encoding, body).map_err(malformed)?
    };
    Ok(BatchIn {
        version: raw.version,
        source: raw.source,
        events: raw
            .events
            .into_iter()
            .map(RawEvent::check)
            .collect::<Result<_, _>>()
            .map_err(malformed)?,
    })
}

fn parse<T: serde::de::DeserializeOwned>(encoding: Encoding, body: &[u8]) -> Result<T, String> {
    REFUSED_TOO_DEEP.with(|refused| refused.set(false));
    match encoding {
        Encoding::Binary => postcard::from_bytes(body).map_err(|e| match e {
            // postcard keeps no custom message: the one custom error this decoder raises is
            // the nesting limit's.
            postcard::Error::SerdeDeCustom if REFUSED_TOO_DEEP.with(|refused| refused.take()) => too_deep(),
            e => e.to_string(),
        }),
        Encoding::Json => serde_json::from_slice(body).map_err(|e| json_reason(&e)),
    }
}

/// Decodes a batch into `out` (cleared first; its capacity is kept, so that an importer reuses
/// one buffer for every message) and returns its version and source: the same events and the
/// same errors as [`decode`] followed by [`EventIn::into_event`]. A binary batch is read in one
/// pass by [`Reader`], without serde and without intermediate copies: names, keys and text
/// values are read borrowed from `body`; names and keys are interned ([`crate::intern`]: shared
/// by every event, copied only beyond its budget), text values copied once (inline when short);
/// each payload is built in place and each event as soon as its fields are read. `out` is empty after an error
/// (nothing of a refused message is kept). JSON batches (for humans, not the fast path) go
/// through [`decode`].
pub(crate) fn decode_into(encoding: Encoding, body: &[u8], out: &mut Vec<Event>) -> Result<(u16, u64), DecodeError> {
    out.clear();
    if encoding == Encoding::Json {
        let batch = decode(encoding, body)?;
        out.extend(batch.events.into_iter().map(EventIn::into_event));
        return Ok((batch.version, batch.source));
    }
    let malformed = |reason: String| DecodeError::Malformed { encoding, reason };
    let body = body
        .strip_prefix(MAGIC)
        .ok_or_else(|| malformed("not a notify event batch (no \"NB\" magic)".to_owned()))?;
    let mut reader = Reader {
        rest: body,
        names: Recent::new(),
        keys: Recent::new(),
    };
    let version = reader.varint_u16().map_err(|e| malformed(e.reason()))?;
    if version > WIRE_VERSION {
        return Err(DecodeError::UnsupportedVersion {
            found: version,
            supported: WIRE_VERSION,
        });
    }
    if version == 0 {
        return Err(malformed("version 0 does not exist".to_owned()));
    }
    let mut impossible = None;
    // Version 1 events lack the last two fields (CPU time, allocations).
    match reader.batch(version > 1, out, &mut impossible) {
        // A parse error wins over an impossible value, as in `decode` (which checks values after
        // parsing the whole message).
        Ok(source) if impossible.is_none() => Ok((version, source)),
        Ok(_) => {
            out.clear();
            Err(malformed(impossible.unwrap_or_default()))
        }
        Err(e) => {
            out.clear();
            Err(malformed(e.reason()))
        }
    }
}

/// Why [`Reader`] stopped: postcard's own error for the same bytes (what [`decode`] reports), or
/// the nesting limit.
#[derive(Debug)]
enum ReadError {
    Postcard(postcard::Error),
    TooDeep,
}

impl ReadError {
    /// The reason [`decode`] gives for the same bytes.
    fn reason(&self) -> String {
        match self {
            ReadError::Postcard(e) => e.to_string(),
            ReadError::TooDeep => too_deep(),
        }
    }
}

impl From<postcard::Error> for ReadError {
    fn from(e: postcard::Error) -> ReadError {
        ReadError::Postcard(e)
    }
}

type Read<T> = Result<T, ReadError>;

/// Generates a varint reader for one integer type, read as postcard 1 reads it (the same
/// values, the same errors for the same bytes): 7 bits a byte, least significant first, at most
/// `ceil(bits / 7)` bytes, the last one holding only the bits left.
macro_rules! varint {
    ($name:ident, $t:ty) => {
        #[inline]
        fn $name(&mut self) -> Read<$t> {
            const MAX: usize = (<$t>::BITS as usize).div_ceil(7);
            const LAST: u8 = (1 << (<$t>::BITS % 7)) - 1;
            if let Some((&byte, rest)) = self.rest.split_first() {
                if byte < 0x80 {
                    self.rest = rest;
                    return Ok(<$t>::from(byte));
                }
            }
            let mut out: $t = 0;
            for i in 0..MAX {
                let byte = self.byte()?;
                out |= <$t>::from(byte & 0x7f) << (7 * i);
                if byte & 0x80 == 0 {
                    return if i == MAX - 1 && byte > LAST {
                        Err(postcard::Error::DeserializeBadVarint.into())
                    } else {
                        Ok(out)
                    };
                }
            }
            Err(postcard::Error::DeserializeBadVarint.into())
        }
    };
}

/// The 7-bit groups of the 8 bytes of `word` (little-endian), packed into 56 bits; the
/// continuation bits are ignored.
#[inline(always)]
fn packed_7(word: u64) -> u64 {
    let x = word & 0x7f7f_7f7f_7f7f_7f7f;
    let x = (x & 0x7f00_7f00_7f00_7f00) >> 1 | (x & 0x007f_007f_007f_007f);
    let x = (x & 0x3fff_0000_3fff_0000) >> 2 | (x & 0x0000_3fff_0000_3fff);
    (x & 0x0fff_ffff_0000_0000) >> 4 | (x & 0x0000_0000_0fff_ffff)
}

/// The varint that ends within the 8 bytes of `word` (little-endian), and how many bytes it
/// takes; `None` when all 8 have their continuation bit set.
#[inline(always)]
fn varint_word(word: u64) -> Option<(u64, usize)> {
    let ends = !word & 0x8080_8080_8080_8080;
    if ends == 0 {
        return None;
    }
    let used = ends.trailing_zeros() as usize / 8 + 1;
    let word = if used == 8 {
        word
    } else {
        word & ((1 << (used * 8)) - 1)
    };
    Some((packed_7(word), used))
}

/// Reads a binary batch (after its magic) field by field, as the derived and hand-written serde
/// implementations [`decode`] uses read it through postcard: the same fields in the same order,
/// the same checks, the same [`postcard::Error`] for the same bytes (the damaged-batch test
/// compares the two on every prefix and every byte changed of a batch).
struct Reader<'a> {
    rest: &'a [u8],
    /// The event names and payload keys met in this batch, interned ([`crate::intern`]).
    names: Recent<'a>,
    keys: Recent<'a>,
}

impl<'a> Reader<'a> {
    #[inline]
    fn byte(&mut self) -> Read<u8> {
        let (&byte, rest) = self
            .rest
            .split_first()
            .ok_or(postcard::Error::DeserializeUnexpectedEnd)?;
        self.rest = rest;
        Ok(byte)
    }

    #[inline]
    fn take(&mut self, n: usize) -> Read<&'a [u8]> {
        if self.rest.len() < n {
            return Err(postcard::Error::DeserializeUnexpectedEnd.into());
        }
        let (taken, rest) = self.rest.split_at(n);
        self.rest = rest;
        Ok(taken)
    }

    varint!(varint_u16, u16);
    varint!(varint_u32, u32);
    varint!(varint_u64_bytewise, u64);
    varint!(varint_u128_bytewise, u128);

    /// The next 8 bytes as a little-endian word, if there are 8.
    #[inline(always)]
    fn word(&self, at: usize) -> Option<u64> {
        let bytes = self.rest.get(at..at + 8)?;
        Some(u64::from_le_bytes(bytes.try_into().expect("8 bytes")))
    }

    /// A `u64` varint; ids and times since 1970 take 8 to 10 bytes, read here 8 at a time. A
    /// varint the fast path does not finish (near the end of the message, or invalid) is read
    /// byte by byte, as postcard reads it, for the same value or error.
    #[inline]
    fn varint_u64(&mut self) -> Read<u64> {
        if let (Some(low), Some(&[b8, b9])) = (self.word(0), self.rest.get(8..10)) {
            let (value, used) = match varint_word(low) {
                Some((value, used)) => (value, used),
                None if b8 < 0x80 => (packed_7(low) | u64::from(b8) << 56, 9),
                // The 10th byte holds the last bit.
                None if b9 <= 1 => (packed_7(low) | u64::from(b8 & 0x7f) << 56 | u64::from(b9) << 63, 10),
                None => return self.varint_u64_bytewise(),
            };
            self.rest = &self.rest[used..];
            return Ok(value);
        }
        self.varint_u64_bytewise()
    }

    /// A `u128` varint (trace ids: 19 bytes), 8 bytes at a time as [`Reader::varint_u64`].
    #[inline]
    fn varint_u128(&mut self) -> Read<u128> {
        if let (Some(low), Some(high), Some(&[b16, b17, b18])) = (self.word(0), self.word(8), self.rest.get(16..19)) {
            let (value, used) = match (varint_word(low), varint_word(high)) {
                (Some((value, used)), _) => (u128::from(value), used),
                (None, Some((value, used))) => (u128::from(packed_7(low)) | u128::from(value) << 56, 8 + used),
                (None, None) => {
                    let both = u128::from(packed_7(low)) | u128::from(packed_7(high)) << 56;
                    if b16 < 0x80 {
                        (both | u128::from(b16) << 112, 17)
                    } else if b17 < 0x80 {
                        (both | u128::from(b16 & 0x7f) << 112 | u128::from(b17) << 119, 18)
                    } else if b18 <= 3 {
                        // The 19th byte holds the last 2 bits.
                        (
                            both | u128::from(b16 & 0x7f) << 112
                                | u128::from(b17 & 0x7f) << 119
                                | u128::from(b18) << 126,
                            19,
                        )
                    } else {
                        return self.varint_u128_bytewise();
                    }
                }
            };
            self.rest = &self.rest[used..];
            return Ok(value);
        }
        self.varint_u128_bytewise()
    }

    /// A length (postcard's `usize`: a `u64` varint on 64-bit targets, a `u32` one on 32-bit).
    #[inline]
    fn len(&mut self) -> Read<usize> {
        #[cfg(target_pointer_width = "64")]
        let len = self.varint_u64()? as usize;
        #[cfg(not(target_pointer_width = "64"))]
        let len = self.varint_u32()? as usize;
        Ok(len)
    }

    #[inline]
    fn i64(&mut self) -> Read<i64> {
        let n = self.varint_u64()?;
        Ok(((n >> 1) as i64) ^ (-((n & 1) as i64)))
    }

    #[inline]
    fn i128(&mut self) -> Read<i128> {
        let n = self.varint_u128()?;
        Ok(((n >> 1) as i128) ^ (-((n & 1) as i128)))
    }

    #[inline]
    fn bool(&mut self) -> Read<bool> {
        match self.byte()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(postcard::Error::DeserializeBadBool.into()),
        }
    }

    #[inline]
    fn f64(&mut self) -> Read<f64> {
        let bytes = self.take(8)?;
        Ok(f64::from_le_bytes(bytes.try_into().expect("8 bytes")))
    }

    #[inline]
    fn str(&mut self) -> Read<&'a str> {
        let len = self.len()?;
        let bytes = self.take(len)?;
        std::str::from_utf8(bytes).map_err(|_| postcard::Error::DeserializeBadUtf8.into())
    }

    /// An event name (`key` false) or a payload key (`key` true): its text and its interned form
    /// ([`Recent::get`]); as [`Reader::str`], but the UTF-8 check is made only the first time the
    /// batch holds these bytes.
    #[inline]
    fn recent_str(&mut self, key: bool) -> Read<(&'a str, Option<&'static str>)> {
        let len = self.len()?;
        let bytes = self.take(len)?;
        let recent = if key { &mut self.keys } else { &mut self.names };
        recent
            .get(bytes)
            .map_err(|_| postcard::Error::DeserializeBadUtf8.into())
    }

    #[inline]
    fn option_u64(&mut self) -> Read<Option<u64>> {
        match self.byte()? {
            0 => Ok(None),
            1 => Ok(Some(self.varint_u64()?)),
            _ => Err(postcard::Error::DeserializeBadOption.into()),
        }
    }

    /// An enum's variant index below `variants` (serde's derived and [`Tag`]'s refusal of
    /// another is a custom error, which postcard reports without its text).
    #[inline]
    fn variant(&mut self, variants: usize) -> Read<usize> {
        let index = self.varint_u32()? as usize;
        if index < variants {
            Ok(index)
        } else {
            Err(postcard::Error::SerdeDeCustom.into())
        }
    }

    /// `{ source, events }` after the version; each event pushed into `out` as read. `v2`: the
    /// events have version 2's CPU time and allocations.
    fn batch(&mut self, v2: bool, out: &mut Vec<Event>, impossible: &mut Option<String>) -> Read<u64> {
        let source = self.varint_u64()?;
        let count = self.len()?;
        // The count comes from the message: trusted for no more than a modest reservation.
        out.reserve(count.min(4_096));
        for _ in 0..count {
            self.event(v2, out, impossible)?;
        }
        Ok(source)
    }

    /// One event ([`EventOut`]'s fields in order), pushed into `out` (built there rather than
    /// returned: an `Event` is about 400 bytes, and each move is a copy); the first impossible
    /// value of the batch goes to `impossible`, named as [`RawEvent::check`] names it.
    fn event(&mut self, v2: bool, out: &mut Vec<Event>, impossible: &mut Option<String>) -> Read<()> {
        let (name, interned) = self.recent_str(false)?;
        let start_unix_ns = self.varint_u64()?;
        let _end_unix_ns = self.varint_u64()?;
        let duration_ns = self.varint_u64()?;
        let id = self.varint_u64()?;
        let parent_id = self.option_u64()?;
        let transaction_id = self.varint_u64()?;
        let trace_id = self.varint_u128()?;
        let outcome = match self.variant(3)? {
            0 => WireOutcome::Completed,
            1 => WireOutcome::Panicked,
            _ => WireOutcome::Cancelled,
        };
        let mut refused = None;
        let payload = self.payload(0, &mut refused)?;
        let (cpu_time_ns, allocations) = if v2 {
            (self.option_u64()?, self.option_u64()?)
        } else {
            (None, None)
        };
        if let (Some(reason), None) = (refused, &impossible) {
            *impossible = Some(format!("event {id} ({}): {reason}", Escaped::truncated(name, 200)));
        }
        let name: Cow<'static, str> = match interned {
            Some(interned) => Cow::Borrowed(interned),
            None => Cow::Owned(name.to_owned()),
        };
        out.push(
            Envelope {
                start_unix_ns,
                duration_ns,
                id,
                parent_id,
                transaction_id,
                trace_id,
                outcome,
                cpu_time_ns,
                allocations,
            }
            .into_event(name, payload),
        );
        Ok(())
    }

    /// A payload or map (a list of `(key, value)` pairs) built in place, its values at `depth`;
    /// a key given twice keeps its first position and its last value, as in [`payload_from`].
    fn payload(&mut self, depth: usize, refused: &mut Option<&'static str>) -> Read<Payload> {
        let mut payload = Payload::new();
        for _ in 0..self.len()? {
            let (key, interned) = self.recent_str(true)?;
            let value = self.value(depth, refused)?;
            match interned {
                Some(interned) => payload.insert(interned, value),
                None => payload.insert(key.to_owned(), value),
            };
        }
        Ok(payload)
    }

    /// A payload value at `depth` (a list or map at [`Value::MAX_NESTING`] is refused before its
    /// items are read, as [`WireSeed`] refuses it), straight into a [`Value`]: what [`WireSeed`]
    /// then [`WireValue::into_value`] make of the same bytes. An impossible time or duration
    /// stands as `Null` (never seen: the message is refused) and its reason goes to `refused`
    /// if none is there yet.
    fn value(&mut self, depth: usize, refused: &mut Option<&'static str>) -> Read<Value> {
        let mut refuse = |reason: &'static str| {
            refused.get_or_insert(reason);
            Value::Null
        };
        let nested = || {
            if depth >= Value::MAX_NESTING {
                Err(ReadError::TooDeep)
            } else {
                Ok(depth + 1)
            }
        };
        Ok(match self.variant(VARIANTS.len())? as u32 {
            i if i == variant::BOOL.0 => Value::Bool(self.bool()?),
            i if i == variant::I64.0 => Value::I64(self.i64()?),
            i if i == variant::U64.0 => Value::U64(self.varint_u64()?),
            i if i == variant::F64.0 => Value::F64(self.f64()?),
            i if i == variant::STR.0 => Value::Str(Text::new(self.str()?)),
            i if i == variant::DURATION.0 => {
                let secs = self.varint_u64()?;
                let nanos = self.varint_u32()?;
                if nanos >= 1_000_000_000 {
                    refuse("duration with nanoseconds out of range (at most 999999999)")
                } else {
                    Value::Duration(Duration::new(secs, nanos))
                }
            }
            i if i == variant::EXCEPTION.0 => {
                let type_name = self.str()?.to_owned();
                let message = self.str()?.to_owned();
                Value::Exception {
                    type_name: Cow::Owned(type_name),
                    message,
                }
            }
            i if i == variant::NULL.0 => Value::Null,
            i if i == variant::I128.0 => Value::I128(self.i128()?),
            i if i == variant::U128.0 => Value::U128(self.varint_u128()?),
            i if i == variant::TIME.0 => {
                let secs = self.i64()?;
                let nanos = self.varint_u32()?;
                if nanos >= 1_000_000_000 {
                    refuse("time with nanoseconds out of range (at most 999999999)")
                } else {
                    match time_from_parts(secs, nanos) {
                        Some(time) => Value::Time(time),
                        None => refuse("time out of the range this platform represents"),
                    }
                }
            }
            i if i == variant::LIST.0 => {
                let depth = nested()?;
                let len = self.len()?;
                // The length comes from the message: not trusted for more than a small reservation.
                let mut items = Vec::with_capacity(len.min(64));
                for _ in 0..len {
                    items.push(self.value(depth, refused)?);
                }
                Value::List(items)
            }
            _ => Value::Map(Box::new(self.payload(nested()?, refused)?)),
        })
    }
}

/// serde_json's message for `e`, without the value it may quote: serde writes a mistyped or
/// invalid value into its message (`invalid type: string "K3YS3CRET", expected u64`), and the
/// value may be a secret under a redacted key (redaction runs after decoding). The value's kind
/// stays (`invalid type: a string, expected u64 at line 1 column 80`).
fn json_reason(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let position = format!(" at line {} column {}", e.line(), e.column());
    let (message, position) = match text.strip_suffix(&position) {
        Some(message) => (message, position.as_str()),
        None => (text.as_str(), ""),
    };
    format!("{}{position}", without_values(message))
}

/// `message` with the value of serde's `invalid type: <unexpected>, expected <what>` (or
/// `invalid value: ...`) replaced by its kind. serde writes the five kinds that hold a value as
/// ``boolean `true` ``, ``integer `5` ``, ``floating point `1.5` ``, ``character `c` `` and
/// `string "text"`; the others (`null`, `sequence`, `map`, ...) hold none and stay. The expected
/// part is this crate's text and holds no `, expected `, so the last one ends the value whatever
/// the value holds.
fn without_values(message: &str) -> String {
    for prefix in ["invalid type: ", "invalid value: "] {
        let Some(rest) = message.strip_prefix(prefix) else {
            continue;
        };
        let Some(end) = rest.rfind(", expected ") else { continue };
        let unexpected = &rest[..end];
        let kind = [
            ("boolean `", "a boolean"),
            ("integer `", "an integer"),
            ("floating point `", "a floating point number"),
            ("character `", "a character"),
            ("string \"", "a string"),
        ]
        .into_iter()
        .find_map(|(form, kind)| unexpected.starts_with(form).then_some(kind))
        .unwrap_or(unexpected);
        return format!("{prefix}{kind}{}", &rest[end..]);
    }
    message.to_owned()
}

/// True when `value` holds more than `max` lists and maps inside one another; looks no deeper
/// than `max + 1` levels (the recursion is bounded whatever the value).
fn nests_deeper_than(value: &Value, max: usize) -> bool {
    match value {
        Value::List(items) => max == 0 || items.iter().any(|v| nests_deeper_than(v, max - 1)),
        Value::Map(map) => max == 0 || map.iter().any(|(_, v)| nests_deeper_than(v, max - 1)),
        _ => false,
    }
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
        // An importer refuses the whole message holding such an event (the nesting limit of the
        // decoder): refused here, alone, so that the other events of its batch arrive.
        if event
            .payload()
            .iter()
            .any(|(_, value)| nests_deeper_than(value, Value::MAX_NESTING))
        {
            return Err(PushError::Encode(too_deep()));
        }
        self.scratch.clear();
        let out = EventOut::new(event);
        match self.encoding {
            Encoding::Binary => out.write_postcard(&mut self.scratch),
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
/// original names, times, ids, outcome and payload; for transports other than NATS. Event names
/// and payload keys are interned as an [`Importer`](crate::Importer)'s are (kept for the life of
/// the process, at most 256 KiB in all and 128 bytes each; past that, copied per event).
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
    let mut events = Vec::new();
    let (_, source) = decode_into(encoding, body, &mut events)?;
    Ok((source, events))
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
        let mut payload = payload
            .with("none", Value::Null)
            .with("big", i128::MIN)
            .with("huge", u128::MAX)
            .with("at", SystemTime::UNIX_EPOCH - Duration::new(1, 5))
            .with("list", Value::List(vec![1_u8.into(), Value::List(vec![Value::Null])]))
            .with(
                "map",
                Payload::new().with(String::from("owned key"), Payload::new().with("d", 1.5)),
            );
        payload.record_error(&std::fmt::Error);
        Event::at_wall_clock("query.sql", start, Duration::from_nanos(42_000), payload)
            .with_ids(EventId::new(10), Some(EventId::new(9)), TransactionId::new(77))
            .with_cpu_time(Some(Duration::from_nanos(41_000)))
            .with_allocations(Some(3))
            .with_outcome(Outcome::Panicked)
    }

    fn assert_same(a: &Event, b: &Event) {
        assert_same_envelope(a, b);
        assert_eq!(a.payload(), b.payload());
    }

    /// Everything but the payloads.
    fn assert_same_envelope(a: &Event, b: &Event) {
        assert_eq!(a.name(), b.name());
        assert_eq!(a.start_time(), b.start_time());
        assert_eq!(a.duration(), b.duration());
        assert_eq!(
            (a.id(), a.parent_id(), a.transaction_id()),
            (b.id(), b.parent_id(), b.transaction_id())
        );
        assert_eq!(a.outcome(), b.outcome());
        assert_eq!(a.trace_id(), b.trace_id());
        assert_eq!((a.cpu_time(), a.allocations()), (b.cpu_time(), b.allocations()));
    }

    #[test]
    fn times_split_into_seconds_and_forward_nanoseconds() {
        let epoch = SystemTime::UNIX_EPOCH;
        for (time, parts) in [
            (epoch, (0, 0)),
            (epoch + Duration::new(1, 5), (1, 5)),
            (epoch - Duration::new(1, 0), (-1, 0)),
            (epoch - Duration::new(1, 5), (-2, 999_999_995)),
        ] {
            assert_eq!(time_parts(time), parts);
            assert_eq!(time_from_parts(parts.0, parts.1), Some(time));
        }
    }

    /// Version 1 batches (no null, 128-bit, time, list or map values; no CPU time or
    /// allocations) are still read.
    #[test]
    fn version_1_batches_are_read() {
        #[derive(Serialize)]
        enum V1Value {
            #[allow(dead_code)]
            Bool(bool),
            #[allow(dead_code)]
            I64(i64),
            U64(u64),
        }
        #[derive(Serialize)]
        struct V1Event {
            name: &'static str,
            start_unix_ns: u64,
            end_unix_ns: u64,
            duration_ns: u64,
            id: u64,
            parent_id: Option<u64>,
            transaction_id: u64,
            trace_id: u128,
            outcome: WireOutcome,
            payload: Vec<(&'static str, V1Value)>,
        }
        let event = V1Event {
            name: "old.sql",
            start_unix_ns: 1_000,
            end_unix_ns: 1_500,
            duration_ns: 500,
            id: 4,
            parent_id: None,
            transaction_id: 2,
            trace_id: 9,
            outcome: WireOutcome::Completed,
            payload: vec![("rows", V1Value::U64(3))],
        };
        let mut binary = MAGIC.to_vec();
        postcard::to_io(&(1_u16, 5_u64, vec![&event]), &mut binary).unwrap();
        let json = serde_json::json!({"version": 1, "source": 5, "events": [&event]}).to_string();
        for (encoding, body) in [(Encoding::Binary, binary), (Encoding::Json, json.into_bytes())] {
            decoded_both_ways(encoding, &body).unwrap();
            let batch = decode(encoding, &body).unwrap();
            assert_eq!((batch.version, batch.source, batch.events.len()), (1, 5, 1));
            let got = batch.events.into_iter().next().unwrap().into_event();
            assert_eq!(
                (got.name(), got.id(), got.duration()),
                ("old.sql", EventId::new(4), Duration::from_nanos(500))
            );
            assert_eq!(got.payload(), &Payload::new().with("rows", 3_u64));
            assert_eq!((got.cpu_time(), got.allocations()), (None, None));
        }
    }

    /// Issue 33 item 12: `invalid type: string "K3YS3CRET"` reached the importer's warning.
    #[test]
    fn json_decode_errors_name_the_kind_of_a_mistyped_value_never_the_value() {
        let batch = |value: &str| {
            format!(
                r#"{{"version":2,"source":1,"events":[{{"name":"a.b","start_unix_ns":0,"end_unix_ns":0,"duration_ns":0,"id":3,"parent_id":null,"transaction_id":1,"trace_id":1,"outcome":"Completed","payload":[["api_key",{value}]],"cpu_time_ns":null,"allocations":null}}]}}"#
            )
        };
        // (the value, the token serde_json's position ends on, the reason)
        for (value, token, reason) in [
            (
                r#"{"U64":"K3YS3CRET"}"#,
                r#"ET""#,
                "invalid type: a string, expected u64",
            ),
            (
                r#"{"U64":"K3YS3CRET, expected u64"}"#,
                r#"64""#,
                "invalid type: a string, expected u64",
            ),
            (r#"{"Str":31337}"#, "37", "invalid type: an integer, expected a string"),
            (
                r#"{"Bool":31.337}"#,
                "37",
                "invalid type: a floating point number, expected a boolean",
            ),
            (r#"{"Str":true}"#, "true", "invalid type: a boolean, expected a string"),
            (r#"{"U64":-31337}"#, "37", "invalid value: an integer, expected u64"),
            (r#"{"Str":null}"#, "null", "invalid type: null, expected a string"),
            (r#"{"K3YS3CRET":1}"#, r#"ET""#, "unknown payload value variant"),
            (
                r#"{"Duration":{"secs":"K3YS3CRET","nanos":0}}"#,
                r#"ET""#,
                "invalid type: a string, expected u64",
            ),
        ] {
            let json = batch(value);
            let err = decode(Encoding::Json, json.as_bytes()).unwrap_err();
            let DecodeError::Malformed { reason: got, .. } = &err else {
                panic!("{err:?}")
            };
            let column = json.find(value).unwrap() + value.rfind(token).unwrap() + token.len();
            assert_eq!(got, &format!("{reason} at line 1 column {column}"), "{value}");
            assert!(
                !err.to_string().contains("31") && !err.to_string().contains("K3YS"),
                "{err}"
            );
        }
        let err = decode(Encoding::Json, br#"{"version":"K3YS3CRET"}"#).unwrap_err();
        assert_eq!(
            err.to_string(),
            "malformed event batch (json encoding): invalid type: a string, expected u16 at line 1 column 22"
        );
        // Messages of other shapes are kept whole.
        assert_eq!(without_values("missing field `name`"), "missing field `name`");
        assert_eq!(
            without_values("invalid length 1, expected a (key, payload value) pair"),
            "invalid length 1, expected a (key, payload value) pair"
        );
    }

    /// An event the importers would refuse is refused alone by the exporter (counted as an
    /// encode drop), not sent to make its whole batch malformed.
    #[test]
    fn the_encoder_refuses_an_event_nested_past_the_limit_alone() {
        let mut encoder = BatchEncoder::new(Encoding::Binary, 1);
        assert!(encoder.push(&nested_event(16, 16), usize::MAX / 2).unwrap());
        for (lists, maps) in [(33, 0), (0, 33), (1, 32)] {
            match encoder.push(&nested_event(lists, maps), usize::MAX / 2) {
                Err(PushError::Encode(reason)) => {
                    assert_eq!(reason, "payload value nested deeper than 32 lists and maps")
                }
                other => panic!("{lists}+{maps}: {other:?}"),
            }
        }
        assert!(encoder.push(&nested_event(0, 32), usize::MAX / 2).unwrap());
        let batch = decode(Encoding::Binary, &encoder.finish()).unwrap();
        assert_eq!(batch.events.len(), 2);
        assert!(!nests_deeper_than(&Value::List(vec![]), 1));
        assert!(nests_deeper_than(&Value::List(vec![]), 0));
        assert!(!nests_deeper_than(&Value::U64(1), 0));
    }

    #[test]
    fn the_variant_names_match_their_positions() {
        use variant::*;
        for (i, n) in [
            BOOL, I64, U64, F64, STR, DURATION, EXCEPTION, NULL, I128, U128, TIME, LIST, MAP,
        ] {
            assert_eq!(VARIANTS[i as usize], n);
        }
        assert_eq!(VARIANTS.len(), 13);
    }

    /// An event whose payload holds `"v"`: `lists` lists inside one another, then `maps` maps
    /// (the innermost holding 1).
    fn nested_event(lists: usize, maps: usize) -> Arc<Event> {
        let mut value = Value::U64(1);
        for _ in 0..lists {
            value = Value::List(vec![value]);
        }
        for _ in 0..maps {
            value = Value::Map(Box::new(Payload::new().with("k", value)));
        }
        let now = std::time::Instant::now();
        Arc::new(Event::new("deep.test", now, now, Payload::new().with("v", value)))
    }

    /// A batch of `event` written without [`BatchEncoder`]'s checks.
    fn unchecked_batch(encoding: Encoding, event: &Event) -> Vec<u8> {
        let out = EventOut::new(event);
        match encoding {
            Encoding::Binary => {
                let mut body = MAGIC.to_vec();
                postcard::to_io(&(WIRE_VERSION, 1_u64, 1_usize), &mut body).unwrap();
                postcard::to_io(&out, &mut body).unwrap();
                body
            }
            Encoding::Json => format!(
                "{{\"version\":{WIRE_VERSION},\"source\":1,\"events\":[{}]}}",
                serde_json::to_string(&out).unwrap()
            )
            .into_bytes(),
        }
    }

    fn depth_of(value: &Value) -> usize {
        match value {
            Value::List(items) => 1 + items.iter().map(depth_of).max().unwrap_or(0),
            Value::Map(map) => 1 + map.iter().map(|(_, v)| depth_of(v)).max().unwrap_or(0),
            _ => 0,
        }
    }

    /// Issue 33: one postcard message nesting 1,500 lists (3 KB) overflowed the importer's stack.
    #[test]
    fn values_nested_to_the_limit_are_read_one_more_is_malformed_in_both_encodings() {
        for encoding in [Encoding::Binary, Encoding::Json] {
            for (lists, maps) in [(32, 0), (0, 32), (16, 16)] {
                let body = encode_batch(encoding, 1, &[nested_event(lists, maps)]);
                let batch = decode(encoding, &body).unwrap_or_else(|e| panic!("{encoding:?} {lists}+{maps}: {e}"));
                let event = batch.events.into_iter().next().unwrap().into_event();
                assert_eq!(depth_of(event.payload().get("v").unwrap()), Value::MAX_NESTING);
            }
            for (lists, maps) in [(33, 0), (0, 33), (17, 16)] {
                // The encoder refuses such an event: written past it, as a hostile sender would.
                let body = unchecked_batch(encoding, &nested_event(lists, maps));
                let err = decoded_both_ways(encoding, &body).unwrap_err();
                let DecodeError::Malformed { reason, .. } = &err else {
                    panic!("{err:?}")
                };
                let reason = reason.split(" at line ").next().unwrap();
                assert_eq!(
                    reason, "payload value nested deeper than 32 lists and maps",
                    "{encoding:?}"
                );
            }
        }
        // 1,500 lists by hand (the exporter would write them too, but building and dropping such
        // a Value recurses as deep): 2 bytes per level in postcard.
        let mut body = MAGIC.to_vec();
        postcard::to_io(&(WIRE_VERSION, 1_u64, 1_usize), &mut body).unwrap();
        // The event up to its payload: a real one's, then the payload replaced.
        let shallow = nested_event(0, 0);
        let mut event = postcard::to_stdvec(&EventOut::new(&shallow)).unwrap();
        // Its payload is the last fields: [("v", U64(1))], then cpu time and allocations (None, None).
        let tail = postcard::to_stdvec(&(vec![("v", ValueOut(&Value::U64(1)))], None::<u64>, None::<u64>)).unwrap();
        assert!(event.ends_with(&tail), "the payload is the event's last fields");
        event.truncate(event.len() - tail.len());
        event.extend_from_slice(&[1, 1, b'v']); // one entry, key "v"
        for _ in 0..1_500 {
            event.extend_from_slice(&[variant::LIST.0 as u8, 1]); // List of one item
        }
        event.extend_from_slice(&[variant::NULL.0 as u8, 0, 0]); // Null, then no cpu time, no allocations
        body.extend_from_slice(&event);
        assert!((3_000..3_200).contains(&body.len()), "{}", body.len());
        assert_eq!(
            decoded_both_ways(Encoding::Binary, &body).unwrap_err(),
            DecodeError::Malformed {
                encoding: Encoding::Binary,
                reason: "payload value nested deeper than 32 lists and maps".to_owned()
            }
        );
    }

    #[test]
    fn impossible_values_make_the_message_malformed_naming_them() {
        let json = br#"{"version":2,"source":1,"events":[{"name":"a.b","start_unix_ns":0,"end_unix_ns":0,"duration_ns":0,"id":3,"parent_id":null,"transaction_id":1,"trace_id":1,"outcome":"Completed","payload":[["ok",{"U64":1}],["at",{"Time":{"secs":0,"nanos":1000000000}}]],"cpu_time_ns":null,"allocations":null}]}"#;
        assert_eq!(
            decode(Encoding::Json, json).unwrap_err(),
            DecodeError::Malformed {
                encoding: Encoding::Json,
                reason: "event 3 (a.b): time with nanoseconds out of range (at most 999999999)".to_owned()
            }
        );
    }

    /// What [`decode_into`] gives for `body`, as [`decode`] + [`EventIn::into_event`] would give
    /// it: `(version, source, events)` or the error.
    fn decoded_both_ways(encoding: Encoding, body: &[u8]) -> Result<(u16, u64, Vec<Event>), DecodeError> {
        let mut fast = vec![Event::new(
            "stale.event",
            std::time::Instant::now(),
            std::time::Instant::now(),
            Payload::new(),
        )];
        let one_pass = decode_into(encoding, body, &mut fast);
        let reference = decode(encoding, body);
        match (one_pass, reference) {
            (Ok((version, source)), Ok(batch)) => {
                assert_eq!((version, source), (batch.version, batch.source));
                assert_eq!(fast.len(), batch.events.len());
                for (got, want) in fast.iter().zip(batch.events) {
                    let want = want.into_event();
                    // Payloads compared by their Debug form: a damaged message may hold a NaN.
                    assert_eq!(format!("{:?}", got.payload()), format!("{:?}", want.payload()));
                    assert_same_envelope(got, &want);
                }
                Ok((version, source, fast))
            }
            (Err(got), Err(want)) => {
                assert_eq!(got, want, "{body:?}");
                assert!(fast.is_empty(), "nothing of a refused message is kept");
                Err(got)
            }
            (got, want) => panic!(
                "{body:?}: one pass {got:?}, reference {:?}",
                want.map(|b| b.events.len())
            ),
        }
    }

    /// The one-pass decoder gives the events of the two-pass one (its reference, kept for
    /// JSON) for every kind of value, both wire versions, and an empty batch.
    #[test]
    fn decode_into_gives_the_events_of_the_reference_decoder() {
        let mixed: Vec<Arc<Event>> = vec![
            Arc::new(sample()),
            nested_event(32, 0),
            nested_event(16, 16),
            Arc::new(sample()),
        ];
        for encoding in [Encoding::Binary, Encoding::Json] {
            for events in [&mixed[..], &mixed[..1], &[]] {
                let body = encode_batch(encoding, 0xfeed, events);
                let (version, source, got) = decoded_both_ways(encoding, &body).unwrap();
                assert_eq!((version, source, got.len()), (WIRE_VERSION, 0xfeed, events.len()));
                for (sent, got) in events.iter().zip(&got) {
                    assert_same(sent, got);
                }
            }
        }
        // Short text is stored inline, long text owned: the same value either way.
        let long = "x".repeat(Text::INLINE_CAPACITY + 1);
        let now = std::time::Instant::now();
        let texts = Arc::new(Event::new(
            "text.test",
            now,
            now,
            Payload::new()
                .with("short", "abc")
                .with("long", long.as_str())
                .with("short", "replaced"),
        ));
        let body = encode_batch(Encoding::Binary, 1, std::slice::from_ref(&texts));
        let (_, _, got) = decoded_both_ways(Encoding::Binary, &body).unwrap();
        assert_eq!(got[0].payload(), texts.payload());
        assert_eq!(got[0].payload().keys().collect::<Vec<_>>(), ["short", "long"]);
        // Keys are interned (shared, not copied per event); a key past the length limit is copied.
        let long_key = "k".repeat(crate::intern::MAX_LEN + 1);
        let keys = Arc::new(Event::new(
            "keys.test",
            now,
            now,
            Payload::new().with("rows", 1_u64).with(long_key.clone(), 2_u64),
        ));
        let body = encode_batch(Encoding::Binary, 1, &[keys.clone(), keys]);
        let (_, _, got) = decoded_both_ways(Encoding::Binary, &body).unwrap();
        for event in &got {
            let statics: Vec<_> = event.payload().entries().map(|(key, _)| key.as_static()).collect();
            assert_eq!(statics, [Some("rows"), None]);
        }
    }

    /// Every prefix of a batch and every byte of it changed: the one-pass decoder errs exactly
    /// as the reference decoder (same variant, same reason) or gives the same events.
    #[test]
    fn decode_into_errs_exactly_as_the_reference_decoder_on_damaged_batches() {
        let events: Vec<Arc<Event>> = vec![Arc::new(sample()), nested_event(2, 1), Arc::new(sample())];
        let body = encode_batch(Encoding::Binary, 9, &events);
        let (mut errors, mut decoded) = (0, 0);
        let mut reasons = std::collections::BTreeSet::new();
        let mut tally = |result: Result<(u16, u64, Vec<Event>), DecodeError>| match result {
            Ok(_) => decoded += 1,
            Err(e) => {
                errors += 1;
                reasons.insert(match e {
                    DecodeError::Malformed { reason, .. } => reason.split(" (").next().unwrap().to_owned(),
                    other => other.to_string(),
                });
            }
        };
        for end in 0..body.len() {
            tally(decoded_both_ways(Encoding::Binary, &body[..end]));
        }
        for at in 0..body.len() {
            for byte in [0x00, 0x01, 0x0a, 0x0d, 0x7f, 0x80, 0xc3, 0xff, body[at].wrapping_add(1)] {
                let mut damaged = body.clone();
                damaged[at] = byte;
                tally(decoded_both_ways(Encoding::Binary, &damaged));
            }
        }
        // Both kinds of outcome were exercised (most damage is an error, some is a valid batch),
        // and every kind of error the reader raises.
        assert!(errors > body.len() && decoded > 0, "{errors} errors, {decoded} decoded");
        for reason in [
            "Found a bool that wasn't 0 or 1",
            "Found a varint that didn't terminate. Is the usize too big for this platform?",
            "Found an Option discriminant that wasn't 0 or 1",
            "Hit the end of buffer, expected more data",
            "Serde Deserialization Error",
            "Tried to parse invalid utf-8",
            "event 10", // an impossible value (its time's nanoseconds changed)
            "not a notify event batch",
            "version 0 does not exist",
        ] {
            assert!(reasons.contains(reason), "{reason}: {reasons:?}");
        }
    }

    /// A time or duration out of range refuses the whole message, naming the first such value
    /// (in message order) and its event, never the value; a parse error later in the message
    /// wins, as in the reference decoder.
    #[test]
    fn decode_into_refuses_impossible_values_as_the_reference_decoder() {
        // WireValue's positions up to Time (10); only Duration (5) and Time are written.
        #[derive(Serialize)]
        #[allow(dead_code)]
        enum Wire {
            Bool(bool),
            I64(i64),
            U64(u64),
            F64(f64),
            Str(String),
            Duration { secs: u64, nanos: u32 },
            Exception(String, String),
            Null,
            I128(i128),
            U128(u128),
            Time { secs: i64, nanos: u32 },
        }
        #[derive(Serialize)]
        struct Ev {
            name: &'static str,
            start_unix_ns: u64,
            end_unix_ns: u64,
            duration_ns: u64,
            id: u64,
            parent_id: Option<u64>,
            transaction_id: u64,
            trace_id: u128,
            outcome: WireOutcome,
            payload: Vec<(&'static str, Wire)>,
            cpu_time_ns: Option<u64>,
            allocations: Option<u64>,
        }
        let event = |id: u64, name: &'static str, payload: Vec<(&'static str, Wire)>| Ev {
            name,
            start_unix_ns: 1,
            end_unix_ns: 2,
            duration_ns: 1,
            id,
            parent_id: None,
            transaction_id: 1,
            trace_id: 5,
            outcome: WireOutcome::Completed,
            payload,
            cpu_time_ns: None,
            allocations: None,
        };
        let body = |events: Vec<Ev>| {
            let mut body = MAGIC.to_vec();
            postcard::to_io(&(WIRE_VERSION, 1_u64, events), &mut body).unwrap();
            body
        };
        let ok = body(vec![
            event(
                1,
                "a.b",
                vec![(
                    "d",
                    Wire::Duration {
                        secs: 1,
                        nanos: 999_999_999,
                    },
                )],
            ),
            event(2, "a.b", vec![("t", Wire::Time { secs: -1, nanos: 0 })]),
        ]);
        assert_eq!(decoded_both_ways(Encoding::Binary, &ok).unwrap().2.len(), 2);
        let bad = body(vec![
            event(1, "a.b", vec![("ok", Wire::U64(1))]),
            event(
                2,
                "a\nb",
                vec![
                    (
                        "t",
                        Wire::Time {
                            secs: 0,
                            nanos: 1_000_000_000,
                        },
                    ),
                    (
                        "d",
                        Wire::Duration {
                            secs: 0,
                            nanos: 1_000_000_000,
                        },
                    ),
                ],
            ),
            event(
                3,
                "c.d",
                vec![(
                    "d",
                    Wire::Duration {
                        secs: 0,
                        nanos: 2_000_000_000,
                    },
                )],
            ),
        ]);
        assert_eq!(
            decoded_both_ways(Encoding::Binary, &bad).unwrap_err(),
            DecodeError::Malformed {
                encoding: Encoding::Binary,
                reason: r"event 2 (a\nb): time with nanoseconds out of range (at most 999999999)".to_owned()
            }
        );
        // In a nested list and map: the same refusal.
        let nested = body(vec![event(
            7,
            "a.b",
            vec![
                ("ok", Wire::U64(1)),
                (
                    "d",
                    Wire::Duration {
                        secs: 0,
                        nanos: u32::MAX,
                    },
                ),
            ],
        )]);
        assert_eq!(
            decoded_both_ways(Encoding::Binary, &nested).unwrap_err(),
            DecodeError::Malformed {
                encoding: Encoding::Binary,
                reason: "event 7 (a.b): duration with nanoseconds out of range (at most 999999999)".to_owned()
            }
        );
        // Cut after the impossible value: the parse error is reported.
        let cut = &bad[..bad.len() - 3];
        assert_eq!(
            decoded_both_ways(Encoding::Binary, cut).unwrap_err(),
            DecodeError::Malformed {
                encoding: Encoding::Binary,
                reason: "Hit the end of buffer, expected more data".to_owned()
            }
        );
    }

    /// The word-at-a-time varint readers give the byte-by-byte reader's value, length and error
    /// for every length of varint, with and without bytes after it.
    #[test]
    fn varints_read_a_word_at_a_time_match_the_bytewise_reader() {
        fn reader(bytes: &[u8]) -> Reader<'_> {
            Reader {
                rest: bytes,
                names: Recent::new(),
                keys: Recent::new(),
            }
        }
        let mut u64s = vec![0, 1, 127, 128, u64::MAX, u64::MAX - 1, 1 << 63, (1 << 63) - 1];
        let mut u128s = vec![0, 1, u128::MAX, 1 << 127, u128::from(u64::MAX)];
        for shift in 0..128 {
            u128s.push(1 << shift);
            u128s.push((1 << shift) - 1);
            u128s.push(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c834_u128.rotate_left(shift));
            if shift < 64 {
                u64s.push(1 << shift);
                u64s.push((1 << shift) - 1);
                u64s.push(0x9e37_79b9_7f4a_7c15_u64.rotate_left(shift));
            }
        }
        for tail in [&[][..], &[0xff; 24][..], &[0; 24][..]] {
            for &v in &u64s {
                let mut bytes = postcard::to_stdvec(&v).unwrap();
                let len = bytes.len();
                bytes.extend_from_slice(tail);
                let (mut fast, mut slow) = (reader(&bytes), reader(&bytes));
                assert_eq!(fast.varint_u64().unwrap(), v);
                assert_eq!(slow.varint_u64_bytewise().unwrap(), v);
                assert_eq!(
                    (fast.rest.len(), slow.rest.len()),
                    (bytes.len() - len, bytes.len() - len)
                );
            }
            for &v in &u128s {
                let mut bytes = postcard::to_stdvec(&v).unwrap();
                let len = bytes.len();
                bytes.extend_from_slice(tail);
                let (mut fast, mut slow) = (reader(&bytes), reader(&bytes));
                assert_eq!(fast.varint_u128().unwrap(), v);
                assert_eq!(slow.varint_u128_bytewise().unwrap(), v);
                assert_eq!(
                    (fast.rest.len(), slow.rest.len()),
                    (bytes.len() - len, bytes.len() - len)
                );
            }
        }
        // Too long, or too large in the last byte: the bytewise reader's error either way.
        for last in 0..=0xff_u8 {
            for continued in [9, 18] {
                let mut bytes = vec![0xff; continued];
                bytes.push(last);
                bytes.extend_from_slice(&[0; 24]);
                let result = |v: Read<u128>| v.map_err(|e| e.reason());
                let fast = if continued == 9 {
                    result(reader(&bytes).varint_u64().map(u128::from))
                } else {
                    result(reader(&bytes).varint_u128())
                };
                let slow = if continued == 9 {
                    result(reader(&bytes).varint_u64_bytewise().map(u128::from))
                } else {
                    result(reader(&bytes).varint_u128_bytewise())
                };
                assert_eq!(fast, slow, "{continued} bytes then {last:#x}");
            }
        }
    }

    /// The varint writers write postcard's bytes for every length of varint.
    #[test]
    fn varints_are_written_as_postcard_writes_them() {
        for shift in 0..128 {
            for v in [
                1_u128 << shift,
                (1 << shift) - 1,
                0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c834_u128.rotate_left(shift),
                u128::MAX,
            ] {
                let mut hand = vec![7];
                put_varint_u128(&mut hand, v);
                assert_eq!(hand[1..], postcard::to_stdvec(&v).unwrap(), "{v:#x}");
                let v = v as u64;
                let mut hand = vec![7];
                put_varint_u64(&mut hand, v);
                assert_eq!(hand[1..], postcard::to_stdvec(&v).unwrap(), "{v:#x}");
            }
        }
    }

    /// The hand-written binary encoding is byte for byte what postcard writes for [`EventOut`].
    #[test]
    fn the_binary_encoding_is_postcards_byte_for_byte() {
        let now = std::time::Instant::now();
        let mut events = vec![
            Arc::new(sample()),
            nested_event(32, 0),
            nested_event(16, 16),
            nested_event(0, 32),
        ];
        for (i, value) in [
            Value::I64(i64::MIN),
            Value::I64(-1),
            Value::I64(i64::MAX),
            Value::U64(u64::MAX),
            Value::I128(i128::MAX),
            Value::I128(-1),
            Value::U128(0),
            Value::F64(f64::NAN),
            Value::F64(-0.0),
            Value::Bool(false),
            Value::Str("é".repeat(100).into()),
            Value::Duration(Duration::MAX),
            Value::Time(SystemTime::UNIX_EPOCH + Duration::new(1 << 40, 7)),
            Value::List(vec![]),
            Value::Map(Box::default()),
        ]
        .into_iter()
        .enumerate()
        {
            let event = Event::new(
                "values.test",
                now,
                now + Duration::from_nanos(i as u64),
                Payload::new().with("v", value),
            )
            .with_ids(
                EventId::new(u64::MAX - i as u64),
                None,
                TransactionId::new(i as u64 + 1),
            )
            .with_outcome(if i % 2 == 0 {
                Outcome::Cancelled
            } else {
                Outcome::Completed
            })
            .with_cpu_time(Some(Duration::from_nanos(1 << i)));
            events.push(Arc::new(event));
        }
        for event in &events {
            let out = EventOut::new(event);
            let mut hand = Vec::new();
            out.write_postcard(&mut hand);
            assert_eq!(hand, postcard::to_stdvec(&out).unwrap(), "{event:?}");
        }
        let body = encode_batch(Encoding::Binary, 3, &events);
        let (_, _, got) = decoded_both_ways(Encoding::Binary, &body).unwrap();
        assert_eq!(got.len(), events.len());
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
        body[2] = 3; // the version varint, after the magic
        let err = decode(Encoding::Binary, &body).unwrap_err();
        assert_eq!(err, DecodeError::UnsupportedVersion { found: 3, supported: 2 });
        assert!(
            err.to_string().contains("wire version 3, newer than the version 2"),
            "{err}"
        );
        let json = br#"{"version":7,"source":1,"events":[{"from":"the future"}]}"#;
        assert_eq!(
            decode(Encoding::Json, json).unwrap_err(),
            DecodeError::UnsupportedVersion { found: 7, supported: 2 }
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
