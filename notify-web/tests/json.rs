//! The JSON endpoints: each key once per object, exact shapes and values, wall-clock times as
//! strings that keep every nanosecond.

use std::collections::HashSet;
use std::fmt;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, SystemTime};

use notify_core::{context::TransactionId, event::EventId, Event, Payload, TraceId, Value};
use notify_web::{TraceRecorder, WebOptions, WebServer};
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

/// The body of `GET target` (HTTP/1.0, so the server closes the connection), which must be a 200
/// with JSON.
fn get_json(addr: SocketAddr, target: &str) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(stream, "GET {target} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    assert!(
        head.starts_with("HTTP/1.1 200") || head.starts_with("HTTP/1.0 200"),
        "{head}"
    );
    assert!(head.contains("Content-Type: application/json"), "{head}");
    body.to_owned()
}

/// Any JSON value, read only to check that no object in it has a key twice (serde_json's `Value`
/// keeps the last of duplicate keys silently, as JavaScript does).
struct UniqueKeys;

impl<'de> Deserialize<'de> for UniqueKeys {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<UniqueKeys, D::Error> {
        d.deserialize_any(UniqueKeysVisitor)
    }
}

struct UniqueKeysVisitor;

impl<'de> Visitor<'de> for UniqueKeysVisitor {
    type Value = UniqueKeys;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }

    fn visit_i64<E>(self, _: i64) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }

    fn visit_u64<E>(self, _: u64) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }

    fn visit_f64<E>(self, _: f64) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }

    fn visit_str<E>(self, _: &str) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }

    fn visit_unit<E>(self) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<UniqueKeys, A::Error> {
        while seq.next_element::<UniqueKeys>()?.is_some() {}
        Ok(UniqueKeys)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<UniqueKeys, A::Error> {
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                return Err(de::Error::custom(format_args!("duplicate key {key:?}")));
            }
            map.next_value::<UniqueKeys>()?;
        }
        Ok(UniqueKeys)
    }
}

/// Checks that `json` is valid JSON with no key twice in any object.
fn unique_keys(json: &str) -> Result<(), String> {
    serde_json::from_str::<UniqueKeys>(json)
        .map(drop)
        .map_err(|e| e.to_string())
}

#[derive(Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct SummaryJson {
    trace_id: String,
    root: Option<String>,
    start: Option<String>,
    duration_ns: u64,
    event_count: u64,
    dropped_events: u64,
    complete: bool,
    tracestate: Option<String>,
}

#[derive(Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct TraceJson {
    trace_id: String,
    root: Option<String>,
    start: Option<String>,
    duration_ns: u64,
    event_count: u64,
    dropped_events: u64,
    complete: bool,
    tracestate: Option<String>,
    events: Vec<EventJson>,
}

#[derive(Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct EventJson {
    name: String,
    id: String,
    parent_id: Option<String>,
    depth: u64,
    offset_ns: u64,
    duration_ns: u64,
    start: String,
    outcome: String,
    payload: Vec<(String, String)>,
    payload_truncated: bool,
}

/// The wall-clock time an RFC 3339 text stands for, read by notify-core's own event reader (an
/// independent check that the text keeps every nanosecond).
fn parse_time(text: &str) -> SystemTime {
    let event: Event = serde_json::from_value(serde_json::json!({
        "name": "t.parse", "start": text, "duration_ns": 0, "id": 1, "transaction_id": 1,
        "trace_id": "00000000000000000000000000000001",
    }))
    .unwrap();
    event.start_time()
}

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

