//! The mailbox: a bounded FIFO of one subscriber plus its scheduling flag.
//!
//! [`MailboxCore`] is the part that decides who runs a subscriber, generic over the item so the
//! `loom` model below checks the very code the pool runs. The rules, all under the mailbox's one
//! lock:
//!
//! * a publisher that queues an item into an unscheduled mailbox sets `scheduled` and must hand
//!   the mailbox to the pool's run queue (exactly one publisher sees the transition);
//! * a worker that took a batch leaves `scheduled` set while the callbacks run, so no publisher can
//!   schedule the mailbox a second time meanwhile (never two invocations at once);
//! * only after the batch's callbacks returned does the worker look again: an empty queue clears
//!   `scheduled` (the next publisher schedules it anew), a non-empty one keeps it and the worker
//!   re-queues the mailbox. Clearing the flag when the batch was *taken* (before the callbacks ran)
//!   would let a publisher schedule the mailbox on a second worker while the first still runs it.

use std::collections::VecDeque;
use std::mem;

use crate::options::Overflow;
use crate::sync::Mutex;

/// A drained mailbox keeps a buffer of at most this many slots; a larger one is released, so a
/// mailbox that once held a burst goes back to its idle size.
pub(crate) const RETAIN_SLOTS: usize = 8;

/// An item a mailbox can hold in its first place, beside its lock: a pointer-sized head and a
/// one-byte tag (the pool's [`Slot`](crate::slot::Slot): its event and its flush generation).
pub(crate) trait Compact: Sized {
    type Head;
    fn split(self) -> (Self::Head, u8);
    fn join(head: Self::Head, tag: u8) -> Self;
}

/// The state behind a mailbox's lock: 24 bytes on 64-bit targets for the pool's items (32 with
/// the lock), in the mailbox's one allocation. The oldest queued item is kept here (`first`),
/// and only the items queued behind it go to the [`Queue`], a separate allocation: a mailbox
/// whose worker keeps up holds one item at a time, so the publisher that queues it and the
/// worker that takes it touch the mailbox's own cache lines and nothing else (no queue header,
/// no buffer; with 100,000 mailboxes those do not stay in cache).
pub(crate) struct State<T: Compact> {
    /// The oldest queued item's head, if any (its tag is `first_tag`). An item is put here only
    /// when nothing at all is queued, so the order is `first`, then the queue's items (a worker
    /// that takes `first` and leaves items behind it leaves `first` empty until they are gone).
    first: Option<T::Head>,
    /// Allocated when an item arrives while another is queued (or the first is refused): a
    /// mailbox that never held two items at once has no queue at all. Once allocated it is
    /// kept, with a buffer of at most [`RETAIN_SLOTS`] items while drained.
    queue: Option<Box<Queue<T>>>,
    /// Publishers that found the mailbox full under [`Overflow::Block`] and wait for room.
    blocked: u32,
    first_tag: u8,
    /// Set when an item goes to the queue, cleared by the worker's [`MailboxCore::finish_turn`]
    /// that finds the mailbox empty (after its shrink check). Clear: the queue holds no item, and
    /// nobody reads it (its cache line stays cold).
    spilled: bool,
    /// Set from the moment a publisher queues into an idle mailbox until a worker, after its
    /// callbacks returned, finds the queue empty.
    scheduled: bool,
    /// No more items are accepted (unsubscribed, detached, or its pool stopped).
    closed: bool,
}

/// The items queued behind the first and the counters that only a mailbox that got events needs.
#[derive(Debug)]
struct Queue<T> {
    items: VecDeque<T>,
    /// Items refused or evicted by the overflow policy, discarded on detach, or refused because
    /// the mailbox is closed (exact).
    dropped: u64,
    /// When the last slow-subscriber report was made (ns on the pool's clock, 0 = never).
    last_report: u64,
}

impl<T: Compact> State<T> {
    fn queued_behind(&self) -> usize {
        if !self.spilled {
            return 0;
        }
        self.queue.as_ref().map_or(0, |q| q.items.len())
    }

    fn len(&self) -> usize {
        usize::from(self.first.is_some()) + self.queued_behind()
    }

    /// The queue, allocated on first use.
    fn queue(&mut self) -> &mut Queue<T> {
        self.queue.get_or_insert_with(|| {
            Box::new(Queue {
                items: VecDeque::new(),
                dropped: 0,
                last_report: 0,
            })
        })
    }

    fn dropped(&self) -> u64 {
        self.queue.as_ref().map_or(0, |q| q.dropped)
    }

