//! The fan-out group: one shared event log for many members, read through a cursor per shard.
//!
//! [`GroupCore`] holds what a [`WorkerPool::subscribe_fanout`](crate::WorkerPool::subscribe_fanout)
//! group shares, under **one** lock: the log of events (appended once per event, whatever the
//! number of members) and, per shard (a run of consecutive members, at most [`MAX_SHARDS`]), a
//! read cursor, the scheduling flag and the overflow counters. A shard is what the pool schedules:
//! a worker takes a batch of the shard's events (advancing its cursor), runs every member of the
//! shard over the batch, one member after another and each in log order, and only then ends the
//! turn. Generic over the item so the `loom` model below checks the very code the pool runs.
//!
//! The rules, all under the group's lock:
//!
//! * **Append** (publisher): the event gets the next sequence number. Fast path: when every shard
//!   is scheduled and the laggiest cursor is less than `capacity` behind, the append is all there
//!   is to do (O(1) in members and shards). Otherwise, per shard: a shard already holding `capacity`
//!   events refuses it (`DropNewest`: the entry's bit for that shard is set, a gap the shard's
//!   reader skips), evicts its oldest queued event (`DropOldest`: its cursor moves past it), or makes
//!   the publisher wait for room (`Block`, checked for every shard before anything is appended); an
//!   unscheduled shard that accepted the event becomes scheduled, and exactly one publisher is told
//!   to hand it to the pool.
//! * **Take** (worker): up to `max` events from the shard's cursor, skipping its gaps; the shard
//!   stays scheduled. The cursor moves at once, so the events taken no longer count against the
//!   shard's capacity (as a mailbox's batch leaves its queue). Entries every shard has passed are
//!   released from the front of the log.
//! * **Finish turn** (worker, after the batch's callbacks returned): a shard with nothing queued is
//!   marked unscheduled (the next publisher schedules it anew); otherwise it stays scheduled and
//!   the worker runs or re-queues it. As for a mailbox, unscheduling when the batch is *taken* would
//!   let a second worker run the shard's members while the first still does.
//!
//! Per-member state (closed, dropped after closing) lives outside the lock, in the group's
//! members; the drop counter of a member is its shard's overflow count plus its own.

use std::collections::VecDeque;
use std::mem;

use crate::options::Overflow;
use crate::sync::Mutex;

/// The most shards a group has (each log entry keeps one refusal bit per shard).
pub(crate) const MAX_SHARDS: usize = 64;

/// Members per shard a group aims for, below [`MAX_SHARDS`] shards.
pub(crate) const SHARD_MEMBERS: usize = 64;

/// A drained log keeps a buffer of at most this many entries.
const RETAIN_ENTRIES: usize = 1024;

/// How many shards a group of `members` members has (at least 1, at most [`MAX_SHARDS`]), and how
/// many members each shard holds (the last one may hold fewer).
pub(crate) fn shard_layout(members: usize, threads: usize) -> (usize, usize) {
    let members = members.max(1);
    // At least one shard per worker when there are members enough, so every worker can help.
    let wanted = members.div_ceil(SHARD_MEMBERS).max(threads.min(members / 4).max(1));
    let shards = wanted.min(MAX_SHARDS);
    let per_shard = members.div_ceil(shards);
    (members.div_ceil(per_shard), per_shard)
}

#[derive(Debug)]
struct Entry<T> {
    item: T,
    /// Bit `s` set: shard `s` refused this entry (`DropNewest`).
    refused: u64,
}

#[derive(Debug, Default)]
struct Shard {
    /// Sequence number of the next entry to take.
    cursor: u64,
    /// Entries in `cursor..head` this shard refused.
    gaps: u64,
    /// Set from the moment a publisher queues into an idle shard until a worker, after its
    /// callbacks returned, finds nothing queued.
    scheduled: bool,
    /// Events refused or evicted by the overflow policy (exact, for each member of the shard).
    dropped: u64,
    /// When the last slow-subscriber report was made (ns on the pool's clock, 0 = never).
    last_report: u64,
}

#[derive(Debug)]
struct State<T> {
    log: VecDeque<Entry<T>>,
    /// Sequence number of `log[0]`.
    base: u64,
    shards: Box<[Shard]>,
    /// Shards not scheduled (a count).
    idle: usize,
    /// The least cursor of all shards.
    min_cursor: u64,
    /// Publishers that found a shard full under [`Overflow::Block`] and wait for room.
    blocked: u32,
}

impl<T> State<T> {
    fn head(&self) -> u64 {
        self.base + self.log.len() as u64
    }

