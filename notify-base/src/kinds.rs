//! The subscriber kinds. Each kind is a trait (closures implement the first three) and lands in its
//! own listener group, so instrumenting never branches per subscriber on its kind.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use crate::context::EventContext;
use crate::event::Event;
use crate::payload::Payload;
use crate::transaction_id::TransactionId;

/// A timed subscriber: name, wall-clock start and finish, transaction id, payload — AS::N's
/// `subscribe { |name, start, finish, id, payload| }`. Implemented by every matching closure.
///
/// ```
/// use notify_core::{context::TransactionId, Notifier, Payload, Subscriber};
/// let notifier = Notifier::new();
/// notifier.subscribe("x", Subscriber::timed(|name: &str, start, finish, _txn: TransactionId, _p: &Payload| {
///     assert!(finish >= start);
///     assert_eq!(name, "x");
/// }));
/// notifier.instrument("x", Payload::new, |_| ());
/// ```
pub trait TimedSubscriber: Send + Sync + 'static {
    /// Receives one finished event.
    fn call(&self, name: &str, start: SystemTime, finish: SystemTime, transaction_id: TransactionId, payload: &Payload);
}

impl<F> TimedSubscriber for F
where
    F: Fn(&str, SystemTime, SystemTime, TransactionId, &Payload) + Send + Sync + 'static,
{
    fn call(
        &self,
        name: &str,
        start: SystemTime,
        finish: SystemTime,
        transaction_id: TransactionId,
        payload: &Payload,
    ) {
        self(name, start, finish, transaction_id, payload);
    }
}

/// A monotonic subscriber: like [`TimedSubscriber`] with [`Instant`]s — AS::N's `monotonic_subscribe`.
///
/// ```
/// use notify_core::{context::TransactionId, Notifier, Payload, Subscriber};
/// let notifier = Notifier::new();
/// notifier.subscribe("x", Subscriber::monotonic(|_: &str, start: std::time::Instant, finish, _: TransactionId, _: &Payload| {
///     assert!(finish >= start);
/// }));
/// notifier.instrument("x", Payload::new, |_| ());
/// ```
pub trait MonotonicSubscriber: Send + Sync + 'static {
    /// Receives one finished event.
    fn call(&self, name: &str, start: Instant, finish: Instant, transaction_id: TransactionId, payload: &Payload);
}

impl<F> MonotonicSubscriber for F
where
    F: Fn(&str, Instant, Instant, TransactionId, &Payload) + Send + Sync + 'static,
{
    fn call(&self, name: &str, start: Instant, finish: Instant, transaction_id: TransactionId, payload: &Payload) {
        self(name, start, finish, transaction_id, payload);
    }
}

/// An event-object subscriber: receives `&Event` — AS::N's `subscribe { |event| }`.
///
/// ```
/// use notify_core::{Event, Notifier, Payload, Subscriber};
/// let notifier = Notifier::new();
/// notifier.subscribe("x", Subscriber::event(|event: &Event| assert_eq!(event.name(), "x")));
/// notifier.instrument("x", Payload::new, |_| ());
/// ```
pub trait EventSubscriber: Send + Sync + 'static {
    /// Receives one finished event.
    fn call(&self, event: &Event);
}

impl<F> EventSubscriber for F
where
    F: Fn(&Event) + Send + Sync + 'static,
{
    fn call(&self, event: &Event) {
        self(event);
    }
}

