//! The one-pass binary reader: a binary batch read straight into events, without serde.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use crate::intern::{intern, Recent};
use notify_core::escape::Escaped;
use notify_core::payload::Text;
use notify_core::{Event, Payload, Value};

use super::envelope::{Envelope, WireOutcome};
use super::nesting::too_deep;
use super::serde_form::{BatchIn, EventIn};
use super::time::time_from_parts;
use super::v3::{
    HAS_ALLOCATIONS, HAS_BAGGAGE, HAS_CPU_TIME, HAS_PARENT, HAS_TRACE, HAS_TRACE_STATE, MAX_TABLE_ENTRIES,
    MAX_TABLE_STRING, OUTCOME_MASK,
};
use super::variant::{self, VARIANTS};
use super::{check_version, decode, strip_magic, DecodeError, Encoding};

/// Decodes a batch into `out` (cleared first; its capacity is kept, so that an importer reuses
/// one buffer for every message) and returns its version and source: the same events and the
/// same errors as [`decode`] followed by [`EventIn::into_event`]. A binary batch is read in one
/// pass by [`Reader`], without serde and without intermediate copies: names, keys and text
/// values are read borrowed from `body` (version 3: through the batch's string table, each
/// table entry checked as UTF-8 once); names and keys are interned ([`crate::intern`]: shared
/// by every event, copied only beyond its budget), text values copied once (inline when short;
/// version 3: a long text the batch repeats is one `Arc` shared by its events);
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
    let body = strip_magic(body)?;
    let mut reader = Reader::new(body);
    let version = reader.varint_u16().map_err(|e| malformed(e.reason()))?;
    check_version(encoding, version)?;
    let mut impossible = None;
    let read = if version >= 3 {
        reader.batch_v3(out, &mut impossible)
    } else {
        // Version 1 events lack the last two fields (CPU time, allocations).
        reader.batch(version > 1, out, &mut impossible)
    };
    match read {
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

/// The reference decoder's reading of a binary batch of version 3 or later (`body` after its
/// magic; `version` already read and checked): the one-pass reader's, into [`EventIn`]s.
pub(super) fn decode_v3(body: &[u8]) -> Result<BatchIn, DecodeError> {
    let malformed = |reason: String| DecodeError::Malformed {
        encoding: Encoding::Binary,
        reason,
    };
    let mut reader = Reader::new(body);
    let version = reader.varint_u16().map_err(|e| malformed(e.reason()))?;
    let mut events = Vec::new();
    let mut impossible = None;
    let source = reader
        .batch_v3(&mut events, &mut impossible)
        .map_err(|e| malformed(e.reason()))?;
    match impossible {
        Some(reason) => Err(malformed(reason)),
        None => Ok(BatchIn {
            version,
            source,
            events,
        }),
    }
}

/// Where [`Reader::batch_v3`] puts each event read: [`decode_into`]'s events, or the reference
/// decoder's [`EventIn`]s.
trait Sink<'a> {
    /// Room for `n` more events (a modest number: `n` comes from the message).
    fn reserve(&mut self, n: usize);
    /// One event read but for its payload: its name (and interned form) and its other fields;
    /// returns its (empty) payload, which the reader fills where it lies (an `Event` is about
    /// 500 bytes, its payload most of them: built apart and moved in, it would be copied).
    fn put(&mut self, name: &'a str, interned: Option<&'static str>, envelope: Envelope) -> &mut Payload;
}

impl<'a> Sink<'a> for Vec<Event> {
    fn reserve(&mut self, n: usize) {
        Vec::reserve(self, n);
    }

    #[inline(always)]
    fn put(&mut self, name: &'a str, interned: Option<&'static str>, envelope: Envelope) -> &mut Payload {
        let name: Cow<'static, str> = match interned {
            Some(interned) => Cow::Borrowed(interned),
            None => Cow::Owned(name.to_owned()),
        };
        self.push(envelope.into_event(name, Payload::new()));
        self.last_mut().expect("pushed above").payload_mut()
    }
}

impl<'a> Sink<'a> for Vec<EventIn> {
    fn reserve(&mut self, n: usize) {
        Vec::reserve(self, n);
    }

