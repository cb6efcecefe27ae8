//! [`Context`]: the trace id and current event that follow work across threads and tasks;
//! [`EventContext`]: the ids of one event, as evented subscribers receive them.

use std::marker::PhantomData;
use std::time::{Duration, Instant};

use crate::event::Outcome;
use crate::event_id::EventId;
use crate::ids;
use crate::location::Location;
use crate::trace_id::TraceId;

/// Where work is in a trace: a trace id and the current event (the parent of events started
/// under it). Capture it where work is handed off ([`Context::current`]) and attach it where the
/// work runs ([`Context::attach`], [`Context::in_scope`]), on any thread; for futures,
/// [`Instrument::in_current_context`](crate::Instrument::in_current_context) does both.
///
/// A context without a trace id makes the next event a root with a new random trace id; one with
/// a trace id but no event (an imported W3C `traceparent` whose parent is remote, or
/// [`Context::new_trace`]) gives events that trace id and no parent id, or the remote parent's
/// id when one was given.
///
/// This is OpenTelemetry's `Context` / W3C trace-context's (`trace-id`, `parent-id`) pair; the
/// per-thread [`transaction_id`](crate::transaction_id) is something else (AS::N's instrumenter
/// id), and under an async runtime it names a worker thread, not a request.
///
/// ```
/// use notify_core::{Context, Event, Notifier, Payload, Subscriber};
/// use std::sync::{Arc, Mutex};
///
/// let notifier = Notifier::new();
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let sink = seen.clone();
/// notifier.subscribe(notify_core::Pattern::all(), Subscriber::event(move |e: &Event| sink.lock().unwrap().push(e.clone())));
///
/// notifier.instrument("request.app", Payload::new, |_| {
///     let (context, n) = (Context::current(), notifier.clone());
///     std::thread::spawn(move || {
///         let _attached = context.attach();
///         n.instrument("job.app", Payload::new, |_| ());
///     }).join().unwrap();
/// });
/// let seen = seen.lock().unwrap();
/// let (job, request) = (&seen[0], &seen[1]);
/// assert_eq!(job.parent_id(), Some(request.id()));
/// assert_eq!(job.trace_id(), request.trace_id());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Context {
    trace_id: Option<TraceId>,
    event_id: Option<EventId>,
    /// `ids::DECIDED`, `ids::SAMPLED`, `ids::REMOTE`.
    flags: u8,
}

impl Context {
    /// The context of this thread now: the current event (innermost unfinished listened event, or
    /// the event of an attached context) and its trace id. Empty when there is none.
    ///
    /// ```
    /// assert_eq!(notify_core::Context::current(), notify_core::Context::none());
    /// ```
    pub fn current() -> Context {
        Context::of_frame(ids::current())
    }

    /// The context a frame makes current.
    pub(crate) fn of_frame(frame: ids::Frame) -> Context {
        Context {
            trace_id: TraceId::new(frame.trace),
            event_id: (frame.event != 0).then_some(EventId(frame.event)),
            flags: frame.flags,
        }
    }

    /// The empty context: attached, it makes events started under it roots of new traces, whatever
    /// is current on the thread.
    ///
    /// ```
    /// assert!(notify_core::Context::none().is_none());
    /// ```
    pub const fn none() -> Context {
        Context {
            trace_id: None,
            event_id: None,
            flags: 0,
        }
    }

    /// A context of a new random trace and no event: events started under it are roots sharing
    /// that trace id (a request id before any event exists).
    ///
    /// ```
    /// let a = notify_core::Context::new_trace();
    /// assert!(a.trace_id().is_some());
    /// assert_ne!(a.trace_id(), notify_core::Context::new_trace().trace_id());
    /// ```
    pub fn new_trace() -> Context {
        Context {
            trace_id: Some(ids::random_trace_id()),
            event_id: None,
            flags: ids::RANDOM,
        }
    }

