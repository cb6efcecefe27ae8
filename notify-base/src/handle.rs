//! [`Handle`]: an event started and finished in different places (AS::N's `Instrumenter#build_handle`).

use std::marker::PhantomData;
use std::sync::Arc;

use crate::context::{Context, EventContext};
use crate::dispatch::Active;
use crate::error::NotifyError;
use crate::event::{Name, Outcome};
use crate::event_id::EventId;
use crate::fanout::{self, Fanout};
use crate::payload::{Payload, Value};
use crate::sync::StaticMutex;
use crate::tags::{Tags, TagsGuard};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Built,
    Started,
    Finished,
}

/// An event whose start and finish the caller drives: [`Handle::start`], then [`Handle::finish`].
///
/// **Starting a handle does not make it current.** Events started elsewhere meanwhile do not
/// become its children and [`record`](crate::record) does not reach it, until code runs inside
/// its scope: [`Handle::enter`] (a `!Send` guard, as tracing's `Span::enter`) or
/// [`Handle::in_scope`]. A handle is `Send` and may be held across `.await`; its scope guard may
/// not, so a task that awaits while holding the handle can never make itself the parent of
/// other tasks' events polled on that thread meanwhile (the compiler refuses a guard held across
/// `.await` in a `Send` future). For a future, [`Instrument::instrument`](crate::Instrument::instrument)
/// enters the handle around each poll.
///
/// The listener set is captured at `start`: a subscriber added afterwards is not called for this
/// event, and one removed afterwards still receives its finish. A second
/// `start` or `finish` is an [`Err`], never a panic. A handle dropped after `start` and before
/// `finish` finishes on drop (marked [`Outcome::Panicked`] when a panic began after `start`), so
/// it also works as a guard. A handle finished on another thread than it started on is delivered
/// normally, without CPU time or allocation count (those are per-thread counters).
///
/// **Tags are those current at `start`** ([`Tags`], Rails' `event.tagged`): a listened handle
/// captures them when it starts, attaches them while it is entered (so events started inside get
/// them too) and while its finish is delivered, wherever and however it ends (`finish`, dropped,
/// entered by a response body polled outside the request's scope, on another thread).
///
/// For callsite handles ([`Callsite::handle`](crate::Callsite::handle)) the listener set is
/// captured when the handle is made, just before `start`, and the silenceable subscribers are
/// asked then: such a handle dropped before `start` delivers nothing, and a `silenced` that
/// panicked is reported to the failure hook all the same.
///
/// ```
/// use notify_core::{event::EventId, Event, Notifier, NotifyError, Payload, Subscriber};
/// use std::sync::{Arc, Mutex};
/// let notifier = Notifier::new();
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let sink = seen.clone();
/// notifier.subscribe(notify_core::Pattern::all(), Subscriber::event(move |e: &Event| {
///     sink.lock().unwrap().push((e.name().to_owned(), e.id(), e.parent_id(), e.payload().len()));
/// }));
/// let mut handle = notifier.build_handle("upload", Payload::new());
/// handle.start()?;
/// handle.payload_mut().insert("bytes", 512_u64);
/// notifier.instrument("outside", Payload::new, |_| ()); // not a child: the handle is not current
/// handle.in_scope(|| {
///     notify_core::record("chunks", 4_u64);
///     notifier.instrument("inside", Payload::new, |_| ()); // a child
/// });
/// handle.finish()?;
/// assert_eq!(handle.finish(), Err(NotifyError::AlreadyFinished));
/// let upload = handle.id().unwrap();
/// let seen = seen.lock().unwrap();
/// assert_eq!((seen[0].0.as_str(), seen[0].2), ("outside", None));
/// assert_eq!((seen[1].0.as_str(), seen[1].2), ("inside", Some(upload)));
/// assert_eq!((seen[2].0.as_str(), seen[2].1, seen[2].3), ("upload", upload, 2));
/// # Ok::<(), NotifyError>(())
/// ```
pub struct Handle {
    notifier: Source,
    name: Name,
    payload: Payload,
    state: State,
    /// Before `start`: the listeners a callsite already resolved and asked (or nothing). After:
    /// the event in flight, if anybody listens.
    active: Option<Active>,
    id: Option<EventId>,
    /// The explicit parent given with [`Handle::set_parent`].
    parent: Option<Context>,
    outcome: Outcome,
    /// Facts [`record`](crate::record)ed inside [`Handle::enter`] guards, moved here when each
    /// guard drops (on the entering thread), added to the payload at finish.
    recorded: StaticMutex<Vec<(&'static str, Value)>>,
    /// The [`Tags`] current when the (listened) event started: attached while it is entered and
    /// while its end is delivered, wherever that happens (Rails' `event.tagged`).
    tags: Tags,
}

/// The notifier of a handle: callsite handles always use the global one, so they hold no
/// reference count of it.
enum Source {
    Global,
    Fanout(Arc<Fanout>),
}

impl Source {
    #[inline]
    fn fanout(&self) -> &Fanout {
        match self {
            Source::Global => fanout::global(),
            Source::Fanout(fanout) => fanout,
        }
    }
}

impl Handle {
    pub(crate) fn new(fanout: Arc<Fanout>, name: Name, payload: Payload) -> Handle {
        Handle {
            notifier: Source::Fanout(fanout),
            name,
            payload,
            state: State::Built,
            active: None,
            id: None,
            parent: None,
            outcome: Outcome::Completed,
            recorded: StaticMutex::new(Vec::new()),
            tags: Tags::new(),
        }
    }

