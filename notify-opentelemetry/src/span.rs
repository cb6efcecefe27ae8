//! One finished notify [`Event`] as one OpenTelemetry [`SpanData`].

use std::borrow::Cow;

use notify_core::{
    event::{EventId, Outcome},
    payload::EXCEPTION_KEY,
    Event, Value,
};
use opentelemetry::trace::{SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState};
use opentelemetry::{InstrumentationScope, KeyValue, Value as OtelValue};
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanLinks};

/// The OpenTelemetry span id of a notify event id (its 8 big-endian bytes).
///
/// ```
/// assert_eq!(notify_opentelemetry::span_id(notify_core::event::EventId::new(1)).to_string(), "0000000000000001");
/// ```
pub fn span_id(event_id: EventId) -> SpanId {
    SpanId::from_bytes(event_id.get().to_be_bytes())
}

/// The OpenTelemetry `TraceState` of `event`'s W3C `tracestate`. OpenTelemetry's key rules are
/// Level 1's and it refuses a whole list for one key it does not accept, so a list it refuses
/// keeps, in order, each member it accepts alone: one Level 2 key costs that member, not the
/// caller's whole trace state.
fn trace_state(event: &Event) -> TraceState {
    let state = event.trace_state();
    if state.is_empty() {
        return TraceState::default();
    }
    if let Ok(whole) = state.as_str().parse() {
        return whole;
    }
    let accepted = state
        .members()
        .filter(|&(key, value)| TraceState::from_key_value([(key, value)]).is_ok());
    TraceState::from_key_value(accepted).unwrap_or_default()
}

/// The OpenTelemetry trace id of a notify trace id (the same 16 bytes: both are W3C trace ids).
///
/// ```
/// let trace = notify_core::TraceId::new(0xabc).unwrap();
/// assert_eq!(notify_opentelemetry::trace_id(trace).to_string(), "00000000000000000000000000000abc");
/// ```
pub fn trace_id(trace: notify_core::TraceId) -> TraceId {
    TraceId::from_bytes(trace.to_bytes())
}

