//! [`TraceRecorder`]: the async subscriber that keeps the last traces and the per-name statistics.

use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;

use notify_core::{Event, Notifier, Pattern, TraceId};
use notify_pool::{AsyncOptions, AsyncSubscriber, AsyncSubscription, WorkerPool};

use crate::options::WebOptions;
use crate::record::{Trace, TraceEvent};
use crate::stats::{NameStats, Stats};
use crate::traces::TraceBuffer;

/// What the recorder has seen and kept, and what it left out (counts of events).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct RecorderCounts {
    /// Events received.
    pub events: u64,
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
}

struct State {
    traces: TraceBuffer,
    stats: Stats,
    events: u64,
}

/// An async subscriber that groups events into traces by trace id (a trace is finished when its
/// root, the event without a parent, finishes; or, when its local root has a parent in another
/// process, once no event of it arrived for [`WebOptions::remote_root_wait`]), keeps the last [`WebOptions::traces`] finished
/// ones, and per-name statistics (count, rate, p50/p90/p99/max from hdrhistogram) over a sliding
/// window. Subscribe it through a [`WorkerPool`] so instrumented code only enqueues the event;
/// serve it with [`WebServer`](crate::WebServer).
///
/// Cloning is cheap (the clones share the data).
///
/// ```
/// use notify_core::{Notifier, Pattern, Payload};
/// use notify_pool::WorkerPool;
/// use notify_web::{TraceRecorder, WebOptions};
///
/// let pool = WorkerPool::builder().threads(1).build();
/// let notifier = Notifier::new();
/// let recorder = TraceRecorder::new(WebOptions::new().traces(10));
/// let _subscription = recorder.subscribe(&pool, &notifier, Pattern::all());
/// notifier.instrument("request.app", Payload::new, |_| {
///     notifier.instrument("query.sql", || Payload::new().with("sql", "SELECT 1"), |_| ());
/// });
/// pool.flush();
/// let traces = recorder.traces();
/// assert_eq!(traces.len(), 1);
/// assert_eq!(traces[0].root().unwrap().name(), "request.app");
/// assert_eq!(traces[0].events().len(), 2);
/// assert_eq!(recorder.stats().iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["query.sql", "request.app"]);
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
        };
        TraceRecorder {
            options: Arc::new(options),
            state: Arc::new(Mutex::new(state)),
        }
    }

    /// Subscribes this recorder on `pool` to the events of `notifier` that `pattern` matches
    /// ([`Pattern::all`]: every event), with the pool's default mailbox (newest dropped when full, counted
    /// by [`AsyncSubscription::dropped`]).
    pub fn subscribe(&self, pool: &WorkerPool, notifier: &Notifier, pattern: impl Into<Pattern>) -> AsyncSubscription {
        self.subscribe_with(pool, notifier, pattern, AsyncOptions::new().named("notify-web"))
    }

    /// As [`TraceRecorder::subscribe`], with mailbox `options`.
    pub fn subscribe_with(
        &self,
        pool: &WorkerPool,
        notifier: &Notifier,
        pattern: impl Into<Pattern>,
        options: AsyncOptions,
    ) -> AsyncSubscription {
        pool.subscribe(notifier, pattern, options, self.clone())
    }

    /// Records one event (what the pool's worker calls; call it directly to feed events from
    /// elsewhere, an importer say).
    pub fn record(&self, event: &Event) {
        let mut state = self.state.lock();
        let state = &mut *state;
        state.events += 1;
        // Stored events share the statistics' copy of their name while it is kept.
        let name: Arc<str> = state
            .stats
            .interned(event.name())
            .unwrap_or_else(|| Arc::from(event.name()));
        let now = Instant::now();
        state.stats.record(&name, event.end(), event.duration(), now);
        let stored = TraceEvent::new(event, name, self.options.payload_bytes);
        state.traces.push(event.trace_id(), stored, now);
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
        let mut state = self.state.lock();
        let now = Instant::now();
        state.stats.expire(now);
        state.traces.settle(now);
        RecorderCounts {
            events: state.events,
            dropped_events: state.traces.dropped_events,
            evicted_traces: state.traces.evicted_traces,
            events_held: state.traces.events_held(),
            pending_traces: state.traces.pending_len(),
            memory_bytes: state.traces.memory + state.stats.memory_bytes(),
            stats_bytes: state.stats.memory_bytes(),
            names: state.stats.len(),
            evicted_names: state.stats.evicted_names,
            expired_names: state.stats.expired_names,
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

impl AsyncSubscriber for TraceRecorder {
    fn call(&self, event: &Arc<Event>) {
        // Head sampling: the page shows sampled traces only (notify_core::export::Sampler).
        if event.is_sampled() {
            self.record(event);
        }
    }
}
