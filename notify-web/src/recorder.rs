//! [`TraceRecorder`]: the async subscriber that keeps the last traces and the per-name statistics.

use std::collections::HashSet;
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
    /// Bytes the held events take (see [`TraceRecorder::memory_bytes`]).
    pub memory_bytes: usize,
}

struct State {
    traces: TraceBuffer,
    stats: Stats,
    names: HashSet<Arc<str>>,
    events: u64,
}

/// An async subscriber that groups events into traces by trace id (a trace is finished when its
/// root, the event without a parent, finishes), keeps the last [`WebOptions::traces`] finished
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
            traces: TraceBuffer::new(options.traces, options.pending_traces, options.events_per_trace),
            stats: Stats::new(options.slot_length(), options.slots),
            names: HashSet::new(),
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
        let name: Arc<str> = match state.names.get(event.name()) {
            Some(name) => name.clone(),
            None => {
                let name: Arc<str> = Arc::from(event.name());
                state.names.insert(name.clone());
                name
            }
        };
        state.stats.record(&name, event.end(), event.duration());
        let stored = TraceEvent::new(event, name, self.options.payload_bytes);
        state.traces.push(event.trace_id(), stored);
    }

    /// The finished traces kept, newest first.
    pub fn traces(&self) -> Vec<Arc<Trace>> {
        self.state.lock().traces.finished()
    }

    /// A kept trace, finished or not.
    pub fn trace(&self, trace_id: TraceId) -> Option<Arc<Trace>> {
        self.state.lock().traces.get(trace_id)
    }

    /// Per-name statistics as of now, sorted by name.
    pub fn stats(&self) -> Vec<NameStats> {
        self.state.lock().stats.snapshot(Instant::now())
    }

    /// The bytes the held events take: per event its fixed size and its payload text, at most
    /// [`WebOptions::bytes_per_event`] each.
    pub fn memory_bytes(&self) -> usize {
        self.state.lock().traces.memory
    }

    /// Counts of events seen, kept and left out.
    pub fn counts(&self) -> RecorderCounts {
        let state = self.state.lock();
        RecorderCounts {
            events: state.events,
            dropped_events: state.traces.dropped_events,
            evicted_traces: state.traces.evicted_traces,
            events_held: state.traces.events_held(),
            pending_traces: state.traces.pending_len(),
            memory_bytes: state.traces.memory,
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
        // Head sampling: the page shows sampled traces only (notify_core::Sampler).
        if event.is_sampled() {
            self.record(event);
        }
    }
}
