//! What a subscription asks of its mailbox ([`AsyncOptions`]), and what the pool reports
//! ([`AsyncFailure`], [`SlowSubscriber`], [`ShutdownReport`]).

use std::borrow::Cow;
use std::fmt;

use notify_core::escape::Escaped;

use crate::mailbox_id::MailboxId;

/// What a mailbox does with an event that arrives when it already holds `capacity` events:
/// notify-core's [`Overflow`](notify_core::export::Overflow), re-exported (notify-nats' exporter queue
/// takes the same type). In a mailbox:
///
/// * [`DropNewest`](Overflow::DropNewest) (default) refuses the new event, counted by
///   [`AsyncHandle::dropped`](crate::AsyncHandle::dropped);
/// * [`DropOldest`](Overflow::DropOldest) evicts the oldest queued event, counted the same way;
/// * [`Block`](Overflow::Block) blocks the publishing thread until the mailbox has room. A
///   publisher that is itself a worker or dedicated thread of **any** notify pool (a callback
///   that publishes) never blocks: its event is dropped as with `DropNewest` instead, since the
///   mailbox it waits for may be drained only by a worker that waits for it in turn (its own
///   pool, or two pools publishing into each other). A publisher blocked when shutdown begins is
///   released and its event refused as every event after shutdown: counted by
///   [`WorkerPool::rejected`](crate::WorkerPool::rejected), not as dropped.
///
/// ```
/// assert_eq!(notify_pool::Overflow::default(), notify_pool::Overflow::DropNewest);
/// ```
pub use notify_core::export::Overflow;

/// What happens to an async subscriber whose callback panicked: the pool's counterpart of
/// notify-core's `FailurePolicy` (same names for the same meanings; notify-core's `Strict`, which
/// re-raises in the instrumented code, has no counterpart on a worker). Either way the worker
/// survives, and the panic is reported once through the pool's failure hook (default:
/// `log::error!`, target `notify::pool`; [`WorkerPool::set_failure_hook`]).
///
/// [`WorkerPool::set_failure_hook`]: crate::WorkerPool::set_failure_hook
///
/// ```
/// assert_eq!(notify_pool::AsyncFailurePolicy::default(), notify_pool::AsyncFailurePolicy::Report);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AsyncFailurePolicy {
    /// Report the panic and keep delivering the subscriber's next events (default).
    #[default]
    Report,
    /// Report the panic and detach the subscriber: the events still queued are discarded (and counted as dropped), later
    /// events are refused (publishers blocked on its full mailbox by [`Overflow::Block`] are
    /// released, their events counted as dropped), and [`AsyncHandle::is_closed`](crate::AsyncHandle::is_closed)
    /// becomes true. Its registry entry stays until you unsubscribe it.
    Detach,
}

/// Per-subscription options of an async subscriber.
///
/// ```
/// use notify_pool::{AsyncOptions, Overflow};
/// let options = AsyncOptions::new().capacity(16).overflow(Overflow::DropOldest).named("exporter");
/// assert_eq!(options.capacity, 16);
/// assert_eq!(AsyncOptions::default().capacity, 1024);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AsyncOptions {
    /// The most events the mailbox holds (a count, at least 1; default 1,024). The mailbox is a
    /// growable queue, not a preallocated ring: a mailbox that never received an event holds no
    /// queue at all, and a drained one keeps its queue (48 bytes) with a buffer of at most 8
    /// events (128 bytes), releasing a larger one.
    pub capacity: usize,
    /// What happens when the mailbox is full (default [`Overflow::DropNewest`]).
    pub overflow: Overflow,
    /// What happens when the callback panics (default [`AsyncFailurePolicy::Report`]).
    pub on_failure: AsyncFailurePolicy,
    /// Serve this subscriber from a thread of its own instead of the shared pool, for callbacks that
    /// block on I/O (default `false`). The thread ends when the subscription is unsubscribed,
    /// closed ([`AsyncHandle::close`](crate::AsyncHandle::close)), detached after a panic or
    /// dropped with its registry entry, once it delivered what was queued; or when the pool shuts
    /// down.
    pub dedicated_thread: bool,
    /// A label shown in failure and slow-subscriber reports.
    pub label: Option<Cow<'static, str>>,
}

