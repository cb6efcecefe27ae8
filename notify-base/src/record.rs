//! [`record`]: facts added to the current event's payload from code that does not hold it
//! (tracing's `Span::record`).
//!
//! A recorded fact waits in its thread's list, tagged with the event it belongs to, until that
//! event takes it: at its finish, or after each poll of an instrumented future. Normally both
//! happen on the recording thread, which takes its own list's (uncontended) lock. A started
//! [`Handle`](crate::Handle) may be finished on another thread: that finish looks through every
//! thread's list, which is why the lists are reachable from a global registry and outlive their
//! threads until emptied.

use std::cell::Cell;
use std::sync::Arc;

use crate::ids;
use crate::payload::{Payload, Value};
use crate::sync::StaticMutex;

/// Facts (distinct event and key) waiting per thread; past this many the oldest is dropped.
const CAPACITY: usize = 256;

/// One thread's waiting facts: (event id, key, value), in record order.
type Facts = StaticMutex<Vec<(u64, &'static str, Value)>>;

thread_local! {
    /// How many facts wait on this thread: read by every finish, so a plain `Cell`. It may
    /// overcount (another thread's finish took some): the next take on this thread recounts.
    static WAITING: Cell<usize> = const { Cell::new(0) };
    /// This thread's list, registered in [`LISTS`] when first used: at the first fact (a take
    /// reads it only when a fact waits).
    static FACTS: Arc<Facts> = register(Arc::new(Facts::new(Vec::new())));
}

/// Every thread's list that ever held a fact; lists of exited threads stay while they hold facts.
static LISTS: StaticMutex<Vec<Arc<Facts>>> = StaticMutex::new(Vec::new());

/// Adds `key = value` to the payload of the current event (the innermost listened event entered on
/// this thread: the body of `instrument`, a started [`Handle`](crate::Handle), an instrumented
/// future while it is polled, a function under `#[instrument_event]`), so subscribers see it at
/// `finish` — tracing's `Span::record`. A later value for the same key replaces the earlier one.
/// A handle started here and finished on another thread gets the facts recorded here too.
///
/// When no listened event is current (nobody listens, or only an attached [`Context`](crate::Context)
/// from another thread is), nothing happens and `value` is not converted: one thread-local load and
/// a branch. At most 256 facts (distinct event and key) wait per thread for their events to
/// finish; past that the oldest is dropped.
///
/// ```
/// use notify_core::{Event, Notifier, Payload, Subscriber};
/// let notifier = Notifier::new();
/// notifier.subscribe("request.http", Subscriber::event(|e: &Event| {
///     assert_eq!(e.payload().get("status").and_then(|v| v.as_i64()), Some(404));
/// }));
/// fn handle() { notify_core::record("status", 404_u16); }
/// notifier.instrument("request.http", Payload::new, |_| handle());
/// notify_core::record("status", 500_u16); // no current event: nothing happens
/// ```
#[inline]
pub fn record(key: &'static str, value: impl Into<Value>) {
    let event = ids::current_entered_event();
    if event != 0 {
        keep(event, key, value.into());
    }
}

#[inline(never)]
fn keep(event: u64, key: &'static str, value: Value) {
    let kept = FACTS.try_with(|list| {
        let mut facts = list.lock();
        if let Some(fact) = facts.iter_mut().rev().find(|f| f.0 == event && f.1 == key) {
            fact.2 = value;
        } else {
            if facts.len() == CAPACITY {
                facts.remove(0);
            }
            facts.push((event, key, value));
        }
        facts.len()
    });
    if let Ok(waiting) = kept {
        WAITING.set(waiting);
    }
}

/// Puts a new thread's list in [`LISTS`], and forgets the lists of exited threads that are empty.
/// Called from the thread-local's initializer, so with no list of this crate locked by this
/// thread: lock order is always `LISTS`, then a list.
#[cold]
fn register(list: Arc<Facts>) -> Arc<Facts> {
    let mut lists = LISTS.lock();
    lists.retain(|l| Arc::strong_count(l) > 1 || !l.lock().is_empty());
    lists.push(list.clone());
    list
}

/// Moves the facts recorded on this thread for `event` into `payload`, in record order.
#[inline]
pub(crate) fn take_into(event: u64, payload: &mut Payload) {
    if WAITING.get() != 0 {
        take_waiting(event, payload);
    }
}

#[cold]
fn take_waiting(event: u64, payload: &mut Payload) {
    let _ = FACTS.try_with(|list| {
        let mut facts = list.lock();
        take_from(&mut facts, event, payload);
        WAITING.set(facts.len());
    });
}

/// Moves the facts recorded for `event` on any thread into `payload`: the finish of an event
/// entered on another thread (a handle moved between threads).
#[cold]
pub(crate) fn take_from_every_thread(event: u64, payload: &mut Payload) {
    let lists = LISTS.lock().clone();
    for list in lists {
        take_from(&mut list.lock(), event, payload);
    }
}

fn take_from(facts: &mut Vec<(u64, &'static str, Value)>, event: u64, payload: &mut Payload) {
    let mut i = 0;
    while i < facts.len() {
        if facts[i].0 == event {
            let (_, key, value) = facts.remove(i);
            payload.insert(key, value);
        } else {
            i += 1;
        }
    }
}
