//! A Prometheus scrape endpoint: notify-metrics' RED metrics with trace exemplars.

use std::net::SocketAddr;

use notify_core::{Notifier, Pattern};
use notify_metrics::{PrometheusExporter, PrometheusGuard};

use crate::SetupError;

/// The endpoint's address and the running exporter (dropping it unsubscribes and stops serving).
pub(crate) struct PrometheusSink {
    pub(crate) address: SocketAddr,
    pub(crate) exporter: Option<PrometheusGuard>,
}

/// The one function that turns events into metrics: notify-metrics' `PrometheusExporter`, with
/// no code in the application: `http.server.request.duration` and `http.client.request.duration`
/// from notify-http's events (OpenTelemetry's names and labels, Prometheus' sanitized forms), and
/// `notify.event.duration` for every event (labelled by name; the series limit applies), served
/// as OpenMetrics text at `http://<address>/metrics` from a thread of its own.
pub(crate) fn start(notifier: &Notifier, address: SocketAddr) -> Result<PrometheusSink, SetupError> {
    let exporter = PrometheusExporter::new()
        .notifier(notifier)
        .events(Pattern::all())
        .serve(address)
        .map_err(|e| SetupError::sink("Prometheus endpoint", e))?;
    Ok(PrometheusSink {
        address: exporter.local_addr().unwrap_or(address),
        exporter: Some(exporter),
    })
}
