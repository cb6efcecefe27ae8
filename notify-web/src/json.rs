//! The page's data as JSON (serde_json).
//!
//! Every key of every object is unique. Wall-clock times are RFC 3339 UTC strings with
//! nanoseconds (`"start": "2025-12-06T05:46:40.123456789Z"`), as in notify's own event JSON:
//! nanoseconds since 1970 are about 2^60, and JavaScript (browsers, `jq`) reads a JSON number as
//! an IEEE double, exact only up to 2^53, so as a number their last digits would silently change.
//! Event ids are 64 bits: strings of 16 lowercase hex digits, as W3C trace-context writes span
//! ids. The other integers are numbers: durations and offsets in nanoseconds (exact in
//! JavaScript up to 2^53 ns, 104 days) and counts.
//!
//! Payload values are written as the text the recorder kept when it stored the event (their
//! `Display`, bounded by notify-core at [`Value::MAX_NESTING`] levels, deeper lists and maps as
//! `…`; counted in [`RecorderCounts::values_too_deep`]), never through `Value`'s `Serialize`,
//! which refuses a value nested deeper than that: such a value costs neither the page nor the
//! trace.

use notify_core::{event::EventId, Value};
use std::time::SystemTime;

use serde::{Serialize, Serializer};

use crate::record::Trace;
use crate::recorder::{RecorderCounts, TraceRecorder};
use crate::stats::NameStats;

/// A wall-clock time written as its RFC 3339 text (nanoseconds, UTC), never as a number.
struct WallClock(SystemTime);

impl Serialize for WallClock {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // Value::Time displays as `YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ`, the form of an event's `start`.
        s.collect_str(&Value::Time(self.0))
    }
}

/// An event id written as W3C trace-context writes a span id (`parent-id` of `traceparent`): 16
/// lowercase hex digits, a string. Event ids are 64 bits; as JSON numbers those above 2^53 would
/// change in JavaScript. The pages write it the same way (see [`SpanId`]'s `Display`).
pub(crate) struct SpanId(pub(crate) EventId);

impl std::fmt::Display for SpanId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&self.0, f)
    }
}

impl SpanId {
    /// Reads `?open=`: 16 hex digits, the form the pages and the JSON write (`EventId`'s
    /// `FromStr`).
    pub(crate) fn parse(text: &str) -> Option<EventId> {
        text.parse().ok()
    }
}

impl Serialize for SpanId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[derive(Serialize)]
struct TraceSummary<'a> {
    trace_id: String,
    root: Option<&'a str>,
    start: Option<WallClock>,
    duration_ns: u128,
    /// The number of events kept; `"events"` is the list of them in [`trace_json`].
    event_count: usize,
    dropped_events: u64,
    complete: bool,
    /// The W3C `tracestate` of the trace, `null` when it had none.
    tracestate: Option<&'a str>,
}

#[derive(Serialize)]
struct EventJson<'a> {
    name: &'a str,
    id: SpanId,
    parent_id: Option<SpanId>,
    depth: usize,
    offset_ns: u128,
    duration_ns: u128,
    start: WallClock,
    outcome: notify_core::event::Outcome,
    payload: Vec<(&'a str, &'a str)>,
    payload_truncated: bool,
}

/// A trace summary's keys and `"events"`: [`TraceSummary`] has no key named `events`, so the
/// flattened object has each key once.
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

fn summary(trace: &Trace) -> TraceSummary<'_> {
    TraceSummary {
        trace_id: trace.trace_id().to_string(),
        root: trace.root().map(|e| e.name()),
        start: trace.start_time().map(WallClock),
        duration_ns: trace.duration().as_nanos(),
        event_count: trace.events().len(),
        dropped_events: trace.dropped_events(),
        complete: trace.is_complete(),
        tracestate: trace.trace_state().map(|s| s.as_str()),
    }
}

