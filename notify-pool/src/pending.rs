//! The count of events accepted and not yet finished, by flush generation, and the waits on it
//! (flush, shutdown's drain, the end of the worker threads).
//!
//! A publisher counts an event as *accepted* in the current generation (0 or 1) before it queues
//! it, and a worker counts it *complete* (delivered, dropped or discarded) in the generation
//! stamped on it. The protocol, with the argument for each ordering:
//!
//! * **Flush** (serialised by `flushing`): first wait until the generation that is *not* current
//!   is complete, then start a new generation and wait until the one that was current is
//!   complete. An event accepted before the call is counted in one of the two, so a flush never
//!   returns while it is pending. (The counts it reads were increased before the call, so any
//!   ordering shows them; the decrements are the next point.) Waiting for the current generation
//!   alone, as the pool first did, is not enough: a publisher that read the generation, was
//!   preempted while a whole flush ran, and then counted its event escaped the *next* flush too,
//!   which waited for the other generation only; so did what a timed-out flush left behind. The
//!   loom model below finds that interleaving in the one-wait variant.
//! * **Accept** (publisher, hot path): load the generation and add to its count, both `Relaxed`:
//!   which of the two generations the event lands in does not matter (flush waits for both), and
//!   nothing else is published through them.
//! * **Complete** (worker): subtract with `AcqRel` (a release, so the callback's effects are
//!   visible to the flush that reads the count with acquire), then, when the count reached zero,
//!   load `waiters` and notify under the lock when it is non-zero. A waiter increments `waiters`,
//!   then reads its condition under the lock with a read-modify-write (`fetch_add(0)`), which reads
//!   the last value in the counter's modification order: either it sees the zero, or the worker's
//!   subtraction comes after its read in that order, reads from it (acquire on release), sees
//!   `waiters` non-zero and notifies under the lock, so the wake-up is not lost between the
//!   waiter's check and its wait. This needs only acquire/release, which is what `loom` checks
//!   (it treats `SeqCst` accesses as `AcqRel`).

use std::time::Instant;

use crate::padded::Padded;
use crate::sync::atomic::{
    AtomicU64, AtomicUsize,
    Ordering::{AcqRel, Acquire, Relaxed},
};
use crate::sync::{Condvar, Mutex};

/// Events accepted and not yet finished, by flush generation, with the waits on them.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    counts: [Padded<AtomicU64>; 2],
    /// Incremented by each flush; its parity is the generation publishers stamp.
    generation: AtomicU64,
    /// One flush at a time.
    flushing: Mutex<()>,
    /// Threads in [`Pending::wait`] (a count).
    waiters: AtomicUsize,
    quiet: Mutex<()>,
    quiet_cv: Condvar,
}

impl Pending {
    pub(crate) fn new() -> Pending {
        Pending::default()
    }

    /// Counts `n` events as accepted (before they are queued); returns the generation (0 or 1) to
    /// stamp on them.
    #[inline]
    pub(crate) fn accept(&self, n: u64) -> usize {
        let generation = (self.generation.load(Relaxed) & 1) as usize;
        self.counts[generation].0.fetch_add(n, Relaxed);
        generation
    }

    /// Counts `n` events of generation `generation` as finished (delivered, dropped or
    /// discarded), and wakes the waiters when that generation's count reached zero.
    #[inline]
    pub(crate) fn complete(&self, generation: usize, n: u64) {
        if n == 0 {
            return;
        }
        let before = self.counts[generation].0.fetch_sub(n, AcqRel);
        if before == n {
            self.notify();
        }
    }

    /// Wakes the threads in [`Pending::wait`] so they recheck their condition. Whoever changes
    /// what a waiter waits for calls it after the change, made with an `AcqRel` read-modify-write
    /// that the waiter's condition RMW-reads (see the module docs).
    pub(crate) fn notify(&self) {
        if self.waiters.load(Acquire) > 0 {
            let _quiet = self.quiet.lock();
            self.quiet_cv.notify_all();
        }
    }

    /// Events accepted and not yet finished (a count; read with read-modify-writes, so a waiter
    /// may use it as its condition).
    pub(crate) fn total(&self) -> u64 {
        read(&self.counts[0].0) + read(&self.counts[1].0)
    }

    /// Waits until every event accepted before the call is finished, or `deadline`; true when
    /// they are. A flush that times out leaves its generation to the next one, which waits for
    /// it first.
    pub(crate) fn flush(&self, deadline: Option<Instant>) -> bool {
        let _one_at_a_time = match deadline {
            None => self.flushing.lock(),
            Some(at) => match self.flushing.try_lock_until(at) {
                Some(guard) => guard,
                None => return false,
            },
        };
        let other = ((self.generation.load(Relaxed) + 1) & 1) as usize;
        if !self.wait(|| read(&self.counts[other].0) == 0, deadline) {
            return false;
        }
        let current = (self.generation.fetch_add(1, Relaxed) & 1) as usize;
        self.wait(|| read(&self.counts[current].0) == 0, deadline)
    }

