//! Catching panics of user code (callbacks, hooks) so that nothing unwinds into a worker.
//!
//! A caught panic's payload is a `Box<dyn Any + Send>` that runs user code when dropped: a payload
//! whose `Drop` panics in turn (`std::panic::panic_any(Bomb)`) would unwind out of the code that
//! drops it. [`drop_payload`] drops it inside another `catch_unwind`, and forgets the second
//! payload if that panics too (leaking it is the only safe thing left to do with it).

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Drops a caught panic's payload; a panic while dropping it is caught, and its own payload
/// forgotten.
pub(crate) fn drop_payload(payload: Box<dyn Any + Send>) {
    if let Err(second) = catch_unwind(AssertUnwindSafe(move || drop(payload))) {
        std::mem::forget(second);
    }
}

/// Runs `f`, which drops user values (a subscriber whose `Drop` may panic); a panic is caught
/// and its message returned (its payload dropped safely). `None` when `f` returned.
pub(crate) fn drop_caught(f: impl FnOnce()) -> Option<String> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(()) => None,
        Err(payload) => {
            let message = quietly(|| notify_core::failure::panic_message(&*payload))
                .unwrap_or_else(|| "<unprintable panic payload>".to_owned());
            drop_payload(payload);
            Some(message)
        }
    }
}

/// Runs `f`; a panic is caught and its payload dropped safely. `None` when `f` panicked.
pub(crate) fn quietly<R>(f: impl FnOnce() -> R) -> Option<R> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(value) => Some(value),
        Err(payload) => {
            drop_payload(payload);
            None
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// A panic payload whose `Drop` panics.
    struct Bomb;

    impl Drop for Bomb {
        fn drop(&mut self) {
            panic!("bomb payload dropped");
        }
    }

    #[test]
    fn pool_payload_that_panics_when_dropped_is_contained() {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let caught = quietly(|| std::panic::panic_any(Bomb));
        std::panic::set_hook(previous);
        assert!(caught.is_none());
        assert_eq!(quietly(|| 7), Some(7));
    }
}
