//! Synchronisation primitives, swapped for `loom`'s under `--cfg loom` so the mailbox and group
//! scheduling protocols can be model-checked.

/// A mutex with `parking_lot`'s interface (`lock()` returns the guard).
#[cfg(not(loom))]
pub(crate) type Mutex<T> = parking_lot::Mutex<T>;

#[cfg(loom)]
#[derive(Debug, Default)]
pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);

#[cfg(loom)]
impl<T> Mutex<T> {
    pub(crate) fn new(value: T) -> Mutex<T> {
        Mutex(loom::sync::Mutex::new(value))
    }

    pub(crate) fn lock(&self) -> loom::sync::MutexGuard<'_, T> {
        self.0.lock().unwrap()
    }
}
