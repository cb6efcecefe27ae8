//! [`Settle`]: how a pipelining sink counts the batches it keeps in flight after its export
//! future completed ([`Sink::pipeline`](crate::Sink::pipeline)).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::error::SinkError;
use crate::shared::{lock, Shared};

/// The counter handle a pipelining [`Sink`](crate::Sink) settles its events through: each event
/// of a batch it accepted (its export future returned `Ok`) is *in flight*
/// ([`ExportStats::in_flight`](crate::ExportStats::in_flight)) until the sink says it reached its
/// far end ([`exported`](Settle::exported)) or was lost ([`failed`](Settle::failed), counted
/// `dropped_exporter_error` and shown in the drop report).
///
/// Counting stays exact whatever the sink does: each event leaves `in_flight` once. A call that
/// settles more events than are in flight settles only those (the excess is ignored), and what
/// is still in flight when the collector's thread ends (the sink's `shutdown` returned, or a
/// timed-out [`shutdown`](crate::Collector::shutdown) cancelled it) is counted
/// `dropped_shutdown`; later calls find nothing in flight and count nothing.
///
/// Cloning is cheap; a clone may be moved into a task of the sink's own (acknowledgements that a
/// spawned task awaits).
#[derive(Clone)]
pub struct Settle {
    shared: Arc<Shared>,
}

impl Settle {
    pub(crate) fn new(shared: Arc<Shared>) -> Settle {
        Settle { shared }
    }

    /// `events` of the batches in flight reached the sink's far end: counted `exported`. Returns
    /// how many were counted (fewer than `events` only when fewer were in flight).
    pub fn exported(&self, events: u64) -> u64 {
        let taken = self.shared.take_in_flight(events);
        self.shared.counters.exported.fetch_add(taken, Ordering::AcqRel);
        taken
    }

    /// `events` of the batches in flight were lost (`error` says why: a refused publish, an
    /// acknowledgement or confirmation that did not come in time, a lost connection): counted
    /// `dropped_exporter_error`, `error`'s message in the next drop report. Returns how many were
    /// counted.
    pub fn failed(&self, events: u64, error: &SinkError) -> u64 {
        let taken = self.shared.take_in_flight(events);
        self.shared.counters.exporter_error.fetch_add(taken, Ordering::AcqRel);
        if taken > 0 {
            *lock(&self.shared.last_error) = Some(error.message().to_owned());
        }
        taken
    }

    /// Completes once a [`shutdown`](crate::Collector::shutdown) timed out (at once if one did
    /// already): a sink that retries until its far end confirms stops there, and what it still
    /// has in flight is counted `dropped_shutdown`.
    pub async fn given_up(&self) {
        let signal = self.shared.gave_up_signal.notified();
        let mut signal = std::pin::pin!(signal);
        // Registered before the flag is read: a give-up signalled in between still wakes it.
        signal.as_mut().enable();
        if self.shared.gave_up() {
            return;
        }
        signal.await;
    }

    /// True once a [`shutdown`](crate::Collector::shutdown) timed out ([`Settle::given_up`]).
    pub fn has_given_up(&self) -> bool {
        self.shared.gave_up()
    }

    /// Events in flight now (accepted by the sink, not yet settled), all batches together.
    pub fn in_flight(&self) -> u64 {
        self.shared.counters.in_flight.load(Ordering::Acquire)
    }
}

impl std::fmt::Debug for Settle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settle")
            .field("collector", &self.shared.name)
            .field("in_flight", &self.in_flight())
            .finish()
    }
}
