//! Subscriber failures: a subscriber that panics never unwinds into the instrumented code and
//! never keeps the other subscribers from running. What happens next is the notifier's
//! [`FailurePolicy`].

use std::any::Any;
use std::borrow::Cow;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use crate::escape::Escaped;
use crate::registry::Entry;
use crate::subscriber::SilenceableSubscriber;

/// What a notifier does when a subscriber panics.
///
/// ```
/// use notify_core::{FailurePolicy, Notifier};
/// let notifier = Notifier::new();
/// assert_eq!(notifier.failure_policy(), FailurePolicy::Report);
/// notifier.set_failure_policy(FailurePolicy::Strict);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FailurePolicy {
    /// Report each failure through the failure hook (default: `log::error!`) and go on.
    #[default]
    Report,
    /// Report, remove the failing subscription, and publish one [`SUBSCRIBER_FAILED`] event for it.
    Detach,
    /// For tests: after every subscriber ran, panic once in the instrumenting thread with a
    /// [`SubscriberErrors`] listing every failure in run order (AS::N's
    /// `InstrumentationSubscriberError`). Failures are reported through the hook too.
    Strict,
}

/// The event the [`FailurePolicy::Detach`] policy publishes once per detached subscriber. Its payload
/// has `subscription` (the id), `subscriber` (label or kind), `event` (the name) and `message`.
pub const SUBSCRIBER_FAILED: &str = "subscriber_failed.notify";

/// One panic of one subscriber while it received one event.
///
/// ```
/// use notify_core::{FailurePolicy, Notifier, Payload, Subscriber};
/// use std::sync::{Arc, Mutex};
/// let notifier = Notifier::new();
/// let failures = Arc::new(Mutex::new(Vec::new()));
/// let sink = failures.clone();
/// notifier.set_failure_hook(move |f: &notify_core::SubscriberFailure| sink.lock().unwrap().push(f.to_string()));
/// notifier.subscribe("x", Subscriber::event(|_: &notify_core::Event| panic!("boom")).named("audit"));
/// assert_eq!(notifier.instrument("x", Payload::new, |_| 7), 7);
/// assert_eq!(failures.lock().unwrap()[0], "subscriber `audit` (event, subscription #1) panicked on `x`: boom");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubscriberFailure {
    pub(crate) subscription: u64,
    pub(crate) subscriber: Cow<'static, str>,
    pub(crate) kind: &'static str,
    pub(crate) event: String,
    pub(crate) message: String,
}

impl SubscriberFailure {
    /// The id of the failing subscription ([`Subscription::id`](crate::Subscription::id)).
    ///
    /// ```
    /// # let f = notify_core::__private::failure_for_doc();
    /// assert_eq!(f.subscription(), 1);
    /// ```
    pub fn subscription(&self) -> u64 {
        self.subscription
    }

    /// The subscriber's label, or its kind when it has none.
    ///
    /// ```
    /// # let f = notify_core::__private::failure_for_doc();
    /// assert_eq!(f.subscriber(), "audit");
    /// ```
    pub fn subscriber(&self) -> &str {
        &self.subscriber
    }

    /// The subscriber's kind (see [`Subscriber::kind_name`](crate::Subscriber::kind_name)).
    ///
    /// ```
    /// # let f = notify_core::__private::failure_for_doc();
    /// assert_eq!(f.kind(), "timed");
    /// ```
    pub fn kind(&self) -> &'static str {
        self.kind
    }

    /// The name of the event being delivered.
    ///
    /// ```
    /// # let f = notify_core::__private::failure_for_doc();
    /// assert_eq!(f.event(), "x");
    /// ```
    pub fn event(&self) -> &str {
        &self.event
    }

    /// The panic message (`"<non-string panic payload>"` when the payload was not a string).
    ///
    /// ```
    /// # let f = notify_core::__private::failure_for_doc();
    /// assert_eq!(f.message(), "boom");
    /// ```
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// One line: the label, event name and panic message are escaped ([`Escaped`]), so a name or message
/// holding a newline or a terminal escape sequence cannot forge a log line; the accessors return them
/// as they are.
///
/// ```
/// use notify_core::{Notifier, Payload, Subscriber};
/// use std::sync::{Arc, Mutex};
/// let notifier = Notifier::new();
/// let lines = Arc::new(Mutex::new(Vec::new()));
/// let sink = lines.clone();
/// notifier.set_failure_hook(move |f: &notify_core::SubscriberFailure| sink.lock().unwrap().push(f.to_string()));
/// notifier.subscribe("x", Subscriber::event(|_: &notify_core::Event| panic!("no\n[INFO  auth] admin logged in")));
/// notifier.instrument("x", Payload::new, |_| ());
/// assert_eq!(lines.lock().unwrap()[0], r"subscriber `event` (event, subscription #1) panicked on `x`: no\n[INFO  auth] admin logged in");
/// ```
impl fmt::Display for SubscriberFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "subscriber `{}` ({}, subscription #{}) panicked on `{}`: {}",
            Escaped::new(&self.subscriber),
            self.kind,
            self.subscription,
            Escaped::new(&self.event),
            Escaped::new(&self.message)
        )
    }
}

