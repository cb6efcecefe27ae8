//! W3C trace context in and out of HTTP headers, through notify-core's `trace_context`.

use http::HeaderMap;
use notify_core::{trace_context, Context, Handle};

/// The context of an incoming request's `traceparent`, when valid (a remote parent). Absent or
/// malformed: `None`, the request starts a new trace; notify-core counts which
/// (`trace_context::stats()`).
pub(crate) fn extract(headers: &HeaderMap) -> Option<Context> {
    let context = trace_context::extract(headers);
    (!context.is_none()).then_some(context)
}

/// Sets the `traceparent` of an outgoing call to the event of `handle` (started), with its
/// trace's sampled flag.
pub(crate) fn inject(headers: &mut HeaderMap, handle: &Handle) {
    let _entered = handle.enter();
    trace_context::inject(&Context::current(), headers);
}

/// Sets the `traceparent` of an outgoing call to the current event, when there is one (a
/// `traceparent` the caller set is kept otherwise).
pub(crate) fn inject_current(headers: &mut HeaderMap) {
    let context = Context::current();
    if context.event_id().is_some() {
        trace_context::inject(&context, headers);
    }
}
