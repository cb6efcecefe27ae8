//! [`Mailbox`]: one async subscriber (its bounded queue, callback and pool), its turns on a worker,
//! and its registry side (the registry holds the mailbox itself, as its `OwnedEventSubscriber`).

use std::any::Any;
use std::mem::ManuallyDrop;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use notify_core::{failure::panic_message, Event, OwnedEventSubscriber};

use crate::config::Config;
use crate::mailbox_core::{Admit, MailboxCore};
use crate::mailbox_id::MailboxId;
use crate::options::{AsyncFailure, AsyncFailurePolicy, Overflow};
use crate::publish;
use crate::slot::Slot;
use crate::unwind::{drop_caught, drop_payload};
use crate::worker::{on_any_worker, Batches, Flavor, PoolInner, Task, WorkerSlot, RUNNING, STOPPED};
use crate::AsyncSubscriber;

/// What the mailboxes of one subscription share: the pool that runs them and their settings.
/// [`WorkerPool::subscribe_all`](crate::WorkerPool::subscribe_all) makes one for all its
/// subscriptions with equal options, so 100,000 mailboxes hold one pointer to it (and it stays in
/// cache while an event reaches each of them) instead of a copy each.
pub(crate) struct Home {
    pub(crate) pool: Arc<PoolInner>,
    pub(crate) config: Config,
}

/// One async subscriber: its mailbox, its callback (inline: a capture-free closure takes no
/// space), and where it runs. The registry holds the `Arc` this lives in (as its
/// `OwnedEventSubscriber`), as do the handles and, while it is scheduled, the run queue.
pub(crate) struct Mailbox<S> {
    pub(crate) core: MailboxCore<Slot>,
    pub(crate) home: Arc<Home>,
    pub(crate) id: u64,
    /// This mailbox's own `Arc`, for handing itself to the run queue from
    /// [`OwnedEventSubscriber::deliver`], which gets `&self`.
    me: Weak<Mailbox<S>>,
    /// Dropped by the mailbox's `Drop`, under a guard: a subscriber whose drop panics is reported,
    /// never unwinds into whichever thread dropped the mailbox's last reference.
    pub(crate) subscriber: ManuallyDrop<S>,
}

impl<S: AsyncSubscriber> Mailbox<S> {
    pub(crate) fn new(home: Arc<Home>, subscriber: S) -> Arc<Mailbox<S>> {
        let id = home
            .pool
            .shared
            .next_mailbox
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Arc::new_cyclic(|me| Mailbox {
            core: MailboxCore::new(),
            home,
            id,
            me: me.clone(),
            subscriber: ManuallyDrop::new(subscriber),
        })
    }

    /// Queues `event` (accepted in generation `gen`, already counted pending). Returns true when the
    /// mailbox became scheduled and the caller must hand it to its pool.
    #[inline]
    pub(crate) fn offer(&self, event: Arc<Event>, gen: usize) -> bool {
        let pool = &*self.home.pool;
        let mut slot = Slot { event, gen };
        let mut overflow = self.home.config.overflow;
        if overflow == Overflow::Block && on_any_worker() {
            overflow = Overflow::DropNewest;
        }
        loop {
            match self
                .core
                .push(slot, self.home.config.capacity, overflow, || pool.space.lock())
            {
                Admit::Queued { schedule } => return schedule,
                Admit::Evicted { oldest, schedule } => {
                    pool.complete(oldest.gen, 1);
                    self.overflowed();
                    return schedule;
                }
                Admit::Refused(refused) => {
                    pool.complete(refused.gen, 1);
                    self.overflowed();
                    return false;
                }
                Admit::Closed(closed) => {
                    pool.complete(closed.gen, 1);
                    if pool.dedicated {
                        // The thread may be waiting for this last pending event to end.
                        pool.retire();
                    }
                    return false;
                }
                Admit::Full(full, mut space) => {
                    if pool.state() != RUNNING {
                        drop(space);
                        pool.shared.reject(1);
                        pool.complete(full.gen, 1);
                        return false;
                    }
                    pool.space_cv.wait(&mut space);
                    drop(space);
                    self.overflowed();
                    slot = full;
                }
            }
        }
    }

