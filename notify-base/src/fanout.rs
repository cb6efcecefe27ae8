//! The engine (AS::N's fanout): the current registry [`Snapshot`] and everything that changes it.
//!
//! Readers never lock: `instrument` pins the snapshot in its thread's hazard slot (`hazard.rs`,
//! through the mirror of the `ArcSwap`'s `Arc`; an event inside an event, or on an exiting thread,
//! loads it through `arc-swap`), and `listening` and the callsites load it through `arc-swap`. Writers (`subscribe`, `unsubscribe`) serialise on one mutex, build the next snapshot from
//! the current one (sharing what the change does not touch, see `registry.rs`), swap it in, update
//! the name filter for the exact names added or removed, refresh the registered callsites whose
//! names the change touched (all of them after a pattern change), and only then drop the old
//! snapshot (after releasing the mutex, so a subscriber's `Drop` may itself subscribe). What only
//! writers need (the subscriptions by id, the name filter's counts, the callsites by name) is kept
//! under the mutex, out of the snapshot. The failure policy, the failure hook, the nested-delivery limit and the redaction
//! policy live here too; dispatch applies them.
//!
//! This module calls no subscriber callback: that is `dispatch.rs`'s job.

use std::mem;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};

use arc_swap::{ArcSwap, ArcSwapOption};
use rustc_hash::{FxHashMap, FxHashSet};

use crate::cold_box::drop_cold;
use crate::error::NotifyError;
use crate::event::Name;
use crate::failure::{FailurePolicy, FailureSink, Hook};
#[cfg(not(loom))]
use crate::hazard::{self, Mirror};
use crate::name_map::name_hash;
use crate::pattern::Pattern;
use crate::recent;
use crate::redaction::Redaction;
use crate::registry::{Change, Entry, Group, Lookup, Membership, NameRef, Resolved, Snapshot};
use crate::subscriber::Subscriber;
use crate::subscription::SubscriptionId;
use crate::sync::{AtomicU8, Mutex};

/// The default of [`Fanout::max_depth`]: how many deliveries may nest on one thread.
pub(crate) const DEFAULT_MAX_DEPTH: u32 = 32;

/// One notifier's registry and policies; `Notifier` is a handle to one.
pub(crate) struct Fanout {
    snapshot: ArcSwap<Snapshot>,
    /// The same snapshot for `instrument`'s pin (one fence per event instead of `arc-swap`'s two
    /// read-modify-writes, see `hazard.rs`), borrowed from `snapshot`'s `Arc`; replaced right
    /// before `snapshot`, under the writer lock.
    #[cfg(not(loom))]
    mirror: Mirror<Snapshot>,
    /// A one-hash Bloom filter of the names of the current snapshot's exact subscriptions (every
    /// bit set while a pattern or catch-all subscription exists), so `instrument` on a name nobody
    /// listens to skips the snapshot load. Written under the writer lock right after each swap,
    /// before the change returns.
    names: [AtomicU64; NAME_FILTER_WORDS],
    writer: Mutex<Writer>,
    /// How many changes were applied (bumped after each swap, Release): a batch publish
    /// ([`Fanout::changes`]) reuses the listeners it looked up while this stays the same.
    changes: AtomicU64,
    next_subscription: AtomicU64,
    policy: AtomicU8,
    /// The failure hook and the count of failures, shared with every registry entry (see
    /// [`FailureSink`]).
    failures: Arc<FailureSink>,
    /// Nested deliveries allowed on one thread (see `dispatch::Nesting`).
    max_depth: AtomicU32,
    /// Events not delivered because the nesting limit was reached, and whether that was reported.
    too_deep: AtomicU64,
    too_deep_reported: AtomicBool,
    /// True while `redaction` holds a policy: the one relaxed load a listened event pays for
    /// redaction when none is set.
    redacting: AtomicBool,
    redaction: ArcSwapOption<Redaction>,
    /// The head sampler's threshold ([`crate::Sampler`]), read once per listened event.
    sample_below: AtomicU64,
    is_global: bool,
}

/// Words of [`Fanout::names`]: 4,096 bits, one per name hash.
const NAME_FILTER_WORDS: usize = 64;

/// The bit in [`Fanout::names`] of the name whose [`name_hash`] is `hash`: (word, mask).
#[inline]
fn name_bit(hash: u64) -> (usize, u64) {
    let hash = hash as usize;
    ((hash >> 6) % NAME_FILTER_WORDS, 1 << (hash & 63))
}

/// What only writers use, under [`Fanout::writer`].
struct Writer {
    /// Registered callsites (global fanout only), by name.
    callsites: FxHashMap<&'static str, Vec<&'static SiteCache>>,
    /// Every subscription, by id: what `unsubscribe` finds a subscription by.
    subscriptions: Subscriptions,
    /// How many exact names of the current snapshot set each bit of [`Fanout::names`].
    name_bits: Box<[u32; NAME_FILTER_WORDS * 64]>,
}

impl Default for Writer {
    fn default() -> Writer {
        Writer {
            callsites: FxHashMap::default(),
            subscriptions: Subscriptions::default(),
            name_bits: Box::new([0; NAME_FILTER_WORDS * 64]),
        }
    }
}

/// Every subscription, found by its id: a set of the entries (which hold their ids), 8 bytes a
/// slot rather than a map's 16 for the id beside the entry.
type Subscriptions = FxHashSet<ById>;

/// An entry in [`Subscriptions`]: hashed, compared and looked up by its id alone.
struct ById(Arc<Entry>);

impl std::hash::Hash for ById {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.id.hash(state);
    }
}

impl PartialEq for ById {
    fn eq(&self, other: &ById) -> bool {
        self.0.id == other.0.id
    }
}

impl Eq for ById {}

impl std::borrow::Borrow<SubscriptionId> for ById {
    fn borrow(&self) -> &SubscriptionId {
        &self.0.id
    }
}

/// A change as a writer plans it (owned), then applies it ([`Planned::as_change`]).
#[derive(Default)]
struct Planned {
    added: Group,
    removed: Group,
    /// `unsubscribe_name`'s name and exclusion (see [`Change::name`]).
    name: Option<(Box<str>, Option<SubscriptionId>)>,
}

impl Planned {
    fn as_change(&self) -> Change<'_> {
        Change {
            added: &self.added,
            removed: &self.removed,
            name: self.name.as_ref().map(|(name, first_after)| (&**name, *first_after)),
        }
    }

    /// True when pattern or catch-all subscriptions change: any name may be concerned.
    fn touches_patterns(&self) -> bool {
        self.added.iter().chain(&self.removed).any(|e| !e.is_exact())
    }

    /// The names whose listeners change when no pattern subscription changes (an exclusion
    /// concerns its name only).
    fn exact_names(&self) -> impl Iterator<Item = &str> {
        let entries = self.added.iter().chain(&self.removed);
        let names = entries.filter_map(|e| e.pattern.exact_name().map(|n| &**n));
        names.chain(self.name.as_ref().map(|(name, _)| &**name))
    }
}

static GLOBAL: LazyLock<Arc<Fanout>> = LazyLock::new(|| Fanout::new(true));

