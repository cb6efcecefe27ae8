//! [`SinkError`]: why a sink refused a batch.

use std::fmt;

/// Why a [`Sink`](crate::Sink) refused a batch (or failed to flush or shut down): its message, as the drop
/// report shows it ([`DropReport::last_error`](crate::DropReport::last_error)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SinkError {
    message: String,
}

impl SinkError {
    /// An error with `message` (foreign text is fine: reports escape it).
    pub fn new(message: impl Into<String>) -> SinkError {
        SinkError {
            message: message.into(),
        }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for SinkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for SinkError {}

impl From<String> for SinkError {
    fn from(message: String) -> SinkError {
        SinkError::new(message)
    }
}

impl From<&str> for SinkError {
    fn from(message: &str) -> SinkError {
        SinkError::new(message)
    }
}
