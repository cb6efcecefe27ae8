//! The fields of an event but its name and payload, as both decoders read them.

use std::borrow::Cow;
use std::time::{Duration, SystemTime};

use notify_core::{
    context::TransactionId,
    event::{EventId, Outcome, RemoteIds},
    Event, Payload, TraceId,
};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum WireOutcome {
    Completed,
    Panicked,
    Cancelled,
}

/// The fields of an event but its name and payload, as read from the wire: what both decoders
/// ([`decode`] and [`decode_into`]) turn into an [`Event`] the same way.
///
/// [`decode`]: super::decode
/// [`decode_into`]: super::decode_into
#[derive(Clone)]
pub(super) struct Envelope {
    pub(super) start_unix_ns: u64,
    pub(super) duration_ns: u64,
    pub(super) id: u64,
    pub(super) parent_id: Option<u64>,
    pub(super) transaction_id: u64,
    pub(super) trace_id: u128,
    pub(super) outcome: WireOutcome,
    pub(super) cpu_time_ns: Option<u64>,
    pub(super) allocations: Option<u64>,
    /// The W3C `tracestate` of the event's trace (version 3; empty otherwise).
    pub(super) trace_state: notify_core::trace_context::TraceState,
    /// The W3C baggage current where the event finished (version 3 and JSON; empty otherwise).
    pub(super) baggage: notify_core::baggage::Baggage,
}

impl Envelope {
    /// The event, with its original name, times, ids, outcome, payload, CPU time and allocation
    /// count.
    #[inline(always)]
    pub(super) fn into_event(self, name: impl Into<Cow<'static, str>>, payload: Payload) -> Event {
        let start = SystemTime::UNIX_EPOCH + Duration::from_nanos(self.start_unix_ns);
        let ids = RemoteIds::new(
            EventId::new(self.id),
            self.parent_id.map(EventId::new),
            TransactionId::new(self.transaction_id),
            // 0 is no trace id (W3C forbids it): the event starts a fresh trace.
            TraceId::new(self.trace_id),
        );
        let mut event = Event::recorded_elsewhere(name, start, Duration::from_nanos(self.duration_ns), ids, payload);
        if self.cpu_time_ns.is_some() {
            event = event.with_cpu_time(self.cpu_time_ns.map(Duration::from_nanos));
        }
        if self.allocations.is_some() {
            event = event.with_allocations(self.allocations);
        }
        if !self.trace_state.is_empty() {
            event = event.with_trace_state(self.trace_state);
        }
        if !self.baggage.is_empty() {
            event = event.with_baggage(self.baggage);
        }
        match self.outcome {
            WireOutcome::Completed => event,
            WireOutcome::Panicked => event.with_outcome(Outcome::Panicked),
            WireOutcome::Cancelled => event.with_outcome(Outcome::Cancelled),
        }
    }
}
