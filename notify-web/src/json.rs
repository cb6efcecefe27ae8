//! The page's data as JSON (serde_json). Times are nanoseconds: offsets from the trace's start,
//! durations, and wall-clock starts since the Unix epoch.

use notify_core::EventId;
use std::time::SystemTime;

use serde::Serialize;

use crate::record::Trace;
use crate::recorder::{RecorderCounts, TraceRecorder};
use crate::stats::NameStats;

#[derive(Serialize)]
struct TraceSummary<'a> {
    trace_id: String,
    root: Option<&'a str>,
    start_unix_ns: u128,
    duration_ns: u128,
    events: usize,
    dropped_events: u64,
    complete: bool,
}

#[derive(Serialize)]
struct EventJson<'a> {
    name: &'a str,
    id: EventId,
    parent_id: Option<EventId>,
    depth: usize,
    offset_ns: u128,
    duration_ns: u128,
    start_unix_ns: u128,
    outcome: notify_core::Outcome,
    payload: Vec<(&'a str, &'a str)>,
    payload_truncated: bool,
}

#[derive(Serialize)]
struct TraceJson<'a> {
    #[serde(flatten)]
    summary: TraceSummary<'a>,
    events: Vec<EventJson<'a>>,
}

#[derive(Serialize)]
struct StatsJson {
    window_ns: u128,
    counts: RecorderCounts,
    names: Vec<NameStats>,
}

fn unix_ns(t: Option<SystemTime>) -> u128 {
    t.and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos())
}

fn summary(trace: &Trace) -> TraceSummary<'_> {
    TraceSummary {
        trace_id: trace.trace_id().to_string(),
        root: trace.root().map(|e| e.name()),
        start_unix_ns: unix_ns(trace.start_time()),
        duration_ns: trace.duration().as_nanos(),
        events: trace.events().len(),
        dropped_events: trace.dropped_events(),
        complete: trace.is_complete(),
    }
}

/// The recorder's finished traces, newest first: `[{"trace_id", "root", "start_unix_ns",
/// "duration_ns", "events", "dropped_events", "complete"}]`.
pub fn traces_json(recorder: &TraceRecorder) -> String {
    let traces = recorder.traces();
    serde_json::to_string(&traces.iter().map(|t| summary(t)).collect::<Vec<_>>()).expect("serializable")
}

/// One trace: the fields of [`traces_json`] and `"events"`, in display order (depth-first),
/// each `{"name", "id", "parent_id", "depth", "offset_ns", "duration_ns", "start_unix_ns",
/// "outcome", "payload": [[key, value text]], "payload_truncated"}`.
pub fn trace_json(trace: &Trace) -> String {
    let start = trace.start();
    let events = trace
        .tree()
        .into_iter()
        .map(|(depth, e)| EventJson {
            name: e.name(),
            id: e.id(),
            parent_id: e.parent_id(),
            depth,
            offset_ns: start.map_or(0, |s| e.start().saturating_duration_since(s).as_nanos()),
            duration_ns: e.duration().as_nanos(),
            start_unix_ns: unix_ns(Some(e.start_time())),
            outcome: e.outcome(),
            payload: e.payload().collect(),
            payload_truncated: e.is_truncated(),
        })
        .collect();
    serde_json::to_string(&TraceJson {
        summary: summary(trace),
        events,
    })
    .expect("serializable")
}

/// The per-name statistics and the recorder's counts: `{"window_ns", "counts": {...},
/// "names": [{"name", "count", "window_count", "rate", "p50_ns", "p90_ns", "p99_ns", "max_ns",
/// "series": [{"seconds_ago", "count", "p50_ns", "p99_ns"}]}]}`.
pub fn stats_json(recorder: &TraceRecorder) -> String {
    serde_json::to_string(&StatsJson {
        window_ns: recorder.window().as_nanos(),
        counts: recorder.counts(),
        names: recorder.stats(),
    })
    .expect("serializable")
}
