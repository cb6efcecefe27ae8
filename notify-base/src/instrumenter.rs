//! [`Instrumenter`]: AS::N's `ActiveSupport::Notifications::Instrumenter` — one per thread and
//! notifier, with an id, that instruments, starts and finishes events and builds handles.

use std::borrow::Cow;
use std::cell::RefCell;
use std::marker::PhantomData;

use crate::context::EventContext;
use crate::error::NotifyError;
use crate::handle::Handle;
use crate::ids::transaction_id;
use crate::notifier::Notifier;
use crate::payload::Payload;
use crate::transaction_id::TransactionId;

/// The events started with [`Instrumenter::start`] and not finished yet, on this thread: the
/// notifier they belong to (its address) and the handle.
struct Started(Vec<(usize, Handle)>);

/// At thread exit the events still open are forgotten, not finished: finishing would run
/// subscribers while the thread's other thread-locals (ids, context) are being destroyed, and a
/// panic there aborts the process.
impl Drop for Started {
    fn drop(&mut self) {
        for (_, handle) in self.0.drain(..) {
            std::mem::forget(handle);
        }
    }
}

thread_local! {
    static STARTED: RefCell<Started> = const { RefCell::new(Started(Vec::new())) };
}

/// The instrumenter of the calling thread for one notifier — AS::N's
/// `ActiveSupport::Notifications.instrumenter`. Get it with [`Notifier::instrumenter`] or, for the
/// global notifier, [`crate::instrumenter`].
///
/// Its [`id`](Instrumenter::id) is the thread's [`transaction_id`](crate::transaction_id), what
/// timed and monotonic subscribers receive, as an AS::N instrumenter's id is. It offers AS::N's
/// operations: [`instrument`](Instrumenter::instrument) a block,
/// [`start`](Instrumenter::start) and [`finish`](Instrumenter::finish) an event by name in two
/// places of the same thread, and [`build_handle`](Instrumenter::build_handle) for an event driven
/// through a [`Handle`] (which may also finish on another thread).
///
/// An instrumenter is a cheap value (the notifier and the id); all values of one thread and one
/// notifier share the thread's started events, as AS::N's per-thread instance does. It is not
/// `Send`: its id and its started events belong to the thread that made it. Which events belong to
/// one request across threads is told by the [`TraceId`](crate::TraceId), not by this id.
///
/// ```
/// use notify_core::{context::TransactionId, Event, Notifier, Payload, Subscriber};
/// use std::sync::{Arc, Mutex};
/// let notifier = Notifier::new();
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let sink = seen.clone();
/// notifier.subscribe(notify_core::Pattern::all(), Subscriber::timed(move |name: &str, _, _, id: TransactionId, _: &Payload| {
///     sink.lock().unwrap().push((name.to_owned(), id));
/// }));
///
/// let instrumenter = notifier.instrumenter();
/// assert_eq!(instrumenter.id(), notify_core::context::transaction_id());
/// instrumenter.instrument("render.view", Payload::new, |_| ());
/// instrumenter.start("request.app", Payload::new().with("path", "/"));
/// instrumenter.finish("request.app", Payload::new().with("status", 200_u64))?;
/// assert_eq!(*seen.lock().unwrap(), [("render.view".to_owned(), instrumenter.id()), ("request.app".to_owned(), instrumenter.id())]);
/// # Ok::<(), notify_core::NotifyError>(())
/// ```
pub struct Instrumenter {
    notifier: Notifier,
    id: TransactionId,
    _per_thread: PhantomData<*const ()>,
}

impl Notifier {
    /// The calling thread's [`Instrumenter`] for this notifier (AS::N's
    /// `ActiveSupport::Notifications.instrumenter`).
    ///
    /// ```
    /// let notifier = notify_core::Notifier::new();
    /// assert_eq!(notifier.instrumenter().id(), notify_core::context::transaction_id());
    /// ```
    pub fn instrumenter(&self) -> Instrumenter {
        Instrumenter {
            notifier: self.clone(),
            id: transaction_id(),
            _per_thread: PhantomData,
        }
    }
}

impl Instrumenter {
    /// The instrumenter id: the thread's [`transaction_id`](crate::transaction_id), unique per
    /// thread and stable for its lifetime.
    ///
    /// ```
    /// let here = notify_core::instrumenter().id();
    /// let there = std::thread::spawn(|| notify_core::instrumenter().id()).join().unwrap();
    /// assert_ne!(here, there);
    /// ```
    pub fn id(&self) -> TransactionId {
        self.id
    }

    /// The notifier this instrumenter publishes to.
    ///
    /// ```
    /// let notifier = notify_core::Notifier::new();
    /// assert_eq!(notifier.instrumenter().notifier().subscriber_count(), 0);
    /// ```
    pub fn notifier(&self) -> &Notifier {
        &self.notifier
    }

    /// [`Notifier::instrument`]: runs `body` as the event `name` (AS::N's `instrument(name, payload) { }`).
    ///
    /// ```
    /// assert_eq!(notify_core::instrumenter().instrument("instrumenter.doc", notify_core::Payload::new, |_| 2), 2);
    /// ```
    #[inline]
    pub fn instrument<T>(
        &self,
        name: &str,
        payload: impl FnOnce() -> Payload,
        body: impl FnOnce(&mut Payload) -> T,
    ) -> T {
        self.notifier.instrument(name, payload, body)
    }

