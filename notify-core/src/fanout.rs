//! The engine (AS::N's fanout): the current registry [`Snapshot`] and everything that changes it.
//!
//! Readers (`instrument`, `listening`, callsites) load the snapshot through `arc-swap` and never
//! lock. Writers (`subscribe`, `unsubscribe`) serialise on one mutex, build the next snapshot from
//! the current one, swap it in, update the name filter, refresh the registered callsites, and only
//! then drop the old snapshot (after releasing the mutex, so a subscriber's `Drop` may itself
//! subscribe). The failure policy, the failure hook, the nested-delivery limit and the redaction
//! policy live here too; dispatch applies them.
//!
//! This module calls no subscriber callback: that is `dispatch.rs`'s job.

use std::hash::BuildHasher;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};

use arc_swap::{ArcSwap, ArcSwapOption};
use rustc_hash::{FxBuildHasher, FxHashSet};

use crate::error::NotifyError;
use crate::event::Name;
use crate::failure::{default_hook, FailurePolicy, Hook};
use crate::pattern::Pattern;
use crate::redaction::Redaction;
use crate::registry::{Change, Entry, Lookup, NameRef, Resolved, Snapshot};
use crate::subscriber::Subscriber;
use crate::subscription::SubscriptionId;
use crate::sync::{AtomicU8, Mutex, RwLock};

/// The default of [`Fanout::max_depth`]: how many deliveries may nest on one thread.
pub(crate) const DEFAULT_MAX_DEPTH: u32 = 32;

/// One notifier's registry and policies; `Notifier` is a handle to one.
pub(crate) struct Fanout {
    snapshot: ArcSwap<Snapshot>,
    /// A one-hash Bloom filter of the names of the current snapshot's exact subscriptions (every
    /// bit set while a pattern or catch-all subscription exists), so `instrument` on a name nobody
    /// listens to skips the snapshot load. Written under the writer lock right after each swap,
    /// before the change returns.
    names: [AtomicU64; NAME_FILTER_WORDS],
    writer: Mutex<Writer>,
    next_subscription: AtomicU64,
    policy: AtomicU8,
    hook: RwLock<Hook>,
    /// Nested deliveries allowed on one thread (see `dispatch::Nesting`).
    max_depth: AtomicU32,
    /// Events not delivered because the nesting limit was reached, and whether that was reported.
    too_deep: AtomicU64,
    too_deep_reported: AtomicBool,
    /// True while `redaction` holds a policy: the one relaxed load a listened event pays for
    /// redaction when none is set.
    redacting: AtomicBool,
    redaction: ArcSwapOption<Redaction>,
    is_global: bool,
}

/// Words of [`Fanout::names`]: 4,096 bits, one per name hash.
const NAME_FILTER_WORDS: usize = 64;

/// The bit of `name` in [`Fanout::names`]: (word, mask).
#[inline]
fn name_bit(name: &str) -> (usize, u64) {
    let hash = FxBuildHasher.hash_one(name) as usize;
    ((hash >> 6) % NAME_FILTER_WORDS, 1 << (hash & 63))
}

/// The value of [`Fanout::names`] for `snapshot`.
fn name_filter(snapshot: &Snapshot) -> [u64; NAME_FILTER_WORDS] {
    if !snapshot.wide.is_empty() {
        return [u64::MAX; NAME_FILTER_WORDS];
    }
    let mut words = [0; NAME_FILTER_WORDS];
    for name in snapshot.exact.keys() {
        let (word, mask) = name_bit(name);
        words[word] |= mask;
    }
    words
}

