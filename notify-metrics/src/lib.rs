//! notify events as [`metrics`] counters and duration histograms, and RED metrics with trace
//! exemplars in the OpenMetrics format.
//!
//! Two paths, for two needs:
//!
//! * [`MetricsSubscriber`] records through the `metrics` facade: any `metrics` recorder (below).
//! * [`PrometheusExporter`] records the RED metrics of notify-http's events, with no code in the
//!   application, as histograms whose buckets carry an exemplar (the trace id of a recent request
//!   in that bucket), and serves them as OpenMetrics text
//!   ([below](#red-metrics-and-exemplars)).
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
//!   or an id: every distinct label set is a time series. The label's name is the key as
//!   OpenTelemetry's Prometheus exporters write an attribute key ([`prometheus_label_name`]:
//!   `http.route` -> `http_route`). A key is chosen once, and its label name is none of `event`,
//!   `outcome` (set by the subscriber), `le`, `quantile` (added by Prometheus):
//!   [`MetricsSubscriber::label`] panics on such a key (and on an empty one),
//!   [`MetricsSubscriber::try_label`] returns a [`LabelError`].
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

//!
//! # RED metrics and exemplars
//!
//! [`PrometheusExporter`] subscribes to notify-http's events and records, per OpenTelemetry's
//! HTTP semantic conventions, with the names OpenTelemetry's Prometheus exporters expose
//! ([`prometheus_metric_name`], [`prometheus_label_name`]: dots become underscores, the unit's
//! suffix is added):
//!
//! | OpenTelemetry name | Prometheus name | from | labels |
//! |---|---|---|---|
//! | `http.server.request.duration` (s) | `http_server_request_duration_seconds` | `ServerLayer`'s `"request.http"` | `http_request_method`, `http_route`, `http_response_status_code`, `error_type` |
//! | `http.client.request.duration` (s) | `http_client_request_duration_seconds` | `ClientLayer`'s `"request.http_client"` | `http_request_method`, `server_address`, `server_port`, `http_response_status_code`, `error_type` |
//! | `notify.event.duration` (s), when [asked](PrometheusExporter::events) | `notify_event_duration_seconds` | the events of a pattern | `event` |
//!
//! Rate, errors and duration all come from the histograms (`_count`, `error_type`, the
//! buckets), as with OpenTelemetry. A label is left out when the event has no value for it: no
//! `http_route` when the server layer found no route template (the raw path is never a label:
//! its values are unbounded), no `error_type` for a request that succeeded. `error_type` is the
//! status code for a failing status (notify-http's classifier: 5xx by default), else the error's
//! type, else the outcome (`cancelled`, `panicked`). A method outside the standard nine is
//! `_OTHER`. Each metric has at most [`cardinality_limit`](PrometheusExporter::cardinality_limit)
//! series (2,000), then one overflow series `otel_metric_overflow="true"`, counted in
//! [`PrometheusStats`].
//!
//! **Exemplars.** Each bucket of each series keeps the latest measurement that qualifies as an
//! exemplar, written after the bucket in the OpenMetrics text:
//!
//! ```text
//! http_server_request_duration_seconds_bucket{le="0.005",http_request_method="GET",http_route="/books/{id}",http_response_status_code="200"} 2 # {trace_id="d0e40806abb707b8c15fcd89c0baadee",span_id="ee218d958f937ac0"} 0.000040515 1796612423.4130116
//! ```
//!
//! Prometheus stores them with `--enable-feature=exemplar-storage` and serves them at
//! `/api/v1/query_exemplars`; Grafana links from the point to the trace. Memory: one exemplar per
//! bucket per series, so bounded by the series limit.
//!
//! **What an exemplar is guaranteed to point to.** With the default
//! [`ExemplarFilter::TraceBased`] (OpenTelemetry's default), only to an event whose trace was
//! *sampled*: head sampling (the notifier's [`Sampler`](notify_core::export::Sampler), the W3C
//! sampled flag of the caller honoured) decided to keep it, which is what exporters (OpenTelemetry,
//! NATS, the live page) send. When those exporters also tail-sample, give the exporter the same
//! policy ([`PrometheusExporter::tail_sampling`]): an exemplar then points only to a trace that
//! policy keeps whatever its other events are ([`TailSampling::keeps_for_sure`](notify_core::export::TailSampling::keeps_for_sure):
//! the event is an error, or a local root slower than the threshold, or its trace id is in the
//! ratio). Not guaranteed: that the backend still holds the trace (a tail sampler's bounds, an
//! exporter's queue, a backend's retention can still lose it, each counted where it happens).
//! Events left without an exemplar are counted by cause ([`ExemplarStats`]).
//!
//! **Why prometheus-client, beside `metrics`.** The `metrics` facade has no exemplar argument
//! (metrics-rs/metrics#175), and metrics-exporter-prometheus writes the Prometheus text format,
//! which cannot carry exemplars. `prometheus-client` is the Prometheus project's own Rust client:
//! its `HistogramWithExemplars` keeps one exemplar per bucket and its encoder writes OpenMetrics
//! text with them, escaping label values as the format requires. Writing that encoder here would
//! duplicate a maintained one. It is used only for these histograms, so [`MetricsSubscriber`]
//! keeps working with any `metrics` recorder.
//!
//! **For a setup crate.** One call turns it all on and the guard keeps it alive:
//!
//! ```no_run
//! let _metrics = notify_metrics::PrometheusExporter::new()
//!     .events(notify_core::Pattern::glob("*.sql")?)
//!     .serve(notify_metrics::DEFAULT_PROMETHEUS_ADDRESS)?; // 127.0.0.1:9464, OpenTelemetry's port
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

mod exemplars;
mod exporter;
mod histogram;
mod names;
mod red;
mod serve;
mod subscriber;

pub use crate::exemplars::{ExemplarFilter, ExemplarStats};
pub use crate::exporter::{PrometheusExporter, PrometheusGuard, PrometheusStats, DEFAULT_PROMETHEUS_ADDRESS};
pub use crate::names::{prometheus_label_name, prometheus_metric_name};
pub use crate::red::{
    ERROR_TYPE, HTTP_CLIENT_REQUEST_DURATION, HTTP_DURATION_BUCKETS, HTTP_SERVER_REQUEST_DURATION,
    NOTIFY_EVENT_DURATION,
};
pub use crate::serve::OPENMETRICS_CONTENT_TYPE;
pub use crate::subscriber::{
    Cardinality, LabelError, MetricsSubscriber, PrefixError, BUILTIN_LABELS, DEFAULT_CARDINALITY_LIMIT,
    DURATION_BUCKETS, EVENTS_TOTAL, EVENT_DURATION_SECONDS, OVERFLOW_LABEL, PROMETHEUS_RESERVED_LABELS,
};

/// This crate's README.md: its code blocks are compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
