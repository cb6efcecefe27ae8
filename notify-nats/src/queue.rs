//! The exporter's bounded queue: the instrumenting thread's only work is a push under a short
//! lock; the exporter's thread takes everything queued at once.

use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use notify_core::export::Overflow;
use notify_core::Event;
use parking_lot::{Condvar, Mutex};

thread_local! {
    /// Set on the exporter's and importer's own threads: [`Overflow::Block`] must not block them
    /// (the queue may be drained only by the thread that would wait).
    static NO_BLOCK: Cell<bool> = const { Cell::new(false) };
}

/// Marks the current thread as one that must never block on a full queue.
pub(crate) fn forbid_blocking() {
    NO_BLOCK.with(|b| b.set(true));
}

struct State {
    events: VecDeque<Arc<Event>>,
    closed: bool,
    published: u64,
    dropped_overflow: u64,
    dropped_closed: u64,
    blocked: usize,
    /// The consumer found the queue empty and waits for [`Queue::wake`]: only then does a push
    /// wake it (one wake-up per idle period, not one per event).
    idle: bool,
}

/// What the consumer side counts (the producer side counts under the lock).
#[derive(Default)]
pub(crate) struct ConsumerCounts {
    pub(crate) exported: AtomicU64,
    pub(crate) disconnected: AtomicU64,
    pub(crate) too_large: AtomicU64,
    pub(crate) encode: AtomicU64,
    pub(crate) shutdown: AtomicU64,
}

pub(crate) struct Queue {
    state: Mutex<State>,
    space: Condvar,
    capacity: usize,
    overflow: Overflow,
    /// Wakes the exporter task; a push calls it only when the consumer went idle.
    pub(crate) wake: tokio::sync::Notify,
    pub(crate) counts: ConsumerCounts,
}

/// A consistent-enough snapshot of the producer side.
pub(crate) struct ProducerCounts {
    pub(crate) published: u64,
    pub(crate) dropped_overflow: u64,
    pub(crate) dropped_closed: u64,
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) queued: usize,
}

impl Queue {
    pub(crate) fn new(capacity: usize, overflow: Overflow) -> Queue {
        Queue {
            state: Mutex::new(State {
                events: VecDeque::new(),
                closed: false,
                published: 0,
                dropped_overflow: 0,
                dropped_closed: 0,
                blocked: 0,
                idle: false,
            }),
            space: Condvar::new(),
            capacity: capacity.max(1),
            overflow,
            wake: tokio::sync::Notify::new(),
            counts: ConsumerCounts::default(),
        }
    }

    /// Queues `event` or counts why not. Blocks only under [`Overflow::Block`], off the exporter's
    /// and importer's threads.
    #[inline]
    pub(crate) fn push(&self, event: &Arc<Event>) {
        let mut state = self.state.lock();
        state.published += 1;
        if state.closed {
            state.dropped_closed += 1;
            return;
        }
        if state.events.len() >= self.capacity {
            match self.overflow {
                Overflow::DropNewest => {
                    state.dropped_overflow += 1;
                    return;
                }
                Overflow::DropOldest => {
                    state.events.pop_front();
                    state.dropped_overflow += 1;
                }
                Overflow::Block if NO_BLOCK.with(Cell::get) => {
                    state.dropped_overflow += 1;
                    return;
                }
                Overflow::Block => {
                    while state.events.len() >= self.capacity && !state.closed {
                        state.blocked += 1;
                        self.space.wait(&mut state);
                        state.blocked -= 1;
                    }
                    if state.closed {
                        state.dropped_closed += 1;
                        return;
                    }
                }
                // A policy added to notify-core later (Overflow is non_exhaustive) acts as the
                // default, DropNewest, until this queue learns it.
                _ => {
                    state.dropped_overflow += 1;
                    return;
                }
            }
        }
        state.events.push_back(event.clone());
        let wake = std::mem::replace(&mut state.idle, false);
        drop(state);
        if wake {
            self.wake.notify_one();
        }
    }

