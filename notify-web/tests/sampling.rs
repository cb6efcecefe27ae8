//! Head sampling: the recorder attached with `subscribe` keeps sampled traces only.

use std::time::Duration;

use notify_core::{export::Sampler, Context, Notifier, Payload};
use notify_web::{TraceRecorder, WebOptions};

#[test]
fn the_recorder_skips_unsampled_traces() {
    let notifier = Notifier::new();
    notifier.set_sampler(Sampler::ratio(0.5));
    let recorder = TraceRecorder::new(WebOptions::new());
    let live = recorder.subscribe(&notifier, notify_core::Pattern::all());
    let mut sampled = Vec::new();
    for _ in 0..40 {
        let (trace, kept) = notifier.instrument("request.app", Payload::new, |_| {
            notifier.instrument("query.sql", Payload::new, |_| ());
            let context = Context::current();
            (context.trace_id().unwrap(), context.is_sampled() == Some(true))
        });
        if kept {
            sampled.push(trace);
        }
    }
    live.force_flush(Duration::from_secs(10)).unwrap();
    assert!(!sampled.is_empty() && sampled.len() < 40, "{}", sampled.len());
    let mut kept: Vec<_> = recorder.traces().iter().map(|t| t.trace_id()).collect();
    kept.sort_unstable();
    sampled.sort_unstable();
    assert_eq!(kept, sampled);
    assert_eq!(recorder.counts().events, 2 * sampled.len() as u64);
    let stats = live.shutdown(Duration::from_secs(10)).unwrap();
    assert_eq!((stats.exported, stats.dropped()), (2 * sampled.len() as u64, 0));
}
