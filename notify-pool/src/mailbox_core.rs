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

/// The state behind a mailbox's lock: 16 bytes on 64-bit targets (24 with the lock), so an idle
/// mailbox is a few words; what only a mailbox that got events needs is in its [`Queue`].
#[derive(Debug)]
pub(crate) struct State<T> {
    /// Allocated when the first item arrives (or the first is refused): an idle mailbox that
    /// never received an event holds no queue at all. Once allocated it is kept, with a buffer of
    /// at most [`RETAIN_SLOTS`] items while drained.
    queue: Option<Box<Queue<T>>>,
    /// Publishers that found the mailbox full under [`Overflow::Block`] and wait for room.
    blocked: u32,
    /// Set from the moment a publisher queues into an idle mailbox until a worker, after its
    /// callbacks returned, finds the queue empty.
    scheduled: bool,
    /// No more items are accepted (unsubscribed, detached, or its pool stopped).
    closed: bool,
}

/// The queued items and the counters that only a mailbox that got events needs.
#[derive(Debug)]
struct Queue<T> {
    items: VecDeque<T>,
    /// Items refused or evicted by the overflow policy, discarded on detach, or refused because
    /// the mailbox is closed (exact).
    dropped: u64,
    /// When the last slow-subscriber report was made (ns on the pool's clock, 0 = never).
    last_report: u64,
}

impl<T> State<T> {
    fn len(&self) -> usize {
        self.queue.as_ref().map_or(0, |q| q.items.len())
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

    /// The queued items, removed (the buffer stays with the mailbox).
    fn take(&mut self) -> VecDeque<T> {
        self.queue.as_mut().map(|q| q.items.split_off(0)).unwrap_or_default()
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
#[derive(Debug)]
pub(crate) struct MailboxCore<T> {
    state: Mutex<State<T>>,
}

impl<T> MailboxCore<T> {
    pub(crate) fn new() -> MailboxCore<T> {
        MailboxCore {
            state: Mutex::new(State {
                queue: None,
                blocked: 0,
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
                Overflow::DropNewest => {
                    state.queue().dropped += 1;
                    return Admit::Refused(item);
                }
                Overflow::DropOldest => {
                    let queue = state.queue();
                    queue.dropped += 1;
                    evicted = queue.items.pop_front();
                }
                Overflow::Block => {
                    state.blocked += 1;
                    let waiting = on_full();
                    return Admit::Full(item, waiting);
                }
            }
        }
        state.queue().items.push_back(item);
        let schedule = !mem::replace(&mut state.scheduled, true);
        match evicted {
            Some(oldest) => Admit::Evicted { oldest, schedule },
            None => Admit::Queued { schedule },
        }
    }

    /// Moves up to `max` items into `out` (empty) for one turn. The mailbox stays scheduled.
    /// Returns true when publishers were blocked on it (they must be woken: there is room now).
    /// When every queued item fits, the two queues are swapped (no item is moved): the mailbox
    /// keeps `out`'s empty buffer, `out` takes the mailbox's.
    pub(crate) fn take_batch(&self, out: &mut VecDeque<T>, max: usize) -> bool {
        debug_assert!(out.is_empty());
        let mut state = self.state.lock();
        debug_assert!(state.scheduled, "a turn runs only on a scheduled mailbox");
        if let Some(queue) = state.queue.as_mut() {
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
            if let Some(queue) = state.queue.as_mut().filter(|q| q.items.capacity() > RETAIN_SLOTS) {
                queue.items.shrink_to(RETAIN_SLOTS);
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
