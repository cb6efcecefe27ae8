//! From the notifier to a mailbox: the per-subscriber mailbox with its callback, the
//! [`OwnedEventSubscriber`] that queues into one mailbox, and the fan-out group whose members
//! share one event log behind one registry subscription.

use std::any::Any;
use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::group::{shard_layout, GroupCore};
use crate::mailbox::{Admit, MailboxCore};
use crate::options::{AsyncFailure, AsyncOptions, Overflow, PanicPolicy, SlowSubscriber};
use crate::worker::{on_any_worker, PoolInner, Shared, RUNNING};
use notify_core::panic_message;
use notify_core::Event;
use notify_core::OwnedEventSubscriber;

/// The callback of an async subscriber, run on a pool worker with the shared event. Implemented by
/// every `Fn(&Event) + Send + Sync + 'static`; implement it yourself to keep the `Arc` (an exporter
/// that batches events, say).
///
/// ```
/// use notify_pool::{AsyncOptions, AsyncSubscriber, WorkerPool};
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
#[derive(Clone)]
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
        if overflow == Overflow::Block && on_any_worker() {
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

    /// The slow-subscriber report, at most once per interval; the clock is read only here.
    #[cold]
    fn overflowed(&self) {
        let shared = &self.pool.shared;
        if let Some(dropped) = self.core.report_due(shared.now_ns(), shared.report_interval_ns) {
            report_slow(shared, &self.config, self.id, self.label(), dropped);
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

    /// Refuses later events and discards the queued ones (counted as dropped). Publishers blocked
    /// on the full mailbox ([`Overflow::Block`]) are woken: their events are dropped too.
    pub(crate) fn detach(&self) {
        let (discarded, blocked) = self.core.close(true);
        for slot in discarded {
            self.pool.complete(slot.gen, 1);
        }
        if blocked {
            self.pool.wake_blocked();
        }
        if self.pool.dedicated {
            self.pool.retire();
        }
    }

    /// Refuses later events; the queued ones are still delivered. Publishers blocked on the full
    /// mailbox are woken at once: their events are dropped.
    pub(crate) fn close(&self) {
        let (_, blocked) = self.core.close(false);
        if blocked {
            self.pool.wake_blocked();
        }
        if self.pool.dedicated {
            self.pool.retire();
        }
    }

    pub(crate) fn add_dropped(&self, n: u64) {
        if n > 0 {
            self.core.add_dropped(n);
        }
    }
}

impl Drop for Mailbox {
    fn drop(&mut self) {
        // Nobody can queue into it any more: a dedicated thread has nothing left to serve.
        if self.pool.dedicated {
            self.pool.retire();
        }
    }
}

/// Calls the pool's slow-subscriber hook for one mailbox (or fan-out shard); a panicking hook is
/// ignored.
fn report_slow(shared: &Shared, config: &Config, mailbox: u64, subscriber: Cow<'static, str>, dropped: u64) {
    let report = SlowSubscriber {
        mailbox,
        subscriber,
        capacity: config.capacity,
        dropped,
        overflow: config.overflow,
    };
    let hook = &shared.slow_hook;
    crate::unwind::quietly(|| hook(&report));
}

/// The registry's view of one async subscriber.
pub(crate) struct Deliver(pub(crate) Arc<Mailbox>);

impl OwnedEventSubscriber for Deliver {
    #[inline]
    fn deliver(&self, event: &Arc<Event>) {
        let mailbox = &self.0;
        let pool = &*mailbox.pool;
        let Some(_publishing) = pool.enter() else {
            pool.shared.reject(1);
            return;
        };
        let gen = pool.accept(1);
        if mailbox.offer(event.clone(), gen) {
            pool.schedule(mailbox.clone());
        }
    }
}

/// One member of a fan-out group: its callback and what only it knows. About 32 bytes.
pub(crate) struct Member {
    pub(crate) subscriber: Box<dyn AsyncSubscriber>,
    /// Events with a sequence number at or above this are not delivered to this member, but
    /// counted as dropped (`u64::MAX`: open). Set under the group's lock.
    pub(crate) closed_at: AtomicU64,
    /// Events dropped for this member alone (after it was closed or detached), exact.
    pub(crate) dropped: AtomicU64,
}

/// Many async subscribers sharing one event log (see the `group` module): the state behind a
/// [`WorkerPool::subscribe_fanout`](crate::WorkerPool::subscribe_fanout) subscription.
pub(crate) struct Group {
    pub(crate) core: GroupCore<Slot>,
    pub(crate) members: Box<[Member]>,
    /// Members per shard (the last shard may have fewer).
    pub(crate) per_shard: usize,
    pub(crate) pool: Arc<PoolInner>,
    pub(crate) config: Arc<Config>,
    /// The id of member 0; member `i` is `first_id + i`.
    pub(crate) first_id: u64,
}

impl Group {
    pub(crate) fn new(pool: Arc<PoolInner>, config: Arc<Config>, subscribers: Vec<Box<dyn AsyncSubscriber>>) -> Group {
        let n = subscribers.len();
        let (shards, per_shard) = shard_layout(n, pool.slots.len());
        let first_id = pool.shared.next_mailbox.fetch_add(n as u64, Ordering::Relaxed);
        let members = subscribers
            .into_iter()
            .map(|subscriber| Member {
                subscriber,
                closed_at: AtomicU64::new(u64::MAX),
                dropped: AtomicU64::new(0),
            })
            .collect();
        Group {
            core: GroupCore::new(shards),
            members,
            per_shard,
            pool,
            config,
            first_id,
        }
    }

    /// The members of `shard`, with the index of its first member.
    pub(crate) fn shard(&self, shard: usize) -> (usize, &[Member]) {
        let first = (shard * self.per_shard).min(self.members.len());
        let end = (first + self.per_shard).min(self.members.len());
        (first, &self.members[first..end])
    }

    fn shard_len(&self, shard: usize) -> u64 {
        self.shard(shard).1.len() as u64
    }

    fn shard_of(&self, member: usize) -> usize {
        member / self.per_shard.max(1)
    }

    /// Events member `index` will never receive (an exact count).
    pub(crate) fn dropped(&self, index: usize) -> u64 {
        self.core.dropped(self.shard_of(index)) + self.members[index].dropped.load(Ordering::Relaxed)
    }

    /// Events queued for member `index` (a count; those a worker already took are not counted).
    pub(crate) fn queued(&self, index: usize) -> usize {
        let closed_at = self.members[index].closed_at.load(Ordering::Relaxed);
        self.core.queued_before(self.shard_of(index), closed_at)
    }

    pub(crate) fn is_closed(&self, index: usize) -> bool {
        self.members[index].closed_at.load(Ordering::Relaxed) != u64::MAX
    }

    /// Closes members `range`: events published from now on are dropped for them (counted when a
    /// worker passes them); the queued ones are still delivered.
    pub(crate) fn close(&self, range: std::ops::Range<usize>) {
        self.core.at_head(|head| {
            for member in &self.members[range] {
                member.closed_at.fetch_min(head, Ordering::Relaxed);
            }
        });
    }

    fn label(&self) -> Cow<'static, str> {
        self.config.label.clone().unwrap_or(Cow::Borrowed("async"))
    }

    /// Member `index` panicked on `event` (sequence `seq`): report it, and detach per policy (later
    /// events, queued or not, are dropped for it). True when detached.
    #[cold]
    pub(crate) fn failed(&self, index: usize, seq: u64, event: &Event, payload: &(dyn Any + Send)) -> bool {
        let detach = self.config.on_panic == PanicPolicy::Detach;
        self.pool.report_failure(&AsyncFailure {
            mailbox: self.first_id + index as u64,
            subscriber: self.label(),
            event: event.name().to_owned(),
            message: panic_message(payload),
            detached: detach,
        });
        if detach {
            self.members[index].closed_at.fetch_min(seq + 1, Ordering::Relaxed);
        }
        detach
    }

    /// The slow-subscriber reports of the shards in `shards` (bits), at most once per interval
    /// each; a report names the shard's first member and counts the drops of each of its members.
    #[cold]
    fn overflowed(&self, shards: u64) {
        let shared = &self.pool.shared;
        let now = shared.now_ns();
        for shard in (0..64).filter(|s| shards & (1 << s) != 0) {
            if let Some(dropped) = self.core.report_due(shard, now, shared.report_interval_ns) {
                report_slow(
                    shared,
                    &self.config,
                    self.first_id + self.shard(shard).0 as u64,
                    self.label(),
                    dropped,
                );
            }
        }
    }

    /// Appends `event` once for every member (accepted in generation `gen`, already counted
    /// pending once per member) and schedules the shards that became scheduled.
    fn publish(self: &Arc<Group>, event: &Arc<Event>, gen: usize) {
        let pool = &*self.pool;
        let mut slot = Slot {
            event: event.clone(),
            gen,
        };
        let mut overflow = self.config.overflow;
        if overflow == Overflow::Block && on_any_worker() {
            overflow = Overflow::DropNewest;
        }
        loop {
            let appended = self.core.append(
                slot,
                self.config.capacity,
                overflow,
                || pool.space.lock(),
                |dropped, shard| pool.complete(dropped.gen, self.shard_len(shard)),
            );
            match appended {
                Ok(done) => {
                    if done.overflowed != 0 {
                        self.overflowed(done.overflowed);
                    }
                    if done.schedule != 0 {
                        pool.schedule_shards(self, done.schedule);
                    }
                    return;
                }
                Err((full, mut space, shards)) => {
                    if pool.state() != RUNNING {
                        drop(space);
                        let n = self.members.len() as u64;
                        pool.shared.reject(n);
                        pool.complete(full.gen, n);
                        return;
                    }
                    pool.space_cv.wait(&mut space);
                    drop(space);
                    self.overflowed(shards);
                    slot = full;
                }
            }
        }
    }
}

/// The registry's view of a fan-out group: one `deliver` per event appends it to the group's log
/// once and counts it pending once per member with one atomic add, however many members there are.
pub(crate) struct Fanout(pub(crate) Arc<Group>);

impl OwnedEventSubscriber for Fanout {
    fn deliver(&self, event: &Arc<Event>) {
        let group = &self.0;
        let pool = &*group.pool;
        let n = group.members.len() as u64;
        let Some(_publishing) = pool.enter() else {
            pool.shared.reject(n);
            return;
        };
        let gen = pool.accept(n);
        group.publish(event, gen);
    }
}
