//! The registry snapshot: every subscription, plus the per-name listener sets already grouped by
//! kind. A snapshot is immutable once published; writers build the next one from the previous
//! one and swap it in (see `fanout.rs`).
//!
//! Names with an exact subscription are resolved when the snapshot is built (`exact`, a persistent
//! hash trie the next snapshot shares: a change resolves again only the names it touches and copies
//! O(log n) of the map, never the list of subscriptions, which only the writer keeps). Other names
//! matter only when a pattern or catch-all subscription exists (`wide`); they are resolved on first
//! use into a bounded set-associative cache that every snapshot of a notifier shares. A change of
//! the pattern subscriptions (or of the exclusions) is logged in the next snapshot, not applied to
//! the cache: a cached name is used only when no change since it was cached touched it
//! (`Snapshot::is_current`), so a change invalidates exactly the names it matches and costs the
//! same however many names are cached. Removed pattern subscriptions are emptied from the cache
//! when still held there (`Snapshot::forget`), so their subscribers are dropped at once.

use std::borrow::Cow;
use std::mem::ManuallyDrop;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Instant, SystemTime};

use arc_swap::ArcSwapOption;
use smallvec::SmallVec;

use crate::callee::Callee;
use crate::calls::{CallClocked, CallEvented, CallSilenceable};
use crate::event::{Name, NameText};
use crate::failure::{panic_message, FailureSink, SubscriberFailure};
use crate::kinds::{EventOptions, EventSubscriber, OwnedEventSubscriber, SilenceKey};
use crate::name_map::{name_hash, NameMap};
use crate::pattern::Pattern;
use crate::subscriber::{Kind, Subscriber};
use crate::subscription::SubscriptionId;

/// Ways of a set of the cache of names resolved through patterns: so many names sharing a set all
/// stay cached (no pair of names can evict each other).
pub(crate) const CACHE_WAYS: usize = 4;
/// Sets of that cache (a power of two).
pub(crate) const CACHE_SETS: usize = 256;
/// Slots of that cache: [`CACHE_SETS`] × [`CACHE_WAYS`].
pub(crate) const CACHE_SLOTS: usize = CACHE_SETS * CACHE_WAYS;

/// AS::N's exclusions (`unsubscribe_name`), for every pattern subscription at once: an event name
/// mapped to the id of the first subscription made after its last `unsubscribe_name`. A glob or
/// regex subscription with a smaller id no longer receives that name; catch-alls, exact
/// subscriptions and later subscriptions are untouched. The registry's own persistent hash trie
/// ([`NameMap`], as for the exact names): the next snapshot shares it, and adding or finding a name
/// is O(log n) (at most a few levels of 16-way branches), so neither `unsubscribe_name` nor
/// matching costs more as exclusions accumulate.
pub(crate) type Exclusions = NameMap<SubscriptionId>;

/// Subscriptions of one name or one change (a few, usually), in subscription order.
pub(crate) type Group<T = Arc<Entry>> = SmallVec<[T; 4]>;

/// One subscription as the registry keeps it.
pub(crate) struct Entry {
    pub(crate) id: SubscriptionId,
    pub(crate) pattern: Pattern,
    /// Dropped by the entry's `Drop`, under a guard (see there).
    pub(crate) subscriber: ManuallyDrop<Subscriber>,
    /// Where a panic in the subscriber's drop is reported: its notifier's hook and count.
    failures: Arc<FailureSink>,
}

impl Drop for Entry {
    /// The registry's last reference to a subscription can go on any thread: the instrumenting
    /// one (its snapshot pin released at the end of an event, after the subscription was removed
    /// by [`FailurePolicy::Detach`](crate::FailurePolicy::Detach) or unsubscribed meanwhile), the
    /// one that unsubscribed, a callsite's, the notifier's drop. If this is the last reference to
    /// the subscriber too, its drop runs user code: a panic there is caught here, never unwinds
    /// into the instrumented code, and is reported once through the notifier's failure hook
    /// ([`SubscriberFailure::in_drop`](crate::SubscriberFailure::in_drop)) and counted.
    fn drop(&mut self) {
        // SAFETY: the one drop of `subscriber`, in the entry's own drop; it is not used after.
        let subscriber = unsafe { ManuallyDrop::take(&mut self.subscriber) };
        let subscriber_kind = subscriber.kind();
        let Subscriber { kind, extra } = subscriber;
        let dropped = catch_unwind(AssertUnwindSafe(move || drop(kind)));
        if let Err(payload) = dropped {
            let label = extra.as_ref().and_then(|e| e.label.clone());
            self.failures.report(&[SubscriberFailure {
                subscription: self.id,
                subscriber: label.unwrap_or(Cow::Borrowed(subscriber_kind.as_str())),
                kind: subscriber_kind,
                event: String::new(),
                message: panic_message(&*payload),
                in_drop: true,
                drops: None,
            }]);
            crate::failure::drop_panic_payload(payload);
        }
        drop(extra);
    }
}