    /// Moves every queued event into `into` (which must be empty); returns how many. Taking
    /// nothing marks the consumer idle: the next push wakes it through [`Queue::wake`].
    pub(crate) fn take(&self, into: &mut VecDeque<Arc<Event>>) -> usize {
        debug_assert!(into.is_empty());
        let mut state = self.state.lock();
        std::mem::swap(&mut state.events, into);
        state.idle = into.is_empty();
        if state.blocked > 0 {
            self.space.notify_all();
        }
        into.len()
    }

    /// Refuses further events (counted as dropped at shutdown) and releases blocked publishers.
    pub(crate) fn close(&self) {
        let mut state = self.state.lock();
        state.closed = true;
        self.space.notify_all();
        drop(state);
        self.wake.notify_one();
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.state.lock().closed
    }

    /// Closed with nothing queued: the consumer has nothing left to do.
    pub(crate) fn is_closed_and_empty(&self) -> bool {
        let state = self.state.lock();
        state.closed && state.events.is_empty()
    }

    pub(crate) fn producer_counts(&self) -> ProducerCounts {
        let state = self.state.lock();
        ProducerCounts {
            published: state.published,
            dropped_overflow: state.dropped_overflow,
            dropped_closed: state.dropped_closed,
            queued: state.events.len(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use notify_core::event::EventId;

    use super::*;

    fn event() -> Arc<Event> {
        let now = Instant::now();
        Arc::new(Event::new("a.b", now, now, Default::default()))
    }

    fn ids(q: &Queue) -> Vec<EventId> {
        let mut out = VecDeque::new();
        q.take(&mut out);
        out.iter().map(|e| e.id()).collect()
    }

    #[test]
    fn drop_newest_keeps_the_first_and_counts_the_rest() {
        let q = Queue::new(2, Overflow::DropNewest);
        let events: Vec<_> = (0..5).map(|_| event()).collect();
        events.iter().for_each(|e| q.push(e));
        let c = q.producer_counts();
        assert_eq!((c.published, c.dropped_overflow, c.queued), (5, 3, 2));
        assert_eq!(ids(&q), [events[0].id(), events[1].id()]);
    }

    #[test]
    fn drop_oldest_keeps_the_last_and_counts_the_rest() {
        let q = Queue::new(2, Overflow::DropOldest);
        let events: Vec<_> = (0..5).map(|_| event()).collect();
        events.iter().for_each(|e| q.push(e));
        assert_eq!(q.producer_counts().dropped_overflow, 3);
        assert_eq!(ids(&q), [events[3].id(), events[4].id()]);
    }

    #[test]
    fn block_waits_for_room_and_close_releases_it() {
        let q = Arc::new(Queue::new(1, Overflow::Block));
        q.push(&event());
        let q2 = q.clone();
        let blocked = std::thread::spawn(move || q2.push(&event()));
        while q.state.lock().blocked == 0 {
            std::thread::yield_now();
        }
        assert_eq!(ids(&q).len(), 1);
        blocked.join().unwrap();
        assert_eq!(q.producer_counts().queued, 1);
        // Full again: the next publisher blocks until close.
        let q3 = q.clone();
        let waiting = std::thread::spawn(move || q3.push(&event()));
        while q.state.lock().blocked == 0 {
            std::thread::yield_now();
        }
        q.close();
        waiting.join().unwrap();
        let c = q.producer_counts();
        assert_eq!((c.published, c.dropped_closed, c.dropped_overflow), (3, 1, 0));
    }

    #[test]
    fn block_degrades_to_drop_newest_on_a_no_block_thread() {
        let q = Queue::new(1, Overflow::Block);
        std::thread::scope(|s| {
            s.spawn(|| {
                forbid_blocking();
                q.push(&event());
                q.push(&event());
            });
        });
        assert_eq!(q.producer_counts().dropped_overflow, 1);
    }
}
