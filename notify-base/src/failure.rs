//! Subscriber failures: a subscriber that panics never unwinds into the instrumented code and
//! never keeps the other subscribers from running. What happens next is the notifier's
//! [`FailurePolicy`]. Exporters report the events they had to drop through the same hook
//! ([`ExportDrops`], [`Subscription::report_export_drops`](crate::Subscription::report_export_drops)).

use std::any::Any;
use std::borrow::Cow;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::cold_box::ColdBox;
use crate::escape::Escaped;
use crate::kinds::SubscriberKind;
use crate::subscription::SubscriptionId;
use crate::sync::RwLock;

/// What a notifier does when a subscriber panics.
///
/// ```
/// use notify_core::{failure::FailurePolicy, Notifier};
/// let notifier = Notifier::new();
/// assert_eq!(notifier.failure_policy(), FailurePolicy::Report);
/// notifier.set_failure_policy(FailurePolicy::Strict);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum FailurePolicy {
    /// Report each failure through the failure hook (default: `log::error!`, or stderr without
    /// the `log` feature) and go on.
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

/// One panic of one subscriber while it received one event: what the failure hook receives.
///
/// ```
/// use notify_core::{failure::SubscriberFailure, subscriber::SubscriberKind, Notifier, Payload, Subscriber};
/// use std::sync::{Arc, Mutex};
/// let notifier = Notifier::new();
/// let failures = Arc::new(Mutex::new(Vec::new()));
/// let sink = failures.clone();
/// notifier.set_failure_hook(move |f: &SubscriberFailure| sink.lock().unwrap().push(f.clone()));
/// let audit = notifier.subscribe("query.sql", Subscriber::event(|_: &notify_core::Event| panic!("boom")).named("audit"));
/// assert_eq!(notifier.instrument("query.sql", Payload::new, |_| 7), 7);
///
/// let failure = failures.lock().unwrap()[0].clone();
/// assert_eq!(failure.subscription(), audit.id());
/// assert_eq!(failure.subscriber(), "audit");
/// assert_eq!(failure.kind(), SubscriberKind::Event);
/// assert_eq!(failure.event(), "query.sql");
/// assert_eq!(failure.message(), "boom");
/// assert_eq!(failure.to_string(), "subscriber `audit` (event, subscription #1) panicked on `query.sql`: boom");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubscriberFailure {
    pub(crate) subscription: SubscriptionId,
    pub(crate) subscriber: Cow<'static, str>,
    pub(crate) kind: SubscriberKind,
    pub(crate) event: String,
    pub(crate) message: String,
    /// The subscriber panicked while it was dropped, not in a callback.
    pub(crate) in_drop: bool,
    /// Not a panic: an exporter's report of events it dropped.
    pub(crate) drops: Option<Box<ExportDrops>>,
}

impl SubscriberFailure {
    /// The id of the failing subscription ([`Subscription::id`](crate::Subscription::id)).
    pub fn subscription(&self) -> SubscriptionId {
        self.subscription
    }

    /// The subscriber's label, or its kind when it has none.
    pub fn subscriber(&self) -> &str {
        &self.subscriber
    }

    /// The subscriber's kind.
    pub fn kind(&self) -> SubscriberKind {
        self.kind
    }

    /// The name of the event being delivered; empty for a panic in the subscriber's drop
    /// ([`SubscriberFailure::in_drop`]).
    pub fn event(&self) -> &str {
        &self.event
    }

