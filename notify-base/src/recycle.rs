//! Recycled event allocations: [`recycle`], [`recycle_all`].
//!
//! An event delivered to owned subscribers lives in an `Arc<Event>` (about 480 bytes): one
//! allocation per event on the instrumenting thread, and, for an exporter, one free on the
//! exporter's thread (a free of memory another thread allocated, the dearest kind for the
//! allocator). An exporter that is done with an event (converted, encoded, written) gives it back
//! here; the next owned event of any thread is then written into that allocation in place, so a
//! steady flow of exported events allocates nothing per event.
//!
//! How: the exporter's thread empties each returned event that nobody else holds (its payload is
//! dropped there, not on the instrumenting thread; its name is kept, so refilling it with the same
//! name touches no reference count) and puts it on a process-wide spare
//! list, at most [`MAX_SPARE_EVENTS`]. An instrumenting thread takes spares in runs of
//! [`TAKE_AT_ONCE`] into a list of its own (one lock per run, none per event) and fills one per owned
//! event. Memory is bounded: the spare list, plus at most [`TAKE_AT_ONCE`] spares per thread, freed
//! when the thread exits. An event still shared when returned (a subscriber kept a clone) is
//! simply dropped, as without recycling.

use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::event::Event;

/// At most this many emptied events wait on the process-wide spare list (about 2 MB); more
/// returned are freed.
pub const MAX_SPARE_EVENTS: usize = 4_096;

/// How many spares an instrumenting thread takes from the process-wide list at once (and so
/// keeps at most).
pub const TAKE_AT_ONCE: usize = 32;

/// The process-wide spare list.
static SPARE: Mutex<Vec<Arc<Event>>> = Mutex::new(Vec::new());

/// `SPARE`'s length, read without the lock: a thread with no spares of its own takes the lock
/// only when there are some.
static SPARE_LEN: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// This thread's spares, taken from `SPARE` in runs.
    static MINE: RefCell<Vec<Arc<Event>>> = const { RefCell::new(Vec::new()) };
}

/// Gives `event` back for reuse: when nobody else holds it, its payload is dropped here
/// (on the calling thread, which should be the exporter's) and its allocation waits for the next
/// owned event of any thread. Returns whether it was kept: `false` when another clone is alive
/// (then this one is simply dropped) or the spare list is full (then it is freed).
///
/// An exporter calls this (or [`recycle_all`]) when it no longer needs the event, after
/// converting or encoding it. It is never needed for correctness: an event dropped instead is
/// freed, as usual.
///
/// ```
/// use notify_core::{Event, Notifier, OwnedEventSubscriber, Payload, Subscriber};
/// use std::sync::{mpsc, Arc, Mutex};
///
/// struct Forward(Mutex<mpsc::Sender<Arc<Event>>>);
/// impl OwnedEventSubscriber for Forward {
///     fn deliver(&self, event: &Arc<Event>) { let _ = self.0.lock().unwrap().send(event.clone()); }
/// }
/// let (tx, rx) = mpsc::channel();
/// let notifier = Notifier::new();
/// let _ = notifier.subscribe("job.run", Subscriber::owned(Forward(Mutex::new(tx))));
/// notifier.instrument("job.run", || Payload::new().with("id", 1_u64), |_| ());
/// let event = rx.recv().unwrap();
/// assert_eq!(event.payload().len(), 1);
/// assert!(notify_core::export::recycle(event), "kept: nobody else holds it");
/// ```
pub fn recycle(mut event: Arc<Event>) -> bool {
    if !empty_if_unique(&mut event) {
        return false;
    }
    let mut spare = SPARE.lock().unwrap_or_else(|e| e.into_inner());
    if spare.len() >= MAX_SPARE_EVENTS {
        drop(spare);
        return false;
    }
    spare.push(event);
    SPARE_LEN.store(spare.len(), Ordering::Relaxed);
    true
}

