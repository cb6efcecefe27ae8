//! [`record`]: facts added to the current event's payload from code that does not hold it
//! (tracing's `Span::record`).
//!
//! A recorded fact waits in its thread's list, tagged with the event it belongs to, until that
//! event takes it: at its finish, at the end of each scope that made it current (a poll of an
//! instrumented future, a [`Handle::enter`](crate::Handle::enter) guard), always on the recording
//! thread, which takes its own list's (uncontended) lock. An event made current at its start (the
//! block of `instrument`, a function under `#[instrument_event]`) and finished on another thread
//! takes its facts from the list of the thread that started it: the lists are reachable from a
//! global map keyed by that thread's transaction id, one lookup whatever the number of threads
//! that came and went. A list leaves the map when its thread exits, or, if facts still wait in it
//! then, when the last of them is taken.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use crate::ids;
use crate::payload::{Payload, Value};
use crate::sync::StaticMutex;

/// Facts (distinct event and key) waiting per thread; past this many the oldest is dropped
/// (counted in [`records_dropped`]).
const CAPACITY: usize = 256;

/// One thread's waiting facts: (event id, key, value), in record order.
type Facts = StaticMutex<List>;

/// One thread's waiting facts, and whether the thread exited.
#[derive(Default)]
struct List {
    facts: Vec<(u64, &'static str, Value)>,
    /// Set (under `LISTS`) when the thread exited with facts waiting: the list leaves `LISTS`
    /// with its last fact.
    exited: bool,
}

/// A thread's list as its thread-local holds it: registered in [`LISTS`] under the thread's
/// transaction id when made, unregistered when its thread exits with the list empty.
struct ThreadFacts {
    transaction: u64,
    facts: Arc<Facts>,
}

impl Drop for ThreadFacts {
    /// The thread exits: its list leaves the map now if empty, else when a finish elsewhere takes
    /// its last fact ([`take_from_thread`]). Lock order: `LISTS`, then a list.
    fn drop(&mut self) {
        let mut lists = LISTS.lock();
        let mut list = self.facts.lock();
        if list.facts.is_empty() {
            lists.remove(&self.transaction);
        } else {
            list.exited = true;
        }
    }
}

thread_local! {
    /// How many facts wait on this thread: read by every finish, so a plain `Cell`. It may
    /// overcount (another thread's finish took some): the next take on this thread recounts.
    static WAITING: Cell<usize> = const { Cell::new(0) };
    /// This thread's list, registered in [`LISTS`] when first used: at the first fact (a take
    /// reads it only when a fact waits).
    static FACTS: ThreadFacts = register();
}

/// The lists of live threads that ever held a fact, and of exited threads whose lists still hold
/// facts, by the thread's transaction id (unique per thread, never reused).
static LISTS: StaticMutex<BTreeMap<u64, Arc<Facts>>> = StaticMutex::new(BTreeMap::new());

/// Facts dropped because [`CAPACITY`] facts already waited on their thread.
static DROPPED: AtomicU64 = AtomicU64::new(0);
/// Whether a drop was reported (only the first is).
static DROPPED_REPORTED: AtomicBool = AtomicBool::new(false);

/// Adds `key = value` to the payload of the current event (the innermost listened event entered on
/// this thread: the body of `instrument`, a [`Handle`](crate::Handle) inside its
/// [`enter`](crate::Handle::enter) guard, an instrumented future while it is polled, a function
/// under `#[instrument_event]`), so subscribers see it at `finish` — tracing's `Span::record`. A
/// later value for the same key replaces the earlier one.
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
/// let before = notify_core::records_dropped();
/// notifier.instrument("wide.app", Payload::new, |_| keys.iter().for_each(|k| notify_core::record(k, 1_u64)));
/// assert_eq!(notify_core::records_dropped() - before, 1);
/// ```
pub fn records_dropped() -> u64 {
    DROPPED.load(Ordering::Relaxed)
}

#[inline(never)]
fn keep(event: u64, key: &'static str, value: Value) {
    let kept = FACTS.try_with(|list| {
        let facts = &mut list.facts.lock().facts;
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
             events to finish. Such drops are counted (notify_core::records_dropped) and not \
             reported again."
        ));
    }
}

