//! From the notifier to a mailbox: the per-subscriber mailbox with its callback, the
//! [`OwnedEventSubscriber`] that queues into one mailbox, and the fan-out that queues into many
//! behind one registry subscription.

use std::any::Any;
use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::Arc;

use crate::event::Event;
use crate::failure::panic_message;
use crate::pool::mailbox::{Admit, MailboxCore};
use crate::pool::options::{AsyncFailure, AsyncOptions, Overflow, PanicPolicy, SlowSubscriber};
use crate::pool::worker::{on_worker_of, PoolInner, RUNNING};
use crate::subscriber::OwnedEventSubscriber;

/// The callback of an async subscriber, run on a pool worker with the shared event. Implemented by
/// every `Fn(&Event) + Send + Sync + 'static`; implement it yourself to keep the `Arc` (an exporter
/// that batches events, say).
///
/// ```
/// use notify_core::pool::{AsyncOptions, AsyncSubscriber, WorkerPool};
/// use notify_core::{Event, Notifier, Payload};
/// use std::sync::{Arc, Mutex};
///
/// struct Keep(Mutex<Vec<Arc<Event>>>);
/// impl AsyncSubscriber for Keep {
///     fn call(&self, event: &Arc<Event>) { self.0.lock().unwrap().push(event.clone()); }
/// }
/// let kept = Arc::new(Keep(Mutex::new(Vec::new())));
/// let pool = WorkerPool::builder().threads(1).build();
/// let notifier = Notifier::new();
/// pool.subscribe(&notifier, "x", AsyncOptions::new(), kept.clone());
/// notifier.instrument("x", Payload::new, |_| ());
/// pool.flush();
/// assert_eq!(kept.0.lock().unwrap()[0].name(), "x");
/// ```
pub trait AsyncSubscriber: Send + Sync + 'static {
    /// Receives one event, on a worker thread, never concurrently with itself.
    fn call(&self, event: &Arc<Event>);
}

impl<F> AsyncSubscriber for F
where
    F: Fn(&Event) + Send + Sync + 'static,
{
    fn call(&self, event: &Arc<Event>) {
        self(event);
    }
}

impl<T: AsyncSubscriber + ?Sized> AsyncSubscriber for Arc<T> {
    fn call(&self, event: &Arc<Event>) {
        (**self).call(event);
    }
}

/// One queued event with the flush generation it was accepted in.
pub(crate) struct Slot {
    pub(crate) event: Arc<Event>,
    pub(crate) gen: usize,
}

/// What mailboxes of one subscription share (fan-out members share one).
pub(crate) struct Config {
    pub(crate) capacity: usize,
    pub(crate) overflow: Overflow,
    pub(crate) on_panic: PanicPolicy,
    pub(crate) label: Option<Cow<'static, str>>,
}

impl Config {
    pub(crate) fn of(options: &AsyncOptions) -> Arc<Config> {
        Arc::new(Config {
            capacity: options.capacity.max(1),
            overflow: options.overflow,
            on_panic: options.on_panic,
            label: options.label.clone(),
        })
    }
}

/// One async subscriber: its mailbox, callback, and the pool that runs it.
pub(crate) struct Mailbox {
    pub(crate) core: MailboxCore<Slot>,
    pub(crate) subscriber: Box<dyn AsyncSubscriber>,
    pub(crate) pool: Arc<PoolInner>,
    pub(crate) config: Arc<Config>,
    pub(crate) id: u64,
}

impl Mailbox {
    pub(crate) fn new(pool: Arc<PoolInner>, config: Arc<Config>, subscriber: Box<dyn AsyncSubscriber>) -> Mailbox {
        let id = pool
            .shared
            .next_mailbox
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Mailbox {
            core: MailboxCore::new(),
            subscriber,
            pool,
            config,
            id,
        }
    }

