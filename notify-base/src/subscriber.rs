//! [`Subscriber`]: a subscriber of one of the kinds (`kinds.rs`), with its label and silence key,
//! as [`Notifier::subscribe`](crate::Notifier::subscribe) takes it.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use crate::calls::{CallClocked, CallEvented, CallSilenceable};
use crate::kinds::{
    EventOptions, EventSubscriber, EventedOptions, EventedSubscriber, MonotonicSubscriber, OwnedEventSubscriber,
    SilenceKey, SilenceableSubscriber, SubscriberKind, TimedSubscriber,
};

/// A subscriber as the registry holds it: each kind but the event-object ones as the trait its
/// delivery loop calls (`calls.rs`: one pointer to the arguments per call).
#[derive(Clone)]
pub(crate) enum Kind {
    Timed(Arc<dyn CallClocked<SystemTime>>),
    Monotonic(Arc<dyn CallClocked<Instant>>),
    Event(Arc<dyn EventSubscriber>, EventOptions),
    Evented(Arc<dyn CallEvented>, EventedOptions),
    /// The subscriber and its options; its silence key (asked once) is in [`Extra`].
    Silenceable(Arc<dyn CallSilenceable>, EventedOptions),
    Owned(Arc<dyn OwnedEventSubscriber>),
}

/// A subscriber of one of the kinds, ready for [`Notifier::subscribe`](crate::Notifier::subscribe),
/// with an optional label that failure reports use.
///
/// One name per concept: `Subscriber` is a subscriber of any kind, the value `subscribe` takes
/// (AS::N's subscriber object); each `<Kind>Subscriber` trait ([`TimedSubscriber`](crate::TimedSubscriber),
/// [`EventSubscriber`](crate::EventSubscriber), ...) is the contract of one kind, and the
/// constructor of that kind ([`Subscriber::timed`], [`Subscriber::event`], ...) turns a type or
/// closure implementing it into a `Subscriber`.
///
/// ```
/// use notify_core::Subscriber;
/// let s = Subscriber::event(|_: &notify_core::Event| {}).named("audit");
/// assert_eq!(s.label(), Some("audit"));
/// assert_eq!(s.kind(), notify_core::subscriber::SubscriberKind::Event);
/// ```
#[derive(Clone)]
pub struct Subscriber {
    pub(crate) kind: Kind,
    /// The rarely given parts, out of line so that a registry entry stays small (32 bytes for a
    /// subscriber; `None` for most).
    pub(crate) extra: Option<Box<Extra>>,
}

/// What few subscribers have: a label, a silence key.
#[derive(Clone, Default)]
pub(crate) struct Extra {
    pub(crate) label: Option<Cow<'static, str>>,
    silence_key: Option<SilenceKey>,
}

impl Subscriber {
    fn of(kind: Kind) -> Subscriber {
        Subscriber { kind, extra: None }
    }

    fn extra_mut(&mut self) -> &mut Extra {
        self.extra.get_or_insert_with(Box::default)
    }