    /// [`Notifier::build_handle`]: an event to start and finish through its [`Handle`].
    ///
    /// ```
    /// let mut handle = notify_core::Notifier::new().instrumenter().build_handle("upload", notify_core::Payload::new());
    /// handle.start()?;
    /// handle.finish()?;
    /// # Ok::<(), notify_core::NotifyError>(())
    /// ```
    pub fn build_handle(&self, name: impl Into<Cow<'static, str>>, payload: Payload) -> Handle {
        self.notifier.build_handle(name, payload)
    }

    /// Starts the event `name` with `payload` on this thread (AS::N's `instrumenter.start`): evented
    /// subscribers get `start` now, and it becomes the thread's current event, until
    /// [`Instrumenter::finish`] with the same name finishes it. Events started this way nest: the
    /// innermost open one is the parent of the next. Returns the event's ids when somebody listens.
    ///
    /// An event still open when its thread ends is never delivered, as with AS::N's per-thread
    /// handle stack; it is forgotten, not dropped (finishing it would run subscribers while the
    /// thread's other thread-locals are being destroyed), so its handle's memory and a reference
    /// to its notifier are leaked. One still open when its instrumenter value is dropped stays
    /// open (the started events belong to the thread). Use a [`Handle`] for an event that must
    /// finish on another thread, or finish on drop.
    ///
    /// Not for async code: the event is the *thread's* current event until its finish, so if a
    /// task awaits between `start` and `finish`, other tasks polled on that thread meanwhile get
    /// it as their parent. In an `async fn` use `#[instrument_event]` or
    /// [`Instrument::instrument`](crate::Instrument::instrument), or a [`Handle`], which is
    /// current only inside its `!Send` [`enter`](Handle::enter) guard.
    ///
    /// ```
    /// use notify_core::{Notifier, Payload, Subscriber};
    /// let notifier = Notifier::new();
    /// notifier.subscribe("job.app", Subscriber::event(|_: &notify_core::Event| {}));
    /// let instrumenter = notifier.instrumenter();
    /// let ids = instrumenter.start("job.app", Payload::new()).expect("listened");
    /// assert_eq!(notify_core::context::current_event_id(), Some(ids.id()));
    /// assert_eq!(instrumenter.open(), 1);
    /// instrumenter.finish("job.app", Payload::new())?;
    /// assert_eq!(instrumenter.open(), 0);
    /// # Ok::<(), notify_core::NotifyError>(())
    /// ```
    pub fn start(&self, name: impl Into<Cow<'static, str>>, payload: Payload) -> Option<EventContext> {
        let mut handle = self.notifier.build_handle(name, payload);
        handle.start_current().expect("a new handle starts");
        let context = handle.context();
        STARTED.with(|started| started.borrow_mut().0.push((self.key(), handle)));
        context
    }

    /// Finishes the innermost event named `name` that this thread started on this notifier with
    /// [`Instrumenter::start`] (AS::N's `instrumenter.finish(name, payload)`), and delivers it.
    /// The entries of `payload` are added to the event's payload (replacing entries of the same
    /// key), so facts known only at the end (rows, status) reach the subscribers.
    ///
    /// # Errors
    /// [`NotifyError::NotStarted`] when no such event is open on this thread for this notifier;
    /// nothing changes then.
    ///
    /// ```
    /// use notify_core::{Event, Notifier, NotifyError, Payload, Subscriber};
    /// let notifier = Notifier::new();
    /// notifier.subscribe("q.db", Subscriber::event(|e: &Event| {
    ///     assert_eq!(e.payload().get("sql").and_then(|v| v.as_str()), Some("SELECT 1"));
    ///     assert_eq!(e.payload().get("rows").and_then(|v| v.as_i64()), Some(1));
    /// }));
    /// let instrumenter = notifier.instrumenter();
    /// assert_eq!(instrumenter.finish("q.db", Payload::new()), Err(NotifyError::NotStarted));
    /// instrumenter.start("q.db", Payload::new().with("sql", "SELECT 1"));
    /// instrumenter.finish("q.db", Payload::new().with("rows", 1_u64))?;
    /// # Ok::<(), NotifyError>(())
    /// ```
    pub fn finish(&self, name: &str, payload: Payload) -> Result<(), NotifyError> {
        let key = self.key();
        let handle = STARTED.with(|started| {
            let mut started = started.borrow_mut();
            let at = started.0.iter().rposition(|(k, h)| *k == key && h.name() == name)?;
            Some(started.0.remove(at).1)
        });
        let Some(mut handle) = handle else {
            return Err(NotifyError::NotStarted);
        };
        for (key, value) in payload {
            handle.payload_mut().insert(key, value);
        }
        // Outside the thread-local's borrow: subscribers may start and finish events themselves.
        handle.finish()
    }

    /// How many events this thread started on this notifier with [`Instrumenter::start`] and has
    /// not finished.
    ///
    /// ```
    /// assert_eq!(notify_core::Notifier::new().instrumenter().open(), 0);
    /// ```
    pub fn open(&self) -> usize {
        let key = self.key();
        STARTED.with(|started| started.borrow().0.iter().filter(|(k, _)| *k == key).count())
    }

    /// The notifier's identity, to keep the started events of two notifiers apart.
    fn key(&self) -> usize {
        self.notifier.identity()
    }
}

impl std::fmt::Debug for Instrumenter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Instrumenter")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}