impl Default for AsyncOptions {
    fn default() -> AsyncOptions {
        AsyncOptions {
            capacity: 1024,
            overflow: Overflow::DropNewest,
            on_failure: AsyncFailurePolicy::Report,
            dedicated_thread: false,
            label: None,
        }
    }
}

impl AsyncOptions {
    /// The defaults: 1,024 events, drop newest, keep on panic, shared pool, no label.
    ///
    /// ```
    /// assert_eq!(notify_pool::AsyncOptions::new(), Default::default());
    /// ```
    pub fn new() -> AsyncOptions {
        AsyncOptions::default()
    }

    /// Sets [`AsyncOptions::capacity`] (values below 1 become 1).
    ///
    /// ```
    /// assert_eq!(notify_pool::AsyncOptions::new().capacity(0).capacity, 1);
    /// ```
    #[must_use]
    pub fn capacity(mut self, events: usize) -> AsyncOptions {
        self.capacity = events.max(1);
        self
    }

    /// Sets [`AsyncOptions::overflow`].
    ///
    /// ```
    /// use notify_pool::{AsyncOptions, Overflow};
    /// assert_eq!(AsyncOptions::new().overflow(Overflow::Block).overflow, Overflow::Block);
    /// ```
    #[must_use]
    pub fn overflow(mut self, overflow: Overflow) -> AsyncOptions {
        self.overflow = overflow;
        self
    }

    /// Sets [`AsyncOptions::on_failure`].
    ///
    /// ```
    /// use notify_pool::{AsyncOptions, AsyncFailurePolicy};
    /// assert_eq!(AsyncOptions::new().on_failure(AsyncFailurePolicy::Detach).on_failure, AsyncFailurePolicy::Detach);
    /// ```
    #[must_use]
    pub fn on_failure(mut self, policy: AsyncFailurePolicy) -> AsyncOptions {
        self.on_failure = policy;
        self
    }

    /// Asks for a dedicated thread ([`AsyncOptions::dedicated_thread`]).
    ///
    /// ```
    /// assert!(notify_pool::AsyncOptions::new().dedicated().dedicated_thread);
    /// ```
    #[must_use]
    pub fn dedicated(mut self) -> AsyncOptions {
        self.dedicated_thread = true;
        self
    }

    /// Sets [`AsyncOptions::label`].
    ///
    /// ```
    /// assert_eq!(notify_pool::AsyncOptions::new().named("audit").label.as_deref(), Some("audit"));
    /// ```
    #[must_use]
    pub fn named(mut self, label: impl Into<Cow<'static, str>>) -> AsyncOptions {
        self.label = Some(label.into());
        self
    }
}

/// One panic of one async subscriber's callback, as the pool's failure hook receives it.
///
/// ```
/// use notify_pool::{AsyncOptions, WorkerPool};
/// use notify_core::{Event, Notifier, Payload};
/// use std::sync::{Arc, Mutex};
///
/// let reports = Arc::new(Mutex::new(Vec::new()));
/// let sink = reports.clone();
/// let pool = WorkerPool::builder().threads(1)
///     .failure_hook(move |f: &notify_pool::AsyncFailure| sink.lock().unwrap().push(f.to_string()))
///     .build();
/// let notifier = Notifier::new();
/// let sub = pool.subscribe(&notifier, "run.job", AsyncOptions::new().named("audit"), |_: &Event| panic!("boom"));
/// notifier.instrument("run.job", Payload::new, |_| ());
/// pool.flush();
/// assert_eq!(reports.lock().unwrap()[0], "async subscriber `audit` (mailbox #1) panicked on `run.job`: boom");
/// # let _ = sub;
/// ```
///
/// Its `Display` (what the default hook logs) escapes control characters of the event name, the
/// label and the message, so they cannot forge a log line; the getters return them as they are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AsyncFailure {
    pub(crate) mailbox: MailboxId,
    pub(crate) subscriber: Cow<'static, str>,
    pub(crate) event: String,
    pub(crate) message: String,
    pub(crate) detached: bool,
    /// The subscriber panicked while being dropped, not in a callback.
    pub(crate) in_drop: bool,
}

