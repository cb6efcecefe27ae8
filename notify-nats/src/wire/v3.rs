//! Version 3 of the binary format, the writing side: compact batches (a per-batch string table,
//! time deltas, fixed-width ids, one flags byte per event). The layout is documented byte by
//! byte in the [module documentation](super); the reader is [`super::read`]'s.

use notify_core::Event;

use super::serde_form::{saturating_ns, unix_ns};
use super::write::{put_payload, put_varint_u64, TextOut, TooDeep};

/// The most strings a batch's string table holds; later new strings are written in full each
/// time.
pub(crate) const MAX_TABLE_ENTRIES: usize = 4_096;

/// The longest string, in bytes, that joins a batch's string table; longer ones are written in
/// full each time.
pub(crate) const MAX_TABLE_STRING: usize = 1_024;

/// Flags byte: the outcome (0 completed, 1 panicked, 2 cancelled) in bits 0-1.
pub(super) const OUTCOME_MASK: u8 = 0b11;
/// Flags byte: a parent id follows.
pub(super) const HAS_PARENT: u8 = 1 << 2;
/// Flags byte: a trace id follows (else: the previous event's).
pub(super) const HAS_TRACE: u8 = 1 << 3;
/// Flags byte: a CPU time follows.
pub(super) const HAS_CPU_TIME: u8 = 1 << 4;
/// Flags byte: an allocation count follows.
pub(super) const HAS_ALLOCATIONS: u8 = 1 << 5;
/// Flags byte: a W3C `tracestate` follows (a string reference), after the allocation count.
pub(super) const HAS_TRACE_STATE: u8 = 1 << 6;
/// Flags byte: a W3C baggage follows (a string reference, its `baggage` header form), after the
/// `tracestate`. The last bit of the byte: every bit now has a meaning (none is unknown to a
/// reader), so a further field needs another version.
pub(super) const HAS_BAGGAGE: u8 = 1 << 7;

/// Slots of [`StringTable`]'s index: twice the entries (a load of at most one half).
const SLOTS: usize = 2 * MAX_TABLE_ENTRIES;

/// Slots of [`StringTable`]'s cache of static text.
const STATICS: usize = 64;

/// An empty slot of [`StringTable`]'s cache of static text.
const NO_STATIC: (usize, usize, usize) = (0, 0, usize::MAX);

/// A batch's string table on the writing side: the strings written in full in the batch so far
/// (each at most [`MAX_TABLE_STRING`] bytes, at most [`MAX_TABLE_ENTRIES`] of them), found by
/// content through an open-addressed index. Entries point into the batch body itself (where each
/// string was written), so the table copies no text; a lookup hashes the string's length and its
/// first, middle and last 8 bytes, then compares contents (never a pointer: a string freed during
/// the batch may have its address reused by another).
pub(super) struct StringTable {
    /// Entry `i`: where its bytes are in the body, its length, and its slot in `slots`.
    entries: Vec<(usize, usize, usize)>,
    /// 0: empty; else an entry's index + 1. Allocated on the first insertion.
    slots: Vec<u16>,
    /// Static text (payload keys, `Str` values) met before: its address, its length, its entry
    /// (direct-mapped by address). Sound without comparing contents: static text is never freed
    /// nor changed, so its address and length name one text for the life of the process.
    statics: [(usize, usize, usize); STATICS],
    /// The entry of the last event name written (a batch is one name's events in practice);
    /// compared by content before use.
    last_name: Option<usize>,
}

