//! [`Callee`]: the subscriber a listener calls, as the address of the value itself.
//!
//! The delivery loops call one subscriber per listener per event edge. Calling through an
//! `Arc<dyn Trait>` recomputes the value's address on every call (it sits after the two counts, at
//! an offset that depends on the type's alignment, read from the vtable): about five instructions
//! per callback, a hundred per evented event of ten subscribers. A `Callee` is that address,
//! computed once when the listener set is resolved, so a call through it is a load of the vtable's
//! method and the call. What keeps the `Arc` alive is held beside it (a listener's subscription).

use std::ops::Deref;
use std::ptr::NonNull;
use std::sync::Arc;

/// A subscriber borrowed from an `Arc` that something beside it keeps alive.
pub(crate) struct Callee<T: ?Sized>(NonNull<T>);

impl<T: ?Sized> Callee<T> {
    /// The value of `subscriber`.
    ///
    /// # Safety
    ///
    /// The `Arc` that `subscriber` points into (this one or a clone of it) must outlive the
    /// `Callee`: its owner is kept beside it (a listener's subscription entry, or, for a silence
    /// group, the listener of the group's first member in the same listener set).
    #[inline]
    pub(crate) unsafe fn new(subscriber: &Arc<T>) -> Callee<T> {
        Callee(NonNull::from(&**subscriber))
    }
}

impl<T: ?Sized> Deref for Callee<T> {
    type Target = T;

    #[inline(always)]
    fn deref(&self) -> &T {
        // SAFETY: the `Arc` the pointer was taken from is alive as long as this `Callee` (the
        // obligation of `Callee::new`), and an `Arc`'s value is never moved nor mutably borrowed
        // while it is shared, so the pointer is valid and the shared borrow sound.
        unsafe { self.0.as_ref() }
    }
}

// SAFETY: a `Callee` is a shared reference in all but lifetime: sending or sharing it across
// threads is sending or sharing `&T`, sound when `T: Sync` (every subscriber trait requires
// `Send + Sync`). The `Arc` that keeps the value alive is itself `Send + Sync` for such `T`.
unsafe impl<T: ?Sized + Sync> Send for Callee<T> {}
// SAFETY: as for `Send`: `&Callee<T>` gives only `&T`.
unsafe impl<T: ?Sized + Sync> Sync for Callee<T> {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    trait Count: Send + Sync {
        fn count(&self);
    }

    struct Counting(Arc<AtomicUsize>, Arc<AtomicUsize>);

    impl Count for Counting {
        fn count(&self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    impl Drop for Counting {
        fn drop(&mut self) {
            self.1.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// A `Callee` reaches the very value of its `Arc` (of a type with a larger alignment than the
    /// counts', so at a non-trivial offset), from another thread, after every other handle but the
    /// kept `Arc` is gone; the value is dropped with that `Arc`, not before (a `Callee` owns nothing).
    #[test]
    fn a_callee_calls_the_value_its_kept_arc_owns() {
        #[repr(align(64))]
        struct Aligned(Counting);
        impl Count for Aligned {
            fn count(&self) {
                self.0.count();
            }
        }
        let (calls, drops) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let shared: Arc<dyn Count> = Arc::new(Aligned(Counting(calls.clone(), drops.clone())));
        let kept = shared.clone();
        // SAFETY: `kept` is moved beside the callee and dropped after it.
        let callee = unsafe { Callee::new(&shared) };
        assert!(std::ptr::addr_eq(&*callee, Arc::as_ptr(&shared)));
        drop(shared);
        std::thread::spawn(move || {
            callee.count();
            callee.count();
            assert_eq!(drops.load(Ordering::SeqCst), 0);
            drop(kept);
            assert_eq!(drops.load(Ordering::SeqCst), 1);
        })
        .join()
        .unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 2);
    }
}
