//! Case A4 (shared/cases/async.md): shutdown with flush, shutdown with a short deadline, the
//! thread count back at its baseline, and publishing afterwards. One test in this file, so no
//! other test's threads change the count.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use notify_core::{Event, Notifier, Payload};
use notify_pool::{AsyncOptions, Overflow, WorkerPool};

/// The `Threads:` line of /proc/self/status.
fn threads() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status
        .lines()
        .find(|l| l.starts_with("Threads:"))
        .expect("Threads line");
    line["Threads:".len()..].trim().parse().expect("thread count")
}

/// The thread count once it is back at `expected`, or what it still is after 2 s. A joined
/// thread leaves the count a moment after `join` returns: the kernel wakes the joiner when the
/// thread releases its memory, and removes it from the process' thread count later in its exit
/// (seen in CI: 3 against 2, once, right after a shutdown that had joined every thread).
fn threads_settled_at(expected: usize) -> usize {
    let until = std::time::Instant::now() + Duration::from_secs(2);
    loop {
        let now = threads();
        if now == expected || std::time::Instant::now() >= until {
            return now;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn counter(count: &Arc<AtomicU64>) -> impl Fn(&Event) + Send + Sync + 'static {
    let count = count.clone();
    move |_: &Event| {
        count.fetch_add(1, Ordering::SeqCst);
    }
}

/// A4: publish 100,000 events and shut down with flush: all delivered; with a short deadline the
/// report's `abandoned` is exact; afterwards the thread count is back at its baseline; publishing
/// again is refused and counted (the documented behaviour: no restart).
#[test]
fn a4_shutdown_drains_or_reports_exactly_and_joins_threads() {
    const EVENTS: u64 = 100_000;
    let baseline = threads();

    // Shutdown with flush (no deadline): everything is delivered.
    let pool = WorkerPool::builder().threads(2).build();
    let notifier = Notifier::new();
    let count = Arc::new(AtomicU64::new(0));
    let sub = pool.subscribe(
        &notifier,
        "a4",
        AsyncOptions::new().capacity(EVENTS as usize),
        counter(&count),
    );
    let dedicated_count = Arc::new(AtomicU64::new(0));
    pool.subscribe(
        &notifier,
        "a4",
        AsyncOptions::new().capacity(EVENTS as usize).dedicated(),
        counter(&dedicated_count),
    );
    assert_eq!(threads(), baseline + 3, "2 workers and 1 dedicated thread");
    for _ in 0..EVENTS {
        notifier.instrument("a4", Payload::new, |_| ());
    }
    let report = pool.shutdown(Duration::MAX);
    assert_eq!(count.load(Ordering::SeqCst), EVENTS);
    assert_eq!(dedicated_count.load(Ordering::SeqCst), EVENTS);
    assert_eq!(sub.dropped(), 0);
    assert_eq!(
        (report.delivered, report.abandoned, report.drained),
        (2 * EVENTS, 0, true)
    );
    assert_eq!(threads_settled_at(baseline), baseline, "every pool thread joined");

    // Publishing after shutdown: refused, counted, never delivered; no thread comes back.
    notifier.instrument("a4", Payload::new, |_| ());
    assert_eq!(pool.rejected(), 2, "one refusal per async subscriber");
    assert_eq!(count.load(Ordering::SeqCst), EVENTS);
    assert_eq!(pool.shutdown(Duration::ZERO), report, "shutdown is idempotent");
    assert_eq!(threads_settled_at(baseline), baseline);

    // Shutdown with a short deadline: a slow subscriber (1 ms per event) cannot drain 1,000 events
    // in 50 ms; what it did not get is reported exactly.
    let pool = WorkerPool::builder().threads(2).build();
    let notifier = Notifier::new();
    let slow = Arc::new(AtomicU64::new(0));
    let s = slow.clone();
    pool.subscribe(
        &notifier,
        "a4.slow",
        AsyncOptions::new().capacity(1_000).overflow(Overflow::Block),
        move |_: &Event| {
            std::thread::sleep(Duration::from_millis(1));
            s.fetch_add(1, Ordering::SeqCst);
        },
    );
    for _ in 0..1_000 {
        notifier.instrument("a4.slow", Payload::new, |_| ());
    }
    let report = pool.shutdown(Duration::from_millis(50));
    let delivered = slow.load(Ordering::SeqCst);
    assert!(!report.drained);
    assert_eq!(
        report.detached,
        Vec::<String>::new(),
        "a 1 ms callback ends within the stop grace"
    );
    assert_eq!(report.delivered, delivered);
    assert_eq!(report.abandoned, 1_000 - delivered, "abandoned is exact");
    assert!(report.abandoned > 0);
    assert_eq!(pool.pending(), 0, "abandoned events are in the report, not pending");
    assert_eq!(threads_settled_at(baseline), baseline, "every pool thread joined");
}
