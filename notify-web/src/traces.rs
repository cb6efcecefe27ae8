//! The trace buffer: unfinished traces by trace id, and the last finished ones.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use notify_core::TraceId;

use crate::record::{Trace, TraceEvent};

/// Unfinished traces (bounded, oldest evicted) and the last `capacity` finished ones.
pub(crate) struct TraceBuffer {
    capacity: usize,
    pending_capacity: usize,
    events_per_trace: usize,
    /// Unfinished traces with the sequence number of their first event (eviction order).
    pending: HashMap<TraceId, (u64, Trace)>,
    /// Finished traces, oldest first.
    finished: VecDeque<Arc<Trace>>,
    sequence: u64,
    pub(crate) dropped_events: u64,
    pub(crate) evicted_traces: u64,
    pub(crate) memory: usize,
}

impl TraceBuffer {
    pub(crate) fn new(capacity: usize, pending_capacity: usize, events_per_trace: usize) -> TraceBuffer {
        TraceBuffer {
            capacity,
            pending_capacity,
            events_per_trace,
            pending: HashMap::new(),
            finished: VecDeque::new(),
            sequence: 0,
            dropped_events: 0,
            evicted_traces: 0,
            memory: 0,
        }
    }

    /// Adds one finished event of trace `trace_id`. The trace is finished when its root (an event
    /// without a parent) arrives; an event arriving after that joins the finished trace while it
    /// is still kept, else it is dropped.
    pub(crate) fn push(&mut self, trace_id: TraceId, event: TraceEvent) {
        let is_root = event.parent_id().is_none();
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
        let (_, trace) = self.pending.entry(trace_id).or_insert_with(|| {
            (
                sequence,
                Trace {
                    trace_id,
                    events: Vec::new(),
                    dropped: 0,
                    complete: false,
                },
            )
        });
        Self::append(
            trace,
            event,
            self.events_per_trace,
            &mut self.memory,
            &mut self.dropped_events,
        );
        if is_root {
            let (_, mut trace) = self.pending.remove(&trace_id).expect("just inserted");
            trace.complete = true;
            self.finished.push_back(Arc::new(trace));
            while self.finished.len() > self.capacity {
                let old = self.finished.pop_front().expect("not empty");
                self.memory -= old.memory_bytes();
            }
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
        let oldest = self.pending.iter().min_by_key(|(_, (seq, _))| *seq).map(|(id, _)| *id);
        if let Some(id) = oldest {
            let (_, trace) = self.pending.remove(&id).expect("present");
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
        self.pending.get(&trace_id).map(|(_, t)| Arc::new(t.clone()))
    }

    pub(crate) fn pending_len(&self) -> usize {
        self.pending.len()
    }

    pub(crate) fn events_held(&self) -> usize {
        self.finished.iter().map(|t| t.events.len()).sum::<usize>()
            + self.pending.values().map(|(_, t)| t.events.len()).sum::<usize>()
    }
}