    /// True when the subscriber panicked while it was dropped (its `Drop`, or the drop of a value
    /// it captured), not in a callback: when the registry let go of its last reference, which
    /// can happen on the instrumenting thread (a subscription removed by
    /// [`FailurePolicy::Detach`], or unsubscribed while one of its events was in flight) or on
    /// the thread that unsubscribed. The panic is caught there and never unwinds into the
    /// instrumented code: it is reported once through the failure hook, whatever the policy (the
    /// subscription is already gone, and [`FailurePolicy::Strict`] does not re-raise it), and
    /// counted by [`Notifier::failures`](crate::Notifier::failures). A clone of the
    /// [`Subscriber`](crate::Subscriber) that the caller kept is dropped by the caller's code:
    /// only the registry's reference is guarded.
    ///
    /// ```
    /// use notify_core::{failure::{FailurePolicy, SubscriberFailure}, Notifier, Payload, Subscriber};
    /// use std::sync::{Arc, Mutex};
    ///
    /// struct PanicsOnDrop;
    /// impl Drop for PanicsOnDrop {
    ///     fn drop(&mut self) { panic!("flushing the audit file failed"); }
    /// }
    /// # std::panic::set_hook(Box::new(|_| {}));
    /// let notifier = Notifier::new();
    /// let reports = Arc::new(Mutex::new(Vec::new()));
    /// let sink = reports.clone();
    /// notifier.set_failure_hook(move |f: &SubscriberFailure| sink.lock().unwrap().push((f.in_drop(), f.to_string())));
    /// notifier.set_failure_policy(FailurePolicy::Detach);
    /// let held = PanicsOnDrop;
    /// notifier.subscribe("query.sql", Subscriber::event(move |_: &notify_core::Event| {
    ///     let _ = &held;
    ///     panic!("boom");
    /// }).named("audit"));
    /// // Detached after its panic: its drop panics too, on this thread, and neither unwinds here.
    /// assert_eq!(notifier.instrument("query.sql", Payload::new, |_| 7), 7);
    /// assert_eq!(*reports.lock().unwrap(), [
    ///     (false, "subscriber `audit` (event, subscription #1) panicked on `query.sql`: boom".to_owned()),
    ///     (true, "subscriber `audit` (event, subscription #1) panicked when dropped: flushing the audit file failed".to_owned()),
    /// ]);
    /// assert_eq!(notifier.failures(), 2);
    /// ```
    pub fn in_drop(&self) -> bool {
        self.in_drop
    }

    /// The panic message (`"<non-string panic payload>"` when the payload was not a string); for
    /// an [`export_drops`](Self::export_drops) report, the report's one line.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The exporter's report when this failure is not a panic but events an exporter dropped
    /// ([`Subscription::report_export_drops`](crate::Subscription::report_export_drops)); then
    /// [`event`](Self::event) is empty, [`kind`](Self::kind) is
    /// [`SubscriberKind::Owned`](crate::SubscriberKind::Owned) and
    /// [`subscriber`](Self::subscriber) the exporter's name.
    pub fn export_drops(&self) -> Option<&ExportDrops> {
        self.drops.as_deref()
    }
}

/// Events an exporter dropped in one burst, by cause: what an exporter reports through its
/// notifier's failure hook with [`Subscription::report_export_drops`](crate::Subscription::report_export_drops)
/// (once per burst, not per event), which the hook receives as a [`SubscriberFailure`] whose
/// [`export_drops`](SubscriberFailure::export_drops) is this.
///
/// Causes are the exporter's own words (`"queue full"`, `"exporter error"`, `"shutdown"`), in the
/// order given; a cause with a count of 0 is left out.
///
/// ```
/// use notify_core::failure::ExportDrops;
/// let drops = ExportDrops::new("opentelemetry")
///     .with("queue full", 10_713)
///     .with("exporter error", 0)
///     .with("shutdown", 2)
///     .detail("channel closed");
/// assert_eq!(drops.dropped(), 10_715);
/// assert_eq!(drops.causes(), [("queue full", 10_713), ("shutdown", 2)]);
/// assert_eq!(drops.to_string(), "dropped 10715 events (queue full 10713, shutdown 2): channel closed");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportDrops {
    exporter: Cow<'static, str>,
    causes: Vec<(&'static str, u64)>,
    detail: Option<String>,
}

impl ExportDrops {
    /// A report by the exporter named `exporter` (the failure's [`subscriber`](SubscriberFailure::subscriber)),
    /// no drops yet.
    pub fn new(exporter: impl Into<Cow<'static, str>>) -> ExportDrops {
        ExportDrops {
            exporter: exporter.into(),
            causes: Vec::new(),
            detail: None,
        }
    }

    /// Adds `count` events dropped for `cause` (nothing when `count` is 0).
    pub fn with(mut self, cause: &'static str, count: u64) -> ExportDrops {
        if count > 0 {
            self.causes.push((cause, count));
        }
        self
    }

    /// Adds a detail: the sink's last error message, say (escaped when displayed).
    pub fn detail(mut self, detail: impl Into<String>) -> ExportDrops {
        self.detail = Some(detail.into());
        self
    }

    /// The exporter's name.
    pub fn exporter(&self) -> &str {
        &self.exporter
    }

