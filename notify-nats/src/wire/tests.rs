//! Tests across the encoders and decoders, and the helpers the other modules' tests share.

use std::time::{Duration, SystemTime};

use notify_core::context::TransactionId;
use notify_core::event::{EventId, Outcome};
use notify_core::{Payload, Value};
use serde::Serialize;

use super::envelope::WireOutcome;
use super::serde_form::EventOut;
use super::serde_value::ValueOut;
use super::variant;
use super::*;

pub(super) fn sample() -> Event {
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

/// A batch of `events` in wire version 2 (binary; JSON batches are version 2 anyway).
pub(super) fn encode_v2(encoding: Encoding, source: u64, events: &[Arc<Event>]) -> Vec<u8> {
    let mut encoder = BatchEncoder::with_version(encoding, source, 2);
    for event in events {
        assert!(encoder.push(event, usize::MAX / 2).unwrap());
    }
    encoder.finish()
}

pub(super) fn assert_same(a: &Event, b: &Event) {
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
    assert_eq!(a.trace_state(), b.trace_state());
    assert_eq!(a.baggage(), b.baggage());
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

/// An event whose payload holds `"v"`: `lists` lists inside one another, then `maps` maps
/// (the innermost holding 1).
pub(super) fn nested_event(lists: usize, maps: usize) -> Arc<Event> {
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

/// A batch of `event` written without [`BatchEncoder`]'s checks (binary: version 2).
fn unchecked_batch(encoding: Encoding, event: &Event) -> Vec<u8> {
    let out = EventOut::new(event);
    match encoding {
        Encoding::Binary => {
            let mut body = MAGIC.to_vec();
            postcard::to_io(&(2_u16, 1_u64, 1_usize), &mut body).unwrap();
            postcard::to_io(&out, &mut body).unwrap();
            body
        }
        Encoding::Json => format!(
            "{{\"version\":{JSON_VERSION},\"source\":1,\"events\":[{}]}}",
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
    // a Value recurses as deep): 2 bytes per level in postcard (version 2; version 3: in v3.rs).
    let mut body = MAGIC.to_vec();
    postcard::to_io(&(2_u16, 1_u64, 1_usize), &mut body).unwrap();
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

/// What [`decode_into`] gives for `body`, as [`decode`] + [`EventIn::into_event`] would give
/// it: `(version, source, events)` or the error.
///
/// [`EventIn::into_event`]: super::serde_form::EventIn::into_event
pub(super) fn decoded_both_ways(encoding: Encoding, body: &[u8]) -> Result<(u16, u64, Vec<Event>), DecodeError> {
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
                // A zero event id (damage can write one) is no id: each reading draws a fresh one.
                let fresh = want.id == 0;
                let mut want = want.into_event();
                if fresh {
                    assert!(got.id().get() != 0 && got.id() != want.id());
                    let (parent, transaction) = (want.parent_id(), want.transaction_id());
                    want = want.with_ids(got.id(), parent, transaction);
                }
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

#[test]
fn batches_round_trip_in_both_encodings_and_both_binary_versions() {
    let events: Vec<Arc<Event>> = (0..3).map(|_| Arc::new(sample())).collect();
    for (encoding, version) in [
        (Encoding::Binary, WIRE_VERSION),
        (Encoding::Binary, 2),
        (Encoding::Json, 2),
    ] {
        let body = match version {
            2 => encode_v2(encoding, 0xfeed, &events),
            _ => encode_batch(encoding, 0xfeed, &events),
        };
        assert_eq!(Encoding::sniff(&body), encoding);
        let batch = decode(encoding, &body).unwrap();
        assert_eq!((batch.version, batch.source, batch.events.len()), (version, 0xfeed, 3));
        for (sent, got) in events.iter().zip(batch.events) {
            assert_eq!(got.end_unix_ns - got.start_unix_ns, 42_000);
            assert_same(sent, &got.into_event());
        }
    }
}

/// JSON batches say version 2 (their shape did not change in version 3), and one that says 3 is
/// read as the same shape.
#[test]
fn json_batches_say_version_2_and_are_read_saying_3() {
    let events = [Arc::new(sample())];
    let body = encode_batch(Encoding::Json, 5, &events);
    assert!(
        body.starts_with(b"{\"version\":2,"),
        "{}",
        String::from_utf8_lossy(&body)
    );
    let text = String::from_utf8(body)
        .unwrap()
        .replacen("\"version\":2", "\"version\":3", 1);
    let (version, source, got) = decoded_both_ways(Encoding::Json, text.as_bytes()).unwrap();
    assert_eq!((version, source, got.len()), (3, 5, 1));
    assert_same(&events[0], &got[0]);
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
    body[2] = 4; // the version varint, after the magic
    let err = decode(Encoding::Binary, &body).unwrap_err();
    assert_eq!(err, DecodeError::UnsupportedVersion { found: 4, supported: 3 });
    assert_eq!(decoded_both_ways(Encoding::Binary, &body).unwrap_err(), err);
    assert!(
        err.to_string().contains("wire version 4, newer than the version 3"),
        "{err}"
    );
    let json = br#"{"version":7,"source":1,"events":[{"from":"the future"}]}"#;
    assert_eq!(
        decode(Encoding::Json, json).unwrap_err(),
        DecodeError::UnsupportedVersion { found: 7, supported: 3 }
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
    // Named by the kind of body, not the header's `postcard` (version 3 is not postcard's).
    assert_eq!(
        decode(Encoding::Binary, b"no magic").unwrap_err().to_string(),
        "malformed event batch (binary encoding): not a notify event batch (no \"NB\" magic)"
    );
}