/// Makes this thread's list and puts it in [`LISTS`]. Called from the thread-local's initializer,
/// so with no list of this crate locked by this thread: lock order is always `LISTS`, then a list.
#[cold]
fn register() -> ThreadFacts {
    let transaction = ids::transaction_id().get();
    let facts = Arc::new(Facts::new(List::default()));
    LISTS.lock().insert(transaction, facts.clone());
    ThreadFacts { transaction, facts }
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
        let facts = &mut list.facts.lock().facts;
        take_from(facts, event, payload);
        WAITING.set(facts.len());
    });
}

/// Moves the facts recorded for `event` on the thread whose transaction id is `transaction` into
/// `payload`: the finish, elsewhere, of an event made current at its start on that thread. One map
/// lookup; the list of an exited thread leaves the map with its last fact.
#[cold]
pub(crate) fn take_from_thread(transaction: u64, event: u64, payload: &mut Payload) {
    let mut lists = LISTS.lock();
    let Some(list) = lists.get(&transaction) else {
        return;
    };
    let mut list = list.lock();
    take_from(&mut list.facts, event, payload);
    let orphan_emptied = list.exited && list.facts.is_empty();
    drop(list);
    if orphan_emptied {
        lists.remove(&transaction);
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

/// Whether the list of the thread with transaction id `transaction` is in [`LISTS`] (tests).
#[cfg(test)]
pub(crate) fn is_registered(transaction: u64) -> bool {
    LISTS.lock().contains_key(&transaction)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use crate::{Event, Handle, Notifier, Payload, Subscriber, Value};

    /// Issue 33 item 6: lists of exited threads leave the map (once empty), so a finish elsewhere
    /// looks up one list, and 20,000 threads that came and went leave nothing registered.
    #[test]
    fn lists_of_exited_threads_leave_the_map_and_cross_thread_finishes_still_get_their_facts() {
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
        let mut moved: Vec<(u64, Handle)> = Vec::with_capacity(THREADS);
        let mut finished_there = Vec::with_capacity(THREADS);
        for i in 0..THREADS {
            let n = notifier.clone();
            // Half the threads send their started handle away (its fact waits in their list after
            // they exit), half finish theirs themselves (their list is empty when they exit).
            let send_away = i % 2 == 0;
            let (transaction, handle) = std::thread::spawn(move || {
                let mut handle = n.build_handle("moved.record", Payload::new());
                handle.start().unwrap();
                super::record("thread", i as u64);
                let transaction = crate::transaction_id().get();
                if send_away {
                    (transaction, Some(handle))
                } else {
                    handle.finish().unwrap();
                    (transaction, None)
                }
            })
            .join()
            .unwrap();
            match handle {
                Some(handle) => moved.push((transaction, handle)),
                None => finished_there.push(transaction),
            }
        }
        assert_eq!(with_fact.load(Ordering::Relaxed), THREADS / 2);
        let still = finished_there.iter().filter(|t| super::is_registered(**t)).count();
        assert_eq!(still, 0, "lists of exited threads with nothing waiting are gone");
        let waiting = moved.iter().filter(|(t, _)| super::is_registered(*t)).count();
        assert_eq!(waiting, THREADS / 2, "lists of exited threads with a fact waiting stay");
        for (_, handle) in &mut moved {
            handle.finish().unwrap();
        }
        assert_eq!(with_fact.load(Ordering::Relaxed), THREADS, "every finish got its fact");
        let left = moved.iter().filter(|(t, _)| super::is_registered(*t)).count();
        assert_eq!(left, 0, "each list left the map with its last fact");
    }

    /// A live thread's list stays registered while the thread lives, emptied or not.
    #[test]
    fn the_list_of_a_live_thread_stays_registered() {
        let notifier = Notifier::new();
        let _s = notifier.subscribe("live.record", Subscriber::event(|_: &Event| {}));
        notifier.instrument("live.record", Payload::new, |_| super::record("k", Value::U64(1)));
        assert!(super::is_registered(crate::transaction_id().get()));
    }
}
