//! Synchronisation primitives, swapped for `loom`'s under `--cfg loom` so the callsite protocol
//! can be model-checked. Every lock of the crate goes through here.
//!
//! Outside loom the locks are `std::sync`'s (futex-based on Linux) behind the interface the crate
//! uses: `lock()`, `read()` and `write()` return the guard.
//!
//! **Poisoning.** A `std` lock is poisoned when a thread panics while holding it. No lock of this
//! crate is held while a subscriber, its `Drop`, a failure hook or any other user code runs
//! (subscribers run on the snapshot, outside the writer lock; the registry's writer drops replaced
//! snapshots and removed subscribers after releasing it; the hook is cloned out of its lock and
//! then called), so hostile subscribers cannot poison them. These wrappers take a poisoned lock
//! anyway (`PoisonError::into_inner`), as `parking_lot`'s locks (used before) did: a panic inside
//! the crate under a lock would be a bug of the crate, and it must not turn every later subscribe,
//! unsubscribe or event of the process into a panic.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::AtomicU8;
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::AtomicU8;

#[cfg(not(loom))]
pub(crate) use self::std_locks::{Mutex, RwLock};

/// A `const`-constructible mutex for `static`s, which loom's mutex cannot be (the orphaned event
/// ids of `ids.rs`): `std`'s in every build.
pub(crate) type StaticMutex<T> = self::std_locks::Mutex<T>;

#[cfg_attr(loom, allow(dead_code))] // loom builds use only its Mutex (StaticMutex).
mod std_locks {
    use std::sync::{MutexGuard, PoisonError, RwLockReadGuard, RwLockWriteGuard};

    /// `std::sync::Mutex` whose `lock()` returns the guard, poisoned or not (module docs).
    #[derive(Debug, Default)]
    pub(crate) struct Mutex<T>(pub(super) std::sync::Mutex<T>);

    impl<T> Mutex<T> {
        pub(crate) const fn new(value: T) -> Mutex<T> {
            Mutex(std::sync::Mutex::new(value))
        }

        #[inline]
        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            self.0.lock().unwrap_or_else(PoisonError::into_inner)
        }
    }

    /// `std::sync::RwLock` whose `read()` and `write()` return the guards, poisoned or not.
    #[derive(Debug, Default)]
    pub(crate) struct RwLock<T>(pub(super) std::sync::RwLock<T>);

    impl<T> RwLock<T> {
        pub(crate) const fn new(value: T) -> RwLock<T> {
            RwLock(std::sync::RwLock::new(value))
        }

        #[inline]
        pub(crate) fn read(&self) -> RwLockReadGuard<'_, T> {
            self.0.read().unwrap_or_else(PoisonError::into_inner)
        }

        #[inline]
        pub(crate) fn write(&self) -> RwLockWriteGuard<'_, T> {
            self.0.write().unwrap_or_else(PoisonError::into_inner)
        }
    }
}

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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::{Mutex, RwLock};

    /// A thread that panics holding a lock poisons it; the next holder still gets it, with the
    /// value as the panicking thread left it.
    #[test]
    fn poisoned_locks_are_taken_anyway() {
        let mutex = Mutex::new(1);
        let rwlock = RwLock::new(2);
        std::thread::scope(|s| {
            let panicked = s.spawn(|| {
                let mut m = mutex.lock();
                let mut w = rwlock.write();
                *m = 10;
                *w = 20;
                panic!("poisoning both locks (expected by the test)");
            });
            assert!(panicked.join().is_err());
        });
        assert!(mutex.0.is_poisoned() && rwlock.0.is_poisoned());
        assert_eq!(*mutex.lock(), 10);
        assert_eq!(*rwlock.read(), 20);
        assert_eq!(*rwlock.write(), 20);
    }
}