impl Entry {
    /// The entry of subscription `id`, whose subscriber's drop panics are reported to `failures`.
    pub(crate) fn new(
        id: SubscriptionId,
        pattern: Pattern,
        subscriber: Subscriber,
        failures: Arc<FailureSink>,
    ) -> Entry {
        Entry {
            id,
            pattern,
            subscriber: ManuallyDrop::new(subscriber),
            failures,
        }
    }

    /// Sorts `entries` into subscription order. One function for every such sort, so the
    /// standard library's sort is instantiated once for them (docs/build-time.md).
    pub(crate) fn sort_by_id(entries: &mut [Arc<Entry>]) {
        entries.sort_unstable_by_key(|e| e.id);
    }

    /// True when this subscription receives `name`, given the snapshot's exclusions.
    pub(crate) fn matches(&self, name: &str, excluded: &Exclusions) -> bool {
        self.pattern.matches(name) && !self.is_excluded(name, excluded)
    }

    /// True when `unsubscribe_name(name)` removed `name` from this (pattern) subscription.
    fn is_excluded(&self, name: &str, excluded: &Exclusions) -> bool {
        !excluded.is_empty()
            && !self.pattern.is_all()
            && !self.is_exact()
            && excluded.get(name).is_some_and(|first_after| self.id < *first_after)
    }

    pub(crate) fn is_exact(&self) -> bool {
        self.pattern.exact_name().is_some()
    }
}

/// One listener of a group: the subscriber to call and the subscription it came from, which keeps
/// the subscriber alive.
pub(crate) struct Listener<T: ?Sized> {
    pub(crate) subscriber: Callee<T>,
    pub(crate) entry: Arc<Entry>,
}

impl<T: ?Sized> Listener<T> {
    /// The listener calling `subscriber`, which `entry` owns (the `Arc` of its `Kind`).
    fn new(subscriber: &Arc<T>, entry: Arc<Entry>) -> Listener<T> {
        Listener {
            // SAFETY: `subscriber` is owned by `entry`, which the listener keeps.
            subscriber: unsafe { Callee::new(subscriber) },
            entry,
        }
    }
}

/// The listeners of one event name, grouped by kind, in subscription order within each group.
#[derive(Default)]
pub(crate) struct Listeners {
    pub(crate) timed: Vec<Listener<dyn CallClocked<SystemTime>>>,
    pub(crate) monotonic: Vec<Listener<dyn CallClocked<Instant>>>,
    pub(crate) event: Vec<Listener<dyn EventSubscriber>>,
    pub(crate) evented: Vec<Listener<dyn CallEvented>>,
    pub(crate) silenceable: Vec<Listener<dyn CallSilenceable>>,
    /// `silenceable` split by [`SilenceKey`]: each event asks one listener per group.
    pub(crate) silence_groups: Vec<SilenceGroup>,
    pub(crate) owned: Vec<Listener<dyn OwnedEventSubscriber>>,
    /// Union of the event-object subscribers' options.
    pub(crate) options: EventOptions,
    /// True when an evented or silenceable subscriber asked for `EventedOptions::duration`.
    pub(crate) evented_duration: bool,
    /// True when only the evented and silenceable groups have listeners and none asked for a
    /// duration: an event then reads no clock and builds no event object, and its start and
    /// finish skip those checks with this one (`dispatch.rs`). False (the general path, always
    /// correct) for a `Listeners::default()`.
    pub(crate) phases_only: bool,
}

impl Listeners {
    /// The listeners of `entries` (in that order within each group), each group's `Vec` of
    /// exactly its length: a name's listener set lives as long as its subscriptions, so no spare
    /// capacity (100,000 subscriptions of one name would keep 31,072 listeners' worth, 750 KB).
    fn of(entries: &[Arc<Entry>]) -> Listeners {
        let [mut timed, mut monotonic, mut event, mut evented, mut silenceable, mut owned] = [0_usize; 6];
        for entry in entries {
            *match entry.subscriber.kind {
                Kind::Timed(_) => &mut timed,
                Kind::Monotonic(_) => &mut monotonic,
                Kind::Event(..) => &mut event,
                Kind::Evented(..) => &mut evented,
                Kind::Silenceable(..) => &mut silenceable,
                Kind::Owned(_) => &mut owned,
            } += 1;
        }
        let mut listeners = Listeners {
            timed: Vec::with_capacity(timed),
            monotonic: Vec::with_capacity(monotonic),
            event: Vec::with_capacity(event),
            evented: Vec::with_capacity(evented),
            silenceable: Vec::with_capacity(silenceable),
            owned: Vec::with_capacity(owned),
            ..Listeners::default()
        };
        for entry in entries {
            listeners.push(entry);
        }
        listeners.phases_only = timed == 0 && monotonic == 0 && event == 0 && owned == 0 && !listeners.evented_duration;
        listeners
    }

