//! Tail sampling in front of the trace store (WebOptions::tail_sampling): a synthetic mix keeps
//! exactly the error and slow traces, whole, counts every other event by cause, and the per-name
//! statistics still see every event. A trace whose root never comes is decided after max_wait.

use std::time::Duration;

use notify_core::{Notifier, Pattern, Payload};
use notify_export::TailSampling;
use notify_pool::WorkerPool;
use notify_web::{TraceRecorder, WebOptions};

const ERRORS: [u64; 3] = [7, 42, 77];
const SLOW: [u64; 2] = [13, 55];

fn mix(notifier: &Notifier) {
    for n in 0..100_u64 {
        notifier.instrument(
            "request.tail",
            || Payload::new().with("n", n),
            |_| {
                notifier.instrument("auth.tail", || Payload::new().with("n", n), |_| ());
                let _ = notifier.instrument_result(
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
}

#[test]
fn a_synthetic_mix_stores_exactly_the_error_and_slow_traces_and_counts_the_rest() {
    let pool = WorkerPool::builder().threads(1).build();
    let notifier = Notifier::new();
    let options = WebOptions::new()
        .traces(1_000)
        .tail_sampling(TailSampling::new().slower_than(Duration::from_millis(30)).ratio(0.0));
    let recorder = TraceRecorder::new(options);
    let subscription = recorder.subscribe(&pool, &notifier, Pattern::all());
    mix(&notifier);
    pool.flush();

    let traces = recorder.traces();
    let mut kept: Vec<u64> = traces
        .iter()
        .map(|trace| {
            let root = trace.root().expect("whole: the root is there");
            assert_eq!(trace.events().len(), 3, "whole: root and both children");
            let n = root.payload().find(|(key, _)| *key == "n").expect("n").1;
            n.parse::<u64>().unwrap()
        })
        .collect();
    kept.sort_unstable();
    assert_eq!(kept, [7, 13, 42, 55, 77]);

    let counts = recorder.counts();
    assert_eq!((counts.events, counts.tail_dropped, counts.tail_held), (300, 95 * 3, 0));
    let tail = recorder.tail_stats().expect("tail sampling is on");
    assert_eq!(
        (
            tail.traces_kept_error,
            tail.traces_kept_slow,
            tail.traces_kept_ratio,
            tail.traces_dropped
        ),
        (3, 2, 0, 95)
    );
    assert_eq!((tail.kept, tail.dropped_not_sampled, tail.offered()), (15, 285, 300));
    // The statistics count every event, kept or not.
    let stats = recorder.stats();
    assert!(stats.iter().all(|s| s.count == 100), "{stats:?}");
    assert_eq!(stats.len(), 3);

    subscription.unsubscribe().unwrap();
    pool.shutdown(Duration::from_secs(5));
}

#[test]
fn without_tail_sampling_every_trace_is_stored_and_nothing_counts_as_tail_dropped() {
    let pool = WorkerPool::builder().threads(1).build();
    let notifier = Notifier::new();
    let recorder = TraceRecorder::new(WebOptions::new().traces(1_000));
    let subscription = recorder.subscribe(&pool, &notifier, Pattern::all());
    mix(&notifier);
    pool.flush();
    assert_eq!(recorder.traces().len(), 100);
    let counts = recorder.counts();
    assert_eq!((counts.events, counts.tail_dropped, counts.tail_held), (300, 0, 0));
    assert_eq!(recorder.tail_stats(), None);
    subscription.unsubscribe().unwrap();
    pool.shutdown(Duration::from_secs(5));
}

#[test]
fn a_held_trace_whose_root_never_comes_is_decided_after_max_wait() {
    let notifier = Notifier::new();
    let _s = notifier.subscribe(
        Pattern::all(),
        notify_core::Subscriber::event(|_: &notify_core::Event| {}),
    );
    let recorder =
        TraceRecorder::new(WebOptions::new().tail_sampling(TailSampling::new().max_wait(Duration::from_millis(50))));
    // Children recorded directly (as an importer would), their root still running: one failed.
    let now = std::time::Instant::now();
    notifier.instrument("request.tail", Payload::new, |_| {
        recorder.record(&notify_core::Event::new("auth.tail", now, now, Payload::new()));
        let mut failed = Payload::new();
        failed.record_error(&"x".parse::<u8>().unwrap_err());
        recorder.record(&notify_core::Event::new("query.tail", now, now, failed));
        assert!(recorder.traces().is_empty());
        assert_eq!(recorder.counts().tail_held, 2);
        std::thread::sleep(Duration::from_millis(60));
        // Decided without its root: kept for the error, in the store (unfinished: no root).
        let trace_id = notify_core::Context::current().trace_id().unwrap();
        let stored = recorder.trace(trace_id).expect("kept");
        assert_eq!(stored.events().len(), 2);
        assert_eq!(recorder.counts().tail_held, 0);
    });
    let tail = recorder.tail_stats().unwrap();
    assert_eq!((tail.traces_expired, tail.traces_kept_error, tail.kept), (1, 1, 2));
}
