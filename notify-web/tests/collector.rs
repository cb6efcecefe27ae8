//! The recorder's sink on the export collector: the shared sink contract
//! (notify_export::testing::check_sink), read back from the recorder's trace store; once as is,
//! once with tail sampling (a second collector behind the sink) keeping every trace.

use std::time::Duration;

use notify_export::testing::{check_sink, ContractReport, Seen, CONTRACT_EVENTS};
use notify_export::{ExportRuntime, TailSampling};
use notify_web::{TraceRecorder, WebOptions};

/// What the page's trace store shows, as the contract compares it.
fn stored(recorder: &TraceRecorder) -> Vec<Seen> {
    recorder
        .traces()
        .iter()
        .flat_map(|trace| {
            let trace_id = trace.trace_id();
            trace
                .events()
                .iter()
                .map(move |e| Seen {
                    name: e.name().to_owned(),
                    id: e.id(),
                    parent_id: e.parent_id(),
                    trace_id,
                    error: e.outcome() != notify_core::event::Outcome::Completed
                        || e.payload().any(|(key, _)| key == notify_core::payload::EXCEPTION_KEY),
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

fn contract(options: WebOptions) -> (TraceRecorder, ContractReport) {
    let recorder = TraceRecorder::new(options);
    let store = recorder.clone();
    let report = check_sink(recorder.sink(), ExportRuntime::Auto, || stored(&store));
    (recorder, report)
}

#[test]
fn the_trace_sink_passes_the_sink_contract() {
    let (recorder, report) = contract(WebOptions::new().traces(100));
    assert_eq!(report.stats.exported, CONTRACT_EVENTS as u64);
    let counts = recorder.counts();
    assert_eq!(counts.events, CONTRACT_EVENTS as u64, "the statistics saw every event");
    assert_eq!(
        (counts.tail_dropped, counts.tail_held, recorder.tail_stats()),
        (0, 0, None)
    );
}

#[test]
fn the_trace_sink_with_tail_sampling_passes_the_sink_contract() {
    let (recorder, report) = contract(
        WebOptions::new()
            .traces(100)
            .tail_sampling(TailSampling::new().ratio(1.0)),
    );
    assert_eq!(report.stats.exported, CONTRACT_EVENTS as u64);
    let counts = recorder.counts();
    assert_eq!(counts.events, CONTRACT_EVENTS as u64, "the statistics saw every event");
    assert_eq!((counts.tail_dropped, counts.tail_held), (0, 0));
    let tail = recorder.tail_stats().expect("tail sampling is on");
    // 12 traces, each kept for its error (one child of each fails) before the ratio is asked.
    assert_eq!(
        (tail.traces_kept_error, tail.kept, tail.dropped()),
        (12, CONTRACT_EVENTS as u64, 0)
    );
}

#[test]
fn a_sink_never_given_to_a_collector_stops_its_tail_collector_when_dropped() {
    let recorder = TraceRecorder::new(WebOptions::new().tail_sampling(TailSampling::new()));
    let sink = recorder.sink();
    let tail = sink.tail_collector().expect("tail sampling is on").clone();
    drop(sink);
    assert!(matches!(
        tail.force_flush(Duration::from_secs(5)),
        Err(notify_export::ExportError::ShutDown(_))
    ));
}
