//! JetStream settings shared by the exporter and the importer.

use std::time::Duration;

use async_nats::jetstream;

use crate::connect::{ConnectError, ConnectErrorKind};

/// JetStream mode: events are stored in a stream (file storage) and delivered at least once;
/// with the message id the exporter sets (`Nats-Msg-Id`) and the importer's duplicate check,
/// nothing is lost or duplicated across a server restart.
///
/// ```
/// use std::time::Duration;
/// let js = notify_nats::JetStream::new("NOTIFY").duplicate_window(Duration::from_secs(600));
/// assert_eq!(js.stream_name(), "NOTIFY");
/// ```
#[derive(Clone, Debug)]
pub struct JetStream {
    stream: String,
    duplicate_window: Duration,
    ack_timeout: Duration,
}

impl JetStream {
    /// JetStream mode with the stream `stream` (created with file storage on first use, covering
    /// the subjects `<prefix>.>`), a 2-minute duplicate window and a 2 s publish-ack timeout.
    pub fn new(stream: impl Into<String>) -> JetStream {
        JetStream {
            stream: stream.into(),
            duplicate_window: Duration::from_secs(120),
            ack_timeout: Duration::from_secs(2),
        }
    }

    /// The stream's name.
    pub fn stream_name(&self) -> &str {
        &self.stream
    }

    /// How long the server remembers message ids to drop re-sent batches (default 2 minutes);
    /// used when the stream is created.
    #[must_use]
    pub fn duplicate_window(mut self, window: Duration) -> JetStream {
        self.duplicate_window = window;
        self
    }

    /// How long the exporter waits for a publish acknowledgement before re-sending (default 2 s).
    #[must_use]
    pub fn ack_timeout(mut self, timeout: Duration) -> JetStream {
        self.ack_timeout = timeout;
        self
    }

    pub(crate) fn ack_timeout_value(&self) -> Duration {
        self.ack_timeout
    }

    /// The stream, created if missing.
    pub(crate) async fn stream(
        &self,
        context: &jetstream::Context,
        servers: &str,
        prefix: &str,
    ) -> Result<jetstream::stream::Stream, ConnectError> {
        context
            .get_or_create_stream(jetstream::stream::Config {
                name: self.stream.clone(),
                subjects: vec![format!("{prefix}.>")],
                storage: jetstream::stream::StorageType::File,
                duplicate_window: self.duplicate_window,
                ..Default::default()
            })
            .await
            .map_err(|e| {
                ConnectError::new(
                    servers,
                    ConnectErrorKind::JetStream,
                    format!("stream {} (is the server started with -js?): {e}", self.stream),
                )
            })
    }
}