    fn push(&mut self, owner: &Arc<Entry>) {
        let entry = owner.clone();
        match &owner.subscriber.kind {
            Kind::Timed(s) => self.timed.push(Listener::new(s, entry)),
            Kind::Monotonic(s) => self.monotonic.push(Listener::new(s, entry)),
            Kind::Event(s, options) => {
                self.options.cpu_time |= options.cpu_time;
                self.options.allocations |= options.allocations;
                self.event.push(Listener::new(s, entry));
            }
            Kind::Evented(s, options) => {
                self.evented_duration |= options.duration;
                self.evented.push(Listener::new(s, entry));
            }
            Kind::Silenceable(s, options) => {
                self.evented_duration |= options.duration;
                let index = self.silenceable.len() as u32;
                let key = owner.subscriber.silence_key();
                let group = key.and_then(|key| self.silence_groups.iter_mut().find(|g| g.key.as_ref() == Some(key)));
                match group {
                    Some(group) => group.members.push(index),
                    None => self.silence_groups.push(SilenceGroup {
                        // SAFETY: `s` is owned by `entry`, which the listener pushed below (in
                        // the same `Listeners`, dropped with this group) keeps alive.
                        ask: unsafe { Callee::new(s) },
                        key: key.cloned(),
                        members: vec![index],
                    }),
                }
                self.silenceable.push(Listener::new(s, entry));
            }
            Kind::Owned(s) => self.owned.push(Listener::new(s, entry)),
        }
    }

    /// Listeners that are never silenced.
    pub(crate) fn has_unconditional(&self) -> bool {
        !(self.timed.is_empty()
            && self.monotonic.is_empty()
            && self.event.is_empty()
            && self.evented.is_empty()
            && self.owned.is_empty())
    }

    /// Calls `f` with every subscription, in group order: [`Listeners::entries`] in six plain
    /// loops, for the writers (a chain of six iterators collected cost about 250 instructions
    /// for one entry).
    fn each_entry(&self, mut f: impl FnMut(&Arc<Entry>)) {
        fn each<T: ?Sized>(list: &[Listener<T>], f: &mut impl FnMut(&Arc<Entry>)) {
            for listener in list {
                f(&listener.entry);
            }
        }
        each(&self.timed, &mut f);
        each(&self.monotonic, &mut f);
        each(&self.event, &mut f);
        each(&self.evented, &mut f);
        each(&self.silenceable, &mut f);
        each(&self.owned, &mut f);
    }

    /// Every subscription, in group order (for counts and tests).
    pub(crate) fn entries(&self) -> impl Iterator<Item = &Arc<Entry>> {
        let t = self.timed.iter().map(|l| &l.entry);
        let m = self.monotonic.iter().map(|l| &l.entry);
        let e = self.event.iter().map(|l| &l.entry);
        let v = self.evented.iter().map(|l| &l.entry);
        let s = self.silenceable.iter().map(|l| &l.entry);
        let o = self.owned.iter().map(|l| &l.entry);
        t.chain(m).chain(e).chain(v).chain(s).chain(o)
    }
}

/// Silenceable listeners that share a [`SilenceKey`] (or one listener without a key): whether
/// one is silenced decides for all, so the first is asked for the group.
pub(crate) struct SilenceGroup {
    /// The first member's subscriber (`silenceable[members[0]]`), held here so that asking the
    /// group is one load and a call, not a walk through `members` and `silenceable`.
    pub(crate) ask: Callee<dyn CallSilenceable>,
    pub(crate) key: Option<SilenceKey>,
    /// Indices into [`Listeners::silenceable`], ascending; never empty.
    pub(crate) members: Vec<u32>,
}

/// An event name with its listeners: what an event captures when it starts.
pub(crate) struct Resolved {
    /// Never replaced (a `Resolved` is shared, immutable, once built): `text` points into it.
    name: Name,
    /// The text of `name`.
    text: NameText,
    pub(crate) listeners: Listeners,
    /// For a name in the cache: the [`Snapshot::version`] up to which these listeners are known to
    /// be the name's (raised by readers that check the changes since; see [`Snapshot::is_current`]).
    valid_to: AtomicU64,
}

impl Resolved {
    /// The listeners of `name` among `entries` (which must already be the matching ones).
    pub(crate) fn new(name: Name, entries: &[Arc<Entry>]) -> Option<Arc<Resolved>> {
        let resolved = Arc::new(Resolved::with(name, Listeners::of(entries), 0));
        resolved.has_listeners().then_some(resolved)
    }