#[derive(Default)]
struct Writer {
    callsites: Vec<&'static SiteCache>,
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
/// snapshot's `arc-swap` guard and, for a name resolved through pattern subscriptions, its set.
#[derive(Default)]
pub(crate) struct Pinned {
    snapshot: Option<arc_swap::Guard<Arc<Snapshot>>>,
    resolved: Option<Arc<Resolved>>,
}

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

/// What a callsite caches of the global fanout: whether anybody listens to its name, and who.
/// Registered with the fanout on first use and refreshed by every change, under the writer lock
/// (the protocol is described in `callsite.rs`).
pub(crate) struct SiteCache {
    name: &'static str,
    interest: AtomicU8,
    resolved: ArcSwapOption<Resolved>,
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
        }
    }

    #[cfg(loom)]
    pub(crate) fn new(name: &'static str) -> SiteCache {
        SiteCache {
            name,
            interest: AtomicU8::new(UNREGISTERED),
            resolved: ArcSwapOption::const_empty(),
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

    /// The listeners cached at the last refresh, pinned by the returned guard (borrowing them
    /// touches no reference count).
    #[inline(always)]
    pub(crate) fn pinned(&self) -> arc_swap::Guard<Option<Arc<Resolved>>> {
        self.resolved.load()
    }

    /// As [`SiteCache::pinned`], `None` when nobody listens.
    #[inline]
    pub(crate) fn site_pin(&self) -> Option<SitePin> {
        SitePin::new(self.resolved.load())
    }

    fn is_registered(&self) -> bool {
        self.interest.load(Ordering::Relaxed) != UNREGISTERED
    }

    /// Recomputes the state from `snapshot`; called under the writer lock.
    fn refresh(&self, snapshot: &Snapshot) {
        let resolved = snapshot.resolve(NameRef::Owned(Name::Static(self.name)));
        let interest = if resolved.is_some() { SOMETIMES } else { NEVER };
        self.resolved.store(resolved);
        self.interest.store(interest, Ordering::Release);
    }
}

impl Fanout {
    /// A new, empty fanout; `is_global` makes it refresh registered callsites.
    pub(crate) fn new(is_global: bool) -> Arc<Fanout> {
        Arc::new(Fanout {
            snapshot: ArcSwap::from_pointee(Snapshot::default()),
            names: [const { AtomicU64::new(0) }; NAME_FILTER_WORDS],
            writer: Mutex::new(Writer::default()),
            next_subscription: AtomicU64::new(1),
            policy: AtomicU8::new(0),
            hook: RwLock::new(default_hook()),
            max_depth: AtomicU32::new(DEFAULT_MAX_DEPTH),
            too_deep: AtomicU64::new(0),
            too_deep_reported: AtomicBool::new(false),
            redacting: AtomicBool::new(false),
            redaction: ArcSwapOption::empty(),
            is_global,
        })
    }

    pub(crate) fn is_global(&self) -> bool {
        self.is_global
    }

    /// The listeners of `name` now, or `None` when nobody at all listens (the name filter first,
    /// then the snapshot's [`Snapshot::resolve`]).
    #[inline(always)]
    pub(crate) fn lookup(&self, name: &str) -> Option<Arc<Resolved>> {
        if !self.may_listen(name) {
            return None;
        }
        self.snapshot.load().resolve(NameRef::Borrowed(name))
    }

    /// The listeners of `name` now (`None` when nobody at all listens), borrowed from the current
    /// snapshot, which `pin` keeps alive (callers test [`Fanout::may_listen`] first, so that an
    /// unlistened name costs no `Pinned`): `instrument`'s path, which touches no reference count
    /// for a name with an exact subscription. Names known only through pattern subscriptions are
    /// resolved as [`Fanout::lookup`] does (their set held in `pin` too).
    #[inline(always)]
    pub(crate) fn listeners<'p>(&self, name: &str, pin: &'p mut Pinned) -> Option<&'p Resolved> {
        let Pinned { snapshot, resolved } = pin;
        let snapshot: &'p Snapshot = snapshot.insert(self.snapshot.load());
        if !snapshot.exact.is_empty() {
            if let Some(found) = snapshot.exact.get(name) {
                return Some(found);
            }
        }
        if snapshot.wide.is_empty() {
            return None;
        }
        *resolved = snapshot.resolve(NameRef::Borrowed(name));
        resolved.as_deref()
    }

    /// As [`Fanout::lookup`] for an owned name (handles, `publish_event`): a name cached is kept
    /// as it is rather than copied.
    pub(crate) fn lookup_name(&self, name: Name) -> Option<Arc<Resolved>> {
        if !self.may_listen(name.as_str()) {
            return None;
        }
        self.snapshot.load().resolve(NameRef::Owned(name))
    }

    /// Runs `answer` on what [`Snapshot::lookup`] finds for `name`, without resolving or caching
    /// anything (`listening`: never allocates).
    pub(crate) fn probe<R>(&self, name: &str, answer: impl FnOnce(Lookup<'_>) -> R) -> R {
        if !self.may_listen(name) {
            return answer(Lookup::Nobody);
        }
        answer(self.snapshot.load().lookup(name))
    }

    /// False when nobody listens to `name` (exact); true when someone may (a filter collision, a
    /// pattern subscription, or a listener).
    #[inline(always)]
    pub(crate) fn may_listen(&self, name: &str) -> bool {
        let (word, mask) = name_bit(name);
        self.names[word].load(Ordering::Acquire) & mask != 0
    }

    /// How many subscriptions there are.
    pub(crate) fn subscription_count(&self) -> usize {
        self.snapshot.load().entries.len()
    }

    /// Applies one change under the writer lock; `build` returns `None` for "nothing changed".
    fn write(&self, build: impl FnOnce(&Snapshot) -> Option<Snapshot>) -> bool {
        let writer = self.writer.lock();
        let current = self.snapshot.load_full();
        let Some(next) = build(&current) else { return false };
        let filter = name_filter(&next);
        let old = self.snapshot.swap(Arc::new(next));
        for (word, bits) in self.names.iter().zip(filter) {
            word.store(bits, Ordering::Release);
        }
        if self.is_global {
            let snapshot = self.snapshot.load();
            for callsite in &writer.callsites {
                callsite.refresh(&snapshot);
            }
        }
        drop(writer);
        // `current` and `old` may hold the last references to removed subscribers: drop them
        // outside the lock, so a subscriber's Drop may subscribe.
        drop((current, old));
        true
    }

    /// Adds every `(pattern, subscriber)` pair in one change; returns their ids in order.
    pub(crate) fn subscribe_all(&self, pairs: Vec<(Pattern, Subscriber)>) -> Vec<SubscriptionId> {
        let mut added = Vec::with_capacity(pairs.len());
        self.write(|snapshot| {
            for (pattern, subscriber) in pairs {
                let id = SubscriptionId(self.next_subscription.fetch_add(1, Ordering::Relaxed));
                added.push(Arc::new(Entry {
                    id,
                    pattern,
                    subscriber,
                }));
            }
            let mut entries = Vec::with_capacity(snapshot.entries.len() + added.len());
            entries.extend(snapshot.entries.iter().cloned());
            entries.extend(added.iter().cloned());
            Some(snapshot.next(entries, snapshot.excluded.clone(), Change::Entries(&added)))
        });
        added.iter().map(|e| e.id).collect()
    }

    /// Removes the subscriptions of `ids` that still exist, in one change; returns how many.
    pub(crate) fn unsubscribe_all(&self, ids: &FxHashSet<SubscriptionId>) -> usize {
        let mut removed = Vec::new();
        self.write(|snapshot| {
            let (gone, kept): (Vec<_>, Vec<_>) = snapshot.entries.iter().cloned().partition(|e| ids.contains(&e.id));
            removed = gone;
            (!removed.is_empty()).then(|| snapshot.next(kept, snapshot.excluded.clone(), Change::Entries(&removed)))
        });
        self.release(&removed);
        removed.len()
    }

    /// After removing `removed`: empties the cache slots still holding a removed pattern
    /// subscription, so its subscriber is dropped when the last event using it finishes, as an
    /// exact one is. Skipped (the usual case: the removed patterns matched no cached name, or the
    /// cache holds no name) when nothing but `removed` holds them any more.
    fn release(&self, removed: &[Arc<Entry>]) {
        let held: Vec<&Arc<Entry>> = removed
            .iter()
            .filter(|e| !e.is_exact() && Arc::strong_count(e) > 1)
            .collect();
        if !held.is_empty() {
            self.snapshot.load().forget(&held);
        }
    }

    /// Removes one subscription.
    ///
    /// # Errors
    /// [`NotifyError::NotFound`] when it does not exist (any more).
    pub(crate) fn unsubscribe_id(&self, id: SubscriptionId) -> Result<(), NotifyError> {
        let mut removed = None;
        self.write(|snapshot| {
            let at = snapshot.entries.iter().position(|e| e.id == id)?;
            let mut entries = snapshot.entries.clone();
            let entry = entries.remove(at);
            let next = snapshot.next(
                entries,
                snapshot.excluded.clone(),
                Change::Entries(std::slice::from_ref(&entry)),
            );
            removed = Some(entry);
            Some(next)
        });
        match removed {
            Some(entry) => {
                self.release(std::slice::from_ref(&entry));
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
        let mut removed = 0;
        self.write(|snapshot| {
            let entries: Vec<Arc<Entry>> = match snapshot.exact.contains_key(name) {
                true => {
                    let kept: Vec<_> = snapshot
                        .entries
                        .iter()
                        .filter(|e| e.pattern.exact_name().is_none_or(|exact| **exact != *name))
                        .cloned()
                        .collect();
                    removed = snapshot.entries.len() - kept.len();
                    kept
                }
                false => snapshot.entries.clone(),
            };
            // A pattern subscription (not a catch-all) that still receives the name: exclude it.
            let exclude = snapshot.wide().matching(name).any(|e| !e.pattern.is_all());
            if removed == 0 && !exclude {
                return None;
            }
            let mut excluded = snapshot.excluded.clone();
            if exclude {
                let first_after = SubscriptionId(self.next_subscription.load(Ordering::Relaxed));
                excluded.insert_mut(name.into(), first_after);
            }
            Some(snapshot.next(entries, excluded, Change::Name(name)))
        });
        removed
    }

    /// How many event names the snapshot holds resolved (for tests).
    #[cfg(test)]
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
        writer.callsites.push(callsite);
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

    pub(crate) fn hook(&self) -> Hook {
        self.hook.read().clone()
    }

    pub(crate) fn set_hook(&self, hook: Hook) {
        *self.hook.write() = hook;
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
    use crate::dispatch;
    use crate::payload::Payload;

    fn noop() -> Subscriber {
        Subscriber::event(|_: &crate::Event| {})
    }

    fn instrument(fanout: &Fanout, name: &str) {
        if let Some(resolved) = fanout.lookup(name) {
            dispatch::run(fanout, resolved, None, None, Payload::new, |_| ());
        }
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
        assert_eq!(fanout.snapshot.load().excluded.size(), 0);
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
        assert_eq!(snapshot.excluded.size(), 10_000);
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
}
