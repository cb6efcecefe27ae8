//! [`Handoff`]: how an exporter's subscription hands shared events to the exporter's thread, one
//! wait-free queue per publishing thread.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::thread::{self, Thread, ThreadId};
use std::time::{Duration, Instant};

use rtrb::{Consumer, Producer, PushError, RingBuffer};

use notify_core::export::Overflow;
use notify_core::Event;

/// How long a publisher blocked on a full queue ([`Overflow::Block`]) sleeps between looks.
const BLOCK_SLICE: Duration = Duration::from_micros(200);

/// A bounded hand-off of shared events (`Arc<Event>`) from any number of publishing threads to one
/// consumer thread (an exporter's): what an exporter's [`OwnedEventSubscriber`] does per event.
///
/// Each publishing thread gets a queue of its own for this hand-off (a single-producer ring of
/// [`per_thread`](Handoff::new) events, made on its first push), so a push is a few plain stores:
/// no lock, no read-modify-write shared with other threads (as fastrace records into a
/// thread-local queue). The consumer takes from every thread's queue ([`drain`](Handoff::drain)).
/// Nothing is stranded in a thread's queue: the consumer sees every queue, also of idle threads.
/// A thread that exits frees its queue and leaves what it still holds in one queue *left behind*,
/// shared by every thread that exited, which the consumer drains too.
///
/// **Bounded**: at most `per_thread` events per live publishing thread (each thread's ring is
/// allocated whole on its first push: `per_thread` pointers, 64 KB for 8,192), plus at most
/// `per_thread` times the most publishing threads there were at once left behind by threads that
/// exited: the events of threads that ran together and exited are all kept, as their queues held
/// them, and however many threads come and go one after another (a thread per task behind a
/// stalled consumer) memory does not grow (after [`close`](Handoff::close), exiting threads
/// leave all they hold, beyond that bound: nothing new is queued any more). The queue left
/// behind keeps the oldest events with [`Overflow::DropNewest`] and [`Overflow::Block`] (an
/// exiting thread never waits) and the newest with [`Overflow::DropOldest`]; what it cannot keep
/// is counted `dropped_full`. When a thread's queue is full, the [`Overflow`] policy decides:
/// [`Overflow::DropNewest`] drops the new event, [`Overflow::DropOldest`] the oldest of that
/// thread's queue, [`Overflow::Block`] waits for room (at most
/// [`block_limit`](Handoff::block_limit), then drops the new event; never on the consumer thread
/// nor on a thread marked with
/// [`never_block_this_thread`](Handoff::never_block_this_thread), which drop instead). Every drop
/// is counted ([`HandoffStats`]); after [`close`](Handoff::close), pushes are refused and counted.
///
/// The consumer parks in [`park`](Handoff::park); a publisher wakes it when its queue holds
/// `wake_at` events. A consumer that is not a thread of its own (an async task) waits by its own
/// means instead: [`wake_with`](Handoff::wake_with) and [`prepare_wait`](Handoff::prepare_wait).
///
/// [`OwnedEventSubscriber`]: notify_core::OwnedEventSubscriber
///
/// ```
/// use notify_core::export::Overflow;
/// use notify_export::Handoff;
/// use notify_core::{Event, Payload};
/// use std::{sync::Arc, time::Instant};
///
/// let handoff = Handoff::new(1024, Overflow::DropNewest);
/// let producer = handoff.clone();
/// std::thread::spawn(move || {
///     let now = Instant::now();
///     for _ in 0..3 {
///         producer.push(&Arc::new(Event::new("job.run", now, now, Payload::new())));
///     }
/// })
/// .join()
/// .unwrap();
/// // The thread exited: its queue is still drained.
/// let mut events = Vec::new();
/// assert_eq!(handoff.drain(&mut events, usize::MAX), 3);
/// assert_eq!(handoff.stats().dropped(), 0);
/// ```
#[derive(Clone)]
pub struct Handoff {
    shared: Arc<Shared>,
}

/// What a [`Handoff`] counted. Every event pushed ends in exactly one of: still queued, drained,
/// `dropped_full`, `dropped_closed`; a snapshot ([`Handoff::stats`]) counts each event pushed
/// before it in exactly one of `queued`, `drained`, `dropped_full`, `dropped_closed` (their sum
/// is what was pushed).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct HandoffStats {
    /// Events the consumer took ([`Handoff::drain`]).
    pub drained: u64,
    /// Events dropped because their thread's queue was full (the new one, or with
    /// [`Overflow::DropOldest`] the oldest queued one).
    pub dropped_full: u64,
    /// Events pushed after [`Handoff::close`].
    pub dropped_closed: u64,
    /// Events in the threads' queues and in the queue left behind by threads that exited when
    /// the snapshot was taken (neither drained nor dropped).
    pub queued: u64,
}

impl HandoffStats {
    /// All drops.
    pub fn dropped(&self) -> u64 {
        self.dropped_full + self.dropped_closed
    }

    /// Every event pushed: `queued + drained + dropped()`.
    pub fn pushed(&self) -> u64 {
        self.queued + self.drained + self.dropped()
    }
}

/// What wakes the consumer: its thread (unparked) and a hook ([`Handoff::wake_with`]).
#[derive(Default)]
struct Waker {
    thread: Option<(Thread, ThreadId)>,
    hook: Option<Arc<dyn Fn() + Send + Sync>>,
}

type Ring = Arc<Mutex<Consumer<Arc<Event>>>>;

