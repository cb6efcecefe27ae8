//! Which notify events came from tracing: the tracing -> notify layer marks its thread while it
//! starts, finishes or instruments an event, and the notify -> tracing subscriber skips what it
//! receives meanwhile, so with both directions installed nothing goes round twice.

use std::cell::Cell;

thread_local! {
    static PUBLISHING: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` marked as publishing from tracing (restored afterwards, also on panic).
pub(crate) fn publishing<T>(f: impl FnOnce() -> T) -> T {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            PUBLISHING.with(|p| p.set(self.0));
        }
    }
    let _restore = Restore(PUBLISHING.with(|p| p.replace(true)));
    f()
}

/// True while the tracing -> notify layer publishes on this thread.
pub(crate) fn is_publishing() -> bool {
    PUBLISHING.with(Cell::get)
}
