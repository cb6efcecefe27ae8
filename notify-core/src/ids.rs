//! Transaction ids, event ids and the current (innermost unfinished) event of each thread.
//!
//! Ids come from per-thread blocks reserved from one global counter, so handing one out is a
//! thread-local increment, not a contended atomic.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

/// How many ids a thread reserves at a time.
const BLOCK: u64 = 1024;

static NEXT_BLOCK: AtomicU64 = AtomicU64::new(1);
static NEXT_TRANSACTION: AtomicU64 = AtomicU64::new(1);

thread_local! {
    static NEXT_ID: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
    static TRANSACTION: Cell<u64> = const { Cell::new(0) };
    static CURRENT: Cell<Option<u64>> = const { Cell::new(None) };
}

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
    CURRENT.with(Cell::get)
}

/// Makes `id` the current event; returns what was current before (to restore with [`restore`]).
pub(crate) fn enter(id: Option<u64>) -> Option<u64> {
    CURRENT.with(|cell| cell.replace(id))
}

/// Restores the current event saved by [`enter`].
pub(crate) fn restore(previous: Option<u64>) {
    CURRENT.with(|cell| cell.set(previous));
}

#[cfg(test)]
mod tests {
    use super::*;

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
