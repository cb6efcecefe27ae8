//! [`Notifier`]: the facade over one fanout (its registry of subscriptions and policies) and the
//! entry point for instrumenting (AS::N's `Fanout` plus `Instrumenter`); [`Subscription`].
//!
//! Everything here delegates: changes to `fanout.rs`, deliveries to `dispatch.rs`.

use std::borrow::Cow;
use std::sync::{Arc, LazyLock, Weak};
use std::time::SystemTime;

use rustc_hash::FxHashSet;

use crate::context::Context;
use crate::dispatch;
use crate::error::NotifyError;
use crate::event::{monotonic_clock, Event, Name};
use crate::failure::{ExportDrops, FailurePolicy, SubscriberFailure};
use crate::fanout::{self, Fanout, Pinned};
use crate::handle::Handle;
use crate::kinds::SubscriberKind;
use crate::name_map::name_hash;
use crate::pattern::Pattern;
use crate::payload::Payload;
#[cfg(feature = "redaction")]
use crate::redaction::Redaction;
use crate::registry::Resolved;
use crate::subscriber::Subscriber;
use crate::subscription::SubscriptionId;
use crate::transaction_id::TransactionId;

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
/// let subscription = notifier.subscribe("query.sql", Subscriber::event(move |e: &notify_core::Event| {
///     seen.fetch_add(e.payload().get("rows").and_then(|v| v.as_i64()).unwrap_or(0) as u64, Ordering::SeqCst);
/// }));
/// let names = notifier.instrument("query.sql", || Payload::new().with("sql", "SELECT name FROM users"), |payload| {
///     payload.insert("rows", 2_u64);
///     vec!["ada", "grace"]
/// });
/// assert_eq!(names.len(), 2);
/// assert_eq!(rows.load(Ordering::SeqCst), 2);
/// subscription.unsubscribe()?;
/// assert!(!notifier.listening("query.sql"));
/// # Ok::<(), notify_core::NotifyError>(())
/// ```
#[derive(Clone)]
pub struct Notifier {
    fanout: Arc<Fanout>,
}

