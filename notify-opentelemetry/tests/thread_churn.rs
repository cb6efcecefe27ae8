//! Threads that come and go behind an exporter that never returns: memory stays bounded.

use std::sync::Arc;
use std::time::Duration;

use notify_core::{Notifier, Pattern, Payload};
use notify_opentelemetry::OpenTelemetryExporter;

#[path = "support/hung.rs"]
mod hung;
use hung::Hung;

/// The process' peak resident set, in kB (`VmHWM` of /proc/self/status).
fn peak_rss_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kb| kb.parse().ok())
        .unwrap()
}

/// Memory is bounded by the queue capacity per *live* publishing thread: a thread's queue was
/// kept until drained, also after the thread exited, so behind a stuck exporter a thread-per-task
/// program grew by ~5 kB of RSS per thread it ever ran (20,000 one-event threads: +105 MB), and
/// the counters showed none of those events. Now an exiting thread frees its queue and leaves its
/// events in one shared queue (`notify_export::Handoff`) of the capacity times the most
/// threads that published at once (here one, one after another): the rest is counted as dropped
/// on a full queue. Alone in its test binary: it reads the process' peak RSS.
#[test]
fn thread_churn_behind_a_stuck_exporter_keeps_memory_bounded() {
    let before = peak_rss_kb();
    let exporter = OpenTelemetryExporter::builder(Hung).on_drops(|_| {}).build();
    let notifier = Arc::new(Notifier::new());
    let _s = exporter.subscribe(&notifier, Pattern::all());
    for i in 0..20_000_u64 {
        let notifier = notifier.clone();
        std::thread::spawn(move || notifier.instrument("churn.exit", || Payload::new().with("i", i), |_| ()))
            .join()
            .unwrap();
    }
    let grown = peak_rss_kb() - before;
    let stats = exporter.stats();
    // At most one batch (512) went into the export that never returns, one queue's worth
    // (8,192) waits, the rest is counted.
    assert!((1..=512).contains(&stats.dequeued), "{stats}");
    assert_eq!(stats.dequeued + stats.dropped_queue_full + 8_192, 20_000, "{stats}");
    let _ = exporter.shutdown(Duration::from_millis(100));
    // One default queue's worth of events is ~4 MB; allow 8 queues.
    assert!(grown < 32_000, "peak RSS grew {grown} kB for 20,000 one-event threads");
}
