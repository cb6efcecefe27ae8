//! Events that happened elsewhere: constructors for importers (another process's events read from
//! a message bus, a log replayed) that republish an event with its original times, ids and outcome
//! through [`Notifier::publish_event`](crate::Notifier::publish_event).

use std::borrow::Cow;
use std::time::{Duration, SystemTime};

use crate::event::{monotonic_clock, Event, Name, Outcome};
use crate::event_id::EventId;
use crate::payload::Payload;
use crate::trace_id::TraceId;
use crate::transaction_id::TransactionId;

/// The ids an event had in the process that recorded it, for [`Event::recorded_elsewhere`].
///
/// ```
/// use notify_core::{context::TransactionId, event::{EventId, RemoteIds}, TraceId};
/// let ids = RemoteIds::new(EventId::new(7), Some(EventId::new(3)), TransactionId::new(42), TraceId::new(9));
/// assert_eq!(ids.id, EventId::new(7));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RemoteIds {
    /// The event's id (its W3C span id); 0: none was recorded (W3C forbids an all-zero span id),
    /// and [`Event::recorded_elsewhere`] draws a fresh random one.
    pub id: EventId,
    /// The id of the event it happened under, if any; `Some(0)` is read as `None`.
    pub parent_id: Option<EventId>,
    /// Its transaction id.
    pub transaction_id: TransactionId,
    /// Its trace id; `None`: none was recorded, and the event starts a fresh (random) trace here.
    pub trace_id: Option<TraceId>,
}

impl RemoteIds {
    /// The four ids, as recorded.
    pub fn new(
        id: EventId,
        parent_id: Option<EventId>,
        transaction_id: TransactionId,
        trace_id: Option<TraceId>,
    ) -> RemoteIds {
        RemoteIds {
            id,
            parent_id,
            transaction_id,
            trace_id,
        }
    }
}

impl Event {
    /// An event recorded by another process, built in one step with its original ids, without
    /// drawing fresh ids to replace (an importer's per-event path). Its times are as in
    /// [`Event::at_wall_clock`]. It is sampled and its parent is not marked remote whatever the
    /// calling thread's current context (use [`Event::with_sampled`] and
    /// [`Event::with_parent_remote`] to say otherwise): on a thread with no current context and
    /// with ids that are not 0, it is what [`Event::at_wall_clock`] then [`Event::with_ids`] and
    /// [`Event::with_trace_id`] make ([`Event::with_ids`] keeps a 0 as it is).
    ///
    /// Ids are never 0 in this process, and no W3C header carries an all-zero id: an event id of
    /// 0 (another process, or a damaged message, recorded none) is replaced by a fresh random id,
    /// a parent id of 0 means no parent, and a missing trace id starts a fresh trace (as the
    /// fields of [`RemoteIds`] say).
    ///
    /// ```
    /// use notify_core::{context::TransactionId, event::{EventId, RemoteIds}, Event, Payload, TraceId};
    /// use std::time::{Duration, SystemTime};
    /// let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    /// let ids = RemoteIds::new(EventId::new(7), None, TransactionId::new(42), TraceId::new(9));
    /// let event = Event::recorded_elsewhere("query.sql", start, Duration::from_micros(3), ids, Payload::new());
    /// assert_eq!((event.id(), event.trace_id(), event.start_time()), (EventId::new(7), TraceId::new(9).unwrap(), start));
    /// ```
    ///
    /// # Panics
    ///
    /// When the end (`start + duration`) is past what [`std::time::Instant`] can represent (a
    /// `duration` near `Duration::MAX`; a `u64` of nanoseconds, 584 years, is far inside).
    pub fn recorded_elsewhere(
        name: impl Into<Cow<'static, str>>,
        start: SystemTime,
        duration: Duration,
        ids: RemoteIds,
        payload: Payload,
    ) -> Event {
        let name = match name.into() {
            Cow::Borrowed(s) => Name::Static(s),
            Cow::Owned(s) => Name::Shared(s.into()),
        };
        let begin = monotonic_clock(start);
        Event {
            name,
            start: begin,
            end: begin + duration,
            transaction_id: ids.transaction_id,
            id: match ids.id.get() {
                0 => EventId::new(crate::ids::next_event_id()),
                _ => ids.id,
            },
            parent_id: ids.parent_id.filter(|parent| parent.get() != 0),
            trace_id: ids.trace_id.unwrap_or_else(crate::ids::random_trace_id),
            payload,
            cpu_time: None,
            allocations: None,
            outcome: Outcome::Completed,
            location: None,
            sampled: true,
            parent_remote: false,
            trace_state: crate::tracestate::TraceState::new(),
            baggage: crate::baggage::Baggage::new(),
        }
    }

