//! [`Callsite`]: one `static` per instrumentation site, caching whether anybody listens to its
//! event name, so an unlistened site costs one atomic load and a branch.
//!
//! The protocol, after `tracing-core`'s callsite registry:
//!
//! * A callsite starts *unregistered*. Its first use takes the global notifier's writer lock,
//!   computes its listener set from the current snapshot, stores it, and joins the notifier's list
//!   of callsites — all under the lock.
//! * Every subscription change, under the same lock, swaps in the new snapshot and then refreshes
//!   every registered callsite before the lock is released and before `subscribe`/`unsubscribe`
//!   returns.
//!
//! So a callsite's state is never older than the last completed change: registration and refresh
//! are serialised, and a thread that starts an event after a `subscribe` returned (in the
//! happens-before sense) reads the refreshed interest by coherence, whatever thread subscribed.
//! Nothing is derived from thread-local state. The `loom` model at the bottom checks the protocol: `RUSTFLAGS="--cfg loom" cargo test -p notify-base --lib loom`.

use crate::dispatch::{self, Active};
use crate::fanout::{self, SiteCache, SiteInterest, SitePin};
use crate::handle::Handle;
use crate::location::Location;
use crate::payload::Payload;
use crate::registry::Lookup;

/// What a callsite knows about its listeners.
///
/// ```
/// use notify_core::event::{Callsite, Interest};
/// static SITE: Callsite = Callsite::new("interest.doc");
/// assert_eq!(SITE.interest(), Interest::Unknown);
/// SITE.instrument(notify_core::Payload::new, |_| ());
/// assert_eq!(SITE.interest(), Interest::Never);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Interest {
    /// Not used yet: the first use registers it.
    Unknown,
    /// Nobody listens to its name: instrumenting is one atomic load and a branch.
    Never,
    /// Somebody matches its name (they may still be silenced at run time).
    Sometimes,
}

/// An instrumentation site with a fixed event name, for a `static` (what `#[instrument_event]`
/// generates). It always instruments against [`Notifier::global`](crate::Notifier::global).
///
/// ```
/// use notify_core::{event::Callsite, Payload};
/// static QUERY: Callsite = Callsite::new("query.db");
///
/// fn query(sql: &str) -> usize {
///     QUERY.instrument(|| Payload::new().with("sql", sql.to_owned()), |payload| {
///         payload.insert("rows", 0_u64);
///         0
///     })
/// }
/// assert_eq!(query("SELECT 1"), 0);
/// ```
pub struct Callsite {
    cache: SiteCache,
    location: Option<Location>,
}

impl Callsite {
    /// A callsite for events named `name`.
    ///
    /// ```
    /// static SITE: notify_core::event::Callsite = notify_core::event::Callsite::new("a.b");
    /// assert_eq!(SITE.name(), "a.b");
    /// ```
    #[cfg(not(loom))]
    pub const fn new(name: &'static str) -> Callsite {
        Callsite {
            cache: SiteCache::new(name),
            location: None,
        }
    }

    /// (loom builds: not `const`.)
    #[cfg(loom)]
    pub fn new(name: &'static str) -> Callsite {
        Callsite {
            cache: SiteCache::new(name),
            location: None,
        }
    }

    /// A callsite for events named `name` instrumented at `location` (what `#[instrument_event]`
    /// generates): its events carry the location ([`Event::location`](crate::Event::location)).
    ///
    /// ```
    /// use notify_core::event::{Callsite, Location};
    /// static SITE: Callsite = Callsite::at("a.b", Location::new(file!(), line!(), module_path!()));
    /// assert_eq!(SITE.location().map(Location::line), Some(line!() - 1));
    /// ```
    #[cfg(not(loom))]
    pub const fn at(name: &'static str, location: Location) -> Callsite {
        let mut callsite = Callsite::new(name);
        callsite.location = Some(location);
        callsite
    }

    /// (loom builds: not `const`.)
    #[cfg(loom)]
    pub fn at(name: &'static str, location: Location) -> Callsite {
        let mut callsite = Callsite::new(name);
        callsite.location = Some(location);
        callsite
    }

    /// Where the callsite is, when it was made with [`Callsite::at`].
    pub fn location(&'static self) -> Option<&'static Location> {
        self.location.as_ref()
    }

    /// The event name.
    ///
    /// ```
    /// static SITE: notify_core::event::Callsite = notify_core::event::Callsite::new("a.b");
    /// assert_eq!(SITE.name(), "a.b");
    /// ```
    pub fn name(&self) -> &'static str {
        self.cache.name()
    }