static GLOBAL: LazyLock<Notifier> = LazyLock::new(|| Notifier {
    fanout: fanout::global().clone(),
});

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
        Notifier {
            fanout: Fanout::new(false),
        }
    }

    /// The notifier of `fanout` (an attachment's weak reference, upgraded).
    pub(crate) fn from_fanout(fanout: Arc<Fanout>) -> Notifier {
        Notifier { fanout }
    }

    /// A weak reference to this notifier's fanout.
    pub(crate) fn downgrade(&self) -> Weak<Fanout> {
        Arc::downgrade(&self.fanout)
    }

    /// This notifier's identity (shared by its clones), to tell notifiers apart.
    pub(crate) fn identity(&self) -> usize {
        Arc::as_ptr(&self.fanout) as usize
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
    /// let all_sql = notifier.subscribe(Pattern::glob("*.sql")?, Subscriber::event(|_: &notify_core::Event| {}));
    /// assert!(notifier.listening("query.sql"));
    /// assert!(!notifier.listening("render.template"));
    /// # Ok::<(), notify_core::PatternError>(())
    /// ```
    pub fn subscribe(&self, pattern: impl Into<Pattern>, subscriber: impl Into<Subscriber>) -> Subscription {
        let id = self.fanout.subscribe_one(pattern.into(), subscriber.into());
        Subscription {
            id,
            notifier: Arc::downgrade(&self.fanout),
        }
    }

    /// Subscribes `subscriber` to `pattern` and unsubscribes `old` (when it still exists) in one
    /// registry change: every event is delivered to exactly one of them.
    pub(crate) fn replace(&self, old: &Subscription, pattern: Pattern, subscriber: Subscriber) -> Subscription {
        let id = self.fanout.replace(old.id(), pattern, subscriber);
        Subscription {
            id,
            notifier: Arc::downgrade(&self.fanout),
        }
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
        let ids = self.fanout.subscribe_all(pairs);
        let notifier = Arc::downgrade(&self.fanout);
        ids.into_iter()
            .map(|id| Subscription {
                id,
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
        let ids: FxHashSet<SubscriptionId> = subscriptions
            .iter()
            .filter(|s| std::ptr::eq(s.notifier.as_ptr(), Arc::as_ptr(&self.fanout)))
            .map(|s| s.id)
            .collect();
        self.fanout.unsubscribe_all(&ids)
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
        self.fanout.unsubscribe_name(name)
    }

    /// True when an event named `name` would reach a subscriber now: somebody matches it and is not
    /// silenced. Silencing is asked on every call. Never allocates, never locks.
    ///
    /// A silenceable subscriber whose `silenced` panics counts as silenced here, and the panic is
    /// not reported: no failure hook, no detach, no panic under `FailurePolicy::Strict`: a probe
    /// reports nothing. The next event of the name asks
    /// again and reports it per the policy.
    ///
    /// ```
    /// let notifier = notify_core::Notifier::new();
    /// assert!(!notifier.listening("query.sql"));
    /// ```
    pub fn listening(&self, name: &str) -> bool {
        self.fanout.probe(name, |found| dispatch::listening(name, found))
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
    /// let sum = notifier.instrument("sum.math", || Payload::new().with("n", 3_u64), |_| 1 + 2);
    /// assert_eq!(sum, 3);
    /// ```
    #[inline]
    pub fn instrument<T>(
        &self,
        name: &str,
        payload: impl FnOnce() -> Payload,
        body: impl FnOnce(&mut Payload) -> T,
    ) -> T {
        self.instrument_under(None, name, payload, body)
    }

    /// As [`Notifier::instrument`], with an explicit parent: the event's parent id and trace id come
    /// from `parent` (a [`Context`], an [`EventContext`](crate::EventContext)), not from the
    /// thread's current context (tracing's `parent:`). Events started inside `body` are still its
    /// children. `Context::none()` makes it the root of a new trace.
    ///
    /// ```
    /// use notify_core::{event::EventId, Context, Event, Notifier, Payload, Subscriber, TraceId};
    /// let notifier = Notifier::new();
    /// let _ = notifier.subscribe("reply", Subscriber::event(|e: &Event| assert_eq!(e.parent_id(), Some(EventId::new(12)))));
    /// let request = Context::new(TraceId::new(77).unwrap(), Some(EventId::new(12)));
    /// notifier.instrument_with_parent(request, "reply", Payload::new, |_| ());
    /// ```
    pub fn instrument_with_parent<T>(
        &self,
        parent: impl Into<Context>,
        name: &str,
        payload: impl FnOnce() -> Payload,
        body: impl FnOnce(&mut Payload) -> T,
    ) -> T {
        self.instrument_under(Some(parent.into().frame()), name, payload, body)
    }

    /// [`Notifier::instrument`] under `parent` (`None`: the thread's current context): the name
    /// filter, the pinned lookup, then the event. Inlined into both callers, so `instrument`'s
    /// constant `None` costs nothing.
    #[inline(always)]
    fn instrument_under<T>(
        &self,
        parent: Option<crate::ids::Frame>,
        name: &str,
        payload: impl FnOnce() -> Payload,
        body: impl FnOnce(&mut Payload) -> T,
    ) -> T {
        let hash = name_hash(name);
        if !self.fanout.may_listen(hash) {
            return dispatch::unlistened(body);
        }
        let mut pin = Pinned::default();
        match self.fanout.listeners(name, hash, &mut pin) {
            Some(resolved) => dispatch::run(&self.fanout, resolved, parent, None, payload, body),
            None => dispatch::unlistened(body),
        }
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
    /// let mut handle = notifier.build_handle("run.job", Payload::new());
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
        Handle::new(self.fanout.clone(), name, payload)
    }

    /// Delivers an event timed by the caller (AS::N's `publish`): timed subscribers receive the
    /// arguments as given, monotonic subscribers the same times on the monotonic clock, event-object
    /// and owned subscribers an [`Event`] built from them, evented and unsilenced silenceable
    /// subscribers that event through [`EventedSubscriber::publish`](crate::EventedSubscriber::publish)
    /// (never `start`/`finish`: there was no start here). The notifier reads no clock.
    ///
    /// ```
    /// use notify_core::{context::TransactionId, Notifier, Payload, Subscriber};
    /// use std::time::{Duration, SystemTime};
    /// let notifier = Notifier::new();
    /// notifier.subscribe("hit.cache", Subscriber::timed(|_: &str, s: SystemTime, f: SystemTime, id: TransactionId, _: &Payload| {
    ///     assert_eq!(f.duration_since(s).unwrap(), Duration::from_millis(5));
    ///     assert_eq!(id, TransactionId::new(42));
    /// }));
    /// let start = SystemTime::now();
    /// notifier.publish("hit.cache", start, start + Duration::from_millis(5), TransactionId::new(42), Payload::new());
    /// ```
    pub fn publish(
        &self,
        name: &str,
        start: SystemTime,
        finish: SystemTime,
        transaction_id: TransactionId,
        payload: Payload,
    ) {
        let Some(resolved) = self.fanout.lookup(name) else {
            return;
        };
        let mut event = Event::named(
            resolved.name().clone(),
            monotonic_clock(start),
            monotonic_clock(finish),
            payload,
        );
        event.transaction_id = transaction_id;
        dispatch::publish(&self.fanout, &resolved, Some((start, finish)), event);
    }

    /// Delivers an already-built [`Event`] (AS::N's `publish_event`) to the timed, monotonic,
    /// event-object and owned subscribers of its name, and to the evented and unsilenced
    /// silenceable ones through [`EventedSubscriber::publish`](crate::EventedSubscriber::publish)
    /// (log subscribers and the tracing bridge implement it; it does nothing unless implemented).
    ///
    /// ```
    /// use notify_core::{Event, Notifier, Payload, Subscriber};
    /// use std::time::Instant;
    /// let notifier = Notifier::new();
    /// notifier.subscribe("done.job", Subscriber::event(|e: &Event| assert_eq!(e.name(), "done.job")));
    /// let now = Instant::now();
    /// notifier.publish_event(Event::new("done.job", now, now, Payload::new()));
    /// ```
    pub fn publish_event(&self, event: Event) {
        let Some(resolved) = self.fanout.lookup_name(event.name.clone()) else {
            return;
        };
        dispatch::publish(&self.fanout, &resolved, None, event);
    }

    /// Delivers and removes the events of `events`, in order, each exactly as
    /// [`Notifier::publish_event`] would, looking the listeners up once for consecutive events of
    /// one name: what an importer of batches (notify-nats) uses. `events` is left empty with its
    /// capacity, to be filled again; the events are delivered where they lie (an [`Event`] is
    /// about 500 bytes: a by-value call per event would copy each several times), moved only
    /// into the `Arc` that owned subscribers share, and dropped together when the batch ends.
    ///
    /// The lookup is made again when the name changes or the subscriptions changed since the last
    /// one (a subscriber subscribing, unsubscribing or being detached by
    /// [`FailurePolicy::Detach`] during the batch: from the next event on it is heard, or no
    /// longer heard, as with separate `publish_event` calls). Consecutive names are compared by
    /// pointer, then by text. Under [`FailurePolicy::Strict`] a failing subscriber's panic leaves
    /// the rest of the batch undelivered, and `events` empty.
    ///
    /// ```
    /// use notify_core::{Event, Notifier, Payload, Subscriber};
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use std::sync::Arc;
    /// use std::time::Instant;
    /// let notifier = Notifier::new();
    /// let heard = Arc::new(AtomicUsize::new(0));
    /// let count = heard.clone();
    /// notifier.subscribe("row.import", Subscriber::event(move |_: &Event| {
    ///     count.fetch_add(1, Ordering::Relaxed);
    /// }));
    /// let now = Instant::now();
    /// let mut batch: Vec<Event> = (0..3).map(|_| Event::new("row.import", now, now, Payload::new())).collect();
    /// notifier.publish_events(&mut batch);
    /// assert_eq!((heard.load(Ordering::Relaxed), batch.len()), (3, 0));
    /// ```
    pub fn publish_events(&self, events: &mut Vec<Event>) {
        /// Empties the vector also when a delivery unwinds (`FailurePolicy::Strict`).
        struct Cleared<'a>(&'a mut Vec<Event>);
        impl Drop for Cleared<'_> {
            fn drop(&mut self) {
                self.0.clear();
            }
        }
        let events = Cleared(events);
        // The last lookup: the change count it was made at, the name, what it found.
        let mut last: Option<(u64, Name, Option<Arc<Resolved>>)> = None;
        for event in events.0.iter_mut() {
            let changes = self.fanout.changes();
            let resolved = match &last {
                Some((at, name, resolved))
                    if *at == changes && (name.is(&event.name) || name.as_str() == event.name.as_str()) =>
                {
                    resolved
                }
                _ => {
                    let resolved = self.fanout.lookup_name(event.name.clone());
                    &last.insert((changes, event.name.clone(), resolved)).2
                }
            };
            if let Some(resolved) = resolved {
                dispatch::publish_in_place(&self.fanout, resolved, None, event);
            }
        }
    }

    /// Sets the redaction policy: from now on, every event of this notifier (`instrument`, handles,
    /// `#[instrument_event]` fields, `err`/`ret` and values `record`ed during the body, `publish`,
    /// `publish_event` and so remote events, and what the bridges republish) has its payload
    /// redacted once, before the first subscriber of any kind sees it. No subscriber can opt out.
    /// Events already started keep the policy they started with. Replaces an earlier policy.
    ///
    /// ```
    /// use notify_core::{redaction::Redaction, Event, Notifier, Payload, Subscriber, Value};
    /// let notifier = Notifier::new();
    /// notifier.set_redaction(Redaction::builder().key("password").build()?);
    /// notifier.subscribe("login.app", Subscriber::event(|e: &Event| {
    ///     assert_eq!(e.payload().get("password"), Some(&Value::from("[FILTERED]")));
    /// }));
    /// notifier.instrument("login.app", || Payload::new().with("password", "hunter2"), |_| ());
    /// # Ok::<(), notify_core::redaction::RedactionError>(())
    /// ```
    #[cfg(feature = "redaction")]
    pub fn set_redaction(&self, policy: Redaction) {
        self.fanout.set_redaction(Some(Arc::new(policy)));
    }

    /// Removes the redaction policy (events started earlier still apply it); returns it.
    #[cfg(feature = "redaction")]
    pub fn clear_redaction(&self) -> Option<Arc<Redaction>> {
        self.fanout.set_redaction(None)
    }

    /// The redaction policy in force, if any.
    #[cfg(feature = "redaction")]
    pub fn redaction(&self) -> Option<Arc<Redaction>> {
        self.fanout.redaction_policy()
    }

    /// Sets the head sampler ([`Sampler`](crate::Sampler)): which new traces this notifier's local
    /// roots mark sampled. Default [`Sampler::always`](crate::Sampler::always). Takes effect for
    /// events started afterwards; traces already decided keep their decision. Every subscriber
    /// still receives unsampled events; exporters skip them.
    ///
    /// ```
    /// use notify_core::{export::Sampler, Context, Notifier, Payload};
    /// let notifier = Notifier::new();
    /// notifier.subscribe("a", notify_core::Subscriber::event(|_: &notify_core::Event| {}));
    /// notifier.set_sampler(Sampler::ratio(0.0));
    /// assert_eq!(notifier.sampler().sampling_ratio(), 0.0);
    /// let decided = notifier.instrument("a", Payload::new, |_| Context::current().is_sampled());
    /// assert_eq!(decided, Some(false));
    /// ```
    pub fn set_sampler(&self, sampler: crate::Sampler) {
        self.fanout.set_sample_below(sampler.threshold());
    }

    /// The head sampler in force.
    pub fn sampler(&self) -> crate::Sampler {
        crate::Sampler::from_threshold(self.fanout.sample_below())
    }

    /// Sets what happens when a subscriber panics. Takes effect for events finished afterwards.
    ///
    /// ```
    /// let notifier = notify_core::Notifier::new();
    /// notifier.set_failure_policy(notify_core::failure::FailurePolicy::Detach);
    /// assert_eq!(notifier.failure_policy(), notify_core::failure::FailurePolicy::Detach);
    /// ```
    pub fn set_failure_policy(&self, policy: FailurePolicy) {
        self.fanout.set_policy(policy);
    }

    /// The current failure policy.
    ///
    /// ```
    /// assert_eq!(notify_core::Notifier::new().failure_policy(), notify_core::failure::FailurePolicy::Report);
    /// ```
    pub fn failure_policy(&self) -> FailurePolicy {
        self.fanout.policy()
    }

    /// Replaces the failure hook, called once per subscriber panic, in run order, and once per
    /// exporter report of dropped events ([`SubscriberFailure::export_drops`]). The default logs
    /// the failure with `log::error!` (target `notify`; without the `log` feature it writes the
    /// line to stderr). A panic in the hook itself is caught and dropped, payload included.
    ///
    /// ```
    /// let notifier = notify_core::Notifier::new();
    /// notifier.set_failure_hook(|failure: &notify_core::failure::SubscriberFailure| eprintln!("{failure}"));
    /// ```
    pub fn set_failure_hook(&self, hook: impl Fn(&SubscriberFailure) + Send + Sync + 'static) {
        self.fanout.set_hook(Arc::new(hook));
    }

    /// Failures reported through the failure hook so far (a count): each panicking subscriber
    /// callback once, each subscriber whose drop panicked once ([`SubscriberFailure::in_drop`]),
    /// and each exporter's report of a burst of drops once
    /// ([`Subscription::report_export_drops`]). Counted whatever the policy and whatever the hook
    /// does.
    ///
    /// ```
    /// use notify_core::{Notifier, Payload, Subscriber};
    /// let notifier = Notifier::new();
    /// notifier.set_failure_hook(|_: &notify_core::failure::SubscriberFailure| {});
    /// notifier.subscribe("x", Subscriber::event(|_: &notify_core::Event| panic!("boom")));
    /// notifier.instrument("x", Payload::new, |_| ());
    /// assert_eq!(notifier.failures(), 1);
    /// ```
    pub fn failures(&self) -> u64 {
        self.fanout.failure_sink().failures()
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
        self.fanout.subscription_count()
    }

    /// Sets how many deliveries may nest on one thread before an event is dropped (default 32,
    /// at least 1). A delivery nests when a subscriber instruments, publishes or builds a handle
    /// from inside its callback (or its `silenced`): the event it makes is delivered one level
    /// deeper. An event started at the limit is not delivered (its block still runs), counted in
    /// [`Notifier::undelivered_too_deep`], and the first one is reported (`log::error!`, target
    /// `notify`, or stderr). So a subscriber that instruments its own event stops after `depth`
    /// levels instead of overflowing the stack. The depth is counted per thread across notifiers;
    /// the limit is this notifier's.
    ///
    /// ```
    /// use notify_core::{Notifier, Payload, Subscriber};
    /// let notifier = Notifier::new();
    /// notifier.set_max_delivery_depth(4);
    /// let again = notifier.clone();
    /// notifier.subscribe("tick.clock", Subscriber::event(move |_: &notify_core::Event| {
    ///     again.instrument("tick.clock", Payload::new, |_| ()); // its own event: recursion
    /// }));
    /// notifier.instrument("tick.clock", Payload::new, |_| ());
    /// assert_eq!(notifier.undelivered_too_deep(), 1);
    /// ```
    pub fn set_max_delivery_depth(&self, depth: u32) {
        self.fanout.set_max_depth(depth);
    }

    /// The limit set by [`Notifier::set_max_delivery_depth`] (default 32).
    pub fn max_delivery_depth(&self) -> u32 {
        self.fanout.max_depth()
    }

    /// How many events were not delivered because the thread was already at the nested-delivery
    /// limit ([`Notifier::set_max_delivery_depth`]); a count since the notifier was made.
    pub fn undelivered_too_deep(&self) -> u64 {
        self.fanout.too_deep()
    }

    /// The subscribers that an event named `name` would reach now, as `(subscription id, kind)`,
    /// silenced ones included. For diagnostics and tests (AS::N's `listeners_for`).
    ///
    /// The list is grouped by kind, as the notifier caches and delivers listeners (AS::N groups
    /// by class): timed, monotonic, event object, evented, silenceable, then async (owned); within
    /// a kind, in subscription order. It is *not* the order of either edge of an event: at its
    /// start only the evented and then the unsilenced silenceable subscribers run (`start`); at
    /// its finish the timed, monotonic, evented and silenceable subscribers run, then the event
    /// object and async ones, each kind in subscription order.
    ///
    /// ```
    /// use notify_core::{subscriber::SubscriberKind, Notifier, Subscriber};
    /// let notifier = Notifier::new();
    /// let s = notifier.subscribe("query.sql", Subscriber::event(|_: &notify_core::Event| {}));
    /// assert_eq!(notifier.listeners_for("query.sql"), vec![(s.id(), SubscriberKind::Event)]);
    /// // Subscribed later, listed first: timed subscribers are the first group.
    /// let t = notifier.subscribe("query.sql", Subscriber::timed(|_: &str, _, _, _, _: &notify_core::Payload| {}));
    /// assert_eq!(
    ///     notifier.listeners_for("query.sql"),
    ///     vec![(t.id(), SubscriberKind::Timed), (s.id(), SubscriberKind::Event)]
    /// );
    /// ```
    pub fn listeners_for(&self, name: &str) -> Vec<(SubscriptionId, SubscriberKind)> {
        self.fanout.lookup(name).map_or_else(Vec::new, |r| {
            r.listeners.entries().map(|e| (e.id, e.subscriber.kind())).collect()
        })
    }
}

impl std::fmt::Debug for Notifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Notifier")
            .field("subscriptions", &self.subscriber_count())
            .field("global", &self.fanout.is_global())
            .finish()
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
#[must_use = "a subscription stays until `unsubscribe`; keep it to unsubscribe, or `let _ =` to subscribe for good"]
pub struct Subscription {
    id: SubscriptionId,
    notifier: Weak<Fanout>,
}

impl Subscription {
    /// The subscription id (unique within its notifier, counting from 1).
    pub fn id(&self) -> SubscriptionId {
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
            Some(fanout) => fanout.unsubscribe_id(self.id),
            None => Err(NotifyError::NotFound),
        }
    }
    /// Reports events the exporter behind this subscription dropped (a burst of them, by cause)
    /// through its notifier's failure hook ([`Notifier::set_failure_hook`]), as a
    /// [`SubscriberFailure`] whose [`export_drops`](SubscriberFailure::export_drops) is `drops`,
    /// and counts it in [`Notifier::failures`] (one per report, not per event). The failure policy
    /// does not apply: nothing is detached, [`FailurePolicy::Strict`] raises nothing (there is no
    /// instrumenting thread to raise in). Works after an unsubscribe too (an exporter's shutdown
    /// drops come then). Returns `false`, reporting nothing, when the notifier is gone or `drops`
    /// counts no event. Call it once per burst of drops, from the exporter's own thread.
    ///
    /// ```
    /// use notify_core::failure::{ExportDrops, SubscriberFailure};
    /// use notify_core::{Notifier, Subscriber};
    /// use std::sync::{Arc, Mutex};
    ///
    /// let notifier = Notifier::new();
    /// let lines = Arc::new(Mutex::new(Vec::new()));
    /// let sink = lines.clone();
    /// notifier.set_failure_hook(move |f: &SubscriberFailure| {
    ///     let dropped = f.export_drops().map(|d| d.dropped());
    ///     sink.lock().unwrap().push((dropped, f.to_string()));
    /// });
    /// let subscription = notifier.subscribe("x", Subscriber::event(|_: &notify_core::Event| {}));
    /// assert!(subscription.report_export_drops(ExportDrops::new("spans").with("queue full", 12)));
    /// assert!(!subscription.report_export_drops(ExportDrops::new("spans")), "nothing dropped");
    /// assert_eq!(*lines.lock().unwrap(), [(
    ///     Some(12),
    ///     "exporter `spans` (owned, subscription #1) dropped 12 events (queue full 12)".to_owned(),
    /// )]);
    /// assert_eq!(notifier.failures(), 1);
    /// drop(notifier);
    /// assert!(!subscription.report_export_drops(ExportDrops::new("spans").with("shutdown", 1)));
    /// ```
    pub fn report_export_drops(&self, drops: ExportDrops) -> bool {
        if drops.dropped() == 0 {
            return false;
        }
        match self.notifier.upgrade() {
            Some(fanout) => {
                fanout.failure_sink().report(&[drops.into_failure(self.id)]);
                true
            }
            None => false,
        }
    }
}
