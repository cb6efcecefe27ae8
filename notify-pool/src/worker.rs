//! The pool's shared state, its run queue of scheduled mailboxes, and the worker loop.
//!
//! Scheduling: a mailbox that becomes scheduled is pushed onto one FIFO run queue (a short critical
//! section under one lock; a publisher's batch pushes the mailboxes one fan-out made ready
//! under one lock, see [`crate::publish`]); a worker pops one mailbox, runs one bounded batch of it, and re-queues it
//! at the tail if events remain — or, when the run queue is empty, runs its next batch right away.
//!
//! Parking, waking and retiring: see [`RunQueue`], where the protocol is argued and model-checked.
//!
//! # Atomic orderings, one by one
//!
//! The run queue, the idle stack, the mailboxes and the group logs are under locks; the atomics
//! beside them are either hints read again under a lock, counters, or one of the four small
//! protocols argued where they live ([`RunQueue`]: park / wake / retire, `queued`, `notified`,
//! `retiring`; [`Pending`]: flush and the waits; [`PoolInner::enter`]: the door shutdown closes;
//! [`ExitGuard`]: the end of a worker).
//!
//! * `state` (RUNNING → CLOSING → STOPPED): changed with a read-modify-write (close) or under the
//!   run-queue lock (stop), loaded with `Acquire`. Every decision that must not race it is taken
//!   under that lock (a worker parks, and `schedule` queues, only after checking it there) or is
//!   the door's protocol; elsewhere it is a hint (a worker stops its batch early).
//! * `running` and `WorkerSlot::exited`: see [`ExitGuard`]; `delivered`, `rejected`, ids:
//!   counters read for reports, `Relaxed` (no other memory is published through them).
//!
//! [`RunQueue`]: crate::run_queue::RunQueue
//! [`Pending`]: crate::pending::Pending

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::config::Config;
use crate::mailbox_id::MailboxId;
use crate::options::{AsyncFailure, SlowSubscriber};
use crate::padded::Padded;
use crate::pending::Pending;
use crate::run_queue::{RunQueue, SPINS};
use crate::slot::Slot;
use crate::sync::{Condvar, Mutex};
use crate::unwind::quietly;

pub(crate) const RUNNING: u8 = 0;
/// Shutdown began: publishing is refused, workers drain.
pub(crate) const CLOSING: u8 = 1;
/// Workers stop after the callback in progress.
pub(crate) const STOPPED: u8 = 2;

pub(crate) type FailureHook = Arc<dyn Fn(&AsyncFailure) + Send + Sync>;
pub(crate) type SlowHook = Arc<dyn Fn(&SlowSubscriber) + Send + Sync>;

/// One worker's counters (its parking spot is in the run queue).
#[derive(Debug, Default)]
pub(crate) struct WorkerSlot {
    /// Callbacks this worker ran to completion or panic (a count).
    pub(crate) delivered: AtomicU64,
    /// Set when the worker's loop ended (its thread is about to finish): it can be joined at once.
    exited: AtomicBool,
    /// The worker's progress in its current batch, for the exact report at process exit (read
    /// only there, of a worker that did not end): `done << 1 | calling`, where `done` counts the
    /// pending events of the batch that are finished but not yet completed in [`Pending`] (their
    /// callbacks returned or panicked, or they were dropped for a closed member), and `calling`
    /// is set while a callback runs. 0 between batches. `Relaxed` stores to the worker's own
    /// cache line.
    progress: AtomicU64,
}

impl WorkerSlot {
    /// A callback is about to run; `done` events of the batch are finished before it.
    #[inline(always)]
    pub(crate) fn calling(&self, done: u64) {
        self.progress.store(done << 1 | 1, Ordering::Relaxed);
    }

    /// `done` events of the batch are finished, and no callback runs.
    #[inline(always)]
    pub(crate) fn finished(&self, done: u64) {
        self.progress.store(done << 1, Ordering::Relaxed);
    }
}