struct Shared {
    per_thread: usize,
    wake_at: AtomicUsize,
    overflow: Overflow,
    block_limit: Mutex<Option<Duration>>,
    /// The consumer ends of every live thread's queue (an exiting thread removes its own; a push
    /// from a thread whose thread-locals are gone or in use goes to `left`).
    rings: Mutex<Vec<Ring>>,
    /// What threads that exited left in their queues, oldest first: at most `per_thread` times
    /// `peak` events. Locked after `rings` (and after a ring), never before.
    left: Mutex<VecDeque<Arc<Event>>>,
    /// The most threads' queues there were at once (read and written under `rings`' lock).
    peak: AtomicUsize,
    /// Where `drain` starts, so that a bounded drain does not always favour the first threads.
    next: AtomicUsize,
    consumer: Mutex<Waker>,
    /// The consumer waits (`park`, `prepare_wait`): the next push that brings its queue to
    /// `wake_at` events wakes it.
    sleeping: AtomicBool,
    closed: AtomicBool,
    drained: AtomicU64,
    dropped_full: AtomicU64,
    dropped_closed: AtomicU64,
}

/// This thread's producer end of one hand-off.
struct Local {
    owner: Weak<Shared>,
    producer: Producer<Arc<Event>>,
    /// The consumer end, for [`Overflow::DropOldest`] (the publisher evicts under its lock).
    ring: Ring,
}

thread_local! {
    static LOCALS: RefCell<Vec<Local>> = const { RefCell::new(Vec::new()) };
    /// [`Handoff::never_block_this_thread`].
    static NEVER_BLOCK: Cell<bool> = const { Cell::new(false) };
}

impl Handoff {
    /// The largest queue a publishing thread gets, in events (2^24: a 128 MiB ring of pointers,
    /// allocated whole on the thread's first push). A larger `per_thread` is clamped to it: a ring
    /// the allocator cannot give would abort the process in the first publishing thread.
    pub const MAX_PER_THREAD: usize = 1 << 24;

    /// A hand-off with queues of `per_thread` events (at least 1, at most
    /// [`MAX_PER_THREAD`](Handoff::MAX_PER_THREAD)) per publishing thread and `overflow` as
    /// policy; the consumer is woken when a queue holds half of it (at least 1).
    ///
    /// ```
    /// use notify_core::export::Overflow;
    /// use notify_export::Handoff;
    /// assert_eq!(Handoff::new(usize::MAX, Overflow::DropNewest).per_thread(), Handoff::MAX_PER_THREAD);
    /// assert_eq!(Handoff::new(0, Overflow::DropNewest).per_thread(), 1);
    /// ```
    pub fn new(per_thread: usize, overflow: Overflow) -> Handoff {
        let per_thread = per_thread.clamp(1, Handoff::MAX_PER_THREAD);
        Handoff {
            shared: Arc::new(Shared {
                per_thread,
                wake_at: AtomicUsize::new((per_thread / 2).max(1)),
                overflow,
                block_limit: Mutex::new(None),
                rings: Mutex::new(Vec::new()),
                left: Mutex::new(VecDeque::new()),
                peak: AtomicUsize::new(0),
                next: AtomicUsize::new(0),
                consumer: Mutex::new(Waker::default()),
                sleeping: AtomicBool::new(false),
                closed: AtomicBool::new(false),
                drained: AtomicU64::new(0),
                dropped_full: AtomicU64::new(0),
                dropped_closed: AtomicU64::new(0),
            }),
        }
    }

    /// With [`Overflow::Block`]: wait at most `limit` per event, then drop it (counted
    /// `dropped_full`). Without a limit, a blocked publisher waits until there is room or the
    /// hand-off is closed.
    pub fn block_limit(self, limit: Duration) -> Handoff {
        *lock(&self.shared.block_limit) = Some(limit);
        self
    }

    /// Wake the parked consumer when a thread's queue holds `events` (default: half its size;
    /// at least 1, at most the queue's size): an exporter sets its batch size.
    pub fn wake_at(self, events: usize) -> Handoff {
        self.shared
            .wake_at
            .store(events.clamp(1, self.shared.per_thread), Ordering::Relaxed);
        self
    }

    /// Makes [`wake`](Handoff::wake) (and so a push that finds the consumer waiting with its
    /// queue at `wake_at` events, or a full queue) also call `hook`, on the waking thread, after
    /// unparking the consumer thread if one is set: how a consumer that is not a thread of its own
    /// is woken, e.g. an async task waiting on a `tokio::sync::Notify` that `hook` notifies. The
    /// hook runs on the instrumenting threads, at most once per wait announced by
    /// [`prepare_wait`](Handoff::prepare_wait) (or [`park`](Handoff::park)) as a push goes, plus
    /// once per push onto a full queue and per explicit [`wake`](Handoff::wake), and also on a
    /// thread that exits, from its thread-local destructor, when what it leaves brings the queue
    /// left behind to `wake_at` events while the consumer waits: keep it short, and make it not
    /// block, not panic (a panic there aborts the process), not rely on thread-locals and not
    /// push to this hand-off. A later call replaces the hook.
    ///
    /// ```
    /// use notify_core::export::Overflow;
    /// use notify_export::Handoff;
    /// use notify_core::{Event, Payload};
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use std::sync::Arc;
    /// use std::time::Instant;
    ///
    /// let wakes = Arc::new(AtomicUsize::new(0));
    /// let counter = wakes.clone();
    /// let handoff = Handoff::new(64, Overflow::DropNewest)
    ///     .wake_at(1)
    ///     .wake_with(move || {
    ///         counter.fetch_add(1, Ordering::Relaxed);
    ///     });
    /// // The consumer found nothing queued: it announces its wait, then waits for the hook.
    /// assert!(handoff.prepare_wait());
    /// let now = Instant::now();
    /// for _ in 0..3 {
    ///     handoff.push(&Arc::new(Event::new("job.run", now, now, Payload::new())));
    /// }
    /// assert_eq!(wakes.load(Ordering::Relaxed), 1, "one wake for the wait, not one per event");
    /// assert!(!handoff.prepare_wait(), "events are queued: drain instead of waiting");
    /// ```
    pub fn wake_with(self, hook: impl Fn() + Send + Sync + 'static) -> Handoff {
        lock(&self.shared.consumer).hook = Some(Arc::new(hook));
        self
    }

    /// Events per publishing thread's queue.
    pub fn per_thread(&self) -> usize {
        self.shared.per_thread
    }