/// The recorder's finished traces, newest first: `[{"trace_id", "root", "start", "duration_ns",
/// "event_count", "dropped_events", "complete", "tracestate"}]`.
///
/// `trace_id` is 32 lowercase hex digits; `root` the root event's name or `null`; `start` the
/// earliest wall-clock start of its events as an RFC 3339 UTC string with nanoseconds
/// (`"2025-12-06T05:46:40.123456789Z"`; a string, not nanoseconds as a number, which JavaScript
/// would round), or `null` for a trace without events; `duration_ns` from that start to the
/// latest end, in nanoseconds; `event_count` the events kept; `dropped_events` those left out
/// ([`WebOptions::events_per_trace`](crate::WebOptions::events_per_trace)); `complete` whether
/// its root has finished; `tracestate` the trace's W3C `tracestate` (its root's, as the incoming
/// request carried it) or `null`.
pub fn traces_json(recorder: &TraceRecorder) -> String {
    let traces = recorder.traces();
    write(&traces.iter().map(|t| summary(t)).collect::<Vec<_>>())
}

/// One trace: the keys of [`traces_json`] (`event_count` included) and `"events"`, in display
/// order (depth-first), each `{"name", "id", "parent_id", "depth", "offset_ns", "duration_ns",
/// "start", "outcome", "payload": [[key, value text]], "payload_truncated"}`.
///
/// `id` and `parent_id` are event ids as W3C trace-context writes span ids: strings of 16
/// lowercase hex digits (`"00f067aa0ba902b7"`; `parent_id` `null` for a root), so JavaScript reads
/// all 64 bits exactly; `offset_ns` is the event's start after the trace's, `duration_ns` its duration,
/// both in nanoseconds; `start` its wall-clock start as an RFC 3339 UTC string with nanoseconds;
/// `outcome` `"completed"`, `"panicked"` or `"cancelled"`; `payload` the value texts as stored
/// (a value nested deeper than 32 lists and maps written down to that depth, deeper ones `…`;
/// `payload_truncated` is then `true`, as when the payload was cut to
/// [`WebOptions::payload_bytes`](crate::WebOptions::payload_bytes)). Every key appears once in
/// each object.
pub fn trace_json(trace: &Trace) -> String {
    let start = trace.start();
    let events = trace
        .tree()
        .into_iter()
        .map(|(depth, e)| EventJson {
            name: e.name(),
            id: SpanId(e.id()),
            parent_id: e.parent_id().map(SpanId),
            depth,
            offset_ns: start.map_or(0, |s| e.start().saturating_duration_since(s).as_nanos()),
            duration_ns: e.duration().as_nanos(),
            start: WallClock(e.start_time()),
            outcome: e.outcome(),
            payload: e.payload().collect(),
            payload_truncated: e.is_truncated(),
        })
        .collect();
    write(&TraceJson {
        summary: summary(trace),
        events,
    })
}

/// The per-name statistics and the recorder's counts: `{"window_ns", "counts": {...},
/// "names": [{"name", "count", "window_count", "rate", "p50_ns", "p90_ns", "p99_ns", "max_ns",
/// "series": [{"seconds_ago", "count", "p50_ns", "p99_ns"}], "buckets": [{"le_ns", "count",
/// "trace_id", "event_id"}]}]}`. Durations are nanoseconds as numbers, `rate` events per second,
/// `seconds_ago` seconds (both floats). `buckets` are the non-empty latency buckets
/// ([`LatencyBucket`](crate::LatencyBucket)): `le_ns` the upper bound (`null` above 10 s), and a
/// recent trace held with an event of that name in that bucket (`trace_id` 32 hex digits,
/// `event_id` 16; both `null` when no held trace has one): `/trace/<trace_id>?open=<event_id>`
/// shows it.
pub fn stats_json(recorder: &TraceRecorder) -> String {
    let mut names = recorder.stats();
    crate::stats::link_recent_traces(&mut names, &recorder.traces());
    write(&StatsJson {
        window_ns: recorder.window().as_nanos(),
        counts: recorder.counts(),
        names,
    })
}

/// `value` as JSON. The page's JSON is made of text, numbers, booleans, nulls, and lists and
/// objects of them with text keys (payload values and wall-clock times are text already; see the
/// module docs), where serde_json has no error: a failure here is a bug in this module, answered
/// `500` by the server, which goes on.
fn write(value: &impl Serialize) -> String {
    serde_json::to_string(value).expect("the page's JSON is text, numbers and lists of them")
}
