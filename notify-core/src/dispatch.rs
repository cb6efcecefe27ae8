//! One event in flight: what it captured at start (its listener set, clocks, ids) and how it is
//! delivered at finish. `instrument`, handles and callsites all go through [`Active`].

use std::mem;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use smallvec::SmallVec;

use crate::alloc::thread_allocations;
use crate::event::{Event, Outcome};
use crate::failure::{guarded, guarded_silenced_reporting, SubscriberFailure};
use crate::ids;
use crate::notifier::Inner;
use crate::payload::Payload;
use crate::registry::Resolved;

/// An event between start and finish. Dropping it without `finish` delivers nothing.
pub(crate) struct Active {
    resolved: Arc<Resolved>,
    id: u64,
    parent: Option<u64>,
    /// The thread that started the event (its transaction id).
    transaction_id: u64,
    /// True when the event became its thread's current event at start.
    entered: bool,
    start: Option<Instant>,
    start_wall: Option<SystemTime>,
    cpu_start: Option<Duration>,
    allocations_start: Option<u64>,
    /// Indices of the silenceable listeners that were not silenced at start.
    silenceable: SmallVec<[u32; 4]>,
    failures: Vec<SubscriberFailure>,
}

fn thread_cpu_time() -> Option<Duration> {
    cpu_time::ThreadTime::try_now().ok().map(|t| t.as_duration())
}

impl Active {
    /// Asks the silenceable listeners; `None` when nobody would receive the event. A `silenced`
    /// that panics counts as silenced and is a failure of that subscriber (reported now when the
    /// event is dropped, else with the event's other failures at finish).
    #[inline]
    pub(crate) fn prepare(inner: &Inner, resolved: Arc<Resolved>) -> Option<Active> {
        let listeners = &resolved.listeners;
        let mut silenceable = SmallVec::new();
        let mut failures = Vec::new();
        for (i, l) in listeners.silenceable.iter().enumerate() {
            if !guarded_silenced_reporting(&mut failures, l, resolved.name.as_str()) {
                silenceable.push(i as u32);
            }
        }
        if silenceable.is_empty() && !listeners.has_unconditional() {
            if !failures.is_empty() {
                inner.handle_failures(failures);
            }
            return None;
        }
        Some(Active {
            resolved,
            id: 0,
            parent: None,
            transaction_id: 0,
            entered: false,
            start: None,
            start_wall: None,
            cpu_start: None,
            allocations_start: None,
            silenceable,
            failures,
        })
    }

    /// The event id; 0 until `start` (ids are never 0).
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// Starts the event: ids, evented `start` calls, then the clocks (so the event measures the
    /// block, not its `start` subscribers). With `enter`, the event becomes this thread's current
    /// event until `finish`.
    pub(crate) fn start(&mut self, payload: &Payload, enter: bool) {
        (self.id, self.parent, self.transaction_id) = ids::begin(enter);
        self.entered = enter;
        let resolved = &*self.resolved;
        let name = resolved.name.as_str();
        let listeners = &resolved.listeners;
        for l in &listeners.evented {
            guarded(&mut self.failures, &l.entry, name, || {
                l.subscriber.start(name, self.id, payload)
            });
        }
        for &i in &self.silenceable {
            let l = &listeners.silenceable[i as usize];
            guarded(&mut self.failures, &l.entry, name, || {
                l.subscriber.start(name, self.id, payload)
            });
        }
        let needs_event = !listeners.event.is_empty() || !listeners.owned.is_empty();
        if needs_event && listeners.options.cpu_time {
            self.cpu_start = thread_cpu_time();
        }
        if needs_event && listeners.options.allocations {
            self.allocations_start = thread_allocations();
        }
        if !listeners.timed.is_empty() {
            self.start_wall = Some(SystemTime::now());
        }
        if needs_event || !listeners.monotonic.is_empty() {
            self.start = Some(Instant::now());
        }
    }

    /// Finishes the event and delivers it to the listener set captured at start, borrowing the
    /// payload: it is moved out (left empty) only when an
    /// event object is built, so the synchronous kinds cost no ~260-byte payload moves. Called at
    /// most once per event.
    pub(crate) fn finish_in_place(&mut self, inner: &Inner, payload: &mut Payload, outcome: Outcome) {
        let end = self.start.map(|_| Instant::now());
        let end_wall = self.start_wall.map(|_| SystemTime::now());
        // CPU time and allocations are per-thread counters: an event finished on another thread
        // than it started on (a handle sent away, an async fn resumed elsewhere) has neither.
        let measured = self.cpu_start.is_some() || self.allocations_start.is_some();
        let same_thread = !measured || ids::transaction_id() == self.transaction_id;
        let cpu_end = self.cpu_start.filter(|_| same_thread).and_then(|_| thread_cpu_time());
        let allocations_end = self
            .allocations_start
            .filter(|_| same_thread)
            .and_then(|_| thread_allocations());
        if self.entered {
            ids::leave(self.id);
        }
        let resolved = &*self.resolved;
        let name = resolved.name.as_str();
        let listeners = &resolved.listeners;
        let transaction_id = self.transaction_id;
        let failures = &mut self.failures;
        if let (Some(start), Some(end)) = (self.start_wall, end_wall) {
            for l in &listeners.timed {
                guarded(failures, &l.entry, name, || {
                    l.subscriber.call(name, start, end, transaction_id, payload)
                });
            }
        }
        if let (Some(start), Some(end)) = (self.start, end) {
            for l in &listeners.monotonic {
                guarded(failures, &l.entry, name, || {
                    l.subscriber.call(name, start, end, transaction_id, payload)
                });
            }
        }
        for l in &listeners.evented {
            guarded(failures, &l.entry, name, || l.subscriber.finish(name, self.id, payload));
        }
        for &i in &self.silenceable {
            let l = &listeners.silenceable[i as usize];
            guarded(failures, &l.entry, name, || l.subscriber.finish(name, self.id, payload));
        }
        if let (Some(start), Some(end)) = (self.start, end) {
            if !listeners.event.is_empty() || !listeners.owned.is_empty() {
                let event = Event {
                    name: resolved.name.clone(),
                    start,
                    end,
                    transaction_id,
                    id: self.id,
                    parent_id: self.parent,
                    payload: mem::take(payload),
                    cpu_time: self.cpu_start.zip(cpu_end).map(|(a, b)| b.saturating_sub(a)),
                    allocations: self
                        .allocations_start
                        .zip(allocations_end)
                        .map(|(a, b)| b.saturating_sub(a)),
                    outcome,
                };
                deliver_event(failures, resolved, event);
            }
        }
        if !self.failures.is_empty() {
            inner.handle_failures(mem::take(&mut self.failures));
        }
    }
}