/// An evented subscriber: `start` before the block runs, `finish` after, with the event's
/// [`EventContext`] (event id, parent id, trace id) that pairs them and places the event in its
/// trace (AS::N passes the instrumenter id there). Both calls of one event reach the listener set
/// captured at `start`.
///
/// An async event (an instrumented future, an `async fn` under `#[instrument_event]`, any
/// [`Handle`](crate::Handle)) is current only while it is polled or entered:
/// [`enter`](EventedSubscriber::enter) is called before each poll (each
/// [`Handle::enter`](crate::Handle::enter)) and [`exit`](EventedSubscriber::exit) after it, on that
/// thread, so a bridge can enter and leave a span of its own there. A synchronous event (the block
/// of `instrument`, a function under `#[instrument_event]`) is entered from `start` to `finish` and
/// gets no `enter`/`exit` calls.
///
/// ```
/// use notify_core::{context::EventContext, EventedSubscriber, Notifier, Payload, Subscriber};
/// use std::sync::atomic::{AtomicUsize, Ordering};
///
/// struct Depth(AtomicUsize);
/// impl EventedSubscriber for Depth {
///     fn start(&self, _: &str, _: &EventContext, _: &Payload) { self.0.fetch_add(1, Ordering::SeqCst); }
///     fn finish(&self, _: &str, _: &EventContext, _: &Payload) { self.0.fetch_sub(1, Ordering::SeqCst); }
/// }
/// let notifier = Notifier::new();
/// let depth = std::sync::Arc::new(Depth(AtomicUsize::new(0)));
/// notifier.subscribe("x", Subscriber::evented(depth.clone()));
/// notifier.instrument("x", Payload::new, |_| assert_eq!(depth.0.load(Ordering::SeqCst), 1));
/// assert_eq!(depth.0.load(Ordering::SeqCst), 0);
/// ```
pub trait EventedSubscriber: Send + Sync + 'static {
    /// Called before the block runs; `payload` is the payload as built so far.
    fn start(&self, name: &str, event: &EventContext, payload: &Payload);
    /// Called after the block; `payload` includes what the block added. `event` is the one `start`
    /// received, plus its times when this subscriber asked for them ([`EventedOptions::duration`]).
    fn finish(&self, name: &str, event: &EventContext, payload: &Payload);
    /// Called on the polling thread before each poll of an async event (between `start` and
    /// `finish`). Does nothing unless implemented.
    fn enter(&self, name: &str, event: &EventContext) {
        let _ = (name, event);
    }
    /// Called on the polling thread after each poll of an async event, before the `finish` of a
    /// poll that completed it. Does nothing unless implemented.
    fn exit(&self, name: &str, event: &EventContext) {
        let _ = (name, event);
    }
    /// Called, instead of `start` and `finish`, with an event published whole: by
    /// [`Notifier::publish`](crate::Notifier::publish) or
    /// [`Notifier::publish_event`](crate::Notifier::publish_event), e.g. imported from another
    /// process (notify-nats' `Importer`). It had no start here, so there is nothing to pair.
    /// Does nothing unless implemented, as AS::N's evented subscribers get `publish_event` only
    /// when they respond to it. A silenceable subscriber is asked `silenced(name)` first.
    ///
    /// ```
    /// use notify_core::{context::EventContext, Event, EventedSubscriber, Notifier, Payload, Subscriber};
    /// use std::sync::{Arc, Mutex};
    /// use std::time::Instant;
    /// #[derive(Default)]
    /// struct Seen(Mutex<Vec<String>>);
    /// impl EventedSubscriber for Seen {
    ///     fn start(&self, _: &str, _: &EventContext, _: &Payload) {}
    ///     fn finish(&self, name: &str, _: &EventContext, _: &Payload) { self.0.lock().unwrap().push(format!("finish {name}")); }
    ///     fn publish(&self, event: &Event) { self.0.lock().unwrap().push(format!("publish {}", event.name())); }
    /// }
    /// let notifier = Notifier::new();
    /// let seen = Arc::new(Seen::default());
    /// notifier.subscribe("done.job", Subscriber::evented(seen.clone()));
    /// notifier.instrument("done.job", Payload::new, |_| ());
    /// let now = Instant::now();
    /// notifier.publish_event(Event::new("done.job", now, now, Payload::new()));
    /// assert_eq!(*seen.0.lock().unwrap(), ["finish done.job", "publish done.job"]);
    /// ```
    fn publish(&self, event: &Event) {
        let _ = event;
    }
}

/// What an evented (or silenceable) subscriber asks to be measured; off by default.
///
/// ```
/// use notify_core::{context::EventContext, subscriber::EventedOptions, EventedSubscriber, Notifier, Payload, Subscriber};
/// struct Timer;
/// impl EventedSubscriber for Timer {
///     fn start(&self, _: &str, event: &EventContext, _: &Payload) { assert_eq!(event.duration(), None); }
///     fn finish(&self, _: &str, event: &EventContext, _: &Payload) { assert!(event.duration().is_some()); }
/// }
/// let notifier = Notifier::new();
/// notifier.subscribe("x", Subscriber::evented_with(EventedOptions { duration: true }, Timer));
/// notifier.instrument("x", Payload::new, |_| ());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EventedOptions {
    /// Read the monotonic clock at start and finish (shared with the other listeners that need
    /// it), so `finish` sees [`EventContext::start`], [`EventContext::end`] and
    /// [`EventContext::duration`]: two clock reads per event when no other listener needs them.
    pub duration: bool,
}

