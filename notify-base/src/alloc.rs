//! [`CountingAllocator`]: a global allocator wrapper that counts this thread's allocations, so
//! events can report [`Event::allocations`](crate::Event::allocations) (AS::N's `allocations`).

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};

static INSTALLED: AtomicBool = AtomicBool::new(false);

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

/// Wraps an allocator and counts the allocations of each thread. Install it as the global
/// allocator in your binary (not in a library):
///
/// ```
/// use notify_core::event::CountingAllocator;
///
/// #[global_allocator]
/// static GLOBAL: CountingAllocator<std::alloc::System> = CountingAllocator::new(std::alloc::System);
///
/// let before = notify_core::event::thread_allocations();
/// let v = vec![1_u8; 10];
/// # drop(v);
/// assert!(notify_core::event::thread_allocations() > before);
/// ```
///
/// Then event-object subscribers that ask for
/// [`EventOptions::allocations`](crate::EventOptions) get the count of allocations the block made
/// on its thread. The cost is one thread-local increment per allocation.
#[derive(Debug, Default)]
pub struct CountingAllocator<A> {
    inner: A,
}

impl<A> CountingAllocator<A> {
    /// Wraps `inner`.
    ///
    /// ```
    /// let _ = notify_core::event::CountingAllocator::new(std::alloc::System);
    /// ```
    pub const fn new(inner: A) -> CountingAllocator<A> {
        CountingAllocator { inner }
    }
}

fn count() {
    INSTALLED.store(true, Ordering::Relaxed);
    // `try_with`: the thread-local may already be destroyed while a thread exits.
    let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
}

// SAFETY: every method forwards to `inner`, a `GlobalAlloc`, with the caller's arguments
// unchanged, so `inner`'s guarantees are ours. Counting touches only a `const`-initialised
// thread-local `Cell<u64>` without a destructor, which never allocates (no re-entrancy into the
// allocator) and is skipped when the thread-local is gone. Exercised by
// tests/allocations.rs, which installs it as the global allocator.
unsafe impl<A: GlobalAlloc> GlobalAlloc for CountingAllocator<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: forwarded unchanged; the caller upholds `GlobalAlloc::alloc`'s contract.
        unsafe { self.inner.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: as above.
        unsafe { self.inner.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above; `ptr` came from `inner` since every allocation goes through it.
        unsafe { self.inner.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: as above.
        unsafe { self.inner.realloc(ptr, layout, new_size) }
    }
}

/// Allocations made so far by the calling thread, or `None` when no [`CountingAllocator`] is the
/// global allocator (nothing was ever counted).
///
/// ```
/// // In a binary without CountingAllocator:
/// # if false {
/// assert_eq!(notify_core::event::thread_allocations(), None);
/// # }
/// ```
pub fn thread_allocations() -> Option<u64> {
    if INSTALLED.load(Ordering::Relaxed) {
        ALLOCATIONS.try_with(Cell::get).ok()
    } else {
        None
    }
}
