//! The registry snapshot: every subscription, plus the per-name listener sets already grouped by
//! kind. A snapshot is immutable once published; writers build the next one from the previous
//! one and swap it in (see `fanout.rs`).
//!
//! Names with an exact subscription are resolved when the snapshot is built (`exact`). Other names
//! matter only when a pattern or catch-all subscription exists (`wide`); they are resolved on first
//! use into a bounded direct-mapped cache owned by the snapshot. A new snapshot keeps every cached
//! entry that the change does not touch, so a change invalidates exactly the names it matches.

use std::hash::BuildHasher;
use std::sync::{Arc, OnceLock};

use arc_swap::ArcSwapOption;
use rustc_hash::{FxBuildHasher, FxHashMap, FxHashSet};

use crate::event::Name;
use crate::pattern::Pattern;
use crate::subscriber::{
    EventOptions, EventSubscriber, EventedSubscriber, Kind, MonotonicSubscriber, OwnedEventSubscriber,
    SilenceableSubscriber, Subscriber, TimedSubscriber,
};
use crate::subscription::SubscriptionId;

/// Slots of a snapshot's cache of names resolved through patterns (a power of two).
pub(crate) const CACHE_SLOTS: usize = 1024;

/// One subscription as the registry keeps it.
pub(crate) struct Entry {
    pub(crate) id: SubscriptionId,
    pub(crate) pattern: Pattern,
    /// Names removed from this pattern subscription by `unsubscribe_name` (AS::N's exclusions).
    pub(crate) excluded: Vec<Arc<str>>,
    pub(crate) subscriber: Subscriber,
}

impl Entry {
    pub(crate) fn matches(&self, name: &str) -> bool {
        self.pattern.matches(name) && !self.excluded.iter().any(|n| **n == *name)
    }

    pub(crate) fn is_exact(&self) -> bool {
        self.pattern.exact_name().is_some()
    }
}

/// One listener of a group: the typed subscriber and the subscription it came from.
pub(crate) struct Listener<T: ?Sized> {
    pub(crate) subscriber: Arc<T>,
    pub(crate) entry: Arc<Entry>,
}

/// The listeners of one event name, grouped by kind, in subscription order within each group.
#[derive(Default)]
pub(crate) struct Listeners {
    pub(crate) timed: Vec<Listener<dyn TimedSubscriber>>,
    pub(crate) monotonic: Vec<Listener<dyn MonotonicSubscriber>>,
    pub(crate) event: Vec<Listener<dyn EventSubscriber>>,
    pub(crate) evented: Vec<Listener<dyn EventedSubscriber>>,
    pub(crate) silenceable: Vec<Listener<dyn SilenceableSubscriber>>,
    pub(crate) owned: Vec<Listener<dyn OwnedEventSubscriber>>,
    /// Union of the event-object subscribers' options.
    pub(crate) options: EventOptions,
    /// True when an evented or silenceable subscriber asked for `EventedOptions::duration`.
    pub(crate) evented_duration: bool,
}