/// [`recycle`] for a batch, under one lock: empties `events` and returns how many were kept for
/// reuse (the others were still shared, or the spare list was full: they are dropped).
///
/// ```
/// use notify_core::{Event, Payload};
/// use std::{sync::Arc, time::Instant};
///
/// let now = Instant::now();
/// let kept = Arc::new(Event::new("a.b", now, now, Payload::new()));
/// let shared = Arc::new(Event::new("a.b", now, now, Payload::new()));
/// let clone = shared.clone();
/// let mut batch = vec![kept, shared];
/// assert_eq!(notify_core::export::recycle_all(&mut batch), 1, "the shared one is only dropped");
/// assert!(batch.is_empty());
/// assert_eq!(Arc::strong_count(&clone), 1);
/// ```
pub fn recycle_all(events: &mut Vec<Arc<Event>>) -> usize {
    events.retain_mut(empty_if_unique);
    if events.is_empty() {
        return 0;
    }
    let kept = {
        let mut spare = SPARE.lock().unwrap_or_else(|e| e.into_inner());
        let room = MAX_SPARE_EVENTS.saturating_sub(spare.len()).min(events.len());
        spare.extend(events.drain(..room));
        SPARE_LEN.store(spare.len(), Ordering::Relaxed);
        room
    };
    // Beyond the bound: freed here, outside the lock.
    events.clear();
    kept
}

/// Empties `event`'s payload (and drops its tracestate and baggage) when this is its only handle;
/// `false` when shared. The name is kept
/// (a static one, or a reference to the notifier's shared name): the next event of the same name
/// filled into this allocation then touches no reference count, whose cache line would otherwise
/// move between the instrumenting and the exporter's thread on every event.
fn empty_if_unique(event: &mut Arc<Event>) -> bool {
    let Some(event) = Arc::get_mut(event) else {
        return false;
    };
    event.payload.clear();
    // Dropped here, on the exporter's thread, not where the next event refills this one (and the
    // request's baggage is not kept alive by a spare).
    event.trace_state = Default::default();
    event.baggage = Default::default();
    true
}

/// An emptied event of this thread's spares, nobody else holding it, when there is one: what
/// dispatch fills in place of a new `Arc<Event>`. `None` when there is none (then it allocates),
/// also while this thread exits.
#[inline]
pub(crate) fn spare_event() -> Option<Arc<Event>> {
    MINE.try_with(|mine| {
        let mut mine = mine.try_borrow_mut().ok()?;
        match mine.pop() {
            Some(event) => Some(event),
            None if SPARE_LEN.load(Ordering::Relaxed) > 0 => take_run(&mut mine),
            None => None,
        }
    })
    .ok()
    .flatten()
}

/// Moves a run of spares from the process-wide list to `mine` and returns one of them.
#[cold]
#[inline(never)]
fn take_run(mine: &mut Vec<Arc<Event>>) -> Option<Arc<Event>> {
    {
        let mut spare = SPARE.lock().unwrap_or_else(|e| e.into_inner());
        let from = spare.len().saturating_sub(TAKE_AT_ONCE);
        mine.extend(spare.drain(from..));
        SPARE_LEN.store(spare.len(), Ordering::Relaxed);
    }
    mine.pop()
}

/// Spares on the process-wide list now (tests).
#[cfg(test)]
pub(crate) fn spare_len() -> usize {
    SPARE_LEN.load(Ordering::Relaxed)
}

