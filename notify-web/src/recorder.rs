//! [`TraceRecorder`]: the last traces and the per-name statistics, what the page shows.

use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;

use notify_core::{Event, TraceId};
use notify_export::{Collector, TailStats};

use crate::options::WebOptions;
use crate::record::{Trace, TraceEvent};
use crate::stats::{NameStats, Stats};
use crate::traces::TraceBuffer;

/// What the recorder has seen and kept, and what it left out (counts of events).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct RecorderCounts {
    /// Events received.
    pub events: u64,
    /// Events tail sampling ([`WebOptions::tail_sampling`], the collector in front of the trace
    /// store) left out of the trace store, whatever the cause (0 without it; the causes are in
    /// [`TraceRecorder::tail_stats`]); as of that collector's last batch.
    pub tail_dropped: u64,
    /// Events tail sampling holds now, waiting for their trace's local root (as of its last batch).
    pub tail_held: u64,
    /// Events not kept in a trace: over [`WebOptions::events_per_trace`], or in an unfinished
    /// trace evicted by [`WebOptions::pending_traces`] (they still count in the statistics).
    pub dropped_events: u64,
    /// Unfinished traces evicted to stay within [`WebOptions::pending_traces`].
    pub evicted_traces: u64,
    /// Events held now, in finished and unfinished traces.
    pub events_held: usize,
    /// Unfinished traces held now.
    pub pending_traces: usize,
    /// Bytes the held events and the per-name statistics take (see [`TraceRecorder::memory_bytes`]).
    pub memory_bytes: usize,
    /// Of [`memory_bytes`](RecorderCounts::memory_bytes), the bytes of the per-name statistics.
    pub stats_bytes: usize,
    /// Event names in the statistics now (at most [`WebOptions::names`]).
    pub names: usize,
    /// Names evicted from the statistics, least recently seen first, to stay within
    /// [`WebOptions::names`] (a name seen again starts over).
    pub evicted_names: u64,
    /// Names dropped from the statistics because their newest event left the window.
    pub expired_names: u64,
    /// Payload values of stored events nested deeper than
    /// [`Value::MAX_NESTING`](notify_core::Value::MAX_NESTING) lists and maps: kept as text down
    /// to that depth, each deeper list or map written `…` (notify-core's bounded `Display`), the
    /// event marked [`TraceEvent::is_truncated`](crate::TraceEvent::is_truncated).
    pub values_too_deep: u64,
}

struct State {
    traces: TraceBuffer,
    stats: Stats,
    events: u64,
    /// Payload values nested deeper than [`Value::MAX_NESTING`](notify_core::Value::MAX_NESTING)
    /// in stored events.
    values_too_deep: u64,
    /// The collectors that tail-sample in front of the trace store ([`WebOptions::tail_sampling`],
    /// one per [`TraceSink`](crate::TraceSink)): their counters are the recorder's tail counts.
    /// A handle here keeps such a collector from shutting down on its own (its sink holds this
    /// state), so the `TraceSink` shuts it down, in its `shutdown` or its `drop`.
    tail: Vec<Collector>,
}

impl State {
    /// The per-name statistics take `event` (every event, whatever tail sampling decides).
    fn record_stats(&mut self, event: &Event, now: Instant) {
        self.events += 1;
        let name = self.name(event.name());
        self.stats.record(&name, event.end(), event.duration(), now);
    }

    /// Stores `event` in its trace (its name shared with the statistics' copy while kept).
    fn store(&mut self, event: &Event, now: Instant, payload_bytes: usize) {
        let name = self.name(event.name());
        let (stored, too_deep) = TraceEvent::new(event, name, payload_bytes);
        self.values_too_deep += too_deep;
        self.traces.push(event.trace_id(), stored, now);
    }

    /// The statistics' interned copy of `name`, or a new one.
    fn name(&self, name: &str) -> Arc<str> {
        self.stats.interned(name).unwrap_or_else(|| Arc::from(name))
    }
}

