//! [`PrometheusExporter`]: RED metrics and event durations with trace exemplars, as OpenMetrics.

use std::borrow::Cow;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use notify_core::{Event, Notifier, Pattern, Subscriber, Subscription};
use notify_export::TailSampling;
use prometheus_client::registry::{Registry, Unit};

use crate::exemplars::{ExemplarCounts, ExemplarFilter, ExemplarPolicy, ExemplarStats};
use crate::histogram::{Buckets, LimitedHistograms};
use crate::red::{self, HTTP_DURATION_BUCKETS};
use crate::serve::{Endpoint, ServeCounts};
use crate::subscriber::{DEFAULT_CARDINALITY_LIMIT, DURATION_BUCKETS};

/// The address OpenTelemetry's Prometheus exporters listen on by default
/// (`OTEL_EXPORTER_PROMETHEUS_HOST` `localhost`, `OTEL_EXPORTER_PROMETHEUS_PORT` 9464).
pub const DEFAULT_PROMETHEUS_ADDRESS: &str = "127.0.0.1:9464";

/// Builds the RED metrics of notify-http's events (and, when asked, the durations of other
/// events) as histograms with trace exemplars, in the OpenMetrics text format; see the
/// [crate documentation](crate#red-metrics-and-exemplars) for the metrics, labels and exemplars.
///
/// [`serve`](PrometheusExporter::serve) subscribes and serves `GET /metrics`;
/// [`install`](PrometheusExporter::install) subscribes only (render the text yourself with
/// [`PrometheusGuard::render`], in an existing HTTP server). Either returns a
/// [`PrometheusGuard`] that unsubscribes and stops the endpoint when dropped.
///
/// ```
/// use notify_core::{Notifier, Payload};
/// use notify_metrics::PrometheusExporter;
///
/// let notifier = Notifier::new();
/// let metrics = PrometheusExporter::new().notifier(&notifier).serve("127.0.0.1:0")?;
/// // What notify-http's ServerLayer publishes for `GET /books/{id}` answered 200:
/// notifier.instrument("request.http", || {
///     Payload::new()
///         .with("otel.kind", "server")
///         .with("http.request.method", "GET")
///         .with("http.route", "/books/{id}")
///         .with("http.response.status_code", 200_u64)
/// }, |_| ());
/// let text = metrics.render();
/// assert!(text.contains("# TYPE http_server_request_duration_seconds histogram"));
/// assert!(text.contains(r#"http_server_request_duration_seconds_count{http_request_method="GET",http_route="/books/{id}",http_response_status_code="200"} 1"#));
/// assert!(text.contains(r#" # {trace_id=""#), "a bucket carries the request's trace id");
/// println!("scrape http://{}/metrics", metrics.local_addr().unwrap());
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone, Debug)]
#[must_use = "a PrometheusExporter does nothing until `serve` or `install`"]
pub struct PrometheusExporter {
    notifier: Option<Notifier>,
    server_event: Option<Cow<'static, str>>,
    client_event: Option<Cow<'static, str>>,
    events: Option<Pattern>,
    http_buckets: Arc<[f64]>,
    event_buckets: Arc<[f64]>,
    cardinality_limit: usize,
    exemplars: ExemplarPolicy,
}

impl Default for PrometheusExporter {
    fn default() -> Self {
        PrometheusExporter::new()
    }
}

impl PrometheusExporter {
    /// The RED metrics of notify-http's default events (`"request.http"` for the server,
    /// `"request.http_client"` for the client) on the global notifier; exemplars
    /// [`TraceBased`](ExemplarFilter::TraceBased); at most 2,000 series per metric.
    pub fn new() -> PrometheusExporter {
        PrometheusExporter {
            notifier: None,
            server_event: Some(Cow::Borrowed(notify_http::SERVER_EVENT)),
            client_event: Some(Cow::Borrowed(notify_http::CLIENT_EVENT)),
            events: None,
            http_buckets: Arc::from(HTTP_DURATION_BUCKETS),
            event_buckets: Arc::from(DURATION_BUCKETS),
            cardinality_limit: DEFAULT_CARDINALITY_LIMIT,
            exemplars: ExemplarPolicy {
                filter: ExemplarFilter::TraceBased,
                tail: None,
            },
        }
    }