    fn queued(&self, shard: usize) -> u64 {
        let s = &self.shards[shard];
        self.head() - s.cursor - s.gaps
    }

    /// Recomputes `min_cursor` and releases the entries every shard has passed.
    fn trim(&mut self) {
        self.min_cursor = self.shards.iter().map(|s| s.cursor).min().unwrap_or(0);
        while self.base < self.min_cursor {
            self.log.pop_front();
            self.base += 1;
        }
        if self.log.is_empty() && self.log.capacity() > RETAIN_ENTRIES {
            self.log.shrink_to(RETAIN_ENTRIES);
        }
    }
}

/// What [`GroupCore::append`] did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Appended {
    /// Bit `s`: the caller made shard `s` scheduled and must hand it to the pool.
    pub(crate) schedule: u64,
    /// Bit `s`: shard `s` overflowed (refused or evicted; counted as dropped).
    pub(crate) overflowed: u64,
}

/// Full under [`Overflow::Block`]: the item back, what `on_full` returned (taken while the group
/// was still locked, so a worker's wake-up cannot be missed), and the full shards' bits.
pub(crate) type Full<T, W> = (T, W, u64);

/// The shared log and per-shard cursors of a fan-out group (see the module docs).
#[derive(Debug)]
pub(crate) struct GroupCore<T> {
    state: Mutex<State<T>>,
}

impl<T: Clone> GroupCore<T> {
    pub(crate) fn new(shards: usize) -> GroupCore<T> {
        let shards = shards.clamp(1, MAX_SHARDS);
        GroupCore {
            state: Mutex::new(State {
                log: VecDeque::new(),
                base: 0,
                shards: (0..shards).map(|_| Shard::default()).collect(),
                idle: shards,
                min_cursor: 0,
                blocked: 0,
            }),
        }
    }

    /// Appends `item` for every shard, with room for `capacity` queued items per shard. Each item
    /// refused or evicted is passed to `on_drop` with its shard, under the lock. `on_full` runs only
    /// for [`Overflow::Block`] when a shard is full, while the group is still locked; nothing is
    /// appended then.
    pub(crate) fn append<W>(
        &self,
        item: T,
        capacity: usize,
        overflow: Overflow,
        on_full: impl FnOnce() -> W,
        mut on_drop: impl FnMut(&T, usize),
    ) -> Result<Appended, Full<T, W>> {
        let capacity = capacity.max(1) as u64;
        let mut state = self.state.lock();
        let head = state.head();
        if state.idle == 0 && head - state.min_cursor < capacity {
            state.log.push_back(Entry { item, refused: 0 });
            return Ok(Appended::default());
        }
        if overflow == Overflow::Block {
            let full = (0..state.shards.len())
                .filter(|&s| state.queued(s) >= capacity)
                .fold(0_u64, |bits, s| bits | 1 << s);
            if full != 0 {
                state.blocked += 1;
                let waiting = on_full();
                return Err((item, waiting, full));
            }
        }
        let mut done = Appended::default();
        let mut refused = 0_u64;
        let mut evicted = false;
        let State {
            log,
            base,
            shards,
            idle,
            ..
        } = &mut *state;
        for (index, shard) in shards.iter_mut().enumerate() {
            let bit = 1_u64 << index;
            if head - shard.cursor - shard.gaps >= capacity {
                done.overflowed |= bit;
                shard.dropped += 1;
                if overflow == Overflow::DropOldest {
                    loop {
                        let entry = &log[(shard.cursor - *base) as usize];
                        shard.cursor += 1;
                        if entry.refused & bit != 0 {
                            shard.gaps -= 1;
                        } else {
                            on_drop(&entry.item, index);
                            break;
                        }
                    }
                    evicted = true;
                } else {
                    // DropNewest (and Block turned into DropNewest by the caller).
                    on_drop(&item, index);
                    refused |= bit;
                    shard.gaps += 1;
                    continue;
                }
            }
            if !shard.scheduled {
                shard.scheduled = true;
                *idle -= 1;
                done.schedule |= bit;
            }
        }
        state.log.push_back(Entry { item, refused });
        if evicted {
            state.trim();
        }
        Ok(done)
    }