    fn put(&mut self, name: &'a str, _: Option<&'static str>, envelope: Envelope) -> &mut Payload {
        self.push(EventIn::from_envelope(name.to_owned(), envelope, Payload::new()));
        &mut self.last_mut().expect("pushed above").payload
    }
}

/// Why [`Reader`] stopped: postcard's own error for the same bytes (what [`decode`] reports), or
/// the nesting limit.
#[derive(Debug)]
enum ReadError {
    Postcard(postcard::Error),
    TooDeep,
    /// Version 3's own checks: the reason.
    Other(String),
}

impl ReadError {
    /// The reason [`decode`] gives for the same bytes.
    fn reason(&self) -> String {
        match self {
            ReadError::Postcard(e) => e.to_string(),
            ReadError::TooDeep => too_deep(),
            ReadError::Other(reason) => reason.clone(),
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
pub(super) fn packed_7(word: u64) -> u64 {
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
    /// Version 3: text is read through the batch's string table.
    v3: bool,
    /// Version 3: the batch's string table.
    strings: Vec<Entry<'a>>,
}

/// An entry of a version 3 batch's string table.
struct Entry<'a> {
    text: &'a str,
    /// Its interned form once asked for (`None`: not yet; a name or key).
    interned: Option<Option<&'static str>>,
    /// For a text value too long to be stored inline, the `Arc` its values share (made at its
    /// first use as a value).
    shared: Option<Arc<str>>,
}

impl<'a> Reader<'a> {
    fn new(rest: &'a [u8]) -> Reader<'a> {
        Reader {
            rest,
            names: Recent::new(),
            keys: Recent::new(),
            v3: false,
            strings: Vec::new(),
        }
    }

    /// Version 3: a string reference (see the module documentation of [`super`]): the index of
    /// its table entry, or the new string when it did not join the table. A one-byte reference
    /// to an entry (the common case) is read inline.
    #[inline(always)]
    fn string_ref(&mut self) -> Read<Result<usize, &'a str>> {
        if let Some((&byte, rest)) = self.rest.split_first() {
            // 0 (a new string) wraps to usize::MAX: not an entry.
            let index = usize::from(byte).wrapping_sub(1);
            if byte < 0x80 && index < self.strings.len() {
                self.rest = rest;
                return Ok(Ok(index));
            }
        }
        self.string_ref_long()
    }

    /// [`Reader::string_ref`] past its fast path: a new string, a longer reference, an error.
    #[inline(never)]
    fn string_ref_long(&mut self) -> Read<Result<usize, &'a str>> {
        let reference = self.varint_u64()?;
        if reference == 0 {
            let text = self.str()?;
            if text.len() <= MAX_TABLE_STRING && self.strings.len() < MAX_TABLE_ENTRIES {
                self.strings.push(Entry {
                    text,
                    interned: None,
                    shared: None,
                });
                return Ok(Ok(self.strings.len() - 1));
            }
            return Ok(Err(text));
        }
        match usize::try_from(reference - 1) {
            Ok(index) if index < self.strings.len() => Ok(Ok(index)),
            _ => Err(ReadError::Other(format!(
                "string reference {reference} past the string table ({} entries)",
                self.strings.len()
            ))),
        }
    }

    /// A text value (a `Str`, an exception's type or message): through the string table in
    /// version 3, written in full before.
    #[inline(always)]
    fn text(&mut self) -> Read<&'a str> {
        if !self.v3 {
            return self.str();
        }
        Ok(match self.string_ref()? {
            Ok(index) => self.strings[index].text,
            Err(text) => text,
        })
    }

    /// A `Str` value's text, as [`Reader::text`]; a table entry too long to be stored inline is
    /// shared by every value of the batch that refers to it (one allocation, a reference count
    /// per value, where each value had a copy).
    #[inline(always)]
    fn text_value(&mut self) -> Read<Text> {
        if !self.v3 {
            return Ok(Text::new(self.str()?));
        }
        Ok(match self.string_ref()? {
            Ok(index) => {
                let Entry { text, shared, .. } = &mut self.strings[index];
                if text.len() <= Text::INLINE_CAPACITY {
                    Text::new(text)
                } else {
                    Text::from(shared.get_or_insert_with(|| Arc::from(*text)).clone())
                }
            }
            Err(text) => Text::new(text),
        })
    }

