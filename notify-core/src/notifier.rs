//! [`Notifier`]: the registry of subscriptions and the entry point for instrumenting (AS::N's
//! `Fanout` plus `Instrumenter`).
//!
//! Readers (`instrument`, `listening`, callsites) load the current [`Snapshot`] through `arc-swap`
//! and never lock. Writers (`subscribe`, `unsubscribe`) serialise on one mutex, build the next
//! snapshot from the current one, swap it in, refresh the callsites, and only then drop the old
//! snapshot (after releasing the mutex, so a subscriber's `Drop` may itself subscribe).

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Weak};
use std::time::SystemTime;

use arc_swap::{ArcSwap, ArcSwapOption};
use once_cell::sync::Lazy;
use parking_lot::RwLock;
use rustc_hash::{FxBuildHasher, FxHashSet};
use std::hash::BuildHasher;

use crate::sync::Mutex;

use crate::callsite::Callsite;
use crate::context::Context;
use crate::dispatch::{self, deliver_event};
use crate::error::NotifyError;
use crate::event::{monotonic_clock, Event, Name};
use crate::failure::{
    default_hook, guarded, FailurePolicy, Hook, SubscriberErrors, SubscriberFailure, SUBSCRIBER_FAILED,
};
use crate::handle::Handle;
use crate::pattern::Pattern;
use crate::payload::Payload;
use crate::redaction::Redaction;
use crate::registry::{Change, Entry, Resolved, Snapshot};
use crate::subscriber::Subscriber;

pub(crate) struct Inner {
    pub(crate) snapshot: ArcSwap<Snapshot>,
    /// A one-hash Bloom filter of the names of the current snapshot's exact subscriptions (every
    /// bit set while a pattern or catch-all subscription exists), so `instrument` on a name nobody
    /// listens to skips the snapshot load. Written under the writer lock right after each swap,
    /// before the change returns.
    names: [AtomicU64; NAME_FILTER_WORDS],
    writer: Mutex<Writer>,
    next_subscription: AtomicU64,
    policy: AtomicU8,
    /// True while `redaction` holds a policy: the one relaxed load a listened event pays for
    /// redaction when none is set.
    redacting: AtomicBool,
    redaction: ArcSwapOption<Redaction>,
    hook: RwLock<Hook>,
    is_global: bool,
}

/// Words of [`Inner::names`]: 4,096 bits, one per name hash.
const NAME_FILTER_WORDS: usize = 64;

/// The bit of `name` in [`Inner::names`]: (word, mask).
#[inline]
fn name_bit(name: &str) -> (usize, u64) {
    let hash = FxBuildHasher.hash_one(name) as usize;
    ((hash >> 6) % NAME_FILTER_WORDS, 1 << (hash & 63))
}

/// The value of [`Inner::names`] for `snapshot`.
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
    callsites: Vec<&'static Callsite>,
}

/// A registry of subscriptions, and what instruments against it.
///
/// [`Notifier::global`] is the process-wide default that the free functions
/// ([`instrument`](crate::instrument), [`subscribe`](crate::subscribe), …) and
/// `#[instrument_event]` use; [`Notifier::new`] makes an independent one (tests use their own).
/// Cloning is cheap and shares the registry.
///
/// ```
/// use notify_core::{Notifier, Payload, Subscriber};
/// use std::sync::{Arc, atomic::{AtomicU64, Ordering}};
///
/// let notifier = Notifier::new();
/// let rows = Arc::new(AtomicU64::new(0));
/// let seen = rows.clone();
/// let subscription = notifier.subscribe("sql.query", Subscriber::event(move |e: &notify_core::Event| {
///     seen.fetch_add(e.payload().get("rows").and_then(|v| v.as_i64()).unwrap_or(0) as u64, Ordering::SeqCst);
/// }));
/// let names = notifier.instrument("sql.query", || Payload::new().with("sql", "SELECT name FROM users"), |payload| {
///     payload.insert("rows", 2_u64);
///     vec!["ada", "grace"]
/// });
/// assert_eq!(names.len(), 2);
/// assert_eq!(rows.load(Ordering::SeqCst), 2);
/// subscription.unsubscribe()?;
/// assert!(!notifier.listening("sql.query"));
/// # Ok::<(), notify_core::NotifyError>(())
/// ```
#[derive(Clone)]
pub struct Notifier {
    pub(crate) inner: Arc<Inner>,
}