    /// `listeners` of `name`, known to be current up to snapshot version `valid_to`.
    fn with(name: Name, listeners: Listeners, valid_to: u64) -> Resolved {
        Resolved {
            text: NameText::of(&name),
            name,
            listeners,
            valid_to: AtomicU64::new(valid_to),
        }
    }

    /// The event name.
    pub(crate) fn name(&self) -> &Name {
        &self.name
    }

    /// The event name's text, without matching on the [`Name`]'s variant.
    #[inline(always)]
    pub(crate) fn name_str(&self) -> &str {
        // SAFETY: `text` was made from `self.name`, which lives as long as `self` and is never
        // replaced (private, and set only in `Resolved::with`).
        unsafe { self.text.get() }
    }

    /// True when the name has any listener at all (silenced or not).
    pub(crate) fn has_listeners(&self) -> bool {
        self.listeners.has_unconditional() || !self.listeners.silenceable.is_empty()
    }
}

/// The names with at least one exact subscription, each resolved against every subscription (its
/// exact ones and the pattern and catch-all ones that match it). A persistent hash trie
/// ([`NameMap`]): the next snapshot shares every node a change does not touch, so adding or
/// removing a name costs O(log n) whatever else is subscribed, and a lookup follows one slot per
/// level of 16-way branches.
pub(crate) type ExactNames = NameMap<Arc<Resolved>>;

/// A snapshot's number, unique in the process for its whole run (a 64-bit counter never wraps).
/// Neither `Clone` nor `Copy`: the per-thread lookup cache's soundness rests on no two snapshots
/// sharing one.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Serial(u64);

impl Serial {
    pub(crate) fn get(&self) -> u64 {
        self.0
    }
}

impl Default for Serial {
    /// The next serial. Relaxed: the number only has to be unique, and a snapshot reaches other
    /// threads through the notifier's swap, which orders everything in it.
    fn default() -> Serial {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Serial(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

/// One immutable state of the registry.
///
/// Nothing in it is copied whole by a change: `exact` and `excluded` are persistent maps that the
/// next snapshot shares, `wide` and `log` are shared until a pattern change, and the name cache is
/// one per notifier. The writer keeps what only writers need (the subscriptions by id, the name
/// filter's counts) outside the snapshot (`fanout.rs`).
#[derive(Default)]
pub(crate) struct Snapshot {
    /// Names with at least one exact subscription, resolved against all subscriptions.
    pub(crate) exact: ExactNames,
    /// Pattern and catch-all subscriptions, in subscription order.
    pub(crate) wide: Arc<[Arc<Entry>]>,
    /// Names removed from pattern subscriptions by `unsubscribe_name` (empty when `wide` is).
    /// Behind an `Arc`: a change that leaves it as it is (all but `unsubscribe_name`) shares it
    /// with one reference count, without forking the map.
    pub(crate) excluded: Arc<Exclusions>,
    /// Names resolved through `wide`, filled on first use; absent until a name needs it. One
    /// cache serves every snapshot of a notifier: entries hold only what `wide` contributes (exact
    /// names are looked up before the cache), and an entry is used only while it is current (see
    /// [`Snapshot::is_current`]), so a change costs the same however many names are cached.
    pub(crate) cache: Arc<OnceLock<Cache>>,
    /// How many changes of `wide` or `excluded` led to this snapshot (0 for a new notifier).
    pub(crate) version: u64,
    /// The last (at most [`LOG_LEN`]) of those changes, oldest first; the last one is `version`'s.
    log: Arc<[Arc<Touched>]>,
    /// How many subscriptions there are.
    pub(crate) subscriptions: usize,
    /// This snapshot's number, unique in the process (what the per-thread cache of recent lookups
    /// checks its entries against).
    pub(crate) serial: Serial,
}

/// Changes of the pattern subscriptions a snapshot remembers, to tell whether a cached name is
/// still current. A name cached longer ago is resolved again.
const LOG_LEN: usize = 32;

/// What one change of the pattern subscriptions touched: names these patterns match (pattern
/// subscriptions added or removed) or these names (`unsubscribe_name`).
struct Touched {
    patterns: Vec<Pattern>,
    names: Vec<Arc<str>>,
}

impl Touched {
    fn touches(&self, name: &str) -> bool {
        self.names.iter().any(|n| **n == *name) || self.patterns.iter().any(|p| p.matches(name))
    }
}

/// The names resolved through patterns: [`CACHE_SETS`] sets of [`CACHE_WAYS`] slots, a name's set
/// chosen by its hash ([`set_of`]). A name is cached in an empty way of its set, or else in the
/// way the eviction clock points to.
pub(crate) struct Cache {
    slots: Box<[ArcSwapOption<Resolved>]>,
    evictions: AtomicUsize,
}

impl Cache {
    fn new(slots: Box<[ArcSwapOption<Resolved>]>) -> Cache {
        let slots = match slots.len() {
            0 => (0..CACHE_SLOTS).map(|_| ArcSwapOption::const_empty()).collect(),
            _ => slots,
        };
        Cache {
            slots,
            evictions: AtomicUsize::new(0),
        }
    }
}

/// One change of the registry, as [`Snapshot::next`] applies it.
#[derive(Default)]
pub(crate) struct Change<'a> {
    /// New subscriptions, with ids greater than every existing one, in id order.
    pub(crate) added: &'a [Arc<Entry>],
    /// Existing subscriptions to remove.
    pub(crate) removed: &'a [Arc<Entry>],
    /// `unsubscribe_name`: the name and, when pattern subscriptions still received it, the id
    /// before which they no longer do (see [`Exclusions`]).
    pub(crate) name: Option<(&'a str, Option<SubscriptionId>)>,
}

/// An exact subscription of a change: its name, itself, and whether it is added (or removed).
type Edit<'a> = (&'a Arc<str>, &'a Arc<Entry>, bool);

/// An exact name that [`Snapshot::next`] added to or removed from [`Snapshot::exact`] (the name
/// filter of `fanout.rs` follows these).
pub(crate) struct Membership {
    pub(crate) name: Arc<str>,
    pub(crate) added: bool,
}

/// What [`Snapshot::lookup`] found.
pub(crate) enum Lookup<'s> {
    /// Nobody at all listens to the name.
    Nobody,
    /// The name's listeners (an exact name, or a cached one).
    Found(Arc<Resolved>),
    /// Only these pattern and catch-all subscriptions can match the name, and it is not cached.
    Uncached(Wide<'s>),
}

/// A snapshot's pattern and catch-all subscriptions with its exclusions: who may receive a name
/// that no exact subscription names.
#[derive(Clone, Copy)]
pub(crate) struct Wide<'s> {
    entries: &'s [Arc<Entry>],
    excluded: &'s Exclusions,
}

impl<'s> Wide<'s> {
    /// The subscriptions that receive `name`, in subscription order.
    pub(crate) fn matching<'n>(self, name: &'n str) -> impl Iterator<Item = &'s Arc<Entry>> + 'n
    where
        's: 'n,
    {
        self.entries.iter().filter(move |e| e.matches(name, self.excluded))
    }
}

/// An event name to resolve: borrowed (copied into the cache only if it is cached), or already
/// owned (a callsite's `&'static str`, a handle's name: cached as it is).
pub(crate) enum NameRef<'a> {
    Borrowed(&'a str),
    Owned(Name),
}

impl NameRef<'_> {
    #[inline(always)]
    fn as_str(&self) -> &str {
        match self {
            NameRef::Borrowed(name) => name,
            NameRef::Owned(name) => name.as_str(),
        }
    }