    /// The same context with W3C Level 2's random trace id flag set (or cleared): its trace id
    /// was generated randomly. [`Context::new_trace`] sets it, and
    /// [`Context::from_traceparent`] when the header does; [`Context::traceparent`] sends it.
    /// Events started under the context do not carry it
    /// ([`Propagated`](crate::Propagated) does, for their trace).
    ///
    /// ```
    /// use notify_core::{event::EventId, Context, TraceId};
    /// let context = Context::new(TraceId::new(9).unwrap(), Some(EventId::new(5)));
    /// assert!(!context.has_random_trace_id());
    /// assert!(context.with_random_trace_id(true).has_random_trace_id());
    /// assert!(Context::new_trace().has_random_trace_id());
    /// ```
    #[must_use]
    pub const fn with_random_trace_id(mut self, random: bool) -> Context {
        if random {
            self.flags |= ids::RANDOM;
        } else {
            self.flags &= !ids::RANDOM;
        }
        self
    }

    /// True when the context says its trace id was generated randomly
    /// ([`Context::with_random_trace_id`]).
    pub const fn has_random_trace_id(&self) -> bool {
        self.flags & ids::RANDOM != 0
    }

    /// A context of a known trace and parent event id of this process, its sampling not decided
    /// (the first event under it, a local root, decides). For a parent read from another process
    /// use [`Context::from_traceparent`] or [`Context::remote`], which mark it remote.
    ///
    /// ```
    /// use notify_core::{event::EventId, Context, TraceId};
    /// let trace = TraceId::new(42).unwrap();
    /// let context = Context::new(trace, Some(EventId::new(7)));
    /// assert_eq!((context.trace_id(), context.event_id()), (Some(trace), Some(EventId::new(7))));
    /// ```
    pub const fn new(trace_id: TraceId, event_id: Option<EventId>) -> Context {
        Context {
            trace_id: Some(trace_id),
            event_id,
            flags: 0,
        }
    }

    /// A context whose event `parent_id` lives in another process (the parent id of a W3C
    /// `traceparent`), of trace `trace_id`, whose sampling was decided there (`sampled`: the W3C
    /// sampled flag). Events started under it have [`EventContext::parent_is_remote`] (the
    /// OpenTelemetry bridge sets `is_remote`) and inherit the decision. For a parsed header,
    /// [`Context::from_traceparent`].
    ///
    /// ```
    /// use notify_core::{event::EventId, Context, TraceId};
    /// let context = Context::remote(TraceId::new(42).unwrap(), EventId::new(7), false);
    /// assert!(context.is_remote());
    /// assert_eq!(context.is_sampled(), Some(false));
    /// ```
    pub const fn remote(trace_id: TraceId, parent_id: EventId, sampled: bool) -> Context {
        Context {
            trace_id: Some(trace_id),
            event_id: Some(parent_id),
            flags: ids::REMOTE
                | if sampled {
                    ids::DECIDED | ids::SAMPLED
                } else {
                    ids::DECIDED
                },
        }
    }

    /// True when the context's event lives in another process (made by [`Context::remote`] or
    /// [`Context::from_traceparent`]); false for events of this process and for no event.
    pub fn is_remote(&self) -> bool {
        self.flags & ids::REMOTE != 0 && self.event_id.is_some()
    }

    /// The trace's sampling decision: `Some(true)` sampled, `Some(false)` not, `None` not made
    /// yet (the first event under the context, a local root, makes it with its notifier's
    /// sampler).
    pub fn is_sampled(&self) -> Option<bool> {
        (self.flags & ids::DECIDED != 0).then_some(self.flags & ids::SAMPLED != 0)
    }

    /// The trace id, if any.
    pub fn trace_id(&self) -> Option<TraceId> {
        self.trace_id
    }

    /// The current event's id, if any: the parent id of events started under this context.
    pub fn event_id(&self) -> Option<EventId> {
        self.event_id
    }

    /// True for the empty context (no trace id, no event).
    pub fn is_none(&self) -> bool {
        self.trace_id.is_none() && self.event_id.is_none()
    }

    /// The context of the local event `event_id` of a trace `sampled` or not.
    pub(crate) fn local(trace_id: TraceId, event_id: EventId, sampled: bool) -> Context {
        Context {
            trace_id: Some(trace_id),
            event_id: Some(event_id),
            flags: ids::event_flags(sampled),
        }
    }

    #[inline]
    pub(crate) fn frame(&self) -> ids::Frame {
        ids::frame(
            self.event_id.map_or(0, EventId::get),
            self.trace_id.map_or(0, TraceId::get),
            self.flags,
        )
    }