/// Delivers a built event to the event-object and owned groups of `resolved`.
pub(crate) fn deliver_event(failures: &mut Vec<SubscriberFailure>, resolved: &Resolved, event: Event) {
    let listeners = &resolved.listeners;
    let name = resolved.name.as_str();
    for l in &listeners.event {
        guarded(failures, &l.entry, name, || l.subscriber.call(&event));
    }
    if !listeners.owned.is_empty() {
        let shared = Arc::new(event);
        for l in &listeners.owned {
            guarded(failures, &l.entry, name, || l.subscriber.deliver(&shared));
        }
    }
}

/// A payload whose drop is skipped, inline, when it holds nothing (no entries, nothing
/// allocated): the common empty payload then costs no out-of-line drop call.
pub(crate) struct CheapDrop(mem::ManuallyDrop<Payload>);

impl CheapDrop {
    #[inline(always)]
    pub(crate) fn new(payload: Payload) -> CheapDrop {
        CheapDrop(mem::ManuallyDrop::new(payload))
    }
}

impl std::ops::Deref for CheapDrop {
    type Target = Payload;

    #[inline(always)]
    fn deref(&self) -> &Payload {
        &self.0
    }
}

impl std::ops::DerefMut for CheapDrop {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut Payload {
        &mut self.0
    }
}

impl Drop for CheapDrop {
    #[inline(always)]
    fn drop(&mut self) {
        if !self.0.is_trivially_droppable() {
            // SAFETY: the only drop of the payload; `self.0` is not used afterwards.
            unsafe { mem::ManuallyDrop::drop(&mut self.0) }
        }
    }
}

/// Runs `body` with an empty scratch payload, for when nobody listens. The scratch is built with
/// `Default` (the `const` constructor compiles to a memset of the whole ~260-byte payload) and
/// dropped only when `body` put something in it, so the common case costs no call at all.
#[inline(always)]
pub(crate) fn unlistened<T>(body: impl FnOnce(&mut Payload) -> T) -> T {
    let mut scratch = CheapDrop::new(Payload::default());
    body(&mut scratch)
}

/// Runs `body` as one event of `resolved`: the engine of `instrument`.
#[inline]
pub(crate) fn run<T>(
    inner: &Inner,
    resolved: Arc<Resolved>,
    payload: impl FnOnce() -> Payload,
    body: impl FnOnce(&mut Payload) -> T,
) -> T {
    let Some(active) = Active::prepare(inner, resolved) else {
        return unlistened(body);
    };
    let mut guard = FinishOnDrop {
        inner,
        active,
        payload: CheapDrop::new(payload()),
        finished: false,
    };
    guard.active.start(&guard.payload, true);
    let value = body(&mut guard.payload);
    guard.finish(Outcome::Completed);
    value
}

/// Finishes the event as panicked if the body unwinds.
struct FinishOnDrop<'a> {
    inner: &'a Inner,
    active: Active,
    payload: CheapDrop,
    finished: bool,
}

impl FinishOnDrop<'_> {
    fn finish(&mut self, outcome: Outcome) {
        if !self.finished {
            self.finished = true;
            self.active.finish_in_place(self.inner, &mut self.payload, outcome);
        }
    }
}

impl Drop for FinishOnDrop<'_> {
    fn drop(&mut self) {
        self.finish(Outcome::Panicked);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cheap_drop_drops_inline_and_spilled_payloads_and_skips_empty_ones() {
        drop(CheapDrop::new(Payload::default()));
        drop(CheapDrop::new(Payload::new().with("a", String::from("inline"))));
        let mut spilled = CheapDrop::new(Payload::default());
        for key in ["a", "b", "c", "d", "e", "f"] {
            spilled.insert(key, key.repeat(40));
        }
        assert_eq!(spilled.len(), 6);
        drop(spilled);
        let mut emptied = CheapDrop::new(Payload::new().with("a", String::from("x")));
        let taken = mem::take(&mut *emptied);
        assert!(emptied.is_trivially_droppable());
        drop(emptied);
        assert_eq!(taken.len(), 1);
    }
}
