//! The snapshot pin of `instrument`: a hazard pointer per thread, one atomic read-modify-write
//! per event.
//!
//! An event borrows its listener set from the registry snapshot that was current when it started,
//! so the snapshot must outlive the event even if a writer replaces it meanwhile. `arc-swap`'s
//! guard does that with two read-modify-writes per event (taking a debt slot and giving it back,
//! about 5.5 ns each on this kind of machine, 12 ns with the rest of its load) and some 70
//! instructions. Here each thread has one [`Slot`] whose `hazard` names the snapshot it uses:
//!
//! * **Pin** (reader): load the current snapshot `p` from the [`Mirror`], store it into the
//!   thread's hazard, a `SeqCst` fence (the one locked instruction: on x86-64 as costly as one
//!   read-modify-write, 5.8 ns here), then load the mirror again: if it still holds `p`, `p` is
//!   pinned; else retry.
//! * **Unpin** (reader): a plain `Release` store of null into the hazard, then a `Relaxed` look at
//!   the slot's `pending` flag: set when a writer handed this thread snapshots to drop.
//! * **Retire** (writer, after storing the new snapshot into the mirror, outside the registry's
//!   writer lock): a `SeqCst` fence, then scan every thread's hazard for the old snapshot (a
//!   list that only grows, read without a lock). A thread that holds it is given a strong reference to
//!   drop when it unpins (its `retired` list, then `pending`); the writer drops its own reference.
//!   The last one dropped frees the snapshot: at once when nobody uses it.
//!
//! **Why nobody uses a freed snapshot.** The two `SeqCst` fences, the reader's (between its hazard
//! store and its second mirror load) and the writer's (between its mirror swap and its hazard
//! load), are ordered one way or the other. If the reader's comes first, the writer's hazard load
//! sees `p` (or a later value of that thread), and a writer that sees `p` hands a reference over
//! instead of freeing it. If the writer's comes first, the reader's second mirror load sees the
//! new snapshot (or a later one), not `p`, and the reader retries without using `p`. (Fences
//! rather than `SeqCst` accesses: loom models `SeqCst` fences exactly and `SeqCst` accesses only
//! as `AcqRel`; the model `loom_model_hazard_pin_and_retire` checks this protocol.) A hazard may
//! name an address freed and reused (a reader about to retry): a writer that finds it there only
//! hands over one reference too many, dropped at that thread's next unpin.
//!
//! **When a replaced snapshot is dropped.** At once when no thread uses it; else when the last
//! event that uses it ends. One race is left open on purpose, to keep the unpin a plain store: a
//! writer that hands a snapshot over while its reader is unpinning may see the hazard before the
//! reader's store reaches it, and the reader may have looked at `pending` before the writer set it.
//! The writer then looks at the hazard once more after setting `pending` and takes its reference
//! back if the reader is gone; in the window that remains (the reader's store still in its core's
//! store buffer, a few dozen cycles) the reference waits for that thread's next unpin or its exit.
//! It is never leaked and never freed early.
//!
//! A thread pins one snapshot at a time: an event inside an event (a subscriber that instruments)
//! finds its slot busy, and the caller falls back to `arc-swap` (as it does during thread exit,
//! when the thread's slot is gone).

use std::marker::PhantomData;
use std::ptr;
use std::sync::Arc;

#[cfg(loom)]
use loom::sync::atomic::{fence, AtomicBool, AtomicPtr, Ordering};
#[cfg(not(loom))]
use std::sync::atomic::{fence, AtomicBool, AtomicPtr, Ordering};

use crate::sync::Mutex;

/// The current value of a registry's snapshot as a raw pointer, which readers pin through their
/// [`Slot`]. It borrows the value: the caller keeps the `Arc` it was made from alive until it
/// replaces it (the fanout's `ArcSwap` holds the same value). Writers replace it under their own
/// lock.
pub(crate) struct Mirror<T> {
    current: AtomicPtr<T>,
}

impl<T> Mirror<T> {
    /// A mirror of `value`, which the caller keeps alive as long as it is the mirror's value.
    pub(crate) fn new(value: &Arc<T>) -> Mirror<T> {
        Mirror {
            current: AtomicPtr::new(Arc::as_ptr(value).cast_mut()),
        }
    }

    /// Makes `next` current. The caller then hands its reference to the value replaced (still
    /// alive: the caller holds it) to [`Registry::retire`], outside its own locks (the drop may
    /// run user code). Writers call it one at a time.
    pub(crate) fn replace(&self, next: &Arc<T>) {
        self.current.store(Arc::as_ptr(next).cast_mut(), Ordering::Release);
    }
}

