//! notify events as OpenTelemetry spans.
//!
//! [`OpenTelemetryExporter`] subscribes to notify events and turns each finished one into a span
//! ([`span_data`]): notify's 128-bit trace id is the span's trace id, the event id its span id, the
//! parent event's id its parent span id, so a request's events form one trace tree whatever
//! threads and tasks they ran on. The instrumenting thread only queues the shared event on the
//! export collector ([`notify_export::Collector`]); the collector's thread batches, tail-samples,
//! converts ([`SpanSink`]) and awaits any `opentelemetry_sdk` `SpanExporter` (OTLP over gRPC or
//! HTTP, stdout, in-memory) on a tokio runtime ([`ExportRuntime`]: the application's, else one of
//! its own), counting what it accepted and every drop by cause ([`ExportStats`]). [`tail`] (the
//! collector's stage, re-exported) holds traces until their local root ends and keeps the
//! errors, the slow ones and a ratio of the rest.
//!
//! ```no_run
//! use notify_opentelemetry::OpenTelemetryExporter;
//! # fn otlp() -> opentelemetry_sdk::trace::InMemorySpanExporter { Default::default() }
//!
//! let exporter = OpenTelemetryExporter::new(otlp()); // e.g. opentelemetry_otlp::SpanExporter
//! let _subscription = exporter.subscribe(notify_core::Notifier::global(), notify_core::Pattern::all());
//! // ... at exit:
//! let stats = exporter.shutdown(std::time::Duration::from_secs(5))?;
//! println!("{stats}"); // exported N, dropped 0 (queue full 0, exporter error 0, shutdown 0, ...)
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! To see notify events in a tracing-based OpenTelemetry setup instead (`tracing-opentelemetry`),
//! bridge them into tracing with `notify_tracing::TracingForwarder`; the spans then get
//! tracing-opentelemetry's ids, nested the same way.

#![warn(missing_docs)]

mod exporter;
mod resource;
mod sink;
mod span;
pub mod tail;

pub use crate::exporter::{Builder, OpenTelemetryExporter};
pub use crate::sink::SpanSink;
pub use crate::span::{span_data, span_id, trace_id, KIND_KEY};
// The collector's counters, report and errors, under the names this crate always had.
pub use notify_export::{DropReport, ExportError, ExportRuntime, ExportStats};

/// This crate's README.md: its code blocks are compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