/// Drops this thread's spares (tests: a known starting point).
#[cfg(test)]
pub(crate) fn forget_mine() {
    MINE.with(|mine| mine.borrow_mut().clear());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{EventOptions, Notifier, Outcome, OwnedEventSubscriber, Subscriber};
    use std::sync::mpsc;
    use std::time::Instant;

    struct Forward(Mutex<mpsc::Sender<Arc<Event>>>);

    impl OwnedEventSubscriber for Forward {
        fn deliver(&self, event: &Arc<Event>) {
            let _ = self.0.lock().unwrap().send(event.clone());
        }
    }

    /// The fields an event-object subscriber saw, to compare with the owned event.
    type Seen = (
        String,
        crate::EventId,
        Option<crate::EventId>,
        crate::TraceId,
        String,
        Outcome,
        bool,
    );

    fn seen(event: &Event) -> Seen {
        (
            event.name().to_owned(),
            event.id(),
            event.parent_id(),
            event.trace_id(),
            format!("{:?}", event.payload()),
            event.outcome(),
            event.cpu_time().is_some(),
        )
    }

    // One test: the spare list is process-wide, and only this test of the crate fills it.
    #[test]
    fn recycled_events_are_refilled_in_place_whole_and_bounded() {
        forget_mine();
        let notifier = Notifier::new();
        let (tx, rx) = mpsc::channel();
        let _ = notifier.subscribe(crate::Pattern::all(), Subscriber::owned(Forward(Mutex::new(tx))));
        let views = Arc::new(Mutex::new(Vec::new()));
        let sink = views.clone();
        // CPU time only for the first name: the refilled event must not keep the first's.
        let _ = notifier.subscribe(
            "first.one",
            Subscriber::event_with(
                EventOptions {
                    cpu_time: true,
                    ..Default::default()
                },
                move |e: &Event| sink.lock().unwrap().push(seen(e)),
            ),
        );
        let sink = views.clone();
        let _ = notifier.subscribe(
            "second.two",
            Subscriber::event(move |e: &Event| sink.lock().unwrap().push(seen(e))),
        );

        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            notifier.instrument(
                "first.one",
                || crate::Payload::new().with("owned", String::from("a long owned text, more than inline")),
                |_| panic!("the block fails"),
            )
        }));
        assert!(panicked.is_err());
        let first = rx.recv().unwrap();
        assert_eq!(first.outcome(), Outcome::Panicked);
        let first_at = Arc::as_ptr(&first);
        assert!(recycle(first), "nobody else holds it");
        assert_eq!(spare_len(), 1);

        notifier.instrument("outer.root", crate::Payload::new, |_| {
            notifier.instrument("second.two", || crate::Payload::new().with("rows", 3_u64), |_| ());
        });
        let second = rx.recv().unwrap();
        assert_eq!(Arc::as_ptr(&second), first_at, "the same allocation, filled in place");
        let outer = rx.recv().unwrap();
        assert_ne!(Arc::as_ptr(&outer), first_at);
        let views = views.lock().unwrap();
        assert_eq!(views.len(), 2);
        assert_eq!(seen(&second), views[1], "every field is the second event's");
        assert_eq!(second.parent_id(), Some(outer.id()));
        assert_eq!(second.payload().len(), 1);
        assert_eq!(second.outcome(), Outcome::Completed);
        assert_eq!(second.cpu_time(), None);
        assert_eq!(second.location(), None);
        assert!(second.start() <= second.end());

        // Shared: not kept, and the other handle's event is untouched.
        let clone = second.clone();
        assert!(!recycle(second));
        assert_eq!(clone.payload().len(), 1);
        assert_eq!(clone.name(), "second.two");
        drop(outer);

        // Bounded: a batch beyond the room left is freed, not kept.
        forget_mine();
        let now = Instant::now();
        let mut batch: Vec<Arc<Event>> = (0..MAX_SPARE_EVENTS + 10)
            .map(|_| Arc::new(Event::new("x.y", now, now, crate::Payload::new())))
            .collect();
        let room = MAX_SPARE_EVENTS - spare_len();
        assert_eq!(recycle_all(&mut batch), room);
        assert!(batch.is_empty());
        assert_eq!(spare_len(), MAX_SPARE_EVENTS);
        assert!(
            !recycle(Arc::new(Event::new("x.y", now, now, crate::Payload::new()))),
            "full"
        );
        // A thread takes a run of them, no more.
        assert!(spare_event().is_some());
        assert_eq!(spare_len(), MAX_SPARE_EVENTS - TAKE_AT_ONCE);
        assert_eq!(MINE.with(|m| m.borrow().len()), TAKE_AT_ONCE - 1);
        forget_mine();
    }
}
