//! Transaction ids, event ids, trace ids and the current context of each thread.
//!
//! Event ids (W3C span ids) and root trace ids come from one per-thread random generator, seeded
//! from the OS through `RandomState`: a few arithmetic operations per id, no shared counter.
//! Inside this file ids are plain `u64`s (0: none); what leaves it is an [`EventId`] or a
//! [`TransactionId`] (same layout, `#[repr(transparent)]`).
//!
//! The current context is the top of a per-thread stack of *frames*: an event entered on this
//! thread (a synchronous event from start to finish, an async event while it is polled) or a
//! [`Context`](crate::Context) attached here. Each frame has a key (the event id, or a fresh id for
//! an attached context), the event it makes current (0: none) and its trace id (0: none). The first
//! [`DEPTH`] frames live in plain `Cell`s (no destructor, each access a load or a store); deeper
//! ones spill into a vector, so the stack is exact at any depth.
//!
//! A frame is removed by key wherever it is in the stack (events may finish out of order). An event
//! entered on one thread and finished on another (a handle sent away) cannot reach its thread's
//! stack: its key is *orphaned* into a small global list, and its thread drops it from its stack the
//! next time it asks for the current context (one relaxed load when there are no orphans).

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::sync::StaticMutex;

use crate::event_id::EventId;
use crate::trace_id::{Rng, TraceId};
use crate::transaction_id::TransactionId;

static NEXT_TRANSACTION: AtomicU64 = AtomicU64::new(1);

/// Frames kept in the thread-local's `Cell`s; deeper ones go to [`DEEP`].
const DEPTH: usize = 16;

/// One entry of a thread's stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Frame {
    /// What removes it: the event id, or a fresh id for an attached context.
    key: u64,
    /// The event it makes current; 0 for none.
    pub(crate) event: u64,
    /// Its trace id; 0 for none (a new event then starts a trace).
    pub(crate) trace: u128,
    /// What is known of the trace and the event: [`DECIDED`], [`SAMPLED`], [`REMOTE`].
    pub(crate) flags: u8,
}

/// Frame flag: the trace's sampling decision is made ([`SAMPLED`] says which); without it the
/// next event under the frame is a local root that decides.
pub(crate) const DECIDED: u8 = 1;
/// Frame flag: the trace is sampled (meaningful with [`DECIDED`]).
pub(crate) const SAMPLED: u8 = 2;
/// Frame flag: the frame's event lives in another process (a context read from a W3C
/// `traceparent`): events started under it have a remote parent.
pub(crate) const REMOTE: u8 = 4;
/// Frame flag of an attached context: its trace id was generated randomly (W3C Level 2's random
/// flag: a trace notify started, or an incoming `traceparent` that says so). Events do not carry
/// it; [`Propagated`](crate::Propagated) holds it for their trace.
pub(crate) const RANDOM: u8 = 8;

const NO_FRAME: Frame = Frame {
    key: 0,
    event: 0,
    trace: 0,
    flags: 0,
};

thread_local! {
    /// Everything per-thread in one place, so an event's start reads it through one access.
    static THREAD: Thread = const {
        Thread {
            transaction: Cell::new(0),
            seen_orphaned: Cell::new(0),
            rng: Cell::new(0),
            frames: [const { FrameSlot::empty() }; DEPTH],
            len: Cell::new(0),
        }
    };
    /// The frames beyond [`DEPTH`], bottom first: touched only by stacks that deep.
    static DEEP: RefCell<Vec<Frame>> = const { RefCell::new(Vec::new()) };
}

/// A thread's ids: its transaction id, its random generator (event ids, root trace ids), its stack.
/// Plain `Cell`s: no destructor, each access a load or a store.
struct Thread {
    /// 0 until first asked.
    transaction: Cell<u64>,
    /// The value of `ORPHANED` at this thread's last look at the orphans.
    seen_orphaned: Cell<usize>,
    /// The event id and trace id generator's state; 0 until seeded.
    rng: Cell<u64>,
    /// The bottom [`DEPTH`] frames.
    frames: [FrameSlot; DEPTH],
    /// Frames on the stack, those in [`DEEP`] included.
    len: Cell<usize>,
}