    /// The cached interest (does not register).
    ///
    /// ```
    /// static SITE: notify_core::event::Callsite = notify_core::event::Callsite::new("cached.doc");
    /// assert_eq!(SITE.interest(), notify_core::event::Interest::Unknown);
    /// ```
    pub fn interest(&self) -> Interest {
        match self.cache.interest() {
            SiteInterest::Unregistered => Interest::Unknown,
            SiteInterest::Never => Interest::Never,
            SiteInterest::Sometimes => Interest::Sometimes,
        }
    }

    /// True when someone might listen (registers the callsite on first use). `false` is exact:
    /// nobody listens. `true` may still end in every listener being silenced.
    ///
    /// ```
    /// static SITE: notify_core::event::Callsite = notify_core::event::Callsite::new("enabled.doc");
    /// assert!(!SITE.is_enabled());
    /// ```
    #[inline(always)]
    pub fn is_enabled(&'static self) -> bool {
        self.cache.is_enabled()
    }

    /// As [`Notifier::instrument`](crate::Notifier::instrument) on the global notifier, with this callsite's name. Unlistened,
    /// it is one atomic load and a branch before `body` runs.
    ///
    /// ```
    /// static SITE: notify_core::event::Callsite = notify_core::event::Callsite::new("instrument.doc");
    /// assert_eq!(SITE.instrument(notify_core::Payload::new, |_| 5), 5);
    /// ```
    #[inline(always)]
    pub fn instrument<T>(&'static self, payload: impl FnOnce() -> Payload, body: impl FnOnce(&mut Payload) -> T) -> T {
        if !self.is_enabled() {
            return dispatch::unlistened(body);
        }
        self.instrument_listened(payload, body)
    }

    #[inline(never)]
    fn instrument_listened<T>(
        &'static self,
        payload: impl FnOnce() -> Payload,
        body: impl FnOnce(&mut Payload) -> T,
    ) -> T {
        self.cache.with_listeners(|found| match found {
            Some(resolved) => dispatch::run(fanout::global(), resolved, None, self.location.as_ref(), payload, body),
            None => dispatch::unlistened(body),
        })
    }

    /// A handle for this callsite's event, not started yet, or `None` when nobody listens (then
    /// `payload` is not called). What `#[instrument_event]` uses for async fns and early returns.
    ///
    /// ```
    /// static SITE: notify_core::event::Callsite = notify_core::event::Callsite::new("handle.doc");
    /// assert!(SITE.handle(notify_core::Payload::new).is_none());
    /// ```
    #[inline(always)]
    pub fn handle(&'static self, payload: impl FnOnce() -> Payload) -> Option<Handle> {
        if !self.is_enabled() {
            return None;
        }
        self.handle_listened(payload)
    }

    #[inline(never)]
    fn handle_listened(&'static self, payload: impl FnOnce() -> Payload) -> Option<Handle> {
        let resolved = self.cache.resolved()?;
        let name = resolved.name().clone();
        let mut prepared = Active::prepare(fanout::global(), resolved)?;
        prepared.set_location(self.location.as_ref());
        // The handle first, so that a `payload` that panics drops it unstarted, which reports
        // the failures of the `silenced` calls just made (`Handle`'s drop).
        let mut handle = Handle::prepared(name, prepared, Payload::default());
        *handle.payload_mut() = payload();
        Some(handle)
    }

    /// The listeners of a listened callsite, asked (silenceable ones) and ready to start; `None`
    /// when nobody would receive the event. The set stays pinned by the callsite cache's guard
    /// (no reference count touched): for the macro's synchronous guard, which lives in the
    /// caller's frame. (Pinned as `instrument` pins it, through the thread's hazard slot, this
    /// path measured slower: the pin is moved into the guard; docs/architecture.md.)
    #[inline]
    pub(crate) fn prepare(&'static self) -> Option<Active<SitePin>> {
        let resolved = self.cache.site_pin()?;
        let mut active = Active::prepare(fanout::global(), resolved)?;
        active.set_location(self.location.as_ref());
        Some(active)
    }

    /// True when an event of this callsite would reach a subscriber now (asks silenceable ones).
    ///
    /// ```
    /// static SITE: notify_core::event::Callsite = notify_core::event::Callsite::new("listening.doc");
    /// assert!(!SITE.listening());
    /// ```
    pub fn listening(&'static self) -> bool {
        self.is_enabled()
            && self
                .cache
                .resolved()
                .is_some_and(|r| dispatch::listening(self.name(), Lookup::Found(r)))
    }
}