    /// Moves up to `max` of `shard`'s queued items into `out`, each with its sequence number, for
    /// one turn. The shard stays scheduled. Returns true when publishers were blocked on the group
    /// (they must be woken: there is room now).
    pub(crate) fn take(&self, shard: usize, max: usize, out: &mut Vec<(u64, T)>) -> bool {
        let mut state = self.state.lock();
        debug_assert!(state.shards[shard].scheduled, "a turn runs only on a scheduled shard");
        let bit = 1_u64 << shard;
        let head = state.head();
        let State { log, base, shards, .. } = &mut *state;
        let s = &mut shards[shard];
        let first = s.cursor;
        while s.cursor < head && out.len() < max {
            let entry = &log[(s.cursor - *base) as usize];
            if entry.refused & bit != 0 {
                s.gaps -= 1;
            } else {
                out.push((s.cursor, entry.item.clone()));
            }
            s.cursor += 1;
        }
        if first == state.min_cursor {
            state.trim();
        }
        mem::take(&mut state.blocked) > 0
    }

    /// Ends a turn of `shard`, after the batch's callbacks returned. Returns true when items remain:
    /// the shard stays scheduled and the caller must run or re-queue it; false when it is now idle.
    pub(crate) fn finish_turn(&self, shard: usize) -> bool {
        let mut state = self.state.lock();
        if state.queued(shard) > 0 {
            return true;
        }
        state.shards[shard].scheduled = false;
        state.idle += 1;
        false
    }

    /// Removes every item queued for `shard` without counting it as dropped (the pool stopped),
    /// passing each to `each`.
    pub(crate) fn clear(&self, shard: usize, mut each: impl FnMut(&T)) {
        let mut state = self.state.lock();
        let bit = 1_u64 << shard;
        let head = state.head();
        let State { log, base, shards, .. } = &mut *state;
        let s = &mut shards[shard];
        while s.cursor < head {
            let entry = &log[(s.cursor - *base) as usize];
            if entry.refused & bit == 0 {
                each(&entry.item);
            }
            s.cursor += 1;
        }
        s.gaps = 0;
        state.trim();
    }

    /// Runs `f` with the sequence number the next appended item gets, under the lock (so no append
    /// runs meanwhile).
    pub(crate) fn at_head<R>(&self, f: impl FnOnce(u64) -> R) -> R {
        let state = self.state.lock();
        f(state.head())
    }

    /// Items queued for `shard` with a sequence number below `until` (a count).
    pub(crate) fn queued_before(&self, shard: usize, until: u64) -> usize {
        let state = self.state.lock();
        if until >= state.head() {
            return state.queued(shard) as usize;
        }
        let bit = 1_u64 << shard;
        let cursor = state.shards[shard].cursor;
        (cursor..until.max(cursor))
            .filter(|&seq| state.log[(seq - state.base) as usize].refused & bit == 0)
            .count()
    }

    /// Items `shard` refused or evicted (a count, exact).
    pub(crate) fn dropped(&self, shard: usize) -> u64 {
        self.state.lock().shards[shard].dropped
    }

    /// The slow-subscriber report of `shard` is due at `now` (ns) given `interval` (ns): records it
    /// and returns the shard's drop count.
    pub(crate) fn report_due(&self, shard: usize, now: u64, interval: u64) -> Option<u64> {
        let mut state = self.state.lock();
        let s = &mut state.shards[shard];
        let due = s.last_report == 0 || now.saturating_sub(s.last_report) >= interval;
        if due {
            s.last_report = now.max(1);
            Some(s.dropped)
        } else {
            None
        }
    }

    /// Entries held by the log (a count; those every shard passed are released).
    #[cfg(test)]
    pub(crate) fn retained(&self) -> usize {
        self.state.lock().log.len()
    }