/// One of a thread's inline frames, a `Cell` per field: a push stores the fields from registers
/// (a `Cell<Frame>` was built on the stack and copied in with 16-byte loads of its 8-byte stores,
/// which stall on store forwarding on every event).
struct FrameSlot {
    key: Cell<u64>,
    event: Cell<u64>,
    trace: Cell<u128>,
    flags: Cell<u8>,
}

impl FrameSlot {
    const fn empty() -> FrameSlot {
        FrameSlot {
            key: Cell::new(0),
            event: Cell::new(0),
            trace: Cell::new(0),
            flags: Cell::new(0),
        }
    }

    #[inline(always)]
    fn get(&self) -> Frame {
        Frame {
            key: self.key.get(),
            event: self.event.get(),
            trace: self.trace.get(),
            flags: self.flags.get(),
        }
    }

    #[inline(always)]
    fn set(&self, frame: Frame) {
        self.key.set(frame.key);
        self.event.set(frame.event);
        self.trace.set(frame.trace);
        self.flags.set(frame.flags);
    }
}

/// The ids of an event starting on this thread.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Begun {
    pub(crate) id: EventId,
    pub(crate) parent: Option<EventId>,
    pub(crate) trace: TraceId,
    pub(crate) transaction: TransactionId,
    /// The trace is sampled (inherited from the parent, or decided here for a local root).
    pub(crate) sampled: bool,
    /// The parent lives in another process.
    pub(crate) parent_remote: bool,
}

impl Thread {
    /// A random event id (a W3C span id): one step of this thread's generator.
    #[inline]
    fn next_event_id(&self) -> u64 {
        let mut state = self.rng_state();
        let id = Rng::span_id(&mut state);
        self.rng.set(state);
        id
    }

    /// The generator's state, seeded on first use (out of line and cold, so the common path
    /// falls through: one taken branch fewer per event).
    #[inline(always)]
    fn rng_state(&self) -> u64 {
        let state = self.rng.get();
        if state != 0 {
            state
        } else {
            first_rng_state()
        }
    }

    /// This thread's transaction id, drawn on first use (out of line and cold, as the
    /// generator's seed).
    #[inline]
    fn transaction_id(&self) -> u64 {
        let id = self.transaction.get();
        if id != 0 {
            return id;
        }
        self.first_transaction_id()
    }

    #[cold]
    #[inline(never)]
    fn first_transaction_id(&self) -> u64 {
        let id = NEXT_TRANSACTION.fetch_add(1, Ordering::Relaxed);
        self.transaction.set(id);
        id
    }

    /// A random trace id for a root event.
    #[inline]
    fn random_trace(&self) -> TraceId {
        let mut state = self.rng_state();
        let id = Rng::trace_id(&mut state);
        self.rng.set(state);
        id
    }

    /// The top frame ([`NO_FRAME`] on an empty stack), after dropping orphans.
    #[inline]
    fn current(&self) -> Frame {
        let orphaned = ORPHANED.load(Ordering::Relaxed);
        if orphaned != self.seen_orphaned.get() {
            self.claim_orphans(orphaned);
        }
        let len = self.len.get();
        if len == 0 {
            NO_FRAME
        } else if len <= DEPTH {
            self.frames[len - 1].get()
        } else {
            deep_top()
        }
    }

    #[cold]
    fn claim_orphans(&self, orphaned: usize) {
        self.seen_orphaned.set(orphaned);
        let mut orphans = ORPHANS.lock();
        orphans.retain(|&orphan| !self.remove(orphan));
    }

    #[inline]
    fn push(&self, frame: Frame) {
        let len = self.len.get();
        if len < DEPTH {
            self.frames[len].set(frame);
        } else if !deep_push(frame) {
            // The thread is exiting and its deep frames are gone: the frame is not recorded (its
            // removal will find nothing and be orphaned, harmlessly).
            return;
        }
        self.len.set(len + 1);
    }

