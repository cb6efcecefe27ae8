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
    fn may_listen(&self, name: &str) -> bool {
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
                    excluded: Vec::new(),
                    subscriber,
                }));
            }
            let mut entries = Vec::with_capacity(snapshot.entries.len() + added.len());
            entries.extend(snapshot.entries.iter().cloned());
            entries.extend(added.iter().cloned());
            Some(snapshot.next(entries, Change::Entries(&added)))
        });
        added.iter().map(|e| e.id).collect()
    }

    /// Removes the subscriptions of `ids` that still exist, in one change; returns how many.
    pub(crate) fn unsubscribe_all(&self, ids: &FxHashSet<SubscriptionId>) -> usize {
        let mut removed = Vec::new();
        self.write(|snapshot| {
            let (gone, kept): (Vec<_>, Vec<_>) = snapshot.entries.iter().cloned().partition(|e| ids.contains(&e.id));
            removed = gone;
            (!removed.is_empty()).then(|| snapshot.next(kept, Change::Entries(&removed)))
        });
        removed.len()
    }

    /// Removes one subscription.
    ///
    /// # Errors
    /// [`NotifyError::NotFound`] when it does not exist (any more).
    pub(crate) fn unsubscribe_id(&self, id: SubscriptionId) -> Result<(), NotifyError> {
        let mut found = false;
        self.write(|snapshot| {
            let at = snapshot.entries.iter().position(|e| e.id == id)?;
            found = true;
            let mut entries = snapshot.entries.clone();
            let removed = entries.remove(at);
            Some(snapshot.next(entries, Change::Entries(&[removed])))
        });
        if found {
            Ok(())
        } else {
            Err(NotifyError::NotFound)
        }
    }

    /// AS::N's `unsubscribe("name")`: removes the exact subscriptions to `name` and excludes it from
    /// the glob and regex ones; returns how many exact subscriptions were removed.
    pub(crate) fn unsubscribe_name(&self, name: &str) -> usize {
        let mut removed = 0;
        self.write(|snapshot| {
            let mut entries = Vec::with_capacity(snapshot.entries.len());
            let mut changed = false;
            for entry in &snapshot.entries {
                match entry.pattern.exact_name() {
                    Some(exact) if **exact == *name => {
                        removed += 1;
                        changed = true;
                    }
                    Some(_) => entries.push(entry.clone()),
                    None if entry.pattern.is_all() || !entry.matches(name) => {
                        entries.push(entry.clone());
                    }
                    None => {
                        let mut excluded = entry.excluded.clone();
                        excluded.push(name.into());
                        entries.push(Arc::new(Entry {
                            id: entry.id,
                            pattern: entry.pattern.clone(),
                            excluded,
                            subscriber: entry.subscriber.clone(),
                        }));
                        changed = true;
                    }
                }
            }
            changed.then(|| snapshot.next(entries, Change::Name(name)))
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
}
