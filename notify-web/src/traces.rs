//! The trace buffer: unfinished traces by trace id, and the last finished ones.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use notify_core::TraceId;

use crate::record::{Trace, TraceEvent};

/// Unfinished traces (bounded, oldest evicted) and the last `capacity` finished ones.
pub(crate) struct TraceBuffer {
    capacity: usize,
    pending_capacity: usize,
    events_per_trace: usize,
    /// Unfinished traces with the sequence number of their first event (eviction order) and
    /// when their last event arrived (their key in `quiet`).
    pending: HashMap<TraceId, (u64, (Instant, u64), Trace)>,
    /// Unfinished traces by when their last event arrived, oldest first (with a sequence number
    /// to keep keys unique): those quiet for `remote_root_wait` are finished by `settle`.
    quiet: BTreeMap<(Instant, u64), TraceId>,
    remote_root_wait: Duration,
    /// Finished traces, oldest first.
    finished: VecDeque<Arc<Trace>>,
    sequence: u64,
    pub(crate) dropped_events: u64,
    pub(crate) evicted_traces: u64,
    pub(crate) memory: usize,
}

impl TraceBuffer {
    pub(crate) fn new(
        capacity: usize,
        pending_capacity: usize,
        events_per_trace: usize,
        remote_root_wait: Duration,
    ) -> TraceBuffer {
        TraceBuffer {
            capacity,
            pending_capacity,
            events_per_trace,
            pending: HashMap::new(),
            quiet: BTreeMap::new(),
            remote_root_wait,
            finished: VecDeque::new(),
            sequence: 0,
            dropped_events: 0,
            evicted_traces: 0,
            memory: 0,
        }
    }

    /// Adds one finished event of trace `trace_id`, arrived at `now`. The trace is finished when
    /// its local root arrives (an event without a parent, or whose parent is marked remote: it
    /// continued a W3C `traceparent`), or by [`settle`](TraceBuffer::settle) once no event of it
    /// arrived for `remote_root_wait` (a local root whose remote parent was not marked, e.g. one
    /// given by hand with `instrument_with_parent`); an event arriving after that joins the
    /// finished trace while it is still kept.
    pub(crate) fn push(&mut self, trace_id: TraceId, event: TraceEvent, now: Instant) {
        self.settle(now);
        let is_root = event.is_local_root();
        if let Some(trace) = self.finished.iter_mut().rev().find(|t| t.trace_id == trace_id) {
            let trace = Arc::make_mut(trace);
            Self::append(
                trace,
                event,
                self.events_per_trace,
                &mut self.memory,
                &mut self.dropped_events,
            );
            return;
        }
        if !self.pending.contains_key(&trace_id) && self.pending.len() >= self.pending_capacity && !is_root {
            self.evict_oldest_pending();
        }
        self.sequence += 1;
        let sequence = self.sequence;
        let (_, arrived, trace) = self.pending.entry(trace_id).or_insert_with(|| {
            (
                sequence,
                (now, sequence),
                Trace {
                    trace_id,
                    events: Vec::new(),
                    dropped: 0,
                    complete: false,
                },
            )
        });
        self.quiet.remove(arrived);
        *arrived = (now, sequence);
        self.quiet.insert(*arrived, trace_id);
        Self::append(
            trace,
            event,
            self.events_per_trace,
            &mut self.memory,
            &mut self.dropped_events,
        );
        if is_root {
            self.finish(trace_id);
        }
    }

    /// Moves a pending trace to the finished ones, complete.
    fn finish(&mut self, trace_id: TraceId) {
        let (_, arrived, mut trace) = self.pending.remove(&trace_id).expect("pending");
        self.quiet.remove(&arrived);
        trace.complete = true;
        self.finished.push_back(Arc::new(trace));
        while self.finished.len() > self.capacity {
            let old = self.finished.pop_front().expect("not empty");
            self.memory -= old.memory_bytes();
        }
    }

    /// Finishes the unfinished traces none of whose events arrived within `remote_root_wait`
    /// before `now`: their local root has a parent in another process (a request that came with
    /// a W3C `traceparent`), which never arrives here. The recorder sees finished events only,
    /// so it cannot tell such a parent from a local one still running: a local root that
    /// arrives later joins the trace and becomes its root.
    pub(crate) fn settle(&mut self, now: Instant) {
        while let Some((&(arrived, _), &trace_id)) = self.quiet.first_key_value() {
            if now.saturating_duration_since(arrived) < self.remote_root_wait {
                break;
            }
            self.finish(trace_id);
        }
    }

    fn append(trace: &mut Trace, event: TraceEvent, limit: usize, memory: &mut usize, dropped: &mut u64) {
        if trace.events.len() >= limit {
            trace.dropped += 1;
            *dropped += 1;
        } else {
            *memory += event.memory_bytes();
            trace.events.push(event);
        }
    }

    fn evict_oldest_pending(&mut self) {
        let oldest = self
            .pending
            .iter()
            .min_by_key(|(_, (seq, _, _))| *seq)
            .map(|(id, _)| *id);
        if let Some(id) = oldest {
            let (_, arrived, trace) = self.pending.remove(&id).expect("present");
            self.quiet.remove(&arrived);
            self.memory -= trace.memory_bytes();
            self.dropped_events += trace.events.len() as u64;
            self.evicted_traces += 1;
        }
    }

    /// The finished traces, newest first.
    pub(crate) fn finished(&self) -> Vec<Arc<Trace>> {
        self.finished.iter().rev().cloned().collect()
    }

    /// A finished or unfinished trace by id (an unfinished one is copied).
    pub(crate) fn get(&self, trace_id: TraceId) -> Option<Arc<Trace>> {
        if let Some(trace) = self.finished.iter().rev().find(|t| t.trace_id == trace_id) {
            return Some(trace.clone());
        }
        self.pending.get(&trace_id).map(|(_, _, t)| Arc::new(t.clone()))
    }

    pub(crate) fn pending_len(&self) -> usize {
        self.pending.len()
    }

    pub(crate) fn events_held(&self) -> usize {
        self.finished.iter().map(|t| t.events.len()).sum::<usize>()
            + self.pending.values().map(|(_, _, t)| t.events.len()).sum::<usize>()
    }
}