    /// Removes the frame `key` wherever it is; false when it is not on this thread's stack.
    #[inline]
    fn remove(&self, key: u64) -> bool {
        let len = self.len.get();
        if len > 0 && len <= DEPTH && self.frames[len - 1].key.get() == key {
            self.len.set(len - 1);
            return true;
        }
        self.remove_inside(key)
    }

    /// [`Thread::remove`] of a frame that is not the top, or of a deep stack.
    #[cold]
    fn remove_inside(&self, key: u64) -> bool {
        let len = self.len.get();
        let inline = len.min(DEPTH);
        if len > DEPTH {
            let removed = DEEP
                .try_with(|deep| {
                    let mut deep = deep.borrow_mut();
                    let at = deep.iter().rposition(|f| f.key == key)?;
                    deep.remove(at);
                    Some(())
                })
                .ok()
                .flatten();
            if removed.is_some() {
                self.len.set(len - 1);
                return true;
            }
        }
        let Some(at) = (0..inline).rev().find(|&i| self.frames[i].key.get() == key) else {
            return false;
        };
        for i in at..inline - 1 {
            self.frames[i].set(self.frames[i + 1].get());
        }
        if len > DEPTH {
            // The bottom deep frame moves down into the freed cell.
            let bottom = DEEP
                .try_with(|deep| {
                    let mut deep = deep.borrow_mut();
                    (!deep.is_empty()).then(|| deep.remove(0))
                })
                .ok()
                .flatten();
            match bottom {
                Some(frame) => self.frames[DEPTH - 1].set(frame),
                // The deep frames are gone (thread exit): the stack is what the cells hold.
                None => {
                    self.len.set(DEPTH - 1);
                    return true;
                }
            }
        }
        self.len.set(len - 1);
        true
    }
}

/// A new generator's state, for a thread's first id.
#[cold]
#[inline(never)]
fn first_rng_state() -> u64 {
    Rng::seeded().state()
}

#[cold]
fn deep_push(frame: Frame) -> bool {
    DEEP.try_with(|deep| deep.borrow_mut().push(frame)).is_ok()
}

#[cold]
fn deep_top() -> Frame {
    DEEP.try_with(|deep| deep.borrow().last().copied())
        .ok()
        .flatten()
        .unwrap_or(NO_FRAME)
}

/// This thread's [`Thread`], through one inlined thread-local access.
///
/// `LocalKey::with` taking the whole of an event's start as its closure was not inlined into
/// `instrument`'s callers (an out-of-line call, and the key's accessor called through a pointer):
/// the closure here only takes the address, so the access inlines to a `%fs`-relative address.
#[inline(always)]
fn this_thread<'a>() -> &'a Thread {
    let thread: *const Thread = THREAD.with(std::ptr::from_ref);
    // SAFETY: `THREAD` is const-initialised and `Thread` has no destructor (`Cell`s of plain
    // values: checked by `thread_needs_no_drop` below), so its storage is this thread's static TLS
    // block, valid from the thread's start to its exit. `&Thread` is neither `Send` nor `Sync`
    // (`Cell`), so the reference stays on this thread, and every caller uses it only within the
    // call (tests: `ids_work_in_thread_local_destructors`, the stack tests below).
    unsafe { &*thread }
}

const _: () = assert!(!std::mem::needs_drop::<Thread>());

/// The ids of an event starting on this thread, in one thread-local access: a fresh event id, its
/// parent and trace id (from the current context; a random trace id for a root), and the
/// transaction id. With `enter`, the event becomes the thread's current event until [`leave`]
/// with its id. A local root decides its trace's sampling with the head sampler's `sample_below`.
/// Always inlined: out of line, an event's start paid a call and a copy of the returned ids.
#[inline(always)]
pub(crate) fn begin(enter: bool, sample_below: u64) -> Begun {
    let thread = this_thread();
    begin_under(thread, thread.current(), enter, sample_below)
}