    /// `flush` waiting for the current generation only: the broken protocol, for the model only.
    #[cfg(all(test, loom))]
    fn flush_current_only(&self, deadline: Option<Instant>) -> bool {
        let _one_at_a_time = self.flushing.lock();
        let current = (self.generation.fetch_add(1, Relaxed) & 1) as usize;
        self.wait(|| read(&self.counts[current].0) == 0, deadline)
    }

    /// Waits until `done()` or `deadline` (`None`: no deadline); true when `done()`. `done` reads
    /// what it checks with read-modify-writes ([`read`]), and whoever makes it true does so with
    /// an `AcqRel` read-modify-write and then calls [`Pending::notify`].
    pub(crate) fn wait(&self, done: impl Fn() -> bool, deadline: Option<Instant>) -> bool {
        self.waiters.fetch_add(1, AcqRel);
        let mut quiet = self.quiet.lock();
        let reached = loop {
            if done() {
                break true;
            }
            match deadline {
                Some(at) => {
                    if self.quiet_cv.wait_until(&mut quiet, at) && !done() {
                        break false;
                    }
                }
                None => self.quiet_cv.wait(&mut quiet),
            }
        };
        drop(quiet);
        self.waiters.fetch_sub(1, AcqRel);
        reached
    }
}

/// Reads a counter with a read-modify-write: the last value in its modification order (see the
/// module docs for why waiters read this way).
pub(crate) fn read(counter: &AtomicU64) -> u64 {
    counter.fetch_add(0, AcqRel)
}

/// [`read`] for a `usize` counter.
pub(crate) fn read_usize(counter: &AtomicUsize) -> usize {
    counter.fetch_add(0, AcqRel)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn pool_flush_waits_for_what_a_timed_out_flush_left() {
        let pending = Pending::new();
        let first = pending.accept(2);
        let soon = Some(Instant::now() + Duration::from_millis(10));
        assert!(!pending.flush(soon), "2 events pending: the flush times out");
        let later = pending.accept(1);
        assert_ne!(first, later, "the timed-out flush started a new generation");
        pending.complete(later, 1);
        // The next flush must not return while the first generation's events are pending.
        assert!(!pending.flush(Some(Instant::now() + Duration::from_millis(10))));
        pending.complete(first, 2);
        assert!(pending.flush(None));
        assert_eq!(pending.total(), 0);
    }

    #[test]
    fn pool_accept_stamps_the_generation_a_flush_started() {
        let pending = Pending::new();
        assert_eq!(pending.accept(1), 0);
        pending.complete(0, 1);
        assert!(pending.flush(None));
        assert_eq!(pending.accept(3), 1);
        assert_eq!(pending.total(), 3);
    }
}

/// The `loom` model of flush's generation accounting (run by `scripts/test`):
/// `RUSTFLAGS="--cfg loom" cargo test -p notify-pool --lib --release -- loom_model`.
///
/// A publisher accepts one event, says so, and completes it (as a worker would, later); a flusher
/// flushes, and if it saw the event published, flushes again: that second flush began after the
/// publish, so when it returns the event must be complete. The companion runs the same with a
/// flush that waits for the current generation only (the protocol before this one): loom finds the
/// interleaving where the publisher read the generation, a whole flush ran, and the second flush
/// missed the event.
#[cfg(all(test, loom))]
mod loom_model {
    use super::*;
    use loom::sync::atomic::AtomicBool;
    use loom::sync::atomic::Ordering::Release;
    use loom::sync::Arc;
    use loom::thread;

    struct Model {
        pending: Pending,
        published: AtomicBool,
        delivered: AtomicBool,
    }

    fn run(flush: fn(&Pending, Option<Instant>) -> bool) {
        loom::model(move || {
            let model = Arc::new(Model {
                pending: Pending::new(),
                published: AtomicBool::new(false),
                delivered: AtomicBool::new(false),
            });
            let publisher = {
                let model = model.clone();
                thread::spawn(move || {
                    let generation = model.pending.accept(1);
                    model.published.store(true, Release);
                    model.delivered.store(true, Release);
                    model.pending.complete(generation, 1);
                })
            };
            flush(&model.pending, None);
            if model.published.load(Acquire) {
                flush(&model.pending, None);
                assert!(
                    model.delivered.load(Acquire),
                    "flush returned before an earlier event was delivered"
                );
            }
            publisher.join().unwrap();
            assert_eq!(model.pending.total(), 0);
        });
    }

    #[test]
    fn pool_loom_flush_generations() {
        run(Pending::flush);
    }

    /// The model is not vacuous: with a flush that waits for the current generation only, loom
    /// finds the missed event.
    #[test]
    #[should_panic(expected = "flush returned before an earlier event was delivered")]
    fn pool_loom_flush_catches_one_generation_wait() {
        run(Pending::flush_current_only);
    }
}