/// The fanout of the process-wide notifier, created on first use.
#[inline]
pub(crate) fn global() -> &'static Arc<Fanout> {
    &GLOBAL
}

const UNREGISTERED: u8 = 0;
const NEVER: u8 = 1;
const SOMETIMES: u8 = 2;

/// What keeps the listener set of [`Fanout::listeners`] alive while an event is delivered: the
/// snapshot's pin (this thread's hazard, or an `arc-swap` guard for an event inside an event) and,
/// for a name resolved through pattern subscriptions, its set.
///
/// Every part is dropped by `Pinned`'s own drop, inline: for the common case, an exact name
/// pinned by this thread's hazard, a store and a load where the pin lies (with drop glue, it was
/// an out-of-line call per event; a move out of the pin copies it with 16-byte loads of the 8-byte
/// stores that built it, which stall on store forwarding). The rest is dropped out of line.
#[derive(Default)]
pub(crate) struct Pinned<'f> {
    snapshot: Option<SnapshotPin<'f>>,
    resolved: mem::ManuallyDrop<Option<Arc<Resolved>>>,
}

/// Dropped only by [`Pinned`]'s drop.
enum SnapshotPin<'f> {
    #[cfg(not(loom))]
    Hazard(mem::ManuallyDrop<hazard::Pin<'f, Snapshot>>),
    Guard(
        mem::ManuallyDrop<arc_swap::Guard<Arc<Snapshot>>>,
        std::marker::PhantomData<&'f ()>,
    ),
}

impl Drop for Pinned<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        match &mut self.snapshot {
            #[cfg(not(loom))]
            // SAFETY: this is the pin's only drop, and `self` is not used after it.
            Some(SnapshotPin::Hazard(pin)) => unsafe { pin.unpin() },
            // SAFETY: as for the pin: the guard's only drop.
            Some(SnapshotPin::Guard(guard, _)) => drop_cold(unsafe { mem::ManuallyDrop::take(guard) }),
            None => {}
        }
        if self.resolved.is_some() {
            // SAFETY: the set's only drop.
            drop_cold(unsafe { mem::ManuallyDrop::take(&mut self.resolved) });
        }
    }
}

impl std::ops::Deref for SnapshotPin<'_> {
    type Target = Snapshot;

    #[inline(always)]
    fn deref(&self) -> &Snapshot {
        match self {
            #[cfg(not(loom))]
            SnapshotPin::Hazard(pin) => pin,
            SnapshotPin::Guard(guard, _) => guard,
        }
    }
}

/// The calling thread's hazard slot for snapshots (`hazard.rs`), taken on first use and freed
/// for another thread when this one exits.
#[cfg(not(loom))]
mod thread_pin {
    use std::sync::Arc;

    use crate::hazard::{Mirror, Pin, Registry, Slot};
    use crate::registry::Snapshot;

    static SLOTS: Registry<Snapshot> = Registry::new();

    struct Mine(&'static Slot<Snapshot>);

    impl Mine {
        fn take() -> Mine {
            Mine(SLOTS.add())
        }
    }

    impl Drop for Mine {
        fn drop(&mut self) {
            SLOTS.remove(self.0);
        }
    }

    thread_local! {
        static MINE: Mine = Mine::take();
    }

    /// Pins `mirror`'s snapshot in this thread's slot; `None` when the slot is busy (an event
    /// inside an event) or gone (the thread is exiting).
    #[inline]
    pub(super) fn pin(mirror: &Mirror<Snapshot>) -> Option<Pin<'_, Snapshot>> {
        MINE.try_with(|mine| mine.0.pin(mirror)).ok().flatten()
    }

    /// The snapshot a write replaced: retired when the guard goes (dropped, or handed to the
    /// threads whose hazard still pins it), also when the write unwinds, so a snapshot a reader
    /// pins is never dropped behind the registry's back. (Unwinding drops it under the writer
    /// lock; the normal path drops it after.)
    pub(super) struct Replaced(pub(super) Option<Arc<Snapshot>>);

    impl Drop for Replaced {
        fn drop(&mut self) {
            if let Some(old) = self.0.take() {
                // SAFETY: `Fanout::write` made it so: `old` is the snapshot the mirror named
                // before `Mirror::replace`, which no longer names it.
                unsafe { SLOTS.retire(old) }
            }
        }
    }
}

#[cfg(not(loom))]
use thread_pin::Replaced;

/// A callsite's cached listener set pinned by its `arc-swap` guard (never empty): what the
/// macro's synchronous guard holds while the function runs, instead of a cloned `Arc`.
pub(crate) struct SitePin(arc_swap::Guard<Option<Arc<Resolved>>>);

impl SitePin {
    /// `None` when the guard holds no listener set.
    #[inline]
    fn new(guard: arc_swap::Guard<Option<Arc<Resolved>>>) -> Option<SitePin> {
        guard.is_some().then(|| SitePin(guard))
    }
}

impl std::ops::Deref for SitePin {
    type Target = Resolved;

    #[inline(always)]
    fn deref(&self) -> &Resolved {
        match &*self.0 {
            Some(resolved) => resolved,
            None => unreachable!("SitePin::new checked it"),
        }
    }
}

/// What a callsite caches of the global fanout: whether anybody listens to its name, and who
/// (for the macro's guard and handles; `Callsite::instrument` looks its listeners up as
/// `instrument` does, which costs less there: docs/architecture.md, "The read path, justified").
/// Registered with the fanout on first use and refreshed by every change, under the writer lock
/// (the protocol is described in `callsite.rs`).
pub(crate) struct SiteCache {
    name: &'static str,
    interest: AtomicU8,
    resolved: ArcSwapOption<Resolved>,
    /// The name's [`name_hash`], stored at registration (0 until then: computed when read).
    hash: AtomicU64,
}

/// A callsite's interest, as [`SiteCache::interest`] reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SiteInterest {
    Unregistered,
    Never,
    Sometimes,
}

impl SiteCache {
    #[cfg(not(loom))]
    pub(crate) const fn new(name: &'static str) -> SiteCache {
        SiteCache {
            name,
            interest: AtomicU8::new(UNREGISTERED),
            resolved: ArcSwapOption::const_empty(),
            hash: AtomicU64::new(0),
        }
    }

    #[cfg(loom)]
    pub(crate) fn new(name: &'static str) -> SiteCache {
        SiteCache {
            name,
            interest: AtomicU8::new(UNREGISTERED),
            resolved: ArcSwapOption::const_empty(),
            hash: AtomicU64::new(0),
        }
    }

