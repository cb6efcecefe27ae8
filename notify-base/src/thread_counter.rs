//! [`ThreadCounter`]: a count that every thread adds to in a slot of its own, summed when read.
//!
//! A request counted in one process-wide atomic pays a locked read-modify-write (`lock xadd` on
//! x86) on a cache line every worker thread writes: uncontended it is still the slowest
//! instruction of an unlistened request's propagation, and contended it moves the line between
//! cores at every request. Here each thread writes its own slot with a plain load and store, and
//! [`ThreadCounter::sum`] reads them all (as `tracing-subscriber`'s registry keeps its per-thread
//! state, through the `thread_local` crate).

use std::sync::atomic::{AtomicU64, Ordering};

use thread_local::ThreadLocal;

/// A monotonic count, added to per thread, read as the sum of every thread's slot.
#[derive(Debug)]
pub(crate) struct ThreadCounter {
    slots: ThreadLocal<AtomicU64>,
}

impl ThreadCounter {
    pub(crate) const fn new() -> ThreadCounter {
        ThreadCounter {
            slots: ThreadLocal::new(),
        }
    }

    /// Adds one for the calling thread.
    #[inline]
    pub(crate) fn add_one(&self) {
        let slot = self.slots.get_or_default();
        // Only this thread writes its slot (`ThreadLocal` gives each live thread its own; a slot
        // passes to a new thread only after its owner exited, through the crate's mutex, so
        // the new owner starts from the last value): a load and a store lose nothing, and no
        // locked instruction is needed. `Relaxed`: the count orders nothing else; a reader
        // may see a slot one behind, as it may with a shared counter.
        slot.store(slot.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
    }

    /// The sum of every thread's slot, those of exited threads included (their slots stay).
    pub(crate) fn sum(&self) -> u64 {
        self.slots
            .iter()
            .map(|slot| slot.load(Ordering::Relaxed))
            .fold(0, u64::wrapping_add)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn i45_1_every_thread_s_adds_are_summed_exactly() {
        static COUNTER: ThreadCounter = ThreadCounter::new();
        let threads: Vec<_> = (0..8)
            .map(|_| std::thread::spawn(|| (0..100_000).for_each(|_| COUNTER.add_one())))
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(COUNTER.sum(), 800_000, "exited threads' counts stay");
        // Slots of exited threads pass to new threads, which count on from there.
        std::thread::spawn(|| COUNTER.add_one()).join().unwrap();
        assert_eq!(COUNTER.sum(), 800_001);
    }
}