    /// Registers the calling thread as the consumer: the thread [`park`](Handoff::park) parks,
    /// and one that must never block on a full queue.
    pub fn set_consumer_thread(&self) {
        let current = thread::current();
        let id = current.id();
        lock(&self.shared.consumer).thread = Some((current, id));
    }

    /// Marks the calling thread, for every hand-off of the process and for the rest of its life,
    /// as one that must never wait for room in a full queue: with [`Overflow::Block`], its push
    /// onto a full queue drops the event at once (counted `dropped_full`), as on the consumer
    /// thread. For threads that a consumer may itself be waiting for (an exporter's or importer's
    /// own threads, which may publish events of their own): waiting there could wait for ever.
    pub fn never_block_this_thread() {
        NEVER_BLOCK.with(|never| never.set(true));
    }

    /// Hands `event` over (a clone of the `Arc`), or counts it as dropped; see [`Handoff`].
    /// Returns whether it was queued.
    #[inline]
    pub fn push(&self, event: &Arc<Event>) -> bool {
        let shared = &*self.shared;
        if shared.closed.load(Ordering::Relaxed) {
            shared.dropped_closed.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        let key: *const Shared = shared;
        let pushed = LOCALS.try_with(|locals| {
            let Ok(mut locals) = locals.try_borrow_mut() else {
                return None;
            };
            let index = match locals.iter().position(|l| std::ptr::eq(l.owner.as_ptr(), key)) {
                Some(index) => index,
                None => self.register(&mut locals),
            };
            let local = &mut locals[index];
            Some(match local.producer.push(event.clone()) {
                Ok(()) => {
                    if shared.sleeping.load(Ordering::Relaxed)
                        && shared.per_thread - local.producer.slots() >= shared.wake_at.load(Ordering::Relaxed)
                    {
                        self.wake();
                    }
                    true
                }
                Err(PushError::Full(event)) => self.full(local, event),
            })
        });
        match pushed {
            Ok(Some(pushed)) => pushed,
            // This thread's locals are gone (a push from a thread-local destructor at thread exit)
            // or in use: the event goes to the queue left behind (see `Shared::leave`).
            _ => self.push_unregistered(event),
        }
    }

    /// Makes this thread's queue for this hand-off (and forgets those of hand-offs dropped since).
    #[cold]
    #[inline(never)]
    fn register(&self, locals: &mut Vec<Local>) -> usize {
        locals.retain(|l| l.owner.strong_count() > 0);
        let (producer, consumer) = RingBuffer::new(self.shared.per_thread);
        let ring = Arc::new(Mutex::new(consumer));
        let mut rings = lock(&self.shared.rings);
        rings.push(ring.clone());
        // Under the lock, as every access of `peak`.
        let peak = self.shared.peak.load(Ordering::Relaxed).max(rings.len());
        self.shared.peak.store(peak, Ordering::Relaxed);
        drop(rings);
        locals.push(Local {
            owner: Arc::downgrade(&self.shared),
            producer,
            ring,
        });
        locals.len() - 1
    }

    #[cold]
    #[inline(never)]
    fn push_unregistered(&self, event: &Arc<Event>) -> bool {
        let shared = &*self.shared;
        let rings = lock(&shared.rings);
        let left = shared.leave(&rings, std::iter::once(event.clone()));
        drop(rings);
        left.finish(shared) == 1
    }

    /// This thread's queue is full: the policy.
    #[cold]
    #[inline(never)]
    fn full(&self, local: &mut Local, mut event: Arc<Event>) -> bool {
        let shared = &*self.shared;
        self.wake();
        match shared.overflow {
            Overflow::DropOldest => {
                // Counted under the ring's lock: a `stats` snapshot sees it queued or dropped.
                let evicted = {
                    let mut ring = lock(&local.ring);
                    let evicted = ring.pop().ok();
                    if evicted.is_some() {
                        shared.dropped_full.fetch_add(1, Ordering::Relaxed);
                    }
                    evicted
                };
                // Freed outside the lock.
                drop(evicted);
                match local.producer.push(event) {
                    Ok(()) => true,
                    // Unreachable (one slot was freed, and only this thread pushes); counted.
                    Err(_) => {
                        shared.dropped_full.fetch_add(1, Ordering::Relaxed);
                        false
                    }
                }
            }
            Overflow::Block if !self.is_consumer_thread() && !NEVER_BLOCK.with(Cell::get) => {
                let limit = *lock(&shared.block_limit);
                let deadline = limit.and_then(|limit| Instant::now().checked_add(limit));
                loop {
                    // A slice, or what is left of the limit when less (a limit under one slice,
                    // zero included, is kept: it does not wait a whole slice before its first look).
                    let left = deadline.map_or(BLOCK_SLICE, |deadline| {
                        deadline.saturating_duration_since(Instant::now()).min(BLOCK_SLICE)
                    });
                    if !left.is_zero() {
                        thread::sleep(left);
                    }
                    if shared.closed.load(Ordering::SeqCst) {
                        shared.dropped_closed.fetch_add(1, Ordering::Relaxed);
                        return false;
                    }
                    match local.producer.push(event) {
                        Ok(()) => return true,
                        Err(PushError::Full(back)) => event = back,
                    }
                    if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                        shared.dropped_full.fetch_add(1, Ordering::Relaxed);
                        return false;
                    }
                    self.wake();
                }
            }
            // DropNewest, and Block on the consumer thread or a thread that must never block.
            _ => {
                shared.dropped_full.fetch_add(1, Ordering::Relaxed);
                false
            }
        }
    }

    fn is_consumer_thread(&self) -> bool {
        lock(&self.shared.consumer)
            .thread
            .as_ref()
            .is_some_and(|(_, id)| *id == thread::current().id())
    }

