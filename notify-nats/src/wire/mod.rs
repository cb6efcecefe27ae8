//! The wire format: a batch of events of one name, versioned, binary (the default) or JSON (for
//! humans and other languages).
//!
//! # Binary batches, version 3 (written by default)
//!
//! A binary batch starts with the magic bytes `NB`. Integers are LEB128 varints (7 bits a byte,
//! least significant group first, high bit set on every byte but the last; at most 10 bytes for a
//! 64-bit value, 19 for a 128-bit one, the last byte holding only the bits left) unless said
//! "fixed" (little-endian, that many bytes). A *zigzag* varint holds a signed value `v` as
//! `(v << 1) ^ (v >> 63)`. A *string* is a varint length in bytes, then that many bytes of UTF-8.
//!
//! ```text
//! batch  = "NB" version:varint(=3) source:varint count:varint event{count}    (nothing after)
//! event  = name:strref flags:u8 start_delta:zigzag duration:varint id:fixed8
//!          [parent:fixed8] transaction:varint [trace:fixed16] [cpu_time:varint]
//!          [allocations:varint] [tracestate:strref] [baggage:strref] payload
//! payload = len:varint (key:strref value){len}
//! value  = tag:varint fields (below)
//! strref = varint r: 0 = a new string follows (string); r > 0 = the string table's entry r - 1
//! ```
//!
//! * `source`: the exporter's random 64-bit id (event ids are unique per process only, so
//!   `(source, event id)` names an event across processes). `count`: the number of events.
//! * The **string table** is per batch and starts empty. A new string (`strref` 0) of at most
//!   1,024 bytes ([`v3::MAX_TABLE_STRING`]) joins it as the next entry while it holds fewer than
//!   4,096 entries ([`v3::MAX_TABLE_ENTRIES`]); a longer string, or any new string once it holds
//!   4,096, is read and not added (writers then write it in full each time). A reference `r` with
//!   `r - 1` not below the table's size is an error. Event names, payload and map keys, `Str`
//!   values and an exception's type and message are `strref`s, so a batch of one name's events
//!   writes its name, its keys and its repeated text once.
//! * `flags`: bits 0-1 the outcome (0 completed, 1 panicked, 2 cancelled; 3 is an error);
//!   bit 2 (`0x04`) a parent id follows; bit 3 (`0x08`) a trace id follows, else the event has
//!   the previous event's trace id (an error on the first event of a batch); bit 4 (`0x10`) a
//!   CPU time follows; bit 5 (`0x20`) an allocation count follows; bit 6 (`0x40`) the event's
//!   W3C `tracestate` follows (a valid list, else the batch is malformed); bit 7 (`0x80`) the
//!   W3C baggage current where the event finished follows (`Event::baggage`), in its `baggage`
//!   header form. The baggage is read as an incoming `baggage` header is, never an error: an
//!   invalid member is dropped alone and counted (notify-core's
//!   `trace_context::stats().baggage_members_dropped`), the rest of the event and the batch are
//!   kept. Readers before bit 6 (or bit 7) refuse a batch with it as unknown flags: exporters
//!   write each only for events that carry one (a `tracestate`; a non-empty baggage, unless
//!   `ExporterBuilder::propagate_baggage(false)`), so batches without them stay readable by
//!   them. Every bit is now used: a further field needs another version.
//! * `start_delta`: the start (wall clock, ns since the Unix epoch, a `u64`) minus the previous
//!   event's start (0 for the first event), modulo 2^64, as a zigzag `i64`. The end is the start
//!   plus `duration` (ns); it is not written (version 2 wrote both, always consistent).
//! * `id` and `parent` (event ids, random 64 bits) and `trace` (the 128-bit trace id; 0 means
//!   none, the reader gives the event a fresh one) are fixed-width: random bits do not shrink as
//!   varints. `transaction`: the transaction id. `cpu_time`: thread CPU time in ns.
//! * `tag` is the variant's position, then: 0 `Bool` (one byte, 0 or 1); 1 `I64` (zigzag);
//!   2 `U64` (varint); 3 `F64` (fixed8, IEEE 754 bits); 4 `Str` (strref); 5 `Duration` (secs
//!   varint, nanos varint below 10^9); 6 `Exception` (type strref, message strref); 7 `Null`;
//!   8 `I128` (zigzag over 128 bits); 9 `U128` (varint); 10 `Time` (secs since the epoch zigzag,
//!   nanos forward varint below 10^9); 11 `List` (len varint, values); 12 `Map` (a payload).
//!   Lists and maps nest at most [`Value::MAX_NESTING`](notify_core::Value::MAX_NESTING) deep.
//!   A key given twice keeps its first position and its last value.
//!
//! Anything else (a truncated batch, bytes after the last event, bad UTF-8, an unknown tag or
//! flag, a varint too long, a time or duration out of range, nesting too deep) is
//! [`DecodeError::Malformed`], with a reason, and nothing of the batch is published.
//!
//! # Versions 1 and 2 (still read; version 2 written on request)
//!
//! Version 2 is postcard's encoding of `{ version, source, events }` ([`EventOut`] / [`EventIn`]
//! field by field: name as a string, wall-clock start and end and duration as varints, event id
//! varint, parent id as an option, transaction id, trace id as a 128-bit varint, outcome, payload
//! as a list of key/value pairs with every string written in full, then CPU time and
//! allocations as options). Version 1 is version 2 without its last two fields and with the
//! value variants 0 to 6 (`Bool` to `Exception`) only. An exporter writes version 2 with
//! [`ExporterBuilder::wire_version`](crate::ExporterBuilder::wire_version) during a rolling
//! upgrade (an importer refuses a batch newer than it reads as
//! [`DecodeError::UnsupportedVersion`]).
//!
//! # JSON batches
//!
//! `{"version":2,"source":…,"events":[…]}`, each event an object of [`EventOut`]'s fields. JSON
//! batches keep version 2's shape and say version 2 ([`JSON_VERSION`]), so that importers of
//! version 2 read them; a JSON batch saying version 3 is read as the same shape. An event with
//! baggage (propagated, as in version 3) has one more field, `"baggage"`, its `baggage` header
//! form (read as in version 3); readers before it skip it. JSON batches carry no `tracestate`.
//!
//! [`EventOut`]: serde_form::EventOut
//! [`EventIn`]: serde_form::EventIn