/// What the run queue schedules: a mailbox, or a shard of a fan-out group. The one method set the
/// two flavors share (as crossbeam-channel's flavors share one): the worker loop, shutdown and
/// [`AsyncHandle`](crate::AsyncHandle) see a `dyn Flavor` and never which one it is. A *part* is
/// what is scheduled (a mailbox has one, part 0; a group one per shard); a *member* is one
/// subscriber (a mailbox has one, member 0; a group one per callback).
pub(crate) trait Flavor: Send + Sync {
    /// Runs one bounded batch of `part` on the worker whose slot is `slot`; true when the part
    /// stays scheduled with events left (the caller runs or re-queues it).
    fn turn(&self, pool: &PoolInner, part: usize, slot: &WorkerSlot, batches: &mut Batches) -> bool;
    /// `part` became scheduled on a pool that already stopped: its queued events are refused
    /// (counted as rejected) and complete.
    fn refuse_stopped(&self, pool: &PoolInner, part: usize);
    /// The pool stopped with `part` still in its run queue: the queued events are abandoned (left
    /// pending, so shutdown counts them).
    fn abandon(&self, part: usize);
    /// The id of `member`, unique within its pool (failure and slow-subscriber reports name it).
    fn id(&self, member: usize) -> MailboxId;
    /// The subscription's label.
    fn label(&self) -> Option<&str>;
    /// Events `member` will never receive (an exact count).
    fn dropped(&self, member: usize) -> u64;
    /// Events queued for `member` (a count; those a worker already took are not counted).
    fn queued(&self, member: usize) -> usize;
    /// True when `member` refuses events (closed, detached or unsubscribed).
    fn is_closed(&self, member: usize) -> bool;
    /// Refuses events for `member` from now on; the queued ones are still delivered.
    fn close(&self, member: usize);
}

/// What the run queue holds: one scheduled part of a flavor.
pub(crate) struct Task {
    pub(crate) target: Arc<dyn Flavor>,
    pub(crate) part: usize,
}

/// A worker's reusable batch buffers.
#[derive(Default)]
pub(crate) struct Batches {
    /// Swapped with a drained mailbox's queue (see `MailboxCore::take_batch`).
    pub(crate) mailbox: std::collections::VecDeque<Slot>,
    pub(crate) shard: Vec<(u64, Slot)>,
}

