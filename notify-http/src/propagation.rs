//! W3C trace context in and out of HTTP headers, through notify-core's `trace_context`.
//! (Wired to notify-core's functions once they land; until then nothing is read or written.)

use http::HeaderMap;
use notify_core::{Context, EventContext};

/// The context of an incoming request's `traceparent`, when valid.
pub(crate) fn extract(headers: &HeaderMap) -> Option<Context> {
    let _ = headers;
    None
}

/// Writes `event`'s `traceparent` into `headers`.
pub(crate) fn inject(headers: &mut HeaderMap, event: &EventContext) {
    let _ = (headers, event);
}

/// Writes the current context's `traceparent` into `headers`, when there is a current event.
pub(crate) fn inject_current(headers: &mut HeaderMap) {
    let _ = (headers, Context::current());
}
