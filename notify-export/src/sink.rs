//! [`Sink`]: what an exporter implements: "take this batch".

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use notify_core::Event;

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
}

/// A [`SinkFuture`] already complete with `result`: what a synchronous sink returns.
pub fn ready<'a>(result: Result<(), SinkError>) -> SinkFuture<'a> {
    Box::pin(std::future::ready(result))
}

/// Why a [`Sink`] refused a batch (or failed to flush or shut down): its message, as the drop
/// report shows it ([`DropReport::last_error`](crate::DropReport::last_error)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SinkError {
    message: String,
}

impl SinkError {
    /// An error with `message` (foreign text is fine: reports escape it).
    pub fn new(message: impl Into<String>) -> SinkError {
        SinkError {
            message: message.into(),
        }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for SinkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for SinkError {}

impl From<String> for SinkError {
    fn from(message: String) -> SinkError {
        SinkError::new(message)
    }
}

impl From<&str> for SinkError {
    fn from(message: &str) -> SinkError {
        SinkError::new(message)
    }
}
