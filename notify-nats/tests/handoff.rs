//! The exporter's per-thread queues (notify_export::Handoff) against a real nats-server:
//! several publishing threads, each overflow policy, exact counts of drops by cause, and nothing
//! lost on flush, also of threads that exited.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use notify_core::{Event, Notifier, Pattern, Payload};
use notify_nats::{Exporter, Importer, NatsOptions, Overflow};
use support::NatsServer;

const WAIT: Duration = Duration::from_secs(20);

fn event(name: &'static str) -> Arc<Event> {
    let now = Instant::now();
    Arc::new(Event::new(name, now, now, Payload::new()))
}

/// `threads` threads each hand `per_thread` events to `exporter`, then exit, all at once (each
/// waits for the others: what they leave queued is kept as their queues held it, see
/// `notify_export::Handoff`).
fn publish_from_threads(exporter: &Arc<Exporter>, threads: usize, per_thread: usize, name: &'static str) {
    let together = Arc::new(std::sync::Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (exporter, together) = (exporter.clone(), together.clone());
            std::thread::spawn(move || {
                for _ in 0..per_thread {
                    exporter.export(&event(name));
                }
                together.wait();
            })
        })
        .collect();
    handles.into_iter().for_each(|h| h.join().unwrap());
}

/// With the server gone at most one batch is taken (it waits for the connection): each thread's
/// queue holds `capacity` events and the policy drops the rest of that thread's, counted as
/// overflow; shutdown counts the queued ones and the waiting batch.
#[test]
fn each_publishing_thread_has_its_own_bounded_queue_and_every_drop_is_counted_by_cause() {
    for overflow in [Overflow::DropNewest, Overflow::DropOldest] {
        let mut server = NatsServer::start();
        let exporter = Arc::new(
            Exporter::builder(NatsOptions::new(server.url()))
                .capacity(100)
                .overflow(overflow)
                .start()
                .unwrap(),
        );
        server.kill();
        std::thread::sleep(Duration::from_millis(300));
        publish_from_threads(&exporter, 4, 150, "lost.test");
        let down = exporter.stats();
        // Each queue holds 100; the collector may have taken one batch out of them, which waits
        // for the connection (room the threads then filled): at least 400 pending, the rest of
        // each thread's events overflow.
        assert_eq!((down.published, down.exported), (600, 0), "{overflow:?}: {down:?}");
        assert!(down.pending >= 4 * 100, "{overflow:?}: {down:?}");
        assert_eq!(down.dropped.overflow, 600 - down.pending, "{overflow:?}: {down:?}");
        let report = exporter.shutdown(Duration::from_millis(300));
        let s = report.stats;
        assert!(!report.drained);
        assert_eq!(
            (s.published, s.exported, s.pending, s.dropped.overflow),
            (600, 0, 0, down.dropped.overflow),
            "{overflow:?}: {s:?}"
        );
        assert_eq!(
            s.dropped.shutdown + s.dropped.disconnected,
            down.pending,
            "{overflow:?}: {s:?}"
        );
        assert_eq!(s.dropped.total(), 600, "{overflow:?}: {s:?}");
        // Refused after shutdown, from any thread: counted as shutdown.
        publish_from_threads(&exporter, 2, 3, "late.test");
        let s = exporter.stats();
        assert_eq!((s.published, s.dropped.total(), s.pending), (606, 606, 0), "{s:?}");
        assert_eq!(s.dropped.shutdown + s.dropped.disconnected, down.pending + 6, "{s:?}");
    }
}

/// `Overflow::Block` with queues far smaller than what each thread publishes: the threads wait
/// for room, nothing is dropped, flush returns with every event exported, and the importer
/// receives each once, also the events of threads that exited before the flush.
#[test]
fn block_loses_nothing_from_many_threads_and_flush_waits_for_every_event() {
    let server = NatsServer::start();
    let remote = Notifier::new();
    let importer = Importer::builder(NatsOptions::new(server.url()))
        .prefix("handoff")
        .start(&remote)
        .unwrap();
    let exporter = Arc::new(
        Exporter::builder(NatsOptions::new(server.url()))
            .prefix("handoff")
            .capacity(64)
            .overflow(Overflow::Block)
            .start()
            .unwrap(),
    );
    publish_from_threads(&exporter, 4, 5_000, "block.test");
    let stats = exporter.flush(WAIT).unwrap();
    assert_eq!(
        (stats.published, stats.exported, stats.dropped.total(), stats.pending),
        (20_000, 20_000, 0, 0),
        "{stats:?}"
    );
    assert_eq!(importer.wait_until(WAIT, |s| s.events == 20_000).events, 20_000);

    // Through a notifier, from threads that stay alive and idle: flushed too.
    let local = Notifier::new();
    let _subscription = exporter.subscribe(&local, Pattern::all());
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let done_rx = Arc::new(std::sync::Mutex::new(done_rx));
    let (published_tx, published_rx) = std::sync::mpsc::channel();
    let threads: Vec<_> = (0..3)
        .map(|_| {
            let local = local.clone();
            let published = published_tx.clone();
            let done = done_rx.clone();
            std::thread::spawn(move || {
                for _ in 0..1_000 {
                    local.instrument("idle.test", Payload::new, |_| ());
                }
                published.send(()).unwrap();
                let _ = done.lock().unwrap().recv();
            })
        })
        .collect();
    (0..3).for_each(|_| published_rx.recv().unwrap());
    let stats = exporter.flush(WAIT).unwrap();
    assert_eq!(
        (stats.published, stats.exported, stats.dropped.total(), stats.pending),
        (23_000, 23_000, 0, 0),
        "{stats:?}"
    );
    drop(done_tx);
    threads.into_iter().for_each(|t| t.join().unwrap());
    assert_eq!(importer.wait_until(WAIT, |s| s.events == 23_000).events, 23_000);
    let report = exporter.shutdown(WAIT);
    assert!(report.drained);
    assert_eq!((report.stats.exported, report.stats.dropped.total()), (23_000, 0));
}

/// The exporter's thread sleeps when idle and is woken by the next event: events that come one
/// at a time, with pauses longer than its short look-again, are each exported.
#[test]
fn an_idle_exporter_is_woken_by_the_next_event() {
    let server = NatsServer::start();
    let exporter = Exporter::builder(NatsOptions::new(server.url())).start().unwrap();
    for n in 1..=5 {
        std::thread::sleep(Duration::from_millis(20));
        exporter.export(&event("tick.test"));
        let started = Instant::now();
        while exporter.stats().exported < n {
            assert!(
                started.elapsed() < WAIT,
                "event {n} was never exported: {:?}",
                exporter.stats()
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let s = exporter.shutdown(WAIT).stats;
    assert_eq!((s.published, s.exported, s.dropped.total()), (5, 5, 0));
}