/// As [`begin`], with an explicit parent context instead of the thread's current one.
#[inline(always)]
pub(crate) fn begin_in(parent: Frame, enter: bool, sample_below: u64) -> Begun {
    begin_under(this_thread(), parent, enter, sample_below)
}

/// An event's ids under `parent` (its trace, or a new random one for a root); with `enter`, the
/// event becomes the thread's current one. Its sampling decision is the parent's when made, else
/// (a local root) the head sampler's for the trace id (`sample_below`, see `sampling.rs`).
#[inline(always)]
fn begin_under(thread: &Thread, parent: Frame, enter: bool, sample_below: u64) -> Begun {
    // One load and one store of the generator's state for the event id and a root's trace id.
    let mut state = thread.rng_state();
    let id = Rng::span_id(&mut state);
    let trace = match TraceId::new(parent.trace) {
        Some(trace) => trace,
        None => Rng::trace_id(&mut state),
    };
    thread.rng.set(state);
    let sampled = if parent.flags & DECIDED != 0 {
        parent.flags & SAMPLED != 0
    } else {
        crate::sampling::decide(trace, sample_below)
    };
    if enter {
        thread.push(Frame {
            key: id,
            event: id,
            trace: trace.get(),
            flags: event_flags(sampled),
        });
    }
    Begun {
        id: EventId(id),
        parent: (parent.event != 0).then_some(EventId(parent.event)),
        trace,
        transaction: TransactionId(thread.transaction_id()),
        sampled,
        parent_remote: parent.flags & REMOTE != 0 && parent.event != 0,
    }
}

/// The frame flags of a local event whose trace is `sampled` or not.
#[inline(always)]
pub(crate) fn event_flags(sampled: bool) -> u8 {
    if sampled {
        DECIDED | SAMPLED
    } else {
        DECIDED
    }
}

/// A frame making `event` (0: none) of `trace` (0: none) current, to push or to start under,
/// with `flags` ([`DECIDED`], [`SAMPLED`], [`REMOTE`]).
#[inline]
pub(crate) fn frame(event: u64, trace: u128, flags: u8) -> Frame {
    Frame {
        key: 0,
        event,
        trace,
        flags,
    }
}

/// The event entered on this thread that is current (the top frame, when it is an entered event,
/// not an attached context); 0 when there is none.
#[inline]
pub(crate) fn current_entered_event() -> u64 {
    let thread = this_thread();
    let len = thread.len.get();
    if len == 0 {
        return 0;
    }
    let top = if len <= DEPTH {
        thread.frames[len - 1].get()
    } else {
        deep_top()
    };
    if top.key == top.event {
        top.event
    } else {
        0
    }
}

/// The current frame of this thread.
pub(crate) fn current() -> Frame {
    THREAD.with(Thread::current)
}

/// Makes the event `id` of `trace` (`sampled` or not) this thread's current event until
/// [`leave`] with `id`.
pub(crate) fn enter(id: EventId, trace: TraceId, sampled: bool) {
    THREAD.with(|thread| {
        thread.push(Frame {
            key: id.0,
            event: id.0,
            trace: trace.get(),
            flags: event_flags(sampled),
        })
    });
}

/// Makes `frame`'s event and trace current until [`leave`] with the returned key.
#[inline]
pub(crate) fn attach(frame: Frame) -> u64 {
    let thread = this_thread();
    let key = thread.next_event_id();
    thread.push(Frame { key, ..frame });
    key
}

/// Makes `frame`'s event and trace current until [`leave`] with `key`, a key drawn once
/// ([`next_event_id`]) by a scope that attaches the same frame around each poll; the caller
/// makes sure one key is on the stack at most once at a time.
#[inline]
pub(crate) fn attach_keyed(frame: Frame, key: u64) {
    this_thread().push(Frame { key, ..frame });
}

