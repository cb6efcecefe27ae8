//! The export collector: one collector under every notify exporter (OpenTelemetry, NATS, the live
//! page, a file, a vendor), as fastrace's collector is under its reporters. Recording and
//! collecting are apart: the instrumenting thread only hands the shared event over; everything
//! else happens on the collector's thread, and an exporter implements only a [`Sink`] ("take this
//! batch").
//!
//! * [`Collector`] ([`Collector::builder`]) — the pipeline: the hand-off, batching, tail sampling,
//!   exact drop accounting by cause ([`ExportStats`]) with a report once per burst
//!   ([`DropReport`], through the notifier's failure hook by default), flush and shutdown with
//!   deadlines ([`ExportError`]), and the tokio runtime that drives asynchronous sinks
//!   ([`ExportRuntime`]: the application's, or a current-thread one of the collector's own).
//! * [`Sink`] — what an exporter implements: one method taking a batch and returning a future
//!   ([`SinkFuture`]; [`ready`] for synchronous sinks), optional `flush` and `shutdown` hooks,
//!   and optional pipelining ([`Sink::pipeline`]: batches kept in flight after their future
//!   completed, each event settled later through [`Settle`]).
//! * [`Handoff`] — the bounded hand-off from the instrumenting threads to the collector's thread:
//!   a wait-free queue per live publishing thread and one shared queue of what exited threads
//!   left, the [`Overflow`](notify_core::export::Overflow) policy per full queue, every drop
//!   counted.
//! * [`TailSampler`] — tail sampling in-process, on the collector's thread: hold each trace's
//!   events until its local root ends, then keep the trace whole (an error, a slow root, or a
//!   ratio of the rest) or drop it whole; bounded, every drop counted by cause ([`TailStats`]).
//!   Head sampling (decided when a trace starts) is notify-core's
//!   [`Sampler`](notify_core::export::Sampler); tail sampling sees only what head sampling kept.
//! * [`DropReporter`] — the subscriptions through whose notifier's failure hook drops are
//!   reported, where subscriber panics are reported too.
//!
//! The engine (notify-core) does not know this crate: exported events go back to it for reuse
//! through [`recycle_all`](notify_core::export::recycle_all), so a steady flow of exported events
//! allocates nothing per event on the instrumenting thread. docs/architecture.md walks one event
//! from `instrument` through the collector to each sink.
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use notify_core::{Event, Notifier, OwnedEventSubscriber, Pattern, Payload, Subscriber};
//! use notify_export::{ready, Collector, Sink, SinkFuture};
//!
//! /// The sink: counts what it is given.
//! struct Count(Arc<std::sync::atomic::AtomicUsize>);
//! impl Sink for Count {
//!     fn export<'a>(&'a mut self, batch: &'a [Arc<Event>]) -> SinkFuture<'a> {
//!         self.0.fetch_add(batch.len(), std::sync::atomic::Ordering::Relaxed);
//!         ready(Ok(()))
//!     }
//! }
//!
//! /// The exporter's subscription: hands sampled events to the collector, nothing else.
//! struct Exporter(Collector);
//! impl OwnedEventSubscriber for Exporter {
//!     fn deliver(&self, event: &Arc<Event>) {
//!         if event.is_sampled() {
//!             self.0.push(event);
//!         }
//!     }
//! }
//!
//! let count = Arc::new(std::sync::atomic::AtomicUsize::new(0));
//! let collector = Collector::builder("count", Count(count.clone())).build();
//! let notifier = Notifier::new();
//! let subscription = notifier.subscribe(Pattern::all(), Subscriber::owned(Exporter(collector.clone())));
//! collector.report_through(&subscription);
//! notifier.instrument("job.run", Payload::new, |_| ());
//! let stats = collector.shutdown(Duration::from_secs(5))?;
//! assert_eq!((stats.exported, stats.dropped()), (1, 0));
//! assert_eq!(count.load(std::sync::atomic::Ordering::Relaxed), 1);
//! # Ok::<(), notify_export::ExportError>(())
//! ```

#![warn(missing_docs)]

mod collector;
mod drop_report;
mod error;
mod handoff;
mod runtime;
mod settle;
mod shared;
mod sink;
mod stats;
mod tail;
#[cfg(feature = "testing")]
pub mod testing;
mod worker;

pub use crate::collector::{Collector, CollectorBuilder};
pub use crate::drop_report::DropReporter;
pub use crate::error::SinkError;
pub use crate::handoff::{Handoff, HandoffStats};
pub use crate::runtime::ExportRuntime;
pub use crate::settle::Settle;
pub use crate::sink::{ready, Sink, SinkFuture};
pub use crate::stats::{DropReport, ExportError, ExportStats};
pub use crate::tail::*;

/// `text` escaped for one log line (a sink's error message is foreign text).
pub(crate) fn escape(text: &str) -> notify_core::escape::Escaped<'_> {
    notify_core::escape::Escaped::new(text)
}

/// This crate's README.md: its code blocks are compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