    /// Subscribes on `notifier` instead of the global one.
    pub fn notifier(mut self, notifier: &Notifier) -> Self {
        self.notifier = Some(notifier.clone());
        self
    }

    /// The name of notify-http's server events when `ServerLayer::name` renamed them (default
    /// `"request.http"`).
    pub fn server_event(mut self, name: impl Into<Cow<'static, str>>) -> Self {
        self.server_event = Some(name.into());
        self
    }

    /// The name of notify-http's client events when `ClientLayer::name` renamed them (default
    /// `"request.http_client"`).
    pub fn client_event(mut self, name: impl Into<Cow<'static, str>>) -> Self {
        self.client_event = Some(name.into());
        self
    }

    /// No `http.server.request.duration` (no subscription to server events).
    pub fn disable_server(mut self) -> Self {
        self.server_event = None;
        self
    }

    /// No `http.client.request.duration` (no subscription to client events).
    pub fn disable_client(mut self) -> Self {
        self.client_event = None;
        self
    }

    /// Also records the events `pattern` matches in `notify_event_duration_seconds`, labelled
    /// `event` (the event name), with exemplars, bucket bounds [`DURATION_BUCKETS`] (a tenth of a millisecond to
    /// 10 s) unless [`event_buckets`](Self::event_buckets) says otherwise.
    pub fn events(mut self, pattern: impl Into<Pattern>) -> Self {
        self.events = Some(pattern.into());
        self
    }

    /// The bucket bounds (seconds, ascending) of the two HTTP histograms; default
    /// [`HTTP_DURATION_BUCKETS`], what OpenTelemetry's conventions advise. `+Inf` is added.
    pub fn http_buckets(mut self, bounds: &[f64]) -> Self {
        self.http_buckets = Arc::from(bounds);
        self
    }

    /// The bucket bounds (seconds, ascending) of `notify_event_duration_seconds`; default
    /// [`DURATION_BUCKETS`].
    pub fn event_buckets(mut self, bounds: &[f64]) -> Self {
        self.event_buckets = Arc::from(bounds);
        self
    }

    /// At most `limit` series per metric (default 2,000, OpenTelemetry's); beyond, measurements
    /// go to the metric's overflow series `otel_metric_overflow="true"` and are counted
    /// ([`PrometheusStats`]). Memory is bounded by it: per series, one count per bucket and at
    /// most one exemplar per bucket.
    pub fn cardinality_limit(mut self, limit: usize) -> Self {
        self.cardinality_limit = limit;
        self
    }

    /// Which measurements carry an exemplar (default [`ExemplarFilter::TraceBased`]: sampled
    /// traces only).
    pub fn exemplars(mut self, filter: ExemplarFilter) -> Self {
        self.exemplars.filter = filter;
        self
    }

    /// The tail-sampling policy of the exporter the traces go to (notify-opentelemetry's,
    /// notify-nats', the live page's), so an exemplar points only to a trace that policy keeps
    /// for sure ([`TailSampling::keeps_for_sure`]: an error, a slow local root, or the ratio).
    pub fn tail_sampling(mut self, policy: TailSampling) -> Self {
        self.exemplars.tail = Some(policy);
        self
    }