impl AsyncFailure {
    /// The mailbox id ([`AsyncHandle::id`](crate::AsyncHandle::id)).
    pub fn mailbox(&self) -> MailboxId {
        self.mailbox
    }

    /// The subscriber's label, or `"async"` when it has none.
    pub fn subscriber(&self) -> &str {
        &self.subscriber
    }

    /// The name of the event being delivered; empty for a panic in the subscriber's `Drop`
    /// ([`AsyncFailure::in_drop`]).
    pub fn event(&self) -> &str {
        &self.event
    }

    /// True when the subscriber panicked while it was dropped (its `Drop`, or the drop of a value
    /// it captured), not in a callback. The panic was caught wherever the drop happened (on a
    /// worker, in shutdown, on the thread that unsubscribed or published): it never kills a
    /// worker nor unwinds into the caller. Reported once per subscriber, counted in
    /// [`WorkerPool::failures`](crate::WorkerPool::failures).
    ///
    /// ```
    /// use notify_pool::{AsyncFailure, AsyncOptions, WorkerPool};
    /// use notify_core::{Event, Notifier};
    /// use std::sync::{Arc, Mutex};
    ///
    /// struct PanicsOnDrop;
    /// impl Drop for PanicsOnDrop {
    ///     fn drop(&mut self) { panic!("closing the export file failed"); }
    /// }
    /// # std::panic::set_hook(Box::new(|_| {}));
    /// let reports = Arc::new(Mutex::new(Vec::new()));
    /// let sink = reports.clone();
    /// let pool = WorkerPool::builder().threads(1)
    ///     .failure_hook(move |f: &AsyncFailure| sink.lock().unwrap().push((f.in_drop(), f.to_string())))
    ///     .build();
    /// let notifier = Notifier::new();
    /// let held = PanicsOnDrop;
    /// let sub = pool.subscribe(&notifier, "run.job", AsyncOptions::new().named("export"), move |_: &Event| { let _ = &held; });
    /// sub.unsubscribe()?;
    /// drop(sub); // the last reference: the subscriber is dropped here, and its panic caught
    /// assert_eq!(*reports.lock().unwrap(), [(true, "async subscriber `export` (mailbox #1) panicked when dropped: closing the export file failed".to_owned())]);
    /// assert_eq!(pool.failures(), 1);
    /// # Ok::<(), notify_core::NotifyError>(())
    /// ```
    pub fn in_drop(&self) -> bool {
        self.in_drop
    }

    /// The panic message (`"<non-string panic payload>"` when the payload was not a string).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// True when the subscriber was detached because of this panic ([`AsyncFailurePolicy::Detach`]).
    pub fn detached(&self) -> bool {
        self.detached
    }
}

impl fmt::Display for AsyncFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.in_drop {
            return write!(
                f,
                "async subscriber `{}` (mailbox {}) panicked when dropped: {}",
                Escaped::new(&self.subscriber),
                self.mailbox,
                Escaped::new(&self.message)
            );
        }
        write!(
            f,
            "async subscriber `{}` (mailbox {}) panicked on `{}`: {}{}",
            Escaped::new(&self.subscriber),
            self.mailbox,
            Escaped::new(&self.event),
            Escaped::new(&self.message),
            if self.detached { " (detached)" } else { "" }
        )
    }
}