    /// Makes this the thread's context until the guard drops; then the previous one is current
    /// again. Events started meanwhile get its event as parent and its trace id. Guards may drop in
    /// any order; each removes exactly what it attached.
    ///
    /// ```
    /// use notify_core::{event::EventId, Context, TraceId};
    /// let context = Context::new(TraceId::new(1).unwrap(), Some(EventId::new(99)));
    /// {
    ///     let _guard = context.attach();
    ///     assert_eq!(notify_core::context::current_event_id(), Some(EventId::new(99)));
    ///     assert_eq!(Context::current(), context);
    /// }
    /// assert_eq!(notify_core::context::current_event_id(), None);
    /// ```
    #[inline]
    pub fn attach(self) -> ContextGuard {
        ContextGuard {
            key: ids::attach(self.frame()),
            _not_send: PhantomData,
        }
    }

    /// Runs `f` with this context attached.
    ///
    /// ```
    /// let context = notify_core::Context::new(notify_core::TraceId::new(1).unwrap(), Some(notify_core::event::EventId::new(5)));
    /// assert_eq!(context.in_scope(notify_core::context::current_event_id), Some(notify_core::event::EventId::new(5)));
    /// ```
    pub fn in_scope<T>(self, f: impl FnOnce() -> T) -> T {
        let _guard = self.attach();
        f()
    }
}

/// The guard of [`Context::attach`]. Not `Send`: it must drop on the thread that attached.
#[must_use = "the context is attached only while the guard lives"]
#[derive(Debug)]
pub struct ContextGuard {
    key: u64,
    _not_send: PhantomData<*const ()>,
}

impl Drop for ContextGuard {
    #[inline]
    fn drop(&mut self) {
        ids::leave(self.key);
    }
}

/// The identity of one listened event, as evented subscribers receive it at `start`, `finish`,
/// `enter` and `exit` ([`EventedSubscriber`](crate::EventedSubscriber)): its id, its parent's id,
/// its trace id and, at `finish` for subscribers that asked for it, when it started and ended.
///
/// `Copy` and small; new facts are added as methods, so the subscriber trait keeps its shape. It
/// plays the part of OpenTelemetry's `SpanContext` (trace id, span id) plus the parent id: a bridge
/// maps the event id to a span id and the parent id to the parent span.
///
/// ```
/// use notify_core::{context::EventContext, EventedSubscriber, Notifier, Payload, Subscriber};
/// use std::sync::Mutex;
///
/// #[derive(Default)]
/// struct Ids(Mutex<Vec<EventContext>>);
/// impl EventedSubscriber for Ids {
///     fn start(&self, _: &str, event: &EventContext, _: &Payload) { self.0.lock().unwrap().push(*event); }
///     fn finish(&self, _: &str, _: &EventContext, _: &Payload) {}
/// }
/// let notifier = Notifier::new();
/// let ids = std::sync::Arc::new(Ids::default());
/// notifier.subscribe(notify_core::Pattern::all(), Subscriber::evented(ids.clone()));
/// notifier.instrument("outer", Payload::new, |_| notifier.instrument("inner", Payload::new, |_| ()));
/// let ids = ids.0.lock().unwrap();
/// assert_eq!(ids[1].parent_id(), Some(ids[0].id()));
/// assert_eq!(ids[1].trace_id(), ids[0].trace_id());
/// assert_eq!(ids[0].parent_id(), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventContext {
    pub(crate) id: EventId,
    pub(crate) parent_id: Option<EventId>,
    pub(crate) trace_id: TraceId,
    pub(crate) start: Option<Instant>,
    pub(crate) end: Option<Instant>,
    pub(crate) location: Option<&'static Location>,
    /// Set at finish when the event was entered on another thread (see
    /// [`EventContext::finished_on_another_thread`]).
    pub(crate) finished_on_another_thread: bool,
    /// How the block ended: set at `finish`.
    pub(crate) outcome: Outcome,
    /// See [`EventContext::is_sampled`].
    pub(crate) sampled: bool,
    /// See [`EventContext::parent_is_remote`].
    pub(crate) parent_remote: bool,
}