impl Listeners {
    fn push(&mut self, entry: &Arc<Entry>) {
        let entry = entry.clone();
        match &entry.subscriber.kind {
            Kind::Timed(s) => self.timed.push(Listener {
                subscriber: s.clone(),
                entry,
            }),
            Kind::Monotonic(s) => self.monotonic.push(Listener {
                subscriber: s.clone(),
                entry,
            }),
            Kind::Event(s, options) => {
                self.options.cpu_time |= options.cpu_time;
                self.options.allocations |= options.allocations;
                self.event.push(Listener {
                    subscriber: s.clone(),
                    entry,
                });
            }
            Kind::Evented(s, options) => {
                self.evented_duration |= options.duration;
                self.evented.push(Listener {
                    subscriber: s.clone(),
                    entry,
                });
            }
            Kind::Silenceable(s, options) => {
                self.evented_duration |= options.duration;
                self.silenceable.push(Listener {
                    subscriber: s.clone(),
                    entry,
                });
            }
            Kind::Owned(s) => self.owned.push(Listener {
                subscriber: s.clone(),
                entry,
            }),
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

/// An event name with its listeners: what an event captures when it starts.
pub(crate) struct Resolved {
    pub(crate) name: Name,
    pub(crate) listeners: Listeners,
}

impl Resolved {
    pub(crate) fn new<'a>(name: Name, entries: impl IntoIterator<Item = &'a Arc<Entry>>) -> Option<Arc<Resolved>> {
        let mut listeners = Listeners::default();
        for entry in entries.into_iter().filter(|e| e.matches(name.as_str())) {
            listeners.push(entry);
        }
        let resolved = Arc::new(Resolved { name, listeners });
        resolved.has_listeners().then_some(resolved)
    }

    /// True when the name has any listener at all (silenced or not).
    pub(crate) fn has_listeners(&self) -> bool {
        self.listeners.has_unconditional() || !self.listeners.silenceable.is_empty()
    }
}

/// One immutable state of the registry.
#[derive(Default)]
pub(crate) struct Snapshot {
    /// Every subscription in subscription order.
    pub(crate) entries: Vec<Arc<Entry>>,
    /// Pattern and catch-all subscriptions, in subscription order.
    pub(crate) wide: Vec<Arc<Entry>>,
    /// Names with at least one exact subscription, resolved against all subscriptions.
    pub(crate) exact: FxHashMap<Arc<str>, Arc<Resolved>>,
    /// Names resolved through `wide`, filled on first use; absent until a name needs it. Shared
    /// with the next snapshot when a change touches no pattern subscription: entries hold only
    /// what `wide` contributes, and exact names are looked up before the cache.
    pub(crate) cache: Arc<OnceLock<Box<[ArcSwapOption<Resolved>]>>>,
}

/// What a registry change touched, to keep the rest of the cache.
pub(crate) enum Change<'a> {
    /// These subscriptions were added or removed: every name they match may change.
    Entries(&'a [Arc<Entry>]),
    /// Only this name's listeners change (`unsubscribe_name`).
    Name(&'a str),
}

/// What [`Snapshot::lookup`] found.
pub(crate) enum Lookup<'s> {
    /// Nobody at all listens to the name.
    Nobody,
    /// The name's listeners (an exact name, or a cached one).
    Found(Arc<Resolved>),
    /// Only these pattern and catch-all subscriptions can match the name, and it is not cached.
    Uncached(&'s [Arc<Entry>]),
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

fn slot_of(name: &str) -> usize {
    (FxBuildHasher.hash_one(name) as usize) & (CACHE_SLOTS - 1)
}

impl Snapshot {
    /// The one lookup of a name's listener group, for `instrument`, `listening`, `listeners_for`,
    /// handles, `publish` and callsite refresh. Fast exits first: an exact name is one map lookup
    /// (skipped while there are no exact subscriptions); with no pattern subscription the answer is
    /// then [`Lookup::Nobody`]; else the name's slot in the cache. Never allocates: a name only
    /// patterns can match and not cached yet is [`Lookup::Uncached`], for the caller to resolve and
    /// cache ([`Snapshot::resolve`]) or to answer from the pattern subscriptions (`listening`).
    #[inline(always)]
    pub(crate) fn lookup(&self, name: &str) -> Lookup<'_> {
        if !self.exact.is_empty() {
            if let Some(found) = self.exact.get(name) {
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
            if let Some(hit) = &*cache[slot_of(name)].load() {
                if hit.name.as_str() == name {
                    return match hit.has_listeners() {
                        true => Lookup::Found(hit.clone()),
                        false => Lookup::Nobody,
                    };
                }
            }
        }
        Lookup::Uncached(&self.wide)
    }

    /// The listeners of `name`, or `None` when nobody at all listens to it: [`Snapshot::lookup`],
    /// and an uncached name resolved against the pattern subscriptions and cached (unlistened
    /// names too, so a miss is paid once).
    #[inline(always)]
    pub(crate) fn resolve(&self, name: NameRef<'_>) -> Option<Arc<Resolved>> {
        match self.lookup(name.as_str()) {
            Lookup::Nobody => None,
            Lookup::Found(resolved) => Some(resolved),
            Lookup::Uncached(_) => self.resolve_into_cache(name),
        }
    }

    #[cold]
    fn resolve_into_cache(&self, name: NameRef<'_>) -> Option<Arc<Resolved>> {
        let cache = self
            .cache
            .get_or_init(|| (0..CACHE_SLOTS).map(|_| ArcSwapOption::const_empty()).collect());
        let mut listeners = Listeners::default();
        for entry in self.wide.iter().filter(|e| e.matches(name.as_str())) {
            listeners.push(entry);
        }
        let slot = &cache[slot_of(name.as_str())];
        let resolved = Arc::new(Resolved {
            name: name.into_name(),
            listeners,
        });
        slot.store(Some(resolved.clone()));
        Some(resolved).filter(|r| r.has_listeners())
    }

    /// Number of names this snapshot holds resolved (exact names plus cached pattern names).
    #[cfg(test)]
    pub(crate) fn resolved_names(&self) -> usize {
        let cached = self.cache.get().map_or(0, |c| {
            c.iter()
                .filter(|s| {
                    s.load()
                        .as_ref()
                        .is_some_and(|r| !self.exact.contains_key(r.name.as_str()))
                })
                .count()
        });
        self.exact.len() + cached
    }

    /// The snapshot after `change`, given the full new list of subscriptions (in subscription
    /// order, which is also id order). Names the change does not touch keep their resolved
    /// listeners; the others are resolved again. Linear in the number of subscriptions and names.
    pub(crate) fn next(&self, entries: Vec<Arc<Entry>>, change: Change<'_>) -> Snapshot {
        let wide: Vec<Arc<Entry>> = entries.iter().filter(|e| !e.is_exact()).cloned().collect();
        let mut changed_names: FxHashSet<&str> = FxHashSet::default();
        let mut changed_wide: Vec<&Entry> = Vec::new();
        match change {
            Change::Entries(changed) => {
                for entry in changed {
                    match entry.pattern.exact_name() {
                        Some(name) => {
                            changed_names.insert(name);
                        }
                        None => changed_wide.push(entry),
                    }
                }
            }
            Change::Name(name) => {
                changed_names.insert(name);
            }
        }
        let touches = |name: &str| changed_names.contains(name) || changed_wide.iter().any(|e| e.pattern.matches(name));
        let mut exact = self.exact.clone();
        if changed_wide.is_empty() {
            for name in &changed_names {
                exact.remove(*name);
            }
        } else {
            exact.retain(|name, _| !touches(name));
        }
        // Exact names left unresolved: group their subscriptions, add the wide ones that match.
        // When no pattern subscription changed, those are exactly the changed names (every other
        // exact name was kept above): compare the few of them directly instead of hashing the
        // name of every subscription.
        let few: Option<Vec<&str>> =
            (changed_wide.is_empty() && changed_names.len() <= 8).then(|| changed_names.iter().copied().collect());
        let mut missing: FxHashMap<Arc<str>, Vec<&Arc<Entry>>> = FxHashMap::default();
        for entry in &entries {
            if let Some(name) = entry.pattern.exact_name() {
                let unresolved = match &few {
                    Some(few) => few.iter().any(|changed| **name == **changed),
                    None => !exact.contains_key(name),
                };
                if unresolved {
                    missing.entry(name.clone()).or_default().push(entry);
                }
            }
        }
        for (name, mut group) in missing {
            group.extend(wide.iter().filter(|w| w.matches(&name)));
            group.sort_by_key(|e| e.id);
            if let Some(resolved) = Resolved::new(Name::Shared(name.clone()), group) {
                exact.insert(name, resolved);
            }
        }
        let only_exact_changed = changed_wide.is_empty() && matches!(change, Change::Entries(_));
        let cache = match self.cache.get() {
            _ if wide.is_empty() => Arc::default(),
            _ if only_exact_changed => self.cache.clone(),
            None => Arc::default(),
            Some(old) => {
                let kept: Box<[ArcSwapOption<Resolved>]> = old
                    .iter()
                    .map(|slot| ArcSwapOption::new(slot.load_full().filter(|r| !touches(r.name.as_str()))))
                    .collect();
                Arc::new(OnceLock::from(kept))
            }
        };
        Snapshot {
            entries,
            wide,
            exact,
            cache,
        }
    }
}
