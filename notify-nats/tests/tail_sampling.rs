//! Tail sampling in front of the NATS exporter (ExporterBuilder::tail_sampling), against a real
//! nats-server: a synthetic mix sends exactly the error and slow traces, whole, and counts every
//! other event; held events are not pending; shutdown decides what is held and sends what it keeps.

mod support;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use notify_core::{Event, Notifier, Pattern, Payload, Subscriber, Value};
use notify_export::TailSampling;
use notify_nats::{Exporter, Importer, NatsOptions};
use support::{recorder, NatsServer};

const WAIT: Duration = Duration::from_secs(20);
const ERRORS: [u64; 3] = [7, 42, 77];
const SLOW: [u64; 2] = [13, 55];

#[test]
fn a_synthetic_mix_sends_exactly_the_error_and_slow_traces_whole_and_counts_the_rest() {
    let server = NatsServer::start();
    let remote = Notifier::new();
    let seen = recorder(&remote, Pattern::all());
    let importer = Importer::builder(NatsOptions::new(server.url()))
        .subject("*.tail")
        .start(&remote)
        .unwrap();
    let exporter = Exporter::builder(NatsOptions::new(server.url()))
        .tail_sampling(TailSampling::new().slower_than(Duration::from_millis(30)).ratio(0.0))
        .start()
        .unwrap();
    let local = Notifier::new();
    let _s = local.subscribe(Pattern::all(), exporter.subscriber());
    for n in 0..100_u64 {
        local.instrument(
            "request.tail",
            || Payload::new().with("n", n),
            |_| {
                local.instrument("auth.tail", || Payload::new().with("n", n), |_| ());
                let _ = local.instrument_result(
                    "query.tail",
                    || Payload::new().with("n", n),
                    |_| if ERRORS.contains(&n) { Err("refused") } else { Ok(()) },
                );
                if SLOW.contains(&n) {
                    std::thread::sleep(Duration::from_millis(40));
                }
            },
        );
    }
    let stats = exporter.flush(WAIT).unwrap();
    assert_eq!(
        (
            stats.published,
            stats.exported,
            stats.dropped.tail_sampling,
            stats.dropped.total()
        ),
        (300, 15, 285, 285),
        "{stats:?}"
    );
    assert_eq!((stats.pending, stats.held), (0, 0));
    let tail = exporter.tail_stats().expect("tail sampling is on");
    assert_eq!(
        (
            tail.traces_kept_error,
            tail.traces_kept_slow,
            tail.traces_kept_ratio,
            tail.traces_dropped
        ),
        (3, 2, 0, 95)
    );
    assert_eq!((tail.kept, tail.dropped_not_sampled), (15, 285));

    let got = importer.wait_until(WAIT, |s| s.events == 15);
    assert_eq!(got.events, 15, "{got:?}");
    let seen = seen.lock().unwrap();
    let kept: BTreeSet<u64> = seen
        .iter()
        .map(|e| match e.payload().get("n") {
            Some(Value::U64(n)) => *n,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(kept.into_iter().collect::<Vec<_>>(), [7, 13, 42, 55, 77]);
    let names: BTreeSet<&str> = seen.iter().map(|e| e.name()).collect();
    assert_eq!(
        names.into_iter().collect::<Vec<_>>(),
        ["auth.tail", "query.tail", "request.tail"]
    );
    drop(seen);
    exporter.shutdown(WAIT);
    importer.shutdown();
}

#[test]
fn held_events_are_not_pending_and_shutdown_decides_and_sends_them() {
    let server = NatsServer::start();
    let exporter = Exporter::builder(NatsOptions::new(server.url()))
        .tail_sampling(TailSampling::new().ratio(1.0))
        .start()
        .unwrap();
    let notifier = Notifier::new();
    let _s = notifier.subscribe(Pattern::all(), Subscriber::event(|_: &Event| {}));
    let now = Instant::now();
    // Three children of a root that has not finished: held, waiting for it.
    notifier.instrument("root.tail", Payload::new, |_| {
        for _ in 0..3 {
            exporter.export(&Arc::new(Event::new("child.tail", now, now, Payload::new())));
        }
    });
    let stats = exporter.flush(WAIT).unwrap();
    assert_eq!(
        (stats.published, stats.held, stats.pending, stats.exported),
        (3, 3, 0, 0),
        "{stats:?}"
    );
    let report = exporter.shutdown(WAIT);
    assert!(report.drained);
    assert_eq!(
        (
            report.stats.exported,
            report.stats.held,
            report.stats.pending,
            report.stats.dropped.total()
        ),
        (3, 0, 0, 0),
        "{report:?}"
    );
    assert_eq!(exporter.tail_stats().unwrap().traces_expired, 1);
}

#[test]
fn a_held_trace_is_decided_after_max_wait_without_new_events() {
    let server = NatsServer::start();
    let exporter = Exporter::builder(NatsOptions::new(server.url()))
        .tail_sampling(TailSampling::new().max_wait(Duration::from_millis(100)))
        .start()
        .unwrap();
    let notifier = Notifier::new();
    let _s = notifier.subscribe(Pattern::all(), Subscriber::event(|_: &Event| {}));
    let now = Instant::now();
    notifier.instrument("root.tail", Payload::new, |_| {
        let mut failed = Payload::new();
        failed.record_error(&"x".parse::<u8>().unwrap_err());
        exporter.export(&Arc::new(Event::new("child.tail", now, now, failed)));
        exporter.export(&Arc::new(Event::new("child.tail", now, now, Payload::new())));
    });
    // No root ever comes and nothing else is queued: the thread wakes by max_wait to decide.
    let deadline = Instant::now() + WAIT;
    while exporter.stats().exported < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let stats = exporter.stats();
    assert_eq!((stats.exported, stats.held, stats.pending), (2, 0, 0), "{stats:?}");
    let tail = exporter.tail_stats().unwrap();
    assert_eq!((tail.traces_expired, tail.traces_kept_error), (1, 1));
    exporter.shutdown(WAIT);
}