impl EventContext {
    /// The identity of an event with these ids and no times, for code that drives evented
    /// subscribers itself (bridges, tests).
    ///
    /// ```
    /// use notify_core::{context::EventContext, event::EventId, TraceId};
    /// let trace = TraceId::new(3).unwrap();
    /// let event = EventContext::new(EventId::new(2), Some(EventId::new(1)), trace);
    /// assert_eq!((event.id().get(), event.parent_id().map(EventId::get), event.trace_id()), (2, Some(1), trace));
    /// assert_eq!(event.duration(), None);
    /// ```
    pub const fn new(id: EventId, parent_id: Option<EventId>, trace_id: TraceId) -> EventContext {
        EventContext {
            id,
            parent_id,
            trace_id,
            start: None,
            end: None,
            location: None,
            finished_on_another_thread: false,
            outcome: Outcome::Completed,
            sampled: true,
            parent_remote: false,
        }
    }

    /// The same identity with the given sampling decision (bridges that make events of their own).
    ///
    /// ```
    /// let trace = notify_core::TraceId::new(3).unwrap();
    /// let event = notify_core::context::EventContext::new(notify_core::event::EventId::new(2), None, trace);
    /// assert!(event.is_sampled());
    /// assert!(!event.with_sampled(false).is_sampled());
    /// ```
    #[must_use]
    pub const fn with_sampled(mut self, sampled: bool) -> EventContext {
        self.sampled = sampled;
        self
    }

    /// The same identity with its parent marked as living in another process (or not).
    ///
    /// ```
    /// use notify_core::{context::EventContext, event::EventId, TraceId};
    /// let event = EventContext::new(EventId::new(2), Some(EventId::new(1)), TraceId::new(3).unwrap());
    /// assert!(!event.parent_is_remote());
    /// assert!(event.with_parent_remote(true).parent_is_remote());
    /// ```
    #[must_use]
    pub const fn with_parent_remote(mut self, remote: bool) -> EventContext {
        self.parent_remote = remote;
        self
    }

    /// True when the event's trace is sampled: decided once per trace by its local root (the
    /// notifier's sampler, or the sampled flag of an incoming W3C `traceparent`) and inherited by
    /// every descendant. In-process subscribers receive unsampled events too; exporters
    /// (OpenTelemetry, NATS, notify-web) skip them.
    pub fn is_sampled(&self) -> bool {
        self.sampled
    }

    /// True when the parent lives in another process: the event started under a context read
    /// from a W3C `traceparent` ([`Context::from_traceparent`]). OpenTelemetry's `is_remote` of
    /// the parent span context.
    pub fn parent_is_remote(&self) -> bool {
        self.parent_remote
    }

    /// How the block ended, at `finish` ([`Outcome::Completed`] at `start` and for an event built
    /// with [`EventContext::new`]): [`Outcome::Panicked`] when it panicked, [`Outcome::Cancelled`]
    /// for a future dropped before it completed.
    ///
    /// ```
    /// use notify_core::{context::EventContext, event::Outcome, EventedSubscriber, Notifier, Payload, Subscriber};
    /// use std::sync::{Arc, Mutex};
    /// #[derive(Default)]
    /// struct Outcomes(Mutex<Vec<Outcome>>);
    /// impl EventedSubscriber for Outcomes {
    ///     fn start(&self, _: &str, _: &EventContext, _: &Payload) {}
    ///     fn finish(&self, _: &str, event: &EventContext, _: &Payload) { self.0.lock().unwrap().push(event.outcome()); }
    /// }
    /// let notifier = Notifier::new();
    /// let outcomes = Arc::new(Outcomes::default());
    /// notifier.subscribe("job", Subscriber::evented(outcomes.clone()));
    /// notifier.instrument("job", Payload::new, |_| ());
    /// let panicking = std::panic::AssertUnwindSafe(|| notifier.instrument("job", Payload::new, |_| panic!("boom")));
    /// let _ = std::panic::catch_unwind(panicking);
    /// assert_eq!(*outcomes.0.lock().unwrap(), [Outcome::Completed, Outcome::Panicked]);
    /// ```
    pub fn outcome(&self) -> Outcome {
        self.outcome
    }

