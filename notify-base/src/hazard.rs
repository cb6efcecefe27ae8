//! The snapshot pin of `instrument`: a hazard pointer per thread, one `SeqCst` fence and no
//! read-modify-write per event.
//!
//! An event borrows its listener set from the registry snapshot that was current when it started,
//! so the snapshot must outlive the event even if a writer replaces it meanwhile. `arc-swap`'s
//! guard does that with two read-modify-writes per event (taking a debt slot and giving it back;
//! their cost is in docs/benchmarks.md) and some 70 instructions. Here each thread has one [`Slot`] whose `hazard` names the snapshot it uses:
//!
//! * **Pin** (reader): load the current snapshot `p` from the [`Mirror`], store it into the
//!   thread's hazard, a `SeqCst` fence, then load the mirror again: if it still holds `p`, `p` is
//!   pinned; else retry.
//! * **Unpin** (reader): a plain `Release` store of null into the hazard, then a `Relaxed` look at
//!   the slot's `pending` flag: set when a writer handed this thread snapshots to drop.
//! * **Retire** (writer, after storing the new snapshot into the mirror, outside the registry's
//!   writer lock): a `SeqCst` fence, then scan every thread's hazard for the old snapshot (a list
//!   that only grows, read without a lock). A thread that holds it is given a strong reference to
//!   drop when it unpins (its `retired` list, then `pending`); the writer drops its own
//!   reference. The last one dropped frees the snapshot: at once when nobody uses it.
//!
//! **Why nobody uses a freed snapshot.** The reader's fence (between its hazard store and its
//! second mirror load) and the writer's (between its mirror store and its hazard loads) are both
//! `SeqCst`, so one comes first. If the reader's does, the writer's hazard load sees `p` (or a
//! later value of that thread), and a writer that sees `p` hands a reference over instead of
//! freeing it. If the writer's does, the reader's second mirror load sees the new snapshot (or a
//! later one), not `p`, and the reader retries without using `p`. (Fences rather than `SeqCst`
//! accesses: loom models `SeqCst` fences exactly and `SeqCst` accesses only as `AcqRel`; the
//! model `loom_model_hazard_pin_and_retire` checks this protocol.) A hazard may name an address
//! freed and reused (a reader about to retry): a writer that finds it there only hands over one
//! reference too many, dropped at that thread's next unpin.
//!
//! The reader's fence was once the light half of an asymmetric pair (a compiler fence, with a
//! `membarrier` system call on the writer's side): it saved under 5 % of an event
//! (docs/architecture.md, "The read path, justified"), for a system call and an interrupt to
//! every running thread on each write, and was removed.
//!
//! **Happens-before, not only visibility.** Pins store the hazard with `Release`, unpins store
//! null with `Release`, and writers read hazards with `Acquire`: a writer that finds a hazard no
//! longer naming `p` is ordered after everything that thread did with `p`, so the drop that
//! follows cannot race a read. **Two writers at once** (retire runs outside the registry's writer
//! lock): `Slot::collect` reads the hazard under the slot's `retired` lock, so it never frees a
//! value another writer handed over for the value the thread pins now (`loom_model_hazard_two_writers`,
//! which found the first version's race: it read the hazard before taking the lock).
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
//! A thread pins one snapshot at a time, and `instrument` holds its pin through the body: every
//! event started inside an instrumented block (or by a subscriber) finds the slot busy, and its
//! caller falls back to `arc-swap`, as it does during thread exit, when the thread's slot is
//! gone. The benchmarks' figures are those of outermost events.

use std::marker::PhantomData;
use std::ptr;
#[cfg(not(loom))]
use std::sync::Arc;