    /// A handle of the global notifier whose listeners are already resolved and asked (callsites).
    pub(crate) fn prepared(name: Name, prepared: Active, payload: Payload) -> Handle {
        Handle {
            notifier: Source::Global,
            name,
            payload,
            state: State::Built,
            active: Some(prepared),
            id: None,
            parent: None,
            outcome: Outcome::Completed,
            recorded: StaticMutex::new(Vec::new()),
            tags: Tags::new(),
        }
    }

    fn begin(&mut self, enter: bool) -> Result<(), NotifyError> {
        match self.state {
            State::Built => {}
            State::Started | State::Finished => return Err(NotifyError::AlreadyStarted),
        }
        self.state = State::Started;
        if self.active.is_none() {
            let fanout = self.notifier.fanout();
            let resolved = fanout.lookup_name(self.name.clone());
            self.active = resolved.and_then(|resolved| Active::prepare(fanout, resolved));
        }
        if let Some(active) = &mut self.active {
            self.tags = Tags::captured();
            active.start(&mut self.payload, enter, self.parent.as_ref().map(Context::frame));
            active.note_unwinding_at_start();
            self.id = Some(active.id());
        }
        Ok(())
    }

    /// Gives the event an explicit parent: at `start`, its parent id and trace id come from
    /// `parent` instead of the thread's current context (tracing's `parent:`). `Context::none()`
    /// makes it a root of a new trace.
    ///
    /// # Errors
    /// [`NotifyError::AlreadyStarted`] after `start` (the ids are taken then).
    ///
    /// ```
    /// use notify_core::{event::EventId, Context, Event, Notifier, Payload, Subscriber, TraceId};
    /// let notifier = Notifier::new();
    /// notifier.subscribe("job", Subscriber::event(|e: &Event| {
    ///     assert_eq!(e.parent_id(), Some(EventId::new(41)));
    ///     assert_eq!(e.trace_id(), TraceId::new(5).unwrap());
    /// }));
    /// let mut handle = notifier.build_handle("job", Payload::new());
    /// handle.set_parent(Context::new(TraceId::new(5).unwrap(), Some(EventId::new(41))))?;
    /// handle.start()?;
    /// handle.finish()?;
    /// assert!(handle.set_parent(Context::none()).is_err());
    /// # Ok::<(), notify_core::NotifyError>(())
    /// ```
    pub fn set_parent(&mut self, parent: impl Into<Context>) -> Result<(), NotifyError> {
        if self.state != State::Built {
            return Err(NotifyError::AlreadyStarted);
        }
        self.parent = Some(parent.into());
        Ok(())
    }

    /// The event's ids (id, parent id, trace id) once started and listened, also after `finish`.
    ///
    /// ```
    /// use notify_core::{Notifier, Payload, Subscriber};
    /// let notifier = Notifier::new();
    /// notifier.subscribe("x", Subscriber::event(|_: &notify_core::Event| {}));
    /// let mut h = notifier.build_handle("x", Payload::new());
    /// assert_eq!(h.context(), None);
    /// h.start()?;
    /// assert_eq!(h.context().map(|c| c.id()), h.id());
    /// # Ok::<(), notify_core::NotifyError>(())
    /// ```
    pub fn context(&self) -> Option<EventContext> {
        self.id?;
        self.active.as_ref().map(|active| *active.context())
    }

    /// Starts the event: takes its ids (parent: the explicit one, else the context current
    /// here), captures the listener set, calls evented `start`s and reads the clocks. It does
    /// **not** make the event current: code that should run as part of it (its children, its
    /// [`record`](crate::record)s) runs inside [`Handle::enter`] or [`Handle::in_scope`].
    ///
    /// # Errors
    /// [`NotifyError::AlreadyStarted`] on a second call (also after `finish`).
    ///
    /// ```
    /// use notify_core::{Notifier, NotifyError, Payload, Subscriber};
    /// let notifier = Notifier::new();
    /// notifier.subscribe("x", Subscriber::event(|_: &notify_core::Event| {}));
    /// let mut h = notifier.build_handle("x", Payload::new());
    /// assert!(h.start().is_ok());
    /// assert_eq!(notify_core::context::current_event_id(), None, "started, not current");
    /// assert_eq!(h.start(), Err(NotifyError::AlreadyStarted));
    /// ```
    pub fn start(&mut self) -> Result<(), NotifyError> {
        self.begin(false)
    }