/// Groups events into traces by trace id (a trace is finished when its root, the event without
/// a parent, finishes; or, when its local root has a parent in another process, once no event of
/// it arrived for [`WebOptions::remote_root_wait`]), keeps the last [`WebOptions::traces`]
/// finished ones, and per-name statistics (count, rate, p50/p90/p99/max from hdrhistogram) over a
/// sliding window. Attach it to a notifier with [`subscribe`](TraceRecorder::subscribe) (an
/// export collector in between, so instrumented code only hands the event over); serve it with
/// [`WebServer`](crate::WebServer).
///
/// Cloning is cheap (the clones share the data).
///
/// ```
/// use std::time::Duration;
/// use notify_core::{Notifier, Pattern, Payload};
/// use notify_web::{TraceRecorder, WebOptions};
///
/// let notifier = Notifier::new();
/// let recorder = TraceRecorder::new(WebOptions::new().traces(10));
/// let live = recorder.subscribe(&notifier, Pattern::all());
/// notifier.instrument("request.app", Payload::new, |_| {
///     notifier.instrument("query.sql", || Payload::new().with("sql", "SELECT 1"), |_| ());
/// });
/// live.force_flush(Duration::from_secs(5))?;
/// let traces = recorder.traces();
/// assert_eq!(traces.len(), 1);
/// assert_eq!(traces[0].root().unwrap().name(), "request.app");
/// assert_eq!(traces[0].events().len(), 2);
/// assert_eq!(recorder.stats().iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["query.sql", "request.app"]);
/// # Ok::<(), notify_export::ExportError>(())
/// ```
#[derive(Clone)]
pub struct TraceRecorder {
    options: Arc<WebOptions>,
    state: Arc<Mutex<State>>,
}

impl TraceRecorder {
    /// A recorder that has seen nothing yet.
    pub fn new(options: WebOptions) -> TraceRecorder {
        let state = State {
            traces: TraceBuffer::new(
                options.traces,
                options.pending_traces,
                options.events_per_trace,
                options.remote_root_wait,
            ),
            stats: Stats::new(options.slot_length(), options.slots, options.names),
            events: 0,
            values_too_deep: 0,
            tail: Vec::new(),
        };
        TraceRecorder {
            options: Arc::new(options),
            state: Arc::new(Mutex::new(state)),
        }
    }

    /// Records one event into the per-name statistics and the trace store, on the calling
    /// thread: to feed events from elsewhere (an importer, a test). It neither skips unsampled
    /// traces nor goes through tail sampling: [`subscribe`](Self::subscribe) adds those.
    pub fn record(&self, event: &Event) {
        let now = Instant::now();
        let mut state = self.state.lock();
        state.record_stats(event, now);
        state.store(event, now, self.options.payload_bytes);
    }

    /// The statistics take each of `events`, and the store too unless a tail-sampling collector
    /// decides what it keeps ([`TraceSink`](crate::TraceSink)).
    pub(crate) fn record_batch(&self, events: &[Arc<Event>], store: bool) {
        let now = Instant::now();
        let mut state = self.state.lock();
        for event in events {
            state.record_stats(event, now);
            if store {
                state.store(event, now, self.options.payload_bytes);
            }
        }
    }

    /// The trace store takes each of `events` (what tail sampling kept; the statistics saw them).
    pub(crate) fn store_batch(&self, events: &[Arc<Event>]) {
        let now = Instant::now();
        let mut state = self.state.lock();
        for event in events {
            state.store(event, now, self.options.payload_bytes);
        }
    }

    /// Counts `collector`'s tail sampling as this recorder's ([`RecorderCounts::tail_dropped`],
    /// [`tail_stats`](Self::tail_stats)).
    pub(crate) fn count_tail_of(&self, collector: &Collector) {
        self.state.lock().tail.push(collector.clone());
    }

    /// The collectors counted by [`count_tail_of`](Self::count_tail_of).
    pub(crate) fn tail_collectors(&self) -> Vec<Collector> {
        self.state.lock().tail.clone()
    }