/// Every failure of one event, in run order: the panic payload of [`FailurePolicy::Strict`].
///
/// ```
/// use notify_core::{FailurePolicy, Notifier, Payload, Subscriber, SubscriberErrors};
/// let notifier = Notifier::new();
/// notifier.set_failure_hook(|_: &notify_core::SubscriberFailure| {});
/// notifier.set_failure_policy(FailurePolicy::Strict);
/// notifier.subscribe("x", Subscriber::event(|_: &notify_core::Event| panic!("boom")));
/// let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| notifier.instrument("x", Payload::new, |_| ()))).unwrap_err();
/// let errors = panic.downcast::<SubscriberErrors>().unwrap();
/// assert_eq!(errors.failures().len(), 1);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubscriberErrors {
    pub(crate) failures: Vec<SubscriberFailure>,
}

impl SubscriberErrors {
    /// The failures, in run order.
    ///
    /// ```
    /// # let e = notify_core::__private::errors_for_doc();
    /// assert_eq!(e.failures()[0].message(), "boom");
    /// ```
    pub fn failures(&self) -> &[SubscriberFailure] {
        &self.failures
    }
}

impl fmt::Display for SubscriberErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} subscriber(s) failed:", self.failures.len())?;
        for failure in &self.failures {
            write!(f, "\n  {failure}")?;
        }
        Ok(())
    }
}

impl std::error::Error for SubscriberErrors {}

/// The failure hook's type.
pub(crate) type Hook = Arc<dyn Fn(&SubscriberFailure) + Send + Sync>;

/// The default failure hook: `log::error!` with target `notify`, one line (see
/// [`SubscriberFailure`]'s `Display`).
pub(crate) fn default_hook() -> Hook {
    Arc::new(|failure: &SubscriberFailure| log::error!(target: "notify", "{failure}"))
}

/// The message of a caught panic's payload, as `std`'s panic hook prints it.
///
/// A `panic!("...")` payload is a `&'static str` or a `String`; a [`SubscriberErrors`] (what
/// [`FailurePolicy::Strict`] raises) is rendered with its `Display`; any other payload (from
/// `std::panic::panic_any`) is `"<non-string panic payload>"`. Crates built on notify-core
/// (the worker pool, the log subscribers) use it to report what a subscriber's panic said.
///
/// ```
/// let payload = std::panic::catch_unwind(|| panic!("boom {}", 7)).unwrap_err();
/// assert_eq!(notify_core::panic_message(&*payload), "boom 7");
/// ```
pub fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&'static str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else if let Some(e) = payload.downcast_ref::<SubscriberErrors>() {
        e.to_string()
    } else {
        "<non-string panic payload>".to_owned()
    }
}

/// Runs one subscriber callback; a panic becomes a failure pushed onto `failures`.
#[inline]
pub(crate) fn guarded(failures: &mut Vec<SubscriberFailure>, entry: &Entry, event: &str, call: impl FnOnce()) {
    if let Err(payload) = catch_unwind(AssertUnwindSafe(call)) {
        failures.push(failure_of(entry, event, &*payload));
    }
}

#[cold]
pub(crate) fn failure_of(entry: &Entry, event: &str, payload: &(dyn Any + Send)) -> SubscriberFailure {
    let kind = entry.subscriber.kind_name();
    SubscriberFailure {
        subscription: entry.id,
        subscriber: entry.subscriber.label.clone().unwrap_or(Cow::Borrowed(kind)),
        kind,
        event: event.to_owned(),
        message: panic_message(payload),
    }
}

/// `silenced(name)` of one listener; a panic counts as "silenced" and is pushed onto `failures`.
pub(crate) fn guarded_silenced_reporting(
    failures: &mut Vec<SubscriberFailure>,
    listener: &crate::registry::Listener<dyn SilenceableSubscriber>,
    name: &str,
) -> bool {
    match catch_unwind(AssertUnwindSafe(|| listener.subscriber.silenced(name))) {
        Ok(silenced) => silenced,
        Err(payload) => {
            failures.push(failure_of(&listener.entry, name, &*payload));
            true
        }
    }
}

/// `silenced(name)` for queries (`listening`), where a panic counts as "silenced" without a report:
/// the report comes when an event is instrumented.
pub(crate) fn guarded_silenced(subscriber: &dyn SilenceableSubscriber, name: &str) -> bool {
    catch_unwind(AssertUnwindSafe(|| subscriber.silenced(name))).unwrap_or(true)
}