/// One thread's hazard and what writers handed it.
pub(crate) struct Slot<T> {
    hazard: AtomicPtr<T>,
    pending: AtomicBool,
    retired: Mutex<Vec<Arc<T>>>,
}

impl<T> Slot<T> {
    fn new() -> Slot<T> {
        Slot {
            hazard: AtomicPtr::new(ptr::null_mut()),
            pending: AtomicBool::new(false),
            retired: Mutex::new(Vec::new()),
        }
    }

    /// Pins the current value of `mirror`; `None` when this slot already pins one (the caller
    /// falls back to another way of reading).
    #[inline]
    pub(crate) fn pin<'a>(&'a self, mirror: &'a Mirror<T>) -> Option<Pin<'a, T>> {
        if !self.hazard.load(Ordering::Relaxed).is_null() {
            return None;
        }
        let mut p = mirror.current.load(Ordering::Acquire);
        loop {
            self.hazard.store(p, Ordering::Relaxed);
            fence(Ordering::SeqCst);
            let confirm = mirror.current.load(Ordering::Acquire);
            if confirm == p {
                return Some(Pin {
                    slot: self,
                    value: p,
                    _not_send: PhantomData,
                });
            }
            p = confirm;
        }
    }

    /// The values handed to this slot that it does not use now, taken out to be dropped.
    fn collect(&self) -> Vec<Arc<T>> {
        self.pending.store(false, Ordering::Relaxed);
        let in_use = self.hazard.load(Ordering::Acquire);
        let mut retired = self.retired.lock();
        let mut free = Vec::new();
        let mut i = 0;
        while i < retired.len() {
            if ptr::eq(Arc::as_ptr(&retired[i]), in_use) {
                i += 1;
            } else {
                free.push(retired.swap_remove(i));
            }
        }
        free
    }
}

/// A pinned value: valid until the pin is dropped, on the thread that pinned it.
pub(crate) struct Pin<'a, T> {
    slot: &'a Slot<T>,
    value: *const T,
    _not_send: PhantomData<*const ()>,
}

impl<T> std::ops::Deref for Pin<'_, T> {
    type Target = T;

    #[inline(always)]
    fn deref(&self) -> &T {
        // SAFETY: the hazard names `value` until this pin is dropped, and the module's protocol
        // (its docs) keeps a value named by a hazard from being freed.
        unsafe { &*self.value }
    }
}

impl<T> Drop for Pin<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.slot.hazard.store(ptr::null_mut(), Ordering::Release);
        if self.slot.pending.load(Ordering::Relaxed) {
            drop_all(self.slot.collect());
        }
    }
}

#[cold]
#[inline(never)]
fn drop_all<T>(values: Vec<Arc<T>>) {
    drop(values);
}

/// A slot of the registry's list, with whether a thread owns it.
struct Node<T> {
    slot: Slot<T>,
    in_use: AtomicBool,
    /// The node pushed before this one (set once, before the node is published).
    next: *const Node<T>,
}

/// Every thread's slot, for writers to scan: a list that only grows (a thread that exits frees
/// its slot for the next thread), so scanning it takes no lock and touches no reference count:
/// a few loads per thread that ever pinned. Its nodes are freed with the registry (the process'
/// registry is a `static`: never).
pub(crate) struct Registry<T> {
    head: AtomicPtr<Node<T>>,
}

// SAFETY: the nodes are shared between threads only through `&Slot` (atomics and a mutex) and the
// list's immutable `next` pointers; a `Registry` of `T: Send + Sync` values is as shareable as the
// `Arc<T>`s its slots hold.
unsafe impl<T: Send + Sync> Send for Registry<T> {}
// SAFETY: as for `Send`.
unsafe impl<T: Send + Sync> Sync for Registry<T> {}

impl<T> Registry<T> {
    #[cfg(not(loom))]
    pub(crate) const fn new() -> Registry<T> {
        Registry {
            head: AtomicPtr::new(ptr::null_mut()),
        }
    }

