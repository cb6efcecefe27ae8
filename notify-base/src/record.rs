//! [`record`]: facts added to the current event's payload from code that does not hold it
//! (tracing's `Span::record`).
//!
//! A recorded fact waits in a small per-thread list, tagged with the event it belongs to, until
//! that event takes it: at its finish, or after each poll of an instrumented future (both on the
//! thread that recorded it).

use std::cell::{Cell, RefCell};

use crate::ids;
use crate::payload::{Payload, Value};

/// Facts waiting per thread; past this many the oldest is dropped (an event entered here and
/// finished on another thread never takes its facts).
const CAPACITY: usize = 256;

thread_local! {
    /// How many facts wait on this thread: read by every finish, so a plain `Cell`.
    static WAITING: Cell<usize> = const { Cell::new(0) };
    static FACTS: RefCell<Vec<(u64, &'static str, Value)>> = const { RefCell::new(Vec::new()) };
}

/// Adds `key = value` to the payload of the current event (the innermost listened event entered on
/// this thread: the body of `instrument`, a started [`Handle`](crate::Handle), an instrumented
/// future while it is polled, a function under `#[instrument_event]`), so subscribers see it at
/// `finish` — tracing's `Span::record`. A later value for the same key replaces the earlier one.
///
/// When no listened event is current (nobody listens, or only an attached [`Context`](crate::Context)
/// from another thread is), nothing happens and `value` is not converted: one thread-local load and
/// a branch.
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
    let kept = FACTS.try_with(|facts| {
        let mut facts = facts.borrow_mut();
        if facts.len() == CAPACITY {
            facts.remove(0);
        }
        facts.push((event, key, value));
        facts.len()
    });
    if let Ok(waiting) = kept {
        WAITING.set(waiting);
    }
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
    let _ = FACTS.try_with(|facts| {
        let mut facts = facts.borrow_mut();
        let mut i = 0;
        while i < facts.len() {
            if facts[i].0 == event {
                let (_, key, value) = facts.remove(i);
                payload.insert(key, value);
            } else {
                i += 1;
            }
        }
        WAITING.set(facts.len());
    });
}