#[test]
fn the_duplicate_key_check_finds_duplicates_at_any_depth() {
    assert_eq!(unique_keys(r#"{"a":[{"b":1,"c":{"b":2}}],"d":null}"#), Ok(()));
    assert_eq!(
        unique_keys(r#"{"events":2,"complete":true,"events":[]}"#),
        Err("duplicate key \"events\" at line 1 column 36".to_owned())
    );
    assert_eq!(
        unique_keys(r#"[{"x":{"y":1,"y":2}}]"#),
        Err("duplicate key \"y\" at line 1 column 16".to_owned())
    );
}

#[test]
fn api_trace_has_each_key_once_and_exact_values() {
    let recorder = TraceRecorder::new(WebOptions::new());
    // A whole second in the recent past (after this machine booted, so the monotonic start of an
    // event made from it is not clamped), with 123,456,789 ns: nanoseconds since 1970 above 2^53,
    // which a JSON number read as a double would not keep.
    let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap();
    let t0 = SystemTime::UNIX_EPOCH + Duration::new(now.as_secs() - 10, 123_456_789);
    let t0_ns = t0.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_nanos() as u64;
    assert!(t0_ns > 1 << 53);
    assert_ne!(
        t0_ns as f64 as u64, t0_ns,
        "a double would change this time's last digits"
    );
    let trace_id = TraceId::new(u128::from_str_radix(TRACE, 16).unwrap()).unwrap();
    let child_start = t0 + Duration::from_nanos(500);
    let child = Event::at_wall_clock(
        "query.sql",
        child_start,
        Duration::from_nanos(1_000),
        Payload::new().with("sql", "SELECT 1"),
    )
    .with_ids(EventId::new(8), Some(EventId::new(7)), TransactionId::new(1))
    .with_trace_id(trace_id);
    let root = Event::at_wall_clock(
        "request.app",
        t0,
        Duration::from_nanos(2_000),
        Payload::new().with("path", "/orders"),
    )
    .with_ids(EventId::new(7), None, TransactionId::new(1))
    .with_trace_id(trace_id)
    // Issue 45: the trace's W3C tracestate (the root's) is in the trace's JSON.
    .with_trace_state("congo=t61rcWkgMzE".parse().unwrap());
    recorder.record(&child);
    recorder.record(&root);
    let server = WebServer::start("127.0.0.1:0", recorder).unwrap();
    let addr = server.local_addr();

    let body = get_json(addr, &format!("/api/trace/{TRACE}"));
    assert_eq!(unique_keys(&body), Ok(()), "{body}");
    let trace: TraceJson = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
    let (t0_text, child_text) = (Value::Time(t0).to_string(), Value::Time(child_start).to_string());
    assert!(t0_text.ends_with(".123456789Z"), "{t0_text}");
    assert!(child_text.ends_with(".123457289Z"), "{child_text}");
    assert_eq!(
        trace,
        TraceJson {
            trace_id: TRACE.to_owned(),
            root: Some("request.app".to_owned()),
            start: Some(t0_text.clone()),
            duration_ns: 2_000,
            event_count: 2,
            dropped_events: 0,
            complete: true,
            tracestate: Some("congo=t61rcWkgMzE".to_owned()),
            events: vec![
                EventJson {
                    name: "request.app".to_owned(),
                    id: "0000000000000007".to_owned(),
                    parent_id: None,
                    depth: 0,
                    offset_ns: 0,
                    duration_ns: 2_000,
                    start: t0_text.clone(),
                    outcome: "completed".to_owned(),
                    payload: vec![("path".to_owned(), "/orders".to_owned())],
                    payload_truncated: false,
                },
                EventJson {
                    name: "query.sql".to_owned(),
                    id: "0000000000000008".to_owned(),
                    parent_id: Some("0000000000000007".to_owned()),
                    depth: 1,
                    offset_ns: 500,
                    duration_ns: 1_000,
                    start: child_text.clone(),
                    outcome: "completed".to_owned(),
                    payload: vec![("sql".to_owned(), "SELECT 1".to_owned())],
                    payload_truncated: false,
                },
            ],
        }
    );
    // The times come back to the nanosecond.
    assert_eq!(parse_time(trace.start.as_deref().unwrap()), t0);
    assert_eq!(parse_time(&trace.events[0].start), t0);
    assert_eq!(parse_time(&trace.events[1].start), child_start);

    let body = get_json(addr, "/api/traces");
    assert_eq!(unique_keys(&body), Ok(()), "{body}");
    let traces: Vec<SummaryJson> = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
    assert_eq!(
        traces,
        [SummaryJson {
            trace_id: TRACE.to_owned(),
            root: Some("request.app".to_owned()),
            start: Some(t0_text),
            duration_ns: 2_000,
            event_count: 2,
            dropped_events: 0,
            complete: true,
            tracestate: Some("congo=t61rcWkgMzE".to_owned()),
        }]
    );

    let body = get_json(addr, "/api/stats");
    assert_eq!(unique_keys(&body), Ok(()), "{body}");
    server.stop();
}

/// No integer in the JSON is above 2^53 (where JavaScript stops reading numbers exactly) for a
/// trace of events made now: wall-clock times are strings.
#[test]
fn no_json_number_is_above_2_pow_53() {
    let notifier = notify_core::Notifier::new();
    let recorder = TraceRecorder::new(WebOptions::new());
    let r = recorder.clone();
    let _s = notifier.subscribe(
        notify_core::Pattern::all(),
        notify_core::Subscriber::event(move |e: &Event| r.record(e)),
    );
    notifier.instrument("request.app", Payload::new, |_| {
        notifier.instrument("query.sql", || Payload::new().with("rows", 3_u64), |_| ());
    });
    let trace_id = recorder.traces()[0].trace_id();
    let server = WebServer::start("127.0.0.1:0", recorder).unwrap();
    let addr = server.local_addr();
    fn numbers(value: &serde_json::Value, out: &mut Vec<serde_json::Number>) {
        match value {
            serde_json::Value::Number(n) => out.push(n.clone()),
            serde_json::Value::Array(items) => items.iter().for_each(|v| numbers(v, out)),
            serde_json::Value::Object(map) => map.values().for_each(|v| numbers(v, out)),
            _ => (),
        }
    }
    for target in [
        "/api/traces".to_owned(),
        format!("/api/trace/{trace_id}"),
        "/api/stats".to_owned(),
    ] {
        let body = get_json(addr, &target);
        let mut found = Vec::new();
        numbers(&serde_json::from_str(&body).unwrap(), &mut found);
        assert!(!found.is_empty(), "{target}");
        for n in found {
            assert!(
                n.as_f64().is_some_and(|f| f.abs() <= (1_u64 << 53) as f64),
                "{target}: {n} is beyond 2^53: {body}"
            );
        }
    }
    server.stop();
}

/// Event ids are 64 bits (random span ids, W3C): above 2^53 a JSON number would change in
/// JavaScript, so they are written as 16 hex digits and come back exact.
#[test]
fn event_ids_above_2_pow_53_are_exact_hex_strings() {
    let recorder = TraceRecorder::new(WebOptions::new());
    let trace_id: TraceId = TRACE.parse().unwrap();
    let (parent, child) = (0xfedc_ba98_7654_3211_u64, 0x0020_0000_0000_0001_u64);
    let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_765_000_000);
    for (id, parent_id) in [(child, Some(parent)), (parent, None)] {
        let event = Event::at_wall_clock("e.app", t0, Duration::from_nanos(10), Payload::new())
            .with_ids(EventId::new(id), parent_id.map(EventId::new), TransactionId::new(1))
            .with_trace_id(trace_id);
        recorder.record(&event);
    }
    let server = WebServer::start("127.0.0.1:0", recorder).unwrap();
    let body = get_json(server.local_addr(), &format!("/api/trace/{TRACE}"));
    let trace: serde_json::Value = serde_json::from_str(&body).unwrap();
    let ids: Vec<(&str, Option<&str>)> = trace["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["id"].as_str().unwrap(), e["parent_id"].as_str()))
        .collect();
    assert_eq!(
        ids,
        [
            ("fedcba9876543211", None),
            ("0020000000000001", Some("fedcba9876543211"))
        ]
    );
    assert_eq!(u64::from_str_radix(ids[1].0, 16), Ok(child));
}

/// Issue 46, item 3: notify-core's `Serialize` refuses a payload value nested deeper than
/// `Value::MAX_NESTING` (32) lists and maps. The page never serializes a payload value: it keeps
/// each as text, written once when the event is stored by the value's bounded `Display` (32
/// levels, each deeper list or map as `…`). So such a value costs neither a panic nor the trace:
/// the event keeps its place with its value cut at the limit, marked `payload_truncated`, the
/// later entries kept, and the cut counted in `/api/stats` (`values_too_deep`).
#[test]
fn i46_3_a_payload_value_nested_deeper_than_32_is_cut_marked_and_counted_and_its_trace_kept() {
    let notifier = notify_core::Notifier::new();
    let recorder = TraceRecorder::new(WebOptions::new());
    let live = recorder.subscribe(&notifier, notify_core::Pattern::all());
    let mut deep = Value::U64(1);
    for _ in 0..40 {
        deep = Value::List(vec![deep]);
    }
    assert!(
        serde_json::to_string(&deep).is_err(),
        "the premise: Serialize refuses it"
    );
    let trace_id = notifier.instrument("request.app", Payload::new, |_| {
        notifier.instrument(
            "query.sql",
            || Payload::new().with("deep", deep.clone()).with("rows", 3_u64),
            |_| (),
        );
        notify_core::Context::current().trace_id().unwrap()
    });
    live.force_flush(Duration::from_secs(10)).unwrap();
    let server = WebServer::start("127.0.0.1:0", recorder.clone()).unwrap();
    let addr = server.local_addr();

    let body = get_json(addr, &format!("/api/trace/{trace_id}"));
    let trace: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (trace["event_count"].as_u64(), trace["complete"].as_bool()),
        (Some(2), Some(true))
    );
    let events = trace["events"].as_array().unwrap();
    assert_eq!(events[0]["name"], "request.app");
    assert_eq!(events[0]["payload_truncated"], false);
    let query = &events[1];
    assert_eq!(query["name"], "query.sql");
    let cut = format!("{}…{}", "[".repeat(32), "]".repeat(32));
    assert_eq!(query["payload"], serde_json::json!([["deep", cut], ["rows", "3"]]));
    assert_eq!(query["payload_truncated"], true);

    let stats: serde_json::Value = serde_json::from_str(&get_json(addr, "/api/stats")).unwrap();
    assert_eq!(stats["counts"]["values_too_deep"], 1);
    assert_eq!(stats["counts"]["events"], 2);
    assert_eq!(recorder.counts().values_too_deep, 1);

    // At the limit nothing is cut: 32 levels are written whole, nothing counted.
    let mut at_limit = Value::U64(1);
    for _ in 0..32 {
        at_limit = Value::List(vec![at_limit]);
    }
    notifier.instrument("limit.app", || Payload::new().with("v", at_limit), |_| ());
    live.shutdown(Duration::from_secs(10)).unwrap();
    let limit = recorder.traces()[0].clone();
    let event = &limit.events()[0];
    let whole = format!("{}1{}", "[".repeat(32), "]".repeat(32));
    assert_eq!(
        (event.payload().next(), event.is_truncated()),
        (Some(("v", whole.as_str())), false)
    );
    assert_eq!(recorder.counts().values_too_deep, 1);
    server.stop();
}
