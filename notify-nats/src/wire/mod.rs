//! The wire format: a batch of events of one name, versioned, encoded with postcard (compact
//! binary, the default) or JSON (for humans and other languages).
//!
//! A binary batch starts with the magic bytes `NB`. A batch is `{ version, source, events }`: `version` first so that a reader can refuse a newer
//! format before decoding the rest, `source` the exporter's random 64-bit id (event ids are unique
//! per process only, so `(source, event id)` names an event across processes). Each event is the
//! envelope [`EventOut`]/[`EventIn`]: name, wall-clock start and end (ns since the Unix epoch),
//! duration (ns), event id, parent id, transaction id, trace id (128 bits), outcome, payload (a
//! list of key/value pairs, in order).
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
mod variant;
mod write;

pub(crate) use self::encoder::{BatchEncoder, PushError};
pub(crate) use self::read::decode_into;
pub(crate) use self::serde_form::decode;

/// The first bytes of a binary (postcard) batch: tells a notify batch from other traffic before
/// its version is read.
const MAGIC: &[u8; 2] = b"NB";

/// The newest wire-format version this crate writes and reads.
pub const WIRE_VERSION: u16 = 2;

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