    pub(crate) fn name(&self) -> &'static str {
        self.name
    }

    /// The cached interest (acquire: pairs with the release of `refresh`).
    pub(crate) fn interest(&self) -> SiteInterest {
        match self.interest.load(Ordering::Acquire) {
            UNREGISTERED => SiteInterest::Unregistered,
            NEVER => SiteInterest::Never,
            _ => SiteInterest::Sometimes,
        }
    }

    /// The fast path: false when nobody listens; registers on first use.
    #[inline(always)]
    pub(crate) fn is_enabled(&'static self) -> bool {
        match self.interest.load(Ordering::Relaxed) {
            NEVER => false,
            SOMETIMES => true,
            _ => self.register(),
        }
    }

    #[cold]
    #[inline(never)]
    fn register(&'static self) -> bool {
        global().register_callsite(self);
        self.interest.load(Ordering::Acquire) != NEVER
    }

    /// The listeners cached at the last refresh.
    #[inline]
    pub(crate) fn resolved(&self) -> Option<Arc<Resolved>> {
        self.resolved.load_full()
    }

    /// The listeners cached at the last refresh, pinned by an `arc-swap` guard (borrowing them
    /// touches no reference count); `None` when nobody listens.
    #[inline]
    pub(crate) fn site_pin(&self) -> Option<SitePin> {
        SitePin::new(self.resolved.load())
    }

    /// Runs `run` with the listeners of the callsite's name now, pinned for the call as
    /// `Notifier::instrument` pins them (this thread's hazard slot and recent lookups; `None`:
    /// nobody listens): `Callsite::instrument`'s lookup.
    #[inline(always)]
    pub(crate) fn with_listeners<T>(&self, run: impl FnOnce(Option<&Resolved>) -> T) -> T {
        let mut pin = Pinned::default();
        run(global().listeners(self.name, self.hash(), &mut pin))
    }

    /// The name's [`name_hash`]: the one stored at registration (any value read but 0 is it: only
    /// that value is ever stored), else computed.
    #[inline(always)]
    fn hash(&self) -> u64 {
        match self.hash.load(Ordering::Relaxed) {
            0 => name_hash(self.name),
            hash => hash,
        }
    }

    fn is_registered(&self) -> bool {
        self.interest.load(Ordering::Relaxed) != UNREGISTERED
    }

    /// Recomputes the state from `snapshot`; called under the writer lock.
    fn refresh(&self, snapshot: &Snapshot) {
        let hash = name_hash(self.name);
        self.hash.store(hash, Ordering::Relaxed);
        let resolved = snapshot.resolve(NameRef::Owned(Name::Static(self.name)), hash);
        let interest = if resolved.is_some() { SOMETIMES } else { NEVER };
        self.resolved.store(resolved);
        self.interest.store(interest, Ordering::Release);
    }
}

impl Fanout {
    /// A new, empty fanout; `is_global` makes it refresh registered callsites.
    pub(crate) fn new(is_global: bool) -> Arc<Fanout> {
        let first = Arc::new(Snapshot::default());
        Arc::new(Fanout {
            snapshot: ArcSwap::new(first.clone()),
            #[cfg(not(loom))]
            // SAFETY: `first` is kept by `snapshot` until a write replaces it, and a write hands
            // the snapshot it replaced to `thread_pin::retire` (`Replaced`).
            mirror: unsafe { Mirror::new(&first) },
            names: [const { AtomicU64::new(0) }; NAME_FILTER_WORDS],
            writer: Mutex::new(Writer::default()),
            changes: AtomicU64::new(0),
            next_subscription: AtomicU64::new(1),
            policy: AtomicU8::new(0),
            failures: Arc::new(FailureSink::new()),
            max_depth: AtomicU32::new(DEFAULT_MAX_DEPTH),
            too_deep: AtomicU64::new(0),
            too_deep_reported: AtomicBool::new(false),
            redacting: AtomicBool::new(false),
            redaction: ArcSwapOption::empty(),
            sample_below: AtomicU64::new(crate::sampling::ALWAYS),
            is_global,
        })
    }

    /// The head sampler's threshold for local roots ([`crate::sampling::decide`]).
    #[inline(always)]
    pub(crate) fn sample_below(&self) -> u64 {
        self.sample_below.load(Ordering::Relaxed)
    }

    pub(crate) fn set_sample_below(&self, threshold: u64) {
        self.sample_below.store(threshold, Ordering::Relaxed);
    }

    pub(crate) fn is_global(&self) -> bool {
        self.is_global
    }

    /// The listeners of `name` now, or `None` when nobody at all listens (the name filter first,
    /// then the snapshot's [`Snapshot::resolve`]).
    #[inline(always)]
    pub(crate) fn lookup(&self, name: &str) -> Option<Arc<Resolved>> {
        let hash = name_hash(name);
        if !self.may_listen(hash) {
            return None;
        }
        // The hash is reused by the lookup (one hashing per event, as before the name map).
        self.snapshot.load().resolve(NameRef::Borrowed(name), hash)
    }