    /// The tail-sampling counters (traces by decision, events by fate) of the collectors that
    /// decide what the trace store keeps ([`WebOptions::tail_sampling`]), summed, as of their
    /// last batch; `None` without tail sampling.
    pub fn tail_stats(&self) -> Option<TailStats> {
        self.tail_collectors()
            .iter()
            .filter_map(Collector::tail_stats)
            .reduce(|mut total, more| {
                add_tail_stats(&mut total, &more);
                total
            })
    }

    /// The finished traces kept, newest first.
    pub fn traces(&self) -> Vec<Arc<Trace>> {
        let mut state = self.state.lock();
        state.traces.settle(Instant::now());
        state.traces.finished()
    }

    /// A kept trace, finished or not.
    pub fn trace(&self, trace_id: TraceId) -> Option<Arc<Trace>> {
        let mut state = self.state.lock();
        state.traces.settle(Instant::now());
        state.traces.get(trace_id)
    }

    /// Per-name statistics as of now, sorted by name: the names with an event in the window, at
    /// most [`WebOptions::names`] of them.
    pub fn stats(&self) -> Vec<NameStats> {
        let now = Instant::now();
        let mut state = self.state.lock();
        state.stats.expire(now);
        state.stats.snapshot(now)
    }

    /// The bytes the recorder holds: the held events (per event its fixed size and its payload
    /// text, at most [`WebOptions::bytes_per_event`] each) plus the per-name statistics (per name
    /// its entry, its text, its map entries and its histograms' counts, as allocated; at most
    /// [`WebOptions::names`] names). Bookkeeping of the maps themselves (their spare capacity) is
    /// not counted.
    pub fn memory_bytes(&self) -> usize {
        let state = self.state.lock();
        state.traces.memory + state.stats.memory_bytes()
    }

    /// Counts of events seen, kept and left out.
    pub fn counts(&self) -> RecorderCounts {
        let (tail_dropped, tail_held) = self
            .tail_collectors()
            .iter()
            .map(Collector::stats)
            .fold((0, 0), |(dropped, held), stats| {
                (dropped + stats.dropped_tail_sampling, held + stats.held)
            });
        let mut state = self.state.lock();
        let now = Instant::now();
        state.stats.expire(now);
        state.traces.settle(now);
        RecorderCounts {
            events: state.events,
            tail_dropped,
            tail_held,
            dropped_events: state.traces.dropped_events,
            evicted_traces: state.traces.evicted_traces,
            events_held: state.traces.events_held(),
            pending_traces: state.traces.pending_len(),
            memory_bytes: state.traces.memory + state.stats.memory_bytes(),
            stats_bytes: state.stats.memory_bytes(),
            names: state.stats.len(),
            evicted_names: state.stats.evicted_names,
            expired_names: state.stats.expired_names,
            values_too_deep: state.values_too_deep,
        }
    }

    /// The options this recorder was made with.
    pub fn options(&self) -> &WebOptions {
        &self.options
    }

    /// The length of the statistics window.
    pub fn window(&self) -> std::time::Duration {
        self.state.lock().stats.window()
    }
}

/// `total` plus `more`, field by field.
fn add_tail_stats(total: &mut TailStats, more: &TailStats) {
    total.traces_kept_error += more.traces_kept_error;
    total.traces_kept_slow += more.traces_kept_slow;
    total.traces_kept_ratio += more.traces_kept_ratio;
    total.traces_dropped += more.traces_dropped;
    total.traces_evicted += more.traces_evicted;
    total.traces_expired += more.traces_expired;
    total.kept += more.kept;
    total.kept_late += more.kept_late;
    total.dropped_not_sampled += more.dropped_not_sampled;
    total.dropped_evicted += more.dropped_evicted;
    total.dropped_over_limit += more.dropped_over_limit;
    total.dropped_expired += more.dropped_expired;
    total.dropped_late += more.dropped_late;
    total.held += more.held;
}