    /// Queues `item` at the tail.
    fn push_back(&mut self, item: T) {
        if self.first.is_none() && self.queued_behind() == 0 {
            let (head, tag) = item.split();
            self.first = Some(head);
            self.first_tag = tag;
        } else {
            self.spilled = true;
            self.queue().items.push_back(item);
        }
    }

    fn take_first(&mut self) -> Option<T> {
        self.first.take().map(|head| T::join(head, self.first_tag))
    }

    /// Removes the oldest item.
    fn pop_front(&mut self) -> Option<T> {
        match self.take_first() {
            Some(first) => Some(first),
            None if self.spilled => self.queue.as_mut().and_then(|q| q.items.pop_front()),
            None => None,
        }
    }

    /// The queued items, removed, in order (the buffer stays with the mailbox).
    fn take(&mut self) -> VecDeque<T> {
        let mut items = match self.queue.as_mut() {
            Some(q) if self.spilled => q.items.split_off(0),
            _ => VecDeque::new(),
        };
        if let Some(first) = self.take_first() {
            items.push_front(first);
        }
        items
    }
}

/// What [`MailboxCore::push`] did with an item.
#[derive(Debug)]
pub(crate) enum Admit<T, W> {
    /// Queued. With `schedule`, the caller made the mailbox scheduled and must hand it to the pool.
    Queued { schedule: bool },
    /// Queued after evicting `oldest` ([`Overflow::DropOldest`]); counted as dropped.
    Evicted { oldest: T, schedule: bool },
    /// Refused because the mailbox is full ([`Overflow::DropNewest`]); counted as dropped.
    Refused(T),
    /// Full under [`Overflow::Block`]: the caller registered as blocked and holds `W` (taken while
    /// the mailbox was still locked, so a worker's wake-up cannot be missed); wait, then retry.
    Full(T, W),
    /// The mailbox is closed; counted as dropped.
    Closed(T),
}

/// A bounded FIFO with the scheduling flag (see the module docs for the protocol).
pub(crate) struct MailboxCore<T: Compact> {
    state: Mutex<State<T>>,
}

impl<T: Compact> MailboxCore<T> {
    pub(crate) fn new() -> MailboxCore<T> {
        MailboxCore {
            state: Mutex::new(State {
                first: None,
                queue: None,
                blocked: 0,
                first_tag: 0,
                spilled: false,
                scheduled: false,
                closed: false,
            }),
        }
    }

    /// Offers `item` under `overflow` with room for `capacity` items. `on_full` runs only for
    /// [`Overflow::Block`] on a full mailbox, while the mailbox is still locked.
    pub(crate) fn push<W>(
        &self,
        item: T,
        capacity: usize,
        overflow: Overflow,
        on_full: impl FnOnce() -> W,
    ) -> Admit<T, W> {
        let mut state = self.state.lock();
        if state.closed {
            state.queue().dropped += 1;
            return Admit::Closed(item);
        }
        let mut evicted = None;
        if state.len() >= capacity {
            match overflow {
                Overflow::DropOldest => {
                    state.queue().dropped += 1;
                    evicted = state.pop_front();
                }
                Overflow::Block => {
                    state.blocked += 1;
                    let waiting = on_full();
                    return Admit::Full(item, waiting);
                }
                // DropNewest, and a policy added to notify-core later (`Overflow` is
                // non_exhaustive) until the mailbox learns it.
                _ => {
                    state.queue().dropped += 1;
                    return Admit::Refused(item);
                }
            }
        }
        state.push_back(item);
        let schedule = !mem::replace(&mut state.scheduled, true);
        match evicted {
            Some(oldest) => Admit::Evicted { oldest, schedule },
            None => Admit::Queued { schedule },
        }
    }

    /// Moves up to `max` items into `out` (empty) for one turn. The mailbox stays scheduled.
    /// Returns true when publishers were blocked on it (they must be woken: there is room now).
    /// Without a first item (a worker left items behind it), when every queued item fits, the
    /// two buffers are swapped (no item is moved): the mailbox keeps `out`'s empty buffer, `out`
    /// takes the mailbox's. With one, it goes to `out` and the items behind it are moved after
    /// it (the mailbox keeps its buffer: swapping a full one in would make `out` grow for the
    /// first item, and the next mailbox shrink what it got).
    pub(crate) fn take_batch(&self, out: &mut VecDeque<T>, max: usize) -> bool {
        debug_assert!(out.is_empty());
        let mut state = self.state.lock();
        debug_assert!(state.scheduled, "a turn runs only on a scheduled mailbox");
        let first = state.take_first();
        let spilled = state.spilled;
        let queue = state.queue.as_mut().filter(|_| spilled);
        if let Some(first) = first {
            out.push_back(first);
            if let Some(queue) = queue {
                let n = queue.items.len().min(max.saturating_sub(1));
                out.extend(queue.items.drain(..n));
            }
        } else if let Some(queue) = queue {
            if queue.items.len() <= max {
                mem::swap(out, &mut queue.items);
            } else {
                out.extend(queue.items.drain(..max));
            }
        }
        mem::take(&mut state.blocked) > 0
    }