    /// Moves up to `max` queued events, from every thread's queue, into `out` (appended); returns
    /// how many, first from the queue left behind by threads that exited. Events of one publishing
    /// thread come in the order it pushed them; the threads' queues are taken one after the
    /// other. A drain ends the consumer's wait: pushes do not wake it until it announces its next
    /// one ([`park`](Handoff::park), [`prepare_wait`](Handoff::prepare_wait)).
    pub fn drain(&self, out: &mut Vec<Arc<Event>>, max: usize) -> usize {
        let shared = &*self.shared;
        if shared.sleeping.load(Ordering::Relaxed) {
            shared.sleeping.store(false, Ordering::Relaxed);
        }
        let rings = lock(&shared.rings);
        let mut taken = 0;
        {
            // What exited threads left first: it is older than what live threads queue since.
            let mut left = lock(&shared.left);
            let k = left.len().min(max);
            out.extend(left.drain(..k));
            taken += k;
        }
        let n = rings.len();
        if n == 0 {
            shared.drained.fetch_add(taken as u64, Ordering::AcqRel);
            return taken;
        }
        let start = shared.next.fetch_add(1, Ordering::Relaxed) % n;
        for i in 0..n {
            if taken >= max {
                break;
            }
            let mut ring = lock(&rings[(start + i) % n]);
            while taken < max {
                match ring.pop() {
                    Ok(event) => {
                        out.push(event);
                        taken += 1;
                    }
                    Err(_) => break,
                }
            }
        }
        // No queue of a thread that exited is left to drop here: its `Local`'s drop removed it.
        shared.drained.fetch_add(taken as u64, Ordering::AcqRel);
        taken
    }

    /// Events queued now, in all threads' queues and in the queue left behind.
    pub fn len(&self) -> usize {
        let rings = lock(&self.shared.rings);
        let queued: usize = rings.iter().map(|ring| lock(ring).slots()).sum();
        queued + lock(&self.shared.left).len()
    }

    /// True when no event is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Parks the consumer thread for at most `timeout`, unless some thread's queue (or the queue
    /// left behind) already holds `wake_at` events; a publisher whose queue reaches that wakes
    /// it, and so does [`wake`](Handoff::wake) (or an `unpark` of the thread).
    pub fn park(&self, timeout: Duration) {
        if self.prepare_wait() {
            thread::park_timeout(timeout);
        }
        self.shared.sleeping.store(false, Ordering::Relaxed);
    }

    /// For a consumer that waits by its own means (an async task woken through
    /// [`wake_with`](Handoff::wake_with)) instead of [`park`](Handoff::park): announces that it is
    /// about to wait, and returns whether it may, i.e. no thread's queue (nor the queue left
    /// behind) holds `wake_at` events (`false`: drain instead). From the announcement on, the first push that brings its
    /// thread's queue to `wake_at` events calls [`wake`](Handoff::wake), which ends the
    /// announcement (so one wake per wait, not one per event); so does the next
    /// [`drain`](Handoff::drain).
    ///
    /// **Look again once, shortly after.** A publisher reads the announcement without a fence
    /// (the push stays free of one), so a push made while the consumer announces may miss it,
    /// and the consumer's look may miss that push. Such a push is visible a moment later: a
    /// consumer that would wait without a time limit first waits a short while (a millisecond
    /// is ample), then, when not woken, checks [`is_empty`](Handoff::is_empty) (or
    /// [`len`](Handoff::len)) *without announcing again* before waiting for good: every later
    /// push sees the announcement. (`park` has its timeout for this.)
    ///
    /// See [`wake_with`](Handoff::wake_with) for an example.
    pub fn prepare_wait(&self) -> bool {
        let shared = &*self.shared;
        shared.sleeping.store(true, Ordering::SeqCst);
        let wake_at = shared.wake_at.load(Ordering::Relaxed);
        let rings = lock(&shared.rings);
        let ready = rings.iter().any(|ring| lock(ring).slots() >= wake_at) || lock(&shared.left).len() >= wake_at;
        !ready
    }

    /// Ends a wait announced by [`prepare_wait`](Handoff::prepare_wait) (what [`park`](Handoff::park)
    /// does after its wait).
    pub(crate) fn end_wait(&self) {
        self.shared.sleeping.store(false, Ordering::Relaxed);
    }

    /// Wakes the consumer: unparks its thread (set by
    /// [`set_consumer_thread`](Handoff::set_consumer_thread)) and calls the hook of
    /// [`wake_with`](Handoff::wake_with), if set.
    pub fn wake(&self) {
        self.shared.wake();
    }

    /// Refuses later pushes (counted `dropped_closed`) and ends the waits of blocked publishers.
    pub fn close(&self) {
        self.shared.closed.store(true, Ordering::SeqCst);
    }

    /// True after [`close`](Handoff::close).
    pub fn is_closed(&self) -> bool {
        self.shared.closed.load(Ordering::SeqCst)
    }

    /// The counters now: a consistent snapshot (an event moving from a queue to `drained`, or
    /// evicted by [`Overflow::DropOldest`], is counted once), taken under the lock of every
    /// thread's queue.
    pub fn stats(&self) -> HandoffStats {
        let shared = &*self.shared;
        // Drains hold this lock until `drained` is updated; evictions hold their ring's lock
        // until `dropped_full` is.
        let rings = lock(&shared.rings);
        let guards: Vec<_> = rings.iter().map(|ring| lock(ring)).collect();
        let left = lock(&shared.left);
        let queued = guards.iter().map(|ring| ring.slots() as u64).sum::<u64>() + left.len() as u64;
        let stats = HandoffStats {
            drained: shared.drained.load(Ordering::Acquire),
            dropped_full: shared.dropped_full.load(Ordering::Acquire),
            dropped_closed: shared.dropped_closed.load(Ordering::Acquire),
            queued,
        };
        drop(left);
        drop(guards);
        drop(rings);
        stats
    }
}

impl Shared {
    /// See [`Handoff::wake`].
    fn wake(&self) {
        self.sleeping.store(false, Ordering::Relaxed);
        let hook = {
            let consumer = lock(&self.consumer);
            if let Some((thread, _)) = &consumer.thread {
                thread.unpark();
            }
            consumer.hook.clone()
        };
        if let Some(hook) = hook {
            hook();
        }
    }

