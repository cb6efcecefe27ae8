//! The pool's shared state, its run queue of scheduled mailboxes, and the worker loop.
//!
//! Scheduling: a mailbox that becomes scheduled is pushed onto one FIFO run queue (a short critical
//! section under one lock); a worker pops one mailbox, runs one bounded batch of it, and re-queues it
//! at the tail if events remain — or, when the run queue is empty, runs its next batch right away.
//!
//! Parking: a worker that finds nothing spins briefly on the queue length, then registers itself on
//! the idle stack (under the run-queue lock) and parks with `std::thread::park`, which blocks on a
//! futex with no timeout. Whoever queues a mailbox pops one idle worker, if any, and unparks it:
//! each idle worker is woken at most once per registration, and nothing wakes an idle pool.

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::{self, JoinHandle, Thread};
use std::time::{Duration, Instant};

use crate::delivery::{Group, Mailbox, Slot};
use crate::options::{AsyncFailure, SlowSubscriber};
use crate::padded::Padded;
use crate::pending::Pending;
use crate::sync::{Condvar, Mutex};
use crate::unwind::{drop_payload, quietly};

pub(crate) const RUNNING: u8 = 0;
/// Shutdown began: publishing is refused, workers drain.
pub(crate) const CLOSING: u8 = 1;
/// Workers stop after the callback in progress.
pub(crate) const STOPPED: u8 = 2;

/// How many times an idle worker re-reads the queue length before it parks: the first
/// `SPINS_HOT` with a spin-loop hint, the rest after yielding its CPU (so a publisher sharing the
/// core runs). A publisher that keeps up a steady stream then finds the worker awake, and skips
/// the futex wake-up; a pool with nothing to do parks within microseconds and stays parked.
const SPINS: u32 = 256;
const SPINS_HOT: u32 = 64;

pub(crate) type FailureHook = Arc<dyn Fn(&AsyncFailure) + Send + Sync>;
pub(crate) type SlowHook = Arc<dyn Fn(&SlowSubscriber) + Send + Sync>;

/// One worker's parking spot and counters.
#[derive(Debug, Default)]
pub(crate) struct WorkerSlot {
    thread: OnceLock<Thread>,
    /// Set by whoever popped this worker off the idle stack, before it unparks it.
    notified: AtomicBool,
    /// Returns from `park` (a count): what an idle pool must keep at zero.
    pub(crate) wakeups: AtomicU64,
    /// Callbacks this worker ran to completion or panic (a count).
    pub(crate) delivered: AtomicU64,
    /// Set when the worker's loop ended (its thread is about to finish): it can be joined at once.
    exited: AtomicBool,
}

/// What the run queue holds: a scheduled mailbox, or a scheduled shard of a fan-out group.
pub(crate) enum Task {
    Mailbox(Arc<Mailbox>),
    Shard(Arc<Group>, usize),
}

/// A worker's reusable batch buffers.
#[derive(Default)]
struct Batches {
    mailbox: Vec<Slot>,
    shard: Vec<(u64, Slot)>,
}