/// An evented subscriber that can be silenced at run time (AS::N 7.1's `silenced?`).
///
/// `silenced(name)` is asked on every event, before `start`, and never cached: a subscriber that is
/// silenced gets neither call for that event. When every listener of a name is silenced, the event
/// costs about what an unlistened one costs: no payload, no clock. Only this group pays the check.
///
/// ```
/// use notify_core::{EventedSubscriber, Notifier, Payload, SilenceableSubscriber, Subscriber};
/// struct Quiet;
/// impl EventedSubscriber for Quiet {
///     fn start(&self, _: &str, _: &notify_core::context::EventContext, _: &Payload) { unreachable!() }
///     fn finish(&self, _: &str, _: &notify_core::context::EventContext, _: &Payload) { unreachable!() }
/// }
/// impl SilenceableSubscriber for Quiet {
///     fn silenced(&self, _name: &str) -> bool { true }
/// }
/// let notifier = Notifier::new();
/// notifier.subscribe("x", Subscriber::silenceable(Quiet));
/// assert!(!notifier.listening("x"));
/// ```
pub trait SilenceableSubscriber: EventedSubscriber {
    /// True when this subscriber wants nothing of an event named `name` right now.
    fn silenced(&self, name: &str) -> bool;

    /// What decides this subscriber's silence, when something other than itself does (a log
    /// subscriber: the `log` facade's answer for its level and target). Listeners of one event
    /// name with equal keys form one group, and each event asks `silenced(name)` of the group's
    /// first listener only: ten log subscribers at `debug` on one target cost one check, not ten.
    ///
    /// Return a key only when every subscriber returning an equal key would give the same
    /// `silenced(name)` answer, for every name, at any moment; the answer itself may change at
    /// run time (it is asked on every event, never cached). Put your crate's name in the key, so
    /// unrelated subscribers never share one by accident. Asked once, when the subscriber is
    /// wrapped by [`Subscriber::silenceable`](crate::Subscriber::silenceable) / [`Subscriber::silenceable_with`](crate::Subscriber::silenceable_with). The default,
    /// `None`, asks this subscriber on its own. If the group's first listener panics in
    /// `silenced`, the others are asked one by one for that event.
    ///
    /// ```
    /// use notify_core::{context::EventContext, subscriber::SilenceKey, EventedSubscriber, Payload, SilenceableSubscriber};
    /// use std::sync::atomic::{AtomicBool, Ordering};
    /// static QUIET: AtomicBool = AtomicBool::new(true);
    /// struct Audit;
    /// impl EventedSubscriber for Audit {
    ///     fn start(&self, _: &str, _: &EventContext, _: &Payload) {}
    ///     fn finish(&self, _: &str, _: &EventContext, _: &Payload) {}
    /// }
    /// impl SilenceableSubscriber for Audit {
    ///     fn silenced(&self, _: &str) -> bool { QUIET.load(Ordering::Relaxed) }
    ///     fn silence_key(&self) -> Option<SilenceKey> { Some(SilenceKey::new("my_crate QUIET")) }
    /// }
    /// ```
    fn silence_key(&self) -> Option<SilenceKey> {
        None
    }
}

/// Names what decides the silence of a group of [`SilenceableSubscriber`]s (see
/// [`SilenceableSubscriber::silence_key`]): subscribers whose keys are equal are asked once per
/// event, as one group. Compared when listener sets are built, never on the hot path.
///
/// ```
/// use notify_core::subscriber::SilenceKey;
/// assert_eq!(SilenceKey::new("notify-log debug app::db"), SilenceKey::new(String::from("notify-log debug app::db")));
/// assert_eq!(SilenceKey::new("a").as_str(), "a");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SilenceKey(Cow<'static, str>);

impl SilenceKey {
    /// A key from its text (include your crate's name).
    pub fn new(key: impl Into<Cow<'static, str>>) -> SilenceKey {
        SilenceKey(key.into())
    }

    /// The key's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A subscriber that takes ownership of a shared event (`Arc<Event>`), built once per event however
/// many such subscribers listen. This is the seam for asynchronous delivery and exporters: the
/// implementation queues or forwards the `Arc` and returns quickly.
///
/// ```
/// use notify_core::{Event, Notifier, OwnedEventSubscriber, Payload, Subscriber};
/// use std::sync::{mpsc, Arc, Mutex};
///
/// struct Forward(Mutex<mpsc::Sender<Arc<Event>>>);
/// impl OwnedEventSubscriber for Forward {
///     fn deliver(&self, event: &Arc<Event>) { let _ = self.0.lock().unwrap().send(event.clone()); }
/// }
/// let (tx, rx) = mpsc::channel();
/// let notifier = Notifier::new();
/// notifier.subscribe("x", Subscriber::owned(Forward(Mutex::new(tx))));
/// notifier.instrument("x", Payload::new, |_| ());
/// assert_eq!(rx.recv().unwrap().name(), "x");
/// ```
pub trait OwnedEventSubscriber: Send + Sync + 'static {
    /// Receives one finished event; should return quickly.
    fn deliver(&self, event: &Arc<Event>);
}