impl std::fmt::Debug for Callsite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Callsite")
            .field("name", &self.name())
            .field("interest", &self.interest())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::event::Event;
    use crate::notifier::Notifier;
    use crate::pattern::Pattern;
    use crate::subscriber::Subscriber;

    static OUTER: Callsite = Callsite::new("callsite_lookup.outer");
    static INNER: Callsite = Callsite::new("callsite_lookup.inner");
    static GLOBBED: Callsite = Callsite::new("callsite_lookup_glob.only");

    /// `Callsite::instrument` looks its listeners up as `Notifier::instrument` does, pinned in the
    /// thread's hazard slot: a callsite's event inside another's (the slot busy: the `arc-swap`
    /// fallback) and a name known only through a glob (its set held in the pin) reach their
    /// listeners, and nothing after the unsubscription.
    #[test]
    fn nested_and_glob_only_callsite_events_reach_their_listeners() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = |seen: &Arc<Mutex<Vec<String>>>| {
            let seen = seen.clone();
            Subscriber::event(move |e: &Event| seen.lock().unwrap().push(e.name().to_owned()))
        };
        let exact = [
            Notifier::global().subscribe("callsite_lookup.outer", record(&seen)),
            Notifier::global().subscribe("callsite_lookup.inner", record(&seen)),
        ];
        let glob = Notifier::global().subscribe(Pattern::glob("callsite_lookup_glob.*").unwrap(), record(&seen));
        let value = OUTER.instrument(Payload::new, |_| INNER.instrument(Payload::new, |_| 7));
        GLOBBED.instrument(Payload::new, |_| ());
        assert_eq!(value, 7);
        assert_eq!(
            *seen.lock().unwrap(),
            [
                "callsite_lookup.inner",
                "callsite_lookup.outer",
                "callsite_lookup_glob.only"
            ]
        );
        for subscription in exact.into_iter().chain([glob]) {
            subscription.unsubscribe().unwrap();
        }
        OUTER.instrument(Payload::new, |_| INNER.instrument(Payload::new, |_| ()));
        GLOBBED.instrument(Payload::new, |_| ());
        assert_eq!(seen.lock().unwrap().len(), 3);
        assert_eq!(OUTER.interest(), Interest::Never);
    }
}

#[cfg(all(test, loom))]
mod loom_model {
    //! The callsite protocol under every interleaving loom finds: registration racing a
    //! subscription change never leaves a callsite with a stale interest.
    use super::*;
    use crate::fanout::Fanout;
    use crate::subscriber::Subscriber;
    use loom::sync::atomic::AtomicBool;
    use loom::sync::Arc as LoomArc;

    fn site() -> &'static Callsite {
        Box::leak(Box::new(Callsite::new("loom.site")))
    }

    #[test]
    fn loom_registration_races_subscribe() {
        loom::model(|| {
            let notifier = Fanout::new(true);
            let site = site();
            let writer = notifier.clone();
            let t = loom::thread::spawn(move || {
                writer.subscribe_all(vec![("loom.site".into(), Subscriber::event(|_: &crate::Event| {}))]);
            });
            notifier.register_callsite(&site.cache);
            t.join().unwrap();
            assert_eq!(site.interest(), Interest::Sometimes);
        });
    }

    #[test]
    fn loom_registration_races_unsubscribe() {
        loom::model(|| {
            let notifier = Fanout::new(true);
            let id = notifier.subscribe_all(vec![("loom.site".into(), Subscriber::event(|_: &crate::Event| {}))])[0];
            let writer = notifier.clone();
            let site = site();
            let t = loom::thread::spawn(move || {
                writer.unsubscribe_id(id).unwrap();
            });
            notifier.register_callsite(&site.cache);
            t.join().unwrap();
            assert_eq!(site.interest(), Interest::Never);
        });
    }

    #[test]
    fn loom_reader_after_subscribe_sees_interest() {
        loom::model(|| {
            let notifier = Fanout::new(true);
            let site = site();
            notifier.register_callsite(&site.cache);
            assert_eq!(site.interest(), Interest::Never);
            let done = LoomArc::new(AtomicBool::new(false));
            let (writer, flag) = (notifier.clone(), done.clone());
            let t = loom::thread::spawn(move || {
                writer.subscribe_all(vec![("loom.site".into(), Subscriber::event(|_: &crate::Event| {}))]);
                flag.store(true, std::sync::atomic::Ordering::Release);
            });
            if done.load(std::sync::atomic::Ordering::Acquire) {
                // subscribe returned before this read: the fast path must not say "never".
                assert_eq!(site.interest(), Interest::Sometimes);
            }
            t.join().unwrap();
        });
    }
}
