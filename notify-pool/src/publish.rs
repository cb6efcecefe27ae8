//! The publisher's batch: what one fan-out does to a pool, gathered on the publishing thread and
//! handed over in bulk.
//!
//! When notify-core hands one event to many mailboxes of one pool (100,000 `subscribe_all`
//! subscriptions to a name), doing the pool's bookkeeping per mailbox costs a run-queue lock per
//! mailbox that became ready (taken against the workers popping it), a pass through the pool's
//! door in and out, and a read-modify-write on the pending count the workers decrement. During a
//! fan-out ([`notify_core::__private::defer_to_fanout_end`]) a mailbox instead:
//!
//! * enters the pool's door once per batch (the batch holds it until it ends);
//! * takes one of the batch's *credits*: events counted as accepted [`CREDITS`] at a time, in the
//!   generation current when they were counted (the generation stamped on the events that use
//!   them); the credits left unused are completed when the batch ends;
//! * hands the mailbox it made ready to the batch, which pushes [`PUSH_AT`] of them onto the run
//!   queue under one lock (and wakes the idle workers), and the rest when the fan-out ends.
//!
//! A batch serves one pool; an event for a mailbox of another pool ends it first. Dedicated
//! threads (one mailbox each) are not batched, nor is a delivery outside a fan-out.
//!
//! # Why the pool's protocols still hold
//!
//! * **Flush** ([`Pending`](crate::pending::Pending)): an event is counted as accepted before it
//!   is queued (its credit was counted, with the same `Relaxed` accept, before), and completed in
//!   the generation stamped on it; unused credits are completed in the generation they were
//!   counted in. Credits count as pending while the batch lasts, so a flush started meanwhile
//!   waits at most until the fan-out ends. [`WorkerPool::flush`](crate::WorkerPool::flush) and
//!   shutdown end the calling thread's batch first (a subscriber that flushes from inside a
//!   fan-out would otherwise wait for its own credits).
//! * **Shutdown's door** ([`PoolInner::enter`]): entered with the same `AcqRel` increment and
//!   `Acquire` state check, and left (the same `AcqRel` decrement and notify) only after the
//!   batch's mailboxes were pushed and its credits completed: every event accepted inside the
//!   door has its final count (queued, dropped, or refused by a stopped pool) before shutdown,
//!   which waits for the publishers inside, makes its report.
//! * **No two invocations at once, no lost schedule**: the mailbox's flag is unchanged
//!   ([`MailboxCore`](crate::mailbox_core::MailboxCore)); a mailbox made ready and not yet pushed
//!   simply waits in the batch, scheduled, and only its publisher can push it, which it does
//!   before the publishing call returns. Mailboxes that may block their publisher
//!   ([`Overflow::Block`](crate::Overflow::Block)) are not batched: the mailbox a publisher waits
//!   for must be on the run queue, not in a batch (its own) that only it can push.

use std::cell::{Cell, RefCell};
use std::sync::Arc;

use crate::worker::{PoolInner, Task};

/// Events counted as accepted at a time (see the module docs).
pub(crate) const CREDITS: u64 = 128;

/// Ready mailboxes pushed onto the run queue at a time: the workers start on the first of them
/// while the fan-out goes on.
pub(crate) const PUSH_AT: usize = 64;

/// One publishing thread's batch (see the module docs). Plain cells, each taken or set in one
/// step, so that nothing is borrowed while the batch's work runs (dropping a refused mailbox
/// may run a subscriber's drop, which may publish).
struct Batch {
    /// The pool whose door the batch holds, as an address to compare with (null: no batch).
    pool: Cell<*const PoolInner>,
    /// The same pool, held while the batch lasts.
    held: Cell<Option<Arc<PoolInner>>>,
    /// The generation the credits were counted in.
    gen: Cell<usize>,
    /// Credits left (counted as accepted in `gen`, not yet used by an event).
    credits: Cell<u64>,
    /// Mailboxes made ready and not yet pushed onto the run queue.
    ready: RefCell<Vec<Task>>,
}

thread_local! {
    static BATCH: Batch = const {
        Batch {
            pool: Cell::new(std::ptr::null()),
            held: Cell::new(None),
            gen: Cell::new(0),
            credits: Cell::new(0),
            ready: RefCell::new(Vec::new()),
        }
    };
}

/// What [`admit`] decided for one event.
pub(crate) enum Admit {
    /// Counted as accepted in this generation, inside the batch: queue it, and hand the mailbox
    /// to [`ready`] when it became scheduled.
    Batched(usize),
    /// The pool is shut down: refuse the event (nothing was counted).
    Refused,
    /// No batch here (no fan-out in progress): publish it on its own.
    Unbatched,
}

/// Admits one event for a mailbox of `pool` into this thread's batch (see the module docs). The
/// common case, a batch for this pool with credits left, is a compare and a decrement.
#[inline]
pub(crate) fn admit(pool: &Arc<PoolInner>) -> Admit {
    let gen = BATCH.with(|batch| {
        let credits = batch.credits.get();
        (batch.pool.get() == Arc::as_ptr(pool) && credits > 0).then(|| {
            batch.credits.set(credits - 1);
            batch.gen.get()
        })
    });
    match gen {
        Some(gen) => Admit::Batched(gen),
        None => admit_slow(pool),
    }
}