    /// An event that started at wall-clock `start` and lasted `duration` (nanosecond precision),
    /// as recorded by another process. Its [`start_time`](Event::start_time) is `start` and its
    /// [`duration`](Event::duration) exactly `duration`; its ids are fresh, as [`Event::new`]'s,
    /// until [`Event::with_ids`] sets them. The start goes through the process's monotonic clock
    /// and back, exactly where the platform's [`Instant`](std::time::Instant) reaches it (on
    /// Linux any time since 1970: its monotonic clock counts signed seconds); where it does not
    /// (a time before boot, on platforms whose monotonic clock counts from boot), the start
    /// becomes the moment this process first read its clocks, and the duration is kept.
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    /// let event = notify_core::Event::at_wall_clock("query.sql", start, Duration::from_nanos(1_500),
    ///     notify_core::Payload::new());
    /// assert_eq!(event.duration(), Duration::from_nanos(1_500));
    /// assert_eq!(event.start_time(), start);
    /// ```
    ///
    /// # Panics
    ///
    /// When the end (`start + duration`) is past what [`std::time::Instant`] can represent (a
    /// `duration` near `Duration::MAX`).
    pub fn at_wall_clock(
        name: impl Into<Cow<'static, str>>,
        start: SystemTime,
        duration: Duration,
        payload: Payload,
    ) -> Event {
        let begin = monotonic_clock(start);
        Event::new(name, begin, begin + duration, payload)
    }

    /// The same event with the given event id, parent id and transaction id (the ids it had in the
    /// process that recorded it). Ids set this way are not checked for uniqueness in this process.
    ///
    /// ```
    /// use notify_core::{context::TransactionId, event::EventId, Event};
    /// # let now = std::time::Instant::now();
    /// let event = Event::new("a.b", now, now, Default::default())
    ///     .with_ids(EventId::new(7), Some(EventId::new(3)), TransactionId::new(42));
    /// assert_eq!((event.id().get(), event.parent_id().map(EventId::get), event.transaction_id().get()), (7, Some(3), 42));
    /// ```
    #[must_use]
    pub fn with_ids(mut self, id: EventId, parent_id: Option<EventId>, transaction_id: TransactionId) -> Event {
        self.id = id;
        self.parent_id = parent_id;
        self.transaction_id = transaction_id;
        self
    }

    /// The same event with the given trace id (the one it had in the process that recorded it,
    /// so the events of one request keep one trace across processes).
    ///
    /// ```
    /// # let now = std::time::Instant::now();
    /// let trace = notify_core::TraceId::new(0x4bf9_2f35).unwrap();
    /// let event = notify_core::Event::new("a.b", now, now, Default::default()).with_trace_id(trace);
    /// assert_eq!(event.trace_id(), trace);
    /// ```
    #[must_use]
    pub fn with_trace_id(mut self, trace_id: TraceId) -> Event {
        self.trace_id = trace_id;
        self
    }

    /// The same event with the given sampling decision (the one its trace had in the process
    /// that recorded it).
    ///
    /// ```
    /// # let now = std::time::Instant::now();
    /// let event = notify_core::Event::new("a.b", now, now, Default::default()).with_sampled(false);
    /// assert!(!event.is_sampled());
    /// ```
    #[must_use]
    pub fn with_sampled(mut self, sampled: bool) -> Event {
        self.sampled = sampled;
        self
    }

    /// The same event with its parent marked as living in another process (or not).
    ///
    /// ```
    /// # let now = std::time::Instant::now();
    /// let event = notify_core::Event::new("a.b", now, now, Default::default()).with_parent_remote(true);
    /// assert!(event.parent_is_remote());
    /// ```
    #[must_use]
    pub fn with_parent_remote(mut self, remote: bool) -> Event {
        self.parent_remote = remote;
        self
    }

    /// The same event with the given thread CPU time (as measured in the process that recorded
    /// it; `None`: not measured). [`Event::idle_time`] follows from it.
    ///
    /// ```
    /// # let now = std::time::Instant::now();
    /// use std::time::Duration;
    /// let event = notify_core::Event::new("a.b", now, now + Duration::from_micros(5), Default::default())
    ///     .with_cpu_time(Some(Duration::from_micros(2)));
    /// assert_eq!(event.idle_time(), Some(Duration::from_micros(3)));
    /// ```
    #[must_use]
    pub fn with_cpu_time(mut self, cpu_time: Option<Duration>) -> Event {
        self.cpu_time = cpu_time;
        self
    }

    /// The same event with the given count of heap allocations (as counted in the process that
    /// recorded it; `None`: not counted).
    ///
    /// ```
    /// # let now = std::time::Instant::now();
    /// let event = notify_core::Event::new("a.b", now, now, Default::default()).with_allocations(Some(4));
    /// assert_eq!(event.allocations(), Some(4));
    /// ```
    #[must_use]
    pub fn with_allocations(mut self, allocations: Option<u64>) -> Event {
        self.allocations = allocations;
        self
    }