    /// Starts the event and makes it the thread's current event until `finish` on this thread:
    /// AS::N's per-thread [`Instrumenter::start`](crate::Instrumenter::start), whose handles
    /// never leave their thread.
    pub(crate) fn start_current(&mut self) -> Result<(), NotifyError> {
        self.begin(true)
    }

    /// Makes this (started, listened) event the thread's current event until the guard drops, so
    /// events started meanwhile get it as parent and [`record`](crate::record) adds to it, and
    /// calls the evented subscribers' [`enter`](crate::EventedSubscriber::enter) (their `exit`
    /// when the guard drops). What an instrumented future does around each poll (tracing's
    /// `Span::enter`). Does nothing for an unlistened or unstarted handle.
    ///
    /// The guard is `!Send`: it drops on the thread that entered, and a `Send` future cannot hold
    /// it across `.await` (which would make this event the parent of whatever other task that
    /// thread polls meanwhile). To be current across awaits, instrument the future instead
    /// ([`Instrument::instrument`](crate::Instrument::instrument), `#[instrument_event]`). Facts
    /// recorded inside the guard move into the handle when it drops, so they reach `finish` on
    /// any thread.
    ///
    /// ```
    /// use notify_core::{Notifier, Payload, Subscriber};
    /// let notifier = Notifier::new();
    /// notifier.subscribe("x", Subscriber::event(|_: &notify_core::Event| {}));
    /// let mut h = notifier.build_handle("x", Payload::new());
    /// h.start()?;
    /// {
    ///     let _entered = h.enter();
    ///     assert_eq!(notify_core::context::current_event_id(), h.id());
    /// }
    /// assert_eq!(notify_core::context::current_event_id(), None);
    /// # Ok::<(), notify_core::NotifyError>(())
    /// ```
    pub fn enter(&self) -> Entered<'_> {
        let active = self.active.as_ref().filter(|_| self.state == State::Started);
        // The event's tags first, so that its `enter` and `exit` callbacks see them too.
        let tags = active.and_then(|_| self.tags.attach_unless_current());
        if let Some(active) = active {
            active.enter(self.notifier.fanout());
        }
        Entered {
            handle: active.map(|_| self),
            _tags: tags,
            _not_send: PhantomData,
        }
    }

    /// Runs `f` with this (started, listened) event current, as inside an [`Handle::enter`]
    /// guard, and returns what it returns. A panic in `f` goes on (the guard's drop still exits).
    ///
    /// ```
    /// use notify_core::{Notifier, Payload, Subscriber};
    /// let notifier = Notifier::new();
    /// notifier.subscribe("x", Subscriber::event(|_: &notify_core::Event| {}));
    /// let mut h = notifier.build_handle("x", Payload::new());
    /// h.start()?;
    /// assert_eq!(h.in_scope(notify_core::context::current_event_id), h.id());
    /// assert_eq!(notify_core::context::current_event_id(), None);
    /// # Ok::<(), notify_core::NotifyError>(())
    /// ```
    pub fn in_scope<R>(&self, f: impl FnOnce() -> R) -> R {
        let _entered = self.enter();
        f()
    }

    /// The event name.
    ///
    /// ```
    /// assert_eq!(notify_core::Notifier::new().build_handle("upload", notify_core::Payload::new()).name(), "upload");
    /// ```
    pub fn name(&self) -> &str {
        self.name.as_str()
    }

    /// True once started (also after `finish`).
    pub(crate) fn is_started(&self) -> bool {
        self.state != State::Built
    }

    /// True when an explicit parent was set.
    pub(crate) fn has_parent(&self) -> bool {
        self.parent.is_some()
    }

    /// Adds the facts its [`Handle::enter`] guards collected to the payload (before finish).
    pub(crate) fn add_recorded(&mut self) {
        let recorded = std::mem::take(&mut *self.recorded.lock());
        for (key, value) in recorded {
            self.payload.insert(key, value);
        }
    }

    /// The event id once started and listened, also after `finish` (`None` when nobody listens).
    ///
    /// ```
    /// let mut h = notify_core::Notifier::new().build_handle("x", notify_core::Payload::new());
    /// h.start()?;
    /// assert_eq!(h.id(), None);
    /// # Ok::<(), notify_core::NotifyError>(())
    /// ```
    pub fn id(&self) -> Option<EventId> {
        self.id
    }

    /// True when the started event has listeners (false before `start`).
    ///
    /// ```
    /// let mut h = notify_core::Notifier::new().build_handle("x", notify_core::Payload::new());
    /// h.start()?;
    /// assert!(!h.is_listened());
    /// # Ok::<(), notify_core::NotifyError>(())
    /// ```
    pub fn is_listened(&self) -> bool {
        self.state != State::Built && self.active.is_some()
    }

