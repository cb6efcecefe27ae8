//! TraceRecorder: traces grouped by trace id, bounds, memory, statistics.

use std::time::{Duration, Instant};

use notify_core::{event::EventId, Context, Event, Notifier, Payload, Subscriber, Subscription, TraceId};
use notify_web::{TraceRecorder, WebOptions};

/// Feeds `recorder` synchronously (deterministic tests); the collector path has its own test.
fn attach(notifier: &Notifier, recorder: &TraceRecorder) -> Subscription {
    let r = recorder.clone();
    notifier.subscribe(
        notify_core::Pattern::all(),
        Subscriber::event(move |e: &Event| r.record(e)),
    )
}

fn request(notifier: &Notifier, n: u64, queries: usize) {
    notifier.instrument(
        "request.app",
        || Payload::new().with("n", n),
        |_| {
            for q in 0..queries {
                notifier.instrument(
                    "query.sql",
                    || Payload::new().with("sql", "SELECT ?").with("q", q as u64),
                    |_| (),
                );
            }
        },
    );
}

#[test]
fn keeps_the_last_n_traces_newest_first_with_their_events_nested() {
    let notifier = Notifier::new();
    let recorder = TraceRecorder::new(WebOptions::new().traces(3));
    let _s = attach(&notifier, &recorder);
    for n in 0..5 {
        request(&notifier, n, 2);
    }
    let traces = recorder.traces();
    let roots: Vec<String> = traces
        .iter()
        .map(|t| t.root().unwrap().payload().next().unwrap().1.to_owned())
        .collect();
    assert_eq!(roots, ["4", "3", "2"]);
    for trace in &traces {
        assert!(trace.is_complete());
        let tree: Vec<(usize, &str)> = trace.tree().into_iter().map(|(d, e)| (d, e.name())).collect();
        assert_eq!(tree, [(0, "request.app"), (1, "query.sql"), (1, "query.sql")]);
        assert!(trace.events().iter().all(|e| e.start() >= trace.start().unwrap()));
        assert_eq!(recorder.trace(trace.trace_id()).unwrap().trace_id(), trace.trace_id());
    }
    let counts = recorder.counts();
    assert_eq!(
        (
            counts.events,
            counts.events_held,
            counts.pending_traces,
            counts.dropped_events
        ),
        (15, 9, 0, 0)
    );
}

#[test]
fn events_past_the_per_trace_limit_are_counted_not_kept() {
    let notifier = Notifier::new();
    let recorder = TraceRecorder::new(WebOptions::new().events_per_trace(4));
    let _s = attach(&notifier, &recorder);
    request(&notifier, 0, 10);
    let trace = &recorder.traces()[0];
    // The 10 queries finish first: 4 kept, 6 dropped, and the root is dropped too (11 events).
    assert_eq!(trace.events().len(), 4);
    assert_eq!(trace.dropped_events(), 7);
    assert!(trace.is_complete());
    assert_eq!(recorder.counts().dropped_events, 7);
}

#[test]
fn the_oldest_unfinished_trace_is_evicted_past_the_pending_limit() {
    let notifier = Notifier::new();
    let recorder = TraceRecorder::new(WebOptions::new().pending_traces(2));
    let _s = attach(&notifier, &recorder);
    // Three traces whose roots never finish: a child event under a remote parent (event 7) each.
    for t in 1..=3_u128 {
        Context::new(TraceId::new(t).unwrap(), Some(EventId::new(7))).in_scope(|| {
            notifier.instrument("child.app", Payload::new, |_| ());
        });
    }
    let counts = recorder.counts();
    assert_eq!(
        (counts.pending_traces, counts.evicted_traces, counts.dropped_events),
        (2, 1, 1)
    );
    assert!(recorder.traces().is_empty());
    assert!(
        recorder.trace(TraceId::new(1).unwrap()).is_none(),
        "the oldest was evicted"
    );
    let kept = recorder.trace(TraceId::new(3).unwrap()).unwrap();
    assert!(!kept.is_complete());
    assert_eq!(kept.events()[0].parent_id(), Some(EventId::new(7)));
}

