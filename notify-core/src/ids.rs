//! Transaction ids, event ids and the current (innermost unfinished) event of each thread.
//!
//! Ids come from per-thread blocks reserved from one global counter, so handing one out is a
//! thread-local increment, not a contended atomic.
//!
//! The current event is the top of a per-thread stack of entered events. An event finished out of
//! order is removed wherever it is in the stack. An event entered on one thread and finished on
//! another (a handle sent away) cannot reach its thread's stack: it is *orphaned* into a small
//! global list, and its thread drops it from its stack the next time it asks for the current
//! event (one relaxed load when there are no orphans).

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use parking_lot::Mutex;
use smallvec::SmallVec;

/// How many ids a thread reserves at a time.
const BLOCK: u64 = 1024;

static NEXT_BLOCK: AtomicU64 = AtomicU64::new(1);
static NEXT_TRANSACTION: AtomicU64 = AtomicU64::new(1);

thread_local! {
    static NEXT_ID: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
    static TRANSACTION: Cell<u64> = const { Cell::new(0) };
    static STACK: RefCell<SmallVec<[u64; 8]>> = const { RefCell::new(SmallVec::new_const()) };
    static SEEN_ORPHANED: Cell<usize> = const { Cell::new(0) };
}

/// Events entered on one thread and finished on another, not yet dropped from their stack.
static ORPHANS: Mutex<Vec<u64>> = Mutex::new(Vec::new());
/// Bumped on every orphan: a thread looks at the list only when this moved since its last look,
/// so orphans of exited threads cost the others nothing.
static ORPHANED: AtomicUsize = AtomicUsize::new(0);
/// Orphans of threads that exited are never claimed; past this many the oldest are forgotten.
const MAX_ORPHANS: usize = 4096;

/// A fresh event id, unique in this process (never 0).
pub(crate) fn next_event_id() -> u64 {
    NEXT_ID.with(|cell| {
        let (mut next, mut end) = cell.get();
        if next == end {
            next = NEXT_BLOCK.fetch_add(BLOCK, Ordering::Relaxed);
            end = next + BLOCK;
        }
        cell.set((next + 1, end));
        next
    })
}

/// The transaction id of the calling thread: unique per thread, stable for its lifetime, as AS::N's
/// instrumenter id.
///
/// ```
/// let here = notify_core::transaction_id();
/// assert_eq!(here, notify_core::transaction_id());
/// let there = std::thread::spawn(notify_core::transaction_id).join().unwrap();
/// assert_ne!(here, there);
/// ```
pub fn transaction_id() -> u64 {
    TRANSACTION.with(|cell| {
        let id = cell.get();
        if id != 0 {
            return id;
        }
        let id = NEXT_TRANSACTION.fetch_add(1, Ordering::Relaxed);
        cell.set(id);
        id
    })
}

/// The id of the innermost unfinished listened event on this thread, if any: what a new event's
/// parent id will be.
///
/// ```
/// assert_eq!(notify_core::current_event_id(), None);
/// ```
pub fn current_event_id() -> Option<u64> {
    let orphaned = ORPHANED.load(Ordering::Relaxed);
    if orphaned != SEEN_ORPHANED.with(Cell::get) {
        claim_orphans(orphaned);
    }
    STACK.with(|stack| stack.borrow().last().copied())
}

/// Makes `id` this thread's current event until [`leave`].
pub(crate) fn enter(id: u64) {
    STACK.with(|stack| stack.borrow_mut().push(id));
}

/// Removes `id` from this thread's stack of entered events, wherever it is (events may finish out
/// of order). When it is not there — it was entered on another thread — it is orphaned for that
/// thread to drop.
pub(crate) fn leave(id: u64) {
    let found = STACK.with(|stack| {
        let mut stack = stack.borrow_mut();
        match stack.iter().rposition(|&entered| entered == id) {
            Some(at) => {
                stack.remove(at);
                true
            }
            None => false,
        }
    });
    if !found {
        let mut orphans = ORPHANS.lock();
        if orphans.len() == MAX_ORPHANS {
            orphans.remove(0);
        }
        orphans.push(id);
        ORPHANED.fetch_add(1, Ordering::Relaxed);
    }
}

#[cold]
fn claim_orphans(orphaned: usize) {
    SEEN_ORPHANED.with(|seen| seen.set(orphaned));
    let mut orphans = ORPHANS.lock();
    STACK.with(|stack| {
        stack
            .borrow_mut()
            .retain(|entered| match orphans.iter().position(|o| o == entered) {
                Some(at) => {
                    orphans.swap_remove(at);
                    false
                }
                None => true,
            });
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_order_and_cross_thread_finishes_leave_no_stale_current_event() {
        enter(1);
        enter(2);
        leave(1);
        assert_eq!(current_event_id(), Some(2));
        leave(2);
        assert_eq!(current_event_id(), None);
        enter(3);
        std::thread::spawn(|| leave(3)).join().unwrap();
        assert_eq!(current_event_id(), None);
    }

    #[test]
    fn event_ids_are_unique_across_threads() {
        let mut all: Vec<u64> = (0..4)
            .map(|_| std::thread::spawn(|| (0..3000).map(|_| next_event_id()).collect::<Vec<_>>()))
            .flat_map(|t| t.join().unwrap())
            .collect();
        all.extend((0..10).map(|_| next_event_id()));
        let n = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), n);
        assert!(!all.contains(&0));
    }
}
