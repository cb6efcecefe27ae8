//! The recorder as a sink of the export collector: the shared sink contract
//! (notify_export::testing::check_sink), read back from the recorder's trace store.

use notify_export::testing::{check_sink, Seen, CONTRACT_EVENTS};
use notify_export::ExportRuntime;
use notify_web::{TraceRecorder, WebOptions};

#[test]
fn the_recorder_passes_the_sink_contract() {
    let recorder = TraceRecorder::new(WebOptions::new().traces(100));
    let store = recorder.clone();
    let report = check_sink(recorder, ExportRuntime::Auto, || {
        store
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
    });
    assert_eq!(report.stats.exported, CONTRACT_EVENTS as u64);
    let counts = store.counts();
    assert_eq!(counts.events, CONTRACT_EVENTS as u64, "the statistics saw every event");
}