    /// The non-zero causes with their counts, in the order added.
    pub fn causes(&self) -> &[(&'static str, u64)] {
        &self.causes
    }

    /// The events dropped, all causes together.
    pub fn dropped(&self) -> u64 {
        self.causes.iter().map(|(_, n)| n).sum()
    }

    /// The detail, when one was given.
    pub fn detail_message(&self) -> Option<&str> {
        self.detail.as_deref()
    }

    /// This report as the failure the hook receives, for `subscription`.
    pub(crate) fn into_failure(self, subscription: SubscriptionId) -> SubscriberFailure {
        SubscriberFailure {
            subscription,
            subscriber: self.exporter.clone(),
            kind: SubscriberKind::Owned,
            event: String::new(),
            message: self.to_string(),
            in_drop: false,
            drops: Some(Box::new(self)),
        }
    }
}

/// `dropped N events (cause n, ...)`, then `: detail` when there is one (escaped: a sink's error
/// text is foreign).
impl fmt::Display for ExportDrops {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "dropped {} events (", self.dropped())?;
        for (i, (cause, count)) in self.causes.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{cause} {count}")?;
        }
        f.write_str(")")?;
        if let Some(detail) = &self.detail {
            write!(f, ": {}", Escaped::new(detail))?;
        }
        Ok(())
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
/// notifier.set_failure_hook(move |f: &notify_core::failure::SubscriberFailure| sink.lock().unwrap().push(f.to_string()));
/// notifier.subscribe("x", Subscriber::event(|_: &notify_core::Event| panic!("no\n[INFO  auth] admin logged in")));
/// notifier.instrument("x", Payload::new, |_| ());
/// assert_eq!(lines.lock().unwrap()[0], r"subscriber `event` (event, subscription #1) panicked on `x`: no\n[INFO  auth] admin logged in");
/// ```
impl fmt::Display for SubscriberFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(drops) = &self.drops {
            return write!(
                f,
                "exporter `{}` ({}, subscription {}) {}",
                Escaped::new(&self.subscriber),
                self.kind,
                self.subscription,
                drops
            );
        }
        if self.in_drop {
            return write!(
                f,
                "subscriber `{}` ({}, subscription {}) panicked when dropped: {}",
                Escaped::new(&self.subscriber),
                self.kind,
                self.subscription,
                Escaped::new(&self.message)
            );
        }
        write!(
            f,
            "subscriber `{}` ({}, subscription {}) panicked on `{}`: {}",
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
/// use notify_core::{failure::{FailurePolicy, SubscriberErrors}, Notifier, Payload, Subscriber};
/// let notifier = Notifier::new();
/// notifier.set_failure_hook(|_: &notify_core::failure::SubscriberFailure| {});
/// notifier.set_failure_policy(FailurePolicy::Strict);
/// notifier.subscribe("query.sql", Subscriber::event(|_: &notify_core::Event| panic!("boom")));
/// let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| notifier.instrument("query.sql", Payload::new, |_| ()))).unwrap_err();
/// let errors = panic.downcast::<SubscriberErrors>().unwrap();
/// assert_eq!(errors.failures().len(), 1);
/// assert_eq!(errors.failures()[0].message(), "boom");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubscriberErrors {
    pub(crate) failures: Vec<SubscriberFailure>,
}

impl SubscriberErrors {
    /// The failures, in run order.
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

/// The failures of one event's (or one publish's) deliveries, in run order: empty (a null
/// pointer) until the first, so an event that has none builds and drops one word. (A `Vec` is
/// three words, stored one by one and then copied with 16-byte loads on its way into the event's
/// frame, which stalled on store forwarding.)
#[derive(Default)]
pub(crate) struct Failures(ColdBox<Vec<SubscriberFailure>>);

impl Failures {
    /// No failures.
    #[inline(always)]
    pub(crate) const fn new() -> Failures {
        Failures(ColdBox::empty())
    }

    #[inline(always)]
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Adds the failure after the others.
    #[cold]
    pub(crate) fn push(&mut self, failure: SubscriberFailure) {
        self.0.get_or_insert_with(Vec::new).push(failure);
    }

