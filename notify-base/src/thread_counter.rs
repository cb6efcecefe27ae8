//! [`ThreadCounts`]: counts that every thread adds to in slots of its own, summed when read.
//!
//! A request counted in one process-wide atomic pays a locked read-modify-write (`lock xadd` on
//! x86) on a cache line every worker thread writes: uncontended it is still the slowest
//! instruction of an unlistened request's propagation, and contended it moves the line between
//! cores at every request. Here each thread writes its own slots with a plain load and store,
//! and [`ThreadCounts::sum`] reads them all (per-thread state through the `thread_local` crate,
//! as `tracing-subscriber`'s registry keeps its own).

use std::sync::atomic::{AtomicU64, Ordering};

use thread_local::ThreadLocal;

/// `N` monotonic counts, added to per thread, each read as the sum of every thread's slot.
#[derive(Debug)]
pub(crate) struct ThreadCounts<const N: usize> {
    slots: ThreadLocal<[AtomicU64; N]>,
}

impl<const N: usize> ThreadCounts<N> {
    pub(crate) const fn new() -> ThreadCounts<N> {
        ThreadCounts {
            slots: ThreadLocal::new(),
        }
    }

    /// The calling thread's slots, made on its first call. A caller on a hot path keeps the
    /// reference in a thread-local of its own (it is `'static`): looking it up again is a
    /// thread-id read and a bucket walk.
    pub(crate) fn local(&'static self) -> &'static [AtomicU64; N] {
        self.slots.get_or(|| std::array::from_fn(|_| AtomicU64::new(0)))
    }

    /// Adds one to `slot`, one of the calling thread's own ([`ThreadCounts::local`]).
    #[inline]
    pub(crate) fn add_one(slot: &AtomicU64) {
        // Only the owning thread writes its slots (`ThreadLocal` gives each live thread its
        // own; slots pass to a new thread only after their owner exited, through the crate's
        // mutex, so the new owner starts from the last value): a load and a store lose nothing
        // and need no locked instruction. (A thread still counting from a thread-local
        // destructor after `thread_local` released its id could race a new owner and lose one
        // count; nothing counted here runs there.) `Relaxed`: the counts order nothing else; a
        // reader may see a slot one behind, as it may with a shared counter.
        slot.store(slot.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
    }

    /// The sum of every thread's slot `i`, those of exited threads included (their slots stay).
    pub(crate) fn sum(&self, i: usize) -> u64 {
        self.slots
            .iter()
            .map(|slots| slots[i].load(Ordering::Relaxed))
            .fold(0, u64::wrapping_add)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn i45_1_every_thread_s_adds_are_summed_exactly() {
        static COUNTS: ThreadCounts<2> = ThreadCounts::new();
        let threads: Vec<_> = (0..8)
            .map(|_| {
                std::thread::spawn(|| {
                    let slots = COUNTS.local();
                    (0..100_000).for_each(|_| ThreadCounts::<2>::add_one(&slots[1]));
                    ThreadCounts::<2>::add_one(&slots[0]);
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(
            (COUNTS.sum(0), COUNTS.sum(1)),
            (8, 800_000),
            "exited threads' counts stay"
        );
        // Slots of exited threads pass to new threads, which count on from there.
        std::thread::spawn(|| ThreadCounts::<2>::add_one(&COUNTS.local()[1]))
            .join()
            .unwrap();
        assert_eq!(COUNTS.sum(1), 800_001);
    }
}
