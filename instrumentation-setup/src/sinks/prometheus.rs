//! A Prometheus scrape endpoint fed by notify-metrics.

use std::net::SocketAddr;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};
use notify_core::{Notifier, Pattern, Subscription};
use notify_metrics::{MetricsSubscriber, DURATION_BUCKETS};

use crate::SetupError;

/// The endpoint's address and the metrics subscription.
pub(crate) struct PrometheusSink {
    pub(crate) address: SocketAddr,
    pub(crate) subscription: Option<Subscription>,
}

/// Installs metrics-exporter-prometheus as the global `metrics` recorder, serving `/metrics` on
/// `address` (its own thread when the caller runs no tokio runtime).
pub(crate) fn start(notifier: &Notifier, address: SocketAddr) -> Result<PrometheusSink, SetupError> {
    let listener = std::net::TcpListener::bind(address).map_err(|e| SetupError::sink("Prometheus endpoint", e))?;
    let address = listener
        .local_addr()
        .map_err(|e| SetupError::sink("Prometheus endpoint", e))?;
    // metrics-exporter-prometheus binds the address itself: free the port just before.
    drop(listener);
    PrometheusBuilder::new()
        .with_http_listener(address)
        .set_buckets_for_metric(Matcher::Suffix("duration_seconds".into()), DURATION_BUCKETS)
        .map_err(|e| SetupError::sink("Prometheus endpoint", e))?
        .install()
        .map_err(|e| SetupError::sink("Prometheus endpoint", e))?;
    Ok(PrometheusSink {
        address,
        subscription: Some(subscription(notifier)),
    })
}

/// The one function that turns events into metrics: today notify-metrics' per-event counter and
/// duration histogram labelled by event name and outcome (issue 48 adds the HTTP RED metrics).
fn subscription(notifier: &Notifier) -> Subscription {
    let metrics = MetricsSubscriber::new();
    metrics.describe();
    metrics.subscribe(notifier, Pattern::all())
}
