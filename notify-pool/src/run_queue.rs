//! [`RunQueue`]: the pool's FIFO of scheduled tasks, its idle stack of parked workers, and the
//! park / wake / retire protocol between them. Generic over the task so the `loom` model below
//! checks the very code the worker loop runs.
//!
//! Parking: a worker that finds nothing spins briefly on the queue length, then registers itself on
//! the idle stack (under the run-queue lock) and parks with `thread::park`, which blocks on a futex
//! with no timeout. Whoever queues a task pops one idle worker, if any, and wakes it: each idle
//! worker is woken at most once per registration, and nothing wakes an idle pool.
//!
//! # The protocol, and the argument for each ordering
//!
//! * **No lost wake-up.** A worker checks the queue and registers on the idle stack in one critical
//!   section; a scheduler pushes its task and pops an idle worker in one critical section. So either
//!   the worker's section comes first (the scheduler pops it and wakes it) or the scheduler's does
//!   (the worker finds the task and never parks).
//! * `queued` (`Release` stores under the lock, `Acquire` loads): a hint that lets an idle worker
//!   spin without the lock; it pops only under the lock, and re-reads it there.
//! * [`Parker::notified`]: set (`Release`) by whoever popped the worker off the idle stack, before
//!   `unpark`; swapped back (`Acquire`) by the worker after `park` returns. `park` may return
//!   spuriously, so the flag, not the return, says "you were woken"; the idle stack (under the
//!   lock) guarantees each registration is popped, hence notified, at most once. Set before
//!   `unpark`, so a worker whose `park` returns for that `unpark` sees it. Set with a `swap`, not a
//!   store: see [`Parker::wake`].
//! * `retiring`: stored before [`RunQueue::retire`] takes the lock to wake the idle workers, and
//!   read by the worker under that lock before it parks: the lock orders the two, so either the
//!   worker sees the flag or it is on the idle stack when `retire` looks and is woken. Read
//!   outside the lock, the worker could see it clear, `retire` could then find the idle stack
//!   empty, and the worker park for ever: the loom model's companion finds that interleaving.
//!   `Relaxed` would do; `Release`/`Acquire` keeps the lock-free reads (the spin check) meaningful
//!   as hints.
//! * **Stop** is decided by the caller's `stopped` check, which [`RunQueue::next`] and
//!   [`RunQueue::push`] make under the lock, and which [`RunQueue::stop`] makes true under it: the
//!   same argument as `retiring`.

use std::collections::VecDeque;
use std::sync::OnceLock;

use crate::padded::Padded;
use crate::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use crate::sync::thread::{self, Thread};
use crate::sync::Mutex;

/// How many times an idle worker re-reads the queue length before it parks: the first
/// `SPINS_HOT` with a spin-loop hint, the rest after yielding its CPU (so a publisher sharing the
/// core runs). A publisher that keeps up a steady stream then finds the worker awake, and skips
/// the futex wake-up; a pool with nothing to do parks within microseconds and stays parked.
pub(crate) const SPINS: u32 = 256;
const SPINS_HOT: u32 = 64;

/// One worker's parking spot.
#[derive(Default)]
pub(crate) struct Parker {
    thread: OnceLock<Thread>,
    /// Set by whoever popped this worker off the idle stack, before it unparks it.
    notified: AtomicBool,
    /// Returns from `park` (a count): what an idle pool must keep at zero.
    wakeups: AtomicU64,
}

impl Parker {
    /// Records the calling thread as the one parking here (the worker calls it first).
    pub(crate) fn register_current(&self) {
        let _ = self.thread.set(thread::current());
    }

    /// Returns from `park` so far (a count).
    pub(crate) fn wakeups(&self) -> u64 {
        self.wakeups.load(Ordering::Relaxed)
    }

    /// Wakes the worker (it was popped off the idle stack).
    fn wake(&self) {
        // A read-modify-write rather than a store: the same release, and it is ordered after the
        // worker's last `swap` in the flag's modification order by its very nature (a store
        // would be too, by coherence, but loom orders a plain store racing an RMW loosely and
        // reports a lost wake-up that the memory model rules out).
        self.notified.swap(true, Ordering::Release);
        if let Some(thread) = self.thread.get() {
            thread.unpark();
        }
    }