    #[cfg(test)]
    pub(crate) fn is_scheduled(&self, shard: usize) -> bool {
        self.state.lock().shards[shard].scheduled
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn append(g: &GroupCore<u32>, item: u32, capacity: usize, overflow: Overflow) -> (Appended, Vec<(u32, usize)>) {
        let mut dropped = Vec::new();
        let done = g
            .append(item, capacity, overflow, || (), |i, s| dropped.push((*i, s)))
            .unwrap_or_else(|_| panic!("full"));
        (done, dropped)
    }

    fn take(g: &GroupCore<u32>, shard: usize, max: usize) -> Vec<u32> {
        let mut out = Vec::new();
        g.take(shard, max, &mut out);
        out.into_iter().map(|(_, i)| i).collect()
    }

    #[test]
    fn pool_group_layout() {
        assert_eq!(shard_layout(1, 2), (1, 1));
        assert_eq!(shard_layout(10, 2), (2, 5));
        assert_eq!(shard_layout(100, 2), (2, 50));
        assert_eq!(shard_layout(1000, 2), (16, 63));
        let (shards, per) = shard_layout(100_000, 2);
        assert_eq!(shards, MAX_SHARDS);
        assert!(shards * per >= 100_000);
        for n in [1, 3, 7, 65, 129, 4097, 1_000_000] {
            let (shards, per) = shard_layout(n, 4);
            assert!(
                shards <= MAX_SHARDS && shards * per >= n && (shards - 1) * per < n,
                "{n}"
            );
        }
    }

    #[test]
    fn pool_group_first_append_schedules_each_shard_once() {
        let g = GroupCore::new(2);
        assert_eq!(append(&g, 1, 8, Overflow::DropNewest).0.schedule, 0b11);
        assert_eq!(append(&g, 2, 8, Overflow::DropNewest).0.schedule, 0, "fast path");
        assert_eq!(take(&g, 0, 8), [1, 2]);
        assert_eq!(g.retained(), 2, "shard 1 still needs them");
        assert!(!g.finish_turn(0));
        assert!(!g.is_scheduled(0));
        assert_eq!(append(&g, 3, 8, Overflow::DropNewest).0.schedule, 0b01);
        assert_eq!(take(&g, 1, 1), [1]);
        assert_eq!(g.retained(), 2, "1 released once both shards passed it");
        assert!(g.finish_turn(1), "2 and 3 are left");
        assert_eq!(take(&g, 1, 8), [2, 3]);
        assert!(!g.finish_turn(1));
        assert_eq!(take(&g, 0, 8), [3]);
        assert!(!g.finish_turn(0));
        assert_eq!(g.retained(), 0);
    }

    #[test]
    fn pool_group_drop_newest_leaves_gaps_per_shard() {
        let g = GroupCore::new(2);
        append(&g, 0, 2, Overflow::DropNewest);
        append(&g, 1, 2, Overflow::DropNewest);
        assert_eq!(take(&g, 0, 8), [0, 1]);
        let (done, dropped) = append(&g, 2, 2, Overflow::DropNewest);
        assert_eq!((done.overflowed, dropped), (0b10, vec![(2, 1)]));
        append(&g, 3, 2, Overflow::DropNewest);
        assert_eq!(g.queued_before(1, u64::MAX), 2);
        assert_eq!((g.dropped(0), g.dropped(1)), (0, 2));
        assert_eq!(take(&g, 1, 1), [0]);
        let (done, _) = append(&g, 4, 2, Overflow::DropNewest);
        assert_eq!(done.overflowed, 0b01, "shard 0 holds 2 and 3: full");
        assert_eq!(take(&g, 1, 8), [1, 4], "2 and 3 were refused by shard 1 only");
        assert_eq!(take(&g, 0, 8), [2, 3]);
        assert_eq!((g.dropped(0), g.dropped(1)), (1, 2));
        assert!(!g.finish_turn(0) && !g.finish_turn(1));
        assert_eq!(g.retained(), 0);
    }

    #[test]
    fn pool_group_drop_oldest_evicts_per_shard() {
        let g = GroupCore::new(1);
        let mut evicted = Vec::new();
        for i in 0..5 {
            evicted.extend(append(&g, i, 3, Overflow::DropOldest).1);
        }
        assert_eq!(evicted, [(0, 0), (1, 0)]);
        assert_eq!(g.dropped(0), 2);
        assert_eq!(g.retained(), 3, "evicted entries are released");
        assert_eq!(take(&g, 0, 8), [2, 3, 4]);
    }

    #[test]
    fn pool_group_block_appends_nothing_when_a_shard_is_full() {
        let g = GroupCore::new(2);
        append(&g, 0, 1, Overflow::Block);
        assert_eq!(take(&g, 0, 8), [0]);
        match g.append(1, 1, Overflow::Block, || 'w', |_, _| unreachable!()) {
            Err((1, 'w', full)) => assert_eq!(full, 0b10),
            other => panic!("{other:?}"),
        }
        assert!(g.take(1, 8, &mut Vec::new()), "the blocked publisher is reported once");
        assert!(!g.take(1, 8, &mut Vec::new()));
        assert_eq!((g.dropped(0), g.dropped(1)), (0, 0));
        assert!(g.append(1, 1, Overflow::Block, || (), |_, _| unreachable!()).is_ok());
    }

    #[test]
    fn pool_group_clear_and_reports() {
        let g = GroupCore::new(1);
        for i in 0..3 {
            append(&g, i, 8, Overflow::DropNewest);
        }
        assert_eq!(g.at_head(|h| h), 3);
        assert_eq!(g.queued_before(0, 2), 2);
        let mut cleared = Vec::new();
        g.clear(0, |i| cleared.push(*i));
        assert_eq!((cleared, g.retained()), (vec![0, 1, 2], 0));
        assert_eq!(g.report_due(0, 5, 10), Some(0));
        assert_eq!(g.report_due(0, 9, 10), None);
        assert_eq!(g.report_due(0, 15, 10), Some(0));
    }
}

/// The `loom` model of a group's shard scheduling:
/// `RUSTFLAGS="--cfg loom" cargo test -p notify-pool --lib --release -- loom_model`.
///
/// Two shards, two publishers. Whoever is told to schedule a shard runs its turns right away on its
/// own thread, as a worker that picked it off the run queue would. The model checks, over every
/// interleaving, that no shard ever runs on two threads at once, that every shard gets every item
/// with each publisher's items in order, and that the group ends idle with its log released.
#[cfg(all(test, loom))]
mod loom_model {
    use super::*;
    use loom::sync::atomic::{AtomicBool, Ordering};
    use loom::sync::{Arc, Mutex as LoomMutex};
    use loom::thread;