    #[cfg(loom)]
    pub(crate) fn new() -> Registry<T> {
        Registry {
            head: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// The nodes, newest first.
    fn nodes(&self) -> impl Iterator<Item = &Node<T>> {
        let mut at = self.head.load(Ordering::Acquire).cast_const();
        std::iter::from_fn(move || {
            // SAFETY: nodes are published (Release, with `next` set before) and never freed
            // before the registry, which `&self` borrows.
            let node = unsafe { at.as_ref()? };
            at = node.next;
            Some(node)
        })
    }

    /// A slot for the calling thread, scanned by writers until [`Registry::remove`]: a freed one
    /// when there is one, else a new one.
    pub(crate) fn add(&self) -> &Slot<T> {
        for node in self.nodes() {
            if node
                .in_use
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return &node.slot;
            }
        }
        let node = Box::into_raw(Box::new(Node {
            slot: Slot::new(),
            in_use: AtomicBool::new(true),
            next: ptr::null(),
        }));
        let mut head = self.head.load(Ordering::Relaxed);
        loop {
            // SAFETY: `node` is ours until the exchange below publishes it.
            unsafe { (*node).next = head };
            match self
                .head
                .compare_exchange(head, node, Ordering::Release, Ordering::Relaxed)
            {
                // SAFETY: published nodes live as long as the registry.
                Ok(_) => return unsafe { &(*node).slot },
                Err(now) => head = now,
            }
        }
    }

    /// Frees `slot` for another thread (its thread exits) and drops what was handed to it.
    /// `slot` must come from this registry's [`Registry::add`] and pin nothing.
    pub(crate) fn remove(&self, slot: &Slot<T>) {
        drop(slot.collect());
        if let Some(node) = self.nodes().find(|node| ptr::eq(&node.slot, slot)) {
            node.in_use.store(false, Ordering::Release);
        }
    }

    /// Drops `old` (the value a [`Mirror::replace`] just replaced) unless some thread still pins
    /// it; such a thread gets a reference to drop when it unpins. Call with no lock of the caller
    /// held.
    pub(crate) fn retire(&self, old: Arc<T>) {
        let at = Arc::as_ptr(&old).cast_mut();
        let mut free = Vec::new();
        // Orders the mirror's store (before this call) before the hazard loads: see the docs.
        fence(Ordering::SeqCst);
        for node in self.nodes() {
            let slot = &node.slot;
            if slot.hazard.load(Ordering::Relaxed) != at {
                continue;
            }
            slot.retired.lock().push(old.clone());
            slot.pending.store(true, Ordering::Relaxed);
            fence(Ordering::SeqCst);
            if slot.hazard.load(Ordering::Relaxed) != at {
                // The reader unpinned meanwhile and may not have seen `pending`.
                free.extend(slot.collect());
            }
        }
        drop(free);
        drop(old);
    }
}

impl<T> Drop for Registry<T> {
    fn drop(&mut self) {
        let mut at = self.head.load(Ordering::Relaxed);
        while !at.is_null() {
            // SAFETY: `&mut self`: no slot is borrowed any more; each node was made by
            // `Box::into_raw` in `add` and is freed once here.
            let node = unsafe { Box::from_raw(at) };
            at = node.next.cast_mut();
        }
    }
}

/// A value and its mirror, as the fanout keeps them (its `ArcSwap` and its `Mirror`): what the
/// tests and the loom model replace.
#[cfg(test)]
struct Current<T> {
    value: Mutex<Arc<T>>,
    mirror: Mirror<T>,
}

#[cfg(test)]
impl<T> Current<T> {
    fn new(value: Arc<T>) -> Current<T> {
        let mirror = Mirror::new(&value);
        Current {
            value: Mutex::new(value),
            mirror,
        }
    }

