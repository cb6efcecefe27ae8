//! The pool's locks and condition variables, swapped for `loom`'s under `--cfg loom` so the
//! mailbox, group, flush and parking protocols can be model-checked. Every lock of the crate goes
//! through this module. The interface is `parking_lot`'s: `lock()` returns the guard, a condition
//! variable waits on `&mut` guard.

#[cfg(not(loom))]
use std::time::Instant;

#[cfg(not(loom))]
pub(crate) use parking_lot::{Mutex, MutexGuard};

/// Atomics: `std`'s, or `loom`'s under `--cfg loom`.
pub(crate) mod atomic {
    #[cfg(loom)]
    pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
    #[cfg(not(loom))]
    pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
}

/// Parking and yielding: `std`'s, or `loom`'s under `--cfg loom` (the run queue's protocol).
pub(crate) mod thread {
    #[cfg(loom)]
    pub(crate) use loom::thread::{current, park, yield_now, Thread};
    #[cfg(not(loom))]
    pub(crate) use std::thread::{current, park, yield_now, Thread};
}

/// A condition variable with `parking_lot`'s interface.
#[cfg(not(loom))]
#[derive(Debug, Default)]
pub(crate) struct Condvar(parking_lot::Condvar);

#[cfg(not(loom))]
impl Condvar {
    pub(crate) fn new() -> Condvar {
        Condvar(parking_lot::Condvar::new())
    }

    pub(crate) fn wait<T>(&self, guard: &mut MutexGuard<'_, T>) {
        self.0.wait(guard);
    }

    /// Waits until notified or `deadline`; true when the deadline passed.
    pub(crate) fn wait_until<T>(&self, guard: &mut MutexGuard<'_, T>, deadline: Instant) -> bool {
        self.0.wait_until(guard, deadline).timed_out()
    }

    pub(crate) fn notify_all(&self) {
        self.0.notify_all();
    }
}

#[cfg(loom)]
#[allow(unused_imports)]
pub(crate) use self::model::{Condvar, Mutex, MutexGuard};

#[cfg(loom)]
mod model {
    use std::ops::{Deref, DerefMut};
    use std::time::Instant;

    #[derive(Debug, Default)]
    pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);

    /// Holds the guard in an `Option` so a condition variable can take it by value (loom's
    /// interface) from a `&mut` (parking_lot's).
    pub(crate) struct MutexGuard<'a, T>(Option<loom::sync::MutexGuard<'a, T>>);

    impl<T> Mutex<T> {
        pub(crate) fn new(value: T) -> Mutex<T> {
            Mutex(loom::sync::Mutex::new(value))
        }

        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            MutexGuard(Some(self.0.lock().unwrap()))
        }

        pub(crate) fn try_lock_until(&self, _deadline: Instant) -> Option<MutexGuard<'_, T>> {
            Some(self.lock())
        }

        pub(crate) fn get_mut(&mut self) -> &mut T {
            self.0.get_mut().unwrap()
        }
    }

    impl<T> Deref for MutexGuard<'_, T> {
        type Target = T;
        fn deref(&self) -> &T {
            self.0.as_ref().expect("guard held")
        }
    }

    impl<T> DerefMut for MutexGuard<'_, T> {
        fn deref_mut(&mut self) -> &mut T {
            self.0.as_mut().expect("guard held")
        }
    }

    #[derive(Debug, Default)]
    pub(crate) struct Condvar(loom::sync::Condvar);

    impl Condvar {
        pub(crate) fn new() -> Condvar {
            Condvar(loom::sync::Condvar::new())
        }

        pub(crate) fn wait<T>(&self, guard: &mut MutexGuard<'_, T>) {
            let held = guard.0.take().expect("guard held");
            guard.0 = Some(self.0.wait(held).unwrap());
        }

        /// loom has no clock: a timed wait is an untimed one (models use no deadlines).
        pub(crate) fn wait_until<T>(&self, guard: &mut MutexGuard<'_, T>, _deadline: Instant) -> bool {
            self.wait(guard);
            false
        }

        pub(crate) fn notify_all(&self) {
            self.0.notify_all();
        }
    }
}