    fn label(&self) -> Cow<'static, str> {
        self.config.label.clone().unwrap_or(Cow::Borrowed("async"))
    }

    /// Queues `event` (accepted in generation `gen`, already counted pending). Returns true when the
    /// mailbox became scheduled and the caller must hand it to its pool.
    #[inline]
    pub(crate) fn offer(&self, event: Arc<Event>, gen: usize) -> bool {
        let pool = &*self.pool;
        let mut slot = Slot { event, gen };
        let mut overflow = self.config.overflow;
        if overflow == Overflow::Block && on_worker_of(pool.shared.family) {
            overflow = Overflow::DropNewest;
        }
        loop {
            match self
                .core
                .push(slot, self.config.capacity, overflow, || pool.space.lock())
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

    /// The slow-subscriber report, at most once per interval; the clock is read only here.
    #[cold]
    fn overflowed(&self) {
        let shared = &self.pool.shared;
        if let Some(dropped) = self.core.report_due(shared.now_ns(), shared.report_interval_ns) {
            let report = SlowSubscriber {
                mailbox: self.id,
                subscriber: self.label(),
                capacity: self.config.capacity,
                dropped,
                overflow: self.config.overflow,
            };
            let hook = &shared.slow_hook;
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| hook(&report)));
        }
    }

    /// The callback panicked on `event`: report it, and detach per policy. True when detached.
    #[cold]
    pub(crate) fn failed(&self, event: &Event, payload: &(dyn Any + Send)) -> bool {
        let detach = self.config.on_panic == PanicPolicy::Detach;
        self.pool.report_failure(&AsyncFailure {
            mailbox: self.id,
            subscriber: self.label(),
            event: event.name().to_owned(),
            message: panic_message(payload),
            detached: detach,
        });
        if detach {
            self.detach();
        }
        detach
    }

    /// Refuses later events and discards the queued ones (counted as dropped).
    pub(crate) fn detach(&self) {
        for slot in self.core.close(true) {
            self.pool.complete(slot.gen, 1);
        }
    }

    pub(crate) fn add_dropped(&self, n: u64) {
        if n > 0 {
            self.core.add_dropped(n);
        }
    }
}

/// The registry's view of one async subscriber.
pub(crate) struct Deliver(pub(crate) Arc<Mailbox>);

impl OwnedEventSubscriber for Deliver {
    #[inline]
    fn deliver(&self, event: &Arc<Event>) {
        let mailbox = &self.0;
        let pool = &*mailbox.pool;
        if pool.state() != RUNNING {
            pool.shared.reject(1);
            return;
        }
        let gen = pool.generation();
        pool.accept(gen, 1);
        if mailbox.offer(event.clone(), gen) {
            pool.schedule(mailbox.clone());
        }
    }
}

thread_local! {
    /// Mailboxes a fan-out made scheduled while delivering one event (reused, so no allocation).
    static SCHEDULED: RefCell<Vec<Arc<Mailbox>>> = const { RefCell::new(Vec::new()) };
}

/// Many async subscribers behind one registry subscription (all on `pool`, never dedicated): one
/// `deliver` per event queues into
/// every member, counts them pending with one atomic add, and schedules the members that became
/// scheduled under one run-queue lock.
pub(crate) struct Fanout {
    pub(crate) pool: Arc<PoolInner>,
    pub(crate) members: Box<[Arc<Mailbox>]>,
}

impl OwnedEventSubscriber for Fanout {
    fn deliver(&self, event: &Arc<Event>) {
        let pool = &*self.pool;
        if pool.state() != RUNNING {
            pool.shared.reject(self.members.len() as u64);
            return;
        }
        let gen = pool.generation();
        pool.accept(gen, self.members.len() as u64);
        let mut scheduled = SCHEDULED.with(|s| std::mem::take(&mut *s.borrow_mut()));
        for member in self.members.iter() {
            if member.offer(event.clone(), gen) {
                scheduled.push(member.clone());
            }
        }
        pool.schedule_many(&mut scheduled);
        SCHEDULED.with(|s| *s.borrow_mut() = scheduled);
    }
}