    /// An event name (`key` false) or a payload key (`key` true) and its interned form: through
    /// the string table in version 3 (the process-wide table asked once per entry), else
    /// [`Reader::recent_str`].
    #[inline(always)]
    fn name_or_key(&mut self, key: bool) -> Read<(&'a str, Option<&'static str>)> {
        if !self.v3 {
            return self.recent_str(key);
        }
        Ok(match self.string_ref()? {
            Ok(index) => {
                let Entry { text, interned, .. } = &mut self.strings[index];
                (*text, *interned.get_or_insert_with(|| intern(text)))
            }
            // Not in the table (too long, or the table full): the process-wide table is asked
            // each time, unless the text is too long for it anyway.
            Err(text) if text.len() > crate::intern::MAX_LEN => (text, None),
            Err(text) => (text, intern(text)),
        })
    }

    /// 8 bytes, little-endian.
    #[inline]
    fn fixed_u64(&mut self) -> Read<u64> {
        let bytes = self.take(8)?;
        Ok(u64::from_le_bytes(bytes.try_into().expect("8 bytes")))
    }

    /// 16 bytes, little-endian.
    #[inline]
    fn fixed_u128(&mut self) -> Read<u128> {
        let bytes = self.take(16)?;
        Ok(u128::from_le_bytes(bytes.try_into().expect("16 bytes")))
    }

    /// Version 3: `{ source, count, events }` after the version; each event given to `out` as
    /// read; an error for bytes after the last event.
    fn batch_v3(&mut self, out: &mut impl Sink<'a>, impossible: &mut Option<String>) -> Read<u64> {
        self.v3 = true;
        let source = self.varint_u64()?;
        let count = self.len()?;
        // The count comes from the message: trusted for no more than a modest reservation.
        out.reserve(count.min(4_096));
        self.strings.reserve(count.min(64));
        let mut previous = (0_u64, None);
        for _ in 0..count {
            self.event_v3(&mut previous, out, impossible)?;
        }
        if !self.rest.is_empty() {
            return Err(ReadError::Other(format!(
                "{} bytes after the last event of the batch",
                self.rest.len()
            )));
        }
        Ok(source)
    }