    /// This mailbox as a run-queue task (it became scheduled).
    fn task(&self) -> Task {
        // The registry reached `self` through a strong reference it holds for the whole call, so
        // the upgrade cannot fail.
        let me = self.me.upgrade().expect("a mailbox receiving an event is alive");
        Task { target: me, part: 0 }
    }

    /// The slow-subscriber report, at most once per interval; the clock is read only here.
    #[cold]
    fn overflowed(&self) {
        let shared = &self.home.pool.shared;
        if let Some(dropped) = self.core.report_due(shared.now_ns(), shared.report_interval_ns) {
            shared.report_slow(&self.home.config, MailboxId(self.id), dropped);
        }
    }

    /// The callback panicked on `event`: report it, and detach per policy. True when detached.
    #[cold]
    pub(crate) fn failed(&self, event: &Event, payload: &(dyn Any + Send)) -> bool {
        let detach = self.home.config.on_failure == AsyncFailurePolicy::Detach;
        self.home.pool.report_failure(&AsyncFailure {
            mailbox: MailboxId(self.id),
            subscriber: self.home.config.label(),
            event: event.name().to_owned(),
            message: panic_message(payload),
            detached: detach,
            in_drop: false,
        });
        if detach {
            self.detach();
        }
        detach
    }

    /// Refuses later events and discards the queued ones (counted as dropped). Publishers blocked
    /// on the full mailbox ([`Overflow::Block`]) are woken: their events are dropped too.
    pub(crate) fn detach(&self) {
        let pool = &self.home.pool;
        let (discarded, blocked) = self.core.close(true);
        for slot in discarded {
            pool.complete(slot.gen, 1);
        }
        if blocked {
            pool.wake_blocked();
        }
        if pool.dedicated {
            pool.retire();
        }
    }

    /// Refuses later events; the queued ones are still delivered. Publishers blocked on the full
    /// mailbox are woken at once: their events are dropped.
    pub(crate) fn close(&self) {
        let pool = &self.home.pool;
        let (_, blocked) = self.core.close(false);
        if blocked {
            pool.wake_blocked();
        }
        if pool.dedicated {
            pool.retire();
        }
    }

    pub(crate) fn add_dropped(&self, n: u64) {
        if n > 0 {
            self.core.add_dropped(n);
        }
    }
}

impl<S> Drop for Mailbox<S> {
    /// The last reference can go on any thread: a worker (the run queue's), the shutdown, the
    /// publisher of a batch, whoever unsubscribed or held a handle, notify-core's registry. A
    /// panic in the subscriber's drop is caught here, reported once through the failure hook
    /// ([`AsyncFailure::in_drop`]) and counted, whichever it is.
    fn drop(&mut self) {
        let subscriber = &mut self.subscriber;
        // SAFETY: the one drop of `subscriber`, in the mailbox's own drop; nothing reads it
        // afterwards (the other fields hold no reference to it). If its drop panics, the
        // unwinding drop glue drops what remains of it, and the panic stops at `drop_caught`.
        // Tested by tests/async_reliability.rs (`r3_...` drop-panic tests).
        let panicked = drop_caught(|| unsafe { ManuallyDrop::drop(subscriber) });
        if let Some(message) = panicked {
            self.home.pool.report_failure(&AsyncFailure {
                mailbox: MailboxId(self.id),
                subscriber: self.home.config.label(),
                event: String::new(),
                message,
                detached: false,
                in_drop: true,
            });
        }
        // Nobody can queue into it any more: a dedicated thread has nothing left to serve.
        if self.home.pool.dedicated {
            self.home.pool.retire();
        }
    }
}