    /// The listeners of `name` (whose [`name_hash`] is `hash`) now (`None` when nobody at all
    /// listens), borrowed from the current snapshot, which `pin` keeps alive (callers test
    /// [`Fanout::may_listen`] first, with the same hash, so that an unlistened name costs no
    /// `Pinned`): `instrument`'s path, which touches no reference count
    /// for a name with an exact subscription. Names known only through pattern subscriptions are
    /// resolved as [`Fanout::lookup`] does (their set held in `pin` too).
    #[inline(always)]
    pub(crate) fn listeners<'p, 'f: 'p>(
        &'f self,
        name: &str,
        hash: u64,
        pin: &'p mut Pinned<'f>,
    ) -> Option<&'p Resolved> {
        let Pinned { snapshot, resolved } = pin;
        let snapshot: &'p Snapshot = snapshot.insert(self.pin());
        if !snapshot.exact.is_empty() {
            if let Some(found) = recent::get(snapshot, name, hash) {
                return Some(found);
            }
            if let Some(found) = snapshot.exact.get_hashed(name, hash) {
                // SAFETY: `found` is a listener set of `snapshot`'s exact names.
                unsafe { recent::put(snapshot, hash, found) };
                return Some(found);
            }
        }
        if snapshot.wide.is_empty() {
            return None;
        }
        **resolved = snapshot.resolve(NameRef::Borrowed(name), hash);
        resolved.as_deref()
    }

    /// The current snapshot, pinned for an event: in this thread's hazard slot, else (an event
    /// inside an event, or a thread exiting) by an `arc-swap` guard.
    #[inline(always)]
    fn pin(&self) -> SnapshotPin<'_> {
        #[cfg(not(loom))]
        if let Some(pin) = thread_pin::pin(&self.mirror) {
            return SnapshotPin::Hazard(mem::ManuallyDrop::new(pin));
        }
        SnapshotPin::Guard(mem::ManuallyDrop::new(self.snapshot.load()), std::marker::PhantomData)
    }

    /// As [`Fanout::lookup`] for an owned name (handles, `publish_event`): a name cached is kept
    /// as it is rather than copied.
    pub(crate) fn lookup_name(&self, name: Name) -> Option<Arc<Resolved>> {
        let hash = name_hash(name.as_str());
        if !self.may_listen(hash) {
            return None;
        }
        self.snapshot.load().resolve(NameRef::Owned(name), hash)
    }

    /// How many changes (subscribe, unsubscribe, detach) were applied so far. Listeners looked up
    /// after it read `n` are still the current ones while it reads `n` (the count moves after
    /// each swap and its name filter update); `Notifier::publish_events` looks up again when it
    /// moved.
    #[inline]
    pub(crate) fn changes(&self) -> u64 {
        self.changes.load(Ordering::Acquire)
    }

    /// Runs `answer` on what [`Snapshot::lookup`] finds for `name`, without resolving or caching
    /// anything (`listening`: never allocates).
    pub(crate) fn probe<R>(&self, name: &str, answer: impl FnOnce(Lookup<'_>) -> R) -> R {
        let hash = name_hash(name);
        if !self.may_listen(hash) {
            return answer(Lookup::Nobody);
        }
        answer(self.snapshot.load().lookup(name, hash))
    }

    /// False when nobody listens to the name whose [`name_hash`] is `hash` (exact); true when
    /// someone may (a filter collision, a pattern subscription, or a listener).
    #[inline(always)]
    pub(crate) fn may_listen(&self, hash: u64) -> bool {
        let (word, mask) = name_bit(hash);
        self.names[word].load(Ordering::Acquire) & mask != 0
    }

    /// How many subscriptions there are.
    pub(crate) fn subscription_count(&self) -> usize {
        self.snapshot.load().subscriptions
    }

    /// Applies one change under the writer lock: `plan` reads the current snapshot and the
    /// subscriptions by id and returns the change (`None`: nothing to change), which is applied
    /// to both. Then the new snapshot is swapped in, the name filter follows the exact names it
    /// added or removed, and the callsites whose names the change touched are refreshed.
    fn write(&self, plan: impl FnOnce(&Snapshot, &Subscriptions) -> Option<Planned>) -> Option<Planned> {
        let mut guard = self.writer.lock();
        let writer = &mut *guard;
        let current = self.snapshot.load_full();
        let change = plan(&current, &writer.subscriptions)?;
        let (next, membership) = current.next(change.as_change());
        for entry in &change.added {
            writer.subscriptions.insert(ById(entry.clone()));
        }
        for entry in &change.removed {
            writer.subscriptions.remove(&entry.id);
        }
        let wide = !next.wide.is_empty();
        let was_wide = !current.wide.is_empty();
        let next = Arc::new(next);
        // SAFETY: writers hold the writer lock; `next` is kept by `snapshot` from the swap below
        // until a later write replaces it, and the snapshot replaced here is retired by
        // `Replaced` (also when this write unwinds).
        #[cfg(not(loom))]
        unsafe {
            self.mirror.replace(&next)
        };
        let old = self.snapshot.swap(next);
        #[cfg(not(loom))]
        let old = Replaced(Some(old));
        self.update_names(&mut writer.name_bits, &membership, wide, was_wide);
        // After the swap and the name filter: a reader that sees this count (Acquire) and looks
        // up again passes the filter for a name just subscribed and finds the new snapshot; one
        // that sees the old count uses what it looked up before, as an event looked up just
        // before the change does.
        self.changes.fetch_add(1, Ordering::Release);
        if self.is_global && !writer.callsites.is_empty() {
            let snapshot = self.snapshot.load();
            let refresh = |sites: &Vec<&'static SiteCache>| sites.iter().for_each(|site| site.refresh(&snapshot));
            match change.touches_patterns() {
                // A pattern change may concern any name.
                true => writer.callsites.values().for_each(refresh),
                false => change.exact_names().for_each(|name| {
                    if let Some(sites) = writer.callsites.get(name) {
                        refresh(sites);
                    }
                }),
            }
        }
        drop(guard);
        // `current` and `old` may hold the last references to removed subscribers: drop them
        // outside the lock, so a subscriber's Drop may subscribe (`old` after handing it to the
        // threads whose hazard still pins it, if any).
        drop(old);
        drop(current);
        Some(change)
    }

    /// Updates [`Fanout::names`] after a swap: every bit while pattern subscriptions exist, else
    /// the bits of the exact names, counted in `bits` so that removing a name clears its bit only
    /// when no other name sets it.
    fn update_names(
        &self,
        bits: &mut [u32; NAME_FILTER_WORDS * 64],
        membership: &[Membership],
        wide: bool,
        was_wide: bool,
    ) {
        for change in membership {
            let (word, mask) = name_bit(name_hash(&change.name));
            let count = &mut bits[word * 64 + mask.trailing_zeros() as usize];
            match change.added {
                true => *count += 1,
                false => *count -= 1,
            }
            if !wide {
                match *count {
                    0 => self.names[word].fetch_and(!mask, Ordering::Release),
                    _ => self.names[word].fetch_or(mask, Ordering::Release),
                };
            }
        }
        if wide != was_wide {
            for (word, counts) in self.names.iter().zip(bits.chunks_exact(64)) {
                let value = match wide {
                    true => u64::MAX,
                    false => counts
                        .iter()
                        .enumerate()
                        .fold(0, |w, (b, n)| w | u64::from(*n > 0) << b),
                };
                word.store(value, Ordering::Release);
            }
        }
    }

    /// Adds every `(pattern, subscriber)` pair in one change; returns their ids in order.
    pub(crate) fn subscribe_all(
        &self,
        pairs: impl IntoIterator<Item = (Pattern, Subscriber)>,
    ) -> Group<SubscriptionId> {
        // Collected before the writer lock is taken: the caller's iterator may subscribe. Ids are
        // given under it, so that they follow the order in which changes apply.
        let pairs: Group<(Pattern, Subscriber)> = pairs.into_iter().collect();
        let added = self.write(|_, _| {
            let added = pairs.into_iter().map(|(pattern, subscriber)| {
                let id = SubscriptionId(self.next_subscription.fetch_add(1, Ordering::Relaxed));
                Arc::new(Entry::new(id, pattern, subscriber, self.failures.clone()))
            });
            let added: Group = added.collect();
            (!added.is_empty()).then(|| Planned {
                added,
                ..Planned::default()
            })
        });
        added.map_or_else(Group::new, |change| change.added.iter().map(|e| e.id).collect())
    }

    /// Adds one subscription; returns its id. [`Fanout::subscribe_all`] of one pair, without
    /// its two collections (the pairs before the lock, the ids after it): `Notifier::subscribe`'s
    /// path.
    pub(crate) fn subscribe_one(&self, pattern: Pattern, subscriber: Subscriber) -> SubscriptionId {
        let change = self.write(|_, _| {
            let id = SubscriptionId(self.next_subscription.fetch_add(1, Ordering::Relaxed));
            Some(Planned {
                added: smallvec::smallvec![Arc::new(Entry::new(id, pattern, subscriber, self.failures.clone()))],
                ..Planned::default()
            })
        });
        change.expect("a subscription always adds").added[0].id
    }

    /// Adds `(pattern, subscriber)` and removes the subscription `old` (if it still exists) in one
    /// change, so an event sees either the old subscriber or the new one, never both or neither
    /// (what replacing a method of an attached namespace subscriber needs). Returns the new id.
    pub(crate) fn replace(&self, old: SubscriptionId, pattern: Pattern, subscriber: Subscriber) -> SubscriptionId {
        let change = self.write(|_, subscriptions| {
            let id = SubscriptionId(self.next_subscription.fetch_add(1, Ordering::Relaxed));
            let added: Group =
                smallvec::smallvec![Arc::new(Entry::new(id, pattern, subscriber, self.failures.clone()))];
            let removed: Group = subscriptions.get(&old).map(|e| e.0.clone()).into_iter().collect();
            Some(Planned {
                added,
                removed,
                ..Planned::default()
            })
        });
        let change = change.expect("a replacement always adds");
        let id = change.added[0].id;
        self.release(change.removed);
        id
    }

    /// Removes the subscriptions of `ids` that still exist, in one change; returns how many.
    pub(crate) fn unsubscribe_all(&self, ids: &FxHashSet<SubscriptionId>) -> usize {
        let change = self.write(|_, subscriptions| {
            let mut removed: Group = ids
                .iter()
                .filter_map(|id| Some(subscriptions.get(id)?.0.clone()))
                .collect();
            Entry::sort_by_id(&mut removed);
            (!removed.is_empty()).then(|| Planned {
                removed,
                ..Planned::default()
            })
        });
        let Some(change) = change else { return 0 };
        self.release(change.removed)
    }

    /// After removing `removed`: empties the cache slots still holding a removed pattern
    /// subscription, so its subscriber is dropped when the last event using it finishes, as an
    /// exact one is. Skipped (the usual case: the removed patterns matched no cached name, or the
    /// cache holds no name) when nothing but `removed` holds them any more. Returns how many
    /// subscriptions were removed.
    fn release(&self, removed: Group) -> usize {
        let held: Vec<&Arc<Entry>> = removed
            .iter()
            .filter(|e| !e.is_exact() && Arc::strong_count(e) > 1)
            .collect();
        if !held.is_empty() {
            self.snapshot.load().forget(&held);
        }
        removed.len()
    }

    /// Removes one subscription.
    ///
    /// # Errors
    /// [`NotifyError::NotFound`] when it does not exist (any more).
    pub(crate) fn unsubscribe_id(&self, id: SubscriptionId) -> Result<(), NotifyError> {
        let change = self.write(|_, subscriptions| {
            let entry = &subscriptions.get(&id)?.0;
            Some(Planned {
                removed: smallvec::smallvec![entry.clone()],
                ..Planned::default()
            })
        });
        match change {
            Some(change) => {
                self.release(change.removed);
                Ok(())
            }
            None => Err(NotifyError::NotFound),
        }
    }

    /// AS::N's `unsubscribe("name")`: removes the exact subscriptions to `name` and excludes it from
    /// the glob and regex ones; returns how many exact subscriptions were removed.
    ///
    /// The exclusion is one entry of the snapshot's persistent [`Exclusions`](crate::registry::Exclusions) (the name and the id
    /// the next subscription will get: every pattern subscription made before no longer receives
    /// the name), so a call costs the same however many names were excluded before.
    pub(crate) fn unsubscribe_name(&self, name: &str) -> usize {
        let change = self.write(|snapshot, _| {
            let removed = snapshot.exact_entries(name);
            // A pattern subscription (not a catch-all) that still receives the name: exclude it.
            let exclude = snapshot.wide().matching(name).any(|e| !e.pattern.is_all());
            if removed.is_empty() && !exclude {
                return None;
            }
            let first_after = exclude.then(|| SubscriptionId(self.next_subscription.load(Ordering::Relaxed)));
            Some(Planned {
                removed,
                name: Some((name.into(), first_after)),
                ..Planned::default()
            })
        });
        change.map_or(0, |change| self.release(change.removed))
    }

    /// How many event names the snapshot holds resolved (for tests).
    // Used by the tests that loom does not build.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn resolved_names(&self) -> usize {
        self.snapshot.load().resolved_names()
    }

    /// Registers a callsite of the global fanout and computes its first state.
    pub(crate) fn register_callsite(&self, callsite: &'static SiteCache) {
        let mut writer = self.writer.lock();
        if callsite.is_registered() {
            return;
        }
        callsite.refresh(&self.snapshot.load());
        writer.callsites.entry(callsite.name).or_default().push(callsite);
    }

    pub(crate) fn policy(&self) -> FailurePolicy {
        match self.policy.load(Ordering::Relaxed) {
            0 => FailurePolicy::Report,
            1 => FailurePolicy::Detach,
            _ => FailurePolicy::Strict,
        }
    }

    pub(crate) fn set_policy(&self, policy: FailurePolicy) {
        let code = match policy {
            FailurePolicy::Report => 0,
            FailurePolicy::Detach => 1,
            FailurePolicy::Strict => 2,
        };
        self.policy.store(code, Ordering::Relaxed);
    }

    pub(crate) fn set_hook(&self, hook: Hook) {
        self.failures.set_hook(hook);
    }

    /// Where this notifier's failures are reported and counted.
    pub(crate) fn failure_sink(&self) -> &FailureSink {
        &self.failures
    }

    /// Nested deliveries allowed on one thread before events are dropped (at least 1).
    #[inline]
    pub(crate) fn max_depth(&self) -> u32 {
        self.max_depth.load(Ordering::Relaxed)
    }

    pub(crate) fn set_max_depth(&self, depth: u32) {
        self.max_depth.store(depth.max(1), Ordering::Relaxed);
    }

    /// Counts one event dropped by the nesting limit; true for the first one (to report).
    pub(crate) fn count_too_deep(&self) -> bool {
        self.too_deep.fetch_add(1, Ordering::Relaxed);
        !self.too_deep_reported.swap(true, Ordering::Relaxed)
    }

    pub(crate) fn too_deep(&self) -> u64 {
        self.too_deep.load(Ordering::Relaxed)
    }

    /// True when a redaction policy is set (one relaxed load).
    #[inline(always)]
    pub(crate) fn is_redacting(&self) -> bool {
        self.redacting.load(Ordering::Relaxed)
    }

    /// The redaction policy an event prepared now applies (one relaxed load when none is set).
    #[inline(always)]
    pub(crate) fn redaction(&self) -> Option<Arc<Redaction>> {
        if !self.redacting.load(Ordering::Relaxed) {
            return None;
        }
        self.redaction.load_full()
    }

    /// The redaction policy in force, if any (whatever `redacting` says).
    #[cfg(feature = "redaction")]
    pub(crate) fn redaction_policy(&self) -> Option<Arc<Redaction>> {
        self.redaction.load_full()
    }

    #[cfg(feature = "redaction")]
    pub(crate) fn set_redaction(&self, policy: Option<Arc<Redaction>>) -> Option<Arc<Redaction>> {
        match policy {
            Some(policy) => {
                let old = self.redaction.swap(Some(policy));
                self.redacting.store(true, Ordering::Release);
                old
            }
            None => {
                self.redacting.store(false, Ordering::Release);
                self.redaction.swap(None)
            }
        }
    }
}

