//! The facts of one finished event a structured line is made of, and how they are shown.

use std::time::Duration;

use notify_core::{event::EventId, event::Location, event::Outcome, Payload, TraceId};

/// The facts of one finished event a line is made of.
pub(crate) struct Facts<'a> {
    pub(crate) name: &'a str,
    pub(crate) id: EventId,
    pub(crate) parent_id: Option<EventId>,
    pub(crate) trace_id: Option<TraceId>,
    pub(crate) location: Option<&'static Location>,
    pub(crate) duration: Option<Duration>,
    pub(crate) outcome: Outcome,
    pub(crate) payload: &'a Payload,
}

/// An event id as W3C writes a span id: 16 lowercase hex digits.
pub(crate) struct SpanHex(pub(crate) EventId);

impl std::fmt::Display for SpanHex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:016x}", self.0.get())
    }
}

/// Milliseconds with microsecond precision.
pub(crate) fn millis(duration: Duration) -> f64 {
    (duration.as_micros() as f64) / 1000.0
}

/// `file:line`.
pub(crate) struct LocationText(pub(crate) &'static Location);

impl std::fmt::Display for LocationText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.0.file(), self.0.line())
    }
}

/// `"NaN"`, `"inf"` or `"-inf"`: a non-finite float as text.
pub(crate) fn non_finite(f: f64) -> &'static str {
    if f.is_nan() {
        "NaN"
    } else if f > 0.0 {
        "inf"
    } else {
        "-inf"
    }
}