/// A subscriber that falls behind: its mailbox overflowed. Sent to the pool's slow-subscriber hook
/// (default: `log::warn!`, target `notify::pool`) at most once per report interval per mailbox
/// (default 1 s); the interval is checked only when an event overflows, so the publishing fast path
/// reads no clock.
///
/// ```
/// use notify_pool::{AsyncOptions, Overflow, SlowSubscriber, WorkerPool};
/// use notify_core::{Event, Notifier, Payload};
/// use std::sync::{mpsc, Arc, Mutex};
///
/// let reports = Arc::new(Mutex::new(Vec::new()));
/// let sink = reports.clone();
/// let pool = WorkerPool::builder().threads(1)
///     .slow_subscriber_hook(move |s: &SlowSubscriber| sink.lock().unwrap().push(s.clone()))
///     .build();
/// let notifier = Notifier::new();
/// let (release, gate) = mpsc::channel::<()>();
/// let gate = Mutex::new(gate);
/// let sub = pool.subscribe(&notifier, "export.audit", AsyncOptions::new().capacity(1).named("audit"),
///     move |_: &Event| gate.lock().unwrap().recv().unwrap());
/// notifier.instrument("export.audit", Payload::new, |_| ()); // the worker takes it and waits
/// while sub.queued() == 1 { std::thread::yield_now(); }
/// notifier.instrument("export.audit", Payload::new, |_| ()); // queued: the mailbox is full
/// notifier.instrument("export.audit", Payload::new, |_| ()); // dropped, and reported
/// release.send(()).unwrap();
/// release.send(()).unwrap();
/// pool.flush();
/// let report = &reports.lock().unwrap()[0];
/// assert_eq!((report.mailbox(), report.subscriber(), report.capacity()), (sub.handle().id(), "audit", 1));
/// assert_eq!((report.dropped(), report.overflow()), (1, Overflow::DropNewest));
/// assert_eq!(report.to_string(), format!(
///     "async subscriber `audit` (mailbox {}) is slow: mailbox full at 1 events, 1 dropped so far (drop newest)",
///     sub.handle().id()));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlowSubscriber {
    pub(crate) mailbox: MailboxId,
    pub(crate) subscriber: Cow<'static, str>,
    pub(crate) capacity: usize,
    pub(crate) dropped: u64,
    pub(crate) overflow: Overflow,
}

impl SlowSubscriber {
    /// The mailbox id (of the fan-out shard's first member for a fan-out group; [`AsyncHandle::id`](crate::AsyncHandle::id)).
    pub fn mailbox(&self) -> MailboxId {
        self.mailbox
    }

    /// The subscriber's label, or `"async"`.
    pub fn subscriber(&self) -> &str {
        &self.subscriber
    }

    /// The mailbox capacity (events).
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Events dropped by this mailbox so far (a count; 0 for [`Overflow::Block`] that blocked).
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// The mailbox's overflow policy.
    pub fn overflow(&self) -> Overflow {
        self.overflow
    }
}

impl fmt::Display for SlowSubscriber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let policy = match self.overflow {
            Overflow::DropNewest => "drop newest",
            Overflow::DropOldest => "drop oldest",
            Overflow::Block => "block publisher",
            _ => "drop newest",
        };
        write!(
            f,
            "async subscriber `{}` (mailbox {}) is slow: mailbox full at {} events, {} dropped so far ({policy})",
            Escaped::new(&self.subscriber),
            self.mailbox,
            self.capacity,
            self.dropped
        )
    }
}

/// What [`WorkerPool::shutdown`](crate::WorkerPool::shutdown) did.
///
/// ```
/// let pool = notify_pool::WorkerPool::builder().threads(1).build();
/// let report = pool.shutdown(std::time::Duration::from_secs(1));
/// assert_eq!(report.abandoned, 0);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShutdownReport {
    /// Callbacks that returned (or panicked) over the pool's whole life, dedicated threads included.
    pub delivered: u64,
    /// Events accepted into mailboxes but never delivered because the deadline passed: exact.
    pub abandoned: u64,
    /// True when every accepted event was delivered before the deadline.
    pub drained: bool,
    /// The names of the threads still running a callback [`WorkerPool::STOP_GRACE`] after the
    /// deadline: detached (left to end on their own, not joined); the events they hold are
    /// counted in `abandoned`. Empty when every thread was joined.
    ///
    /// [`WorkerPool::STOP_GRACE`]: crate::WorkerPool::STOP_GRACE
    pub detached: Vec<String>,
}