#[test]
fn memory_stays_within_the_stated_bytes_per_event_and_payloads_are_cut() {
    let notifier = Notifier::new();
    let options = WebOptions::new().traces(2).payload_bytes(100);
    let per_event = options.bytes_per_event();
    let recorder = TraceRecorder::new(options);
    let _s = attach(&notifier, &recorder);
    let long = "é".repeat(500); // 1,000 bytes of two-byte characters
    for _ in 0..5 {
        notifier.instrument(
            "request.app",
            || Payload::new().with("body", long.clone()).with("after", 1_u64),
            |_| (),
        );
    }
    let counts = recorder.counts();
    assert_eq!(counts.events_held, 2);
    let trace_bytes = counts.memory_bytes - counts.stats_bytes;
    assert!(trace_bytes <= 2 * per_event, "{trace_bytes} > 2 * {per_event}");
    assert!(counts.stats_bytes > 0, "one name's statistics are counted");
    assert_eq!(recorder.memory_bytes(), counts.memory_bytes);
    let traces = recorder.traces();
    let event = &traces[0].events()[0];
    assert!(event.is_truncated());
    let payload: Vec<(&str, &str)> = event.payload().collect();
    assert_eq!(payload.len(), 1, "the entry after the cut is left out");
    assert_eq!(payload[0].0, "body");
    assert!(payload[0].1.ends_with('…'));
    assert!(payload[0].1.trim_end_matches('…').chars().all(|c| c == 'é'));
    assert!(payload[0].1.len() <= 100 - 32 - 4);
}

#[test]
fn statistics_give_count_rate_and_percentiles_over_the_window() {
    let notifier = Notifier::new();
    let recorder = TraceRecorder::new(WebOptions::new().window(Duration::from_secs(60)));
    let _s = attach(&notifier, &recorder);
    let end = Instant::now();
    for ms in 1..=100_u64 {
        notifier.publish_event(Event::new(
            "query.sql",
            end - Duration::from_millis(ms),
            end,
            Payload::new(),
        ));
    }
    let stats = recorder.stats();
    assert_eq!(stats.len(), 1);
    let s = &stats[0];
    assert_eq!((s.name.as_str(), s.count, s.window_count), ("query.sql", 100, 100));
    let near = |got: u64, ms: u64| (got as f64 - ms as f64 * 1e6).abs() <= ms as f64 * 1e6 * 0.01;
    assert!(near(s.p50_ns, 50), "p50 {}", s.p50_ns);
    assert!(near(s.p90_ns, 90), "p90 {}", s.p90_ns);
    assert!(near(s.p99_ns, 99), "p99 {}", s.p99_ns);
    assert!(near(s.max_ns, 100), "max {}", s.max_ns);
    assert!(s.rate > 0.0);
    assert_eq!(s.series.iter().map(|p| p.count).sum::<u64>(), 100);
}

#[test]
fn events_older_than_the_window_leave_the_statistics() {
    let notifier = Notifier::new();
    let recorder = TraceRecorder::new(WebOptions::new().window(Duration::from_millis(20)).slots(2));
    let _s = attach(&notifier, &recorder);
    let now = Instant::now();
    notifier.publish_event(Event::new(
        "tick.app",
        now,
        now + Duration::from_micros(5),
        Payload::new(),
    ));
    assert_eq!(recorder.stats()[0].window_count, 1);
    assert_eq!(recorder.counts().names, 1);
    std::thread::sleep(Duration::from_millis(50));
    assert!(recorder.stats().is_empty(), "a name leaves the table with its window");
    let counts = recorder.counts();
    assert_eq!((counts.names, counts.expired_names, counts.stats_bytes), (0, 1, 0));
    // What is left is the one held event.
    assert_eq!(recorder.memory_bytes(), recorder.traces()[0].memory_bytes());
}

fn publish_names(notifier: &Notifier, names: std::ops::Range<u32>) {
    let end = Instant::now();
    for n in names {
        notifier.publish_event(Event::new(
            format!("n{n:06}.app"),
            end - Duration::from_micros(u64::from(n % 1000) + 1),
            end,
            Payload::new(),
        ));
    }
}

