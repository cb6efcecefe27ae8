//! [`record`]: facts added to the current event's payload from code that does not hold it
//! (tracing's `Span::record`).
//!
//! A recorded fact waits in its thread's list, tagged with the event it belongs to, until that
//! event takes it, always on the recording thread: at the end of the scope that made the event
//! current there (the block of `instrument`, a function under `#[instrument_event]`, an
//! [`Instrumenter::start`](crate::Instrumenter::start)ed event at its finish; a
//! [`Handle::enter`](crate::Handle::enter) guard, which is what each poll of an instrumented
//! future is, when it drops: the facts then travel in the handle to wherever it finishes). Every
//! such scope is bound to its thread (a block, or a `!Send` guard), so no list is ever read from
//! another thread: a list is a plain thread-local, freed with its thread, and a finish costs the
//! same however many threads came and went.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::ids;
use crate::payload::{Payload, Value};

/// Facts (distinct event and key) waiting per thread; past this many the oldest is dropped
/// (counted in [`records_dropped`]).
const CAPACITY: usize = 256;

/// A recorded fact: (event id, key, value).
type Fact = (u64, &'static str, Value);

/// One thread's waiting facts, in record order.
struct ThreadFacts {
    facts: RefCell<Vec<Fact>>,
    /// The thread's transaction id, so tests can tell its list is gone when it exits.
    #[cfg(test)]
    transaction: u64,
}

impl ThreadFacts {
    fn new() -> ThreadFacts {
        #[cfg(test)]
        let transaction = {
            let transaction = ids::transaction_id().get();
            tests::LIVE.lock().unwrap().insert(transaction);
            transaction
        };
        ThreadFacts {
            facts: RefCell::new(Vec::new()),
            #[cfg(test)]
            transaction,
        }
    }
}

#[cfg(test)]
impl Drop for ThreadFacts {
    fn drop(&mut self) {
        tests::LIVE.lock().unwrap().remove(&self.transaction);
    }
}

thread_local! {
    /// How many facts wait on this thread: read by every finish, so a plain `Cell`.
    static WAITING: Cell<usize> = const { Cell::new(0) };
    /// This thread's list (made at the first fact: a take reads it only when a fact waits).
    static FACTS: ThreadFacts = ThreadFacts::new();
}

/// Facts dropped because [`CAPACITY`] facts already waited on their thread.
static DROPPED: AtomicU64 = AtomicU64::new(0);
/// Whether a drop was reported (only the first is).
static DROPPED_REPORTED: AtomicBool = AtomicBool::new(false);

/// Adds `key = value` to the payload of the current event (the innermost listened event entered on
/// this thread: the body of `instrument`, a [`Handle`](crate::Handle) inside its
/// [`enter`](crate::Handle::enter) guard or [`in_scope`](crate::Handle::in_scope) closure, an
/// instrumented future while it is polled, a function under `#[instrument_event]`), so subscribers
/// see it at `finish` — tracing's `Span::record`. A later value for the same key replaces the
/// earlier one. Facts recorded inside a handle's `enter` guard go with the handle when the guard
/// drops, so they reach its finish on whatever thread that happens.
///
/// When no listened event is current (nobody listens, or only an attached [`Context`](crate::Context)
/// from another thread is), nothing happens and `value` is not converted: one thread-local load and
/// a branch. At most 256 facts (distinct event and key) wait per thread for their events to take
/// them; past that the oldest waiting fact is dropped, counted in [`records_dropped`], and the
/// first such drop of the process is reported (`log::error!`, target `notify`, or stderr).
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

/// How many facts [`record`] dropped in this process because 256 facts (distinct event and key)
/// already waited on the recording thread: the oldest waiting fact is dropped for the new one, so
/// its event is delivered without it. A count since the process started, for all notifiers (a fact
/// belongs to whichever event is current, not to a notifier).
///
/// ```
/// use notify_core::{Notifier, Payload, Subscriber};
/// let notifier = Notifier::new();
/// notifier.subscribe("wide.app", Subscriber::event(|_: &notify_core::Event| {}));
/// let keys: Vec<&'static str> = (0..257).map(|i| &*format!("k{i}").leak()).collect();
/// let before = notify_core::event::records_dropped();
/// notifier.instrument("wide.app", Payload::new, |_| keys.iter().for_each(|k| notify_core::record(k, 1_u64)));
/// assert_eq!(notify_core::event::records_dropped() - before, 1);
/// ```
pub fn records_dropped() -> u64 {
    DROPPED.load(Ordering::Relaxed)
}

#[inline(never)]
fn keep(event: u64, key: &'static str, value: Value) {
    let kept = FACTS.try_with(|list| {
        let mut facts = list.facts.borrow_mut();
        let mut dropped = false;
        if let Some(fact) = facts.iter_mut().rev().find(|f| f.0 == event && f.1 == key) {
            fact.2 = value;
        } else {
            if facts.len() == CAPACITY {
                facts.remove(0);
                dropped = true;
            }
            facts.push((event, key, value));
        }
        (facts.len(), dropped)
    });
    if let Ok((waiting, dropped)) = kept {
        WAITING.set(waiting);
        if dropped {
            count_dropped();
        }
    }
}

/// Counts one dropped fact and reports the first of the process.
#[cold]
fn count_dropped() {
    DROPPED.fetch_add(1, Ordering::Relaxed);
    if !DROPPED_REPORTED.swap(true, Ordering::Relaxed) {
        crate::failure::report(&format!(
            "record: a fact was dropped: {CAPACITY} facts already waited on this thread for their \
             events to finish. Such drops are counted (notify_core::event::records_dropped) and not \
             reported again."
        ));
    }
}

/// Moves the facts recorded on this thread for `event` into `payload`, in record order.
#[inline]
pub(crate) fn take_into(event: u64, payload: &mut Payload) {
    if WAITING.get() != 0 {
        take_waiting(event, |key, value| {
            payload.insert(key, value);
        });
    }
}

/// True when facts wait on this thread (one thread-local load).
#[inline]
pub(crate) fn any_waiting() -> bool {
    WAITING.get() != 0
}

/// Moves the facts recorded on this thread for `event` to the end of `facts`, in record order
/// (after [`any_waiting`] said some wait).
#[cold]
pub(crate) fn take_into_vec(event: u64, facts: &mut Vec<(&'static str, Value)>) {
    take_waiting(event, |key, value| facts.push((key, value)));
}

#[cold]
fn take_waiting(event: u64, mut sink: impl FnMut(&'static str, Value)) {
    let taken = FACTS.try_with(|list| {
        let mut facts = list.facts.borrow_mut();
        let mut taken = Vec::new();
        let mut i = 0;
        while i < facts.len() {
            if facts[i].0 == event {
                let (_, key, value) = facts.remove(i);
                taken.push((key, value));
            } else {
                i += 1;
            }
        }
        WAITING.set(facts.len());
        taken
    });
    // Outside the borrow: the sink drops replaced values, which is no user code, but keeps the
    // list's borrow as short as possible all the same.
    for (key, value) in taken.unwrap_or_default() {
        sink(key, value);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::BTreeSet;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    use crate::{Event, Handle, Notifier, Payload, Subscriber, Value};

    /// The transaction ids of the threads whose list exists.
    pub(super) static LIVE: Mutex<BTreeSet<u64>> = Mutex::new(BTreeSet::new());

    fn live(transaction: u64) -> bool {
        LIVE.lock().unwrap().contains(&transaction)
    }

    /// Issue 33 item 6: a thread's list goes with its thread, so nothing grows with the threads
    /// that came and went, and a handle entered on a thread that exited and finished elsewhere
    /// still gets the facts recorded there (they left with its `enter` guard).
    #[test]
    fn lists_go_with_their_threads_and_handles_finished_elsewhere_still_get_their_facts() {
        const THREADS: usize = 20_000;
        let notifier = Notifier::new();
        let with_fact = Arc::new(AtomicUsize::new(0));
        let counter = with_fact.clone();
        let _s = notifier.subscribe(
            "moved.record",
            Subscriber::event(move |e: &Event| {
                if e.payload().get("thread").is_some() {
                    counter.fetch_add(1, Ordering::Relaxed);
                }
            }),
        );
        let mut moved: Vec<Handle> = Vec::with_capacity(THREADS / 2);
        let mut transactions = Vec::with_capacity(THREADS);
        for i in 0..THREADS {
            let n = notifier.clone();
            // Half the threads send their handle away to finish here, half finish it themselves.
            let send_away = i % 2 == 0;
            let (transaction, handle) = std::thread::spawn(move || {
                let mut handle = n.build_handle("moved.record", Payload::new());
                handle.start().unwrap();
                handle.in_scope(|| super::record("thread", i as u64));
                let transaction = crate::transaction_id().get();
                assert!(live(transaction), "the fact was kept in this thread's list");
                if send_away {
                    (transaction, Some(handle))
                } else {
                    handle.finish().unwrap();
                    (transaction, None)
                }
            })
            .join()
            .unwrap();
            transactions.push(transaction);
            moved.extend(handle);
        }
        assert_eq!(with_fact.load(Ordering::Relaxed), THREADS / 2);
        let left = transactions.iter().filter(|t| live(**t)).count();
        assert_eq!(left, 0, "every list went with its thread");
        for handle in &mut moved {
            handle.finish().unwrap();
        }
        assert_eq!(with_fact.load(Ordering::Relaxed), THREADS, "every finish got its fact");
    }

    /// A fact recorded outside any scope of a started handle is not kept: a started handle is not
    /// current (issue 33 item 9).
    #[test]
    fn a_started_handle_outside_its_scope_takes_no_facts() {
        let notifier = Notifier::new();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let _s = notifier.subscribe(
            "scoped.record",
            Subscriber::event(move |e: &Event| {
                let keys = e.payload().iter().map(|(k, v)| (k.to_owned(), v.clone()));
                sink.lock().unwrap().extend(keys);
            }),
        );
        let mut handle = notifier.build_handle("scoped.record", Payload::new());
        handle.start().unwrap();
        super::record("outside", Value::U64(1));
        handle.in_scope(|| super::record("inside", Value::U64(2)));
        handle.finish().unwrap();
        assert_eq!(*seen.lock().unwrap(), [("inside".to_owned(), Value::U64(2))]);
        assert_eq!(super::WAITING.get(), 0, "nothing waits on this thread");
    }
}
