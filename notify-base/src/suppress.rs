//! Telemetry suppression: marks a thread, or a scope on it, whose own logs and traces must not
//! become notify events, as OpenTelemetry's `Context::enter_telemetry_suppressed_scope` does for
//! its SDK's threads.
//!
//! The problem it solves is a feedback loop: an exporter (notify-nats') subscribed to every event
//! runs a client library that logs through `tracing` or `log`; with the tracing -> notify bridge
//! installed, those records become notify events, which the exporter exports, which makes the
//! library log again, forever. The exporter marks its threads suppressed, and the bridges
//! (notify-tracing's `NotifyLayer` and `NotifyLogger`) ignore spans, events and records made on a
//! suppressed thread.
//!
//! Only the bridges read the mark: notify's own `instrument`, `publish` and subscribers do not
//! look at it (it costs the instrumenting fast path nothing), so events instrumented directly
//! with notify on a suppressed thread are still delivered.

use std::cell::Cell;
use std::marker::PhantomData;

thread_local! {
    static SUPPRESSED: Cell<bool> = const { Cell::new(false) };
}

/// True when telemetry is suppressed on the calling thread: inside a
/// [`suppress_telemetry`] scope, or on a thread marked by
/// [`suppress_telemetry_on_this_thread`]. Bridges from other telemetry APIs into notify check it
/// and drop what is made while it holds. One thread-local read.
///
/// ```
/// assert!(!notify_core::suppression::is_telemetry_suppressed());
/// let scope = notify_core::suppression::suppress_telemetry();
/// assert!(notify_core::suppression::is_telemetry_suppressed());
/// drop(scope);
/// assert!(!notify_core::suppression::is_telemetry_suppressed());
/// ```
#[inline]
pub fn is_telemetry_suppressed() -> bool {
    SUPPRESSED.with(Cell::get)
}

/// Suppresses telemetry on the calling thread until the returned guard drops, then restores what
/// was there before (scopes nest; the guard cannot leave the thread). The notify counterpart of
/// OpenTelemetry's `Context::enter_telemetry_suppressed_scope`: use it around work that would
/// otherwise feed its own logs back into notify (an exporter's network calls).
///
/// ```
/// use notify_core::suppression::{is_telemetry_suppressed, suppress_telemetry};
/// {
///     let _outer = suppress_telemetry();
///     {
///         let _inner = suppress_telemetry();
///     }
///     assert!(is_telemetry_suppressed(), "the inner scope restores the outer one");
/// }
/// assert!(!is_telemetry_suppressed());
/// ```
#[must_use = "telemetry is suppressed only while the guard lives"]
pub fn suppress_telemetry() -> SuppressionGuard {
    SuppressionGuard {
        previous: SUPPRESSED.with(|s| s.replace(true)),
        _not_send: PhantomData,
    }
}

/// Suppresses telemetry on the calling thread for the rest of its life. For threads that do
/// nothing but deliver telemetry: an exporter's own thread, its async runtime's worker threads
/// (`tokio::runtime::Builder::on_thread_start(notify_core::suppression::suppress_telemetry_on_this_thread)`).
///
/// ```
/// std::thread::spawn(|| {
///     notify_core::suppression::suppress_telemetry_on_this_thread();
///     assert!(notify_core::suppression::is_telemetry_suppressed());
/// })
/// .join()
/// .unwrap();
/// assert!(!notify_core::suppression::is_telemetry_suppressed(), "only the thread that asked");
/// ```
pub fn suppress_telemetry_on_this_thread() {
    SUPPRESSED.with(|s| s.set(true));
}

/// The guard of [`suppress_telemetry`]: telemetry is suppressed on its thread until
/// it drops. Not `Send`: the mark belongs to the thread that made it.
#[derive(Debug)]
pub struct SuppressionGuard {
    previous: bool,
    _not_send: PhantomData<*const ()>,
}

impl Drop for SuppressionGuard {
    /// Restores the thread's mark as it was when the scope was entered.
    fn drop(&mut self) {
        SUPPRESSED.with(|s| s.set(self.previous));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suppress_scopes_nest_and_restore_and_stay_on_their_thread() {
        assert!(!is_telemetry_suppressed());
        let outer = suppress_telemetry();
        assert!(is_telemetry_suppressed());
        // Another thread is not suppressed by this one's scope.
        assert!(!std::thread::spawn(is_telemetry_suppressed).join().unwrap());
        let inner = suppress_telemetry();
        drop(inner);
        assert!(
            is_telemetry_suppressed(),
            "dropping the inner scope keeps the outer one"
        );
        drop(outer);
        assert!(!is_telemetry_suppressed());
    }

    #[test]
    fn suppress_for_a_thread_lasts_and_a_scope_inside_it_restores_it() {
        let marked = std::thread::spawn(|| {
            suppress_telemetry_on_this_thread();
            drop(suppress_telemetry());
            is_telemetry_suppressed()
        })
        .join()
        .unwrap();
        assert!(marked);
        assert!(!is_telemetry_suppressed());
    }

    #[test]
    fn suppress_scope_is_restored_when_a_panic_unwinds_through_it() {
        let caught = std::panic::catch_unwind(|| {
            let _scope = suppress_telemetry();
            panic!("inside the scope");
        });
        assert!(caught.is_err());
        assert!(!is_telemetry_suppressed());
    }
}