/// [`admit`] when the batch has no credits left, serves another pool, or does not exist.
#[inline(never)]
fn admit_slow(pool: &Arc<PoolInner>) -> Admit {
    loop {
        let current = BATCH.with(|batch| batch.pool.get());
        if current == Arc::as_ptr(pool) {
            let gen = pool.accept(CREDITS);
            BATCH.with(|batch| {
                batch.gen.set(gen);
                batch.credits.set(CREDITS - 1);
            });
            return Admit::Batched(gen);
        }
        if !current.is_null() {
            // The batch serves another pool: end it, then start one for this pool.
            end();
            continue;
        }
        if !notify_core::__private::defer_to_fanout_end(end) {
            return Admit::Unbatched;
        }
        if !pool.enter_held() {
            return Admit::Refused;
        }
        BATCH.with(|batch| {
            batch.pool.set(Arc::as_ptr(pool));
            batch.held.set(Some(pool.clone()));
            batch.credits.set(0);
        });
    }
}

/// Hands a mailbox that [`admit`]ted an event and became scheduled to the batch; pushes the
/// batch's ready mailboxes when there are [`PUSH_AT`].
#[inline]
pub(crate) fn ready(pool: &Arc<PoolInner>, task: Task) {
    let full = BATCH.with(|batch| {
        if batch.pool.get() != Arc::as_ptr(pool) {
            return Err(task);
        }
        let Ok(mut ready) = batch.ready.try_borrow_mut() else {
            return Err(task);
        };
        ready.push(task);
        Ok(ready.len() >= PUSH_AT)
    });
    match full {
        Ok(true) => push_ready(),
        Ok(false) => {}
        // Not this pool's batch (cannot happen: `admit` just made it so): on its own.
        Err(task) => pool.schedule(task.target, task.part),
    }
}

/// Pushes the batch's ready mailboxes onto its pool's run queue (one lock); the batch goes on.
pub(crate) fn push_ready() {
    let Some((pool, mut ready)) = BATCH.with(|batch| {
        let held = batch.held.take()?;
        batch.held.set(Some(held.clone()));
        let ready = std::mem::take(&mut *batch.ready.try_borrow_mut().ok()?);
        Some((held, ready))
    }) else {
        return;
    };
    // Outside any borrow: a refused mailbox's drop may run a subscriber's drop, which may publish.
    pool.schedule_all(&mut ready);
    BATCH.with(|batch| {
        if let Ok(mut kept) = batch.ready.try_borrow_mut() {
            if kept.is_empty() {
                *kept = ready;
            }
        }
    });
}

/// Ends this thread's batch, if any: pushes its ready mailboxes, completes its unused credits and
/// leaves the pool's door. Deferred to the end of each fan-out; also called by flush and
/// shutdown, and before a batch for another pool starts.
pub(crate) fn end() {
    push_ready();
    let Some((pool, gen, credits)) = BATCH.with(|batch| {
        let pool = batch.held.take()?;
        batch.pool.set(std::ptr::null());
        Some((pool, batch.gen.get(), batch.credits.replace(0)))
    }) else {
        return;
    };
    pool.complete(gen, credits);
    pool.leave();
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn pool_no_batch_outside_a_fanout() {
        let shared = std::sync::Arc::new(crate::worker::Shared::new(
            "t".into(),
            8,
            Arc::new(|_| {}),
            Arc::new(|_| {}),
            std::time::Duration::from_secs(1),
        ));
        let pool = PoolInner::start(shared, 1, "t", false).unwrap();
        assert!(matches!(admit(&pool), Admit::Unbatched));
        end();
        assert_eq!(pool.pending(), 0);
        pool.close();
        pool.stop();
        pool.join(None);
    }
}

/// The `loom` model of the batch's credits against flush (run by `scripts/test`):
/// `RUSTFLAGS="--cfg loom" cargo test -p notify-pool --lib --release -- loom_model`.
///
/// A publisher counts two credits as accepted, queues one event with one of them (stamped with
/// the credits' generation), completes the unused credit when its batch ends, and then (as a
/// worker would, later) delivers the event and completes it; a flusher that saw the event queued
/// flushes, and must then find it delivered. The companion counts the event as accepted
/// only when the batch ends, after queueing it (what credits avoid: a batch cannot know up front
/// how many events it will queue): loom finds the flush that returns before the delivery.
#[cfg(all(test, loom))]
mod loom_model {
    use crate::pending::Pending;
    use crate::sync::atomic::{AtomicBool, Ordering};
    use loom::sync::Arc;
    use loom::thread;

    struct Model {
        pending: Pending,
        /// Set once the event is queued.
        queued: AtomicBool,
        delivered: AtomicBool,
    }

    fn run(credits_first: bool) {
        loom::model(move || {
            let model = Arc::new(Model {
                pending: Pending::new(),
                queued: AtomicBool::new(false),
                delivered: AtomicBool::new(false),
            });
            let publisher = {
                let model = model.clone();
                thread::spawn(move || {
                    let gen = if credits_first {
                        let gen = model.pending.accept(2);
                        model.queued.store(true, Ordering::Release);
                        // The batch ends: one credit was not used.
                        model.pending.complete(gen, 1);
                        gen
                    } else {
                        let gen = model.pending.accept(0);
                        model.queued.store(true, Ordering::Release);
                        model.pending.accept(1);
                        model.pending.notify();
                        gen
                    };
                    // A worker delivers it (here, on the same thread, after the batch ended).
                    model.delivered.store(true, Ordering::Release);
                    model.pending.complete(gen, 1);
                })
            };
            if model.queued.load(Ordering::Acquire) {
                model.pending.flush(None);
                assert!(
                    model.delivered.load(Ordering::Acquire),
                    "flush returned before a queued event was delivered"
                );
            }
            publisher.join().unwrap();
        });
    }

    #[test]
    fn pool_loom_batch_credits() {
        run(true);
    }

    /// The model is not vacuous: accepting after queueing lets a flush miss the event.
    #[test]
    #[should_panic(expected = "flush returned before a queued event was delivered")]
    fn pool_loom_batch_catches_late_accept() {
        run(false);
    }
}