impl<T: EventedSubscriber + ?Sized> EventedSubscriber for Arc<T> {
    fn start(&self, name: &str, event: &EventContext, payload: &Payload) {
        (**self).start(name, event, payload);
    }
    fn finish(&self, name: &str, event: &EventContext, payload: &Payload) {
        (**self).finish(name, event, payload);
    }
    fn enter(&self, name: &str, event: &EventContext) {
        (**self).enter(name, event);
    }
    fn exit(&self, name: &str, event: &EventContext) {
        (**self).exit(name, event);
    }
    fn publish(&self, event: &Event) {
        (**self).publish(event);
    }
}

impl<T: SilenceableSubscriber + ?Sized> SilenceableSubscriber for Arc<T> {
    fn silenced(&self, name: &str) -> bool {
        (**self).silenced(name)
    }
    fn silence_key(&self) -> Option<SilenceKey> {
        (**self).silence_key()
    }
}

impl<T: OwnedEventSubscriber + ?Sized> OwnedEventSubscriber for Arc<T> {
    fn deliver(&self, event: &Arc<Event>) {
        (**self).deliver(event);
    }
}

/// What an event-object subscriber asks to be measured. Both cost something per event, so both are
/// off by default: thread CPU time is a system call per edge (~0.5-1 µs on a VM).
///
/// ```
/// use notify_core::{subscriber::EventOptions, Event, Notifier, Payload, Subscriber};
/// let notifier = Notifier::new();
/// let options = EventOptions { cpu_time: true, ..EventOptions::default() };
/// notifier.subscribe("x", Subscriber::event_with(options, |e: &Event| assert!(e.cpu_time().is_some())));
/// notifier.instrument("x", Payload::new, |_| ());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EventOptions {
    /// Measure thread CPU time (and so idle time).
    pub cpu_time: bool,
    /// Count heap allocations (needs [`CountingAllocator`](crate::CountingAllocator) as the global allocator).
    pub allocations: bool,
}

/// The kind of a subscriber: which listener group it joins and what it receives. Displays as its
/// lowercase name (`"timed"`, `"event"`, ...), as failure reports show it; with feature `serde`,
/// serializes as that name too.
///
/// ```
/// use notify_core::{subscriber::SubscriberKind, Subscriber};
/// let s = Subscriber::event(|_: &notify_core::Event| {});
/// assert_eq!(s.kind(), SubscriberKind::Event);
/// assert_eq!(s.kind().to_string(), "event");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SubscriberKind {
    /// [`TimedSubscriber`].
    Timed,
    /// [`MonotonicSubscriber`].
    Monotonic,
    /// [`EventSubscriber`].
    Event,
    /// [`EventedSubscriber`].
    Evented,
    /// [`SilenceableSubscriber`].
    Silenceable,
    /// [`OwnedEventSubscriber`].
    Owned,
}

impl SubscriberKind {
    /// The lowercase name: `"timed"`, `"monotonic"`, `"event"`, `"evented"`, `"silenceable"` or
    /// `"owned"`.
    pub fn as_str(self) -> &'static str {
        match self {
            SubscriberKind::Timed => "timed",
            SubscriberKind::Monotonic => "monotonic",
            SubscriberKind::Event => "event",
            SubscriberKind::Evented => "evented",
            SubscriberKind::Silenceable => "silenceable",
            SubscriberKind::Owned => "owned",
        }
    }
}

impl fmt::Display for SubscriberKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(feature = "serde")]
impl serde::Serialize for SubscriberKind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for SubscriberKind {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<SubscriberKind, D::Error> {
        const NAMES: &[&str] = &["timed", "monotonic", "event", "evented", "silenceable", "owned"];
        let name = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Ok(match &*name {
            "timed" => SubscriberKind::Timed,
            "monotonic" => SubscriberKind::Monotonic,
            "event" => SubscriberKind::Event,
            "evented" => SubscriberKind::Evented,
            "silenceable" => SubscriberKind::Silenceable,
            "owned" => SubscriberKind::Owned,
            // serde quotes the name whole: an excerpt of it.
            other => {
                return Err(serde::de::Error::unknown_variant(
                    &crate::escape::Excerpt::new(other).to_string(),
                    NAMES,
                ))
            }
        })
    }
}
