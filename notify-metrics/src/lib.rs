//! notify events as [`metrics`] counters and duration histograms.
//!
//! [`MetricsSubscriber`] is an event-object subscriber that records, for every event it
//! receives, through the `metrics` facade (so any `metrics` recorder works: Prometheus through
//! `metrics-exporter-prometheus`, StatsD, OpenTelemetry metrics, a test recorder):
//!
//! | metric | kind | labels | unit |
//! |---|---|---|---|
//! | `notify_events_total` | counter | `event`, `outcome`, the chosen payload keys | events |
//! | `notify_event_duration_seconds` | histogram | `event`, the chosen payload keys | seconds |
//!
//! * `event` is the event name (`"query.sql"`).
//! * `outcome` is how the instrumented block ended: `completed`, `error` (it completed with an
//!   error recorded in the payload's [`EXCEPTION_KEY`](notify_core::payload::EXCEPTION_KEY), as
//!   `instrument_result` and `#[instrument_event(err)]` do), `panicked` or `cancelled`.
//! * Each payload key chosen with [`MetricsSubscriber::label`] becomes a label whose value is the
//!   payload value's text (`"books"`, `"3"`, `"true"`); an event without that key has no such
//!   label. Choose keys with few distinct values (a table name, a status code), never the SQL text
//!   or an id: every distinct label set is a time series. A key must be a Prometheus label name
//!   (`[a-zA-Z_][a-zA-Z0-9_]*`, not starting with `__`), chosen once, and none of `event`,
//!   `outcome` (set by the subscriber), `le`, `quantile` (added by Prometheus):
//!   [`MetricsSubscriber::label`] panics on such a key, [`MetricsSubscriber::try_label`] returns a
//!   [`LabelError`].
//! * The metric names start with `notify` unless [`MetricsSubscriber::prefix`] says otherwise.
//! * Each metric has at most 2,000 series ([`MetricsSubscriber::cardinality_limit`], as
//!   OpenTelemetry's default); beyond, events are recorded in one overflow series per metric,
//!   labelled `otel_metric_overflow="true"` only ([`OVERFLOW_LABEL`]: OpenTelemetry's
//!   `otel.metric.overflow`, with the underscores Prometheus label names need), and counted
//!   ([`MetricsSubscriber::cardinality`]).
//!
//! ```
//! use notify_core::{Notifier, Pattern, Payload};
//! use notify_metrics::MetricsSubscriber;
//!
//! let notifier = Notifier::new();
//! let _subscription = MetricsSubscriber::new()
//!     .label("table")
//!     .subscribe(&notifier, Pattern::glob("*.sql")?);
//!
//! // Recorded as notify_events_total{event="query.sql",table="books",outcome="completed"} += 1
//! // and one observation of notify_event_duration_seconds{event="query.sql",table="books"}.
//! notifier.instrument("query.sql", || Payload::new().with("table", "books"), |_| ());
//! # Ok::<(), notify_core::PatternError>(())
//! ```
//!
//! # Prometheus
//!
//! Install `metrics-exporter-prometheus` as the recorder and give the duration histogram buckets
//! ([`DURATION_BUCKETS`] is a default from 100 µs to 10 s); without buckets that exporter renders
//! histograms as summaries. The crate's example serves them on loopback:
//! `cargo run -p notify-metrics --example prometheus -- 127.0.0.1:9000`.
//!
//! ```no_run
//! use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};
//! use notify_metrics::{MetricsSubscriber, DURATION_BUCKETS};
//!
//! PrometheusBuilder::new()
//!     .with_http_listener(([127, 0, 0, 1], 9000))
//!     .set_buckets_for_metric(Matcher::Suffix("duration_seconds".into()), DURATION_BUCKETS)?
//!     .install()?;
//! let _subscription = MetricsSubscriber::new().subscribe(notify_core::Notifier::global(), notify_core::Pattern::all());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Cost and threads
//!
//! Recording runs on the instrumenting thread (it is an event-object subscriber): per event, one
//! registration lookup in the recorder per metric (the recorder's hash map; no allocation for the
//! names, one small `Vec` for the labels). To take it off the instrumenting thread, subscribe
//! [`MetricsSubscriber`] through `notify_pool::WorkerPool` instead: it implements
//! [`EventSubscriber`](notify_core::EventSubscriber), which is what the pool delivers to. Either
//! way the recorder is the global `metrics` recorder (or the thread's local one, see
//! [`metrics::with_local_recorder`]) of the delivering thread.

#![warn(missing_docs)]

mod subscriber;

pub use crate::subscriber::{
    Cardinality, LabelError, MetricsSubscriber, PrefixError, BUILTIN_LABELS, DEFAULT_CARDINALITY_LIMIT,
    DURATION_BUCKETS, EVENTS_TOTAL, EVENT_DURATION_SECONDS, OVERFLOW_LABEL, PROMETHEUS_RESERVED_LABELS,
};

/// This crate's README.md: its code blocks are compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