impl std::fmt::Debug for Fanout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Notifier")
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn noop() -> Subscriber {
        Subscriber::event(|_: &crate::Event| {})
    }

    /// What an event of `name` does to the registry: its lookup, which resolves the name (and
    /// caches it when a pattern matches). The delivery after it changes nothing here, and calling
    /// it from these tests would make this module depend on `dispatch`, which depends on it.
    fn instrument(fanout: &Fanout, name: &str) {
        drop(fanout.lookup(name));
    }

    /// No write of the registry copies a whole name map (the persistent maps' fallback for a
    /// second fork of one version, O(n)): exact, glob and catch-all subscribes and unsubscribes,
    /// `unsubscribe_name`, and a batch, each with events looked up between them.
    #[test]
    fn no_registry_write_copies_a_whole_name_map() {
        let copies = || crate::name_map::DEEP_COPIES.with(std::cell::Cell::get);
        let before = copies();
        let fanout = Fanout::new(false);
        for round in 0..50 {
            let kept = fanout.subscribe_all(vec![(format!("k{round}").as_str().into(), noop())])[0];
            fanout.subscribe_all(vec![(format!("n{round}.x").as_str().into(), noop())]);
            let glob = fanout.subscribe_all(vec![("n*.x".into(), noop())])[0];
            instrument(&fanout, &format!("n{round}.x"));
            fanout.unsubscribe_name(&format!("n{round}.x"));
            let batch = fanout.subscribe_all(vec![("a".into(), noop()), ("b".into(), noop()), ("*".into(), noop())]);
            instrument(&fanout, "a");
            if round % 2 == 0 {
                fanout.unsubscribe_id(kept).unwrap();
            }
            fanout.unsubscribe_id(glob).unwrap();
            for id in batch {
                fanout.unsubscribe_id(id).unwrap();
            }
        }
        assert_eq!(copies(), before, "a write forked a version that was forked already");
    }

    /// R9's "nothing left resolved" half (the integration test checks the callsite and `listening`).
    #[test]
    fn r9_a_name_unsubscribed_leaves_nothing_resolved() {
        let fanout = Fanout::new(false);
        let id = fanout.subscribe_all(vec![("x".into(), noop())])[0];
        instrument(&fanout, "x");
        assert_eq!(fanout.resolved_names(), 1);
        fanout.unsubscribe_id(id).unwrap();
        instrument(&fanout, "x");
        assert_eq!(fanout.resolved_names(), 0);
    }

    /// R14's "no cached entries for those names" half (the integration test checks the count and
    /// the deliveries through the public API).
    #[test]
    fn r14_subscription_churn_leaves_no_cached_entries() {
        let fanout = Fanout::new(false);
        let pattern = fanout.subscribe_all(vec![(Pattern::glob("keep.*").unwrap(), noop())])[0];
        instrument(&fanout, "keep.x");
        for i in 0..100_000 {
            let name = format!("churn.{i}");
            let id = fanout.subscribe_all(vec![(name.as_str().into(), noop())])[0];
            if i % 1000 == 0 {
                instrument(&fanout, &name);
            }
            fanout.unsubscribe_id(id).unwrap();
        }
        // Only "keep.x" is left resolved: no churned name is cached (resolved while exact, each was
        // dropped with its subscription).
        assert_eq!(fanout.resolved_names(), 1);
        fanout.unsubscribe_id(pattern).unwrap();
        assert_eq!(fanout.subscription_count(), 0);
        assert_eq!(fanout.resolved_names(), 0);
    }

    fn ids(fanout: &Fanout, name: &str) -> Vec<u64> {
        let mut ids: Vec<u64> = fanout
            .lookup(name)
            .map(|r| r.listeners.entries().map(|e| e.id.0).collect())
            .unwrap_or_default();
        ids.sort_unstable();
        ids
    }

    /// Issue 16.7, AS::N's semantics exactly: the name leaves the exact subscriptions and the
    /// pattern subscriptions made before the call; catch-alls, other names and later pattern
    /// subscriptions still get it; a second call excludes the later ones too.
    #[test]
    #[cfg(feature = "regex")]
    fn unsubscribe_name_excludes_the_name_from_earlier_pattern_subscriptions_only() {
        let fanout = Fanout::new(false);
        let glob = Pattern::glob("*.sql").unwrap();
        let regex = Pattern::regex(r"\.sql$").unwrap();
        let [g, r, a, e] = fanout.subscribe_all(vec![
            (glob.clone(), noop()),
            (regex, noop()),
            (Pattern::all(), noop()),
            ("query.sql".into(), noop()),
        ])[..] else {
            unreachable!()
        };
        assert_eq!(ids(&fanout, "query.sql"), [g.0, r.0, a.0, e.0]);
        instrument(&fanout, "other.sql"); // cached before the call: must be kept as it is
        assert_eq!(fanout.unsubscribe_name("query.sql"), 1);
        assert_eq!(ids(&fanout, "query.sql"), [a.0]);
        assert_eq!(ids(&fanout, "other.sql"), [g.0, r.0, a.0]);
        assert_eq!(ids(&fanout, "query.sqlx"), [a.0]);
        // Nothing left to remove or exclude: no change at all.
        assert_eq!(fanout.unsubscribe_name("query.sql"), 0);
        let later = fanout.subscribe_all(vec![(glob, noop())])[0];
        assert_eq!(ids(&fanout, "query.sql"), [a.0, later.0]);
        // An exact subscription made after the call receives the name again, patterns still not.
        let exact = fanout.subscribe_all(vec![("query.sql".into(), noop())])[0];
        assert_eq!(ids(&fanout, "query.sql"), [a.0, later.0, exact.0]);
        assert_eq!(fanout.unsubscribe_name("query.sql"), 1);
        assert_eq!(ids(&fanout, "query.sql"), [a.0]);
        assert_eq!(ids(&fanout, "other.sql"), [g.0, r.0, a.0, later.0]);
        // With no pattern subscription left the exclusions go with them.
        fanout.unsubscribe_id(g).unwrap();
        fanout.unsubscribe_id(r).unwrap();
        fanout.unsubscribe_id(later).unwrap();
        assert_eq!(fanout.snapshot.load().excluded.len(), 0);
    }

    /// Issue 16.7: a call adds one entry to the shared exclusions and copies no subscription, so
    /// its cost does not grow with the names excluded before (the bench case
    /// `unsubscribe_name_100000_exclusions` measures it).
    #[test]
    fn unsubscribe_name_copies_no_subscription_whatever_was_excluded_before() {
        let fanout = Fanout::new(false);
        let glob = fanout.subscribe_all(vec![(Pattern::glob("*.x").unwrap(), noop())])[0];
        let before = fanout.snapshot.load().wide[0].clone();
        for i in 0..10_000 {
            assert_eq!(fanout.unsubscribe_name(&format!("{i}.x")), 0);
        }
        let snapshot = fanout.snapshot.load();
        assert!(
            Arc::ptr_eq(&before, &snapshot.wide[0]),
            "the subscription was not copied"
        );
        assert_eq!(snapshot.excluded.len(), 10_000);
        drop(snapshot);
        assert_eq!(ids(&fanout, "5000.x"), Vec::<u64>::new());
        assert_eq!(ids(&fanout, "10000.x"), [glob.0]);
    }

    /// Issue 16.8: names that share a set of the cache both stay cached: alternating between them
    /// resolves each once (before: a direct-mapped slot, every event re-resolved).
    #[test]
    fn colliding_names_both_stay_resolved() {
        use crate::registry::{set_of, CACHE_WAYS, RESOLUTIONS};
        let fanout = Fanout::new(false);
        let _glob = fanout.subscribe_all(vec![(Pattern::glob("hot.*").unwrap(), noop())]);
        // As many names of one set as it has ways, the worst case that must stay cached.
        let first = "hot.0".to_owned();
        let set = set_of(&first);
        let names: Vec<String> = std::iter::once(first)
            .chain((1..).map(|i| format!("hot.{i}")).filter(|n| set_of(n) == set))
            .take(CACHE_WAYS)
            .collect();
        let resolutions = || RESOLUTIONS.with(|n| n.get());
        let start = resolutions();
        for _ in 0..100 {
            for name in &names {
                instrument(&fanout, name);
            }
        }
        assert_eq!(resolutions() - start, CACHE_WAYS, "each name resolved once");
        // Two names evicting each other from a full set end up both cached, too.
        let more: Vec<String> = (0..)
            .map(|i| format!("hot.more.{i}"))
            .filter(|n| set_of(n) == set)
            .take(2)
            .collect();
        let start = resolutions();
        for _ in 0..100 {
            for name in &more {
                instrument(&fanout, name);
            }
        }
        assert!(resolutions() - start <= 3, "{} resolutions", resolutions() - start);
    }

    /// Goal of issue 15: a pattern change neither rebuilds the name cache nor forgets the names
    /// it does not touch (before: a new 1,024-slot cache per change); the names it touches are
    /// resolved again, exactly those.
    #[test]
    #[cfg(feature = "regex")]
    fn a_pattern_change_keeps_the_cache_and_the_names_it_does_not_touch() {
        use crate::registry::RESOLUTIONS;
        let fanout = Fanout::new(false);
        let _glob = fanout.subscribe_all(vec![(Pattern::glob("*.cached").unwrap(), noop())]);
        let names: Vec<String> = (0..200).map(|i| format!("{i}.cached")).collect();
        for name in &names {
            instrument(&fanout, name);
        }
        let resolutions = || RESOLUTIONS.with(|n| n.get());
        let cache = fanout.snapshot.load().cache.clone();
        let start = resolutions();
        for _ in 0..10 {
            let pair = fanout.subscribe_all(vec![(Pattern::glob("*.pair").unwrap(), noop())])[0];
            fanout.unsubscribe_id(pair).unwrap();
        }
        assert!(Arc::ptr_eq(&cache, &fanout.snapshot.load().cache));
        for name in &names {
            instrument(&fanout, name);
        }
        assert_eq!(resolutions() - start, 0, "no untouched name resolved again");
        // A pattern matching 10 of the names: those 10 are resolved again, with it.
        let some = fanout.subscribe_all(vec![(Pattern::regex(r"^1\d\.cached$").unwrap(), noop())])[0];
        for name in &names {
            instrument(&fanout, name);
        }
        assert_eq!(resolutions() - start, 10);
        assert_eq!(ids(&fanout, "15.cached").len(), 2);
        assert_eq!(ids(&fanout, "115.cached").len(), 1);
        assert_eq!(ids(&fanout, "15.cached")[1], some.0);
        // More changes than the log remembers: every name is resolved again, still exact.
        for i in 0..40 {
            fanout.unsubscribe_name(&format!("unrelated.{i}"));
            let pair = fanout.subscribe_all(vec![(Pattern::glob("*.pair").unwrap(), noop())])[0];
            fanout.unsubscribe_id(pair).unwrap();
        }
        let start = resolutions();
        for name in &names {
            instrument(&fanout, name);
        }
        assert_eq!(resolutions() - start, names.len());
        assert_eq!(ids(&fanout, "15.cached").len(), 2);
    }

    /// A removed pattern subscription's subscriber is dropped when `unsubscribe` returns, even
    /// though the shared cache held names resolved to it.
    #[test]
    fn a_removed_pattern_subscriber_is_dropped_at_once() {
        struct Flag(Arc<AtomicBool>);
        impl Drop for Flag {
            fn drop(&mut self) {
                self.0.store(true, Ordering::SeqCst);
            }
        }
        let fanout = Fanout::new(false);
        let _other = fanout.subscribe_all(vec![(Pattern::glob("*.y").unwrap(), noop())]);
        let dropped = Arc::new(AtomicBool::new(false));
        let flag = Flag(dropped.clone());
        let glob = fanout.subscribe_all(vec![(
            Pattern::glob("*.x").unwrap(),
            Subscriber::event(move |_: &crate::Event| {
                let _ = &flag;
            }),
        )])[0];
        for i in 0..100 {
            instrument(&fanout, &format!("{i}.x"));
            instrument(&fanout, &format!("{i}.y"));
        }
        fanout.unsubscribe_id(glob).unwrap();
        assert!(dropped.load(Ordering::SeqCst));
        assert_eq!(ids(&fanout, "1.x"), Vec::<u64>::new());
        assert_eq!(ids(&fanout, "1.y").len(), 1);
    }

    /// The shared cache under concurrency, with exact expectations: readers keep resolving and
    /// caching names (some against snapshots already replaced) while one writer adds and removes
    /// pattern subscriptions and exclusions; after each change returns, every name resolves to
    /// exactly the subscriptions the writer knows are there.
    #[test]
    fn stress_cached_names_stay_exact_under_pattern_churn() {
        let fanout = Fanout::new(false);
        let names: Vec<String> = (0..64).map(|i| format!("n{i}.{}", ["a", "b"][i % 2])).collect();
        let base = fanout.subscribe_all(vec![(Pattern::glob("n*").unwrap(), noop())])[0];
        let stop = AtomicBool::new(false);
        std::thread::scope(|scope| {
            for t in 0..3 {
                let (fanout, names, stop) = (&fanout, &names, &stop);
                scope.spawn(move || {
                    let mut i = t;
                    while !stop.load(Ordering::Relaxed) {
                        instrument(fanout, &names[i % names.len()]);
                        i += 7;
                    }
                });
            }
            let mut live_a: Vec<u64> = Vec::new();
            // Excluded names and the first id not excluded from them (AS::N: later subscriptions).
            let mut excluded: rustc_hash::FxHashMap<String, u64> = Default::default();
            let mut last_id = base.0;
            for round in 0..300 {
                match round % 3 {
                    0 | 1 => {
                        let id = fanout.subscribe_all(vec![(Pattern::glob("*.a").unwrap(), noop())])[0];
                        live_a.push(id.0);
                        last_id = id.0;
                    }
                    _ => {
                        let id = live_a.remove(round % live_a.len());
                        fanout.unsubscribe_id(SubscriptionId(id)).unwrap();
                    }
                }
                if round % 50 == 49 {
                    let name = names[round % names.len()].clone();
                    assert_eq!(fanout.unsubscribe_name(&name), 0);
                    excluded.insert(name, last_id + 1);
                }
                for name in &names {
                    let first = excluded.get(name).copied().unwrap_or(0);
                    let mut want: Vec<u64> = vec![base.0];
                    if name.ends_with(".a") {
                        want.extend(&live_a);
                    }
                    want.retain(|id| *id >= first);
                    assert_eq!(ids(&fanout, name), want, "round {round}, {name}");
                }
            }
            stop.store(true, Ordering::Relaxed);
        });
    }

    /// Issue 15's write path: a change shares every part of the snapshot it does not touch. With
    /// 10,000 exact names, subscribing to one more leaves every other name's resolved listeners
    /// (the same `Arc`) and the pattern subscriptions in place, and resolves only the new name.
    #[test]
    fn an_exact_change_shares_the_names_it_does_not_touch() {
        let fanout = Fanout::new(false);
        fanout.subscribe_all((0..10_000).map(|i| (Pattern::exact(format!("{i}.many")), noop())));
        let _glob = fanout.subscribe_all(vec![(Pattern::glob("*.other").unwrap(), noop())]);
        let before = fanout.snapshot.load_full();
        let id = fanout.subscribe_all(vec![("new.many".into(), noop())])[0];
        let after = fanout.snapshot.load_full();
        assert!(Arc::ptr_eq(&before.wide[0], &after.wide[0]));
        assert!(
            std::ptr::eq(before.wide.as_ptr(), after.wide.as_ptr()),
            "the pattern list is shared"
        );
        for i in (0..10_000).step_by(97) {
            let name = format!("{i}.many");
            let (a, b) = (
                before.exact.get(name.as_str()).unwrap(),
                after.exact.get(name.as_str()).unwrap(),
            );
            assert!(Arc::ptr_eq(a, b), "{name} was resolved again");
        }
        assert_eq!(after.exact.len(), 10_001);
        assert_eq!(after.subscriptions, 10_002);
        assert_eq!(ids(&fanout, "new.many"), [id.0]);
        fanout.unsubscribe_id(id).unwrap();
        assert_eq!(fanout.snapshot.load().exact.len(), 10_000);
        assert_eq!(ids(&fanout, "new.many"), Vec::<u64>::new());
        assert_eq!(ids(&fanout, "77.many").len(), 1);
    }

    /// The name filter counts the exact names behind each bit: removing one of two names that
    /// share a bit keeps the other listened; removing both clears the bit.
    #[test]
    fn the_name_filter_keeps_a_bit_while_another_name_sets_it() {
        let fanout = Fanout::new(false);
        let first = "shared.0".to_owned();
        let second = (1..)
            .map(|i| format!("shared.{i}"))
            .find(|n| name_bit(name_hash(n)) == name_bit(name_hash(&first)))
            .unwrap();
        let a = fanout.subscribe_all(vec![(first.as_str().into(), noop())])[0];
        let b = fanout.subscribe_all(vec![(second.as_str().into(), noop())])[0];
        fanout.unsubscribe_id(a).unwrap();
        assert!(fanout.may_listen(name_hash(&second)));
        assert_eq!(ids(&fanout, &second), [b.0]);
        assert_eq!(ids(&fanout, &first), Vec::<u64>::new());
        fanout.unsubscribe_id(b).unwrap();
        assert!(!fanout.may_listen(name_hash(&second)));
        // A pattern subscription sets every bit; without it the exact names' bits come back.
        let c = fanout.subscribe_all(vec![(first.as_str().into(), noop())])[0];
        let glob = fanout.subscribe_all(vec![(Pattern::glob("*.none").unwrap(), noop())])[0];
        assert!(fanout.may_listen(name_hash("anything")));
        fanout.unsubscribe_id(glob).unwrap();
        assert!(fanout.may_listen(name_hash(&first)));
        let anything = name_hash("anything");
        assert!(!fanout.may_listen(anything) || name_bit(anything) == name_bit(name_hash(&first)));
        assert_eq!(ids(&fanout, &first), [c.0]);
    }

    /// The write path under concurrency, with exact expectations: two writers, each owning its
    /// names, add and remove exact subscriptions, a glob over their names and `unsubscribe_name`
    /// exclusions, while readers instrument every name (and check that listeners come in
    /// subscription order). After each of its changes a writer finds on each of its names exactly
    /// the subscriptions its own record says, in subscription order.
    #[test]
    fn stress_exact_and_pattern_churn_stays_exact() {
        let fanout = Fanout::new(false);
        let stop = AtomicBool::new(false);
        let all: Vec<String> = (0..2)
            .flat_map(|w| (0..12).map(move |i| format!("w{w}.n{i}")))
            .collect();
        std::thread::scope(|scope| {
            for t in 0..2 {
                let (fanout, all, stop) = (&fanout, &all, &stop);
                scope.spawn(move || {
                    let mut i = t;
                    while !stop.load(Ordering::Relaxed) {
                        let name = &all[i % all.len()];
                        if let Some(resolved) = fanout.lookup(name) {
                            let ids: Vec<u64> = resolved.listeners.entries().map(|e| e.id.0).collect();
                            assert!(ids.windows(2).all(|w| w[0] < w[1]), "{name}: {ids:?}");
                        }
                        instrument(fanout, name);
                        i += 5;
                    }
                });
            }
            let writers: Vec<_> = (0..2)
                .map(|w| {
                    let fanout = &fanout;
                    scope.spawn(move || {
                        let names: Vec<String> = (0..12).map(|i| format!("w{w}.n{i}")).collect();
                        // (id, Some(name index)) for an exact subscription, (id, None) for a glob.
                        let mut live: Vec<(u64, Option<usize>)> = Vec::new();
                        let mut excluded: FxHashSet<(u64, usize)> = FxHashSet::default();
                        for round in 0..600_usize {
                            match round % 7 {
                                0..=3 => {
                                    let at = (round * 5) % names.len();
                                    let id = fanout.subscribe_all(vec![(names[at].as_str().into(), noop())])[0];
                                    live.push((id.0, Some(at)));
                                }
                                4 => {
                                    let glob = Pattern::glob(&format!("w{w}.*")).unwrap();
                                    let id = fanout.subscribe_all(vec![(glob, noop())])[0];
                                    live.push((id.0, None));
                                }
                                5 if round % 3 == 0 => {
                                    let at = round % names.len();
                                    let exact = live.iter().filter(|(_, n)| *n == Some(at)).count();
                                    assert_eq!(fanout.unsubscribe_name(&names[at]), exact);
                                    live.retain(|(_, n)| *n != Some(at));
                                    excluded.extend(live.iter().filter(|(_, n)| n.is_none()).map(|(id, _)| (*id, at)));
                                }
                                _ if !live.is_empty() => {
                                    let (id, _) = live.remove((round * 3) % live.len());
                                    fanout.unsubscribe_id(SubscriptionId(id)).unwrap();
                                }
                                _ => {}
                            }
                            for (at, name) in names.iter().enumerate() {
                                let want: Vec<u64> = live
                                    .iter()
                                    .filter(|(id, n)| match n {
                                        Some(n) => *n == at,
                                        None => !excluded.contains(&(*id, at)),
                                    })
                                    .map(|(id, _)| *id)
                                    .collect();
                                let got: Vec<u64> = fanout
                                    .lookup(name)
                                    .map(|r| r.listeners.entries().map(|e| e.id.0).collect())
                                    .unwrap_or_default();
                                assert_eq!(got, want, "writer {w}, round {round}, {name}");
                            }
                        }
                        live.len()
                    })
                })
                .collect();
            let left: usize = writers.into_iter().map(|w| w.join().unwrap()).sum();
            stop.store(true, Ordering::Relaxed);
            assert_eq!(fanout.subscription_count(), left);
        });
    }
}