    fn into_name(self) -> Name {
        match self {
            NameRef::Borrowed(name) => Name::Shared(name.into()),
            NameRef::Owned(name) => name,
        }
    }
}

/// The set of `name` in the cache of names resolved through patterns, in `0..CACHE_SETS`.
pub(crate) fn set_of(name: &str) -> usize {
    (cache_hash(name) as usize) & (CACHE_SETS - 1)
}

/// The hash of `name` that [`set_of`] takes its low bits from.
pub(crate) fn cache_hash(name: &str) -> u64 {
    name_hash(name)
}

/// The slots of `name`'s set.
fn ways_of(name: &str) -> std::ops::Range<usize> {
    let first = set_of(name) * CACHE_WAYS;
    first..first + CACHE_WAYS
}

#[cfg(test)]
thread_local! {
    /// Names resolved into a cache by this thread (tests count re-resolutions with it).
    pub(crate) static RESOLUTIONS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

impl Snapshot {
    /// The one lookup of a name's listener group, for `instrument`, `listening`, `listeners_for`,
    /// handles, `publish` and callsite refresh. Fast exits first: an exact name is one map lookup
    /// (skipped while there are no exact subscriptions); with no pattern subscription the answer is
    /// then [`Lookup::Nobody`]; else the name's slot in the cache. Never allocates: a name only
    /// patterns can match and not cached yet is [`Lookup::Uncached`], for the caller to resolve and
    /// cache ([`Snapshot::resolve`]) or to answer from the pattern subscriptions (`listening`).
    ///
    /// `hash` is the name's [`name_hash`](crate::name_map::name_hash) (the caller's name filter
    /// computed it already).
    #[inline(always)]
    pub(crate) fn lookup(&self, name: &str, hash: u64) -> Lookup<'_> {
        if !self.exact.is_empty() {
            if let Some(found) = self.exact.get_hashed(name, hash) {
                return Lookup::Found(found.clone());
            }
        }
        if self.wide.is_empty() {
            return Lookup::Nobody;
        }
        self.lookup_cached(name)
    }

    #[cold]
    fn lookup_cached(&self, name: &str) -> Lookup<'_> {
        if let Some(cache) = self.cache.get() {
            for slot in &cache.slots[ways_of(name)] {
                if let Some(hit) = &*slot.load() {
                    if hit.name_str() == name && self.is_current(hit) {
                        return match hit.has_listeners() {
                            true => Lookup::Found(hit.clone()),
                            false => Lookup::Nobody,
                        };
                    }
                }
            }
        }
        Lookup::Uncached(self.wide())
    }

    /// True when `cached`, resolved through `wide` at some version of the registry, still holds
    /// the listeners of its name at this snapshot's version: no change logged since touched it.
    /// Raises its `valid_to` so the check is made once per change. An entry newer than this
    /// snapshot (a reader on a later one cached it) or older than the log is not current.
    fn is_current(&self, cached: &Resolved) -> bool {
        let valid_to = cached.valid_to.load(Ordering::Relaxed);
        if valid_to == self.version {
            return true;
        }
        let oldest = self.version - self.log.len() as u64;
        if valid_to > self.version || valid_to < oldest {
            return false;
        }
        let since = &self.log[(valid_to - oldest) as usize..];
        let current = !since.iter().any(|change| change.touches(cached.name_str()));
        if current {
            cached.valid_to.fetch_max(self.version, Ordering::Relaxed);
        }
        current
    }

    /// Empties the cache slots whose listeners include one of `removed` (removed pattern
    /// subscriptions), so their subscribers are dropped now rather than when the slot is reused.
    pub(crate) fn forget(&self, removed: &[&Arc<Entry>]) {
        let Some(cache) = self.cache.get() else { return };
        for slot in cache.slots.iter() {
            let holds = slot.load().as_ref().is_some_and(|cached| {
                cached
                    .listeners
                    .entries()
                    .any(|e| removed.iter().any(|r| Arc::ptr_eq(e, r)))
            });
            if holds {
                slot.store(None);
            }
        }
    }

    /// The pattern and catch-all subscriptions with the exclusions.
    pub(crate) fn wide(&self) -> Wide<'_> {
        Wide {
            entries: &self.wide[..],
            excluded: &self.excluded,
        }
    }

    /// The listeners of `name`, or `None` when nobody at all listens to it: [`Snapshot::lookup`],
    /// and an uncached name resolved against the pattern subscriptions and cached (unlistened
    /// names too, so a miss is paid once).
    #[inline(always)]
    pub(crate) fn resolve(&self, name: NameRef<'_>, hash: u64) -> Option<Arc<Resolved>> {
        match self.lookup(name.as_str(), hash) {
            Lookup::Nobody => None,
            Lookup::Found(resolved) => Some(resolved),
            Lookup::Uncached(_) => self.resolve_into_cache(name),
        }
    }

    #[cold]
    fn resolve_into_cache(&self, name: NameRef<'_>) -> Option<Arc<Resolved>> {
        let cache = self.cache.get_or_init(|| Cache::new(Box::default()));
        let matching: Group = self.wide().matching(name.as_str()).cloned().collect();
        let listeners = Listeners::of(&matching);
        #[cfg(test)]
        RESOLUTIONS.with(|n| n.set(n.get() + 1));
        let set = &cache.slots[ways_of(name.as_str())];
        let resolved = Arc::new(Resolved::with(name.into_name(), listeners, self.version));
        // The way of a stale entry of the name, an empty way, else the next way of the cache's eviction clock: two names
        // evicting in turn take different ways, so they end up both cached.
        let victim = set
            .iter()
            .position(|slot| {
                slot.load()
                    .as_ref()
                    .is_none_or(|old| old.name_str() == resolved.name_str())
            })
            .unwrap_or_else(|| cache.evictions.fetch_add(1, Ordering::Relaxed) % CACHE_WAYS);
        set[victim].store(Some(resolved.clone()));
        Some(resolved).filter(|r| r.has_listeners())
    }

    /// Number of names this snapshot holds resolved (exact names plus cached pattern names).
    // Used by the tests that loom does not build.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn resolved_names(&self) -> usize {
        let cached = self.cache.get().map_or(0, |c| {
            c.slots
                .iter()
                .filter(|s| {
                    s.load().as_ref().is_some_and(|r| {
                        !self.wide.is_empty() && !self.exact.contains_key(r.name_str()) && self.is_current(r)
                    })
                })
                .count()
        });
        self.exact.len() + cached
    }

    /// The exact subscriptions to `name`, in subscription order.
    pub(crate) fn exact_entries(&self, name: &str) -> Group {
        let mut entries = Group::new();
        if let Some(resolved) = self.exact.get(name) {
            resolved.listeners.each_entry(|e| {
                if e.is_exact() {
                    entries.push(e.clone());
                }
            });
        }
        Entry::sort_by_id(&mut entries);
        entries
    }

    /// The snapshot after `change`, and the names it added to or removed from `exact`.
    ///
    /// Costs O(log n) in the number of exact names plus the work on the names the change touches:
    /// an exact subscription re-resolves its name only (its exact subscriptions and the pattern
    /// subscriptions that match it); a pattern subscription added or removed re-resolves the exact
    /// names it matches (each tested once) and is logged for the cached names (see
    /// [`Snapshot::is_current`]); `unsubscribe_name` re-resolves its name.
    pub(crate) fn next(&self, change: Change<'_>) -> (Snapshot, SmallVec<[Membership; 1]>) {
        // Plain loops and pushes rather than `collect`s of chained iterators: SmallVec's
        // `extend` of a filtered chain cost some 100 instructions for one element.
        let mut changed_wide: SmallVec<[&Arc<Entry>; 1]> = SmallVec::new();
        for e in change.added.iter().chain(change.removed) {
            if !e.is_exact() {
                changed_wide.push(e);
            }
        }
        let wide: Arc<[Arc<Entry>]> = match changed_wide.is_empty() {
            true => self.wide.clone(),
            false => {
                let removed = |e: &Arc<Entry>| change.removed.iter().any(|r| Arc::ptr_eq(r, e));
                let kept = self.wide.iter().filter(|e| !removed(e));
                kept.chain(change.added.iter().filter(|e| !e.is_exact()))
                    .cloned()
                    .collect()
            }
        };
        let mut excluded = match change.name {
            Some((name, Some(first_after))) => {
                let mut changed = Exclusions::clone(&self.excluded);
                changed.insert(name.into(), first_after);
                Arc::new(changed)
            }
            _ => self.excluded.clone(),
        };
        // Exclusions only ever concern glob and regex subscriptions: none left, none kept.
        if !excluded.is_empty() && wide.iter().all(|e| e.pattern.is_all()) {
            excluded = Arc::default();
        }
        // The exact subscriptions added (true) or removed (false), by name, then id.
        let mut edits: SmallVec<[Edit<'_>; 1]> = SmallVec::new();
        for (list, added) in [(change.added, true), (change.removed, false)] {
            for e in list {
                if let Some(name) = e.pattern.exact_name() {
                    edits.push((name, e, added));
                }
            }
        }
        edits.sort_unstable_by(|a, b| a.0.cmp(b.0).then(a.1.id.cmp(&b.1.id)));
        let edited = |name: &str| edits.binary_search_by(|(n, _, _)| (***n).cmp(name)).is_ok();
        // Other names to resolve again: the `unsubscribe_name` one, the exact names a changed
        // pattern matches.
        let mut others: SmallVec<[Arc<str>; 1]> = SmallVec::new();
        if let Some((name, _)) = change.name {
            if !edited(name) && self.exact.contains_key(name) {
                others.push(name.into());
            }
        }
        if !changed_wide.is_empty() {
            self.exact.for_each(|name, _| {
                if !edited(name) && changed_wide.iter().any(|e| e.pattern.matches(name)) {
                    others.push(name.clone());
                }
            });
        }
        let mut exact = self.exact.clone();
        let mut membership = SmallVec::new();
        let mut resolve = |name: &Arc<str>, edits: &[Edit<'_>]| {
            let mut group = self.exact_entries(name);
            let before = !group.is_empty();
            if change.name.is_some_and(|(unsubscribed, _)| *unsubscribed == **name) {
                group.clear();
            }
            let removed = |e: &Arc<Entry>| edits.iter().any(|(_, r, added)| !added && r.id == e.id);
            match edits.len() {
                0 => (),
                // Many subscriptions of one name removed at once: ids in order, searched.
                1..=8 => group.retain(|e| !removed(e)),
                _ => {
                    let gone: Vec<SubscriptionId> = edits.iter().filter(|(_, _, a)| !a).map(|(_, e, _)| e.id).collect();
                    group.retain(|e| gone.binary_search(&e.id).is_err());
                }
            }
            group.extend(
                edits
                    .iter()
                    .filter(|(_, _, added)| *added)
                    .map(|(_, e, _)| Arc::clone(e)),
            );
            let after = !group.is_empty();
            if after {
                group.extend(wide.iter().filter(|w| w.matches(name, &excluded)).cloned());
                Entry::sort_by_id(&mut group);
                let resolved =
                    Resolved::new(Name::Shared(name.clone()), &group).expect("an exact subscription listens");
                exact.insert(name.clone(), resolved);
            } else if before {
                exact.remove(name);
            }
            if before != after {
                membership.push(Membership {
                    name: name.clone(),
                    added: after,
                });
            }
        };
        for same_name in edits.chunk_by(|a, b| a.0 == b.0) {
            resolve(same_name[0].0, same_name);
        }
        for name in &others {
            resolve(name, &[]);
        }
        // The cache is shared; a change of the pattern subscriptions or exclusions is logged, and
        // cached names it touches stop being current (`is_current`).
        let exclusion = change.name.filter(|(_, first_after)| first_after.is_some());
        let (version, log) = match changed_wide.is_empty() && exclusion.is_none() {
            true => (self.version, self.log.clone()),
            false => {
                let touched = Touched {
                    patterns: changed_wide.iter().map(|e| e.pattern.clone()).collect(),
                    names: exclusion.map(|(name, _)| name.into()).into_iter().collect(),
                };
                let keep = self.log.len().min(LOG_LEN - 1);
                let log = self.log[self.log.len() - keep..]
                    .iter()
                    .cloned()
                    .chain(std::iter::once(Arc::new(touched)))
                    .collect();
                (self.version + 1, log)
            }
        };
        let subscriptions = self.subscriptions + change.added.len() - change.removed.len();
        let next = Snapshot {
            exact,
            wide,
            excluded,
            cache: self.cache.clone(),
            version,
            log,
            subscriptions,
            serial: Serial::default(),
        };
        (next, membership)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serials_are_unique_and_never_0() {
        let (a, b) = (Serial::default(), Serial::default());
        assert_ne!(a, b);
        assert!(a.get() != 0 && b.get() != 0);
    }

    /// The writers' paths rewritten as plain loops (`Notifier::subscribe`'s `subscribe_one`,
    /// `exact_entries`, `Snapshot::next`'s edits): `subscribe` and `subscribe_all` share one id
    /// sequence, an exact name is delivered to its subscriptions of every kind in subscription
    /// order, and an unsubscribe removes exactly its own, from a name shared with a glob.
    #[test]
    fn subscribe_one_and_subscribe_all_share_ids_and_unsubscribe_removes_exactly_one() {
        use crate::{Event, EventContext, EventedSubscriber, Notifier, NotifyError, Payload};
        use std::sync::Mutex;

        struct Logs(Arc<Mutex<Vec<&'static str>>>, &'static str);
        impl EventedSubscriber for Logs {
            fn start(&self, _: &str, _: &EventContext, _: &Payload) {}
            fn finish(&self, _: &str, _: &EventContext, _: &Payload) {
                self.0.lock().unwrap().push(self.1);
            }
        }
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = |tag: &'static str| {
            let sink = seen.clone();
            Subscriber::event(move |_: &Event| sink.lock().unwrap().push(tag))
        };
        let notifier = Notifier::new();
        let a = notifier.subscribe("one.name", log("a"));
        let bc = notifier.subscribe_all([
            (Pattern::exact("one.name"), Subscriber::evented(Logs(seen.clone(), "b"))),
            (Pattern::glob("*.name").unwrap(), log("c")),
        ]);
        let d = notifier.subscribe("one.name", log("d"));
        let ids = [a.id(), bc[0].id(), bc[1].id(), d.id()];
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
        let run = || {
            notifier.instrument("one.name", Payload::new, |_| ());
            std::mem::take(&mut *seen.lock().unwrap())
        };
        // Evented finishes come before the event-object deliveries.
        assert_eq!(run(), ["b", "a", "c", "d"]);
        a.unsubscribe().unwrap();
        assert_eq!(run(), ["b", "c", "d"]);
        bc[0].unsubscribe().unwrap();
        d.unsubscribe().unwrap();
        assert_eq!(run(), ["c"]);
        assert_eq!(a.unsubscribe(), Err(NotifyError::NotFound));
        assert_eq!(run(), ["c"]);
    }

    /// What one subscription's entry costs (issue 15's memory target: notify-pool's
    /// `subscribe_all` at <= 200 bytes a subscription, notify-core's part <= 130): the entry is
    /// 72 bytes (88 with its `Arc`'s counts: glibc serves 80 and 88 from the same 96-byte chunk),
    /// a pattern 24 whatever its kind, a subscriber 32 (its label and silence key out of line),
    /// and the notifier's failure sink 8 (issue 33: where a panic in the subscriber's drop is
    /// reported).
    #[test]
    #[cfg(target_pointer_width = "64")]
    fn an_entry_is_72_bytes() {
        assert_eq!(std::mem::size_of::<Pattern>(), 24);
        assert_eq!(std::mem::size_of::<Subscriber>(), 32);
        assert_eq!(std::mem::size_of::<Entry>(), 72);
        assert_eq!(std::mem::size_of::<Listener<dyn CallClocked<SystemTime>>>(), 24);
    }
}