    /// Ends a turn, after the batch's callbacks returned. Returns true when items remain: the
    /// mailbox stays scheduled and the caller must run or re-queue it; false when it is now idle.
    pub(crate) fn finish_turn(&self) -> bool {
        let mut state = self.state.lock();
        if state.len() == 0 {
            state.scheduled = false;
            if mem::take(&mut state.spilled) {
                if let Some(queue) = state.queue.as_mut().filter(|q| q.items.capacity() > RETAIN_SLOTS) {
                    queue.items.shrink_to(RETAIN_SLOTS);
                }
            }
            false
        } else {
            true
        }
    }

    /// Refuses items from now on; with `discard`, also removes the queued ones (counted as dropped)
    /// and returns them. A scheduled mailbox stays scheduled until its worker finishes the turn.
    /// The flag is true when publishers were blocked on the mailbox ([`Overflow::Block`]): the
    /// caller must wake them (they retry, find the mailbox closed, and count their item as
    /// dropped); nothing else would, once the queue is discarded.
    pub(crate) fn close(&self, discard: bool) -> (VecDeque<T>, bool) {
        let mut state = self.state.lock();
        state.closed = true;
        let blocked = mem::take(&mut state.blocked) > 0;
        if discard {
            let discarded = state.take();
            if !discarded.is_empty() {
                state.queue().dropped += discarded.len() as u64;
            }
            (discarded, blocked)
        } else {
            (VecDeque::new(), blocked)
        }
    }

    /// Removes every queued item without counting it as dropped (the pool stopped).
    pub(crate) fn clear(&self) -> VecDeque<T> {
        self.state.lock().take()
    }

    /// True when the slow-subscriber report is due at `now` (ns) given `interval` (ns); records it.
    pub(crate) fn report_due(&self, now: u64, interval: u64) -> Option<u64> {
        let mut state = self.state.lock();
        let queue = state.queue();
        let due = queue.last_report == 0 || now.saturating_sub(queue.last_report) >= interval;
        if due {
            queue.last_report = now.max(1);
            Some(queue.dropped)
        } else {
            None
        }
    }

    /// Counts `n` more dropped items (a detached subscriber's batch that did not run).
    pub(crate) fn add_dropped(&self, n: u64) {
        self.state.lock().queue().dropped += n;
    }

    pub(crate) fn dropped(&self) -> u64 {
        self.state.lock().dropped()
    }

    pub(crate) fn len(&self) -> usize {
        self.state.lock().len()
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.state.lock().closed
    }