#[cfg(loom)]
use loom::sync::Arc;

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
    /// A mirror of `value`.
    ///
    /// # Safety
    ///
    /// The caller keeps `value`'s allocation alive (an `Arc` of it) as long as it is the mirror's
    /// value, and then hands that `Arc` to [`Registry::retire`].
    pub(crate) unsafe fn new(value: &Arc<T>) -> Mirror<T> {
        Mirror {
            current: AtomicPtr::new(Arc::as_ptr(value).cast_mut()),
        }
    }

    /// Makes `next` current.
    ///
    /// # Safety
    ///
    /// Writers call it one at a time. As for [`Mirror::new`], the caller keeps `next` alive as
    /// long as it is current, and hands an `Arc` of the value it replaced (still alive: the
    /// caller holds it) to [`Registry::retire`] (outside its own locks: the drop may run user
    /// code), never dropping it otherwise.
    pub(crate) unsafe fn replace(&self, next: &Arc<T>) {
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
            // Release: a writer that reads this value (Acquire) after this thread's previous unpin
            // is ordered after everything this thread did with the value it pinned before.
            self.hazard.store(p, Ordering::Release);
            // Against the writer's fence between its mirror store and its hazard loads (see the
            // module's docs).
            fence(Ordering::SeqCst);
            let confirm = mirror.current.load(Ordering::Acquire);
            if confirm == p {
                return Some(Pin {
                    slot: self,
                    // `confirm`, not `p`: equal addresses, but `p` may come from a value freed
                    // since (a writer retired it before this hazard named it) whose address a new
                    // current value reuses. Only the second load's pointer is one to the value
                    // that is current and pinned now; through `p` the reads would be of a freed
                    // allocation (Miri: "dangling reference", in
                    // `pins_under_a_stream_of_replacements_never_see_a_dropped_value`).
                    value: confirm,
                    _not_send: PhantomData,
                });
            }
            p = confirm;
        }
    }

    /// The values handed to this slot that it does not use now, taken out to be dropped.
    ///
    /// The hazard is read under the `retired` lock, after `pending` is cleared: a value pushed by
    /// a writer that saw it in the hazard is pushed under that lock after that writer's hazard
    /// read, so this read sees that hazard value or a later one, and a value still pinned is
    /// kept (two writers retiring at once cannot free each other's hand-overs). When something is
    /// kept, `pending` is set again, so the thread's next unpin collects it.
    fn collect(&self) -> Vec<Arc<T>> {
        let mut retired = self.retired.lock();
        self.pending.store(false, Ordering::Relaxed);
        let in_use = self.hazard.load(Ordering::Acquire);
        let mut free = Vec::new();
        let mut i = 0;
        while i < retired.len() {
            if ptr::eq(Arc::as_ptr(&retired[i]), in_use) {
                i += 1;
            } else {
                free.push(retired.swap_remove(i));
            }
        }
        if !retired.is_empty() {
            self.pending.store(true, Ordering::Relaxed);
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

impl<T> Pin<'_, T> {
    /// Ends the pin where it lies, without moving it (what its drop does): for a pin inside a
    /// larger value, whose move out would copy it.
    ///
    /// # Safety
    ///
    /// The pin is not dereferenced or dropped afterwards (the caller forgets it): its value may
    /// be freed as soon as the hazard no longer names it.
    #[inline(always)]
    pub(crate) unsafe fn unpin(&self) {
        self.slot.hazard.store(ptr::null_mut(), Ordering::Release);
        if self.slot.pending.load(Ordering::Relaxed) {
            drop_all(self.slot.collect());
        }
    }
}

impl<T> Drop for Pin<'_, T> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: the pin is dropped here, never used again.
        unsafe { self.unpin() }
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
/// a few loads per slot, as many as threads were alive at once (an exiting thread's slot is
/// reused). Its nodes are freed with the registry (the process'
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

    /// Drops `old` unless some thread still pins it; such a thread gets a reference to drop when
    /// it unpins. Call with no lock of the caller held (the drop may run user code).
    ///
    /// # Safety
    ///
    /// `old` is the value a [`Mirror::replace`] replaced: no mirror of this registry's slots
    /// names it any more, so no new pin can take it.
    pub(crate) unsafe fn retire(&self, old: Arc<T>) {
        let at = Arc::as_ptr(&old).cast_mut();
        let mut free = Vec::new();
        // Orders the mirror's store (before this call) before the hazard loads below, against
        // every reader's fence between its hazard store and its second mirror load.
        fence(Ordering::SeqCst);
        for node in self.nodes() {
            let slot = &node.slot;
            // Acquire: when the hazard no longer names `old` (an unpin's or a later pin's Release
            // store), what that thread did with `old` happens before `old` is dropped below.
            if slot.hazard.load(Ordering::Acquire) != at {
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
/// tests and the loom models replace.
#[cfg(test)]
struct Current<T> {
    value: Mutex<Arc<T>>,
    mirror: Mirror<T>,
}

#[cfg(test)]
impl<T> Current<T> {
    fn new(value: Arc<T>) -> Current<T> {
        // SAFETY: `value` stays in `self.value` until `replace` retires it.
        let mirror = unsafe { Mirror::new(&value) };
        Current {
            value: Mutex::new(value),
            mirror,
        }
    }

    /// Makes `next` current and retires the value it replaces through `registry`.
    fn replace(&self, registry: &Registry<T>, next: Arc<T>) {
        let old = {
            let mut value = self.value.lock();
            // SAFETY: one writer at a time (the lock); `next` stays in `self.value`, the old value
            // is retired below and not dropped otherwise.
            unsafe { self.mirror.replace(&next) };
            std::mem::replace(&mut *value, next)
        };
        // SAFETY: `old` is the value the mirror named before the replace above.
        unsafe { registry.retire(old) };
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
        current.replace(&registry, Arc::new(Counted(1, drops.clone())));
        assert_eq!(drops.load(Ordering::SeqCst), 1);
        let pin = mine.pin(&current.mirror).expect("a free slot");
        assert_eq!(pin.0, 1);
        assert!(mine.pin(&current.mirror).is_none());
        let also = other.pin(&current.mirror).expect("another thread's slot");
        current.replace(&registry, Arc::new(Counted(2, drops.clone())));
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

    /// A write from a thread whose own slot pins the value it replaces (a subscriber that
    /// subscribes): the writer finds its own hazard and hands the value over; with no slot taken
    /// at all, the value is dropped at once.
    #[test]
    fn a_writer_that_pins_the_value_it_replaces_keeps_it_until_its_own_unpin() {
        let drops = Arc::new(AtomicUsize::new(0));
        let registry = Registry::new();
        let mine = registry.add();
        let current = Current::new(Arc::new(Counted(0, drops.clone())));
        let pin = mine.pin(&current.mirror).expect("a free slot");
        current.replace(&registry, Arc::new(Counted(1, drops.clone())));
        assert_eq!((pin.0, drops.load(Ordering::SeqCst)), (0, 0));
        drop(pin);
        assert_eq!(drops.load(Ordering::SeqCst), 1);
        registry.remove(mine);
        current.replace(&registry, Arc::new(Counted(2, drops.clone())));
        assert_eq!(drops.load(Ordering::SeqCst), 2);
        drop(current);
        assert_eq!(drops.load(Ordering::SeqCst), 3);
    }

    /// Two writers retire one after another while a reader moves from the first replaced value
    /// to the second (the review's interleaving, sequentially): the second value, still pinned,
    /// is kept when the first writer collects, and dropped at the reader's next unpin.
    #[test]
    fn a_value_handed_over_while_another_is_collected_is_kept_and_dropped_at_the_next_unpin() {
        let drops = Arc::new(AtomicUsize::new(0));
        let registry = Registry::new();
        let slot = registry.add();
        let current = Current::new(Arc::new(Counted(0, drops.clone())));
        let first = slot.pin(&current.mirror).expect("free");
        current.replace(&registry, Arc::new(Counted(1, drops.clone())));
        drop(first);
        assert_eq!(drops.load(Ordering::SeqCst), 1);
        let second = slot.pin(&current.mirror).expect("free");
        current.replace(&registry, Arc::new(Counted(2, drops.clone())));
        // The value 1 is pinned and handed over; a collect by anybody keeps it and re-arms
        // `pending`.
        assert_eq!(slot.collect().len(), 0);
        assert!(slot.pending.load(Ordering::SeqCst));
        assert_eq!((second.0, drops.load(Ordering::SeqCst)), (1, 1));
        drop(second);
        assert_eq!(drops.load(Ordering::SeqCst), 2);
        registry.remove(slot);
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
        let fresh = {
            let drops = drops.clone();
            move || Arc::new(Checked(Arc::new(AtomicBool::new(false)), drops.clone()))
        };
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
        // Every reader pins before the writers start, so the replacements race with pins; two
        // writers retire at once.
        while started.load(Ordering::SeqCst) < 4 {
            std::thread::yield_now();
        }
        let writer = {
            let (registry, current, fresh) = (registry.clone(), current.clone(), fresh.clone());
            std::thread::spawn(move || (0..10_000).for_each(|_| current.replace(&registry, fresh())))
        };
        (0..10_000).for_each(|_| current.replace(&registry, fresh()));
        writer.join().unwrap();
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
    use loom::cell::UnsafeCell;

    /// A value whose contents the reader reads and whose drop writes them: loom reports a read
    /// that does not happen before the drop (a use after free in the real program).
    struct Value(UnsafeCell<usize>);

    impl Drop for Value {
        fn drop(&mut self) {
            // SAFETY: `&mut self`: loom checks this write against every read of the value.
            self.0.with_mut(|p| unsafe { *p = usize::MAX });
        }
    }

    fn value(n: usize) -> Arc<Value> {
        Arc::new(Value(UnsafeCell::new(n)))
    }

    fn read(v: &Value) -> usize {
        // SAFETY: only `Drop` writes, and loom checks that it is ordered after this read.
        v.0.with(|p| unsafe { *p })
    }

    /// A reader thread that takes a slot, pins and reads the current value `pins` times (asserting
    /// the value is not dropped under it), then frees its slot.
    fn spawn_reader(
        registry: &Arc<Registry<Value>>,
        current: &Arc<Current<Value>>,
        pins: usize,
    ) -> loom::thread::JoinHandle<()> {
        let (registry, current) = (registry.clone(), current.clone());
        loom::thread::spawn(move || {
            let slot = registry.add();
            for _ in 0..pins {
                let pin = slot.pin(&current.mirror).expect("a free slot");
                assert_ne!(read(&pin), usize::MAX);
            }
            registry.remove(slot);
        })
    }

    /// One reader pins and reads while a writer replaces and retires the value: every read of the
    /// pinned value happens before the value is dropped.
    #[test]
    fn loom_model_hazard_pin_and_retire() {
        loom::model(|| {
            let registry = Arc::new(Registry::new());
            let current = Arc::new(Current::new(value(0)));
            let reader = spawn_reader(&registry, &current, 1);
            current.replace(&registry, value(1));
            reader.join().unwrap();
        });
    }

    /// Two writers retire at once while one reader pins twice (the interleavings of the review
    /// that found the collect race): no pinned value is ever dropped under the reader. Bounded to
    /// 4 preemptions (seconds): the race the review found (`collect` reading the hazard before
    /// taking the lock) fails this model from 4 on.
    #[test]
    fn loom_model_hazard_two_writers() {
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(4);
        model.check(|| {
            let registry = Arc::new(Registry::new());
            let current = Arc::new(Current::new(value(0)));
            let reader = spawn_reader(&registry, &current, 2);
            let writer = {
                let (registry, current) = (registry.clone(), current.clone());
                loom::thread::spawn(move || current.replace(&registry, value(1)))
            };
            current.replace(&registry, value(2));
            writer.join().unwrap();
            reader.join().unwrap();
        });
    }
}