    /// One version 3 event, given to `out`; `previous`: the previous event's start and trace id
    /// (what this one's are written relative to); the first impossible value of the batch goes
    /// to `impossible`, as in [`Reader::event`].
    #[inline(always)]
    fn event_v3(
        &mut self,
        previous: &mut (u64, Option<u128>),
        out: &mut impl Sink<'a>,
        impossible: &mut Option<String>,
    ) -> Read<()> {
        let (name, interned) = self.name_or_key(false)?;
        // Every bit of the flags has a meaning (bit 7, the baggage, was the last one free).
        let flags = self.byte()?;
        let outcome = match flags & OUTCOME_MASK {
            0 => WireOutcome::Completed,
            1 => WireOutcome::Panicked,
            2 => WireOutcome::Cancelled,
            _ => {
                return Err(ReadError::Other(
                    "event outcome 3 does not exist (0 to 2 known)".to_owned(),
                ))
            }
        };
        // Start: a delta from the previous event's, modulo 2^64.
        let start_unix_ns = previous.0.wrapping_add(self.i64()? as u64);
        let duration_ns = self.varint_u64()?;
        let id = self.fixed_u64()?;
        let parent_id = if flags & HAS_PARENT != 0 {
            Some(self.fixed_u64()?)
        } else {
            None
        };
        let transaction_id = self.varint_u64()?;
        let trace_id = if flags & HAS_TRACE != 0 {
            self.fixed_u128()?
        } else {
            previous.1.ok_or_else(|| {
                ReadError::Other(
                    "the first event of the batch has no trace id (flagged as the previous event's)".to_owned(),
                )
            })?
        };
        let cpu_time_ns = if flags & HAS_CPU_TIME != 0 {
            Some(self.varint_u64()?)
        } else {
            None
        };
        let allocations = if flags & HAS_ALLOCATIONS != 0 {
            Some(self.varint_u64()?)
        } else {
            None
        };
        let trace_state = if flags & HAS_TRACE_STATE != 0 {
            let text = self.text()?;
            text.parse::<notify_core::trace_context::TraceState>().map_err(|e| {
                ReadError::Other(format!("event {id}: tracestate {}: {e}", Escaped::truncated(text, 200)))
            })?
        } else {
            Default::default()
        };
        // Read as an incoming `baggage` header is (never an error): an invalid member is dropped
        // alone and counted (`trace_context::stats().baggage_members_dropped`).
        let baggage = if flags & HAS_BAGGAGE != 0 {
            notify_core::baggage::Baggage::from_values([self.text()?])
        } else {
            Default::default()
        };
        *previous = (start_unix_ns, Some(trace_id));
        let payload = out.put(
            name,
            interned,
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
                trace_state,
                baggage,
            },
        );
        let mut refused = None;
        self.payload_into(payload, 0, &mut refused)?;
        if let (Some(reason), None) = (refused, &impossible) {
            *impossible = Some(format!("event {id} ({}): {reason}", Escaped::truncated(name, 200)));
        }
        Ok(())
    }
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
    #[inline(always)]
    fn varint_u64(&mut self) -> Read<u64> {
        // One byte (most of version 3's varints: deltas, counts, string references), inline.
        if let Some((&byte, rest)) = self.rest.split_first() {
            if byte < 0x80 {
                self.rest = rest;
                return Ok(u64::from(byte));
            }
        }
        self.varint_u64_long()
    }

    /// [`Reader::varint_u64`] past its first byte's check.
    #[inline(never)]
    fn varint_u64_long(&mut self) -> Read<u64> {
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
    ///
    /// [`Tag`]: super::serde_value::Tag
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
    /// returned: an `Event` is about 500 bytes, and each move is a copy); the first impossible
    /// value of the batch goes to `impossible`, named as [`RawEvent::check`] names it.
    ///
    /// [`EventOut`]: super::serde_form::EventOut
    /// [`RawEvent::check`]: super::serde_form::RawEvent::check
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
                trace_state: Default::default(),
                baggage: Default::default(),
            }
            .into_event(name, payload),
        );
        Ok(())
    }

    /// A payload or map (a list of `(key, value)` pairs) built in place, its values at `depth`;
    /// a key given twice keeps its first position and its last value, as in [`payload_from`].
    ///
    /// [`payload_from`]: super::serde_value::payload_from
    fn payload(&mut self, depth: usize, refused: &mut Option<&'static str>) -> Read<Payload> {
        let mut payload = Payload::new();
        self.payload_into(&mut payload, depth, refused)?;
        Ok(payload)
    }

    /// [`Reader::payload`] into `payload` (empty), where it lies: a version 3 event's.
    #[inline]
    fn payload_into(&mut self, payload: &mut Payload, depth: usize, refused: &mut Option<&'static str>) -> Read<()> {
        for _ in 0..self.len()? {
            let (key, interned) = self.name_or_key(true)?;
            let value = self.value(depth, refused)?;
            match interned {
                Some(interned) => payload.insert(interned, value),
                None => payload.insert(key.to_owned(), value),
            };
        }
        Ok(())
    }

    /// A payload value at `depth` (a list or map at [`Value::MAX_NESTING`] is refused before its
    /// items are read, as [`WireSeed`] refuses it), straight into a [`Value`]: what [`WireSeed`]
    /// then [`WireValue::into_value`] make of the same bytes. An impossible time or duration
    /// stands as `Null` (never seen: the message is refused) and its reason goes to `refused`
    /// if none is there yet.
    ///
    /// [`WireSeed`]: super::serde_value::WireSeed
    /// [`WireValue::into_value`]: super::serde_value::WireValue::into_value
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
            i if i == variant::STR.0 => Value::Str(self.text_value()?),
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
                let type_name = self.text()?.to_owned();
                let message = self.text()?.to_owned();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::tests::{assert_same, decoded_both_ways, encode_v2, nested_event, sample};
    use crate::wire::{encode_batch, MAGIC, WIRE_VERSION};
    use serde::Serialize;

    /// Version 3: a long text value the batch repeats is one allocation shared by its events;
    /// short text stays inline, and text met once is the only holder of its `Arc`.
    #[test]
    fn a_long_text_repeated_in_a_batch_is_shared_by_its_events() {
        let now = std::time::Instant::now();
        let sql = "SELECT id, title FROM books WHERE author = ?1 ORDER BY year".to_owned();
        let event = |sql: &str| {
            Arc::new(Event::new(
                "query.sql",
                now,
                now,
                Payload::new().with("sql", sql).with("short", "abc"),
            ))
        };
        let other = "x".repeat(Text::INLINE_CAPACITY + 1);
        let events = [event(&sql), event(&sql), event(&other), event(&sql)];
        let body = encode_batch(Encoding::Binary, 1, &events);
        let mut got = Vec::new();
        decode_into(Encoding::Binary, &body, &mut got).unwrap();
        let text = |i: usize, key: &str| match got[i].payload().get(key) {
            Some(Value::Str(text)) => text,
            other => panic!("{other:?}"),
        };
        let pointer = |i: usize, key: &str| text(i, key).as_ptr();
        assert_eq!(
            (pointer(0, "sql"), pointer(1, "sql")),
            (pointer(3, "sql"), pointer(3, "sql"))
        );
        assert_ne!(pointer(2, "sql"), pointer(0, "sql"));
        assert_eq!(
            (text(0, "sql").as_str(), text(2, "sql").as_str()),
            (sql.as_str(), other.as_str())
        );
        assert_ne!(
            pointer(0, "short"),
            pointer(1, "short"),
            "short text is inline in each event"
        );
        assert_eq!(text(1, "short"), "abc");
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
        for (encoding, version) in [
            (Encoding::Binary, WIRE_VERSION),
            (Encoding::Binary, 2),
            (Encoding::Json, 2),
        ] {
            for events in [&mixed[..], &mixed[..1], &[]] {
                let body = match version {
                    2 => encode_v2(encoding, 0xfeed, events),
                    _ => encode_batch(encoding, 0xfeed, events),
                };
                let (got_version, source, got) = decoded_both_ways(encoding, &body).unwrap();
                assert_eq!((got_version, source, got.len()), (version, 0xfeed, events.len()));
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
        for body in [
            encode_batch(Encoding::Binary, 1, std::slice::from_ref(&texts)),
            encode_v2(Encoding::Binary, 1, std::slice::from_ref(&texts)),
        ] {
            let (_, _, got) = decoded_both_ways(Encoding::Binary, &body).unwrap();
            assert_eq!(got[0].payload(), texts.payload());
            assert_eq!(got[0].payload().keys().collect::<Vec<_>>(), ["short", "long"]);
        }
        // Keys are interned (shared, not copied per event); a key past the length limit is copied.
        let long_key = "k".repeat(crate::intern::MAX_LEN + 1);
        let keys = Arc::new(Event::new(
            "keys.test",
            now,
            now,
            Payload::new().with("rows", 1_u64).with(long_key.clone(), 2_u64),
        ));
        for body in [
            encode_batch(Encoding::Binary, 1, &[keys.clone(), keys.clone()]),
            encode_v2(Encoding::Binary, 1, &[keys.clone(), keys.clone()]),
        ] {
            let (_, _, got) = decoded_both_ways(Encoding::Binary, &body).unwrap();
            for event in &got {
                let statics: Vec<_> = event.payload().entries().map(|(key, _)| key.as_static()).collect();
                assert_eq!(statics, [Some("rows"), None]);
            }
        }
    }

    /// Every prefix of a version 2 batch and every byte of it changed: the one-pass decoder
    /// errs exactly as the reference decoder (same variant, same reason) or gives the same
    /// events. (Version 3: `v3.rs`.)
    #[test]
    fn decode_into_errs_exactly_as_the_reference_decoder_on_damaged_batches() {
        let events: Vec<Arc<Event>> = vec![Arc::new(sample()), nested_event(2, 1), Arc::new(sample())];
        let body = encode_v2(Encoding::Binary, 9, &events);
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
            postcard::to_io(&(2_u16, 1_u64, events), &mut body).unwrap();
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
            Reader::new(bytes)
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
}