static GLOBAL: Lazy<Notifier> = Lazy::new(|| Notifier::with_global(true));

impl Default for Notifier {
    fn default() -> Notifier {
        Notifier::new()
    }
}

impl Notifier {
    /// A new, empty notifier, independent of the global one.
    ///
    /// ```
    /// let notifier = notify_core::Notifier::new();
    /// assert_eq!(notifier.subscriber_count(), 0);
    /// ```
    pub fn new() -> Notifier {
        Notifier::with_global(false)
    }

    /// A notifier that refreshes registered callsites (as the global one does), for the loom model.
    #[cfg(all(test, loom))]
    pub(crate) fn tracking_callsites() -> Notifier {
        Notifier::with_global(true)
    }

    fn with_global(is_global: bool) -> Notifier {
        Notifier {
            inner: Arc::new(Inner {
                snapshot: ArcSwap::from_pointee(Snapshot::default()),
                names: [const { AtomicU64::new(0) }; NAME_FILTER_WORDS],
                writer: Mutex::new(Writer::default()),
                next_subscription: AtomicU64::new(1),
                policy: AtomicU8::new(0),
                redacting: AtomicBool::new(false),
                redaction: ArcSwapOption::empty(),
                hook: RwLock::new(default_hook()),
                is_global,
            }),
        }
    }

