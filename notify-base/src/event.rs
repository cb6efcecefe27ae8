//! [`Event`]: one finished (or failed) instrumentation, owned, `Send + Sync`.

use std::borrow::Cow;
use std::fmt;
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant, SystemTime};

use crate::baggage::Baggage;
use crate::event_id::EventId;
use crate::ids;
use crate::location::Location;
use crate::payload::Payload;
use crate::trace_id::TraceId;
use crate::tracestate::TraceState;
use crate::transaction_id::TransactionId;

/// How the instrumented block ended.
///
/// ```
/// assert_eq!(notify_core::event::Outcome::default(), notify_core::event::Outcome::Completed);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Outcome {
    /// The block returned (an `Err` it returned is in the payload's `exception`, not here).
    #[default]
    Completed,
    /// The block panicked; the event was finished by a drop guard and the panic went on.
    Panicked,
    /// The instrumented future was dropped before it completed.
    Cancelled,
}

impl Outcome {
    /// The outcome in lower case, as bridges and exporters label it: `"completed"`, `"panicked"`,
    /// `"cancelled"`. Outcomes added later (the enum is `#[non_exhaustive]`) get their own word,
    /// so code that labels events by this needs no wildcard arm.
    ///
    /// ```
    /// assert_eq!(notify_core::event::Outcome::Panicked.as_str(), "panicked");
    /// ```
    pub const fn as_str(self) -> &'static str {
        match self {
            Outcome::Completed => "completed",
            Outcome::Panicked => "panicked",
            Outcome::Cancelled => "cancelled",
        }
    }
}

/// The name of an event: a `&'static str` (callsites), a shared string, or the name of a listener
/// set lent to an event object that lives only while that set is pinned.
pub(crate) enum Name {
    Static(&'static str),
    Shared(Arc<str>),
    /// The text of a [`Name`] that outlives the event (made by [`Name::lend`]): what the event
    /// object of a synchronous delivery holds, so building it touches no reference count (two
    /// atomic read-modify-writes per event for a shared name). A clone of such an
    /// event owns its name.
    Lent(std::ptr::NonNull<str>),
}

// SAFETY: a `Lent` name is a shared reference to immutable text (`str` is `Sync`), the other
// variants are `Send + Sync` themselves.
unsafe impl Send for Name {}
// SAFETY: as for `Send`: `&Name` gives only `&str`.
unsafe impl Sync for Name {}

impl Name {
    #[inline]
    pub(crate) fn as_str(&self) -> &str {
        match self {
            Name::Static(s) => s,
            Name::Shared(s) => s,
            // SAFETY: `Name::lend`'s obligation: the lent text outlives this name.
            Name::Lent(s) => unsafe { s.as_ref() },
        }
    }

    /// `name` lent: a `Static` name stays one, another becomes `Lent`.
    ///
    /// # Safety
    ///
    /// `name` must outlive the returned name and every borrow of it; clones are owned and exempt.
    #[inline]
    pub(crate) unsafe fn lend(name: &Name) -> Name {
        match name {
            Name::Static(s) => Name::Static(s),
            other => Name::Lent(std::ptr::NonNull::from(other.as_str())),
        }
    }
}

/// The text of a [`Name`], kept beside it by its owner ([`Resolved`](crate::registry::Resolved)):
/// read with two loads, where [`Name::as_str`] first matches on the variant (issue 15: three such
/// reads per event on the delivery path).
pub(crate) struct NameText(std::ptr::NonNull<str>);

// SAFETY: a shared pointer to immutable text (`str` is `Sync`); only read through `NameText::get`,
// whose caller keeps the text alive.
unsafe impl Send for NameText {}
// SAFETY: as for `Send`.
unsafe impl Sync for NameText {}

impl NameText {
    /// The text of `name`. Every variant's text lives behind a pointer, so it stays where it is
    /// when `name` moves.
    pub(crate) fn of(name: &Name) -> NameText {
        NameText(std::ptr::NonNull::from(name.as_str()))
    }