    /// The same event with the given outcome (for instance [`Outcome::Panicked`] for a remote
    /// event whose block panicked).
    ///
    /// ```
    /// # let now = std::time::Instant::now();
    /// use notify_core::event::Outcome;
    /// let event = notify_core::Event::new("a.b", now, now, Default::default()).with_outcome(Outcome::Panicked);
    /// assert_eq!(event.outcome(), Outcome::Panicked);
    /// ```
    #[must_use]
    pub fn with_outcome(mut self, outcome: Outcome) -> Event {
        self.outcome = outcome;
        self
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::{Notifier, Subscriber};

    /// `recorded_elsewhere` makes what `at_wall_clock` + `with_ids` + `with_trace_id` make; with
    /// no trace id, a fresh one.
    #[test]
    fn recorded_elsewhere_is_the_builder_chain_in_one_step() {
        let start = SystemTime::UNIX_EPOCH + Duration::from_nanos(1_800_000_000_123_456_789);
        let (id, parent, transaction) = (EventId::new(7), Some(EventId::new(3)), TransactionId::new(42));
        let trace = TraceId::new(0x4bf9_2f35).unwrap();
        let payload = || Payload::new().with("rows", 3_u64);
        let chained = Event::at_wall_clock("query.sql", start, Duration::from_nanos(1_500), payload())
            .with_ids(id, parent, transaction)
            .with_trace_id(trace);
        let ids = RemoteIds::new(id, parent, transaction, Some(trace));
        let direct = Event::recorded_elsewhere("query.sql", start, Duration::from_nanos(1_500), ids, payload());
        let view = |e: &Event| {
            (
                e.name().to_owned(),
                e.start_time(),
                e.duration(),
                e.id(),
                e.parent_id(),
                e.transaction_id(),
                e.trace_id(),
                e.payload().clone(),
                e.outcome(),
                e.is_sampled(),
                e.parent_is_remote(),
            )
        };
        assert_eq!(view(&direct), view(&chained));
        let fresh = |_| {
            Event::recorded_elsewhere(
                "a.b",
                start,
                Duration::ZERO,
                RemoteIds { trace_id: None, ..ids },
                Payload::new(),
            )
        };
        let (a, b): (Event, Event) = (fresh(0), fresh(1));
        assert_ne!(a.trace_id(), b.trace_id());
        assert_ne!(a.trace_id(), trace);
    }

    /// A start decades before this process (and before this machine booted) comes back exactly:
    /// Linux's monotonic clock is signed, so nothing is clamped.
    #[cfg(target_os = "linux")]
    #[test]
    fn at_wall_clock_keeps_a_start_in_1970_exactly() {
        let start = SystemTime::UNIX_EPOCH + Duration::from_nanos(10_000_000_007);
        let event = Event::at_wall_clock("old.b", start, Duration::from_nanos(1_500), Payload::new());
        assert_eq!(
            (event.start_time(), event.duration()),
            (start, Duration::from_nanos(1_500))
        );
    }

    /// An all-zero event id is no id: a fresh random one is drawn; a parent id of 0 is no parent.
    /// Other ids are kept as they are.
    #[test]
    fn recorded_elsewhere_replaces_a_zero_event_id_and_drops_a_zero_parent() {
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let trace = TraceId::new(9);
        let zeros = RemoteIds::new(EventId::new(0), Some(EventId::new(0)), TransactionId::new(42), trace);
        let make = || Event::recorded_elsewhere("a.b", start, Duration::ZERO, zeros, Payload::new());
        let (a, b) = (make(), make());
        assert_ne!(a.id().get(), 0);
        assert_ne!(a.id(), b.id(), "each zero id is replaced by a fresh one");
        assert_eq!(
            (a.parent_id(), a.transaction_id(), Some(a.trace_id())),
            (None, TransactionId::new(42), trace)
        );
        let kept = RemoteIds::new(
            EventId::new(u64::MAX),
            Some(EventId::new(1)),
            TransactionId::new(0),
            trace,
        );
        let event = Event::recorded_elsewhere("a.b", start, Duration::ZERO, kept, Payload::new());
        assert_eq!(
            (event.id(), event.parent_id()),
            (EventId::new(u64::MAX), Some(EventId::new(1)))
        );
    }

    #[test]
    fn republished_remote_event_keeps_times_ids_outcome_and_payload() {
        let notifier = Notifier::new();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let _ = notifier.subscribe(
            "query.sql",
            Subscriber::event(move |e: &Event| {
                sink.lock().unwrap().push((
                    e.start_time(),
                    e.duration(),
                    e.id(),
                    e.parent_id(),
                    e.transaction_id(),
                    e.outcome(),
                    e.trace_id().get(),
                    e.payload().get("rows").and_then(|v| v.as_i64()),
                ));
            }),
        );
        let start = SystemTime::now() - Duration::from_secs(5);
        let event = Event::at_wall_clock(
            "query.sql",
            start,
            Duration::from_nanos(123_457),
            Payload::new().with("rows", 3_u64),
        )
        .with_ids(EventId(900), Some(EventId(899)), TransactionId(17))
        .with_trace_id(TraceId::new(0xabc).unwrap())
        .with_outcome(Outcome::Cancelled);
        notifier.publish_event(event);
        let seen = seen.lock().unwrap();
        assert_eq!(
            *seen,
            [(
                start,
                Duration::from_nanos(123_457),
                EventId(900),
                Some(EventId(899)),
                TransactionId(17),
                Outcome::Cancelled,
                0xabc,
                Some(3)
            )]
        );
    }
}
