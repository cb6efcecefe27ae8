//! Tail sampling for the page is a collector's (WebOptions::tail_sampling): what it keeps is
//! what the trace store holds, whole; the per-name statistics still see every event; the
//! recorder's tail counts are that collector's. How the sampler decides (the mix, the bounds,
//! max_wait) is tested once, in notify-export.

use std::time::Duration;

use notify_core::{Notifier, Pattern, Payload};
use notify_export::TailSampling;
use notify_web::{TraceRecorder, WebOptions};

const ERROR: u64 = 7;
const SLOW: u64 = 13;

fn mix(notifier: &Notifier) {
    for n in 0..20_u64 {
        notifier.instrument(
            "request.tail",
            || Payload::new().with("n", n),
            |_| {
                notifier.instrument("auth.tail", || Payload::new().with("n", n), |_| ());
                let _ = notifier.instrument_result(
                    "query.tail",
                    || Payload::new().with("n", n),
                    |_| if n == ERROR { Err("refused") } else { Ok(()) },
                );
                if n == SLOW {
                    std::thread::sleep(Duration::from_millis(40));
                }
            },
        );
    }
}

#[test]
fn the_store_holds_what_the_collectors_tail_sampling_keeps_and_the_statistics_see_every_event() {
    let notifier = Notifier::new();
    let options = WebOptions::new()
        .traces(1_000)
        .tail_sampling(TailSampling::new().slower_than(Duration::from_millis(30)));
    let recorder = TraceRecorder::new(options);
    let live = recorder.subscribe(&notifier, Pattern::all());
    mix(&notifier);
    let stats = live.force_flush(Duration::from_secs(10)).unwrap();
    assert_eq!(
        (stats.exported, stats.dropped()),
        (60, 0),
        "every event reached the sink"
    );

    let mut kept: Vec<u64> = recorder
        .traces()
        .iter()
        .map(|trace| {
            assert_eq!(trace.events().len(), 3, "whole: root and both children");
            let root = trace.root().expect("whole: the root is there");
            root.payload()
                .find(|(key, _)| *key == "n")
                .expect("n")
                .1
                .parse()
                .unwrap()
        })
        .collect();
    kept.sort_unstable();
    assert_eq!(kept, [ERROR, SLOW]);

    let counts = recorder.counts();
    assert_eq!((counts.events, counts.tail_dropped, counts.tail_held), (60, 18 * 3, 0));
    assert!(recorder.stats().iter().all(|s| s.count == 20), "{:?}", recorder.stats());
    let tail_collector = live.tail_collector().expect("tail sampling is on");
    let tail = tail_collector.stats();
    assert_eq!((tail.exported, tail.dropped_tail_sampling, tail.dropped()), (6, 54, 54));
    let decided = recorder.tail_stats().expect("tail sampling is on");
    assert_eq!(
        (
            decided.traces_kept_error,
            decided.traces_kept_slow,
            decided.traces_dropped
        ),
        (1, 1, 18)
    );
    live.shutdown(Duration::from_secs(10)).unwrap();
}

#[test]
fn without_tail_sampling_there_is_no_tail_collector_and_every_trace_is_stored() {
    let notifier = Notifier::new();
    let recorder = TraceRecorder::new(WebOptions::new().traces(1_000));
    let live = recorder.subscribe(&notifier, Pattern::all());
    mix(&notifier);
    live.force_flush(Duration::from_secs(10)).unwrap();
    assert!(live.tail_collector().is_none());
    assert_eq!(recorder.traces().len(), 20);
    let counts = recorder.counts();
    assert_eq!((counts.events, counts.tail_dropped, counts.tail_held), (60, 0, 0));
    assert_eq!(recorder.tail_stats(), None);
}

#[test]
fn shutdown_decides_the_traces_tail_sampling_holds_into_the_store() {
    let notifier = Notifier::new();
    let recorder = TraceRecorder::new(WebOptions::new().tail_sampling(TailSampling::new()));
    let live = recorder.subscribe(&notifier, Pattern::all());
    notifier.instrument("request.tail", Payload::new, |_| {
        notifier.instrument("auth.tail", Payload::new, |_| ());
        let _ = notifier.instrument_result("query.tail", Payload::new, |_| Err::<(), _>("refused"));
        // The root still runs: tail sampling holds its children.
        live.force_flush(Duration::from_secs(10)).unwrap();
        assert_eq!((recorder.counts().tail_held, recorder.counts().events), (2, 2));
        let trace_id = notify_core::Context::current().trace_id().unwrap();
        assert!(recorder.trace(trace_id).is_none());
        live.shutdown(Duration::from_secs(10)).unwrap();
        // Decided without its root: kept for the error, in the store (unfinished: no root).
        let stored = recorder.trace(trace_id).expect("kept for its error");
        assert_eq!(stored.events().len(), 2);
        assert!(!stored.is_complete());
    });
    let counts = recorder.counts();
    assert_eq!(
        (counts.tail_held, counts.tail_dropped, counts.events),
        (0, 0, 2),
        "the root came after the shutdown"
    );
    let tail = recorder.tail_stats().unwrap();
    assert_eq!((tail.traces_kept_error, tail.kept), (1, 2));
}