    /// Subscribes and serves the exposition at `http://<addr>/metrics` (OpenMetrics text,
    /// `application/openmetrics-text; version=1.0.0`) from a thread of its own. Bind to
    /// `127.0.0.1` to stay local (port 0 picks a free port: [`PrometheusGuard::local_addr`]).
    ///
    /// # Errors
    /// The operating system's error when `addr` cannot be bound or the thread not started;
    /// nothing is subscribed then.
    pub fn serve(self, addr: impl ToSocketAddrs) -> io::Result<PrometheusGuard> {
        let mut guard = self.install();
        let registry = guard.shared.clone();
        let render: Arc<dyn Fn() -> String + Send + Sync> = Arc::new(move || registry.render());
        guard.endpoint = Some(Endpoint::start(addr, render, guard.shared.serve.clone())?);
        Ok(guard)
    }

    /// Subscribes without serving: [`PrometheusGuard::render`] gives the text.
    pub fn install(self) -> PrometheusGuard {
        let limit = self.cardinality_limit;
        let http = Buckets(self.http_buckets.clone());
        let mut registry = Registry::default();
        let server = self.server_event.as_ref().map(|_| {
            let h = LimitedHistograms::new(http.clone(), limit);
            registry.register_with_unit(
                "http_server_request_duration",
                "Duration of HTTP server requests (notify-http's server events)",
                Unit::Seconds,
                h.family.clone(),
            );
            h
        });
        let client = self.client_event.as_ref().map(|_| {
            let h = LimitedHistograms::new(http.clone(), limit);
            registry.register_with_unit(
                "http_client_request_duration",
                "Duration of HTTP client requests (notify-http's client events)",
                Unit::Seconds,
                h.family.clone(),
            );
            h
        });
        let events = self.events.as_ref().map(|_| {
            let h = LimitedHistograms::new(Buckets(self.event_buckets.clone()), limit);
            registry.register_with_unit(
                "notify_event_duration",
                "Duration of notify events, start to finish, by event name",
                Unit::Seconds,
                h.family.clone(),
            );
            h
        });
        let shared = Arc::new(Shared {
            registry,
            server,
            client,
            events,
            policy: self.exemplars.clone(),
            exemplar_counts: ExemplarCounts::default(),
            serve: Arc::default(),
        });
        let notifier = self.notifier.clone().unwrap_or_else(|| Notifier::global().clone());
        let mut subscriptions = Vec::new();
        let mut subscribe = |pattern: Pattern, record: fn(&Shared, &Event)| {
            let shared = shared.clone();
            let subscriber = Subscriber::event(move |event: &Event| record(&shared, event)).named("prometheus");
            subscriptions.push(notifier.subscribe(pattern, subscriber));
        };
        if let Some(name) = &self.server_event {
            subscribe(Pattern::from(name.to_string()), Shared::record_server);
        }
        if let Some(name) = &self.client_event {
            subscribe(Pattern::from(name.to_string()), Shared::record_client);
        }
        if let Some(pattern) = self.events {
            subscribe(pattern, Shared::record_event);
        }
        PrometheusGuard {
            shared,
            subscriptions,
            endpoint: None,
        }
    }
}

/// What the subscribers record into and the endpoint renders.
struct Shared {
    registry: Registry,
    server: Option<LimitedHistograms>,
    client: Option<LimitedHistograms>,
    events: Option<LimitedHistograms>,
    policy: ExemplarPolicy,
    exemplar_counts: ExemplarCounts,
    serve: Arc<ServeCounts>,
}

impl Shared {
    fn record_server(&self, event: &Event) {
        if let Some(h) = &self.server {
            self.observe(h, red::server_labels(event), event);
        }
    }

    fn record_client(&self, event: &Event) {
        if let Some(h) = &self.client {
            self.observe(h, red::client_labels(event), event);
        }
    }

    fn record_event(&self, event: &Event) {
        if let Some(h) = &self.events {
            let labels = vec![(Cow::Borrowed("event"), Cow::Owned(event.name().to_owned()))];
            self.observe(h, labels, event);
        }
    }