/// Events entered on one thread and finished on another, not yet dropped from their stack.
static ORPHANS: StaticMutex<Vec<u64>> = StaticMutex::new(Vec::new());
/// Bumped on every orphan: a thread looks at the list only when this moved since its last look,
/// so orphans of exited threads cost the others nothing.
static ORPHANED: AtomicUsize = AtomicUsize::new(0);
/// Orphans of threads that exited are never claimed; past this many the oldest are forgotten.
const MAX_ORPHANS: usize = 4096;

/// A fresh random event id (never 0).
pub(crate) fn next_event_id() -> u64 {
    THREAD.with(Thread::next_event_id)
}

/// A random trace id from this thread's generator.
pub(crate) fn random_trace_id() -> TraceId {
    THREAD.with(Thread::random_trace)
}

/// A random trace id and a fresh frame key from this thread's generator, in one access: what a
/// [`Scope`](crate::Scope) of a new trace needs.
#[inline]
pub(crate) fn random_trace_id_and_key() -> (TraceId, u64) {
    let thread = this_thread();
    let mut state = thread.rng_state();
    let trace = Rng::trace_id(&mut state);
    let key = Rng::span_id(&mut state);
    thread.rng.set(state);
    (trace, key)
}

/// The transaction id of the calling thread: unique per thread, stable for its lifetime, as AS::N's
/// instrumenter id.
///
/// This is *not* a request id: under an async runtime a worker thread runs many requests and one
/// request moves between worker threads. To tell which events belong to one request, use the
/// [`TraceId`] ([`Event::trace_id`](crate::Event::trace_id)): every event of a trace shares it
/// when the [`Context`](crate::Context) is carried into spawned work
/// ([`Instrument::in_current_context`](crate::Instrument::in_current_context)).
///
/// ```
/// let here = notify_core::context::transaction_id();
/// assert_eq!(here, notify_core::context::transaction_id());
/// let there = std::thread::spawn(notify_core::context::transaction_id).join().unwrap();
/// assert_ne!(here, there);
/// ```
#[inline]
pub fn transaction_id() -> TransactionId {
    TransactionId(this_thread().transaction_id())
}

/// The id of the current event of this thread (the innermost unfinished listened event, or the
/// event of an attached [`Context`](crate::Context)), if any: what a new event's parent id will be.
///
/// ```
/// assert_eq!(notify_core::context::current_event_id(), None);
/// ```
pub fn current_event_id() -> Option<EventId> {
    let event = current().event;
    (event != 0).then_some(EventId(event))
}

/// Removes the frame `key` from this thread's stack, wherever it is (events may finish out of
/// order). When it is not there — it was entered on another thread — it is orphaned for that
/// thread to drop, and the answer is `false`.
#[inline]
pub(crate) fn leave(key: u64) -> bool {
    let here = this_thread().remove(key);
    if !here {
        orphan(key);
    }
    here
}

#[cold]
fn orphan(key: u64) {
    let mut orphans = ORPHANS.lock();
    if orphans.len() == MAX_ORPHANS {
        orphans.remove(0);
    }
    orphans.push(key);
    ORPHANED.fetch_add(1, Ordering::Relaxed);
}