thread_local! {
    /// The family id of the pool whose worker this thread is (0: not a worker).
    static WORKER_OF: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

static NEXT_FAMILY: AtomicU64 = AtomicU64::new(1);

/// True when this thread is a worker (or dedicated thread) of the pool family `family`.
pub(crate) fn on_worker_of(family: u64) -> bool {
    WORKER_OF.with(|w| w.get() == family)
}

/// True when this thread is a worker (or dedicated thread) of any notify pool.
pub(crate) fn on_any_worker() -> bool {
    WORKER_OF.with(|w| w.get() != 0)
}

/// Settings shared by a pool and the dedicated threads it starts.
pub(crate) struct Shared {
    pub(crate) family: u64,
    pub(crate) name: String,
    pub(crate) batch: usize,
    /// Replaceable at run time ([`WorkerPool::set_failure_hook`](crate::WorkerPool::set_failure_hook));
    /// read (an `Arc` clone) only when a callback panicked.
    pub(crate) failure_hook: Mutex<FailureHook>,
    /// Replaceable at run time; read only when a mailbox overflowed and a report is due.
    pub(crate) slow_hook: Mutex<SlowHook>,
    pub(crate) report_interval_ns: u64,
    pub(crate) clock: Instant,
    pub(crate) next_mailbox: AtomicU64,
    pub(crate) rejected: AtomicU64,
    rejected_reported: AtomicBool,
    /// Panics reported through the failure hook: callbacks, and subscribers' drops (a count).
    pub(crate) failures: AtomicU64,
}

impl Drop for Shared {
    /// The hooks are user code, and so are their drops: the last reference to the pool's state
    /// can go on any thread (a worker ending, whoever dropped the last subscription, notify-core's
    /// registry on an instrumenting thread), so a hook whose captures panic when dropped is
    /// dropped under a guard (its panic swallowed, as a panic in the hook is).
    fn drop(&mut self) {
        let failure: FailureHook = Arc::new(|_: &AsyncFailure| {});
        let slow: SlowHook = Arc::new(|_: &SlowSubscriber| {});
        let failure = std::mem::replace(self.failure_hook.get_mut(), failure);
        let slow = std::mem::replace(self.slow_hook.get_mut(), slow);
        quietly(move || drop(failure));
        quietly(move || drop(slow));
    }
}

impl Shared {
    pub(crate) fn new(
        name: String,
        batch: usize,
        failure_hook: FailureHook,
        slow_hook: SlowHook,
        interval: Duration,
    ) -> Shared {
        Shared {
            family: NEXT_FAMILY.fetch_add(1, Ordering::Relaxed),
            name,
            batch: batch.max(1),
            failure_hook: Mutex::new(failure_hook),
            slow_hook: Mutex::new(slow_hook),
            report_interval_ns: u64::try_from(interval.as_nanos()).unwrap_or(u64::MAX),
            clock: Instant::now(),
            next_mailbox: AtomicU64::new(1),
            rejected: AtomicU64::new(0),
            rejected_reported: AtomicBool::new(false),
            failures: AtomicU64::new(0),
        }
    }

    /// Nanoseconds since the pool started (read only on slow paths).
    pub(crate) fn now_ns(&self) -> u64 {
        u64::try_from(self.clock.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// Calls the slow-subscriber hook for one mailbox (or fan-out shard, named by its first
    /// member); a panicking hook is ignored.
    #[cold]
    pub(crate) fn report_slow(&self, config: &Config, mailbox: MailboxId, dropped: u64) {
        let report = SlowSubscriber {
            mailbox,
            subscriber: config.label(),
            capacity: config.capacity,
            dropped,
            overflow: config.overflow,
        };
        let hook = self.slow_hook.lock().clone();
        // The clone is dropped inside the guard: if the hook was replaced meanwhile, it is the
        // last one, and a hook whose captures panic when dropped must not unwind here.
        quietly(move || hook(&report));
    }

    /// Reports a subscriber panic (in a callback or in its drop) through the failure hook and
    /// counts it. A panicking hook is swallowed; the hook's clone is dropped inside the guard too
    /// (when the hook was replaced meanwhile it is the last one, and its drop runs user code).
    #[cold]
    pub(crate) fn report_failure(&self, failure: &AsyncFailure) {
        self.failures.fetch_add(1, Ordering::Relaxed);
        let hook = self.failure_hook.lock().clone();
        quietly(move || hook(failure));
    }

    /// Counts `n` events refused because the pool was shut down; the first is reported.
    #[cold]
    pub(crate) fn reject(&self, n: u64) {
        self.rejected.fetch_add(n, Ordering::Relaxed);
        if !self.rejected_reported.swap(true, Ordering::Relaxed) {
            log::warn!(
                target: "notify::pool",
                "worker pool `{}` is shut down: async events are refused and counted (WorkerPool::rejected)",
                notify_core::escape::Escaped::new(&self.name)
            );
        }
    }
}

/// The state of one pool (the shared pool, or one dedicated thread).
pub(crate) struct PoolInner {
    pub(crate) shared: Arc<Shared>,
    state: AtomicU8,
    run: RunQueue<Task>,
    pub(crate) slots: Box<[Padded<WorkerSlot>]>,
    /// Events accepted and not yet finished, by flush generation.
    pending: Pending,
    /// Worker threads whose loop has not ended (a count).
    running: crate::sync::atomic::AtomicUsize,
    /// Publishers between the pool's door ([`PoolInner::enter`]) and the end of their publish (a
    /// count): shutdown's report waits for them, so that each event they accepted has its final
    /// count (delivered, dropped, rejected or abandoned) before the report is made.
    publishing: Padded<crate::sync::atomic::AtomicUsize>,
    /// Publishers blocked on a full mailbox wait here; workers notify when they make room.
    pub(crate) space: Mutex<()>,
    pub(crate) space_cv: Condvar,
    handles: Mutex<Vec<JoinHandle<()>>>,
    /// A pool of one dedicated subscription (one thread, one mailbox).
    pub(crate) dedicated: bool,
}

impl PoolInner {
    /// Starts a pool of `threads` workers (at least 1).
    /// `dedicated`: the pool of one dedicated subscription, whose thread ends when the
    /// subscription is closed ([`PoolInner::retire`]).
    pub(crate) fn start(
        shared: Arc<Shared>,
        threads: usize,
        thread_name: &str,
        dedicated: bool,
    ) -> std::io::Result<Arc<PoolInner>> {
        let threads = threads.max(1);
        let too_many = || {
            std::io::Error::new(
                std::io::ErrorKind::OutOfMemory,
                format!("notify: cannot allocate the state of {threads} worker threads"),
            )
        };
        // Fallible allocations: an absurd count is an error, never a panic or an abort.
        let mut slots = Vec::new();
        slots.try_reserve_exact(threads).map_err(|_| too_many())?;
        slots.extend((0..threads).map(|_| Padded(WorkerSlot::default())));
        let run = RunQueue::new(threads).ok_or_else(too_many)?;
        let mut handles = Vec::new();
        handles.try_reserve_exact(threads).map_err(|_| too_many())?;
        let inner = Arc::new(PoolInner {
            shared,
            state: AtomicU8::new(RUNNING),
            run,
            slots: slots.into_boxed_slice(),
            pending: Pending::new(),
            running: crate::sync::atomic::AtomicUsize::new(0),
            publishing: Padded(crate::sync::atomic::AtomicUsize::new(0)),
            space: Mutex::new(()),
            space_cv: Condvar::new(),
            handles: Mutex::new(handles),
            dedicated,
        });
        for index in 0..threads {
            let worker = inner.clone();
            inner.running.fetch_add(1, Ordering::AcqRel);
            let spawned = thread::Builder::new()
                .name(format!("{thread_name}-{index}"))
                .spawn(move || worker.work(index));
            match spawned {
                Ok(handle) => inner.handles.lock().push(handle),
                Err(e) => {
                    inner.slots[index].0.exited.store(true, Ordering::Release);
                    inner.running.fetch_sub(1, Ordering::AcqRel);
                    inner.stop();
                    inner.join(None);
                    return Err(e);
                }
            }
        }
        Ok(inner)
    }

    #[inline]
    pub(crate) fn state(&self) -> u8 {
        self.state.load(Ordering::Acquire)
    }

    /// The pool's door: a publisher enters before it accepts events, and leaves when the guard is
    /// dropped; `None` (nothing entered) once shutdown began: the events are refused.
    ///
    /// Orderings: the entry is an `AcqRel` read-modify-write followed by an `Acquire` load of the
    /// state; shutdown changes the state with a read-modify-write, then RMW-reads the count of
    /// publishers ([`PoolInner::wait_publishers`]). If its read comes first in the count's
    /// modification order, the publisher's increment reads from it and so sees the new state (it
    /// refuses its events); otherwise shutdown sees the publisher and waits for it to leave.
    #[inline]
    pub(crate) fn enter(&self) -> Option<Publishing<'_>> {
        self.publishing.0.fetch_add(1, Ordering::AcqRel);
        let publishing = Publishing { pool: self };
        (self.state() == RUNNING).then_some(publishing)
    }

    /// The door for a publisher's batch ([`crate::publish`]): the same entry as [`PoolInner::enter`],
    /// held until [`PoolInner::leave`]; false (nothing held) once shutdown began.
    #[inline]
    pub(crate) fn enter_held(&self) -> bool {
        self.publishing.0.fetch_add(1, Ordering::AcqRel);
        if self.state() == RUNNING {
            true
        } else {
            self.leave();
            false
        }
    }

    /// Leaves the door entered with [`PoolInner::enter_held`] (or by a [`Publishing`] guard).
    #[inline]
    pub(crate) fn leave(&self) {
        // `AcqRel`: what the publisher did (its counts) is visible to the shutdown that reads the
        // count; then wake it if it waits (see `Pending::notify`).
        if self.publishing.0.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.pending.notify();
        }
    }

    /// Waits until no publisher is inside the door, or `until`; true when none is.
    pub(crate) fn wait_publishers(&self, until: Option<Instant>) -> bool {
        self.pending
            .wait(|| crate::pending::read_usize(&self.publishing.0) == 0, until)
    }

    /// Counts `n` events as accepted (before they are queued); returns the flush generation to
    /// stamp on them (see [`Pending::accept`]).
    #[inline]
    pub(crate) fn accept(&self, n: u64) -> usize {
        self.pending.accept(n)
    }

    /// Counts `n` events of generation `gen` as finished (delivered, dropped or discarded), and wakes
    /// a flush or shutdown that waits for that generation to reach zero.
    #[inline]
    pub(crate) fn complete(&self, gen: usize, n: u64) {
        self.pending.complete(gen, n);
    }

    /// Events accepted and not yet finished (a count).
    pub(crate) fn pending(&self) -> u64 {
        self.pending.total()
    }

    /// Hands a newly scheduled part (a mailbox, part 0) to the workers.
    pub(crate) fn schedule(&self, target: Arc<dyn Flavor>, part: usize) {
        let task = std::iter::once(Task { target, part });
        if let Err(refused) = self.run.push(task, 1, || self.state() == STOPPED) {
            for task in refused {
                task.target.refuse_stopped(self, task.part);
            }
        }
    }

    /// Hands the mailboxes a publisher's batch made ready ([`crate::publish`]) to the workers under
    /// one lock, waking as many idle workers as there are tasks (at most 4). Leaves `tasks` empty.
    pub(crate) fn schedule_all(&self, tasks: &mut Vec<Task>) {
        let n = tasks.len();
        if n == 0 {
            return;
        }
        if let Err(refused) = self.run.push(tasks.drain(..), n, || self.state() == STOPPED) {
            for task in refused {
                task.target.refuse_stopped(self, task.part);
            }
        }
    }

    /// Hands the parts of `target` whose bits are set in `parts` (newly scheduled shards of a
    /// group) to the workers under one lock, waking as many idle workers as there are parts (at
    /// most 4: a woken worker finding more work keeps going).
    pub(crate) fn schedule_parts(&self, target: &Arc<dyn Flavor>, parts: u64) {
        let tasks = (0..64).filter(|p| parts & (1 << p) != 0).map(|part| Task {
            target: target.clone(),
            part,
        });
        let n = parts.count_ones() as usize;
        if let Err(refused) = self.run.push(tasks, n, || self.state() == STOPPED) {
            for task in refused {
                task.target.refuse_stopped(self, task.part);
            }
        }
    }

    /// The next scheduled task, parking while there is none; `None` once the pool stopped, or
    /// once it was retired and everything accepted is finished.
    fn next(&self, index: usize) -> Option<Task> {
        self.run
            .next(index, SPINS, || self.state() == STOPPED, || self.pending() == 0)
    }

    /// A worker thread's life.
    fn work(self: Arc<PoolInner>, index: usize) {
        let slot = &self.slots[index].0;
        self.run.parker(index).register_current();
        WORKER_OF.with(|w| w.set(self.shared.family));
        // Whatever ends the loop, the thread counts as ended for shutdown's bounded join.
        let _exit = ExitGuard { pool: &self, index };
        let mut batches = Batches::default();
        while let Some(mut task) = self.next(index) {
            loop {
                let more = task.target.turn(&self, task.part, slot, &mut batches);
                if !more {
                    break;
                }
                // Events remain: run the next batch now if nobody else waits, else go to the tail.
                if self.run.queued() == 0 {
                    continue;
                }
                task = self.run.requeue(task);
            }
        }
    }

    /// Marks a dedicated pool's subscription as gone and wakes its idle thread, which ends once
    /// nothing is queued or pending (see `next`). Called again after a refused push, so the thread
    /// rechecks.
    pub(crate) fn retire(&self) {
        self.run.retire();
    }

    /// True when the pool was retired and its threads have ended (they can be joined at once).
    pub(crate) fn retired(&self) -> bool {
        self.run.retiring() && self.handles.lock().iter().all(|h| h.is_finished())
    }

    /// Wakes every publisher blocked on a full mailbox of this pool ([`Overflow::Block`]).
    ///
    /// [`Overflow::Block`]: crate::Overflow::Block
    pub(crate) fn wake_blocked(&self) {
        let _space = self.space.lock();
        self.space_cv.notify_all();
    }

    /// Waits until everything accepted before the call is finished, or `deadline`; true when it
    /// is (see [`Pending::flush`]).
    pub(crate) fn flush(&self, deadline: Option<Instant>) -> bool {
        self.pending.flush(deadline)
    }

    /// Refuses new events and wakes blocked publishers (first step of shutdown).
    pub(crate) fn close(&self) {
        let _ = self
            .state
            .compare_exchange(RUNNING, CLOSING, Ordering::AcqRel, Ordering::Acquire);
        let _space = self.space.lock();
        self.space_cv.notify_all();
    }

    /// Waits for every accepted event until `deadline` (`None`: no deadline); true when drained.
    pub(crate) fn drain(&self, deadline: Option<Instant>) -> bool {
        self.pending.wait(|| self.pending() == 0, deadline)
    }

    /// Stops the workers after their callbacks in progress; discards what is still queued.
    pub(crate) fn stop(&self) {
        let queued = self.run.stop(|| self.state.store(STOPPED, Ordering::Release));
        for task in queued {
            task.target.abandon(task.part);
        }
        let _space = self.space.lock();
        self.space_cv.notify_all();
    }

    /// Joins the worker threads (after `stop`), waiting for their loops to end until `until`
    /// (`None`: no limit). A thread still running a callback then is detached (left to end on
    /// its own); the names of those are returned. The calling thread, if it is one of them, is
    /// skipped.
    pub(crate) fn join(&self, until: Option<Instant>) -> Vec<String> {
        let me = thread::current().id();
        let own = self.handles.lock().iter().filter(|h| h.thread().id() == me).count();
        if until.is_some() {
            self.pending
                .wait(|| crate::pending::read_usize(&self.running) <= own, until);
        }
        let handles = mem_take(&mut *self.handles.lock());
        let mut detached = Vec::new();
        for (index, handle) in handles.into_iter().enumerate() {
            if handle.thread().id() == me {
                continue;
            }
            if until.is_none() || self.slots[index].0.exited.load(Ordering::Acquire) {
                let _ = handle.join();
            } else {
                detached.push(handle.thread().name().unwrap_or("<unnamed>").to_owned());
            }
        }
        detached
    }

    /// The report at process exit ([`crate::exit`]), after [`PoolInner::close`] and
    /// [`PoolInner::stop`]: waits until `until` at most for the workers to end (each ends after
    /// the callback it is running), then returns the events that will never be delivered and the
    /// callbacks still running (which received their event, but had not returned). Exact when
    /// every worker ended; for a worker still in a callback, its batch's progress
    /// ([`WorkerSlot::calling`]) says which of its pending events are already finished.
    pub(crate) fn lost_at_exit(&self, until: Instant) -> (u64, u64) {
        let me = thread::current().id();
        let own = self.handles.lock().iter().filter(|h| h.thread().id() == me).count();
        self.pending
            .wait(|| crate::pending::read_usize(&self.running) <= own, Some(until));
        let mut pending = self.pending();
        let mut calling = 0;
        for slot in self.slots.iter() {
            if slot.0.exited.load(Ordering::Acquire) {
                continue;
            }
            let progress = slot.0.progress.load(Ordering::Relaxed);
            let in_callback = progress & 1;
            pending = pending.saturating_sub((progress >> 1) + in_callback);
            calling += in_callback;
        }
        (pending, calling)
    }

    /// Callbacks delivered by all workers (a count).
    pub(crate) fn delivered(&self) -> u64 {
        self.slots.iter().map(|s| s.0.delivered.load(Ordering::Relaxed)).sum()
    }

    /// Each worker's wake-up count.
    pub(crate) fn wakeups(&self) -> Vec<u64> {
        (0..self.run.workers()).map(|i| self.run.parker(i).wakeups()).collect()
    }

    /// Reports a subscriber panic through the failure hook (a panicking hook is swallowed, its
    /// payload dropped safely) and counts it.
    pub(crate) fn report_failure(&self, failure: &AsyncFailure) {
        self.shared.report_failure(failure);
    }
}

/// A publisher inside the pool's door ([`PoolInner::enter`]); leaves it when dropped.
pub(crate) struct Publishing<'a> {
    pool: &'a PoolInner,
}

impl Drop for Publishing<'_> {
    #[inline]
    fn drop(&mut self) {
        self.pool.leave();
    }
}

/// Marks a worker's loop as ended when dropped (also when it unwinds), and wakes a shutdown that
/// waits for the threads.
struct ExitGuard<'a> {
    pool: &'a PoolInner,
    index: usize,
}

impl Drop for ExitGuard<'_> {
    fn drop(&mut self) {
        // `exited` before the `AcqRel` decrement that a shutdown's wait RMW-reads (so it sees the
        // flag once it sees the count), then the notify (see the `pending` module).
        self.pool.slots[self.index].0.exited.store(true, Ordering::Release);
        self.pool.running.fetch_sub(1, Ordering::AcqRel);
        self.pool.pending.notify();
    }
}

fn mem_take<T: Default>(value: &mut T) -> T {
    std::mem::take(value)
}