impl<S: AsyncSubscriber> Flavor for Mailbox<S> {
    /// Runs one batch: takes up to `batch` events, runs the callback on each (a panic is reported
    /// and, per policy, detaches the subscriber), then ends the turn (see `MailboxCore`).
    fn turn(&self, pool: &PoolInner, _part: usize, slot: &WorkerSlot, batches: &mut Batches) -> bool {
        if self.core.take_batch(&mut batches.mailbox, pool.shared.batch) {
            let _space = pool.space.lock();
            pool.space_cv.notify_all();
        }
        let mut done = [0_u64; 2];
        let mut ran = 0_u64;
        let mut detached = false;
        // Each event is taken out of the batch and dropped as soon as its callback returned (no
        // separate pass to drop the batch afterwards).
        while let Some(item) = batches.mailbox.pop_front() {
            if pool.state() == STOPPED {
                break;
            }
            slot.calling(ran);
            ran += 1;
            let call = catch_unwind(AssertUnwindSafe(|| self.subscriber.call(&item.event)));
            done[item.gen] += 1;
            slot.finished(ran);
            if let Err(payload) = call {
                detached = self.failed(&item.event, &*payload);
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
            for item in batches.mailbox.iter() {
                discarded[item.gen] += 1;
            }
            self.add_dropped(batches.mailbox.len() as u64);
            pool.complete(0, discarded[0]);
            pool.complete(1, discarded[1]);
        }
        if !batches.mailbox.is_empty() {
            batches.mailbox.clear();
        }
        slot.delivered.fetch_add(ran, Ordering::Relaxed);
        pool.complete(0, done[0]);
        pool.complete(1, done[1]);
        slot.finished(0);
        if pool.state() == STOPPED {
            self.core.clear();
            return false;
        }
        self.core.finish_turn()
    }

    fn refuse_stopped(&self, pool: &PoolInner, _part: usize) {
        let left = self.core.clear();
        pool.shared.reject(left.len() as u64);
        for slot in left {
            pool.complete(slot.gen, 1);
        }
    }

    fn abandon(&self, _part: usize) {
        self.core.clear();
    }

    fn id(&self, _member: usize) -> MailboxId {
        MailboxId(self.id)
    }

    fn label(&self) -> Option<&str> {
        self.home.config.label.as_deref()
    }

    fn dropped(&self, _member: usize) -> u64 {
        self.core.dropped()
    }

    fn queued(&self, _member: usize) -> usize {
        self.core.len()
    }

    fn is_closed(&self, _member: usize) -> bool {
        self.core.is_closed()
    }

    fn close(&self, _member: usize) {
        Mailbox::close(self);
    }
}

/// The registry's view of the mailbox: queue the event, and schedule the mailbox when it was idle.
impl<S: AsyncSubscriber> OwnedEventSubscriber for Mailbox<S> {
    #[inline]
    fn deliver(&self, event: &Arc<Event>) {
        let home = &self.home.pool;
        if !home.dedicated && self.home.config.overflow != Overflow::Block {
            // During a fan-out: the batch's door and credits, and the batch pushes the mailbox
            // (see the `publish` module). Not for a mailbox that may block its publisher: it
            // must be on the run queue, not in this thread's batch, while the publisher waits.
            match publish::admit(home) {
                publish::Admit::Batched(gen) => {
                    if self.offer(event.clone(), gen) {
                        publish::ready(home, self.task());
                    }
                    return;
                }
                publish::Admit::Refused => {
                    home.shared.reject(1);
                    return;
                }
                publish::Admit::Unbatched => {}
            }
        }
        let pool = &**home;
        let Some(_publishing) = pool.enter() else {
            pool.shared.reject(1);
            return;
        };
        let gen = pool.accept(1);
        if self.offer(event.clone(), gen) {
            let task = self.task();
            pool.schedule(task.target, task.part);
        }
    }
}