    /// The text.
    ///
    /// # Safety
    ///
    /// The [`Name`] this was made from must be alive (not dropped) for the returned borrow.
    #[inline(always)]
    pub(crate) unsafe fn get(&self) -> &str {
        // SAFETY: the caller's obligation: the name, and so its text, is alive.
        unsafe { self.0.as_ref() }
    }
}

impl Name {
    /// The same text by the same pointer: assigning `other` to this name would change nothing
    /// (a recycled event refilled with the name it already holds skips the reference count, and
    /// its cache line, shared with the exporter's thread).
    #[inline]
    pub(crate) fn is(&self, other: &Name) -> bool {
        match (self, other) {
            (Name::Static(a), Name::Static(b)) => std::ptr::eq(*a, *b),
            (Name::Shared(a), Name::Shared(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl Clone for Name {
    fn clone(&self) -> Name {
        match self {
            Name::Static(s) => Name::Static(s),
            Name::Shared(s) => Name::Shared(s.clone()),
            Name::Lent(_) => Name::Shared(Arc::from(self.as_str())),
        }
    }
}

/// The anchor that turns an [`Instant`] into a wall-clock time without a second clock read.
static ANCHOR: LazyLock<(Instant, SystemTime)> = LazyLock::new(|| (Instant::now(), SystemTime::now()));

/// The wall-clock time of `at`, derived from the monotonic clock and one anchor pair taken when the
/// process first asked for it.
pub(crate) fn wall_clock(at: Instant) -> SystemTime {
    let (instant, system) = *ANCHOR;
    match at.checked_duration_since(instant) {
        Some(after) => system + after,
        None => system - instant.duration_since(at),
    }
}

/// The monotonic time of a wall-clock `at`, through the same anchor as [`wall_clock`].
pub(crate) fn monotonic_clock(at: SystemTime) -> Instant {
    let (instant, system) = *ANCHOR;
    match at.duration_since(system) {
        Ok(after) => instant + after,
        Err(before) => instant.checked_sub(before.duration()).unwrap_or(instant),
    }
}

/// One event, as event-object subscribers receive it (AS::N's `ActiveSupport::Notifications::Event`).
///
/// Owned and `Send + Sync`: asynchronous delivery and exporters share one behind an `Arc`.
/// `start`/`end` are monotonic; [`Event::start_time`]/[`Event::end_time`] give the wall clock,
/// derived from the monotonic reading (one clock read per edge, not two), so they do not follow
/// wall-clock adjustments made while the process runs.
///
/// ```
/// use notify_core::{Notifier, Payload, Subscriber};
/// use std::sync::{Arc, Mutex};
///
/// let notifier = Notifier::new();
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let sink = seen.clone();
/// notifier.subscribe("render", Subscriber::event(move |event: &notify_core::Event| {
///     sink.lock().unwrap().push((event.name().to_owned(), event.duration(), event.payload().len()));
/// }));
/// notifier.instrument("render", || Payload::new().with("template", "index"), |_| ());
/// let seen = seen.lock().unwrap();
/// assert_eq!(seen[0].0, "render");
/// assert_eq!(seen[0].2, 1);
/// ```
///
/// # Serialized form (feature `serde`)
///
/// A map (JSON object): `name`; `start` and `end`, wall-clock times as RFC 3339 UTC strings with
/// nanoseconds (`"2025-12-01T00:00:00.000000005Z"`); `duration_ns`; `id`, `parent_id` (or
/// `null`), `transaction_id`; `trace_id` as 32 hex digits; `outcome` (`"completed"`,
/// `"panicked"`, `"cancelled"`); `payload` (see [`Value`](crate::Value)); `cpu_time_ns` and
/// `allocations` (or `null`); `location` (written, not read back). Times are strings because
/// JavaScript (browsers, `jq`, most JSON tools) reads JSON numbers as doubles, exact only to 2^53,
/// and nanoseconds since 1970 are about 2^60; the string keeps every nanosecond and `Date.parse`
/// reads it. Durations are nanosecond numbers (exact in JavaScript up to 104 days). Reading an
/// event back gives the same name, times, duration, ids and outcome, and its payload as plain
/// data: payload durations come back as `U64` nanoseconds, payload times as `Str`, and integers
/// beyond 64 bits as `F64` from serde_json ([`Value`](crate::Value)'s "Serialized form"); the
/// README's "Payloads" section round-trips one. `Event` is not `PartialEq`: compare the fields.
#[derive(Clone)]
pub struct Event {
    pub(crate) name: Name,
    pub(crate) start: Instant,
    pub(crate) end: Instant,
    pub(crate) transaction_id: TransactionId,
    pub(crate) id: EventId,
    pub(crate) parent_id: Option<EventId>,
    pub(crate) trace_id: TraceId,
    pub(crate) payload: Payload,
    pub(crate) cpu_time: Option<Duration>,
    pub(crate) allocations: Option<u64>,
    pub(crate) outcome: Outcome,
    pub(crate) location: Option<&'static Location>,
    pub(crate) sampled: bool,
    pub(crate) parent_remote: bool,
    /// The W3C `tracestate` of the event's trace where it finished (see [`Event::trace_state`]).
    pub(crate) trace_state: TraceState,
    /// The W3C baggage current where the event finished (see [`Event::baggage`]).
    pub(crate) baggage: Baggage,
}

impl Event {
    /// Builds an event from known times, for [`Notifier::publish_event`](crate::Notifier::publish_event)
    /// and tests. It gets a fresh event id, this thread's transaction id, and the current
    /// [`Context`](crate::Context)'s event as parent and trace id (a new random trace id when there is none).
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let start = Instant::now();
    /// let event = notify_core::Event::new("done.job", start, start + Duration::from_millis(2),
    ///     notify_core::Payload::new());
    /// assert_eq!(event.duration(), Duration::from_millis(2));
    /// ```
    pub fn new(name: impl Into<Cow<'static, str>>, start: Instant, end: Instant, payload: Payload) -> Event {
        let name = match name.into() {
            Cow::Borrowed(s) => Name::Static(s),
            Cow::Owned(s) => Name::Shared(s.into()),
        };
        Event::named(name, start, end, payload)
    }

    /// This event, moved out field by field; `self` is left a shell (an empty name and payload,
    /// the same times and ids): what a delivery that must share an event it does not own
    /// (`dispatch::publish_in_place`) puts into its `Arc`.
    pub(crate) fn take(&mut self) -> Event {
        Event {
            name: std::mem::replace(&mut self.name, Name::Static("")),
            payload: std::mem::take(&mut self.payload),
            trace_state: std::mem::take(&mut self.trace_state),
            baggage: std::mem::take(&mut self.baggage),
            ..*self
        }
    }

    /// An event with a name already shared (no copy of the text).
    pub(crate) fn named(name: Name, start: Instant, end: Instant, payload: Payload) -> Event {
        let begun = ids::begin(false, crate::sampling::ALWAYS);
        let (trace_state, baggage) = crate::propagated::captured_by_event(begun.trace);
        Event {
            name,
            start,
            end,
            transaction_id: begun.transaction,
            id: begun.id,
            parent_id: begun.parent,
            trace_id: begun.trace,
            payload,
            cpu_time: None,
            allocations: None,
            outcome: Outcome::Completed,
            location: None,
            sampled: begun.sampled,
            parent_remote: begun.parent_remote,
            trace_state,
            baggage,
        }
    }

    /// The event name, e.g. `"query.sql"`.
    ///
    /// ```
    /// # let e = notify_core::Event::new("a.b", std::time::Instant::now(), std::time::Instant::now(), Default::default());
    /// assert_eq!(e.name(), "a.b");
    /// ```
    pub fn name(&self) -> &str {
        self.name.as_str()
    }

    /// When the block started (monotonic clock).
    ///
    /// ```
    /// # let now = std::time::Instant::now();
    /// # let e = notify_core::Event::new("a", now, now, Default::default());
    /// assert_eq!(e.start(), now);
    /// ```
    pub fn start(&self) -> Instant {
        self.start
    }

    /// When the block finished (monotonic clock).
    ///
    /// ```
    /// # let now = std::time::Instant::now();
    /// # let e = notify_core::Event::new("a", now, now, Default::default());
    /// assert_eq!(e.end(), now);
    /// ```
    pub fn end(&self) -> Instant {
        self.end
    }

    /// When the block started, as wall-clock time (derived from [`Event::start`]).
    ///
    /// ```
    /// # let now = std::time::Instant::now();
    /// # let e = notify_core::Event::new("a", now, now, Default::default());
    /// assert!(e.start_time() <= std::time::SystemTime::now());
    /// ```
    pub fn start_time(&self) -> SystemTime {
        wall_clock(self.start)
    }

    /// When the block finished, as wall-clock time (derived from [`Event::end`]).
    ///
    /// ```
    /// # let now = std::time::Instant::now();
    /// # let e = notify_core::Event::new("a", now, now, Default::default());
    /// assert_eq!(e.end_time(), e.start_time());
    /// ```
    pub fn end_time(&self) -> SystemTime {
        wall_clock(self.end)
    }

    /// `end - start`.
    ///
    /// ```
    /// # let now = std::time::Instant::now();
    /// # let e = notify_core::Event::new("a", now, now + std::time::Duration::from_nanos(5), Default::default());
    /// assert_eq!(e.duration().as_nanos(), 5);
    /// ```
    pub fn duration(&self) -> Duration {
        self.end.saturating_duration_since(self.start)
    }

    /// The id of the thread that started the event (see [`transaction_id`](crate::transaction_id)):
    /// AS::N's per-thread instrumenter id. To group the events of one request, use
    /// [`Event::trace_id`]: under an async runtime one worker thread runs many requests.
    ///
    /// ```
    /// # let now = std::time::Instant::now();
    /// # let e = notify_core::Event::new("a", now, now, Default::default());
    /// assert_eq!(e.transaction_id(), notify_core::context::transaction_id());
    /// ```
    pub fn transaction_id(&self) -> TransactionId {
        self.transaction_id
    }

    /// The event id: a random W3C span id, never 0 (see [`EventId`]).
    ///
    /// ```
    /// # let now = std::time::Instant::now();
    /// # let a = notify_core::Event::new("a", now, now, Default::default());
    /// # let b = notify_core::Event::new("a", now, now, Default::default());
    /// assert_ne!(a.id(), b.id());
    /// ```
    pub fn id(&self) -> EventId {
        self.id
    }

    /// The id of the innermost listened event that was unfinished on this thread when this one
    /// started (for async code: the event whose future was being polled).
    ///
    /// ```
    /// # let now = std::time::Instant::now();
    /// # let e = notify_core::Event::new("a", now, now, Default::default());
    /// assert_eq!(e.parent_id(), None);
    /// ```
    pub fn parent_id(&self) -> Option<EventId> {
        self.parent_id
    }

    /// The trace id: the parent's, or a random one for a root (W3C trace-context compatible, see
    /// [`TraceId`]). The events of one request share it, whichever threads and tasks ran them, as
    /// long as the [`Context`](crate::Context) was carried along.
    ///
    /// ```
    /// # let now = std::time::Instant::now();
    /// # let a = notify_core::Event::new("a", now, now, Default::default());
    /// # let b = notify_core::Event::new("b", now, now, Default::default());
    /// assert_ne!(a.trace_id(), b.trace_id(), "two roots, two traces");
    /// ```
    pub fn trace_id(&self) -> TraceId {
        self.trace_id
    }

    /// True when the event's trace is sampled ([`EventContext::is_sampled`](crate::EventContext::is_sampled)):
    /// exporters send only sampled events; in-process subscribers get them all.
    ///
    /// ```
    /// # let now = std::time::Instant::now();
    /// let e = notify_core::Event::new("a", now, now, Default::default());
    /// assert!(e.is_sampled(), "the default sampler keeps every trace");
    /// assert!(!e.with_sampled(false).is_sampled());
    /// ```
    pub fn is_sampled(&self) -> bool {
        self.sampled
    }

    /// True when the event's parent lives in another process (the event started under a context
    /// read from a W3C `traceparent`): OpenTelemetry's `is_remote` of the parent span context.
    ///
    /// ```
    /// # let now = std::time::Instant::now();
    /// let e = notify_core::Event::new("a", now, now, Default::default());
    /// assert!(!e.parent_is_remote());
    /// ```
    pub fn parent_is_remote(&self) -> bool {
        self.parent_remote
    }

    /// The W3C `tracestate` of the event's trace (empty when it has none): the incoming
    /// request's, as notify-http's server layer made it current
    /// ([`Propagated`](crate::Propagated)), for events that finished where it was current, and
    /// the one an importer read with the event. Exporters put it on their spans
    /// (notify-opentelemetry's `TraceState`).
    ///
    /// ```
    /// use notify_core::{context::Propagated, trace_context::{TraceFlags, TraceState}, Context, Event, Notifier, Payload, Subscriber, TraceId};
    /// use std::sync::{Arc, Mutex};
    /// let notifier = Notifier::new();
    /// let seen = Arc::new(Mutex::new(Vec::new()));
    /// let sink = seen.clone();
    /// notifier.subscribe("job", Subscriber::event(move |e: &Event| sink.lock().unwrap().push(e.trace_state().to_string())));
    /// let trace = TraceId::new(7).unwrap();
    /// let state: TraceState = "congo=t61rcWkgMzE".parse().unwrap();
    /// Propagated::for_trace(trace, TraceFlags::NONE, state).in_scope(|| {
    ///     Context::new(trace, None).in_scope(|| notifier.instrument("job", Payload::new, |_| ()));
    ///     notifier.instrument("job", Payload::new, |_| ()); // another trace: none
    /// });
    /// assert_eq!(*seen.lock().unwrap(), ["congo=t61rcWkgMzE", ""]);
    /// ```
    pub fn trace_state(&self) -> &TraceState {
        &self.trace_state
    }

    /// The same event with `state` as its trace's `tracestate` (importers).
    #[must_use]
    pub fn with_trace_state(mut self, state: TraceState) -> Event {
        self.trace_state = state;
        self
    }

    /// The W3C baggage current where the event finished (empty when there was none): the
    /// incoming request's, as notify-http's server layer made it current
    /// ([`Propagated`](crate::Propagated)), with what the handler set
    /// ([`context::with_baggage`](crate::propagated::with_baggage)); for an imported event, the
    /// baggage it was exported with. Unlike the `tracestate`, it does not depend on the trace:
    /// baggage belongs to the request.
    ///
    /// The event carries it only so that exporters that propagate can send it on to the
    /// services downstream (notify-nats: its importer's events carry it again), as
    /// notify-http's client layer sends it with a call. Line writers (notify-log), OpenTelemetry
    /// spans (notify-opentelemetry), the live page (notify-web) and the event's serde form never
    /// show it: to record a value, name its key (notify-http's `ServerLayer::record_baggage`;
    /// the redaction policy applies to it). The event's `Debug` form shows it (for tests and
    /// debugging: do not log events with `{:?}` when baggage may hold private values).
    ///
    /// ```
    /// use notify_core::{baggage::Baggage, context, Event, Notifier, Payload, Subscriber};
    /// use std::sync::{Arc, Mutex};
    /// let notifier = Notifier::new();
    /// let seen = Arc::new(Mutex::new(Vec::new()));
    /// let sink = seen.clone();
    /// notifier.subscribe("job", Subscriber::event(move |e: &Event| sink.lock().unwrap().push(e.baggage().to_string())));
    /// let baggage = Baggage::new().with("tenant", "acme").unwrap();
    /// context::with_baggage(baggage, || notifier.instrument("job", Payload::new, |_| ()));
    /// notifier.instrument("job", Payload::new, |_| ()); // outside: none
    /// assert_eq!(*seen.lock().unwrap(), ["tenant=acme", ""]);
    /// ```
    pub fn baggage(&self) -> &Baggage {
        &self.baggage
    }

    /// The same event with `baggage` as its baggage (importers).
    #[must_use]
    pub fn with_baggage(mut self, baggage: Baggage) -> Event {
        self.baggage = baggage;
        self
    }

    /// The payload.
    ///
    /// ```
    /// # let now = std::time::Instant::now();
    /// let e = notify_core::Event::new("a", now, now, notify_core::Payload::new().with("k", 1_u64));
    /// assert_eq!(e.payload().len(), 1);
    /// ```
    pub fn payload(&self) -> &Payload {
        &self.payload
    }

    /// The payload, to change before the event is published: an event you own (an importer
    /// fills a republished event's payload in place, without building it apart and moving it in).
    /// Subscribers receive events shared (`&Event`, `Arc<Event>`) and cannot change them.
    ///
    /// ```
    /// # let now = std::time::Instant::now();
    /// let mut e = notify_core::Event::new("a", now, now, notify_core::Payload::new());
    /// e.payload_mut().insert("rows", 3_u64);
    /// assert_eq!(e.payload().len(), 1);
    /// ```
    pub fn payload_mut(&mut self) -> &mut Payload {
        &mut self.payload
    }

    /// Thread CPU time spent between start and finish; `None` unless an event-object subscriber
    /// asked for it with [`EventOptions::cpu_time`](crate::EventOptions) (it costs a system call per
    /// edge), and `None` when the event finished on another thread than it started on (the clock is
    /// per thread).
    ///
    /// ```
    /// # let now = std::time::Instant::now();
    /// # let e = notify_core::Event::new("a", now, now, Default::default());
    /// assert_eq!(e.cpu_time(), None);
    /// ```
    pub fn cpu_time(&self) -> Option<Duration> {
        self.cpu_time
    }

    /// `duration - cpu_time`: time the thread was not running the block (waiting, descheduled),
    /// as AS::N's `idle_time`. `None` when CPU time was not measured.
    ///
    /// ```
    /// # let now = std::time::Instant::now();
    /// # let e = notify_core::Event::new("a", now, now, Default::default());
    /// assert_eq!(e.idle_time(), None);
    /// ```
    pub fn idle_time(&self) -> Option<Duration> {
        self.cpu_time.map(|cpu| self.duration().saturating_sub(cpu))
    }

    /// Heap allocations made by this thread between start and finish; `None` unless
    /// [`CountingAllocator`](crate::CountingAllocator) is the global allocator and an event-object
    /// subscriber asked for [`EventOptions::allocations`](crate::EventOptions), and `None` when the
    /// event finished on another thread than it started on.
    ///
    /// ```
    /// # let now = std::time::Instant::now();
    /// # let e = notify_core::Event::new("a", now, now, Default::default());
    /// assert_eq!(e.allocations(), None);
    /// ```
    pub fn allocations(&self) -> Option<u64> {
        self.allocations
    }

    /// Where the event is instrumented: set for events of callsites with a location
    /// ([`Callsite::at`](crate::Callsite::at)) and of `#[instrument_event]`; `None` for events
    /// instrumented by name ([`Notifier::instrument`](crate::Notifier::instrument)) or built by hand.
    ///
    /// ```
    /// # let now = std::time::Instant::now();
    /// # let e = notify_core::Event::new("a", now, now, Default::default());
    /// assert_eq!(e.location(), None);
    /// ```
    pub fn location(&self) -> Option<&'static Location> {
        self.location
    }

    /// How the block ended.
    ///
    /// ```
    /// # let now = std::time::Instant::now();
    /// # let e = notify_core::Event::new("a", now, now, Default::default());
    /// assert_eq!(e.outcome(), notify_core::event::Outcome::Completed);
    /// ```
    pub fn outcome(&self) -> Outcome {
        self.outcome
    }
}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Event")
            .field("name", &self.name())
            .field("duration", &self.duration())
            .field("transaction_id", &self.transaction_id)
            .field("id", &self.id)
            .field("parent_id", &self.parent_id)
            .field("trace_id", &self.trace_id)
            .field("payload", &self.payload)
            .field("cpu_time", &self.cpu_time)
            .field("allocations", &self.allocations)
            .field("outcome", &self.outcome)
            .field("location", &self.location)
            .field("sampled", &self.sampled)
            .field("parent_remote", &self.parent_remote)
            .field("trace_state", &self.trace_state)
            .field("baggage", &self.baggage)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_is_send_and_sync() {
        fn check<T: Send + Sync + 'static>() {}
        check::<Event>();
    }

    #[test]
    fn wall_and_monotonic_round_trip() {
        let now = Instant::now();
        let back = monotonic_clock(wall_clock(now));
        let diff = if back > now { back - now } else { now - back };
        assert!(diff < Duration::from_micros(1), "{diff:?}");
    }
}