/// The frames on this thread's stack (tests).
#[cfg(test)]
fn depth() -> usize {
    THREAD.with(|thread| thread.len.get())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace() -> TraceId {
        TraceId::new(9).unwrap()
    }

    fn enter_sampled(id: EventId, trace: TraceId) {
        enter(id, trace, true);
    }

    /// Fake event ids far from the real ones, one range per test (tests share the orphan list).
    const A: u64 = 1 << 62;
    const B: u64 = A + 1000;
    const C: u64 = A + 2000;
    const D: u64 = A + 3000;

    #[test]
    fn out_of_order_and_cross_thread_finishes_leave_no_stale_current_event() {
        enter_sampled(EventId(A + 1), trace());
        enter_sampled(EventId(A + 2), trace());
        leave(A + 1);
        assert_eq!(current_event_id(), Some(EventId(A + 2)));
        leave(A + 2);
        assert_eq!(current_event_id(), None);
        enter_sampled(EventId(A + 3), trace());
        std::thread::spawn(|| leave(A + 3)).join().unwrap();
        assert_eq!(current_event_id(), None);
        assert_eq!(depth(), 0);
    }

    #[test]
    fn deep_nesting_beyond_the_cells_is_exact() {
        for id in B + 1..=B + 40 {
            enter_sampled(EventId(id), trace());
            assert_eq!(current_event_id(), Some(EventId(id)));
        }
        leave(B + 17);
        leave(B + 3);
        assert_eq!(current_event_id(), Some(EventId(B + 40)));
        for id in (B + 1..=B + 40).rev().filter(|&id| id != B + 17 && id != B + 3) {
            assert_eq!(current_event_id(), Some(EventId(id)));
            leave(id);
        }
        assert_eq!(current_event_id(), None);
        assert_eq!(depth(), 0);
    }

    #[test]
    fn a_middle_frame_removed_from_a_deep_stack_pulls_the_deep_frames_down() {
        for id in C + 1..=C + 20 {
            enter_sampled(EventId(id), trace());
        }
        leave(C + 5);
        // The cells now hold C+1..=C+4 and C+6..=C+17; the deep part C+18..=C+20.
        let mut expected: Vec<u64> = (C + 1..=C + 20).filter(|&id| id != C + 5).collect();
        while let Some(top) = expected.pop() {
            assert_eq!(current_event_id(), Some(EventId(top)));
            leave(top);
        }
        assert_eq!(current_event_id(), None);
    }

    #[test]
    fn attached_frames_mask_the_current_event() {
        enter_sampled(EventId(D + 7), trace());
        let key = attach(frame(0, 0, 0));
        assert_eq!(current_event_id(), None);
        let begun = begin(false, crate::sampling::ALWAYS);
        assert_eq!(begun.parent, None);
        assert_ne!(begun.trace, trace());
        leave(key);
        assert_eq!(current_event_id(), Some(EventId(D + 7)));
        let child = begin(false, crate::sampling::ALWAYS);
        assert_eq!((child.parent, child.trace), (Some(EventId(D + 7)), trace()));
        leave(D + 7);
    }

    /// `this_thread` hands out a reference into the thread's TLS block: it must stay valid for
    /// code that runs while the thread exits (another thread-local's destructor instrumenting).
    #[test]
    fn ids_work_in_thread_local_destructors() {
        type Seen = (EventId, Option<EventId>, u64, TransactionId);
        struct OnExit(std::sync::mpsc::Sender<Seen>);
        impl Drop for OnExit {
            fn drop(&mut self) {
                let outer = begin(true, crate::sampling::ALWAYS);
                let inner = begin(true, crate::sampling::ALWAYS);
                let current = current_entered_event();
                leave(inner.id.0);
                leave(outer.id.0);
                let _ = self.0.send((inner.id, inner.parent, current, transaction_id()));
            }
        }
        thread_local! {
            static ON_EXIT: RefCell<Option<OnExit>> = const { RefCell::new(None) };
        }
        let (send, receive) = std::sync::mpsc::channel();
        let transaction = std::thread::spawn(move || {
            ON_EXIT.with(|on_exit| *on_exit.borrow_mut() = Some(OnExit(send)));
            transaction_id()
        })
        .join()
        .unwrap();
        let (inner, parent, current, transaction_at_exit) = receive.recv().unwrap();
        assert!(parent.is_some_and(|p| p != inner && p.0 != 0));
        assert_eq!(current, inner.0);
        assert_eq!(transaction_at_exit, transaction);
    }

    #[test]
    fn event_ids_are_unique_across_threads() {
        let mut all: Vec<u64> = (0..4)
            .map(|_| std::thread::spawn(|| (0..3000).map(|_| next_event_id()).collect::<Vec<_>>()))
            .flat_map(|t| t.join().unwrap())
            .collect();
        all.extend((0..10).map(|_| next_event_id()));
        let n = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), n);
        assert!(!all.contains(&0));
    }
}
