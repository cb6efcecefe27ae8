//! [`Group`]: many async subscribers (members) behind one registry subscription and one shared
//! event log, their turns on a worker (a shard of members at a time), and [`Fanout`], the
//! registry's view of a group.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use notify_core::{failure::panic_message, Event, OwnedEventSubscriber};

use crate::config::Config;
use crate::group_core::{shard_layout, GroupCore};
use crate::mailbox_id::MailboxId;
use crate::options::{AsyncFailure, AsyncFailurePolicy, Overflow};
use crate::slot::Slot;
use crate::unwind::{drop_caught, drop_payload};
use crate::worker::{on_any_worker, Batches, Flavor, PoolInner, WorkerSlot, RUNNING, STOPPED};
use crate::AsyncSubscriber;

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

    /// Member `index` panicked on `event` (sequence `seq`): report it, and detach per policy (later
    /// events, queued or not, are dropped for it). True when detached.
    #[cold]
    pub(crate) fn failed(&self, index: usize, seq: u64, event: &Event, payload: &(dyn Any + Send)) -> bool {
        let detach = self.config.on_failure == AsyncFailurePolicy::Detach;
        self.pool.report_failure(&AsyncFailure {
            mailbox: MailboxId(self.first_id + index as u64),
            subscriber: self.config.label(),
            event: event.name().to_owned(),
            message: panic_message(payload),
            detached: detach,
            in_drop: false,
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
                shared.report_slow(
                    &self.config,
                    MailboxId(self.first_id + self.shard(shard).0 as u64),
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
                        let target: Arc<dyn Flavor> = self.clone();
                        pool.schedule_parts(&target, done.schedule);
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

impl Flavor for Group {
    /// Runs one batch of a shard: every member of the shard, one after another, over the same
    /// batch of events in log order (see `GroupCore`).
    fn turn(&self, pool: &PoolInner, shard: usize, slot: &WorkerSlot, batches: &mut Batches) -> bool {
        if self.core.take(shard, pool.shared.batch, &mut batches.shard) {
            let _space = pool.space.lock();
            pool.space_cv.notify_all();
        }
        let batch = &mut batches.shard;
        let mut per_gen = [0_u64; 2];
        for (_, item) in batch.iter() {
            per_gen[item.gen] += 1;
        }
        let (first, members) = self.shard(shard);
        let mut done = [0_u64; 2];
        let mut ran = 0_u64;
        // The batch's pending events finished so far, for the report at exit (`WorkerSlot::calling`).
        let mut finished = 0_u64;
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
                        if pool.state() == STOPPED {
                            return false;
                        }
                        slot.calling(finished + next as u64);
                        member.subscriber.call(&batch[next].1.event);
                        next += 1;
                        slot.finished(finished + next as u64);
                    }
                    true
                }));
                match run {
                    Ok(finished) => stopped = !finished,
                    Err(payload) => {
                        let (seq, item) = &batch[next];
                        next += 1;
                        slot.finished(finished + next as u64);
                        if self.failed(first + offset, *seq, &item.event, &*payload) {
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
            finished += batch.len() as u64;
            slot.finished(finished);
        }
        batch.clear();
        slot.delivered.fetch_add(ran, Ordering::Relaxed);
        pool.complete(0, done[0]);
        pool.complete(1, done[1]);
        slot.finished(0);
        if pool.state() == STOPPED {
            return false;
        }
        self.core.finish_turn(shard)
    }

    fn refuse_stopped(&self, pool: &PoolInner, shard: usize) {
        let members = self.shard(shard).1.len() as u64;
        self.core.clear(shard, |slot| {
            pool.shared.reject(members);
            pool.complete(slot.gen, members);
        });
    }

    fn abandon(&self, _shard: usize) {
        // The shard's events stay in the group's log, counted pending: abandoned with the rest.
    }

    fn id(&self, member: usize) -> MailboxId {
        MailboxId(self.first_id + member as u64)
    }

    fn label(&self) -> Option<&str> {
        self.config.label.as_deref()
    }

    fn dropped(&self, member: usize) -> u64 {
        Group::dropped(self, member)
    }

    fn queued(&self, member: usize) -> usize {
        Group::queued(self, member)
    }

    fn is_closed(&self, member: usize) -> bool {
        Group::is_closed(self, member)
    }

    fn close(&self, member: usize) {
        Group::close(self, member..member + 1);
    }
}

impl Drop for Group {
    /// Drops each member's callback under a guard, wherever the group's last reference goes (a
    /// worker, the shutdown, the registry): a panic in one is reported once through the failure
    /// hook ([`AsyncFailure::in_drop`]) and counted, and the other members are still dropped.
    fn drop(&mut self) {
        for (index, member) in self.members.iter_mut().enumerate() {
            // A zero-sized placeholder: replacing the callback allocates nothing.
            let subscriber = std::mem::replace(&mut member.subscriber, Box::new(Dropped));
            if let Some(message) = drop_caught(move || drop(subscriber)) {
                self.pool.report_failure(&AsyncFailure {
                    mailbox: MailboxId(self.first_id + index as u64),
                    subscriber: self.config.label(),
                    event: String::new(),
                    message,
                    detached: false,
                    in_drop: true,
                });
            }
        }
    }
}

/// What a dropped member's callback is replaced with while its group is dropped.
struct Dropped;

impl AsyncSubscriber for Dropped {
    fn call(&self, _: &Arc<Event>) {}
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
