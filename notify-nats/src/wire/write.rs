//! The hand-written binary (postcard) writer: the bytes postcard writes for [`EventOut`], without
//! serde's layers.

use notify_core::{Payload, Value};

use super::envelope::WireOutcome;
use super::serde_form::EventOut;
use super::time::time_parts;
use super::variant;

impl EventOut<'_> {
    /// Appends the event's postcard encoding to `out`: the bytes `postcard::to_io(self, out)`
    /// writes (the round-trip and byte-equality tests compare the two), without serde's layers
    /// (about half the exporter's encoding instructions). [`TooDeep`] leaves `out` part-way.
    pub(super) fn write_postcard(&self, out: &mut Vec<u8>) -> Result<(), TooDeep> {
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
        put_payload(out, &mut WholeText, self.payload.0, 0)?;
        put_option_u64(out, self.cpu_time_ns);
        put_option_u64(out, self.allocations);
        Ok(())
    }
}

/// The low 56 bits of `value` spread into 8 groups of 7 bits, one a byte (the inverse of
/// [`packed_7`]); the high bit of each byte clear.
///
/// [`packed_7`]: super::read::packed_7
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
pub(super) fn put_varint_u64(out: &mut Vec<u8>, value: u64) {
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
pub(super) fn put_varint_u128(out: &mut Vec<u8>, value: u128) {
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

/// A payload value nests lists and maps deeper than [`Value::MAX_NESTING`] (an importer would
/// refuse its whole batch).
#[derive(Debug)]
pub(super) struct TooDeep;

/// How the text of a payload (keys, `Str` values, an exception's type and message) is written:
/// whole each time (version 2, as postcard writes a `str`: [`WholeText`]) or through the batch's
/// string table (version 3: [`StringTable`](super::v3::StringTable)). The rest of a payload is
/// written the same way by both versions ([`put_payload`]).
pub(super) trait TextOut {
    /// Appends `text`.
    fn put_text(&mut self, out: &mut Vec<u8>, text: &str);

    /// Appends static text (what [`TextOut::put_text`] appends; a string table finds static text
    /// by its address).
    fn put_static_text(&mut self, out: &mut Vec<u8>, text: &'static str) {
        self.put_text(out, text);
    }
}

/// Version 2's text: its length, then its bytes.
pub(super) struct WholeText;

impl TextOut for WholeText {
    #[inline(always)]
    fn put_text(&mut self, out: &mut Vec<u8>, text: &str) {
        put_str(out, text);
    }
}

/// A payload or map: its length, then each key and value ([`PayloadOut`] through postcard in
/// version 2); its values at `depth` (0 for an event's payload).
///
/// [`PayloadOut`]: super::serde_value::PayloadOut
pub(super) fn put_payload<T: TextOut>(
    out: &mut Vec<u8>,
    texts: &mut T,
    payload: &Payload,
    depth: usize,
) -> Result<(), TooDeep> {
    put_varint_u64(out, payload.len() as u64);
    for (key, value) in payload.entries() {
        match key.as_static() {
            Some(key) => texts.put_static_text(out, key),
            None => texts.put_text(out, key),
        }
        put_value(out, texts, value, depth)?;
    }
    Ok(())
}

/// A value as [`ValueOut`] writes it through postcard: its variant's position (one byte: there
/// are fewer than 128 variants), then its fields, its text through `texts`; a list or map at
/// `depth` [`Value::MAX_NESTING`] is [`TooDeep`] (as the readers refuse it).
///
/// [`ValueOut`]: super::serde_value::ValueOut
fn put_value<T: TextOut>(out: &mut Vec<u8>, texts: &mut T, value: &Value, depth: usize) -> Result<(), TooDeep> {
    let nested = || {
        if depth >= Value::MAX_NESTING {
            Err(TooDeep)
        } else {
            Ok(depth + 1)
        }
    };
    let zigzag_64 = |v: i64| ((v << 1) ^ (v >> 63)) as u64;
    let zigzag_128 = |v: i128| ((v << 1) ^ (v >> 127)) as u128;
    let tag = |out: &mut Vec<u8>, (index, _): (u32, &str)| {
        debug_assert!(index < 0x80, "a one-byte varint");
        out.push(index as u8);
    };
    match value {
        // The common kinds first.
        Value::Str(v) => {
            tag(out, variant::STR);
            match v.as_static() {
                Some(v) => texts.put_static_text(out, v),
                None => texts.put_text(out, v),
            }
        }
        Value::U64(v) => {
            tag(out, variant::U64);
            put_varint_u64(out, *v);
        }
        Value::I64(v) => {
            tag(out, variant::I64);
            put_varint_u64(out, zigzag_64(*v));
        }
        Value::Null => tag(out, variant::NULL),
        Value::Bool(v) => {
            tag(out, variant::BOOL);
            out.push(u8::from(*v));
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
            let depth = nested()?;
            tag(out, variant::LIST);
            put_varint_u64(out, items.len() as u64);
            for item in items {
                put_value(out, texts, item, depth)?;
            }
        }
        Value::Map(map) => {
            let depth = nested()?;
            tag(out, variant::MAP);
            put_payload(out, texts, map, depth)?;
        }
        Value::Exception { type_name, message } => {
            tag(out, variant::EXCEPTION);
            texts.put_text(out, type_name);
            texts.put_text(out, message);
        }
        // A variant added to notify-core after this wire version: its Display text (as ValueOut).
        other => {
            tag(out, variant::STR);
            texts.put_text(out, &other.to_string());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::tests::{decoded_both_ways, nested_event, sample};
    use crate::wire::{encode_batch, Encoding};
    use notify_core::context::TransactionId;
    use notify_core::event::{EventId, Outcome};
    use notify_core::Event;
    use std::sync::Arc;
    use std::time::{Duration, SystemTime};

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
            out.write_postcard(&mut hand).unwrap();
            assert_eq!(hand, postcard::to_stdvec(&out).unwrap(), "{event:?}");
        }
        let body = encode_batch(Encoding::Binary, 3, &events);
        let (_, _, got) = decoded_both_ways(Encoding::Binary, &body).unwrap();
        assert_eq!(got.len(), events.len());
    }
}
