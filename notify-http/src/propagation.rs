//! W3C trace context and baggage in and out of HTTP headers, through notify-core's
//! `trace_context`, whether or not anybody listens.

use http::{HeaderMap, HeaderValue};
use notify_core::context::Propagated;
use notify_core::event::EventId;
use notify_core::trace_context::{self, TraceFlags, TraceParent, TraceState};
use notify_core::{Context, Handle};

/// The trace a served request continues, and what it propagates: the incoming `traceparent`'s
/// remote parent with its flags, `tracestate` and the `baggage` when `continue_trace` (a
/// malformed or absent `traceparent` is counted by notify-core and starts a new trace); `None`
/// for a new random trace (Level 2's random flag set) with no parent and no `tracestate`, which
/// the caller starts ([`Context::new_trace`], or a scope of one), the `baggage` kept.
#[inline]
pub(crate) fn incoming(headers: &HeaderMap, continue_trace: bool) -> (Option<Context>, Propagated) {
    if !continue_trace {
        return (None, Propagated::new());
    }
    let (context, propagated) = trace_context::extract_propagated(headers);
    ((!context.is_none()).then_some(context), propagated)
}

/// `propagated` made to hold the trace flags of `context`'s trace (Level 2's random flag), for
/// events under the request's event, whose frames do not carry it.
pub(crate) fn for_events(context: &Context, propagated: Propagated) -> Propagated {
    match context.trace_id() {
        Some(trace) if context.has_random_trace_id() && propagated.trace_id() != Some(trace) => {
            let baggage = propagated.baggage().clone();
            Propagated::for_trace(trace, TraceFlags::RANDOM, TraceState::new()).with_baggage(baggage)
        }
        _ => propagated,
    }
}

/// The `traceresponse` of a served request: its trace, `span` (its event, or a fresh id for a
/// request nobody records) and its flags.
pub(crate) fn traceresponse(context: &Context, span: EventId, propagated: &Propagated) -> Option<HeaderValue> {
    let trace = context.trace_id()?;
    let flags = TraceFlags::NONE
        .with_sampled(context.is_sampled() != Some(false))
        .with_random(context.has_random_trace_id() || propagated.flags_for(trace).is_random());
    HeaderValue::from_bytes(&TraceParent::new(trace, span, flags)?.to_bytes()).ok()
}

/// Sets the headers of a call that is an event: `traceparent` names the event of `handle`
/// (started), with its trace's flags; `tracestate` (with `own_entry`, when given, first: the
/// vendor's key and the event id as value) and `baggage` from the current scope.
pub(crate) fn inject_event(headers: &mut HeaderMap, handle: &Handle, own_entry: Option<&str>) {
    // Where the call is made: an attached context (a request nobody records) knows whether its
    // trace id is random; the call's own event frame does not.
    let outer = Context::current();
    let _entered = handle.enter();
    let context = Context::current();
    let mut propagated = Propagated::current();
    let (Some(trace), Some(id)) = (context.trace_id(), context.event_id()) else {
        return;
    };
    let random = match outer.trace_id() {
        Some(outer_trace) => outer_trace == trace && outer.has_random_trace_id(),
        // A call that starts its trace: the trace id is notify's, random.
        None => true,
    };
    let context = context.with_random_trace_id(random);
    if let Some(key) = own_entry {
        let state = propagated.state_for(trace).cloned().unwrap_or_default();
        if let Ok(state) = state.with(key, &id.to_string()) {
            let flags = propagated.flags_for(trace);
            let baggage = propagated.baggage().clone();
            propagated = Propagated::for_trace(trace, flags, state).with_baggage(baggage);
        }
    }
    trace_context::inject_propagated(&context, &propagated, headers);
}

/// Sets the headers of a call nobody records: the current trace (a new one when there is none)
/// continued through a non-recording span, a fresh random parent id for this call, the current
/// trace's flags, `tracestate` and baggage.
pub(crate) fn inject_unrecorded(headers: &mut HeaderMap) {
    let current = Context::current();
    let (trace, sampled, random) = match current.trace_id() {
        Some(trace) => (
            trace,
            current.is_sampled() != Some(false),
            current.has_random_trace_id(),
        ),
        None => {
            let trace = Context::new_trace().trace_id().expect("a new trace has a trace id");
            (trace, true, true)
        }
    };
    let span = Context::remote(trace, trace_context::new_span_id(), sampled).with_random_trace_id(random);
    trace_context::inject_propagated(&span, &Propagated::current(), headers);
}
