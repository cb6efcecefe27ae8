//! The spans of synchronous events, kept on the thread that entered them.
//!
//! A synchronous event (the body of `instrument`, a started `Handle`) is its thread's current
//! event from its start, so its span is entered at start and kept in a per-thread stack, with no
//! lock and no hash map on the common path. tracing keeps entered spans per thread, so only the
//! thread that entered a span can exit it: when a handle finishes on another thread, that thread
//! leaves an [`Orphan`] (the event and its finished payload) in a global list, and the thread that
//! holds the span claims it at its next bridged start or finish: it records the fields the block
//! added, exits the span and closes it. A thread that exits first leaves its spans open.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicUsize, Ordering};

use notify_core::{event::EventId, Payload};
use parking_lot::Mutex;

use crate::open::Open;

/// A synchronous event's open span, on the thread that runs the event.
pub(crate) struct SyncOpen {
    /// The bridge (address of its shared state), so two bridges of one event keep apart.
    pub(crate) owner: usize,
    pub(crate) event: EventId,
    pub(crate) open: Open,
}

/// Synchronous events' spans kept per thread at most; past that the oldest is closed (a handle
/// started on this thread and never finished can leave one behind).
const MAX_SYNC: usize = 256;

/// This thread's spans, innermost last. At thread exit the spans still there are left open (see
/// its `Drop`).
struct SyncStack(Vec<SyncOpen>);

thread_local! {
    static SYNC: RefCell<SyncStack> = const { RefCell::new(SyncStack(Vec::new())) };
    /// The value of [`ORPHANED`] at this thread's last look at the orphans.
    static SEEN_ORPHANED: Cell<usize> = const { Cell::new(0) };
}

/// A synchronous event finished on another thread than the one holding its span.
struct Orphan {
    owner: usize,
    event: EventId,
    /// The payload at finish (the fields the block added are recorded from it).
    payload: Payload,
}

static ORPHANS: Mutex<Vec<Orphan>> = Mutex::new(Vec::new());
/// Bumped (under the lock) on every orphan: a thread looks at the list only when this moved since
/// its last look, so the common path costs one relaxed load.
static ORPHANED: AtomicUsize = AtomicUsize::new(0);
/// Orphans whose span no thread holds (it was evicted, or never made) are never claimed; past this
/// many the oldest are forgotten.
const MAX_ORPHANS: usize = 1024;

/// Keeps `entry`'s span on this thread (its span entered by the caller). When the stack is full
/// the oldest span is exited and closed (outside the borrow: both call into tracing, which may
/// bridge back into notify); left entered, tracing's registry would keep it open.
#[inline]
pub(crate) fn push(entry: SyncOpen) {
    // Moved into the stack through a reference: captured by value, the ~70 bytes were copied once
    // more into the closure, with 16-byte loads of the 8-byte stores just made.
    let mut entry = Some(entry);
    let kept = SYNC.try_with(|sync| {
        let mut sync = sync.borrow_mut();
        let evicted = (sync.0.len() >= MAX_SYNC).then(|| sync.0.remove(0));
        // Pushes the entry (an `Option`, always `Some` here).
        sync.0.extend(entry.take());
        evicted
    });
    if let Ok(Some(evicted)) = kept {
        evicted.open.exit();
    }
    // The thread is exiting (its stack is gone): the span is closed at once, exited first.
    if let Some(entry) = entry {
        entry.open.exit();
    }
}

/// Takes the span of `event` of bridge `owner` from this thread's stack.
pub(crate) fn take(owner: usize, event: EventId) -> Option<Open> {
    SYNC.try_with(|sync| {
        let mut sync = sync.borrow_mut();
        let at = sync.0.iter().rposition(|s| s.event == event && s.owner == owner)?;
        Some(sync.0.remove(at).open)
    })
    .ok()
    .flatten()
}

/// The tracing span id of `event` of bridge `owner`, when its span is on this thread's stack.
pub(crate) fn span_id(owner: usize, event: EventId) -> Option<tracing_core::span::Id> {
    SYNC.try_with(|sync| {
        let sync = sync.borrow();
        let open = sync.0.iter().rev().find(|s| s.event == event && s.owner == owner)?;
        open.open.span.id()
    })
    .ok()
    .flatten()
}

/// How many spans of bridge `owner` this thread's stack holds.
pub(crate) fn count(owner: usize) -> usize {
    SYNC.try_with(|sync| sync.borrow().0.iter().filter(|s| s.owner == owner).count())
        .unwrap_or(0)
}

/// Leaves the span of `event` of bridge `owner`, finished on this thread with `payload` but
/// entered on another, for the thread holding it.
#[cold]
pub(crate) fn orphan(owner: usize, event: EventId, payload: &Payload) {
    let mut orphans = ORPHANS.lock();
    if orphans.len() == MAX_ORPHANS {
        orphans.remove(0);
    }
    orphans.push(Orphan {
        owner,
        event,
        payload: payload.clone(),
    });
    // Inside the lock: a thread that sees this value and then takes the lock sees the push.
    ORPHANED.fetch_add(1, Ordering::Relaxed);
}

/// Finishes the spans on this thread's stack whose events finished on other threads: one relaxed
/// load when there are none.
#[inline]
pub(crate) fn claim_orphans() {
    let orphaned = ORPHANED.load(Ordering::Relaxed);
    if SEEN_ORPHANED.try_with(Cell::get).is_ok_and(|seen| seen != orphaned) {
        claim_orphans_slow(orphaned);
    }
}

#[cold]
#[inline(never)]
fn claim_orphans_slow(orphaned: usize) {
    let _ = SEEN_ORPHANED.try_with(|seen| seen.set(orphaned));
    let claimed = SYNC
        .try_with(|sync| claim(&mut sync.borrow_mut().0))
        .unwrap_or_default();
    // Outside the borrow: recording and exiting call into tracing.
    for (open, payload) in claimed {
        open.finish(&payload, true);
    }
}

/// Removes from `spans` those with an orphan, and the orphans from the list.
fn claim(spans: &mut Vec<SyncOpen>) -> Vec<(Open, Payload)> {
    let mut claimed = Vec::new();
    if spans.is_empty() {
        return claimed;
    }
    let mut orphans = ORPHANS.lock();
    let mut i = 0;
    while i < orphans.len() {
        let orphan = &orphans[i];
        match spans
            .iter()
            .rposition(|s| s.event == orphan.event && s.owner == orphan.owner)
        {
            Some(at) => {
                let open = spans.remove(at).open;
                claimed.push((open, orphans.remove(i).payload));
            }
            None => i += 1,
        }
    }
    claimed
}

impl Drop for SyncStack {
    /// The thread is exiting with spans still entered (handles started here and not finished, or
    /// finished elsewhere after this thread's last bridged event). They are left open, never
    /// exited or closed: by now tracing's layers may have lost their own thread-locals (the fmt
    /// layer's buffer), and exiting or closing a span here panicked inside them — an abort under
    /// `panic = "abort"`. Dropping them while entered is no better: tracing-subscriber's fmt layer
    /// asserts on a span closed while entered (debug builds), and a panic in a thread-local's
    /// destructor aborts. A span left open costs its registry slot, once per such thread.
    fn drop(&mut self) {
        for span in self.0.drain(..) {
            std::mem::forget(span);
        }
    }
}
