//! The exporter's drops reach the notifier's failure hook (`Exporter::subscribe`): one failure
//! per burst with the counts by cause, counted in `Notifier::failures`; an exporter subscribed
//! with `subscriber()` alone reports nothing through the hook.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use notify_core::failure::SubscriberFailure;
use notify_core::{Notifier, Pattern, Payload};
use notify_nats::{Exporter, NatsOptions};
use support::NatsServer;

fn failures(notifier: &Notifier) -> Arc<Mutex<Vec<SubscriberFailure>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    notifier.set_failure_hook(move |f: &SubscriberFailure| sink.lock().unwrap().push(f.clone()));
    seen
}

/// The server goes away; 150 events into a queue of 100: what the queue and the one batch the
/// collector took (waiting for the connection) cannot hold overflows at once, the rest is
/// abandoned at shutdown. The burst ends at shutdown: exactly one report, whose counts are the
/// exporter's own.
#[test]
fn a_burst_of_drops_is_one_failure_through_the_notifiers_hook() {
    let mut server = NatsServer::start();
    let exporter = Exporter::builder(NatsOptions::new(server.url()))
        .capacity(100)
        .start()
        .unwrap();
    let notifier = Notifier::new();
    let seen = failures(&notifier);
    let subscription = exporter.subscribe(&notifier, Pattern::all());
    server.kill();
    std::thread::sleep(Duration::from_millis(100));
    for i in 0..150_u64 {
        notifier.instrument("lost.failure", || Payload::new().with("i", i), |_| ());
    }
    subscription.unsubscribe().unwrap();
    let report = exporter.shutdown(Duration::from_millis(300));
    let s = report.stats;
    assert_eq!((s.published, s.exported, s.pending), (150, 0, 0), "{s:?}");
    assert_eq!(s.dropped.total(), 150, "{s:?}");
    assert_eq!(
        s.dropped.overflow + s.dropped.shutdown + s.dropped.disconnected,
        150,
        "{s:?}"
    );

    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1, "one burst, one report: {seen:?}");
    assert_eq!(notifier.failures(), 1);
    let drops = seen[0].export_drops().expect("an export-drops failure");
    assert_eq!(drops.exporter(), "nats");
    assert_eq!(drops.dropped(), 150);
    let cause = |name: &str| {
        drops
            .causes()
            .iter()
            .filter(|(c, _)| *c == name)
            .map(|(_, n)| n)
            .sum::<u64>()
    };
    assert_eq!(cause("queue full"), s.dropped.overflow, "{drops:?}");
    assert_eq!(
        cause("shutdown") + cause("exporter error"),
        s.dropped.shutdown + s.dropped.disconnected,
        "{drops:?}"
    );
    assert!(
        drops
            .causes()
            .iter()
            .all(|(cause, _)| ["queue full", "exporter error", "shutdown"].contains(cause)),
        "{drops:?}"
    );
}

/// Events that all arrive are no failure; `subscriber()` alone (no `Exporter::subscribe`) never
/// reaches a notifier's hook.
#[test]
fn no_drops_no_report_and_a_plain_subscriber_reports_elsewhere() {
    let mut server = NatsServer::start();
    let exporter = Exporter::builder(NatsOptions::new(server.url())).start().unwrap();
    let notifier = Notifier::new();
    let seen = failures(&notifier);
    let _s = exporter.subscribe(&notifier, "kept.failure");
    for _ in 0..100 {
        notifier.instrument("kept.failure", Payload::new, |_| ());
    }
    let stats = exporter.flush(Duration::from_secs(20)).unwrap();
    assert_eq!((stats.exported, stats.dropped.total()), (100, 0));
    assert!(seen.lock().unwrap().is_empty());

    let plain = Notifier::new();
    let plain_seen = failures(&plain);
    let second = Exporter::builder(NatsOptions::new(server.url()))
        .capacity(10)
        .start()
        .unwrap();
    let _p = plain.subscribe(Pattern::all(), second.subscriber());
    server.kill();
    std::thread::sleep(Duration::from_millis(100));
    for _ in 0..20 {
        plain.instrument("lost.failure", Payload::new, |_| ());
    }
    let report = second.shutdown(Duration::from_millis(300));
    assert_eq!(report.stats.dropped.total(), 20, "{:?}", report.stats);
    assert!(
        plain_seen.lock().unwrap().is_empty(),
        "reported as a log warning instead"
    );
    assert_eq!(plain.failures(), 0);
    let _ = exporter.shutdown(Duration::from_millis(300));
}
