//! Events exported to NATS through notify-nats.

use std::time::Duration;

use notify_core::{Notifier, Pattern, Subscription};
use notify_nats::{Exporter, NatsOptions};

use crate::SetupError;

/// The exporter and its subscription.
pub(crate) struct NatsSink {
    subscription: Option<Subscription>,
    exporter: Exporter,
}

/// Connects to `servers` and exports every event under `prefix`.
pub(crate) fn start(notifier: &Notifier, servers: &str, prefix: &str, name: &str) -> Result<NatsSink, SetupError> {
    let exporter = Exporter::builder(NatsOptions::new(servers).name(name))
        .prefix(prefix)
        .start()
        .map_err(|e| SetupError::sink("NATS exporter", e))?;
    let subscription = exporter.subscribe(notifier, Pattern::all());
    Ok(NatsSink {
        subscription: Some(subscription),
        exporter,
    })
}

impl NatsSink {
    /// Stops taking events, then publishes what is queued within `deadline`.
    pub(crate) fn shutdown(&mut self, deadline: Duration) {
        if let Some(s) = self.subscription.take() {
            let _ = s.unsubscribe();
        }
        let report = self.exporter.shutdown(deadline);
        if report.stats.pending > 0 {
            log::warn!(target: "instrumentation_setup", "NATS export left {} events unsent", report.stats.pending);
        }
    }
}