    /// The payload, to add entries before `finish`.
    ///
    /// ```
    /// let mut h = notify_core::Notifier::new().build_handle("x", notify_core::Payload::new());
    /// h.payload_mut().insert("rows", 1_u64);
    /// assert_eq!(h.payload().len(), 1);
    /// ```
    pub fn payload_mut(&mut self) -> &mut Payload {
        &mut self.payload
    }

    /// The payload.
    ///
    /// ```
    /// let h = notify_core::Notifier::new().build_handle("x", notify_core::Payload::new().with("a", 1_u64));
    /// assert_eq!(h.payload().len(), 1);
    /// ```
    pub fn payload(&self) -> &Payload {
        &self.payload
    }

    /// Records `error` in the payload's `exception` ([`Payload::record_error`]).
    ///
    /// ```
    /// let mut h = notify_core::Notifier::new().build_handle("x", notify_core::Payload::new());
    /// h.record_error(&"bad input");
    /// assert!(h.payload().get("exception").is_some());
    /// ```
    pub fn record_error<E: std::fmt::Display + ?Sized>(&mut self, error: &E) {
        self.payload.record_error(error);
    }

    /// Sets how the event ended (default [`Outcome::Completed`]); a future dropped before completion
    /// sets [`Outcome::Cancelled`].
    ///
    /// ```
    /// let mut h = notify_core::Notifier::new().build_handle("x", notify_core::Payload::new());
    /// h.set_outcome(notify_core::event::Outcome::Cancelled);
    /// ```
    pub fn set_outcome(&mut self, outcome: Outcome) {
        self.outcome = outcome;
    }

    /// Finishes the event and delivers it to the listener set captured at start. When an event
    /// object is built, the payload moves into it (the handle's payload is empty afterwards).
    ///
    /// # Errors
    /// [`NotifyError::NotStarted`] before `start`; [`NotifyError::AlreadyFinished`] on a second call.
    ///
    /// ```
    /// let mut h = notify_core::Notifier::new().build_handle("x", notify_core::Payload::new());
    /// assert_eq!(h.finish(), Err(notify_core::NotifyError::NotStarted));
    /// ```
    pub fn finish(&mut self) -> Result<(), NotifyError> {
        match self.state {
            State::Built => return Err(NotifyError::NotStarted),
            State::Finished => return Err(NotifyError::AlreadyFinished),
            State::Started => {}
        }
        self.state = State::Finished;
        if self.active.is_some() {
            self.add_recorded();
        }
        if let Some(active) = &mut self.active {
            let _tags = self.tags.attach_unless_current();
            active.finish_in_place(self.notifier.fanout(), &mut self.payload, self.outcome);
        }
        Ok(())
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        match self.state {
            State::Started => {
                self.state = State::Finished;
                if self.active.is_some() {
                    self.add_recorded();
                }
                if let Some(active) = &mut self.active {
                    let _tags = self.tags.attach_unless_current();
                    active.finish_on_drop(self.notifier.fanout(), &mut self.payload, self.outcome);
                }
            }
            // A callsite handle dropped unstarted: nothing is delivered, but the failures of the
            // `silenced` calls made when it was prepared are reported, not lost.
            State::Built => {
                if let Some(active) = &mut self.active {
                    active.abandon(self.notifier.fanout());
                }
            }
            State::Finished => {}
        }
    }
}

impl std::fmt::Debug for Handle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handle")
            .field("name", &self.name.as_str())
            .field("state", &self.state)
            .field("listened", &self.active.is_some())
            .field("payload", &self.payload)
            .finish()
    }
}

/// The guard of [`Handle::enter`]: the event stops being current when it drops, and the facts
/// [`record`](crate::record)ed meanwhile move into the handle. Not `Send`: it must drop on the
/// thread that entered, and cannot be held across `.await` in a `Send` future.
#[must_use = "the event is current only while the guard lives"]
pub struct Entered<'a> {
    /// The entered handle, when it had an event to enter.
    handle: Option<&'a Handle>,
    /// The event's tags, attached while entered (dropped after `exit`, restoring the outer ones).
    _tags: Option<TagsGuard>,
    _not_send: PhantomData<*const ()>,
}

impl Drop for Entered<'_> {
    fn drop(&mut self) {
        if let Some(handle) = self.handle {
            if let (Some(active), Some(id)) = (&handle.active, handle.id) {
                if crate::record::any_waiting() {
                    crate::record::take_into_vec(id.0, &mut handle.recorded.lock());
                }
                active.exit(handle.notifier.fanout());
            }
        }
    }
}

impl std::fmt::Debug for Entered<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entered").finish()
    }
}
