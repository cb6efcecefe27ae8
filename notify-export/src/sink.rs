//! [`Sink`]: what an exporter implements: "take this batch".

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use notify_core::Event;

use crate::error::SinkError;
use crate::settle::Settle;

/// What [`Sink::export`], [`Sink::flush`] and [`Sink::shutdown`] return: a future the collector
/// drives on its runtime ([`Collector`](crate::Collector): the application's tokio runtime, or
/// a current-thread one of its own). A sink that does its work synchronously returns
/// [`ready`] with the outcome.
pub type SinkFuture<'a> = Pin<Box<dyn Future<Output = Result<(), SinkError>> + Send + 'a>>;

/// An exporter's back end, as fastrace's `Reporter`: the collector hands it each batch of events
/// its queues, tail sampling and batching let through, on the collector's thread, one batch at a
/// time, in the order the collector took them (per publishing thread, publish order).
///
/// * `Ok(())` means the sink accepted the whole batch: the collector counts it `exported`. An
///   `Err` counts the whole batch `dropped_exporter_error` and is reported once per burst with the
///   error's message ([`DropReport::last_error`](crate::DropReport::last_error)); a panic is
///   caught and counted the same way. A sink that can lose part of a batch says so with `Err`
///   (and what it did deliver is then its own to report).
/// * The events are shared (`Arc<Event>`): borrow them, convert them, clone the `Arc` to keep one.
///   Once the future completes the collector gives the events nobody else holds back to notify
///   ([`recycle_all`](notify_core::export::recycle_all)), so the next events reuse them.
/// * The future may await tokio I/O (tonic, reqwest, async-nats): it is polled on the collector's
///   thread inside its tokio runtime. It should not block that thread for long: the collector
///   takes nothing else from the queues meanwhile (the instrumenting threads only fill them).
/// * One batch at a time does not mean one round trip per batch: a sink whose far end confirms
///   later (publish acknowledgements, a confirmation round trip) opts into pipelining with
///   [`pipeline`](Sink::pipeline), returns from `export` once the batch is on its way, and
///   settles each event through [`Settle`] when its confirmation arrives, so that the next
///   batches go out meanwhile.
///
/// ```
/// use std::sync::Arc;
/// use notify_core::Event;
/// use notify_export::{ready, Sink, SinkFuture};
///
/// /// Writes each event's name on a line of its own.
/// struct Lines(Vec<String>);
///
/// impl Sink for Lines {
///     fn export<'a>(&'a mut self, batch: &'a [Arc<Event>]) -> SinkFuture<'a> {
///         self.0.extend(batch.iter().map(|e| e.name().to_owned()));
///         ready(Ok(()))
///     }
/// }
/// ```
pub trait Sink: Send + 'static {
    /// Takes `batch` (at least one event); see [`Sink`].
    fn export<'a>(&'a mut self, batch: &'a [Arc<Event>]) -> SinkFuture<'a>;

    /// Called by the collector's [`force_flush`](crate::Collector::force_flush) after it exported
    /// everything queued: push out what the sink itself buffers. The default does nothing.
    fn flush(&mut self) -> SinkFuture<'_> {
        ready(Ok(()))
    }

    /// Called once, last, by the collector's [`shutdown`](crate::Collector::shutdown) (or when
    /// its last handle is dropped) after the last batch: release connections. The default does
    /// nothing. An error is logged, nothing more: no event is lost by then.
    fn shutdown(&mut self) -> SinkFuture<'_> {
        ready(Ok(()))
    }

    /// Pipelining: called once, on the collector's thread, before the first batch. The default
    /// returns `false`: each batch is settled by its export future (`Ok` exported, `Err`
    /// dropped).
    ///
    /// A sink that keeps batches in flight after its export future completed keeps `settle` and
    /// returns `true`. Then:
    ///
    /// * `Ok` from [`export`](Sink::export) means "taken, on its way": the batch's events count
    ///   as `in_flight` ([`ExportStats::in_flight`](crate::ExportStats::in_flight)) until the
    ///   sink settles each one with [`Settle::exported`] or [`Settle::failed`] (in any order,
    ///   from any thread or task, during the export future already if it likes: the batch is in
    ///   flight from the moment the collector calls `export`). `Err` means none of the batch was
    ///   taken nor settled: the whole batch is counted `dropped_exporter_error`.
    /// * The sink bounds what it keeps in flight itself: an export future that waits for the
    ///   oldest confirmation once too many are out is how it applies back-pressure.
    /// * [`flush`](Sink::flush) settles everything in flight before it completes. The collector
    ///   calls it for each [`force_flush`](crate::Collector::force_flush), and also when its
    ///   queues run empty while events are in flight, so that a quiet period leaves nothing
    ///   unsettled.
    /// * [`shutdown`](Sink::shutdown) settles what is in flight too, or gives up on it; what is
    ///   still in flight when it returns is counted `dropped_shutdown`. A sink that retries until
    ///   its far end confirms (JetStream re-sends) stops retrying when
    ///   [`Settle::given_up`] completes: a [`shutdown`](crate::Collector::shutdown) timed out.
    fn pipeline(&mut self, settle: Settle) -> bool {
        let _ = settle;
        false
    }
}

/// A [`SinkFuture`] already complete with `result`: what a synchronous sink returns.
pub fn ready<'a>(result: Result<(), SinkError>) -> SinkFuture<'a> {
    Box::pin(std::future::ready(result))
}