    /// Makes `next` current; returns the value replaced, for `Registry::retire`.
    fn replace(&self, next: Arc<T>) -> Arc<T> {
        let mut value = self.value.lock();
        self.mirror.replace(&next);
        std::mem::replace(&mut *value, next)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    struct Counted(usize, Arc<AtomicUsize>);

    impl Drop for Counted {
        fn drop(&mut self) {
            self.1.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// A replaced value is dropped at once when nobody pins it, when its last pin goes when
    /// somebody does, and a second pin on a busy slot is refused; a removed slot is reused.
    #[test]
    fn a_replaced_value_is_dropped_by_its_last_user() {
        let drops = Arc::new(AtomicUsize::new(0));
        let registry = Registry::new();
        let (mine, other) = (registry.add(), registry.add());
        let current = Current::new(Arc::new(Counted(0, drops.clone())));
        registry.retire(current.replace(Arc::new(Counted(1, drops.clone()))));
        assert_eq!(drops.load(Ordering::SeqCst), 1);
        let pin = mine.pin(&current.mirror).expect("a free slot");
        assert_eq!(pin.0, 1);
        assert!(mine.pin(&current.mirror).is_none());
        let also = other.pin(&current.mirror).expect("another thread's slot");
        registry.retire(current.replace(Arc::new(Counted(2, drops.clone()))));
        assert_eq!((pin.0, also.0, drops.load(Ordering::SeqCst)), (1, 1, 1));
        drop(pin);
        assert_eq!(drops.load(Ordering::SeqCst), 1);
        drop(also);
        assert_eq!(drops.load(Ordering::SeqCst), 2);
        assert_eq!(mine.pin(&current.mirror).map(|p| p.0), Some(2));
        registry.remove(mine);
        assert!(std::ptr::eq(registry.add(), mine), "a freed slot is reused");
        registry.remove(mine);
        registry.remove(other);
        drop(current);
        assert_eq!(drops.load(Ordering::SeqCst), 3);
    }

    /// Readers on 4 threads pin and read while a writer replaces the value 20,000 times: every
    /// pinned value is alive (its drop flag unset) while pinned, and every value is dropped
    /// exactly once by the end.
    #[test]
    fn pins_under_a_stream_of_replacements_never_see_a_dropped_value() {
        struct Checked(Arc<AtomicBool>, Arc<AtomicUsize>);
        impl Drop for Checked {
            fn drop(&mut self) {
                assert!(!self.0.swap(true, Ordering::SeqCst), "dropped twice");
                self.1.fetch_add(1, Ordering::SeqCst);
            }
        }
        let drops = Arc::new(AtomicUsize::new(0));
        let fresh = || Arc::new(Checked(Arc::new(AtomicBool::new(false)), drops.clone()));
        let registry = Arc::new(Registry::new());
        let current = Arc::new(Current::new(fresh()));
        let stop = Arc::new(AtomicBool::new(false));
        let started = Arc::new(AtomicUsize::new(0));
        let readers: Vec<_> = (0..4)
            .map(|_| {
                let (registry, current, stop) = (registry.clone(), current.clone(), stop.clone());
                let started = started.clone();
                std::thread::spawn(move || {
                    let slot = registry.add();
                    let mut pins = 0_u64;
                    while pins == 0 || !stop.load(Ordering::Relaxed) {
                        if pins == 1 {
                            started.fetch_add(1, Ordering::SeqCst);
                        }
                        let pin = slot.pin(&current.mirror).expect("one pin at a time");
                        assert!(!pin.0.load(Ordering::SeqCst), "a pinned value was dropped");
                        std::hint::spin_loop();
                        assert!(!pin.0.load(Ordering::SeqCst), "a pinned value was dropped");
                        pins += 1;
                    }
                    registry.remove(slot);
                    pins
                })
            })
            .collect();
        // Every reader pins before the writer starts, so the replacements race with pins.
        while started.load(Ordering::SeqCst) < 4 {
            std::thread::yield_now();
        }
        for _ in 0..20_000 {
            registry.retire(current.replace(fresh()));
        }
        stop.store(true, Ordering::Relaxed);
        let pins: u64 = readers.into_iter().map(|r| r.join().unwrap()).sum();
        assert!(pins >= 8);
        assert_eq!(drops.load(Ordering::SeqCst), 20_000);
        drop(Arc::into_inner(current).expect("the readers are gone"));
        assert_eq!(drops.load(Ordering::SeqCst), 20_001);
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::atomic::AtomicUsize;

    /// One reader pins and reads while a writer replaces the value and retires the old one: the
    /// pinned value is never dropped while pinned, each value is dropped once, and after both
    /// threads end nothing is left undropped but the current value.
    #[test]
    fn loom_model_hazard_pin_and_retire() {
        loom::model(|| {
            let drops = Arc::new(AtomicUsize::new(0));
            let alive = Arc::new([AtomicBool::new(true), AtomicBool::new(true)]);
            struct Value(usize, Arc<[AtomicBool; 2]>, Arc<AtomicUsize>);
            impl Drop for Value {
                fn drop(&mut self) {
                    self.1[self.0].store(false, Ordering::SeqCst);
                    self.2.fetch_add(1, Ordering::SeqCst);
                }
            }
            let registry = Arc::new(Registry::new());
            let current = Arc::new(Current::new(Arc::new(Value(0, alive.clone(), drops.clone()))));
            let reader = {
                let (registry, current, alive) = (registry.clone(), current.clone(), alive.clone());
                loom::thread::spawn(move || {
                    let slot = registry.add();
                    {
                        let pin = slot.pin(&current.mirror).expect("a free slot");
                        // The index is read from the pinned value: it must still be alive.
                        let index = pin.0;
                        assert!(alive[index].load(Ordering::SeqCst), "pinned value {index} was dropped");
                    }
                    registry.remove(slot);
                })
            };
            registry.retire(current.replace(Arc::new(Value(1, alive.clone(), drops.clone()))));
            reader.join().unwrap();
            assert_eq!(drops.load(Ordering::SeqCst), 1);
            assert!(!alive[0].load(Ordering::SeqCst) && alive[1].load(Ordering::SeqCst));
        });
    }
}