    struct Model {
        group: GroupCore<(u8, u8)>,
        inside: [AtomicBool; 2],
        seen: [LoomMutex<Vec<(u8, u8)>>; 2],
    }

    impl Model {
        /// One member callback: records `item`, failing if another turn of `shard` is inside.
        fn deliver(&self, shard: usize, item: (u8, u8)) {
            assert!(
                !self.inside[shard].swap(true, Ordering::SeqCst),
                "two turns of one shard at once"
            );
            self.seen[shard].lock().unwrap().push(item);
            thread::yield_now();
            self.inside[shard].store(false, Ordering::SeqCst);
        }

        fn run(&self, shard: usize) {
            let mut batch = Vec::new();
            loop {
                self.group.take(shard, 1, &mut batch);
                for (_, item) in batch.drain(..) {
                    self.deliver(shard, item);
                }
                if !self.group.finish_turn(shard) {
                    return;
                }
            }
        }

        /// The bug the protocol avoids: marking the shard idle when its batch is *taken*, before the
        /// callbacks ran. Only for `pool_loom_group_catches_early_unschedule`.
        fn run_unscheduling_early(&self, shard: usize) {
            let mut batch = Vec::new();
            self.group.take(shard, 8, &mut batch);
            {
                let mut state = self.group.state.lock();
                state.shards[shard].scheduled = false;
                state.idle += 1;
            }
            for (_, item) in batch.drain(..) {
                self.deliver(shard, item);
            }
        }

        fn publish(&self, item: (u8, u8)) {
            self.publish_with(item, Model::run);
        }

        fn publish_with(&self, item: (u8, u8), run: fn(&Model, usize)) {
            let done = self
                .group
                .append(
                    item,
                    8,
                    Overflow::DropNewest,
                    || (),
                    |_, _| unreachable!("capacity 8 is never reached"),
                )
                .unwrap_or_else(|_| unreachable!());
            for shard in 0..2 {
                if done.schedule & (1 << shard) != 0 {
                    run(self, shard);
                }
            }
        }
    }

    fn model() -> Arc<Model> {
        Arc::new(Model {
            group: GroupCore::new(2),
            inside: [AtomicBool::new(false), AtomicBool::new(false)],
            seen: [LoomMutex::new(Vec::new()), LoomMutex::new(Vec::new())],
        })
    }

    /// The model is not vacuous: with a shard unscheduled before its callbacks ran, loom finds the
    /// interleaving where two threads run one shard's members at once.
    #[test]
    #[should_panic(expected = "two turns of one shard at once")]
    fn pool_loom_group_catches_early_unschedule() {
        loom::model(|| {
            let model = model();
            let other = model.clone();
            let producer = thread::spawn(move || other.publish_with((1, 0), Model::run_unscheduling_early));
            model.publish_with((0, 0), Model::run_unscheduling_early);
            producer.join().unwrap();
        });
    }

    #[test]
    fn pool_loom_group_shards() {
        loom::model(|| {
            let model = model();
            let other = model.clone();
            let producer = thread::spawn(move || {
                other.publish((1, 0));
                other.publish((1, 1));
            });
            model.publish((0, 0));
            producer.join().unwrap();
            for shard in 0..2 {
                let seen = model.seen[shard].lock().unwrap().clone();
                assert_eq!(seen.len(), 3, "every item delivered to shard {shard}: {seen:?}");
                let ones: Vec<u8> = seen.iter().filter(|(p, _)| *p == 1).map(|(_, i)| *i).collect();
                assert_eq!(ones, [0, 1], "publisher order kept");
                assert!(!model.group.is_scheduled(shard), "ends idle");
            }
            assert_eq!(model.group.retained(), 0, "log released");
        });
    }
}