    fn observe(&self, histograms: &LimitedHistograms, labels: crate::histogram::Labels, event: &Event) {
        let exemplar = self.policy.exemplar(event, &self.exemplar_counts);
        histograms.observe(labels, event.duration().as_secs_f64(), exemplar);
    }

    fn render(&self) -> String {
        let mut text = String::with_capacity(4096);
        // Writing into a String cannot fail; prometheus-client's encoders return fmt::Result only
        // for the writer's sake.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        text
    }
}

/// The running exporter: [`PrometheusExporter::serve`]'s or [`install`](PrometheusExporter::install)'s.
/// Dropping it unsubscribes from the notifier and stops the endpoint (its thread is joined).
pub struct PrometheusGuard {
    shared: Arc<Shared>,
    subscriptions: Vec<Subscription>,
    endpoint: Option<Endpoint>,
}

impl PrometheusGuard {
    /// The address the endpoint listens on (the port chosen when asked for port 0); `None` when
    /// installed without an endpoint.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.endpoint.as_ref().map(|e| e.addr)
    }

    /// The exposition as served at `/metrics`: OpenMetrics text ending with `# EOF`.
    pub fn render(&self) -> String {
        self.shared.render()
    }

    /// Series, overflow, exemplar and endpoint counts.
    pub fn stats(&self) -> PrometheusStats {
        let histograms = |h: &Option<LimitedHistograms>| h.as_ref().map_or((0, 0), |h| (h.series(), h.overflowed()));
        let serve = &self.shared.serve;
        PrometheusStats {
            server_series: histograms(&self.shared.server).0,
            server_overflowed: histograms(&self.shared.server).1,
            client_series: histograms(&self.shared.client).0,
            client_overflowed: histograms(&self.shared.client).1,
            event_series: histograms(&self.shared.events).0,
            event_overflowed: histograms(&self.shared.events).1,
            exemplars: self.shared.exemplar_counts.stats(),
            scrapes: serve.scrapes.load(Ordering::Relaxed),
            not_found: serve.not_found.load(Ordering::Relaxed),
            refused_connections: serve.refused_connections.load(Ordering::Relaxed),
            accept_errors: serve.accept_errors.load(Ordering::Relaxed),
        }
    }

    /// Unsubscribes and stops the endpoint now (what dropping the guard does).
    pub fn shutdown(self) {}
}

impl Drop for PrometheusGuard {
    fn drop(&mut self) {
        for subscription in self.subscriptions.drain(..) {
            // Err only when already removed or the notifier is gone: nothing left to undo.
            let _ = subscription.unsubscribe();
        }
        self.endpoint = None;
    }
}

impl std::fmt::Debug for PrometheusGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrometheusGuard")
            .field("local_addr", &self.local_addr())
            .field("stats", &self.stats())
            .finish()
    }
}

/// Counts of a [`PrometheusGuard`]: series per metric and measurements sent to the overflow
/// series (the [`cardinality_limit`](PrometheusExporter::cardinality_limit)), exemplars by fate,
/// and what the endpoint served and refused.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PrometheusStats {
    /// Series of `http_server_request_duration_seconds`, the overflow series not counted.
    pub server_series: usize,
    /// Server requests recorded in its overflow series.
    pub server_overflowed: u64,
    /// Series of `http_client_request_duration_seconds`.
    pub client_series: usize,
    /// Client calls recorded in its overflow series.
    pub client_overflowed: u64,
    /// Series of `notify_event_duration_seconds`.
    pub event_series: usize,
    /// Events recorded in its overflow series.
    pub event_overflowed: u64,
    /// Exemplars attached and left out, by cause.
    pub exemplars: ExemplarStats,
    /// `GET`/`HEAD /metrics` answered.
    pub scrapes: u64,
    /// Requests for another path (answered 404).
    pub not_found: u64,
    /// Connections closed at once because 64 were open.
    pub refused_connections: u64,
    /// Failed accepts (out of file descriptors, a connection reset before it was accepted).
    pub accept_errors: u64,
}
