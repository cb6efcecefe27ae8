//! Synchronisation primitives, swapped for `loom`'s under `--cfg loom` so the callsite protocol
//! can be model-checked. Every lock of the crate goes through here, except the `static` list of
//! orphaned event ids in `ids.rs` (a `const` initialiser, which loom's mutex has not).

#[cfg(loom)]
pub(crate) use loom::sync::atomic::AtomicU8;
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::AtomicU8;

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

/// A reader-writer lock with `parking_lot`'s interface (`read()`/`write()` return the guards).
#[cfg(not(loom))]
pub(crate) type RwLock<T> = parking_lot::RwLock<T>;

#[cfg(loom)]
#[derive(Debug, Default)]
pub(crate) struct RwLock<T>(loom::sync::RwLock<T>);

#[cfg(loom)]
impl<T> RwLock<T> {
    pub(crate) fn new(value: T) -> RwLock<T> {
        RwLock(loom::sync::RwLock::new(value))
    }

    pub(crate) fn read(&self) -> loom::sync::RwLockReadGuard<'_, T> {
        self.0.read().unwrap()
    }

    pub(crate) fn write(&self) -> loom::sync::RwLockWriteGuard<'_, T> {
        self.0.write().unwrap()
    }
}