    /// Adds `events` (oldest first) to the queue left behind, under `rings`' lock (held by the
    /// caller, so a [`Handoff::stats`] snapshot sees each event queued, moved or dropped, once):
    /// at most `per_thread` times the most threads' queues there were at once (at least one) are
    /// kept, the newest with [`Overflow::DropOldest`], else the oldest; the others are counted
    /// `dropped_full`. After [`Handoff::close`], all are kept.
    fn leave(&self, _rings: &MutexGuard<'_, Vec<Ring>>, events: impl Iterator<Item = Arc<Event>>) -> Left {
        let mut left = lock(&self.left);
        let mut kept = 0;
        let mut dropped = Vec::new();
        // Once closed nothing new is queued, so what queues hold can only shrink: all of it is
        // kept, as it was in its thread's queue (an exporter counts it dropped at shutdown).
        let closed = self.closed.load(Ordering::SeqCst);
        let room = self.per_thread.saturating_mul(self.peak.load(Ordering::Relaxed).max(1));
        for event in events {
            if closed || left.len() < room {
                left.push_back(event);
                kept += 1;
            } else if matches!(self.overflow, Overflow::DropOldest) {
                dropped.extend(left.pop_front());
                left.push_back(event);
                kept += 1;
            } else {
                dropped.push(event);
            }
        }
        self.dropped_full.fetch_add(dropped.len() as u64, Ordering::Relaxed);
        Left {
            kept,
            wake: self.sleeping.load(Ordering::Relaxed) && left.len() >= self.wake_at.load(Ordering::Relaxed),
            dropped,
        }
    }
}

/// What [`Shared::leave`] did: for its caller to finish after releasing the locks (the wake may
/// call the consumer's hook; the drops free the events).
struct Left {
    /// How many of the events were kept.
    kept: usize,
    /// The queue left behind holds `wake_at` events and the consumer waits: wake it.
    wake: bool,
    /// The events not kept (counted).
    dropped: Vec<Arc<Event>>,
}

impl Left {
    /// Wakes the consumer if due, then frees the dropped events; returns how many were kept.
    fn finish(self, shared: &Shared) -> usize {
        if self.wake {
            shared.wake();
        }
        drop(self.dropped);
        self.kept
    }
}

impl Drop for Local {
    /// The thread exits (or the hand-off is gone): its queue leaves the consumer's list and what
    /// it still holds goes to the queue left behind; the ring is freed with the last handle.
    fn drop(&mut self) {
        let Some(shared) = self.owner.upgrade() else {
            return;
        };
        let mut rings = lock(&shared.rings);
        rings.retain(|ring| !Arc::ptr_eq(ring, &self.ring));
        let mut ring = lock(&self.ring);
        let queued: Vec<Arc<Event>> = std::iter::from_fn(|| ring.pop().ok()).collect();
        drop(ring);
        let left = shared.leave(&rings, queued.into_iter());
        drop(rings);
        left.finish(&shared);
    }
}