    /// The process-wide notifier, created on first use.
    ///
    /// ```
    /// let a = notify_core::Notifier::global();
    /// assert!(std::ptr::eq(a, notify_core::Notifier::global()));
    /// ```
    pub fn global() -> &'static Notifier {
        &GLOBAL
    }

    /// Subscribes `subscriber` to the events `pattern` matches, from the next event on (an event
    /// already started keeps the listener set it started with). A `&str` is an exact name.
    ///
    /// ```
    /// use notify_core::{Notifier, Pattern, Subscriber};
    /// let notifier = Notifier::new();
    /// let all_sql = notifier.subscribe(Pattern::glob("sql.*")?, Subscriber::event(|_: &notify_core::Event| {}));
    /// assert!(notifier.listening("sql.query"));
    /// assert!(!notifier.listening("render.template"));
    /// # Ok::<(), notify_core::PatternError>(())
    /// ```
    pub fn subscribe(&self, pattern: impl Into<Pattern>, subscriber: impl Into<Subscriber>) -> Subscription {
        let mut subscriptions = self.subscribe_all([(pattern.into(), subscriber.into())]);
        subscriptions.pop().expect("one subscription per pair")
    }

    /// Subscribes every `(pattern, subscriber)` pair in one registry change: one snapshot is built
    /// for all of them, so subscribing n subscribers costs O(n) rather than O(n²). Returns the
    /// subscriptions in the same order.
    ///
    /// ```
    /// use notify_core::{Notifier, Pattern, Subscriber};
    /// let notifier = Notifier::new();
    /// let subscriptions = notifier.subscribe_all(
    ///     (0..1000).map(|i| (Pattern::exact(format!("job.{i}")), Subscriber::event(|_: &notify_core::Event| {}))),
    /// );
    /// assert_eq!(subscriptions.len(), 1000);
    /// assert!(notifier.listening("job.999"));
    /// assert_eq!(notifier.unsubscribe_all(&subscriptions), 1000);
    /// assert_eq!(notifier.subscriber_count(), 0);
    /// ```
    pub fn subscribe_all(&self, pairs: impl IntoIterator<Item = (Pattern, Subscriber)>) -> Vec<Subscription> {
        let pairs: Vec<(Pattern, Subscriber)> = pairs.into_iter().collect();
        let mut added = Vec::with_capacity(pairs.len());
        self.inner.write(|snapshot| {
            for (pattern, subscriber) in pairs {
                let id = self.inner.next_subscription.fetch_add(1, Ordering::Relaxed);
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
        let notifier = Arc::downgrade(&self.inner);
        added
            .iter()
            .map(|e| Subscription {
                id: e.id,
                notifier: notifier.clone(),
            })
            .collect()
    }

    /// Removes every subscription of `subscriptions` that still exists, in one registry change;
    /// returns how many were removed (the others were already gone, or belong to another notifier).
    ///
    /// ```
    /// use notify_core::{Notifier, Subscriber};
    /// let notifier = Notifier::new();
    /// let a = notifier.subscribe("a", Subscriber::event(|_: &notify_core::Event| {}));
    /// assert_eq!(notifier.unsubscribe_all(&[a.clone(), a]), 1);
    /// ```
    pub fn unsubscribe_all(&self, subscriptions: &[Subscription]) -> usize {
        let ids: FxHashSet<u64> = subscriptions
            .iter()
            .filter(|s| std::ptr::eq(s.notifier.as_ptr(), Arc::as_ptr(&self.inner)))
            .map(|s| s.id)
            .collect();
        let mut removed = Vec::new();
        self.inner.write(|snapshot| {
            let (gone, kept): (Vec<_>, Vec<_>) = snapshot.entries.iter().cloned().partition(|e| ids.contains(&e.id));
            removed = gone;
            (!removed.is_empty()).then(|| snapshot.next(kept, Change::Entries(&removed)))
        });
        removed.len()
    }

    /// Runs `f` with `subscriber` subscribed, and unsubscribes it afterwards, even if `f` panics
    /// (AS::N's `subscribed`).
    ///
    /// ```
    /// use notify_core::{Notifier, Subscriber};
    /// let notifier = Notifier::new();
    /// let listened = notifier.subscribed("x", Subscriber::event(|_: &notify_core::Event| {}), || notifier.listening("x"));
    /// assert!(listened);
    /// assert!(!notifier.listening("x"));
    /// ```
    pub fn subscribed<T>(
        &self,
        pattern: impl Into<Pattern>,
        subscriber: impl Into<Subscriber>,
        f: impl FnOnce() -> T,
    ) -> T {
        struct Unsubscribe(Subscription);
        impl Drop for Unsubscribe {
            fn drop(&mut self) {
                let _ = self.0.unsubscribe();
            }
        }
        let _guard = Unsubscribe(self.subscribe(pattern, subscriber));
        f()
    }

    /// Unsubscribes by event name, as AS::N's `unsubscribe("name")`: removes every exact
    /// subscription to `name`, and excludes `name` from every glob and regex subscription (they keep
    /// receiving other names). Catch-all subscriptions ([`Pattern::all`]) are untouched. Returns how
    /// many exact subscriptions were removed.
    ///
    /// ```
    /// use notify_core::{Notifier, Pattern, Subscriber};
    /// let notifier = Notifier::new();
    /// let noop = || Subscriber::event(|_: &notify_core::Event| {});
    /// notifier.subscribe("hi.world", noop());
    /// notifier.subscribe(Pattern::glob("*.world")?, noop());
    /// assert_eq!(notifier.unsubscribe_name("hi.world"), 1);
    /// assert!(!notifier.listening("hi.world"));
    /// assert!(notifier.listening("hello.world"));
    /// # Ok::<(), notify_core::PatternError>(())
    /// ```
    pub fn unsubscribe_name(&self, name: &str) -> usize {
        let mut removed = 0;
        self.inner.write(|snapshot| {
            let mut entries = Vec::with_capacity(snapshot.entries.len());
            let mut changed = false;
            for entry in &snapshot.entries {
                match entry.pattern.exact_name() {
                    Some(exact) if **exact == *name => {
                        removed += 1;
                        changed = true;
                    }
                    Some(_) => entries.push(entry.clone()),
                    None if matches!(entry.pattern.repr, crate::pattern::Repr::All) || !entry.matches(name) => {
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

    /// True when an event named `name` would reach a subscriber now: somebody matches it and is not
    /// silenced. Silencing is asked on every call. Never allocates, never locks.
    ///
    /// ```
    /// let notifier = notify_core::Notifier::new();
    /// assert!(!notifier.listening("sql.query"));
    /// ```
    pub fn listening(&self, name: &str) -> bool {
        self.inner.snapshot.load().listening(name)
    }

    /// Runs `body` as the event `name` and returns its value (AS::N's `instrument`).
    ///
    /// When nobody listens, this is a snapshot load and a lookup: `payload` is not called, no clock
    /// is read, nothing allocates, and `body` gets an empty scratch payload. Otherwise `payload()`
    /// builds the payload, `body` may add to it, and every listener captured at start receives the
    /// event. If `body` panics, the event is finished with [`Outcome::Panicked`](crate::Outcome::Panicked) and the panic goes
    /// on. A panicking subscriber never unwinds into the caller (see [`FailurePolicy`]).
    ///
    /// ```
    /// use notify_core::{Notifier, Payload};
    /// let notifier = Notifier::new();
    /// let sum = notifier.instrument("math.sum", || Payload::new().with("n", 3_u64), |_| 1 + 2);
    /// assert_eq!(sum, 3);
    /// ```
    #[inline]
    pub fn instrument<T>(
        &self,
        name: &str,
        payload: impl FnOnce() -> Payload,
        body: impl FnOnce(&mut Payload) -> T,
    ) -> T {
        if !self.inner.may_listen(name) {
            return dispatch::unlistened(body);
        }
        let resolved = {
            let snapshot = self.inner.snapshot.load();
            match snapshot.resolve(name) {
                Some(resolved) => resolved,
                None => return dispatch::unlistened(body),
            }
        };
        dispatch::run(&self.inner, resolved, None, None, payload, body)
    }

    /// As [`Notifier::instrument`], with an explicit parent: the event's parent id and trace id come
    /// from `parent` (a [`Context`], an [`EventContext`](crate::EventContext)), not from the
    /// thread's current context (tracing's `parent:`). Events started inside `body` are still its
    /// children. `Context::none()` makes it the root of a new trace.
    ///
    /// ```
    /// use notify_core::{Context, Event, Notifier, Payload, Subscriber, TraceId};
    /// let notifier = Notifier::new();
    /// notifier.subscribe("reply", Subscriber::event(|e: &Event| assert_eq!(e.parent_id(), Some(12))));
    /// let request = Context::new(TraceId::new(77).unwrap(), Some(12));
    /// notifier.instrument_with_parent(request, "reply", Payload::new, |_| ());
    /// ```
    pub fn instrument_with_parent<T>(
        &self,
        parent: impl Into<Context>,
        name: &str,
        payload: impl FnOnce() -> Payload,
        body: impl FnOnce(&mut Payload) -> T,
    ) -> T {
        let Some(resolved) = self.inner.snapshot.load().resolve(name) else {
            return dispatch::unlistened(body);
        };
        dispatch::run(&self.inner, resolved, Some(parent.into().frame()), None, payload, body)
    }

    /// As [`Notifier::instrument`] for a body that returns a `Result`: an `Err` is recorded in the
    /// payload's `exception` (type name and message, [`Payload::record_error`]) before subscribers
    /// see the event, and returned.
    ///
    /// ```
    /// use notify_core::{Event, Notifier, Payload, Subscriber};
    /// let notifier = Notifier::new();
    /// notifier.subscribe("parse", Subscriber::event(|e: &Event| assert!(e.payload().get("exception").is_some())));
    /// let r = notifier.instrument_result("parse", Payload::new, |_| "x".parse::<u8>());
    /// assert!(r.is_err());
    /// ```
    pub fn instrument_result<T, E: std::fmt::Display>(
        &self,
        name: &str,
        payload: impl FnOnce() -> Payload,
        body: impl FnOnce(&mut Payload) -> Result<T, E>,
    ) -> Result<T, E> {
        self.instrument(name, payload, |p| {
            let result = body(p);
            if let Err(e) = &result {
                p.record_error(e);
            }
            result
        })
    }

    /// A handle for an event whose start and finish happen in different places (AS::N's
    /// `build_handle`). The listener set is captured by [`Handle::start`].
    ///
    /// ```
    /// use notify_core::{Notifier, Payload};
    /// let notifier = Notifier::new();
    /// let mut handle = notifier.build_handle("job.run", Payload::new());
    /// handle.start()?;
    /// handle.finish()?;
    /// assert!(handle.finish().is_err());
    /// # Ok::<(), notify_core::NotifyError>(())
    /// ```
    pub fn build_handle(&self, name: impl Into<Cow<'static, str>>, payload: Payload) -> Handle {
        let name = match name.into() {
            Cow::Borrowed(s) => Name::Static(s),
            Cow::Owned(s) => Name::Shared(s.into()),
        };
        Handle::new(self.clone(), name, payload)
    }

    /// Delivers an event timed by the caller (AS::N's `publish`): timed subscribers receive the
    /// arguments as given, monotonic subscribers the same times on the monotonic clock, event-object
    /// and owned subscribers an [`Event`] built from them. Evented and silenceable subscribers are not
    /// called (they need a start). The notifier reads no clock.
    ///
    /// ```
    /// use notify_core::{Notifier, Payload, Subscriber};
    /// use std::time::{Duration, SystemTime};
    /// let notifier = Notifier::new();
    /// notifier.subscribe("cache.hit", Subscriber::timed(|_: &str, s: SystemTime, f: SystemTime, id: u64, _: &Payload| {
    ///     assert_eq!(f.duration_since(s).unwrap(), Duration::from_millis(5));
    ///     assert_eq!(id, 42);
    /// }));
    /// let start = SystemTime::now();
    /// notifier.publish("cache.hit", start, start + Duration::from_millis(5), 42, Payload::new());
    /// ```
    pub fn publish(&self, name: &str, start: SystemTime, finish: SystemTime, transaction_id: u64, payload: Payload) {
        let Some(resolved) = self.inner.snapshot.load().resolve(name) else {
            return;
        };
        let mut event = Event::named(
            resolved.name.clone(),
            monotonic_clock(start),
            monotonic_clock(finish),
            payload,
        );
        event.transaction_id = transaction_id;
        self.inner.deliver_published(&resolved, start, finish, event);
    }

    /// Delivers an already-built [`Event`] (AS::N's `publish_event`) to the timed, monotonic,
    /// event-object and owned subscribers of its name.
    ///
    /// ```
    /// use notify_core::{Event, Notifier, Payload, Subscriber};
    /// use std::time::Instant;
    /// let notifier = Notifier::new();
    /// notifier.subscribe("job.done", Subscriber::event(|e: &Event| assert_eq!(e.name(), "job.done")));
    /// let now = Instant::now();
    /// notifier.publish_event(Event::new("job.done", now, now, Payload::new()));
    /// ```
    pub fn publish_event(&self, event: Event) {
        let Some(resolved) = self.inner.snapshot.load().resolve(event.name()) else {
            return;
        };
        let (start, finish) = (event.start_time(), event.end_time());
        self.inner.deliver_published(&resolved, start, finish, event);
    }

    /// Sets the redaction policy: from now on, every event of this notifier (`instrument`, handles,
    /// `#[instrument_event]` fields, `err`/`ret` and values `record`ed during the body, `publish`,
    /// `publish_event` and so remote events, and what the bridges republish) has its payload
    /// redacted once, before the first subscriber of any kind sees it. No subscriber can opt out.
    /// Events already started keep the policy they started with. Replaces an earlier policy.
    ///
    /// ```
    /// use notify_core::{Event, Notifier, Payload, Redaction, Subscriber, Value};
    /// let notifier = Notifier::new();
    /// notifier.set_redaction(Redaction::builder().key("password").build()?);
    /// notifier.subscribe("login.app", Subscriber::event(|e: &Event| {
    ///     assert_eq!(e.payload().get("password"), Some(&Value::from("[FILTERED]")));
    /// }));
    /// notifier.instrument("login.app", || Payload::new().with("password", "hunter2"), |_| ());
    /// # Ok::<(), notify_core::RedactionError>(())
    /// ```
    pub fn set_redaction(&self, policy: Redaction) {
        self.inner.redaction.store(Some(Arc::new(policy)));
        self.inner.redacting.store(true, Ordering::Release);
    }

    /// Removes the redaction policy (events started earlier still apply it); returns it.
    pub fn clear_redaction(&self) -> Option<Arc<Redaction>> {
        self.inner.redacting.store(false, Ordering::Release);
        self.inner.redaction.swap(None)
    }

    /// The redaction policy in force, if any.
    pub fn redaction(&self) -> Option<Arc<Redaction>> {
        self.inner.redaction.load_full()
    }

    /// Sets what happens when a subscriber panics. Takes effect for events finished afterwards.
    ///
    /// ```
    /// let notifier = notify_core::Notifier::new();
    /// notifier.set_failure_policy(notify_core::FailurePolicy::Detach);
    /// assert_eq!(notifier.failure_policy(), notify_core::FailurePolicy::Detach);
    /// ```
    pub fn set_failure_policy(&self, policy: FailurePolicy) {
        let code = match policy {
            FailurePolicy::Report => 0,
            FailurePolicy::Detach => 1,
            FailurePolicy::Strict => 2,
        };
        self.inner.policy.store(code, Ordering::Relaxed);
    }

    /// The current failure policy.
    ///
    /// ```
    /// assert_eq!(notify_core::Notifier::new().failure_policy(), notify_core::FailurePolicy::Report);
    /// ```
    pub fn failure_policy(&self) -> FailurePolicy {
        self.inner.policy()
    }

    /// Replaces the failure hook, called once per subscriber panic, in run order. The default logs
    /// the failure with `log::error!` (target `notify`). A panic in the hook itself is swallowed.
    ///
    /// ```
    /// let notifier = notify_core::Notifier::new();
    /// notifier.set_failure_hook(|failure: &notify_core::SubscriberFailure| eprintln!("{failure}"));
    /// ```
    pub fn set_failure_hook(&self, hook: impl Fn(&SubscriberFailure) + Send + Sync + 'static) {
        *self.inner.hook.write() = Arc::new(hook);
    }

    /// How many subscriptions there are.
    ///
    /// ```
    /// let notifier = notify_core::Notifier::new();
    /// let s = notifier.subscribe("x", notify_core::Subscriber::event(|_: &notify_core::Event| {}));
    /// assert_eq!(notifier.subscriber_count(), 1);
    /// s.unsubscribe()?;
    /// assert_eq!(notifier.subscriber_count(), 0);
    /// # Ok::<(), notify_core::NotifyError>(())
    /// ```
    pub fn subscriber_count(&self) -> usize {
        self.inner.snapshot.load().entries.len()
    }

    /// How many event names the registry holds resolved: names with an exact subscription, plus
    /// names resolved through patterns and kept in the bounded cache (at most 1,024).
    ///
    /// ```
    /// let notifier = notify_core::Notifier::new();
    /// notifier.instrument("never.listened", notify_core::Payload::new, |_| ());
    /// assert_eq!(notifier.cached_names(), 0);
    /// ```
    pub fn cached_names(&self) -> usize {
        self.inner.snapshot.load().resolved_names()
    }

    /// The subscribers that an event named `name` would reach now, as `(subscription id, kind)` in
    /// delivery order. For diagnostics and tests (AS::N's `listeners_for`).
    ///
    /// ```
    /// let notifier = notify_core::Notifier::new();
    /// let s = notifier.subscribe("x", notify_core::Subscriber::event(|_: &notify_core::Event| {}));
    /// assert_eq!(notifier.listeners_for("x"), vec![(s.id(), "event")]);
    /// ```
    pub fn listeners_for(&self, name: &str) -> Vec<(u64, &'static str)> {
        let snapshot = self.inner.snapshot.load();
        let resolved = match snapshot.exact.get(name) {
            Some(r) => Some(r.clone()),
            None => Resolved::new(Name::Shared(name.into()), &snapshot.wide),
        };
        resolved.map_or_else(Vec::new, |r| {
            r.listeners
                .entries()
                .map(|e| (e.id, e.subscriber.kind_name()))
                .collect()
        })
    }
}

impl std::fmt::Debug for Notifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Notifier")
            .field("subscriptions", &self.subscriber_count())
            .field("global", &self.inner.is_global)
            .finish()
    }
}

impl Inner {
    /// False when nobody listens to `name` (exact); true when someone may (a filter collision, a
    /// pattern subscription, or a listener).
    #[inline]
    fn may_listen(&self, name: &str) -> bool {
        let (word, mask) = name_bit(name);
        self.names[word].load(Ordering::Acquire) & mask != 0
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

    fn unsubscribe_id(&self, id: u64) -> Result<(), NotifyError> {
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

    /// Registers a callsite of the global notifier and computes its first state.
    pub(crate) fn register_callsite(&self, callsite: &'static Callsite) {
        let mut writer = self.writer.lock();
        if callsite.is_registered() {
            return;
        }
        callsite.refresh(&self.snapshot.load());
        writer.callsites.push(callsite);
    }

    fn policy(&self) -> FailurePolicy {
        match self.policy.load(Ordering::Relaxed) {
            0 => FailurePolicy::Report,
            1 => FailurePolicy::Detach,
            _ => FailurePolicy::Strict,
        }
    }

    /// The redaction policy an event prepared now applies (one relaxed load when none is set).
    #[inline(always)]
    pub(crate) fn redaction(&self) -> Option<Arc<Redaction>> {
        if !self.redacting.load(Ordering::Relaxed) {
            return None;
        }
        self.redaction.load_full()
    }

    fn deliver_published(&self, resolved: &Resolved, start: SystemTime, finish: SystemTime, mut event: Event) {
        if let Some(policy) = self.redaction() {
            policy.redact(&mut event.payload);
        }
        let mut failures = Vec::new();
        let name = resolved.name.as_str();
        let listeners = &resolved.listeners;
        let (payload, txn) = (&event.payload, event.transaction_id);
        for l in &listeners.timed {
            guarded(&mut failures, &l.entry, name, || {
                l.subscriber.call(name, start, finish, txn, payload)
            });
        }
        for l in &listeners.monotonic {
            guarded(&mut failures, &l.entry, name, || {
                l.subscriber.call(name, event.start, event.end, txn, payload)
            });
        }
        deliver_event(&mut failures, resolved, event);
        if !failures.is_empty() {
            self.handle_failures(failures);
        }
    }

    /// Applies the failure policy to the failures of one event, in run order.
    #[cold]
    pub(crate) fn handle_failures(&self, failures: Vec<SubscriberFailure>) {
        let hook = self.hook.read().clone();
        for failure in &failures {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| hook(failure)));
        }
        match self.policy() {
            FailurePolicy::Report => {}
            FailurePolicy::Detach => {
                for failure in &failures {
                    if self.unsubscribe_id(failure.subscription).is_ok() {
                        let payload = Payload::new()
                            .with("subscription", failure.subscription)
                            .with("subscriber", failure.subscriber.clone())
                            .with("event", failure.event.clone())
                            .with("message", failure.message.clone());
                        let resolved = self.snapshot.load().resolve(SUBSCRIBER_FAILED);
                        if let Some(resolved) = resolved {
                            dispatch::run(self, resolved, None, None, || payload, |_| ());
                        }
                    }
                }
            }
            FailurePolicy::Strict => {
                if !std::thread::panicking() {
                    let errors = SubscriberErrors { failures };
                    // The panic hook prints only string payloads: say what failed first, so a
                    // failing test shows the list, not `Box<dyn Any>`.
                    eprintln!("notify: FailurePolicy::Strict: {errors}");
                    std::panic::panic_any(errors);
                }
            }
        }
    }
}

/// A subscription made by [`Notifier::subscribe`]. It stays subscribed until
/// [`Subscription::unsubscribe`] (dropping it does not unsubscribe, as in AS::N).
///
/// ```
/// use notify_core::{Notifier, NotifyError, Subscriber};
/// let notifier = Notifier::new();
/// let s = notifier.subscribe("x", Subscriber::event(|_: &notify_core::Event| {}));
/// assert_eq!(s.unsubscribe(), Ok(()));
/// assert_eq!(s.unsubscribe(), Err(NotifyError::NotFound));
/// ```
#[derive(Clone, Debug)]
pub struct Subscription {
    id: u64,
    notifier: Weak<Inner>,
}

impl Subscription {
    /// The subscription id (unique within its notifier, counting from 1).
    ///
    /// ```
    /// let n = notify_core::Notifier::new();
    /// assert_eq!(n.subscribe("x", notify_core::Subscriber::event(|_: &notify_core::Event| {})).id(), 1);
    /// ```
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Removes the subscription, from the next event on (an event already started still finishes
    /// to it).
    ///
    /// # Errors
    /// [`NotifyError::NotFound`] when it was already removed or its notifier is gone.
    ///
    /// ```
    /// let n = notify_core::Notifier::new();
    /// let s = n.subscribe("x", notify_core::Subscriber::event(|_: &notify_core::Event| {}));
    /// assert!(s.unsubscribe().is_ok());
    /// assert!(s.unsubscribe().is_err());
    /// ```
    pub fn unsubscribe(&self) -> Result<(), NotifyError> {
        match self.notifier.upgrade() {
            Some(inner) => inner.unsubscribe_id(self.id),
            None => Err(NotifyError::NotFound),
        }
    }
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Notifier")
    }
}