    #[cfg(test)]
    pub(crate) fn is_scheduled(&self) -> bool {
        self.state.lock().scheduled
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    impl Compact for u32 {
        type Head = u32;
        fn split(self) -> (u32, u8) {
            (self, 0)
        }
        fn join(head: u32, _: u8) -> u32 {
            head
        }
    }

    fn queued<W>(a: Admit<u32, W>) -> bool {
        match a {
            Admit::Queued { schedule } => schedule,
            other => panic!("expected Queued, got {:?}", std::mem::discriminant(&other)),
        }
    }

    #[test]
    fn pool_first_push_schedules_once() {
        let m = MailboxCore::new();
        assert!(queued(m.push(1, 4, Overflow::DropNewest, || ())));
        assert!(!queued(m.push(2, 4, Overflow::DropNewest, || ())));
        let mut out = VecDeque::new();
        assert!(!m.take_batch(&mut out, 8));
        assert_eq!(out, [1, 2]);
        // While the turn runs, a push does not schedule again.
        assert!(!queued(m.push(3, 4, Overflow::DropNewest, || ())));
        assert!(m.finish_turn(), "3 is left: the mailbox stays scheduled");
        out.clear();
        m.take_batch(&mut out, 8);
        assert!(!m.finish_turn());
        assert!(!m.is_scheduled());
        assert!(queued(m.push(4, 4, Overflow::DropNewest, || ())));
    }

    /// The first item is kept beside the lock; the queue is allocated only when a second one
    /// waits, and FIFO order holds across the two whatever the batch size.
    #[test]
    fn pool_first_item_inline_then_queue_in_order() {
        let m = MailboxCore::new();
        let mut out = VecDeque::new();
        // One item at a time: no queue is ever allocated.
        for i in 0..3 {
            assert!(queued(m.push(i, 8, Overflow::DropNewest, || ())));
            assert_eq!(m.len(), 1);
            m.take_batch(&mut out, 8);
            assert_eq!(out.drain(..).collect::<Vec<_>>(), [i]);
            assert!(!m.finish_turn());
        }
        assert!(m.state.lock().queue.is_none(), "one item at a time needs no queue");
        // Five at once, taken two per turn: first, then the queue, in order.
        for i in 10..15 {
            let _ = m.push(i, 8, Overflow::DropNewest, || ());
        }
        assert_eq!(m.len(), 5);
        let mut seen = Vec::new();
        loop {
            m.take_batch(&mut out, 2);
            assert!(out.len() <= 2);
            seen.extend(out.drain(..));
            // A push while items are left behind goes to the tail, not to the empty first place.
            if seen.len() == 2 {
                let _ = m.push(15, 8, Overflow::DropNewest, || ());
            }
            if !m.finish_turn() {
                break;
            }
        }
        assert_eq!(seen, [10, 11, 12, 13, 14, 15]);
        assert_eq!(m.len(), 0);
        // DropOldest evicts the first item; close(true) returns first and queue in order.
        for i in 20..23 {
            let _ = m.push(i, 3, Overflow::DropOldest, || ());
        }
        assert!(matches!(
            m.push(23, 3, Overflow::DropOldest, || ()),
            Admit::Evicted {
                oldest: 20,
                schedule: false
            }
        ));
        assert_eq!(m.close(true).0, [21, 22, 23]);
        assert_eq!(m.dropped(), 4, "one evicted, three discarded");
        assert_eq!(m.len(), 0);
    }

    #[test]
    fn pool_overflow_policies_count_exactly() {
        let newest = MailboxCore::new();
        for i in 0..5 {
            let _ = newest.push(i, 3, Overflow::DropNewest, || ());
        }
        assert_eq!((newest.len(), newest.dropped()), (3, 2));
        let oldest = MailboxCore::new();
        let mut evicted = Vec::new();
        for i in 0..5 {
            if let Admit::Evicted { oldest, .. } = oldest.push(i, 3, Overflow::DropOldest, || ()) {
                evicted.push(oldest);
            }
        }
        assert_eq!(evicted, [0, 1]);
        assert_eq!(oldest.dropped(), 2);
        let mut out = VecDeque::new();
        oldest.take_batch(&mut out, 8);
        assert_eq!(out, [2, 3, 4]);
        let block = MailboxCore::new();
        let _ = block.push(1, 1, Overflow::Block, || ());
        assert!(matches!(block.push(2, 1, Overflow::Block, || 'w'), Admit::Full(2, 'w')));
        assert!(
            block.take_batch(&mut VecDeque::new(), 1),
            "a blocked publisher is reported once"
        );
        assert_eq!(block.dropped(), 0);
        // Closing a full mailbox with a blocked publisher reports it, so the caller wakes it; the
        // retried push is refused and counted.
        assert!(matches!(
            block.push(3, 1, Overflow::Block, || 'w'),
            Admit::Queued { .. }
        ));
        assert!(matches!(block.push(4, 1, Overflow::Block, || 'w'), Admit::Full(4, 'w')));
        let (discarded, blocked) = block.close(true);
        assert_eq!((discarded.len(), blocked), (1, true));
        assert!(matches!(block.push(4, 1, Overflow::Block, || 'w'), Admit::Closed(4)));
        assert_eq!(block.dropped(), 2);
        assert!(!block.close(false).1, "reported once");
    }

    #[test]
    fn pool_close_and_shrink() {
        let m = MailboxCore::new();
        for i in 0..100 {
            let _ = m.push(i, 1000, Overflow::DropNewest, || ());
        }
        let mut out = VecDeque::new();
        m.take_batch(&mut out, 1000);
        assert!(!m.finish_turn());
        assert!(m.state.lock().queue.as_ref().unwrap().items.capacity() <= RETAIN_SLOTS);
        let _ = m.push(1, 10, Overflow::DropNewest, || ());
        assert_eq!(m.close(true).0.len(), 1);
        assert_eq!(m.dropped(), 1);
        assert!(matches!(m.push(2, 10, Overflow::DropNewest, || ()), Admit::Closed(2)));
        assert!(m.is_closed());
        assert_eq!(m.report_due(5, 10), Some(2));
        assert_eq!(m.report_due(9, 10), None);
        assert_eq!(m.report_due(15, 10), Some(2));
    }
}

/// The `loom` model of the scheduling flag:
/// `RUSTFLAGS="--cfg loom" cargo test -p notify-pool --lib --release -- loom_model`.
///
/// Whoever is told to schedule the mailbox runs its turns right away on its own thread, as a worker
/// that picked it off the run queue would. The model checks, over every interleaving, that no two
/// threads ever run the callback at once, that nothing is lost (every item is delivered, each
/// publisher's items in order), and that the mailbox ends idle and empty.
#[cfg(all(test, loom))]
mod loom_model {
    use super::*;