/// A cheap hash of `bytes`: its length and (up to) its first, middle and last 8 bytes.
#[inline(always)]
fn hash(bytes: &[u8]) -> u64 {
    let n = bytes.len();
    let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
    let mixed = if n >= 8 {
        word(0) ^ word(n - 8).rotate_left(21) ^ word(n / 2 - 4).rotate_left(43)
    } else if n >= 4 {
        let half = |at: usize| u64::from(u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes")));
        half(0) | half(n - 4) << 32
    } else if n > 0 {
        u64::from(bytes[0]) | u64::from(bytes[n / 2]) << 8 | u64::from(bytes[n - 1]) << 16
    } else {
        0
    };
    (mixed ^ (n as u64).wrapping_mul(0xff51_afd7_ed55_8ccd)).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// The slot of `hash` in an index of [`SLOTS`] (a power of two).
#[inline(always)]
fn slot_of(hash: u64) -> usize {
    const BITS: u32 = SLOTS.trailing_zeros();
    (hash >> (64 - BITS)) as usize
}

impl StringTable {
    pub(super) fn new() -> StringTable {
        StringTable {
            entries: Vec::new(),
            slots: Vec::new(),
            statics: [NO_STATIC; STATICS],
            last_name: None,
        }
    }

    /// Number of entries.
    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Forgets every entry (a new batch).
    pub(super) fn clear(&mut self) {
        self.truncate(0);
    }

    /// Forgets the entries from `len` on (an event rolled back). Exact with linear probing: an
    /// entry whose probe sequence passed a removed slot was inserted after it, so it is removed
    /// too.
    pub(super) fn truncate(&mut self, len: usize) {
        if len >= self.entries.len() {
            return;
        }
        for &(_, _, slot) in &self.entries[len..] {
            self.slots[slot] = 0;
        }
        self.entries.truncate(len);
        // The caches must not name a forgotten entry (its index may be reused by another text).
        for cached in &mut self.statics {
            if cached.2 >= len {
                *cached = NO_STATIC;
            }
        }
        if self.last_name.is_some_and(|entry| entry >= len) {
            self.last_name = None;
        }
    }

    /// [`StringTable::put`] for an event name: the last name's entry is tried first.
    #[inline]
    pub(super) fn put_name(&mut self, body: &mut Vec<u8>, name: &str) {
        if let Some(entry) = self.last_name {
            let (at, len, _) = self.entries[entry];
            if len == name.len() && &body[at..at + len] == name.as_bytes() {
                return put_varint_u64(body, entry as u64 + 1);
            }
        }
        self.last_name = self.put(body, name);
    }

    /// [`StringTable::put`] for static text: found by its address first.
    #[inline]
    pub(super) fn put_static(&mut self, body: &mut Vec<u8>, text: &'static str) {
        let address = text.as_ptr() as usize;
        let slot = ((address as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - STATICS.trailing_zeros())) as usize;
        let (cached, len, entry) = self.statics[slot];
        if cached == address && len == text.len() && entry < self.entries.len() {
            return put_varint_u64(body, entry as u64 + 1);
        }
        if let Some(entry) = self.put(body, text) {
            self.statics[slot] = (address, text.len(), entry);
        }
    }

    /// Writes `text` into `body` as a string reference: the varint `index + 1` when the table
    /// holds it, else `0`, its length and its bytes (then it joins the table if it is short
    /// enough and the table not full). Returns its entry, if it has one.
    pub(super) fn put(&mut self, body: &mut Vec<u8>, text: &str) -> Option<usize> {
        let bytes = text.as_bytes();
        if bytes.len() > MAX_TABLE_STRING {
            put_new(body, bytes);
            return None;
        }
        if self.slots.is_empty() {
            self.slots = vec![0; SLOTS];
        }
        let mut slot = slot_of(hash(bytes));
        loop {
            match self.slots[slot] {
                0 => break,
                found => {
                    let (at, len, _) = self.entries[usize::from(found) - 1];
                    if len == bytes.len() && &body[at..at + len] == bytes {
                        put_varint_u64(body, u64::from(found));
                        return Some(usize::from(found) - 1);
                    }
                }
            }
            slot = (slot + 1) & (SLOTS - 1);
        }
        put_new(body, bytes);
        if self.entries.len() >= MAX_TABLE_ENTRIES {
            return None;
        }
        self.entries.push((body.len() - bytes.len(), bytes.len(), slot));
        self.slots[slot] = self.entries.len() as u16;
        Some(self.entries.len() - 1)
    }
}

/// A string written in full: reference 0, its length, its bytes.
#[inline(always)]
fn put_new(body: &mut Vec<u8>, bytes: &[u8]) {
    body.push(0);
    put_varint_u64(body, bytes.len() as u64);
    body.extend_from_slice(bytes);
}

/// What an event's encoding depends on from the events before it in the batch.
#[derive(Clone, Copy, Default)]
pub(super) struct Previous {
    /// Start of the previous event (ns since the Unix epoch; 0 before the first).
    pub(super) start_unix_ns: u64,
    /// Trace id of the previous event (`None` before the first).
    pub(super) trace_id: Option<u128>,
}

/// Appends `event`'s version 3 encoding to `body` (see the module documentation of
/// [`super`] for the layout), its strings through `table`; `baggage`: the `baggage` header form
/// of the event's baggage, when it has one and the exporter propagates it. On [`TooDeep`],
/// `body`, `table` and `previous` are left part-way: the caller takes the event back.
pub(super) fn put_event(
    body: &mut Vec<u8>,
    table: &mut StringTable,
    previous: &mut Previous,
    event: &Event,
    baggage: Option<&str>,
) -> Result<(), TooDeep> {
    table.put_name(body, event.name());
    let start = unix_ns(event.start_time());
    let duration = saturating_ns(event.duration());
    let trace_id = event.trace_id().get();
    let parent = event.parent_id();
    let cpu_time = event.cpu_time().map(saturating_ns);
    let allocations = event.allocations();
    let mut flags = match event.outcome() {
        notify_core::event::Outcome::Completed => 0,
        notify_core::event::Outcome::Panicked => 1,
        // Cancelled, and an outcome added to notify-core after this wire version (as version 2).
        _ => 2,
    };
    if parent.is_some() {
        flags |= HAS_PARENT;
    }
    let new_trace = previous.trace_id != Some(trace_id);
    if new_trace {
        flags |= HAS_TRACE;
    }
    if cpu_time.is_some() {
        flags |= HAS_CPU_TIME;
    }
    if allocations.is_some() {
        flags |= HAS_ALLOCATIONS;
    }
    let trace_state = event.trace_state();
    if !trace_state.is_empty() {
        flags |= HAS_TRACE_STATE;
    }
    if baggage.is_some() {
        flags |= HAS_BAGGAGE;
    }
    body.push(flags);
    let delta = start.wrapping_sub(previous.start_unix_ns) as i64;
    put_varint_u64(body, zigzag_64(delta));
    put_varint_u64(body, duration);
    body.extend_from_slice(&event.id().get().to_le_bytes());
    if let Some(parent) = parent {
        body.extend_from_slice(&parent.get().to_le_bytes());
    }
    put_varint_u64(body, event.transaction_id().get());
    if new_trace {
        body.extend_from_slice(&trace_id.to_le_bytes());
    }
    if let Some(cpu_time) = cpu_time {
        put_varint_u64(body, cpu_time);
    }
    if let Some(allocations) = allocations {
        put_varint_u64(body, allocations);
    }
    if !trace_state.is_empty() {
        table.put(body, trace_state.as_str());
    }
    if let Some(baggage) = baggage {
        table.put(body, baggage);
    }
    put_payload(body, table, event.payload(), 0)?;
    *previous = Previous {
        start_unix_ns: start,
        trace_id: Some(trace_id),
    };
    Ok(())
}

#[inline(always)]
fn zigzag_64(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

impl TextOut for StringTable {
    #[inline(always)]
    fn put_text(&mut self, out: &mut Vec<u8>, text: &str) {
        self.put(out, text);
    }

    #[inline(always)]
    fn put_static_text(&mut self, out: &mut Vec<u8>, text: &'static str) {
        self.put_static(out, text);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::sync::Arc;
    use std::time::{Duration, SystemTime};

    use notify_core::context::TransactionId;
    use notify_core::event::{EventId, Outcome};
    use notify_core::{Event, Payload, TraceId, Value};

    use super::*;
    use crate::wire::encoder::{BatchEncoder, PushError};
    use crate::wire::tests::{assert_same, decoded_both_ways, encode_v2, nested_event, sample};
    use crate::wire::variant;
    use crate::wire::{decode_batch, encode_batch, DecodeError, Encoding, MAGIC, WIRE_VERSION};

    const SQL: &str = "SELECT id, title FROM books WHERE author = ?1 ORDER BY year";

    /// The event of `benches/nats.rs` (`query.sql`, payload `sql` and `rows`), as the exporter
    /// sees it: a root event (a trace of its own), `seq` ~200 ns after the previous one.
    fn bench_event(seq: u64) -> Arc<Event> {
        let start = SystemTime::UNIX_EPOCH + Duration::from_nanos(1_764_547_200_000_000_000 + seq * 211);
        let payload = Payload::new()
            .with("sql", Value::from_static(SQL))
            .with("rows", seq % 50);
        Arc::new(
            Event::at_wall_clock("query.sql", start, Duration::from_nanos(95 + seq % 7), payload).with_ids(
                EventId::new(0x9e37_79b9_7f4a_7c15_u64.wrapping_mul(seq + 1)),
                None,
                TransactionId::new(3),
            ),
        )
    }

    /// Decodes `body` both ways (the public `decode_batch` and `decode_into`, and the reference
    /// decoder) and checks the events are `sent`.
    fn round_trip(sent: &[Arc<Event>], body: &[u8]) {
        let (version, source, got) = decoded_both_ways(Encoding::Binary, body).unwrap();
        assert_eq!((version, source, got.len()), (WIRE_VERSION, 0xfeed, sent.len()));
        for (sent, got) in sent.iter().zip(&got) {
            assert_same(sent, got);
        }
        let (source, public) = decode_batch(Encoding::Binary, body).unwrap();
        assert_eq!((source, public.len()), (0xfeed, sent.len()));
        for (sent, got) in sent.iter().zip(&public) {
            assert_same(sent, got);
        }
    }

    #[test]
    fn every_value_kind_nested_payloads_and_strings_round_trip() {
        let now = std::time::Instant::now();
        let long = "é".repeat(MAX_TABLE_STRING); // 2 KiB: never joins the table
        let mut events = vec![
            Arc::new(sample()),
            nested_event(32, 0),
            nested_event(16, 16),
            nested_event(0, 32),
        ];
        for (i, value) in [
            Value::I64(i64::MIN),
            Value::I64(-1),
            Value::U64(u64::MAX),
            Value::I128(i128::MIN),
            Value::U128(u128::MAX),
            Value::F64(-0.0),
            Value::Bool(false),
            Value::Str("".into()),
            Value::Str("short".into()),
            Value::Str(long.clone().into()),
            Value::Str(long.clone().into()),
            Value::Str("x".repeat(MAX_TABLE_STRING).into()),
            Value::Str("x".repeat(MAX_TABLE_STRING).into()),
            Value::Duration(Duration::MAX),
            Value::Time(SystemTime::UNIX_EPOCH + Duration::new(1 << 40, 7)),
            Value::Time(SystemTime::UNIX_EPOCH - Duration::new(1 << 20, 7)),
            Value::List(vec![Value::Str("short".into()), Value::Null, Value::List(vec![])]),
            Value::Map(Box::new(
                Payload::new().with("short", "short").with(long.clone(), 1_u64),
            )),
            Value::Exception {
                type_name: "io::Error".into(),
                message: "short".into(),
            },
        ]
        .into_iter()
        .enumerate()
        {
            // Times going back and forth, ids of every width, parents, traces shared and not.
            let start = now + Duration::from_millis(50) - Duration::from_micros((i as u64 * 7_919) % 100_000);
            let trace = TraceId::new(1 + (i as u128 / 3) * u128::from(u64::MAX)).unwrap();
            let event = Event::new(
                "values.test",
                start,
                start + Duration::from_nanos(i as u64),
                Payload::new().with("v", value),
            )
            .with_ids(
                EventId::new(u64::MAX - i as u64),
                (i % 2 == 0).then(|| EventId::new(1 << i)),
                TransactionId::new(i as u64 * 1_000_003),
            )
            .with_trace_id(trace)
            .with_outcome([Outcome::Completed, Outcome::Panicked, Outcome::Cancelled][i % 3])
            .with_cpu_time((i % 3 == 1).then(|| Duration::from_nanos(1 << i)))
            .with_allocations((i % 4 == 1).then_some(i as u64));
            events.push(Arc::new(event));
        }
        // A name of its own, a name too long for the table, the first name again.
        events.push(Arc::new(Event::new(
            long.clone(),
            now,
            now,
            Payload::new().with(long.clone(), long.as_str()),
        )));
        events.push(Arc::new(Event::new(
            long.clone(),
            now,
            now,
            Payload::new().with(long.clone(), long.as_str()),
        )));
        events.push(Arc::new(sample()));
        let body = encode_batch(Encoding::Binary, 0xfeed, &events);
        assert_eq!(body[2], 3, "version 3");
        round_trip(&events, &body);
        // Each event alone, and none.
        for event in &events {
            round_trip(
                std::slice::from_ref(event),
                &encode_batch(Encoding::Binary, 0xfeed, std::slice::from_ref(event)),
            );
        }
        round_trip(&[], &encode_batch(Encoding::Binary, 0xfeed, &[]));
    }

    #[test]
    fn many_events_with_repeated_and_distinct_strings_and_a_table_past_its_bound() {
        // 3 new strings per event (name, key, value) and a repeated one: the table fills up
        // (4,096 entries) after ~1,365 events; later strings are written in full, and the
        // strings of the table are still referenced.
        let now = std::time::Instant::now();
        let events: Vec<Arc<Event>> = (0..2_000)
            .map(|i| {
                let payload = Payload::new()
                    .with(format!("key.{i}"), format!("value {i}"))
                    .with("sql", SQL)
                    .with(format!("key.{}", i % 7), (i % 3 == 0).then_some(i));
                Arc::new(Event::new(format!("name.{}", i % 2_500), now, now, payload))
            })
            .collect();
        let body = encode_batch(Encoding::Binary, 0xfeed, &events);
        round_trip(&events, &body);
        let mut reader_side = Vec::new();
        crate::wire::decode_into(Encoding::Binary, &body, &mut reader_side).unwrap();
        // The same name repeated past the bound: new each time, the same text.
        let repeated: Vec<Arc<Event>> = (0..MAX_TABLE_ENTRIES + 10)
            .map(|i| {
                let name = if i < MAX_TABLE_ENTRIES {
                    format!("fill.{i}")
                } else {
                    "late.name".to_owned()
                };
                Arc::new(Event::new(name, now, now, Payload::new()))
            })
            .collect();
        let body = encode_batch(Encoding::Binary, 0xfeed, &repeated);
        round_trip(&repeated, &body);
        let late = body.windows(9).filter(|w| w == b"late.name").count();
        assert_eq!(late, 10, "a new string once the table is full is written each time");
    }

    /// The bench's event (`query.sql`, a 59-byte SQL statement, `rows`) in a batch of 1,000:
    /// 37.1 bytes each, 24 of them random ids (version 2: 135.2).
    #[test]
    fn the_bench_event_takes_under_40_bytes_in_a_batch_of_1000() {
        let events: Vec<Arc<Event>> = (0..1_000).map(bench_event).collect();
        let v3 = encode_batch(Encoding::Binary, 0xfeed, &events);
        let v2 = encode_v2(Encoding::Binary, 0xfeed, &events);
        round_trip(&events, &v3);
        let (v2_each, v3_each) = (v2.len() as f64 / 1_000.0, v3.len() as f64 / 1_000.0);
        println!("bench event in a batch of 1,000: version 2 {v2_each} bytes, version 3 {v3_each} bytes");
        assert!(v3_each < 40.0, "{v3_each} bytes per event (version 2: {v2_each})");
        assert!(v2_each > 130.0, "{v2_each}");
    }

    /// A batch of `events` with its header and events written by hand after `NB`, version 3,
    /// source 1, `count`.
    fn hand_batch(count: u8, events: &[u8]) -> Vec<u8> {
        let mut body = MAGIC.to_vec();
        body.extend_from_slice(&[3, 1, count]);
        body.extend_from_slice(events);
        body
    }

    /// One event by hand: `name` (a string reference's bytes), `flags`, start delta 2 (zigzag
    /// 1), duration 5, id 7, transaction 9, a trace id when `flags` says so (0x11 × 16), an
    /// empty payload.
    fn hand_event(name: &[u8], flags: u8) -> Vec<u8> {
        let mut event = name.to_vec();
        event.extend_from_slice(&[flags, 2, 5]);
        event.extend_from_slice(&7_u64.to_le_bytes());
        event.push(9);
        if flags & HAS_TRACE != 0 {
            event.extend_from_slice(&[0x11; 16]);
        }
        event.push(0);
        event
    }

    fn reason(body: &[u8]) -> String {
        match decoded_both_ways(Encoding::Binary, body) {
            Err(DecodeError::Malformed { reason, .. }) => reason,
            other => panic!("{other:?}"),
        }
    }

    /// Issue 45: an event's W3C tracestate crosses NATS in version 3 (flag 0x40, a string
    /// reference, written once per batch through the string table); an invalid one makes the
    /// batch malformed; versions 2 and JSON do not carry it.
    #[test]
    fn i45_2_the_tracestate_of_an_event_round_trips_in_version_3() {
        let state: notify_core::trace_context::TraceState = "rojo=00f067aa0ba902b7,acme@fw=1".parse().unwrap();
        let with = Arc::new(sample().with_trace_state(state.clone()));
        let events = vec![with.clone(), Arc::new(sample()), with.clone()];
        let v3 = encode_batch(Encoding::Binary, 0xfeed, &events);
        round_trip(&events, &v3);
        let (_, public) = decode_batch(Encoding::Binary, &v3).unwrap();
        assert_eq!(public[0].trace_state(), &state);
        assert!(public[1].trace_state().is_empty());
        let once = v3
            .windows(state.as_str().len())
            .filter(|w| *w == state.as_str().as_bytes())
            .count();
        assert_eq!(once, 1, "the second use is a string reference");
        let (_, v2) = decode_batch(Encoding::Binary, &encode_v2(Encoding::Binary, 0xfeed, &events)).unwrap();
        assert!(v2[0].trace_state().is_empty(), "version 2 does not carry it");
        // By hand: flag 0x40 then a string that is not a valid list.
        let mut bad = hand_event(&[0, 1, b'a'], HAS_TRACE | HAS_TRACE_STATE);
        let payload = bad.pop().unwrap();
        bad.extend_from_slice(&[0, 5]);
        bad.extend_from_slice(b"FOO=1");
        bad.push(payload);
        assert_eq!(
            reason(&hand_batch(1, &bad)),
            "event 7: tracestate FOO=1: tracestate member is not a valid key=value"
        );
    }

    /// Issue 45 item 3: an event's W3C baggage crosses NATS in version 3 (flag 0x80, its
    /// `baggage` header form as a string reference after the tracestate, written once per batch
    /// through the string table), only for events that have one; an encoder that does not
    /// propagate baggage writes batches byte for byte as for events without it; version 2 does
    /// not carry it. Read as an incoming `baggage` header: an invalid member is dropped alone and
    /// counted, not an error; text that is not UTF-8 is, as everywhere in a batch.
    #[test]
    fn i45_3_the_baggage_of_an_event_round_trips_in_version_3() {
        use notify_core::baggage::Baggage;
        let baggage: Baggage = "tenant=acme,user=Am%C3%A9lie;ttl=60,flag".parse().unwrap();
        assert_eq!(baggage.to_string(), "tenant=acme,user=Am%C3%A9lie;ttl=60");
        let with = Arc::new(sample().with_baggage(baggage.clone()));
        let both = Arc::new(
            sample()
                .with_trace_state("rojo=00f067aa0ba902b7".parse().unwrap())
                .with_baggage(baggage.clone()),
        );
        let events = vec![with.clone(), Arc::new(sample()), both, with.clone()];
        let v3 = encode_batch(Encoding::Binary, 0xfeed, &events);
        round_trip(&events, &v3);
        let (_, public) = decode_batch(Encoding::Binary, &v3).unwrap();
        let got: Vec<(String, String)> = public
            .iter()
            .map(|e| (e.trace_state().to_string(), e.baggage().to_string()))
            .collect();
        let text = baggage.to_string();
        let no = String::new;
        assert_eq!(
            got,
            [
                (no(), text.clone()),
                (no(), no()),
                ("rojo=00f067aa0ba902b7".to_owned(), text.clone()),
                (no(), text.clone())
            ]
        );
        assert_eq!(public[0].baggage().get("user"), Some("Amélie"));
        let once = v3.windows(text.len()).filter(|w| *w == text.as_bytes()).count();
        assert_eq!(once, 1, "later uses are string references");
        // Not propagated: as if the event had none, byte for byte.
        let mut off = BatchEncoder::new(Encoding::Binary, 0xfeed).propagate_baggage(false);
        assert!(off.push(&with, usize::MAX / 2).unwrap());
        let without = Arc::new((*with).clone().with_baggage(Baggage::new()));
        assert_eq!(off.finish(), encode_batch(Encoding::Binary, 0xfeed, &[without]));
        let (_, v2) = decode_batch(Encoding::Binary, &encode_v2(Encoding::Binary, 0xfeed, &events)).unwrap();
        assert!(v2[0].baggage().is_empty(), "version 2 does not carry it");
        // By hand: flag 0x80 then a baggage with an invalid member (a key with a space).
        let crafted = |text: &[u8]| {
            let mut event = hand_event(&[0, 1, b'a'], HAS_TRACE | HAS_BAGGAGE);
            let payload = event.pop().unwrap();
            event.push(0);
            event.push(u8::try_from(text.len()).unwrap());
            event.extend_from_slice(text);
            event.push(payload);
            hand_batch(1, &event)
        };
        let dropped = || notify_core::trace_context::stats().baggage_members_dropped;
        let before = dropped();
        let (_, _, got) = decoded_both_ways(Encoding::Binary, &crafted(b"a=1, bad key=2 ,b=%E2%82%AC")).unwrap();
        assert_eq!(got[0].baggage().to_string(), "a=1,b=%E2%82%AC");
        assert!(dropped() - before >= 2, "counted, once by each decoder");
        assert_eq!(reason(&crafted(b"a=\xff")), "Tried to parse invalid utf-8");
        assert_eq!(reason(&crafted(&[b'a', b'=', 0xff])), "Tried to parse invalid utf-8");
    }

    #[test]
    fn hand_written_batches_decode_and_their_errors_say_what_is_wrong() {
        let first = hand_event(&[0, 3, b'a', b'.', b'b'], HAS_TRACE);
        let second = hand_event(&[1], 0);
        let good = hand_batch(2, &[first.clone(), second.clone()].concat());
        let (_, _, got) = decoded_both_ways(Encoding::Binary, &good).unwrap();
        assert_eq!((got[1].name(), got[1].id().get()), ("a.b", 7));
        assert_eq!(got[1].trace_id(), got[0].trace_id(), "the previous event's trace id");
        assert_eq!(got[0].start_time(), SystemTime::UNIX_EPOCH + Duration::from_nanos(1));
        assert_eq!(got[1].start_time(), SystemTime::UNIX_EPOCH + Duration::from_nanos(2));

        let past = hand_batch(2, &[first.clone(), hand_event(&[2], 0)].concat());
        assert_eq!(reason(&past), "string reference 2 past the string table (1 entries)");
        let empty_table = hand_batch(1, &hand_event(&[1], HAS_TRACE));
        assert_eq!(
            reason(&empty_table),
            "string reference 1 past the string table (0 entries)"
        );
        let no_trace = hand_batch(1, &hand_event(&[0, 1, b'a'], 0));
        assert_eq!(
            reason(&no_trace),
            "the first event of the batch has no trace id (flagged as the previous event's)"
        );
        let mut trailing = good.clone();
        trailing.extend_from_slice(&[0, 0]);
        assert_eq!(reason(&trailing), "2 bytes after the last event of the batch");
        // Every flag bit has a meaning since bit 7 (the baggage): none is unknown.
        let all =
            OUTCOME_MASK | HAS_PARENT | HAS_TRACE | HAS_CPU_TIME | HAS_ALLOCATIONS | HAS_TRACE_STATE | HAS_BAGGAGE;
        assert_eq!(all, u8::MAX);
        let outcome = hand_batch(1, &hand_event(&[0, 1, b'a'], HAS_TRACE | 3));
        assert_eq!(reason(&outcome), "event outcome 3 does not exist (0 to 2 known)");
        let bad_utf8 = hand_batch(1, &hand_event(&[0, 1, 0xff], HAS_TRACE));
        assert_eq!(reason(&bad_utf8), "Tried to parse invalid utf-8");
        let truncated = &good[..good.len() - 1];
        assert_eq!(reason(truncated), "Hit the end of buffer, expected more data");
        // A count far beyond the bytes: an error at the end of the bytes, no huge allocation.
        let mut huge = MAGIC.to_vec();
        huge.extend_from_slice(&[3, 1, 0xff, 0xff, 0xff, 0xff, 0x0f]);
        huge.extend_from_slice(&first);
        assert_eq!(reason(&huge), "Hit the end of buffer, expected more data");
    }

    /// Issue 33's attack in version 3: 1,500 lists inside one another (2 bytes each).
    #[test]
    fn values_nested_past_the_limit_are_malformed() {
        let now = std::time::Instant::now();
        let event = Arc::new(Event::new("deep.test", now, now, Payload::new().with("v", 1_u64)));
        let mut body = encode_batch(Encoding::Binary, 1, &[event]);
        // The payload is the event's last field: "v" (new string) then U64 1.
        assert!(body.ends_with(&[1, 0, 1, b'v', variant::U64.0 as u8, 1]));
        body.truncate(body.len() - 2);
        for _ in 0..1_500 {
            body.extend_from_slice(&[variant::LIST.0 as u8, 1]);
        }
        body.push(variant::NULL.0 as u8);
        assert_eq!(reason(&body), "payload value nested deeper than 32 lists and maps");
    }

    /// Every prefix of a batch and every byte of it changed: an error with a reason or a valid
    /// batch, never a panic; both decoders agree (`decoded_both_ways`).
    #[test]
    fn damaged_batches_are_errors_or_valid_never_a_panic() {
        let mut events: Vec<Arc<Event>> = (0..3).map(bench_event).collect();
        events.push(Arc::new(sample()));
        events.push(nested_event(2, 1));
        events.push(Arc::new(sample()));
        let body = encode_batch(Encoding::Binary, 9, &events);
        let (mut errors, mut decoded) = (0, 0);
        let mut reasons = BTreeSet::new();
        let mut tally = |result: Result<(u16, u64, Vec<Event>), DecodeError>| match result {
            Ok(_) => decoded += 1,
            Err(e) => {
                errors += 1;
                reasons.insert(match e {
                    DecodeError::Malformed { reason, .. } => {
                        // Numbers left out: one reason per kind.
                        reason
                            .split(" (")
                            .next()
                            .unwrap()
                            .chars()
                            .filter(|c| !c.is_ascii_digit())
                            .collect()
                    }
                    other => other.to_string(),
                });
            }
        };
        for end in 0..body.len() {
            tally(decoded_both_ways(Encoding::Binary, &body[..end]));
        }
        for at in 0..body.len() {
            for byte in [0x00, 0x01, 0x02, 0x0a, 0x7f, 0x80, 0xc3, 0xff, body[at].wrapping_add(1)] {
                let mut damaged = body.clone();
                damaged[at] = byte;
                tally(decoded_both_ways(Encoding::Binary, &damaged));
            }
        }
        assert!(errors > body.len() && decoded > 0, "{errors} errors, {decoded} decoded");
        for reason in [
            "Found a bool that wasn't  or ",
            "Found a varint that didn't terminate. Is the usize too big for this platform?",
            "Hit the end of buffer, expected more data",
            "Serde Deserialization Error",
            "Tried to parse invalid utf-",
            "event ", // an impossible value
            "not a notify event batch",
            "string reference  past the string table",
            "the first event of the batch has no trace id",
            "event outcome  does not exist",
            " bytes after the last event of the batch",
            "version  does not exist",
        ] {
            assert!(reasons.contains(reason), "{reason}: {reasons:?}");
        }
    }

    /// The size limit holds for version 3 batches, and an event taken back (it did not fit)
    /// leaves no string in the table: the next event writes those strings in full.
    #[test]
    fn batches_respect_the_size_limit_and_events_taken_back_leave_no_string_behind() {
        let events: Vec<Arc<Event>> = (0..200).map(bench_event).collect();
        for max in [200, 1_000, 4_000] {
            let mut encoder = BatchEncoder::new(Encoding::Binary, 0xfeed);
            let mut sent = Vec::new();
            let mut bodies = Vec::new();
            for event in &events {
                if !encoder.push(event, max).unwrap() {
                    bodies.push((encoder.finish(), std::mem::take(&mut sent)));
                    assert!(encoder.push(event, max).unwrap());
                }
                sent.push(event.clone());
            }
            bodies.push((encoder.finish(), sent));
            for (body, sent) in &bodies {
                assert!(body.len() <= max, "{} > {max}", body.len());
                round_trip(sent, body);
            }
            assert!(bodies.len() > 200 * 30 / max, "{max}: {} batches", bodies.len());
        }
        // Too large alone: refused, and its strings (the name, "big", "k") not kept.
        let now = std::time::Instant::now();
        let event = |text: &str| {
            Arc::new(Event::new(
                "taken.back",
                now,
                now,
                Payload::new().with("big", text).with("k", "v"),
            ))
        };
        let mut encoder = BatchEncoder::new(Encoding::Binary, 0xfeed);
        assert!(matches!(encoder.push(&event(&"x".repeat(500)), 300), Err(PushError::TooLarge(n)) if n > 500));
        assert_eq!(encoder.len(), 0);
        let small = event("small");
        assert!(encoder.push(&small, 300).unwrap());
        round_trip(std::slice::from_ref(&small), &encoder.finish());
        // Not fitting beside others: the batch is full (`Ok(false)`), and its new string
        // ("y" × 200) is forgotten: "z", new after it, takes its table entry; a second "z" refers
        // to that entry.
        assert!(encoder.push(&small, 300).unwrap());
        assert!(!encoder.push(&event(&"y".repeat(200)), 300).unwrap());
        let sent = [small.clone(), event("z"), event("z")];
        assert!(encoder.push(&sent[1], 300).unwrap());
        assert!(encoder.push(&sent[2], 300).unwrap());
        let body = encoder.finish();
        // (A run of 16: two `y` bytes may stand in the random ids.)
        assert!(!body.windows(16).any(|w| w == [b'y'; 16]));
        round_trip(&sent, &body);
    }

    /// Version 2 is still written on request, and read.
    #[test]
    fn version_2_is_written_on_request_and_read() {
        let events: Vec<Arc<Event>> = vec![Arc::new(sample()), bench_event(1), bench_event(2)];
        let body = encode_v2(Encoding::Binary, 0xfeed, &events);
        assert_eq!(body[2], 2);
        let (version, source, got) = decoded_both_ways(Encoding::Binary, &body).unwrap();
        assert_eq!((version, source, got.len()), (2, 0xfeed, 3));
        for (sent, got) in events.iter().zip(&got) {
            assert_same(sent, got);
        }
    }

    #[test]
    fn the_string_table_finds_what_it_holds_and_forgets_what_is_truncated() {
        let mut table = StringTable::new();
        let mut body = Vec::new();
        let texts: Vec<String> = (0..100).map(|i| "t".repeat(i % 20) + &i.to_string()).collect();
        for text in &texts {
            table.put(&mut body, text);
        }
        assert_eq!(table.len(), 100);
        // The table refers to the bytes of the body it wrote into: written again, a reference.
        let mut appended = |table: &mut StringTable, text: &str| {
            let mark = body.len();
            table.put(&mut body, text);
            body[mark..].to_vec()
        };
        for (i, text) in texts.iter().enumerate() {
            let mut want = Vec::new();
            put_varint_u64(&mut want, i as u64 + 1);
            assert_eq!(appended(&mut table, text), want, "{text}");
        }
        table.truncate(50);
        assert_eq!(appended(&mut table, &texts[70])[0], 0, "forgotten: written in full");
        assert_eq!(appended(&mut table, &texts[70]), [51], "then the 51st entry");
        assert_eq!(appended(&mut table, &texts[10]), [11]);
        table.clear();
        assert_eq!(table.len(), 0);
        // The caches (static text by address, the last name) forget truncated entries: an
        // entry's index is reused by the next new text.
        for truncate in [false, true] {
            let mut table = StringTable::new();
            let mut body = Vec::new();
            let mut put = |table: &mut StringTable, f: &dyn Fn(&mut StringTable, &mut Vec<u8>)| {
                let mark = body.len();
                f(table, &mut body);
                body[mark..].to_vec()
            };
            assert_eq!(
                put(&mut table, &|t, b| t.put(b, "first").map_or((), drop)),
                [0, 5, b'f', b'i', b'r', b's', b't']
            );
            assert_eq!(
                put(&mut table, &|t, b| t.put_static(b, "static")),
                [0, 6, b's', b't', b'a', b't', b'i', b'c']
            );
            assert_eq!(
                put(&mut table, &|t, b| t.put_name(b, "name")),
                [0, 4, b'n', b'a', b'm', b'e']
            );
            assert_eq!(put(&mut table, &|t, b| t.put_static(b, "static")), [2]);
            assert_eq!(put(&mut table, &|t, b| t.put_name(b, &String::from("name"))), [3]);
            if truncate {
                table.truncate(1);
            } else {
                table.clear();
            }
            let kept = table.len();
            assert_eq!(put(&mut table, &|t, b| t.put(b, "other").map_or((), drop))[0], 0);
            assert_eq!(put(&mut table, &|t, b| t.put(b, "more").map_or((), drop))[0], 0);
            assert_eq!(
                put(&mut table, &|t, b| t.put_static(b, "static"))[0],
                0,
                "written in full again"
            );
            assert_eq!(
                put(&mut table, &|t, b| t.put_name(b, "name"))[0],
                0,
                "written in full again"
            );
            assert_eq!(table.len(), kept + 4);
        }
    }
}