    /// Where the event is instrumented: set for events of callsites with a location
    /// ([`Callsite::at`](crate::Callsite::at)) and of `#[instrument_event]`.
    pub fn location(&self) -> Option<&'static Location> {
        self.location
    }

    /// The event id, a random W3C span id (never 0); it pairs `start` with `finish`.
    pub fn id(&self) -> EventId {
        self.id
    }

    /// The id of the event's parent: the current event when it started (or the event of an
    /// explicit parent context). `None` for a root.
    pub fn parent_id(&self) -> Option<EventId> {
        self.parent_id
    }

    /// The trace id, shared with the parent (random for a root).
    pub fn trace_id(&self) -> TraceId {
        self.trace_id
    }

    /// When the event started (monotonic clock): set at `finish` when the monotonic clock was read
    /// for this event, which a subscriber ensures by asking for
    /// [`EventedOptions::duration`](crate::EventedOptions); `None` at `start` (the clock is read
    /// after the `start` calls, so the event measures the block, not its subscribers).
    pub fn start(&self) -> Option<Instant> {
        self.start
    }

    /// When the event ended: set at `finish` under the same condition as [`EventContext::start`].
    pub fn end(&self) -> Option<Instant> {
        self.end
    }

    /// `end - start`, at `finish`, when both are set.
    ///
    /// ```
    /// let event = notify_core::context::EventContext::new(notify_core::event::EventId::new(1), None, notify_core::TraceId::new(1).unwrap());
    /// assert_eq!(event.duration(), None);
    /// ```
    pub fn duration(&self) -> Option<Duration> {
        Some(self.end?.saturating_duration_since(self.start?))
    }

    /// `true` at `finish` when the event was current on one thread from its start and is finished
    /// on another. A bridge that keeps per-thread state for such an event from its `start`
    /// (notify-tracing's entered span) would find it missing on the finishing thread. `false` at
    /// `start` and for every event of the public API today: the events current from their start
    /// (the block of `instrument`, a function under `#[instrument_event]`, an
    /// [`Instrumenter::start`](crate::Instrumenter::start)ed event) finish on their thread, and a
    /// [`Handle`](crate::Handle), the one event that moves between threads, is never current from
    /// its start (only inside [`Handle::enter`](crate::Handle::enter), a `!Send` guard).
    ///
    /// ```
    /// use notify_core::{context::EventContext, EventedSubscriber, Notifier, Payload, Subscriber};
    /// use std::sync::{Arc, Mutex};
    /// #[derive(Default)]
    /// struct Moved(Mutex<Vec<bool>>);
    /// impl EventedSubscriber for Moved {
    ///     fn start(&self, _: &str, _: &EventContext, _: &Payload) {}
    ///     fn finish(&self, _: &str, event: &EventContext, _: &Payload) {
    ///         self.0.lock().unwrap().push(event.finished_on_another_thread());
    ///     }
    /// }
    /// let notifier = Notifier::new();
    /// let moved = Arc::new(Moved::default());
    /// notifier.subscribe("job", Subscriber::evented(moved.clone()));
    /// notifier.instrument("job", Payload::new, |_| ());
    /// let mut handle = notifier.build_handle("job", Payload::new());
    /// handle.start()?;
    /// std::thread::spawn(move || handle.finish()).join().unwrap()?;
    /// assert_eq!(*moved.0.lock().unwrap(), [false, false], "a handle is not current from its start");
    /// # Ok::<(), notify_core::NotifyError>(())
    /// ```
    pub fn finished_on_another_thread(&self) -> bool {
        self.finished_on_another_thread
    }

    /// The context of this event: events started under it become its children.
    ///
    /// ```
    /// let trace = notify_core::TraceId::new(3).unwrap();
    /// let context = notify_core::context::EventContext::new(notify_core::event::EventId::new(2), None, trace).context();
    /// assert_eq!((context.trace_id(), context.event_id()), (Some(trace), Some(notify_core::event::EventId::new(2))));
    /// ```
    pub fn context(&self) -> Context {
        Context::local(self.trace_id, self.id, self.sampled)
    }
}

impl From<EventContext> for Context {
    fn from(event: EventContext) -> Context {
        event.context()
    }
}

impl From<&EventContext> for Context {
    fn from(event: &EventContext) -> Context {
        event.context()
    }
}

impl crate::event::Event {
    /// The context of this event (its trace id and id), to start children of it elsewhere, e.g.
    /// after it finished ([`Handle::set_parent`](crate::Handle::set_parent), [`Context::attach`](Context::attach)).
    ///
    /// ```
    /// # let now = std::time::Instant::now();
    /// # let e = notify_core::Event::new("a", now, now, Default::default());
    /// assert_eq!(e.context().event_id(), Some(e.id()));
    /// ```
    pub fn context(&self) -> Context {
        Context::local(self.trace_id, self.id, self.sampled)
    }
}
