//! Work an owned subscriber defers to the end of a fan-out: [`defer_to_fanout_end`].
//!
//! When an event reaches owned subscribers ([`OwnedEventSubscriber`]), dispatch hands the shared
//! event to each of them in one loop on the publishing thread. A subscriber that forwards events
//! somewhere (a worker pool's run queue, a channel, a socket) can collect what it would send per
//! event and send it once, after the loop: notify-pool schedules the mailboxes that became ready
//! during one fan-out as one batch, under one lock, instead of one by one.
//!
//! The cost is two thread-local accesses per fan-out that has owned subscribers (none for the
//! other kinds), plus the calls registered.
//!
//! [`OwnedEventSubscriber`]: crate::OwnedEventSubscriber

use std::cell::Cell;

/// How many distinct functions one fan-out can defer; [`defer_to_fanout_end`] returns false
/// beyond.
const SLOTS: usize = 4;

/// The functions deferred on one thread, in the order they were first deferred.
type Calls = [Option<fn()>; SLOTS];

/// This thread's fan-outs in progress and what runs when the outermost one ends.
struct Deferred {
    /// Owned fan-outs in progress on this thread (nested when an owned subscriber instruments).
    depth: Cell<u32>,
    calls: Cell<Calls>,
}

thread_local! {
    static DEFERRED: Deferred = const {
        Deferred {
            depth: Cell::new(0),
            calls: Cell::new([None; SLOTS]),
        }
    };
}

/// Asks for `flush` to be called on this thread when the owned-event fan-out in progress ends:
/// after the event was handed to every owned subscriber of its name, before the call that
/// published it returns (also when a subscriber panicked). A function deferred several times
/// during one fan-out is called once. Nested fan-outs (an owned subscriber that instruments) run
/// what was deferred when the outermost one ends.
///
/// Returns `false`, and registers nothing, when no owned fan-out is in progress on this thread
/// (say, `deliver` was called directly) or four other functions are already deferred: the caller
/// must then do its work at once. `flush` runs outside any fan-out: a deferral made from it
/// returns `false`.
///
/// ```
/// use notify_core::{Event, Notifier, OwnedEventSubscriber, Payload, Subscriber, __private::defer_to_fanout_end};
/// use std::cell::RefCell;
/// use std::sync::{mpsc, Arc, Mutex};
///
/// thread_local! { static BATCH: RefCell<Vec<Arc<Event>>> = const { RefCell::new(Vec::new()) }; }
/// static SINK: Mutex<Option<mpsc::Sender<Vec<Arc<Event>>>>> = Mutex::new(None);
///
/// fn send_batch() {
///     let batch = BATCH.with(|b| std::mem::take(&mut *b.borrow_mut()));
///     if let Some(tx) = SINK.lock().unwrap().as_ref() { let _ = tx.send(batch); }
/// }
///
/// struct Batched;
/// impl OwnedEventSubscriber for Batched {
///     fn deliver(&self, event: &Arc<Event>) {
///         BATCH.with(|b| b.borrow_mut().push(event.clone()));
///         if !defer_to_fanout_end(send_batch) {
///             send_batch();
///         }
///     }
/// }
///
/// let (tx, rx) = mpsc::channel();
/// *SINK.lock().unwrap() = Some(tx);
/// let notifier = Notifier::new();
/// for _ in 0..3 {
///     notifier.subscribe("x", Subscriber::owned(Batched));
/// }
/// notifier.instrument("x", Payload::new, |_| ());
/// assert_eq!(rx.try_recv().unwrap().len(), 3, "one batch for the three subscribers");
/// assert!(rx.try_recv().is_err());
/// assert!(!defer_to_fanout_end(send_batch), "no fan-out in progress here");
/// ```
pub fn defer_to_fanout_end(flush: fn()) -> bool {
    DEFERRED.with(|d| {
        if d.depth.get() == 0 {
            return false;
        }
        let mut calls = d.calls.get();
        for slot in &mut calls {
            match slot {
                Some(f) if std::ptr::fn_addr_eq(*f, flush) => return true,
                Some(_) => {}
                None => {
                    *slot = Some(flush);
                    d.calls.set(calls);
                    return true;
                }
            }
        }
        false
    })
}

/// One owned fan-out in progress on this thread; the outermost runs the deferred calls when
/// dropped (also when unwinding).
pub(crate) struct FanoutScope(());

impl FanoutScope {
    #[inline]
    pub(crate) fn enter() -> FanoutScope {
        DEFERRED.with(|d| d.depth.set(d.depth.get() + 1));
        FanoutScope(())
    }
}

impl Drop for FanoutScope {
    #[inline]
    fn drop(&mut self) {
        let calls = DEFERRED.with(|d| {
            let depth = d.depth.get() - 1;
            d.depth.set(depth);
            if depth == 0 {
                d.calls.replace([None; SLOTS])
            } else {
                [None; SLOTS]
            }
        });
        for call in calls.into_iter().map_while(|c| c) {
            call();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    thread_local! { static LOG: RefCell<Vec<&'static str>> = const { RefCell::new(Vec::new()) }; }

    fn a() {
        LOG.with(|l| l.borrow_mut().push("a"));
        assert!(!defer_to_fanout_end(b), "a deferred call runs outside any fan-out");
    }
    fn b() {
        LOG.with(|l| l.borrow_mut().push("b"));
    }
    fn c() {}
    fn d() {}
    fn e() {}

    #[test]
    fn deferred_calls_run_once_at_the_outermost_end_in_order() {
        assert!(!defer_to_fanout_end(a), "outside a fan-out");
        {
            let _outer = FanoutScope::enter();
            assert!(defer_to_fanout_end(a));
            {
                let _inner = FanoutScope::enter();
                assert!(defer_to_fanout_end(b));
                assert!(defer_to_fanout_end(a), "already deferred: once");
            }
            assert!(LOG.with(|l| l.borrow().is_empty()), "nothing runs at a nested end");
            assert!(defer_to_fanout_end(c));
            assert!(defer_to_fanout_end(d));
            assert!(!defer_to_fanout_end(e), "four slots");
        }
        assert_eq!(LOG.with(|l| l.borrow().clone()), ["a", "b"]);
        {
            let _again = FanoutScope::enter();
        }
        assert_eq!(LOG.with(|l| l.borrow().len()), 2, "the slots were emptied");
    }

    #[test]
    fn deferred_calls_run_when_the_fanout_unwinds() {
        let caught = std::panic::catch_unwind(|| {
            let _scope = FanoutScope::enter();
            assert!(defer_to_fanout_end(b));
            panic!("a subscriber escaped");
        });
        assert!(caught.is_err());
        assert_eq!(LOG.with(|l| l.borrow().clone()), ["b"]);
        assert!(!defer_to_fanout_end(b), "depth back to 0");
    }
}