#[test]
fn per_name_statistics_keep_at_most_the_names_limit_and_count_evictions() {
    let notifier = Notifier::new();
    let recorder = TraceRecorder::new(WebOptions::new().names(100));
    let _s = attach(&notifier, &recorder);
    publish_names(&notifier, 0..1000);
    let counts = recorder.counts();
    assert_eq!((counts.events, counts.names, counts.evicted_names), (1000, 100, 900));
    let names: Vec<String> = recorder.stats().into_iter().map(|s| s.name).collect();
    let mut newest: Vec<String> = (900..1000).map(|n| format!("n{n:06}.app")).collect();
    newest.sort();
    assert_eq!(names, newest, "the least recently seen names were evicted");
    // A kept name seen again becomes the most recent: the next new name evicts another.
    publish_names(&notifier, 900..901);
    publish_names(&notifier, 1000..1001);
    let names: Vec<String> = recorder.stats().into_iter().map(|s| s.name).collect();
    assert!(names.contains(&"n000900.app".to_owned()));
    assert!(!names.contains(&"n000901.app".to_owned()));
    assert_eq!(recorder.counts().evicted_names, 901);
}

#[test]
fn memory_bytes_grows_with_names_and_stays_bounded() {
    let notifier = Notifier::new();
    // Traces of one event each, two kept: the statistics are what grows.
    let recorder = TraceRecorder::new(WebOptions::new().names(500).traces(2));
    let _s = attach(&notifier, &recorder);
    publish_names(&notifier, 0..10);
    let ten = recorder.counts().stats_bytes;
    publish_names(&notifier, 10..100);
    let hundred = recorder.counts().stats_bytes;
    publish_names(&notifier, 100..500);
    let full = recorder.counts().stats_bytes;
    // Each name holds at least its histogram's counts (hdrhistogram, 2 significant digits: 128
    // counts of 8 bytes per power of two below its largest value, here microseconds).
    assert!(ten >= 10 * 1024, "10 names: {ten} bytes");
    assert!(hundred >= 9 * ten, "100 names: {hundred} bytes, 10 names: {ten}");
    assert!(full >= 4 * hundred, "500 names: {full} bytes, 100 names: {hundred}");
    for round in 1..=4 {
        publish_names(&notifier, round * 10_000..round * 10_000 + 500);
        let now = recorder.counts();
        assert_eq!(now.names, 500);
        // Names of the same length, histograms of the same shape: exactly the same bytes.
        assert_eq!(now.stats_bytes, full, "after {} names", 500 + round * 500);
    }
    assert_eq!(recorder.counts().evicted_names, 2000);
    assert_eq!(recorder.memory_bytes(), recorder.counts().memory_bytes);
}

#[test]
fn fed_through_the_export_collector() {
    let notifier = Notifier::new();
    let recorder = TraceRecorder::new(WebOptions::new());
    let live = recorder.subscribe(&notifier, notify_core::Pattern::all());
    for n in 0..20 {
        request(&notifier, n, 3);
    }
    let stats = live.force_flush(Duration::from_secs(10)).unwrap();
    assert_eq!((stats.exported, stats.dropped()), (80, 0));
    assert_eq!(recorder.traces().len(), 20);
    assert_eq!(recorder.counts().events, 80);
    let by_name: Vec<(String, u64)> = recorder.stats().into_iter().map(|s| (s.name, s.count)).collect();
    assert_eq!(by_name, [("query.sql".to_owned(), 60), ("request.app".to_owned(), 20)]);
    let end = live.shutdown(Duration::from_secs(10)).unwrap();
    assert_eq!((end.exported, end.dropped()), (80, 0));
    // Unsubscribed by the shutdown: later events reach neither the collector nor the recorder.
    request(&notifier, 20, 3);
    assert_eq!(
        (live.collector().stats().received(), recorder.counts().events),
        (80, 80)
    );
    assert_eq!(recorder.traces().len(), 20, "the page keeps what it recorded");
}

#[test]
fn an_event_finishing_after_its_root_joins_the_finished_trace() {
    let notifier = Notifier::new();
    let recorder = TraceRecorder::new(WebOptions::new());
    let _s = attach(&notifier, &recorder);
    // The root hands its context to work that finishes after it (a spawned job, say).
    let context = notifier.instrument("request.app", Payload::new, |_| Context::current());
    let root = recorder.traces()[0].clone();
    assert!(root.is_complete());
    context.in_scope(|| notifier.instrument("job.app", Payload::new, |_| ()));
    let traces = recorder.traces();
    assert_eq!(traces.len(), 1);
    let tree: Vec<(usize, &str)> = traces[0].tree().into_iter().map(|(d, e)| (d, e.name())).collect();
    assert_eq!(tree, [(0, "request.app"), (1, "job.app")]);
    assert_eq!(root.events().len(), 1, "a reader's copy does not change under it");
    assert_eq!(recorder.counts().events_held, 2);
}