    /// Takes the failures out, in run order; `self` is left with none.
    pub(crate) fn take(&mut self) -> Vec<SubscriberFailure> {
        self.0.take().unwrap_or_default()
    }
}

/// The failure hook's type.
pub(crate) type Hook = Arc<dyn Fn(&SubscriberFailure) + Send + Sync>;

/// Where one notifier's failures go: its hook and their count. The fanout holds it, and so does
/// each registry entry, so that an entry whose subscriber panics when dropped (wherever its last
/// reference goes) reports through its notifier's hook, even after the notifier itself is gone.
pub(crate) struct FailureSink {
    hook: RwLock<Hook>,
    /// Failures reported through the hook (callbacks and drops), a count.
    failures: AtomicU64,
}

impl Drop for FailureSink {
    /// The hook is user code, and so is its drop: the sink's last reference can go on any thread
    /// (the notifier's drop, or the last registry entry's, on an instrumenting thread), so the
    /// hook is dropped under a guard (its panic swallowed, as a panic in the hook is).
    fn drop(&mut self) {
        let hook: Hook = Arc::new(|_: &SubscriberFailure| {});
        let hook = std::mem::replace(&mut *self.hook.write(), hook);
        if let Err(payload) = catch_unwind(AssertUnwindSafe(move || drop(hook))) {
            drop_panic_payload(payload);
        }
    }
}

impl FailureSink {
    pub(crate) fn new() -> FailureSink {
        FailureSink {
            hook: RwLock::new(default_hook()),
            failures: AtomicU64::new(0),
        }
    }

    pub(crate) fn hook(&self) -> Hook {
        self.hook.read().clone()
    }

    pub(crate) fn set_hook(&self, hook: Hook) {
        // The old hook is dropped after the lock is released: its Drop is user code.
        let old = std::mem::replace(&mut *self.hook.write(), hook);
        drop(old);
    }

    /// Failures reported so far (a count).
    pub(crate) fn failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }

    /// Calls the hook once per failure, in order, and counts them. A panic in the hook is caught
    /// and its payload dropped under a guard; the hook's clone is dropped under the guard too
    /// (replaced meanwhile, it is the last reference, and its drop is user code).
    #[cold]
    pub(crate) fn report(&self, failures: &[SubscriberFailure]) {
        self.failures.fetch_add(failures.len() as u64, Ordering::Relaxed);
        let hook = self.hook();
        let called = catch_unwind(AssertUnwindSafe(move || {
            for failure in failures {
                if let Err(payload) = catch_unwind(AssertUnwindSafe(|| hook(failure))) {
                    drop_panic_payload(payload);
                }
            }
        }));
        if let Err(payload) = called {
            drop_panic_payload(payload);
        }
    }
}

/// The default failure hook: [`report`]s the failure, one line (see [`SubscriberFailure`]'s
/// `Display`).
pub(crate) fn default_hook() -> Hook {
    Arc::new(|failure: &SubscriberFailure| report(&failure.to_string()))
}

/// Writes one line of the library's own reports: `log::error!` with target `notify` (feature
/// `log`, on by default), else to stderr prefixed with `notify: `.
pub(crate) fn report(line: &str) {
    #[cfg(feature = "log")]
    log::error!(target: "notify", "{line}");
    #[cfg(not(feature = "log"))]
    eprintln!("notify: {line}");
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
/// assert_eq!(notify_core::failure::panic_message(&*payload), "boom 7");
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

/// Drops a caught panic's payload (what `catch_unwind` returned) where a panic in its `Drop` is
/// caught too: a payload whose drop panics (`std::panic::panic_any(Bomb)`) must not unwind into the
/// instrumented code, nor end an exporter's thread. A drop that keeps panicking with new such
/// payloads is given up after 8 rounds and the last payload leaked. Never panics.
///
/// ```
/// struct Bomb;
/// impl Drop for Bomb {
///     fn drop(&mut self) {
///         panic!("dropped");
///     }
/// }
/// let payload = std::panic::catch_unwind(|| std::panic::panic_any(Bomb)).unwrap_err();
/// notify_core::failure::drop_panic_payload(payload); // its drop's panic caught here
/// ```
#[cold]
pub fn drop_panic_payload(payload: Box<dyn Any + Send>) {
    let mut payload = payload;
    for _ in 0..8 {
        match catch_unwind(AssertUnwindSafe(move || drop(payload))) {
            Ok(()) => return,
            Err(next) => payload = next,
        }
    }
    std::mem::forget(payload);
}
