//! Tail sampling in front of the NATS exporter (ExporterBuilder::tail_sampling, the export
//! collector's), against a real nats-server: held events are not pending in the exporter's
//! counters; shutdown decides what is held and sends what it keeps; a held trace is decided
//! after max_wait while nothing else comes. What is kept and dropped (the synthetic mix of error,
//! slow and ratio traces, limits, eviction) is the collector's, tested once in
//! notify-export/tests/tail_sampling.rs.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use notify_core::{Event, Notifier, Pattern, Payload, Subscriber};
use notify_export::TailSampling;
use notify_nats::{Exporter, NatsOptions};
use support::NatsServer;

const WAIT: Duration = Duration::from_secs(20);

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