/// The span of `event`, as [`OpenTelemetryExporter`](crate::OpenTelemetryExporter) hands it to its
/// span processor:
///
/// | span | from the event |
/// |---|---|
/// | trace id, span id | [`Event::trace_id`], [`Event::id`] ([`trace_id`], [`span_id`]); sampled |
/// | trace state | [`Event::trace_state`] (the W3C `tracestate` of the incoming request), without the members OpenTelemetry's `TraceState` refuses (its key rules are Level 1's; the other members are kept, in order) |
/// | parent span id | [`Event::parent_id`] (invalid for a root); `parent_span_is_remote` from [`Event::parent_is_remote`] (a parent read from a W3C `traceparent`) |
/// | name | the event name |
/// | kind | the payload's [`KIND_KEY`] (`"otel.kind"`): `"server"`, `"client"`, `"producer"`, `"consumer"` or `"internal"` (ASCII case ignored, as tracing-opentelemetry reads it); `Internal` when absent or anything else. The entry itself is not an attribute |
/// | start, end | [`Event::start_time`], [`Event::end_time`] |
/// | attributes | each payload entry under its key: booleans, signed integers, floats and strings as such; an unsigned integer as a signed one when it fits, else as text; a duration as integer nanoseconds; anything else as its text (a list or map nested deeper than [`Value::MAX_NESTING`] written `…` there). The exception entry is not an attribute (see below) |
/// | status | `Error` with the exception's message when the payload has an [`EXCEPTION_KEY`] entry; else `Error` with the outcome's word (`"panicked"`, `"cancelled"`) when the outcome is not `completed`; else `Unset` (OpenTelemetry's advice for success) |
/// | events | an `exception` event at the end time with `exception.type` and `exception.message` when the payload has an exception |
/// | `notify.outcome` | an attribute, only when the outcome is not `completed` (`"panicked"`, `"cancelled"`) |
/// | `code.file.path`, `code.line.number`, `code.module.name` | the event's source location ([`Event::location`]: events of callsites and of `#[instrument_event]`), under the names tracing-opentelemetry uses |
///
/// ```
/// use notify_core::{Event, Payload};
/// use std::time::Instant;
///
/// let now = Instant::now();
/// let event = Event::new("query.sql", now, now, Payload::new().with("rows", 3_u64));
/// let scope = opentelemetry::InstrumentationScope::builder("notify").build();
/// let span = notify_opentelemetry::span_data(&event, &scope);
/// assert_eq!(span.name, "query.sql");
/// assert_eq!(span.span_context.span_id(), notify_opentelemetry::span_id(event.id()));
/// assert_eq!(span.attributes, [opentelemetry::KeyValue::new("rows", 3_i64)]);
/// ```
pub fn span_data(event: &Event, scope: &InstrumentationScope) -> SpanData {
    let mut span_kind = SpanKind::Internal;
    let span_context = SpanContext::new(
        trace_id(event.trace_id()),
        span_id(event.id()),
        TraceFlags::SAMPLED,
        false,
        trace_state(event),
    );
    let mut attributes = Vec::with_capacity(event.payload().len() + 4);
    let mut exception = None;
    for (key, value) in event.payload().entries() {
        match value {
            Value::Exception { type_name, message } if key.as_str() == EXCEPTION_KEY => {
                exception = Some((type_name.clone(), message.clone()));
            }
            value if key.as_str() == KIND_KEY => span_kind = kind(value),
            other => {
                let key = key.as_static().map_or_else(
                    || opentelemetry::Key::from(key.as_str().to_owned()),
                    opentelemetry::Key::from_static_str,
                );
                attributes.push(KeyValue::new(key, attribute(other)));
            }
        }
    }
    let mut events = SpanEvents::default();
    let status = match (&exception, event.outcome()) {
        (Some((_, message)), _) => Status::error(message.clone()),
        (None, Outcome::Completed) => Status::Unset,
        (None, other) => Status::error(other.as_str()),
    };
    if let Some((type_name, message)) = exception {
        events.events.push(opentelemetry::trace::Event::new(
            "exception",
            event.end_time(),
            vec![
                KeyValue::new("exception.type", type_name.into_owned()),
                KeyValue::new("exception.message", message),
            ],
            0,
        ));
    }
    if let Some(location) = event.location() {
        attributes.push(KeyValue::new("code.file.path", location.file()));
        attributes.push(KeyValue::new("code.line.number", i64::from(location.line())));
        attributes.push(KeyValue::new("code.module.name", location.module_path()));
    }
    match event.outcome() {
        Outcome::Completed => {}
        other => attributes.push(KeyValue::new("notify.outcome", other.as_str())),
    }
    SpanData {
        span_context,
        parent_span_id: event.parent_id().map_or(SpanId::INVALID, span_id),
        parent_span_is_remote: event.parent_is_remote(),
        span_kind,
        name: Cow::Owned(event.name().to_owned()),
        start_time: event.start_time(),
        end_time: event.end_time(),
        attributes,
        dropped_attributes_count: 0,
        events,
        links: SpanLinks::default(),
        status,
        instrumentation_scope: scope.clone(),
    }
}

/// The payload key whose value chooses the span kind (tracing-opentelemetry's name for it).
///
/// ```
/// use notify_core::{Event, Payload};
/// let now = std::time::Instant::now();
/// let event = Event::new("request.http", now, now, Payload::new().with(notify_opentelemetry::KIND_KEY, "server"));
/// let scope = opentelemetry::InstrumentationScope::builder("notify").build();
/// let span = notify_opentelemetry::span_data(&event, &scope);
/// assert_eq!(span.span_kind, opentelemetry::trace::SpanKind::Server);
/// assert!(span.attributes.is_empty());
/// ```
pub const KIND_KEY: &str = "otel.kind";

/// The span kind a payload value names; `Internal` for anything else.
fn kind(value: &Value) -> SpanKind {
    let Value::Str(text) = value else {
        return SpanKind::Internal;
    };
    let text: &str = text.as_ref();
    [
        ("server", SpanKind::Server),
        ("client", SpanKind::Client),
        ("producer", SpanKind::Producer),
        ("consumer", SpanKind::Consumer),
    ]
    .into_iter()
    .find(|(word, _)| text.eq_ignore_ascii_case(word))
    .map_or(SpanKind::Internal, |(_, kind)| kind)
}

