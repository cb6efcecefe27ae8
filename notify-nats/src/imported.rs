//! Which thread is republishing imported events: an [`Exporter`](crate::Exporter) does not export
//! them again. Without that, a process (or two) exporting and importing the same subjects would
//! send every event back and forth for ever.

use std::cell::Cell;

thread_local! {
    static IMPORTING: Cell<bool> = const { Cell::new(false) };
}

/// Runs `publish` (an importer's `publish_event` of one batch's events) marked as importing.
pub(crate) fn republishing<T>(publish: impl FnOnce() -> T) -> T {
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            IMPORTING.with(|importing| importing.set(self.0));
        }
    }
    let _reset = Reset(IMPORTING.with(|importing| importing.replace(true)));
    publish()
}

/// True while an importer republishes on this thread.
#[inline]
pub(crate) fn is_republishing() -> bool {
    IMPORTING.with(Cell::get)
}
