//! What a [`Collector`](crate::Collector) did with the events it received: [`ExportStats`], the
//! [`DropReport`] given to the drop hook, [`ExportError`].

use std::fmt;

/// Counters of one collector (one exporter) since it was built, every one exact.
///
/// Every event the subscription hands over ends in exactly one of: exported, a drop cause, held by
/// tail sampling, in flight, or still queued / being exported. After a [`force_flush`] without
/// tail sampling (or a [`shutdown`], which decides held traces), `received() == exported +
/// dropped()`.
///
/// [`force_flush`]: crate::Collector::force_flush
/// [`shutdown`]: crate::Collector::shutdown
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExportStats {
    /// Events the sink accepted ([`Sink::export`](crate::Sink::export) returned `Ok`).
    pub exported: u64,
    /// Events dropped because the queue was full (policy `DropNewest`: the new event; `DropOldest`:
    /// the oldest queued one; `Block`: the new event after `block_limit` ran out), and events of
    /// threads that exited that the queue they leave behind could not keep (no wait).
    pub dropped_queue_full: u64,
    /// Events of batches the sink refused ([`Sink::export`](crate::Sink::export) returned `Err` or
    /// panicked).
    pub dropped_exporter_error: u64,
    /// Events that arrived after shutdown began, or were still queued (or taken from the queue
    /// but not yet in an export) when the shutdown's timeout ran out.
    pub dropped_shutdown: u64,
    /// Events tail sampling dropped (not kept, evicted, over its limits): the details are in
    /// [`TailStats`](crate::TailStats).
    pub dropped_tail_sampling: u64,
    /// Events tail sampling holds now, waiting for their trace's local root.
    pub held: u64,
    /// Events the collector's thread took from the queues.
    pub dequeued: u64,
    /// Events taken from the queues and handed to the sink, not yet settled: the batch being
    /// exported to a pipelining sink and the batches it keeps in flight until their confirmation
    /// ([`Sink::pipeline`](crate::Sink::pipeline); always 0 between batches otherwise).
    pub in_flight: u64,
    /// Events in the publishing threads' queues now, not yet taken by the collector's thread (0
    /// once its thread ended: what is left then is `dropped_shutdown`).
    pub queued: u64,
    /// Of `dropped_shutdown`, the events the thread had taken from the queue (so also in
    /// `dequeued`) and did not export because a shutdown's timeout ran out: `received` counts
    /// them once.
    pub(crate) taken_at_shutdown: u64,
}

impl ExportStats {
    /// All drops, whatever the cause.
    pub fn dropped(&self) -> u64 {
        self.dropped_queue_full + self.dropped_exporter_error + self.dropped_shutdown + self.dropped_tail_sampling
    }

    /// Events the subscription handed to the exporter: those it took from the queue, plus those
    /// that never got in (queue full, shut down). Events in the queue right now are not counted
    /// until taken, so this is exact once flushed.
    pub fn received(&self) -> u64 {
        self.dequeued + self.dropped_queue_full + self.dropped_shutdown - self.taken_at_shutdown
    }

    /// `self - earlier`, counter by counter (`held`, `in_flight` and `queued` are this one's): a
    /// burst's growth.
    ///
    /// # Panics
    /// In debug builds, when a counter of `earlier` is above this one's (not an earlier snapshot).
    pub fn since(&self, earlier: &ExportStats) -> ExportStats {
        ExportStats {
            exported: self.exported - earlier.exported,
            dropped_queue_full: self.dropped_queue_full - earlier.dropped_queue_full,
            dropped_exporter_error: self.dropped_exporter_error - earlier.dropped_exporter_error,
            dropped_shutdown: self.dropped_shutdown - earlier.dropped_shutdown,
            dropped_tail_sampling: self.dropped_tail_sampling - earlier.dropped_tail_sampling,
            held: self.held,
            dequeued: self.dequeued - earlier.dequeued,
            in_flight: self.in_flight,
            queued: self.queued,
            taken_at_shutdown: self.taken_at_shutdown - earlier.taken_at_shutdown,
        }
    }
}

impl fmt::Display for ExportStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "exported {}, dropped {} (queue full {}, exporter error {}, shutdown {}, tail sampling {}), held {}",
            self.exported,
            self.dropped(),
            self.dropped_queue_full,
            self.dropped_exporter_error,
            self.dropped_shutdown,
            self.dropped_tail_sampling,
            self.held
        )
    }
}

/// What the drop hook receives: the exporter's name, the drops of one burst (the counters' growth
/// since the previous report), the totals, and the sink's last error message when the burst had
/// exporter errors.
///
/// The collector's thread reports once a burst is over (the queue drained) or, under sustained
/// overload, at most once per `report_interval`; never per event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DropReport {
    /// The exporter's name (the collector's, [`Collector::builder`](crate::Collector::builder)).
    pub exporter: String,
    /// The counters' growth since the previous report.
    pub burst: ExportStats,
    /// The counters since the exporter was built.
    pub total: ExportStats,
    /// The sink's last error (or panic message), when `burst.dropped_exporter_error > 0`.
    pub last_error: Option<String>,
}

impl fmt::Display for DropReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "exporter `{}` dropped {} events (queue full {}, exporter error {}, shutdown {}, tail sampling {}); in all: {}",
            crate::escape(&self.exporter),
            self.burst.dropped(),
            self.burst.dropped_queue_full,
            self.burst.dropped_exporter_error,
            self.burst.dropped_shutdown,
            self.burst.dropped_tail_sampling,
            self.total
        )?;
        if let Some(error) = &self.last_error {
            write!(f, "; last exporter error: {}", crate::escape(error))?;
        }
        Ok(())
    }
}

/// Why [`force_flush`](crate::Collector::force_flush) or
/// [`shutdown`](crate::Collector::shutdown) did not complete.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExportError {
    /// The collector's thread did not answer within the timeout (a slow sink); the counters
    /// at the time are attached. For a shutdown, the thread still stops after its current export
    /// and what it leaves is `dropped_shutdown`, already in the attached counters; the batch in
    /// that export (`dequeued` minus what is exported, dropped or held), and what a pipelining
    /// sink still has in flight, are counted when the export returns, if ever.
    TimedOut(ExportStats),
    /// The collector was already shut down (by an earlier `shutdown`, or its thread ended); the
    /// final counters are attached.
    ShutDown(ExportStats),
}

impl ExportError {
    /// The counters attached to the error.
    pub fn stats(&self) -> ExportStats {
        match self {
            ExportError::TimedOut(stats) | ExportError::ShutDown(stats) => *stats,
        }
    }
}

impl fmt::Display for ExportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExportError::TimedOut(stats) => write!(f, "the exporter's collector thread timed out ({stats})"),
            ExportError::ShutDown(stats) => write!(f, "the exporter is shut down ({stats})"),
        }
    }
}

impl std::error::Error for ExportError {}