    /// The label as given (for failure reports, which keep it).
    pub(crate) fn label_cow(&self) -> Option<&Cow<'static, str>> {
        self.extra.as_ref()?.label.as_ref()
    }

    /// A silenceable subscriber's [`SilenceKey`], asked once when it was wrapped.
    pub(crate) fn silence_key(&self) -> Option<&SilenceKey> {
        self.extra.as_ref()?.silence_key.as_ref()
    }

    /// A [`TimedSubscriber`].
    ///
    /// ```
    /// let s = notify_core::Subscriber::timed(|_: &str, _, _, _: notify_core::context::TransactionId, _: &notify_core::Payload| {});
    /// assert_eq!(s.kind(), notify_core::subscriber::SubscriberKind::Timed);
    /// ```
    pub fn timed(subscriber: impl TimedSubscriber) -> Subscriber {
        Subscriber::of(Kind::Timed(Arc::new(subscriber)))
    }

    /// A [`MonotonicSubscriber`].
    ///
    /// ```
    /// let s = notify_core::Subscriber::monotonic(|_: &str, _, _, _: notify_core::context::TransactionId, _: &notify_core::Payload| {});
    /// assert_eq!(s.kind(), notify_core::subscriber::SubscriberKind::Monotonic);
    /// ```
    pub fn monotonic(subscriber: impl MonotonicSubscriber) -> Subscriber {
        Subscriber::of(Kind::Monotonic(Arc::new(subscriber)))
    }

    /// An [`EventSubscriber`] with default [`EventOptions`] (no CPU time, no allocation count).
    ///
    /// ```
    /// let s = notify_core::Subscriber::event(|_: &notify_core::Event| {});
    /// assert_eq!(s.kind(), notify_core::subscriber::SubscriberKind::Event);
    /// ```
    pub fn event(subscriber: impl EventSubscriber) -> Subscriber {
        Subscriber::event_with(EventOptions::default(), subscriber)
    }

    /// An [`EventSubscriber`] that asks for the measurements in `options`.
    ///
    /// ```
    /// use notify_core::{subscriber::EventOptions, Subscriber};
    /// let s = Subscriber::event_with(EventOptions { allocations: true, ..Default::default() }, |_: &notify_core::Event| {});
    /// assert_eq!(s.kind(), notify_core::subscriber::SubscriberKind::Event);
    /// ```
    pub fn event_with(options: EventOptions, subscriber: impl EventSubscriber) -> Subscriber {
        Subscriber::of(Kind::Event(Arc::new(subscriber), options))
    }

    /// An [`EventedSubscriber`].
    ///
    /// ```
    /// use notify_core::{EventedSubscriber, Payload, Subscriber};
    /// struct S;
    /// impl EventedSubscriber for S {
    ///     fn start(&self, _: &str, _: &notify_core::context::EventContext, _: &Payload) {}
    ///     fn finish(&self, _: &str, _: &notify_core::context::EventContext, _: &Payload) {}
    /// }
    /// assert_eq!(Subscriber::evented(S).kind(), notify_core::subscriber::SubscriberKind::Evented);
    /// ```
    pub fn evented(subscriber: impl EventedSubscriber) -> Subscriber {
        Subscriber::evented_with(EventedOptions::default(), subscriber)
    }

    /// An [`EventedSubscriber`] that asks for the measurements in `options`.
    ///
    /// ```
    /// use notify_core::{context::EventContext, subscriber::EventedOptions, EventedSubscriber, Payload, Subscriber};
    /// struct S;
    /// impl EventedSubscriber for S {
    ///     fn start(&self, _: &str, _: &EventContext, _: &Payload) {}
    ///     fn finish(&self, _: &str, _: &EventContext, _: &Payload) {}
    /// }
    /// let s = Subscriber::evented_with(EventedOptions { duration: true }, S);
    /// assert_eq!(s.evented_options(), Some(EventedOptions { duration: true }));
    /// ```
    pub fn evented_with(options: EventedOptions, subscriber: impl EventedSubscriber) -> Subscriber {
        Subscriber::of(Kind::Evented(Arc::new(subscriber), options))
    }

    /// A [`SilenceableSubscriber`].
    ///
    /// ```
    /// use notify_core::{EventedSubscriber, Payload, SilenceableSubscriber, Subscriber};
    /// struct S;
    /// impl EventedSubscriber for S {
    ///     fn start(&self, _: &str, _: &notify_core::context::EventContext, _: &Payload) {}
    ///     fn finish(&self, _: &str, _: &notify_core::context::EventContext, _: &Payload) {}
    /// }
    /// impl SilenceableSubscriber for S { fn silenced(&self, _: &str) -> bool { false } }
    /// assert_eq!(Subscriber::silenceable(S).kind(), notify_core::subscriber::SubscriberKind::Silenceable);
    /// ```
    pub fn silenceable(subscriber: impl SilenceableSubscriber) -> Subscriber {
        Subscriber::silenceable_with(EventedOptions::default(), subscriber)
    }

    /// A [`SilenceableSubscriber`] that asks for the measurements in `options` (log subscribers ask
    /// for [`EventedOptions::duration`]).
    ///
    /// ```
    /// use notify_core::{context::EventContext, subscriber::EventedOptions, EventedSubscriber, Payload, SilenceableSubscriber, Subscriber};
    /// struct S;
    /// impl EventedSubscriber for S {
    ///     fn start(&self, _: &str, _: &EventContext, _: &Payload) {}
    ///     fn finish(&self, _: &str, _: &EventContext, _: &Payload) {}
    /// }
    /// impl SilenceableSubscriber for S { fn silenced(&self, _: &str) -> bool { false } }
    /// let s = Subscriber::silenceable_with(EventedOptions { duration: true }, S);
    /// assert_eq!(s.kind(), notify_core::subscriber::SubscriberKind::Silenceable);
    /// ```
    pub fn silenceable_with(options: EventedOptions, subscriber: impl SilenceableSubscriber) -> Subscriber {
        let key = subscriber.silence_key();
        let mut wrapped = Subscriber::of(Kind::Silenceable(Arc::new(subscriber), options));
        if key.is_some() {
            wrapped.extra_mut().silence_key = key;
        }
        wrapped
    }

    /// An [`OwnedEventSubscriber`].
    ///
    /// ```
    /// use notify_core::{Event, OwnedEventSubscriber, Subscriber};
    /// struct S;
    /// impl OwnedEventSubscriber for S { fn deliver(&self, _: &std::sync::Arc<Event>) {} }
    /// assert_eq!(Subscriber::owned(S).kind(), notify_core::subscriber::SubscriberKind::Owned);
    /// ```
    pub fn owned(subscriber: impl OwnedEventSubscriber) -> Subscriber {
        Subscriber::of(Kind::Owned(Arc::new(subscriber)))
    }

    /// An [`OwnedEventSubscriber`] that is already behind an `Arc`: the registry keeps this very
    /// `Arc` (no second allocation, no second pointer to follow per event), and the caller keeps
    /// its own clone to reach the subscriber's state. notify-pool registers its mailboxes this way.
    ///
    /// ```
    /// use notify_core::{Event, Notifier, OwnedEventSubscriber, Payload, Subscriber};
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use std::sync::Arc;
    ///
    /// struct Count(AtomicU64);
    /// impl OwnedEventSubscriber for Count {
    ///     fn deliver(&self, _: &Arc<Event>) { self.0.fetch_add(1, Ordering::Relaxed); }
    /// }
    /// let count = Arc::new(Count(AtomicU64::new(0)));
    /// let notifier = Notifier::new();
    /// notifier.subscribe("x", Subscriber::owned_arc(count.clone()));
    /// notifier.instrument("x", Payload::new, |_| ());
    /// assert_eq!(count.0.load(Ordering::Relaxed), 1);
    /// ```
    pub fn owned_arc(subscriber: Arc<dyn OwnedEventSubscriber>) -> Subscriber {
        Subscriber::of(Kind::Owned(subscriber))
    }

    /// Gives the subscriber a label, shown in failure reports and in `Debug`.
    ///
    /// ```
    /// let s = notify_core::Subscriber::event(|_: &notify_core::Event| {}).named("metrics");
    /// assert_eq!(s.label(), Some("metrics"));
    /// ```
    #[must_use]
    pub fn named(mut self, label: impl Into<Cow<'static, str>>) -> Subscriber {
        self.extra_mut().label = Some(label.into());
        self
    }

    /// The label given with [`Subscriber::named`].
    ///
    /// ```
    /// assert_eq!(notify_core::Subscriber::event(|_: &notify_core::Event| {}).label(), None);
    /// ```
    pub fn label(&self) -> Option<&str> {
        self.label_cow().map(|label| &**label)
    }

    /// The kind.
    pub fn kind(&self) -> SubscriberKind {
        match self.kind {
            Kind::Timed(_) => SubscriberKind::Timed,
            Kind::Monotonic(_) => SubscriberKind::Monotonic,
            Kind::Event(..) => SubscriberKind::Event,
            Kind::Evented(..) => SubscriberKind::Evented,
            Kind::Silenceable(..) => SubscriberKind::Silenceable,
            Kind::Owned(_) => SubscriberKind::Owned,
        }
    }

    /// The options of an event-object subscriber (`None` for other kinds).
    ///
    /// ```
    /// let s = notify_core::Subscriber::event(|_: &notify_core::Event| {});
    /// assert_eq!(s.event_options(), Some(notify_core::subscriber::EventOptions::default()));
    /// ```
    pub fn event_options(&self) -> Option<EventOptions> {
        match self.kind {
            Kind::Event(_, options) => Some(options),
            _ => None,
        }
    }

    /// The options of an evented or silenceable subscriber (`None` for other kinds).
    ///
    /// ```
    /// let s = notify_core::Subscriber::event(|_: &notify_core::Event| {});
    /// assert_eq!(s.evented_options(), None);
    /// ```
    pub fn evented_options(&self) -> Option<EventedOptions> {
        match self.kind {
            Kind::Evented(_, options) | Kind::Silenceable(_, options) => Some(options),
            _ => None,
        }
    }
}

impl fmt::Debug for Subscriber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subscriber")
            .field("kind", &self.kind())
            .field("label", &self.label())
            .finish()
    }
}
