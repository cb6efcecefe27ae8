//! One event in flight: what it captured at start (its listener set, clocks, ids) and how it is
//! delivered at finish. `instrument`, handles and callsites all go through [`Active`].

use std::mem;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use smallvec::SmallVec;

use crate::alloc::thread_allocations;
use crate::context::EventContext;
use crate::event::{Event, Outcome};
use crate::failure::{guarded, guarded_silenced_reporting, SubscriberFailure};
use crate::ids;
use crate::location::Location;
use crate::notifier::Inner;
use crate::payload::Payload;
use crate::record;
use crate::redaction::Pending;
use crate::registry::Resolved;
use crate::subscriber::EventedSubscriber;
use crate::trace_id::TraceId;

/// The trace id of an event not started yet (never seen by a subscriber).
const UNSTARTED_TRACE: TraceId = match TraceId::new(1) {
    Some(id) => id,
    None => unreachable!(),
};

/// An event between start and finish. Dropping it without `finish` delivers nothing.
pub(crate) struct Active {
    resolved: Arc<Resolved>,
    /// Its ids (id 0 until `start`; ids are never 0) and monotonic times.
    context: EventContext,
    /// The thread that started the event (its transaction id).
    transaction_id: u64,
    /// True when the event became its thread's current event at start.
    entered: bool,
    start_wall: Option<SystemTime>,
    cpu_start: Option<Duration>,
    allocations_start: Option<u64>,
    /// Indices of the silenceable listeners that were not silenced at start.
    silenceable: SmallVec<[u32; 4]>,
    failures: Vec<SubscriberFailure>,
    /// The notifier's redaction policy, captured here, and what it replaced so far.
    redaction: Pending,
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
            context: EventContext::new(0, None, UNSTARTED_TRACE),
            transaction_id: 0,
            entered: false,
            start_wall: None,
            cpu_start: None,
            allocations_start: None,
            silenceable,
            failures,
            redaction: Pending::new(inner.redaction()),
        })
    }

    /// The event id; 0 until `start` (ids are never 0).
    pub(crate) fn id(&self) -> u64 {
        self.context.id
    }

    /// Sets where the event is instrumented (a callsite's location).
    #[inline]
    pub(crate) fn set_location(&mut self, location: Option<&'static Location>) {
        self.context.location = location;
    }

    /// The event's ids (meaningful once started).
    pub(crate) fn context(&self) -> &EventContext {
        &self.context
    }

    /// Starts the event: ids (under `parent` when given, else the thread's current context),
    /// evented `start` calls, then the clocks (so the event measures the block, not its `start`
    /// subscribers). With `enter`, the event becomes this thread's current event until `finish`.
    #[inline]
    pub(crate) fn start(&mut self, payload: &mut Payload, enter: bool, parent: Option<ids::Frame>) {
        let begun = match parent {
            None => ids::begin(enter),
            Some(parent) => ids::begin_in(parent, enter),
        };
        self.context.id = begun.id;
        self.context.parent_id = begun.parent;
        self.context.trace_id = begun.trace;
        self.transaction_id = begun.transaction;
        self.entered = enter;
        let resolved = &*self.resolved;
        let name = resolved.name.as_str();
        let listeners = &resolved.listeners;
        if !listeners.evented.is_empty() || !self.silenceable.is_empty() {
            self.redaction.apply(payload);
        }
        let payload = &*payload;
        let context = &self.context;
        for l in &listeners.evented {
            guarded(&mut self.failures, &l.entry, name, || {
                l.subscriber.start(name, context, payload)
            });
        }
        for &i in &self.silenceable {
            let l = &listeners.silenceable[i as usize];
            guarded(&mut self.failures, &l.entry, name, || {
                l.subscriber.start(name, context, payload)
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
        if needs_event || !listeners.monotonic.is_empty() || listeners.evented_duration {
            self.context.start = Some(Instant::now());
        }
    }

    /// Makes the started event this thread's current event (one poll of an async event) and calls
    /// the evented `enter`s; [`Active::exit`] undoes it.
    pub(crate) fn enter(&self, inner: &Inner) {
        ids::enter(self.context.id, self.context.trace_id);
        self.each_evented(inner, |l, name, context| l.enter(name, context));
    }

    /// The evented `exit`s, then the event stops being current on this thread.
    pub(crate) fn exit(&self, inner: &Inner) {
        self.each_evented(inner, |l, name, context| l.exit(name, context));
        ids::leave(self.context.id);
    }

    /// Calls the evented and unsilenced silenceable listeners; failures are handled at once.
    fn each_evented(&self, inner: &Inner, call: impl Fn(&dyn EventedSubscriber, &str, &EventContext)) {
        let resolved = &*self.resolved;
        let listeners = &resolved.listeners;
        if listeners.evented.is_empty() && self.silenceable.is_empty() {
            return;
        }
        let name = resolved.name.as_str();
        let mut failures = Vec::new();
        for l in &listeners.evented {
            guarded(&mut failures, &l.entry, name, || {
                call(&*l.subscriber, name, &self.context)
            });
        }
        for &i in &self.silenceable {
            let l = &listeners.silenceable[i as usize];
            guarded(&mut failures, &l.entry, name, || {
                call(&*l.subscriber, name, &self.context)
            });
        }
        if !failures.is_empty() {
            inner.handle_failures(failures);
        }
    }

    /// Finishes the event and delivers it to the listener set captured at start, borrowing the
    /// payload: it is moved out (left empty) only when an
    /// event object is built, so the synchronous kinds cost no ~260-byte payload moves. Called at
    /// most once per event.
    pub(crate) fn finish_in_place(&mut self, inner: &Inner, payload: &mut Payload, outcome: Outcome) {
        let end = self.context.start.map(|_| Instant::now());
        self.context.end = end;
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
            ids::leave(self.context.id);
        }
        record::take_into(self.context.id, payload);
        self.redaction.apply(payload);
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
        let context = &self.context;
        if let (Some(start), Some(end)) = (context.start, end) {
            for l in &listeners.monotonic {
                guarded(failures, &l.entry, name, || {
                    l.subscriber.call(name, start, end, transaction_id, payload)
                });
            }
        }
        for l in &listeners.evented {
            guarded(failures, &l.entry, name, || l.subscriber.finish(name, context, payload));
        }
        for &i in &self.silenceable {
            let l = &listeners.silenceable[i as usize];
            guarded(failures, &l.entry, name, || l.subscriber.finish(name, context, payload));
        }
        if let (Some(start), Some(end)) = (context.start, end) {
            if !listeners.event.is_empty() || !listeners.owned.is_empty() {
                let event = Event {
                    name: resolved.name.clone(),
                    start,
                    end,
                    transaction_id,
                    id: context.id,
                    parent_id: context.parent_id,
                    trace_id: context.trace_id,
                    payload: mem::take(payload),
                    cpu_time: self.cpu_start.zip(cpu_end).map(|(a, b)| b.saturating_sub(a)),
                    allocations: self
                        .allocations_start
                        .zip(allocations_end)
                        .map(|(a, b)| b.saturating_sub(a)),
                    outcome,
                    location: context.location,
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

/// Runs `body` as one event of `resolved`, under `parent` when given (else the thread's current
/// context): the engine of `instrument`.
#[inline]
pub(crate) fn run<T>(
    inner: &Inner,
    resolved: Arc<Resolved>,
    parent: Option<ids::Frame>,
    location: Option<&'static Location>,
    payload: impl FnOnce() -> Payload,
    body: impl FnOnce(&mut Payload) -> T,
) -> T {
    let Some(mut active) = Active::prepare(inner, resolved) else {
        return unlistened(body);
    };
    active.set_location(location);
    let mut guard = FinishOnDrop {
        inner,
        active,
        payload: CheapDrop::new(payload()),
        finished: false,
    };
    guard.active.start(&mut guard.payload, true, parent);
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