/// A payload value as an attribute value, typed where OpenTelemetry has the type.
fn attribute(value: &Value) -> OtelValue {
    match value {
        Value::Bool(v) => OtelValue::Bool(*v),
        Value::I64(v) => OtelValue::I64(*v),
        Value::U64(v) => i64::try_from(*v).map_or_else(|_| OtelValue::from(v.to_string()), OtelValue::I64),
        Value::F64(v) => OtelValue::F64(*v),
        // Static and shared text is kept as it is (OpenTelemetry holds both without a copy).
        Value::Str(v) => match (v.as_static(), v.as_shared()) {
            (Some(v), _) => OtelValue::from(v),
            (None, Some(shared)) => OtelValue::from(shared.clone()),
            (None, None) => OtelValue::from(v.to_string()),
        },
        Value::Duration(d) => OtelValue::I64(i64::try_from(d.as_nanos()).unwrap_or(i64::MAX)),
        // Lists and maps as `Value`'s text, which cuts nesting deeper than `Value::MAX_NESTING`
        // (`…`): written by recursion on this thread's stack, a value nested thousands deep would
        // overflow it.
        other => OtelValue::from(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use notify_core::payload::Text;
    use notify_core::Value;
    use opentelemetry::Value as OtelValue;

    use super::attribute;

    /// Static and shared text reach OpenTelemetry without a copy: the attribute reads the same
    /// bytes; other text is copied into the attribute.
    #[test]
    fn static_and_shared_text_become_attributes_without_a_copy() {
        let shared: Arc<str> = Arc::from("SELECT * FROM books WHERE author_id = $1 ORDER BY title");
        let address = |value: &OtelValue| match value {
            OtelValue::String(s) => s.as_str().as_ptr(),
            other => panic!("not a string: {other:?}"),
        };
        let from_shared = attribute(&Value::Str(Text::from(shared.clone())));
        assert_eq!(address(&from_shared), shared.as_ptr());
        static TABLE: &str = "books";
        assert_eq!(
            address(&attribute(&Value::Str(Text::from_static(TABLE)))),
            TABLE.as_ptr()
        );
        let owned = Text::new("a text longer than the inline capacity of forty bytes");
        let copied = attribute(&Value::Str(owned.clone()));
        assert_ne!(address(&copied), owned.as_str().as_ptr());
        assert_eq!(copied.as_str(), owned.as_str());
    }

    /// The event's W3C tracestate becomes the span context's trace state.
    #[test]
    fn i45_2_the_tracestate_of_the_event_is_on_the_span() {
        use notify_core::{trace_context::TraceState, Event, Payload};
        let now = std::time::Instant::now();
        let scope = opentelemetry::InstrumentationScope::builder("notify").build();
        let state: TraceState = "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE".parse().unwrap();
        let event = Event::new("request.http", now, now, Payload::new()).with_trace_state(state);
        let span = super::span_data(&event, &scope);
        let otel = span.span_context.trace_state();
        assert_eq!(otel.header(), "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE");
        assert_eq!(otel.get("congo"), Some("t61rcWkgMzE"));
        let none = super::span_data(&Event::new("a", now, now, Payload::new()), &scope);
        assert_eq!(none.span_context.trace_state().header(), "");
    }

    /// A Level 2 key OpenTelemetry's Level 1 parser refuses (a system id of 14 characters) costs
    /// that member only.
    #[test]
    fn i45_2_a_member_opentelemetry_refuses_leaves_the_others() {
        use notify_core::{trace_context::TraceState, Event, Payload};
        let now = std::time::Instant::now();
        let scope = opentelemetry::InstrumentationScope::builder("notify").build();
        let state: TraceState = "rojo=1,t@abcdefghijklmn=2,congo=3".parse().unwrap();
        assert_eq!(state.len(), 3, "a valid Level 2 list");
        assert!("t@abcdefghijklmn=2"
            .parse::<opentelemetry::trace::TraceState>()
            .is_err());
        let event = Event::new("request.http", now, now, Payload::new()).with_trace_state(state);
        let span = super::span_data(&event, &scope);
        assert_eq!(span.span_context.trace_state().header(), "rojo=1,congo=3");
    }
}