use std::fmt;
use std::sync::Arc;

use notify_core::escape::Escaped;
use notify_core::Event;

mod encoder;
mod envelope;
mod json_reason;
mod nesting;
mod read;
mod serde_form;
mod serde_value;
#[cfg(test)]
mod tests;
mod time;
mod v3;
mod variant;
mod write;

pub(crate) use self::encoder::{BatchEncoder, PushError, WRITABLE_VERSIONS};
pub(crate) use self::read::decode_into;
pub(crate) use self::serde_form::decode;

/// The first bytes of a binary (postcard) batch: tells a notify batch from other traffic before
/// its version is read.
const MAGIC: &[u8; 2] = b"NB";

/// The newest wire-format version this crate writes and reads: binary batches of version 3
/// (compact: a per-batch string table, time deltas, fixed-width ids; the layout, byte by byte, is
/// the documentation of notify-nats' `src/wire/mod.rs`). Versions 1 and 2 are still read.
pub const WIRE_VERSION: u16 = 3;

/// The version JSON batches say: their shape is version 2's (version 3 changed the binary form
/// only), so importers of version 2 read them.
pub(crate) const JSON_VERSION: u16 = 2;

/// A binary batch without its [`MAGIC`]; an error when it does not start with it. Both decoders'
/// first step.
fn strip_magic(body: &[u8]) -> Result<&[u8], DecodeError> {
    body.strip_prefix(MAGIC).ok_or_else(|| DecodeError::Malformed {
        encoding: Encoding::Binary,
        reason: "not a notify event batch (no \"NB\" magic)".to_owned(),
    })
}

/// Refuses a batch `version` this crate cannot read (newer than [`WIRE_VERSION`], or 0), before
/// the rest is decoded. Both decoders' second step.
fn check_version(encoding: Encoding, version: u16) -> Result<(), DecodeError> {
    if version > WIRE_VERSION {
        return Err(DecodeError::UnsupportedVersion {
            found: version,
            supported: WIRE_VERSION,
        });
    }
    if version == 0 {
        return Err(DecodeError::Malformed {
            encoding,
            reason: "version 0 does not exist".to_owned(),
        });
    }
    Ok(())
}

/// How events are encoded on the wire.
///
/// ```
/// assert_eq!(notify_nats::Encoding::default(), notify_nats::Encoding::Binary);
/// assert_eq!(notify_nats::Encoding::Json.header_value(), "json");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Encoding {
    /// Compact binary (default): wire version 3, varints and a per-batch string table (an event
    /// name, payload keys and repeated text written once per batch); about 37 bytes per event of
    /// a batch of one name with a 2-entry payload. The `Notify-Encoding` header says `postcard`
    /// (versions 1 and 2 were postcard's encoding).
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
                // Not the header's `postcard`: version 3 batches have a layout of their own.
                match encoding {
                    Encoding::Binary => "binary",
                    Encoding::Json => "json",
                },
                Escaped::new(reason)
            ),
        }
    }
}

impl std::error::Error for DecodeError {}

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
/// Binary batches are written in version [`WIRE_VERSION`] (an exporter's
/// `ExporterBuilder::wire_version(2)` writes the previous one), JSON batches in version 2's shape.
/// Events' baggage is written, as an exporter writes it by default.
///
/// # Panics
///
/// If an event's payload nests lists and maps deeper than [`Value::MAX_NESTING`](notify_core::Value::MAX_NESTING) (an importer
/// would refuse the whole batch; an exporter refuses such an event alone and counts it).
pub fn encode_batch(encoding: Encoding, source: u64, events: &[Arc<Event>]) -> Vec<u8> {
    let mut encoder = BatchEncoder::new(encoding, source);
    for event in events {
        encoder.push(event, usize::MAX / 2).expect("events encode");
    }
    encoder.finish()
}
