//! The live page (notify-web).

use std::net::SocketAddr;
use std::time::Duration;

use notify_core::{Notifier, Pattern};
use notify_web::{TraceRecorder, WebOptions, WebServer, WebSubscription};

use crate::SetupError;

/// The page's server and the recorder's subscription.
pub(crate) struct WebSink {
    pub(crate) subscription: Option<WebSubscription>,
    pub(crate) server: Option<WebServer>,
}

/// Records every event through the page's export collector and serves the page on `address`.
pub(crate) fn start(notifier: &Notifier, address: SocketAddr, token: Option<&str>) -> Result<WebSink, SetupError> {
    let options = match token {
        Some(token) => WebOptions::new().token(token),
        None => WebOptions::new(),
    };
    let recorder = TraceRecorder::new(options);
    let subscription = recorder.subscribe(notifier, Pattern::all());
    let server = WebServer::start(address, recorder).map_err(|e| SetupError::sink("live page", e))?;
    Ok(WebSink {
        subscription: Some(subscription),
        server: Some(server),
    })
}

impl WebSink {
    pub(crate) fn address(&self) -> Option<SocketAddr> {
        self.server.as_ref().map(WebServer::local_addr)
    }

    /// Stops recording and serving.
    pub(crate) fn shutdown(&mut self) {
        if let Some(s) = self.subscription.take() {
            // Unsubscribes, records what is queued, stops the collector's thread.
            let _ = s.shutdown(Duration::from_secs(5));
        }
        self.server.take();
    }
}