    /// Parks until woken; a spurious return parks again.
    fn park(&self) {
        while !self.notified.swap(false, Ordering::Acquire) {
            thread::park();
            self.wakeups.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// What is behind the run-queue lock.
struct Locked<T> {
    tasks: VecDeque<T>,
    /// Parked workers, by index, each at most once.
    idle: Vec<usize>,
}

/// A FIFO of scheduled tasks shared by a pool's workers (see the module docs for the protocol).
pub(crate) struct RunQueue<T> {
    locked: Mutex<Locked<T>>,
    /// `locked.tasks.len()`, readable without the lock (idle workers spin on it).
    queued: AtomicUsize,
    /// Set by [`RunQueue::retire`]: a worker with nothing to run ends once `drained()`.
    retiring: AtomicBool,
    parkers: Box<[Padded<Parker>]>,
}

impl<T> RunQueue<T> {
    /// A run queue for `workers` workers (indices `0..workers`); `None` when their state cannot
    /// be allocated (an absurd count is an error, never a panic or an abort).
    pub(crate) fn new(workers: usize) -> Option<RunQueue<T>> {
        let mut parkers = Vec::new();
        parkers.try_reserve_exact(workers).ok()?;
        parkers.extend((0..workers).map(|_| Padded(Parker::default())));
        Some(RunQueue {
            locked: Mutex::new(Locked {
                tasks: VecDeque::new(),
                idle: Vec::new(),
            }),
            queued: AtomicUsize::new(0),
            retiring: AtomicBool::new(false),
            parkers: parkers.into_boxed_slice(),
        })
    }

    /// The parking spot of worker `index`.
    pub(crate) fn parker(&self, index: usize) -> &Parker {
        &self.parkers[index].0
    }

    /// The number of workers.
    pub(crate) fn workers(&self) -> usize {
        self.parkers.len()
    }

    /// Tasks queued (a hint read without the lock).
    #[inline]
    pub(crate) fn queued(&self) -> usize {
        self.queued.load(Ordering::Acquire)
    }

    /// Queues `tasks` and wakes up to `wake` idle workers, unless `stopped()` (checked under the
    /// lock): then nothing is queued and `tasks`, untouched, is returned for the caller to refuse.
    pub(crate) fn push<I: Iterator<Item = T>>(
        &self,
        tasks: I,
        wake: usize,
        stopped: impl FnOnce() -> bool,
    ) -> Result<(), I> {
        let mut woken = [usize::MAX; 4];
        let mut n = 0;
        {
            let mut locked = self.locked.lock();
            if stopped() {
                return Err(tasks);
            }
            // One `push_back` each: most pushes carry one task, for which `extend`'s reservation
            // and bookkeeping cost more than the push itself.
            for task in tasks {
                locked.tasks.push_back(task);
            }
            self.queued.store(locked.tasks.len(), Ordering::Release);
            while n < wake.min(woken.len()) {
                match locked.idle.pop() {
                    Some(index) => {
                        woken[n] = index;
                        n += 1;
                    }
                    None => break,
                }
            }
        }
        for &index in &woken[..n] {
            self.parker(index).wake();
        }
        Ok(())
    }

    /// Puts `task` at the tail and returns the head (a worker whose task has events left while
    /// others wait).
    pub(crate) fn requeue(&self, task: T) -> T {
        let mut locked = self.locked.lock();
        locked.tasks.push_back(task);
        let next = locked.tasks.pop_front().expect("just pushed");
        self.queued.store(locked.tasks.len(), Ordering::Release);
        next
    }

    /// The next task for worker `index`, spinning up to `spins` times and then parking while there
    /// is none; `None` once `stopped()`, or once retired and `drained()` (both checked under the
    /// lock before parking).
    pub(crate) fn next(
        &self,
        index: usize,
        spins: u32,
        stopped: impl Fn() -> bool,
        drained: impl Fn() -> bool,
    ) -> Option<T> {
        let mut spun = 0;
        loop {
            if stopped() {
                return None;
            }
            if self.retiring.load(Ordering::Acquire) && self.queued() == 0 {
                // Check at once rather than after the spins: see below.
                spun = spun.max(spins);
            }
            if self.queued() > 0 || spun >= spins {
                let mut locked = self.locked.lock();
                if let Some(task) = locked.tasks.pop_front() {
                    self.queued.store(locked.tasks.len(), Ordering::Release);
                    return Some(task);
                }
                // A retired dedicated pool ends its thread once everything accepted is finished (a
                // publisher that accepted an event before the close still counts as pending until
                // its push was refused or its mailbox scheduled, so nothing is left behind).
                if self.retiring.load(Ordering::Acquire) && drained() {
                    return None;
                }
                if spun >= spins {
                    if stopped() {
                        return None;
                    }
                    locked.idle.push(index);
                    drop(locked);
                    self.parker(index).park();
                    spun = 0;
                    continue;
                }
            }
            spun += 1;
            if spun < SPINS_HOT {
                std::hint::spin_loop();
            } else {
                thread::yield_now();
            }
        }
    }

    /// Marks the queue as retiring and wakes every idle worker: each ends once nothing is queued
    /// and `drained()` (see [`RunQueue::next`]). Called again after a change to `drained()`, so the
    /// workers recheck.
    pub(crate) fn retire(&self) {
        self.retiring.store(true, Ordering::Release);
        let idle = std::mem::take(&mut self.locked.lock().idle);
        for index in idle {
            self.parker(index).wake();
        }
    }

    /// True once [`RunQueue::retire`] was called.
    pub(crate) fn retiring(&self) -> bool {
        self.retiring.load(Ordering::Acquire)
    }

    /// Runs `set_stopped` (which makes the `stopped()` checks true) under the lock, wakes every
    /// idle worker, and returns the tasks still queued.
    pub(crate) fn stop(&self, set_stopped: impl FnOnce()) -> VecDeque<T> {
        let (idle, tasks) = {
            let mut locked = self.locked.lock();
            set_stopped();
            self.queued.store(0, Ordering::Release);
            (std::mem::take(&mut locked.idle), std::mem::take(&mut locked.tasks))
        };
        for index in idle {
            self.parker(index).wake();
        }
        tasks
    }
}

/// The `loom` model of parking, waking and retiring (run by `scripts/test`):
/// `RUSTFLAGS="--cfg loom" cargo test -p notify-pool --lib --release -- loom_model`.
///
/// Workers run [`RunQueue::next`] with no spins (they lock and park at once, the interleavings
/// that matter) and record what they run; a scheduler pushes tasks, counted as pending before the
/// push and complete once run (as the pool's `Pending` is), then retires or stops the queue. Every
/// worker must end (loom reports a deadlock when one parks for ever), every task having run once
/// (or, stopped, been handed back instead). `retire` is modelled with one worker when there are
/// tasks, as it serves dedicated pools: with two, a worker that parks while the other runs the last
/// task would wait for a second `retire`, which the pool makes only after a refused push. The
/// companions run the same with the protocol broken, and loom finds the worker parked for ever.
#[cfg(all(test, loom))]
mod loom_model {
    use super::*;
    // `std`'s `Arc`: a companion ends in a deadlock, and loom's would panic when the parked
    // worker's closure is dropped after the execution (an abort, not a test failure).
    use std::sync::Arc;

    struct Model {
        queue: RunQueue<u32>,
        /// The pool's `state == STOPPED`.
        stopped: AtomicBool,
        /// Tasks pushed and not yet run (the pool's `Pending`).
        pending: AtomicUsize,
        /// Bit `t` set when task `t` ran.
        ran: AtomicUsize,
    }

    type Next = fn(&RunQueue<u32>, usize, &dyn Fn() -> bool, &dyn Fn() -> bool) -> Option<u32>;

    /// How the scheduler ends the workers.
    #[derive(Clone, Copy)]
    enum End {
        /// [`RunQueue::retire`]: each worker ends once nothing is queued or pending.
        Retire,
        /// [`RunQueue::stop`]: each worker ends; what is still queued is handed back.
        Stop,
    }

    /// The protocol: [`RunQueue::next`] itself.
    fn next(
        queue: &RunQueue<u32>,
        index: usize,
        stopped: &dyn Fn() -> bool,
        drained: &dyn Fn() -> bool,
    ) -> Option<u32> {
        queue.next(index, 0, stopped, drained)
    }

    /// Broken: `retiring` read before taking the lock to register on the idle stack.
    fn next_retiring_unlocked(
        queue: &RunQueue<u32>,
        index: usize,
        _stopped: &dyn Fn() -> bool,
        drained: &dyn Fn() -> bool,
    ) -> Option<u32> {
        loop {
            let retiring = queue.retiring.load(Ordering::Acquire);
            let mut locked = queue.locked.lock();
            if let Some(task) = locked.tasks.pop_front() {
                queue.queued.store(locked.tasks.len(), Ordering::Release);
                return Some(task);
            }
            if retiring && drained() {
                return None;
            }
            locked.idle.push(index);
            drop(locked);
            queue.parker(index).park();
        }
    }

    /// Broken: the queue checked in one critical section, the worker registered idle in another.
    fn next_registering_late(
        queue: &RunQueue<u32>,
        index: usize,
        _stopped: &dyn Fn() -> bool,
        drained: &dyn Fn() -> bool,
    ) -> Option<u32> {
        loop {
            {
                let mut locked = queue.locked.lock();
                if let Some(task) = locked.tasks.pop_front() {
                    queue.queued.store(locked.tasks.len(), Ordering::Release);
                    return Some(task);
                }
                if queue.retiring.load(Ordering::Acquire) && drained() {
                    return None;
                }
            }
            queue.locked.lock().idle.push(index);
            queue.parker(index).park();
        }
    }

    /// `workers` workers running `next`; the main thread pushes `tasks` tasks one at a time, then
    /// ends the workers as `end` says and joins them.
    fn run(workers: usize, tasks: u32, next: Next, end: End) {
        let mut builder = loom::model::Builder::new();
        // One worker: every interleaving. Two: at most two preemptions (an exhaustive run of the
        // stop model takes minutes; bounded, seconds).
        builder.preemption_bound = (workers > 1).then_some(2);
        builder.check(move || {
            let model = Arc::new(Model {
                queue: RunQueue::new(workers).expect("small"),
                stopped: AtomicBool::new(false),
                pending: AtomicUsize::new(0),
                ran: AtomicUsize::new(0),
            });
            let handles: Vec<_> = (0..workers)
                .map(|index| {
                    let model = model.clone();
                    loom::thread::spawn(move || {
                        model.queue.parker(index).register_current();
                        let stopped = || model.stopped.load(Ordering::Acquire);
                        let drained = || model.pending.fetch_add(0, Ordering::AcqRel) == 0;
                        while let Some(task) = next(&model.queue, index, &stopped, &drained) {
                            let before = model.ran.fetch_or(1 << task, Ordering::AcqRel);
                            assert_eq!(before & (1 << task), 0, "task {task} ran twice");
                            model.pending.fetch_sub(1, Ordering::AcqRel);
                        }
                    })
                })
                .collect();
            for task in 0..tasks {
                model.pending.fetch_add(1, Ordering::AcqRel);
                let pushed = model.queue.push(std::iter::once(task), 1, || false);
                assert!(pushed.is_ok(), "never stopped");
            }
            match end {
                End::Retire => model.queue.retire(),
                End::Stop => {
                    let queued = model.queue.stop(|| model.stopped.store(true, Ordering::Release));
                    for task in queued {
                        let before = model.ran.fetch_or(1 << task, Ordering::AcqRel);
                        assert_eq!(before & (1 << task), 0, "task {task} ran and was handed back");
                    }
                }
            }
            for handle in handles {
                handle.join().unwrap();
            }
            assert_eq!(
                model.ran.load(Ordering::Acquire),
                (1 << tasks) - 1,
                "every task ran (or, stopped, was handed back)"
            );
            assert_eq!(model.queue.queued(), 0);
        });
    }

    /// A task scheduled while the worker is about to park is always run (no lost wake-up), and
    /// retire then ends the worker (one worker: a dedicated pool, the one `retire` serves).
    #[test]
    fn pool_loom_park_no_lost_wakeup() {
        run(1, 1, next, End::Retire);
    }

    /// Retire wakes every idle worker and each ends.
    #[test]
    fn pool_loom_retire_wakes_every_idle_worker() {
        run(2, 0, next, End::Retire);
    }

    /// Two workers, two tasks, then stop: each task runs once (on either worker) or is handed
    /// back, never both, and both workers end.
    #[test]
    fn pool_loom_park_two_workers_stop() {
        run(2, 2, next, End::Stop);
    }

    /// The model is not vacuous: with `retiring` read outside the lock, loom finds the worker that
    /// registers after `retire` emptied the idle stack and parks for ever.
    #[test]
    #[should_panic(expected = "deadlock")]
    fn pool_loom_retire_catches_unlocked_check() {
        run(1, 0, next_retiring_unlocked, End::Retire);
    }

    /// The model is not vacuous: with the worker registering idle in a second critical section,
    /// loom finds the task pushed between the two, whose wake-up is lost.
    #[test]
    #[should_panic(expected = "deadlock")]
    fn pool_loom_park_catches_late_registration() {
        run(1, 1, next_registering_late, End::Retire);
    }
}
