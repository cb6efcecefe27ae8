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

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use parking_lot::Mutex;

/// How many ids a thread reserves at a time.
const BLOCK: u64 = 1024;

static NEXT_BLOCK: AtomicU64 = AtomicU64::new(1);
static NEXT_TRANSACTION: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// Everything per-thread in one place, so an event's start reads it through one access.
    static THREAD: Thread = const {
        Thread {
            next_id: Cell::new(0),
            end_id: Cell::new(0),
            transaction: Cell::new(0),
            seen_orphaned: Cell::new(0),
            stack: Stack { ids: [const { Cell::new(0) }; DEPTH], len: Cell::new(0) },
        }
    };
}

/// A thread's ids: its block of event ids, its transaction id, its entered events. Plain `Cell`s:
/// no destructor, each access a load or a store.
struct Thread {
    /// The next event id of this thread's block and the block's end.
    next_id: Cell<u64>,
    end_id: Cell<u64>,
    /// 0 until first asked.
    transaction: Cell<u64>,
    /// The value of `ORPHANED` at this thread's last look at the orphans.
    seen_orphaned: Cell<usize>,
    stack: Stack,
}

impl Thread {
    #[inline]
    fn next_event_id(&self) -> u64 {
        let (mut next, mut end) = (self.next_id.get(), self.end_id.get());
        if next == end {
            next = NEXT_BLOCK.fetch_add(BLOCK, Ordering::Relaxed);
            end = next + BLOCK;
            self.end_id.set(end);
        }
        self.next_id.set(next + 1);
        next
    }

    #[inline]
    fn transaction_id(&self) -> u64 {
        let id = self.transaction.get();
        if id != 0 {
            return id;
        }
        let id = NEXT_TRANSACTION.fetch_add(1, Ordering::Relaxed);
        self.transaction.set(id);
        id
    }

    #[inline]
    fn current_event_id(&self) -> Option<u64> {
        let orphaned = ORPHANED.load(Ordering::Relaxed);
        if orphaned != self.seen_orphaned.get() {
            self.claim_orphans(orphaned);
        }
        self.stack.top()
    }

    #[cold]
    fn claim_orphans(&self, orphaned: usize) {
        self.seen_orphaned.set(orphaned);
        let mut orphans = ORPHANS.lock();
        orphans.retain(|&orphan| !self.stack.remove(orphan));
    }

    #[inline]
    fn enter(&self, id: u64) {
        let len = self.stack.len.get();
        if len < DEPTH {
            self.stack.ids[len].set(id);
        }
        self.stack.len.set(len + 1);
    }
}

/// The ids of an event starting on this thread, in one thread-local access: a fresh event id, its
/// parent (the current event) and the transaction id. With `enter`, the event becomes the
/// thread's current event until [`leave`].
#[inline]
pub(crate) fn begin(enter: bool) -> (u64, Option<u64>, u64) {
    THREAD.with(|thread| {
        let id = thread.next_event_id();
        let parent = thread.current_event_id();
        let transaction = thread.transaction_id();
        if enter {
            thread.enter(id);
        }
        (id, parent, transaction)
    })
}

/// How many entered events a thread records; deeper ones are counted, and events started inside
/// them get the deepest recorded one as parent.
const DEPTH: usize = 16;

/// A thread's entered events: a fixed array of `Cell`s, so the thread-local needs no destructor
/// and each access is a plain load or store.
struct Stack {
    ids: [Cell<u64>; DEPTH],
    /// Entered and not yet left; may exceed `DEPTH`.
    len: Cell<usize>,
}

impl Stack {
    fn top(&self) -> Option<u64> {
        let stored = self.len.get().min(DEPTH);
        stored.checked_sub(1).map(|i| self.ids[i].get())
    }

    /// Removes the recorded entry `id`; false when it is not recorded here.
    fn remove(&self, id: u64) -> bool {
        let len = self.len.get();
        let stored = len.min(DEPTH);
        let Some(at) = (0..stored).rev().find(|&i| self.ids[i].get() == id) else {
            return false;
        };
        for i in at..stored - 1 {
            self.ids[i].set(self.ids[i + 1].get());
        }
        if len > DEPTH {
            // An unrecorded deeper entry takes the freed place; it has no id of its own, so the
            // deepest slot keeps its neighbour's id as the best parent available.
            self.ids[DEPTH - 1].set(self.ids[DEPTH - 2].get());
        }
        self.len.set(len - 1);
        true
    }
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
    THREAD.with(Thread::next_event_id)
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
    THREAD.with(Thread::transaction_id)
}

/// The id of the innermost unfinished listened event on this thread, if any: what a new event's
/// parent id will be.
///
/// ```
/// assert_eq!(notify_core::current_event_id(), None);
/// ```
pub fn current_event_id() -> Option<u64> {
    THREAD.with(Thread::current_event_id)
}

/// Makes `id` this thread's current event until [`leave`].
pub(crate) fn enter(id: u64) {
    THREAD.with(|thread| thread.enter(id));
}

/// Removes `id` from this thread's stack of entered events, wherever it is (events may finish out
/// of order). When it is not there — it was entered on another thread — it is orphaned for that
/// thread to drop.
pub(crate) fn leave(id: u64) {
    let found = THREAD.with(|thread| {
        let stack = &thread.stack;
        let len = stack.len.get();
        if len > 0 && len <= DEPTH && stack.ids[len - 1].get() == id {
            stack.len.set(len - 1);
            return true;
        }
        if stack.remove(id) {
            return true;
        }
        if len > DEPTH {
            // One of the unrecorded deep entries.
            stack.len.set(len - 1);
            return true;
        }
        false
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
    fn deep_nesting_beyond_the_recorded_depth_unwinds_exactly() {
        for id in 1..=20 {
            enter(id);
        }
        assert_eq!(current_event_id(), Some(16));
        for id in (1..=20).rev() {
            leave(id);
        }
        assert_eq!(current_event_id(), None);
        enter(7);
        assert_eq!(current_event_id(), Some(7));
        leave(7);
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
