//! The live page (notify-web).

use std::net::SocketAddr;

use notify_core::{Notifier, Pattern};
use notify_pool::{AsyncSubscription, WorkerPool};
use notify_web::{TraceRecorder, WebOptions, WebServer};

use crate::SetupError;

/// The page's server and the recorder's subscription.
pub(crate) struct WebSink {
    pub(crate) subscription: Option<AsyncSubscription>,
    pub(crate) server: Option<WebServer>,
}

/// Records every event on the shared worker pool and serves the page on `address`.
pub(crate) fn start(notifier: &Notifier, address: SocketAddr, token: Option<&str>) -> Result<WebSink, SetupError> {
    let options = match token {
        Some(token) => WebOptions::new().token(token),
        None => WebOptions::new(),
    };
    let recorder = TraceRecorder::new(options);
    let subscription = recorder.subscribe(WorkerPool::global(), notifier, Pattern::all());
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
            let _ = s.unsubscribe();
        }
        self.server.take();
    }
}