#[derive(Default)]
struct RunQueue {
    queue: VecDeque<Task>,
    /// Parked workers, by index, each at most once.
    idle: Vec<usize>,
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
    pub(crate) failure_hook: FailureHook,
    pub(crate) slow_hook: SlowHook,
    pub(crate) report_interval_ns: u64,
    pub(crate) clock: Instant,
    pub(crate) next_mailbox: AtomicU64,
    pub(crate) rejected: AtomicU64,
    rejected_reported: AtomicBool,
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
            failure_hook,
            slow_hook,
            report_interval_ns: u64::try_from(interval.as_nanos()).unwrap_or(u64::MAX),
            clock: Instant::now(),
            next_mailbox: AtomicU64::new(1),
            rejected: AtomicU64::new(0),
            rejected_reported: AtomicBool::new(false),
        }
    }

    /// Nanoseconds since the pool started (read only on slow paths).
    pub(crate) fn now_ns(&self) -> u64 {
        u64::try_from(self.clock.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// Counts `n` events refused because the pool was shut down; the first is reported.
    #[cold]
    pub(crate) fn reject(&self, n: u64) {
        self.rejected.fetch_add(n, Ordering::Relaxed);
        if !self.rejected_reported.swap(true, Ordering::Relaxed) {
            log::warn!(
                target: "notify::pool",
                "worker pool `{}` is shut down: async events are refused and counted (WorkerPool::rejected)",
                crate::escape::Escaped(&self.name)
            );
        }
    }
}

/// The state of one pool (the shared pool, or one dedicated thread).
pub(crate) struct PoolInner {
    pub(crate) shared: Arc<Shared>,
    state: AtomicU8,
    run: Mutex<RunQueue>,
    /// `run.queue.len()`, readable without the lock (idle workers spin on it).
    queued: AtomicUsize,
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
    /// Set when the dedicated subscription was closed, detached or dropped: the thread ends once
    /// nothing is queued or pending.
    retiring: AtomicBool,
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
        let mut handles = Vec::new();
        handles.try_reserve_exact(threads).map_err(|_| too_many())?;
        let inner = Arc::new(PoolInner {
            shared,
            state: AtomicU8::new(RUNNING),
            run: Mutex::new(RunQueue::default()),
            queued: AtomicUsize::new(0),
            slots: slots.into_boxed_slice(),
            pending: Pending::new(),
            running: crate::sync::atomic::AtomicUsize::new(0),
            publishing: Padded(crate::sync::atomic::AtomicUsize::new(0)),
            space: Mutex::new(()),
            space_cv: Condvar::new(),
            handles: Mutex::new(handles),
            dedicated,
            retiring: AtomicBool::new(false),
        });
        for index in 0..threads {
            let worker = inner.clone();
            inner.running.fetch_add(1, Ordering::SeqCst);
            let spawned = thread::Builder::new()
                .name(format!("{thread_name}-{index}"))
                .spawn(move || worker.work(index));
            match spawned {
                Ok(handle) => inner.handles.lock().push(handle),
                Err(e) => {
                    inner.running.fetch_sub(1, Ordering::SeqCst);
                    inner.slots[index].0.exited.store(true, Ordering::SeqCst);
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

    /// Hands a newly scheduled mailbox to the workers.
    pub(crate) fn schedule(&self, mailbox: Arc<Mailbox>) {
        let wake = {
            let mut run = self.run.lock();
            if self.state() == STOPPED {
                drop(run);
                self.discard_stopped(&mailbox);
                return;
            }
            run.queue.push_back(Task::Mailbox(mailbox));
            self.queued.store(run.queue.len(), Ordering::Release);
            run.idle.pop()
        };
        if let Some(index) = wake {
            self.wake(index);
        }
    }

    /// Hands the shards of `group` whose bits are set in `shards` (newly scheduled) to the workers
    /// under one lock, waking as many idle workers as there are shards (at most all of them).
    pub(crate) fn schedule_shards(&self, group: &Arc<Group>, shards: u64) {
        let n = shards.count_ones() as usize;
        let mut wake = [usize::MAX; 4];
        let mut woken = 0;
        {
            let mut run = self.run.lock();
            if self.state() == STOPPED {
                drop(run);
                for shard in (0..64).filter(|s| shards & (1 << s) != 0) {
                    self.discard_stopped_shard(group, shard);
                }
                return;
            }
            for shard in (0..64).filter(|s| shards & (1 << s) != 0) {
                run.queue.push_back(Task::Shard(group.clone(), shard));
            }
            self.queued.store(run.queue.len(), Ordering::Release);
            while woken < n.min(wake.len()) {
                match run.idle.pop() {
                    Some(index) => {
                        wake[woken] = index;
                        woken += 1;
                    }
                    None => break,
                }
            }
        }
        for &index in &wake[..woken] {
            self.wake(index);
        }
    }

    fn discard_stopped_shard(&self, group: &Group, shard: usize) {
        let members = group.shard(shard).1.len() as u64;
        group.core.clear(shard, |slot| {
            self.shared.reject(members);
            self.complete(slot.gen, members);
        });
    }

    fn discard_stopped(&self, mailbox: &Mailbox) {
        let left = mailbox.core.clear();
        self.shared.reject(left.len() as u64);
        for slot in left {
            self.complete(slot.gen, 1);
        }
    }

    fn wake(&self, index: usize) {
        let slot = &self.slots[index].0;
        slot.notified.store(true, Ordering::Release);
        if let Some(thread) = slot.thread.get() {
            thread.unpark();
        }
    }

    /// The next scheduled task, parking while there is none; `None` once the pool stopped.
    fn next(&self, index: usize) -> Option<Task> {
        let slot = &self.slots[index].0;
        let mut spins = 0;
        loop {
            if self.state() == STOPPED {
                return None;
            }
            if self.retiring.load(Ordering::SeqCst) && self.queued.load(Ordering::Acquire) == 0 {
                // Check at once rather than after the spins: see below.
                spins = spins.max(SPINS);
            }
            if self.queued.load(Ordering::Acquire) > 0 || spins >= SPINS {
                let mut run = self.run.lock();
                if let Some(task) = run.queue.pop_front() {
                    self.queued.store(run.queue.len(), Ordering::Release);
                    return Some(task);
                }
                // A retired dedicated pool ends its thread once everything accepted is finished (a
                // publisher that accepted an event before the close still counts as pending until
                // its push was refused or its mailbox scheduled, so nothing is left behind).
                if self.retiring.load(Ordering::SeqCst) && self.pending() == 0 {
                    return None;
                }
                if spins >= SPINS {
                    if self.state() == STOPPED {
                        return None;
                    }
                    run.idle.push(index);
                    drop(run);
                    while !slot.notified.swap(false, Ordering::Acquire) {
                        thread::park();
                        slot.wakeups.fetch_add(1, Ordering::Relaxed);
                    }
                    spins = 0;
                    continue;
                }
            }
            spins += 1;
            if spins < SPINS_HOT {
                std::hint::spin_loop();
            } else {
                thread::yield_now();
            }
        }
    }

    /// A worker thread's life.
    fn work(self: Arc<PoolInner>, index: usize) {
        let slot = &self.slots[index].0;
        let _ = slot.thread.set(thread::current());
        WORKER_OF.with(|w| w.set(self.shared.family));
        // Whatever ends the loop, the thread counts as ended for shutdown's bounded join.
        let _exit = ExitGuard { pool: &self, index };
        let mut batches = Batches::default();
        while let Some(mut task) = self.next(index) {
            loop {
                let more = match &task {
                    Task::Mailbox(mailbox) => self.turn(slot, mailbox, &mut batches.mailbox),
                    Task::Shard(group, shard) => self.shard_turn(slot, group, *shard, &mut batches.shard),
                };
                if !more {
                    break;
                }
                // Events remain: run the next batch now if nobody else waits, else go to the tail.
                if self.queued.load(Ordering::Acquire) == 0 {
                    continue;
                }
                let next = {
                    let mut run = self.run.lock();
                    run.queue.push_back(task);
                    let next = run.queue.pop_front().expect("just pushed");
                    self.queued.store(run.queue.len(), Ordering::Release);
                    next
                };
                task = next;
            }
        }
    }

    /// Marks a dedicated pool's subscription as gone and wakes its idle thread, which ends once
    /// nothing is queued or pending (see `next`). Called again after a refused push, so the thread
    /// rechecks.
    pub(crate) fn retire(&self) {
        self.retiring.store(true, Ordering::SeqCst);
        let idle = mem_take(&mut self.run.lock().idle);
        for index in idle {
            self.wake(index);
        }
    }

    /// True when the pool was retired and its threads have ended (they can be joined at once).
    pub(crate) fn retired(&self) -> bool {
        self.retiring.load(Ordering::SeqCst) && self.handles.lock().iter().all(|h| h.is_finished())
    }

    /// Wakes every publisher blocked on a full mailbox of this pool ([`Overflow::Block`]).
    ///
    /// [`Overflow::Block`]: crate::Overflow::Block
    pub(crate) fn wake_blocked(&self) {
        let _space = self.space.lock();
        self.space_cv.notify_all();
    }

    /// Runs one batch of `mailbox`; true when it stays scheduled with events left.
    fn turn(&self, slot: &WorkerSlot, mailbox: &Arc<Mailbox>, batch: &mut Vec<Slot>) -> bool {
        if mailbox.core.take_batch(batch, self.shared.batch) {
            let _space = self.space.lock();
            self.space_cv.notify_all();
        }
        let mut done = [0_u64; 2];
        let mut ran = 0;
        let mut detached = false;
        for item in batch.iter() {
            if self.state() == STOPPED {
                break;
            }
            ran += 1;
            let call = catch_unwind(AssertUnwindSafe(|| mailbox.subscriber.call(&item.event)));
            done[item.gen] += 1;
            if let Err(payload) = call {
                detached = mailbox.failed(&item.event, &*payload);
                drop_payload(payload);
                if detached {
                    break;
                }
            }
        }
        // Events of the batch that did not run: discarded on detach (counted as dropped), or
        // abandoned because the pool stopped (left pending, so shutdown counts them).
        if detached {
            let mut discarded = [0_u64; 2];
            for item in &batch[ran..] {
                discarded[item.gen] += 1;
            }
            mailbox.add_dropped((batch.len() - ran) as u64);
            self.complete(0, discarded[0]);
            self.complete(1, discarded[1]);
        }
        batch.clear();
        slot.delivered.fetch_add(ran as u64, Ordering::Relaxed);
        self.complete(0, done[0]);
        self.complete(1, done[1]);
        if self.state() == STOPPED {
            mailbox.core.clear();
            return false;
        }
        mailbox.core.finish_turn()
    }

    /// Runs one batch of a fan-out group's shard: every member of the shard, one after another, over
    /// the same batch of events in log order. True when the shard stays scheduled with events left.
    fn shard_turn(&self, slot: &WorkerSlot, group: &Group, shard: usize, batch: &mut Vec<(u64, Slot)>) -> bool {
        if group.core.take(shard, self.shared.batch, batch) {
            let _space = self.space.lock();
            self.space_cv.notify_all();
        }
        let mut per_gen = [0_u64; 2];
        for (_, item) in batch.iter() {
            per_gen[item.gen] += 1;
        }
        let (first, members) = group.shard(shard);
        let mut done = [0_u64; 2];
        let mut ran = 0_u64;
        for (offset, member) in members.iter().enumerate() {
            // Closed members get the events published before they were closed (the batch is in
            // sequence order); the rest count as dropped.
            let closed_at = member.closed_at.load(Ordering::Relaxed);
            let mut open = batch.partition_point(|(seq, _)| *seq < closed_at);
            let mut next = 0;
            let mut stopped = false;
            while next < open {
                let run = catch_unwind(AssertUnwindSafe(|| {
                    while next < open {
                        if self.state() == STOPPED {
                            return false;
                        }
                        member.subscriber.call(&batch[next].1.event);
                        next += 1;
                    }
                    true
                }));
                match run {
                    Ok(finished) => stopped = !finished,
                    Err(payload) => {
                        let (seq, item) = &batch[next];
                        next += 1;
                        if group.failed(first + offset, *seq, &item.event, &*payload) {
                            open = next;
                        }
                        drop_payload(payload);
                    }
                }
                if stopped {
                    break;
                }
            }
            ran += next as u64;
            if stopped {
                // The rest of the batch is abandoned for this member and the next ones: left
                // pending, so shutdown counts it.
                for (_, item) in &batch[..next] {
                    done[item.gen] += 1;
                }
                break;
            }
            if open < batch.len() {
                member.dropped.fetch_add((batch.len() - open) as u64, Ordering::Relaxed);
            }
            done[0] += per_gen[0];
            done[1] += per_gen[1];
        }
        batch.clear();
        slot.delivered.fetch_add(ran, Ordering::Relaxed);
        self.complete(0, done[0]);
        self.complete(1, done[1]);
        if self.state() == STOPPED {
            return false;
        }
        group.core.finish_turn(shard)
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
        let (idle, queued) = {
            let mut run = self.run.lock();
            self.state.store(STOPPED, Ordering::Release);
            self.queued.store(0, Ordering::Release);
            (mem_take(&mut run.idle), mem_take(&mut run.queue))
        };
        for index in idle {
            self.wake(index);
        }
        for task in queued {
            // A shard's events stay in its group's log, abandoned with the rest.
            if let Task::Mailbox(mailbox) = task {
                mailbox.core.clear();
            }
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

    /// Callbacks delivered by all workers (a count).
    pub(crate) fn delivered(&self) -> u64 {
        self.slots.iter().map(|s| s.0.delivered.load(Ordering::Relaxed)).sum()
    }

    /// Each worker's wake-up count.
    pub(crate) fn wakeups(&self) -> Vec<u64> {
        self.slots.iter().map(|s| s.0.wakeups.load(Ordering::Relaxed)).collect()
    }

    /// Reports a subscriber panic through the failure hook (a panicking hook is swallowed, its
    /// payload dropped safely).
    pub(crate) fn report_failure(&self, failure: &AsyncFailure) {
        let hook = &self.shared.failure_hook;
        quietly(|| hook(failure));
    }
}

/// A publisher inside the pool's door ([`PoolInner::enter`]); leaves it when dropped.
pub(crate) struct Publishing<'a> {
    pool: &'a PoolInner,
}

impl Drop for Publishing<'_> {
    #[inline]
    fn drop(&mut self) {
        // `AcqRel`: what the publisher did (its counts) is visible to the shutdown that reads the
        // count; then wake it if it waits (see `Pending::notify`).
        if self.pool.publishing.0.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.pool.pending.notify();
        }
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
