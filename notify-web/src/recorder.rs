//! [`TraceRecorder`]: the async subscriber that keeps the last traces and the per-name statistics.

use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;

use notify_core::{Event, Notifier, Pattern, TraceId};
use notify_export::{TailSampler, TailStats};
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
    /// Events the tail-sampling stage ([`WebOptions::tail_sampling`]) left out of the trace store,
    /// whatever the cause (0 without it; the causes are in [`TraceRecorder::tail_stats`]).
    pub tail_dropped: u64,
    /// Events the tail-sampling stage holds now, waiting for their trace's local root.
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
}

struct State {
    traces: TraceBuffer,
    stats: Stats,
    events: u64,
    /// The tail-sampling stage in front of `traces`, when configured.
    tail: Option<TailSampler>,
    /// What the stage keeps, on its way into `traces` (reused).
    kept: Vec<Arc<Event>>,
}

impl State {
    /// Stores `event` in its trace (its name shared with the statistics' copy while kept).
    fn store(&mut self, event: &Event, now: Instant, payload_bytes: usize) {
        let name: Arc<str> = self
            .stats
            .interned(event.name())
            .unwrap_or_else(|| Arc::from(event.name()));
        let stored = TraceEvent::new(event, name, payload_bytes);
        self.traces.push(event.trace_id(), stored, now);
    }

    /// Decides the traces the tail-sampling stage held past its `max_wait`, storing those kept.
    fn expire(&mut self, now: Instant, payload_bytes: usize) {
        let Some(tail) = &mut self.tail else {
            return;
        };
        if tail.next_expiry().is_none_or(|due| due > now) {
            return;
        }
        let mut kept = std::mem::take(&mut self.kept);
        tail.expire(now, &mut kept);
        for event in kept.drain(..) {
            self.store(&event, now, payload_bytes);
        }
        self.kept = kept;
    }
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
            tail: options.tail.clone().map(TailSampler::new),
            kept: Vec::new(),
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
    /// elsewhere, an importer say). With [`WebOptions::tail_sampling`], the event is copied into
    /// an `Arc` for the stage; [`record_shared`](Self::record_shared) spares the copy.
    pub fn record(&self, event: &Event) {
        if self.options.tail.is_some() {
            self.record_shared(&Arc::new(event.clone()));
        } else {
            self.record_shared_or_not(event, None);
        }
    }

    /// Records one shared event (as [`record`](Self::record)); the tail-sampling stage, when
    /// configured, holds this `Arc` rather than a copy.
    pub fn record_shared(&self, event: &Arc<Event>) {
        self.record_shared_or_not(event, Some(event));
    }

    fn record_shared_or_not(&self, event: &Event, shared: Option<&Arc<Event>>) {
        let mut state = self.state.lock();
        let state = &mut *state;
        state.events += 1;
        let now = Instant::now();
        let payload_bytes = self.options.payload_bytes;
        // The statistics see every event; the trace store what tail sampling keeps.
        let name: Arc<str> = state
            .stats
            .interned(event.name())
            .unwrap_or_else(|| Arc::from(event.name()));
        state.stats.record(&name, event.end(), event.duration(), now);
        match (&mut state.tail, shared) {
            (Some(tail), Some(shared)) => {
                let mut kept = std::mem::take(&mut state.kept);
                tail.offer(shared.clone(), now, &mut kept);
                for kept in kept.drain(..) {
                    state.store(&kept, now, payload_bytes);
                }
                state.kept = kept;
                state.expire(now, payload_bytes);
            }
            _ => {
                let stored = TraceEvent::new(event, name, payload_bytes);
                state.traces.push(event.trace_id(), stored, now);
            }
        }
    }

    /// The tail-sampling stage's counters (traces by decision, events by fate), when
    /// [`WebOptions::tail_sampling`] is on. Traces held past their `max_wait` are decided first.
    pub fn tail_stats(&self) -> Option<TailStats> {
        let mut state = self.state.lock();
        state.expire(Instant::now(), self.options.payload_bytes);
        state.tail.as_ref().map(TailSampler::stats)
    }

    /// The finished traces kept, newest first.
    pub fn traces(&self) -> Vec<Arc<Trace>> {
        let mut state = self.state.lock();
        let now = Instant::now();
        state.expire(now, self.options.payload_bytes);
        state.traces.settle(now);
        state.traces.finished()
    }

    /// A kept trace, finished or not.
    pub fn trace(&self, trace_id: TraceId) -> Option<Arc<Trace>> {
        let mut state = self.state.lock();
        let now = Instant::now();
        state.expire(now, self.options.payload_bytes);
        state.traces.settle(now);
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
        state.expire(now, self.options.payload_bytes);
        state.traces.settle(now);
        let tail = state.tail.as_ref().map(TailSampler::stats).unwrap_or_default();
        RecorderCounts {
            events: state.events,
            tail_dropped: tail.dropped(),
            tail_held: tail.held,
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
            self.record_shared(event);
        }
    }
}