impl std::fmt::Debug for Handoff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handoff")
            .field("per_thread", &self.shared.per_thread)
            .field("overflow", &self.shared.overflow)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use notify_core::event::EventId;
    use notify_core::Payload;
    use std::sync::mpsc;

    fn event(n: u64) -> Arc<Event> {
        let now = Instant::now();
        Arc::new(Event::new("x.y", now, now, Payload::new()).with_ids(
            EventId::new(n),
            None,
            notify_core::context::TransactionId::new(1),
        ))
    }

    fn ids(events: &[Arc<Event>]) -> Vec<u64> {
        events.iter().map(|e| e.id().get()).collect()
    }

    fn locals() -> usize {
        LOCALS.with(|l| l.borrow().len())
    }

    #[test]
    fn a_thread_that_exited_frees_its_queue_and_leaves_its_events_behind() {
        let handoff = Handoff::new(16, Overflow::DropNewest);
        let producer = handoff.clone();
        thread::spawn(move || (1..=5).for_each(|n| assert!(producer.push(&event(n)))))
            .join()
            .unwrap();
        assert_eq!(lock(&handoff.shared.rings).len(), 0, "its queue went with the thread");
        assert_eq!((handoff.len(), handoff.stats().queued), (5, 5));
        let mut out = Vec::new();
        assert_eq!(handoff.drain(&mut out, 3), 3);
        assert_eq!(handoff.drain(&mut out, 10), 2);
        assert_eq!(ids(&out), [1, 2, 3, 4, 5]);
        assert_eq!(
            handoff.stats(),
            HandoffStats {
                drained: 5,
                dropped_full: 0,
                dropped_closed: 0,
                queued: 0
            }
        );
    }

    /// Threads that come and go (a thread per task) behind a consumer that takes nothing: what
    /// they leave is one queue's worth, the oldest kept (the newest with `DropOldest`), the rest
    /// counted; no queue per thread ever is kept.
    #[test]
    fn threads_that_come_and_go_leave_at_most_one_queue_behind() {
        for (overflow, kept) in [
            (Overflow::DropNewest, (1..=16).collect::<Vec<u64>>()),
            (Overflow::Block, (1..=16).collect()),
            (Overflow::DropOldest, (285..=300).collect()),
        ] {
            let handoff = Handoff::new(16, overflow);
            for t in 0..100_u64 {
                let producer = handoff.clone();
                thread::spawn(move || (1..=3).for_each(|n| assert!(producer.push(&event(3 * t + n)))))
                    .join()
                    .unwrap();
            }
            assert_eq!(lock(&handoff.shared.rings).len(), 0, "{overflow:?}");
            let stats = handoff.stats();
            assert_eq!(
                (stats.queued, stats.dropped_full, stats.pushed()),
                (16, 284, 300),
                "{overflow:?}"
            );
            let mut out = Vec::new();
            assert_eq!(handoff.drain(&mut out, usize::MAX), 16);
            assert_eq!(ids(&out), kept, "{overflow:?}");
        }
    }

    /// Threads that ran together and exit keep all they queued (as their own queues did), up to
    /// `per_thread` times the most threads with a queue at once; more is counted dropped.
    #[test]
    fn threads_that_ran_together_leave_all_their_queues_behind() {
        let handoff = Handoff::new(16, Overflow::DropNewest);
        let barrier = Arc::new(std::sync::Barrier::new(4));
        let threads: Vec<_> = (0..4_u64)
            .map(|t| {
                let (producer, barrier) = (handoff.clone(), barrier.clone());
                thread::spawn(move || {
                    (1..=16).for_each(|n| assert!(producer.push(&event(100 * t + n))));
                    barrier.wait();
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        let stats = handoff.stats();
        assert_eq!((stats.queued, stats.dropped_full), (64, 0));
        // A fifth thread, alone: the queue left behind is full (4 queues' worth): its 3 events
        // are counted dropped.
        let producer = handoff.clone();
        thread::spawn(move || (1..=3).for_each(|n| assert!(producer.push(&event(1_000 + n)))))
            .join()
            .unwrap();
        let stats = handoff.stats();
        assert_eq!((stats.queued, stats.dropped_full), (64, 3));
    }

    /// After `close`, an exiting thread's events are all left behind, beyond one queue's worth:
    /// nothing new can be queued any more, and an exporter counts them dropped at shutdown.
    #[test]
    fn after_close_exiting_threads_leave_everything_they_hold() {
        let handoff = Handoff::new(4, Overflow::DropNewest);
        // Each thread fills its queue, then waits (the first wait) for the close, then exits.
        let barrier = Arc::new(std::sync::Barrier::new(4));
        let threads: Vec<_> = (0..3_u64)
            .map(|t| {
                let (producer, barrier) = (handoff.clone(), barrier.clone());
                thread::spawn(move || {
                    (1..=4).for_each(|n| assert!(producer.push(&event(10 * t + n))));
                    barrier.wait();
                    barrier.wait();
                })
            })
            .collect();
        barrier.wait();
        handoff.close();
        barrier.wait();
        threads.into_iter().for_each(|t| t.join().unwrap());
        let stats = handoff.stats();
        assert_eq!(
            (stats.queued, stats.dropped_full, lock(&handoff.shared.rings).len()),
            (12, 0, 0)
        );
    }

    /// The queue left behind wakes a waiting consumer when it holds `wake_at` events, as a
    /// thread's own queue does: threads that each push less than that are not held until the
    /// consumer's timer.
    #[test]
    fn what_exited_threads_leave_wakes_the_consumer_at_wake_at() {
        let wakes = Arc::new(AtomicUsize::new(0));
        let counter = wakes.clone();
        let handoff = Handoff::new(64, Overflow::DropNewest).wake_at(4).wake_with(move || {
            counter.fetch_add(1, Ordering::Relaxed);
        });
        assert!(handoff.prepare_wait());
        for n in 1..=4_u64 {
            let producer = handoff.clone();
            thread::spawn(move || assert!(producer.push(&event(n)))).join().unwrap();
            assert_eq!(wakes.load(Ordering::Relaxed), usize::from(n == 4), "after thread {n}");
        }
        assert!(
            !handoff.prepare_wait(),
            "4 events left behind: drain instead of waiting"
        );
    }

    /// Threads pushing and exiting while the consumer drains and snapshots run: every event is
    /// drained once or counted dropped, each thread's events in its order, and every snapshot's
    /// sum is what was pushed before it (never more than pushed in all).
    #[test]
    fn exits_racing_drains_and_snapshots_count_every_event_once() {
        const SPAWNERS: u64 = 4;
        const THREADS: u64 = 40;
        const EACH: u64 = 25;
        let handoff = Handoff::new(8, Overflow::DropOldest);
        let stop = Arc::new(AtomicBool::new(false));
        let consumer = {
            let (handoff, stop) = (handoff.clone(), stop.clone());
            thread::spawn(move || {
                let mut out = Vec::new();
                loop {
                    let done = stop.load(Ordering::SeqCst);
                    handoff.drain(&mut out, 7);
                    assert!(handoff.stats().pushed() <= SPAWNERS * THREADS * EACH);
                    if done && handoff.is_empty() {
                        return out;
                    }
                }
            })
        };
        let spawners: Vec<_> = (0..SPAWNERS)
            .map(|s| {
                let handoff = handoff.clone();
                thread::spawn(move || {
                    for t in 0..THREADS {
                        let producer = handoff.clone();
                        let base = (s * THREADS + t) * 1_000;
                        thread::spawn(move || {
                            (1..=EACH).for_each(|n| {
                                producer.push(&event(base + n));
                            })
                        })
                        .join()
                        .unwrap();
                    }
                })
            })
            .collect();
        spawners.into_iter().for_each(|s| s.join().unwrap());
        stop.store(true, Ordering::SeqCst);
        let out = consumer.join().unwrap();
        let stats = handoff.stats();
        assert_eq!(stats.pushed(), SPAWNERS * THREADS * EACH);
        assert_eq!((stats.queued, stats.drained), (0, out.len() as u64));
        let mut seen = std::collections::HashMap::new();
        for id in ids(&out) {
            let last = seen.entry(id / 1_000).or_insert(0);
            assert!(id % 1_000 > *last, "event {id} out of its thread's order or twice");
            *last = id % 1_000;
        }
    }

    /// Under every policy, threads that push and exit race a consumer that drains and snapshots:
    /// each snapshot's sum (`pushed`) never goes down and never exceeds what was pushed, and in the
    /// end every event is drained once or counted dropped.
    #[test]
    fn snapshots_never_go_back_while_threads_exit_under_every_policy() {
        const THREADS: u64 = 60;
        const EACH: u64 = 20;
        for overflow in [Overflow::DropNewest, Overflow::DropOldest, Overflow::Block] {
            let handoff = Handoff::new(4, overflow).block_limit(Duration::ZERO);
            let stop = Arc::new(AtomicBool::new(false));
            let consumer = {
                let (handoff, stop) = (handoff.clone(), stop.clone());
                thread::spawn(move || {
                    let (mut out, mut last) = (Vec::new(), 0);
                    loop {
                        let done = stop.load(Ordering::SeqCst);
                        handoff.drain(&mut out, 3);
                        let pushed = handoff.stats().pushed();
                        assert!(pushed >= last && pushed <= 2 * THREADS * EACH, "{pushed} after {last}");
                        last = pushed;
                        if done && handoff.is_empty() {
                            return out.len() as u64;
                        }
                    }
                })
            };
            let spawners: Vec<_> = (0..2)
                .map(|_| {
                    let handoff = handoff.clone();
                    thread::spawn(move || {
                        for t in 0..THREADS {
                            let producer = handoff.clone();
                            thread::spawn(move || {
                                (1..=EACH).for_each(|n| {
                                    let _ = producer.push(&event(t * 100 + n));
                                })
                            })
                            .join()
                            .unwrap();
                        }
                    })
                })
                .collect();
            spawners.into_iter().for_each(|s| s.join().unwrap());
            stop.store(true, Ordering::SeqCst);
            let drained = consumer.join().unwrap();
            let stats = handoff.stats();
            assert_eq!(stats.pushed(), 2 * THREADS * EACH, "{overflow:?}");
            assert_eq!((stats.queued, stats.drained), (0, drained), "{overflow:?}");
        }
    }

    /// A push from a thread-local destructor at thread exit (after this thread's queues went,
    /// as destructors run last-registered first) goes to the queue left behind: drained after
    /// the thread's earlier events, counted once, and no queue is left in the consumer's list.
    #[test]
    fn a_push_from_a_thread_local_destructor_is_left_behind_and_counted() {
        struct PushOnDrop(RefCell<Option<Handoff>>);
        impl Drop for PushOnDrop {
            fn drop(&mut self) {
                if let Some(handoff) = self.0.borrow_mut().take() {
                    assert!(handoff.push(&event(2)));
                }
            }
        }
        thread_local! {
            static GUARD: PushOnDrop = const { PushOnDrop(RefCell::new(None)) };
        }
        let handoff = Handoff::new(8, Overflow::DropNewest);
        let producer = handoff.clone();
        thread::spawn(move || {
            // Registered before this thread's queues: destroyed after them.
            GUARD.with(|guard| *guard.0.borrow_mut() = Some(producer.clone()));
            assert!(producer.push(&event(1)));
        })
        .join()
        .unwrap();
        assert_eq!(lock(&handoff.shared.rings).len(), 0);
        let stats = handoff.stats();
        assert_eq!((stats.queued, stats.pushed()), (2, 2));
        let mut out = Vec::new();
        assert_eq!(handoff.drain(&mut out, usize::MAX), 2);
        assert_eq!(ids(&out), [1, 2]);
    }

    #[test]
    fn the_queue_of_an_idle_live_thread_is_drained() {
        let handoff = Handoff::new(16, Overflow::DropNewest);
        let producer = handoff.clone();
        let (pushed_tx, pushed_rx) = mpsc::channel();
        let (done_tx, done_rx) = mpsc::channel::<()>();
        let thread = thread::spawn(move || {
            producer.push(&event(7));
            pushed_tx.send(()).unwrap();
            // Alive and idle until the consumer took the event.
            done_rx.recv().unwrap();
        });
        pushed_rx.recv().unwrap();
        let mut out = Vec::new();
        assert_eq!(handoff.drain(&mut out, usize::MAX), 1);
        assert_eq!(ids(&out), [7]);
        assert_eq!(lock(&handoff.shared.rings).len(), 1, "its thread lives: kept");
        done_tx.send(()).unwrap();
        thread.join().unwrap();
    }

    #[test]
    fn drop_newest_keeps_the_first_and_counts_the_rest() {
        let handoff = Handoff::new(3, Overflow::DropNewest);
        let pushed: Vec<bool> = (1..=5).map(|n| handoff.push(&event(n))).collect();
        assert_eq!(pushed, [true, true, true, false, false]);
        let mut out = Vec::new();
        handoff.drain(&mut out, usize::MAX);
        assert_eq!(ids(&out), [1, 2, 3]);
        assert_eq!(handoff.stats().dropped_full, 2);
    }

    #[test]
    fn drop_oldest_keeps_the_last_and_counts_the_rest() {
        let handoff = Handoff::new(3, Overflow::DropOldest);
        assert!((1..=5).all(|n| handoff.push(&event(n))));
        let mut out = Vec::new();
        handoff.drain(&mut out, usize::MAX);
        assert_eq!(ids(&out), [3, 4, 5]);
        assert_eq!(handoff.stats().dropped_full, 2);
    }

    #[test]
    fn block_waits_for_room_then_gives_up_at_its_limit_and_on_close() {
        let handoff = Handoff::new(2, Overflow::Block).block_limit(Duration::from_millis(20));
        assert!(handoff.push(&event(1)) && handoff.push(&event(2)));
        let started = Instant::now();
        assert!(!handoff.push(&event(3)), "nobody drains: dropped at the limit");
        assert!(started.elapsed() >= Duration::from_millis(20));
        assert_eq!(handoff.stats().dropped_full, 1);

        // Room made by the consumer while the publisher waits.
        let unlimited = Handoff::new(2, Overflow::Block);
        unlimited.push(&event(1));
        unlimited.push(&event(2));
        let consumer = unlimited.clone();
        let drainer = thread::spawn(move || {
            thread::sleep(Duration::from_millis(10));
            let mut out = Vec::new();
            consumer.drain(&mut out, 1);
            ids(&out)
        });
        assert!(unlimited.push(&event(3)), "waited for room");
        assert_eq!(drainer.join().unwrap(), [1]);

        // Closed while waiting: refused, counted as closed.
        let closing = unlimited.clone();
        let closer = thread::spawn(move || {
            thread::sleep(Duration::from_millis(10));
            closing.close();
        });
        assert!(!unlimited.push(&event(4)));
        closer.join().unwrap();
        assert_eq!(unlimited.stats().dropped_closed, 1);
        assert!(!unlimited.push(&event(5)), "closed: refused at once");
        assert_eq!(unlimited.stats().dropped_closed, 2);
        assert_eq!(unlimited.stats().dropped_full, 0);
    }

    #[test]
    fn block_does_not_block_the_consumer_thread() {
        let handoff = Handoff::new(2, Overflow::Block);
        handoff.set_consumer_thread();
        handoff.push(&event(1));
        handoff.push(&event(2));
        assert!(!handoff.push(&event(3)));
        assert_eq!(handoff.stats().dropped_full, 1);
    }

    #[test]
    fn a_thread_forgets_the_queues_of_dropped_handoffs() {
        let before = locals();
        let first = Handoff::new(4, Overflow::DropNewest);
        first.push(&event(1));
        assert_eq!(locals(), before + 1);
        drop(first);
        let second = Handoff::new(4, Overflow::DropNewest);
        second.push(&event(2));
        assert_eq!(
            locals(),
            before + 1,
            "the dropped one's entry went when the new one came"
        );
        let mut out = Vec::new();
        assert_eq!(second.drain(&mut out, usize::MAX), 1);
        assert_eq!(ids(&out), [2]);
    }

    #[test]
    fn a_snapshot_counts_every_pushed_event_once() {
        let handoff = Handoff::new(3, Overflow::DropOldest);
        assert!((1..=5).all(|n| handoff.push(&event(n))));
        let stats = handoff.stats();
        assert_eq!(
            (stats.queued, stats.drained, stats.dropped_full, stats.pushed()),
            (3, 0, 2, 5)
        );
        let mut out = Vec::new();
        assert_eq!(handoff.drain(&mut out, 2), 2);
        handoff.close();
        assert!(!handoff.push(&event(6)));
        let stats = handoff.stats();
        assert_eq!(
            (
                stats.queued,
                stats.drained,
                stats.dropped_full,
                stats.dropped_closed,
                stats.pushed()
            ),
            (1, 2, 2, 1, 6)
        );
    }

    #[test]
    fn the_wake_hook_runs_once_per_announced_wait_not_per_event() {
        let wakes = Arc::new(AtomicUsize::new(0));
        let counter = wakes.clone();
        let handoff = Handoff::new(8, Overflow::DropNewest).wake_at(1).wake_with(move || {
            counter.fetch_add(1, Ordering::Relaxed);
        });
        let wakes = || wakes.load(Ordering::Relaxed);
        // Not waiting: pushes wake nobody.
        handoff.push(&event(1));
        assert_eq!(wakes(), 0);
        assert!(!handoff.prepare_wait(), "an event is queued: do not wait");
        let mut out = Vec::new();
        assert_eq!(handoff.drain(&mut out, usize::MAX), 1);
        handoff.push(&event(2));
        assert_eq!(wakes(), 0, "the drain ended the announcement");
        handoff.drain(&mut out, usize::MAX);

        assert!(handoff.prepare_wait(), "nothing queued: wait");
        (3..=6).for_each(|n| assert!(handoff.push(&event(n))));
        assert_eq!(wakes(), 1, "the first push woke it, the others did not");
        handoff.drain(&mut out, usize::MAX);
        assert!(handoff.prepare_wait());
        handoff.push(&event(7));
        assert_eq!(wakes(), 2);
        // An explicit wake calls the hook too.
        handoff.wake();
        assert_eq!(wakes(), 3);
        handoff.drain(&mut out, usize::MAX);
        assert_eq!(ids(&out), [1, 2, 3, 4, 5, 6, 7]);

        // Announced from another thread, woken by a push of this one.
        let waiter = handoff.clone();
        thread::spawn(move || assert!(waiter.prepare_wait())).join().unwrap();
        handoff.push(&event(8));
        assert_eq!(wakes(), 4);
    }

    #[test]
    fn a_thread_that_must_never_block_drops_on_a_full_blocking_queue() {
        let handoff = Handoff::new(2, Overflow::Block);
        let marked = handoff.clone();
        let pushed = thread::spawn(move || {
            Handoff::never_block_this_thread();
            (1..=4).map(|n| marked.push(&event(n))).collect::<Vec<_>>()
        })
        .join()
        .unwrap();
        assert_eq!(pushed, [true, true, false, false], "dropped at once, never waited");
        assert_eq!((handoff.stats().dropped_full, handoff.stats().queued), (2, 2));
        // An unmarked thread (this one, with a queue of its own) still waits, here until its
        // limit.
        let handoff = handoff.block_limit(Duration::from_millis(10));
        assert!(handoff.push(&event(5)) && handoff.push(&event(6)));
        let started = Instant::now();
        assert!(!handoff.push(&event(7)));
        assert!(started.elapsed() >= Duration::from_millis(10));
        assert_eq!((handoff.stats().dropped_full, handoff.stats().queued), (3, 4));
    }

    #[test]
    fn a_push_wakes_a_parked_consumer_at_half_full() {
        let handoff = Handoff::new(8, Overflow::DropNewest);
        let consumer = handoff.clone();
        let (ready_tx, ready_rx) = mpsc::channel();
        let parked = thread::spawn(move || {
            consumer.set_consumer_thread();
            ready_tx.send(()).unwrap();
            let started = Instant::now();
            consumer.park(Duration::from_secs(30));
            started.elapsed()
        });
        ready_rx.recv().unwrap();
        // Pushes until the consumer is woken (it may not be parked yet at the first ones).
        let mut n = 0;
        while !parked.is_finished() && n < 10_000 {
            n += 1;
            if !handoff.push(&event(n)) {
                let mut out = Vec::new();
                handoff.drain(&mut out, usize::MAX);
            }
            thread::sleep(Duration::from_millis(1));
        }
        assert!(parked.join().unwrap() < Duration::from_secs(30));
    }
}