    impl Compact for (u8, u8) {
        type Head = (u8, u8);
        fn split(self) -> ((u8, u8), u8) {
            (self, 0)
        }
        fn join(head: (u8, u8), _: u8) -> (u8, u8) {
            head
        }
    }
    use loom::sync::atomic::{AtomicBool, Ordering};
    use loom::sync::{Arc, Mutex as LoomMutex};
    use loom::thread;

    struct Model {
        mailbox: MailboxCore<(u8, u8)>,
        inside: AtomicBool,
        seen: LoomMutex<Vec<(u8, u8)>>,
    }

    impl Model {
        /// One worker's handling of a scheduled mailbox: turns of at most one item until idle.
        fn run(&self) {
            let mut batch = VecDeque::new();
            loop {
                self.mailbox.take_batch(&mut batch, 1);
                for item in batch.drain(..) {
                    assert!(!self.inside.swap(true, Ordering::SeqCst), "two invocations at once");
                    self.seen.lock().unwrap().push(item);
                    thread::yield_now();
                    self.inside.store(false, Ordering::SeqCst);
                }
                if !self.mailbox.finish_turn() {
                    return;
                }
            }
        }

        /// The bug the protocol avoids: marking the mailbox idle when its batch is *taken*, before
        /// the callbacks ran. Only for `pool_loom_catches_early_unschedule`.
        fn run_unscheduling_early(&self) {
            let mut batch = VecDeque::new();
            {
                let mut state = self.mailbox.state.lock();
                batch.extend(state.take());
                state.scheduled = false;
            }
            for item in batch.drain(..) {
                assert!(!self.inside.swap(true, Ordering::SeqCst), "two invocations at once");
                self.seen.lock().unwrap().push(item);
                thread::yield_now();
                self.inside.store(false, Ordering::SeqCst);
            }
        }

        fn publish_with(&self, item: (u8, u8), run: fn(&Model)) {
            match self.mailbox.push(item, 8, Overflow::DropNewest, || ()) {
                Admit::Queued { schedule: true } => run(self),
                Admit::Queued { schedule: false } => {}
                _ => unreachable!("capacity 8 is never reached"),
            }
        }
    }

    fn model() -> Arc<Model> {
        Arc::new(Model {
            mailbox: MailboxCore::new(),
            inside: AtomicBool::new(false),
            seen: LoomMutex::new(Vec::new()),
        })
    }

    #[test]
    fn pool_loom_scheduling_flag() {
        loom::model(|| {
            let model = model();
            let other = model.clone();
            let producer = thread::spawn(move || {
                other.publish_with((1, 0), Model::run);
                other.publish_with((1, 1), Model::run);
            });
            model.publish_with((0, 0), Model::run);
            producer.join().unwrap();
            let seen = model.seen.lock().unwrap().clone();
            assert_eq!(seen.len(), 3, "every item delivered: {seen:?}");
            let ones: Vec<u8> = seen.iter().filter(|(p, _)| *p == 1).map(|(_, i)| *i).collect();
            assert_eq!(ones, [0, 1], "publisher order kept");
            assert!(!model.mailbox.is_scheduled(), "ends idle");
            assert_eq!(model.mailbox.len(), 0);
        });
    }

    /// The model is not vacuous: with the flag cleared before the callbacks ran, loom finds the
    /// interleaving where two threads run the subscriber at once.
    #[test]
    #[should_panic(expected = "two invocations at once")]
    fn pool_loom_catches_early_unschedule() {
        loom::model(|| {
            let model = model();
            let other = model.clone();
            let producer = thread::spawn(move || other.publish_with((1, 0), Model::run_unscheduling_early));
            model.publish_with((0, 0), Model::run_unscheduling_early);
            producer.join().unwrap();
        });
    }
}
