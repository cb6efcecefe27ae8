//! Tail sampling in-process, as the export collector ([`notify_export`]) provides it: hold each trace's events
//! until its local root ends, then keep the errors, the slow ones and a ratio of the rest, whole.
//!
//! The stage is the collector's, so that notify-nats and notify-web run it too without depending
//! on this crate; these names are the same types, re-exported for the paths that
//! existed before (`notify_opentelemetry::tail::TailSampling`). Turn it on for this exporter with
//! [`Builder::tail_sampling`](crate::Builder::tail_sampling); the decision, the bounds and the
//! counters are described in [`notify_export::TailSampler`].
//!
//! ```
//! use std::time::Duration;
//! use notify_opentelemetry::tail::TailSampling;
//! use opentelemetry_sdk::trace::InMemorySpanExporter;
//!
//! let exporter = notify_opentelemetry::OpenTelemetryExporter::builder(InMemorySpanExporter::default())
//!     .tail_sampling(TailSampling::new().slower_than(Duration::from_millis(250)).ratio(0.01))
//!     .build();
//! assert_eq!(exporter.tail_stats().unwrap_or_default().kept, 0);
//! ```

pub use notify_export::{is_error, TailSampler, TailSampling, TailStats};
