//! Issue 48 item 3: each latency bucket of a name links to a recent trace in it, and the trace
//! view opens there (the event open and in view). Only traces the page holds are linked: head
//! sampling and tail sampling are respected.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use notify_core::export::Sampler;
use notify_core::{Event, Notifier, Pattern, Payload};
use notify_export::{Collector, TailSampling};
use notify_web::{render_index, render_trace, stats_json, TraceRecorder, WebOptions, WebServer, LATENCY_BUCKETS_NS};

/// A root event of `name` that took `duration` and ended now (in the statistics' window).
fn root(name: &'static str, duration: Duration) -> Event {
    let end = Instant::now();
    Event::new(name, end.checked_sub(duration).unwrap(), end, Payload::new())
}

fn get(addr: SocketAddr, target: &str) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(stream, "GET {target} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    assert!(head.contains(" 200 "), "{target}: {head}");
    body.to_owned()
}

#[test]
fn i48_3_each_bucket_links_to_the_newest_held_trace_in_it() {
    let recorder = TraceRecorder::new(WebOptions::new());
    let fast = root("query.sql", Duration::from_micros(3));
    let older = root("query.sql", Duration::from_millis(40));
    let newer = root("query.sql", Duration::from_millis(41));
    let slow = root("query.sql", Duration::from_secs(20));
    let other = root("render.template", Duration::from_millis(40));
    for event in [&fast, &older, &newer, &slow, &other] {
        recorder.record(event);
    }

    let json: serde_json::Value = serde_json::from_str(&stats_json(&recorder)).unwrap();
    let sql = json["names"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == "query.sql")
        .unwrap();
    let link = |event: &Event| serde_json::json!([event.trace_id().to_string(), event.id().to_string()]);
    let buckets: Vec<serde_json::Value> = sql["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| serde_json::json!([b["le_ns"], b["count"], [b["trace_id"], b["event_id"]]]))
        .collect();
    assert_eq!(
        buckets,
        [
            serde_json::json!([5_000, 1, link(&fast)]),
            serde_json::json!([50_000_000, 2, link(&newer)]),
            serde_json::json!([null, 1, link(&slow)]),
        ]
    );
    assert_eq!(LATENCY_BUCKETS_NS.first(), Some(&1_000));
    assert_eq!(LATENCY_BUCKETS_NS.last(), Some(&10_000_000_000));

    // The page: one link per bucket, to the trace with the event open and scrolled to.
    let html = render_index(&recorder);
    let href = format!("/trace/{}?open={}#event-{}", newer.trace_id(), newer.id(), newer.id());
    assert!(
        html.contains(&format!(
            "<a class=\"bucket\" href=\"{href}\" title=\"a recent trace in this bucket\">≤ 50.00 ms · 2</a>"
        )),
        "{html}"
    );
    assert!(html.contains(&format!("href=\"/trace/{}?open={}", fast.trace_id(), fast.id())));
    assert!(html.contains("> 10.00 s · 1</a>"), "{html}");
    // A bucket of another name links to that name's event, not query.sql's.
    assert!(html.contains(&format!("href=\"/trace/{}?open=", other.trace_id())));
    // What the link opens: that trace, that event open.
    let view = render_trace(&recorder.trace(newer.trace_id()).unwrap(), Some(newer.id()));
    assert!(
        view.contains(&format!("<details class=\"event\" id=\"event-{}\"", newer.id())),
        "{view}"
    );
    assert!(view.contains(" open>"), "{view}");
}

/// Over HTTP: `/api/stats` carries the links and the link serves the trace.
#[test]
fn i48_3_the_served_link_opens_the_trace_view() {
    let recorder = TraceRecorder::new(WebOptions::new());
    let event = root("request.http", Duration::from_millis(3));
    recorder.record(&event);
    let server = WebServer::start("127.0.0.1:0", recorder).unwrap();
    let stats: serde_json::Value = serde_json::from_str(&get(server.local_addr(), "/api/stats")).unwrap();
    let bucket = &stats["names"][0]["buckets"][0];
    assert_eq!(bucket["le_ns"], 5_000_000);
    assert_eq!(bucket["trace_id"], event.trace_id().to_string());
    let index = get(server.local_addr(), "/");
    let start = index.find("<a class=\"bucket\" href=\"").unwrap() + "<a class=\"bucket\" href=\"".len();
    let href = &index[start..start + index[start..].find('"').unwrap()];
    let (path, _fragment) = href.split_once('#').unwrap();
    let view = get(server.local_addr(), path);
    assert!(view.contains("<h1 id=\"trace-title\">request.http</h1>"), "{view}");
    assert!(view.contains(&format!("id=\"event-{}\"", event.id())), "{view}");
}

/// Head sampling: unsampled traces are neither counted on the page nor linked.
#[test]
fn i48_3_buckets_link_only_sampled_traces() {
    let notifier = Notifier::new();
    let recorder = TraceRecorder::new(WebOptions::new());
    let live = recorder.subscribe(&notifier, Pattern::all());
    notifier.set_sampler(Sampler::ratio(0.0));
    for _ in 0..10 {
        notifier.instrument("request.app", Payload::new, |_| ());
    }
    notifier.set_sampler(Sampler::always());
    let kept = notifier.instrument("request.app", Payload::new, |_| {
        notify_core::Context::current().trace_id().unwrap()
    });
    live.force_flush(Duration::from_secs(10)).unwrap();
    let json: serde_json::Value = serde_json::from_str(&stats_json(&recorder)).unwrap();
    let buckets = json["names"][0]["buckets"].as_array().unwrap();
    let counted: u64 = buckets.iter().map(|b| b["count"].as_u64().unwrap()).sum();
    assert_eq!(counted, 1);
    assert_eq!(buckets[0]["trace_id"], kept.to_string());
}

/// Tail sampling: every event is counted, but a bucket links only to a trace the stage kept;
/// a bucket whose traces were all dropped has a count and no link.
#[test]
fn i48_3_buckets_link_only_traces_tail_sampling_kept() {
    let options = WebOptions::new().tail_sampling(TailSampling::new().slower_than(Duration::from_millis(30)));
    let recorder = TraceRecorder::new(options);
    // Through the recorder's sink on a collector: tail sampling is a collector's.
    let collector = Collector::builder("buckets", recorder.sink()).build();
    let fast = root("request.app", Duration::from_micros(20));
    let slow = root("request.app", Duration::from_millis(40));
    collector.push(&Arc::new(fast));
    collector.push(&Arc::new(slow.clone()));
    collector.force_flush(Duration::from_secs(10)).unwrap();
    let json: serde_json::Value = serde_json::from_str(&stats_json(&recorder)).unwrap();
    let buckets = json["names"][0]["buckets"].as_array().unwrap();
    assert_eq!(buckets.len(), 2);
    assert_eq!(
        (buckets[0]["le_ns"].as_u64(), buckets[0]["count"].as_u64()),
        (Some(25_000), Some(1))
    );
    assert!(
        buckets[0]["trace_id"].is_null() && buckets[0]["event_id"].is_null(),
        "{buckets:?}"
    );
    assert_eq!(buckets[1]["trace_id"], slow.trace_id().to_string());
    let html = render_index(&recorder);
    assert!(
        html.contains("<span class=\"bucket muted\">≤ 25.0 µs · 1</span>"),
        "{html}"
    );
}
