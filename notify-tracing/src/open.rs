//! [`Open`]: a bridged span between its notify event's start and finish, and [`FieldValue`], a
//! payload value as the tracing field value recorded on it.

use notify_core::{Payload, Value};
use tracing::Span;
use tracing_core::field::{self, DisplayValue, Value as TracingValue};

use crate::dyn_sites::DynSite;

/// An open bridged span.
pub(crate) struct Open {
    pub(crate) span: Span,
    pub(crate) site: &'static DynSite,
    /// How many payload entries there were at start (recorded then; at finish only the entries
    /// after them, which the block added, are recorded).
    pub(crate) started: usize,
}

impl Open {
    pub(crate) fn enter(&self) {
        self.span.with_subscriber(|(id, dispatch)| dispatch.enter(id));
    }

    pub(crate) fn exit(&self) {
        self.span.with_subscriber(|(id, dispatch)| dispatch.exit(id));
    }

    /// Records on the span the entries of the finished `payload` that the block added (those
    /// past `started`) and that the span's callsite declares, exits the span when it was
    /// `entered` on this thread, and drops it (tracing closes it when nothing else holds it).
    /// `true` when the block added a key the callsite does not declare: the caller declares it
    /// for the next events of the name.
    pub(crate) fn finish(self, payload: &Payload, entered: bool) -> bool {
        let mut missing = false;
        for (key, value) in payload.iter().skip(self.started) {
            if !self.site.keys().contains(&key) {
                missing = true;
                continue;
            }
            match FieldValue::of(value) {
                FieldValue::I64(v) => self.span.record(key, v),
                FieldValue::U64(v) => self.span.record(key, v),
                FieldValue::F64(v) => self.span.record(key, v),
                FieldValue::Bool(v) => self.span.record(key, v),
                FieldValue::Str(v) => self.span.record(key, v),
                FieldValue::Text(v) => self.span.record(key, v),
            };
        }
        if entered {
            self.exit();
        }
        missing && !self.site.overflow
    }
}

/// A payload value as a tracing field value: integers, floats, booleans and strings as such,
/// anything else as its `Display` text.
pub(crate) enum FieldValue<'a> {
    I64(i64),
    U64(u64),
    F64(f64),
    Bool(bool),
    Str(&'a str),
    Text(DisplayValue<&'a Value>),
}

impl<'a> FieldValue<'a> {
    pub(crate) fn of(value: &'a Value) -> FieldValue<'a> {
        match value {
            Value::I64(v) => FieldValue::I64(*v),
            Value::U64(v) => FieldValue::U64(*v),
            Value::F64(v) => FieldValue::F64(*v),
            Value::Bool(v) => FieldValue::Bool(*v),
            Value::Str(v) => FieldValue::Str(v),
            other => FieldValue::Text(field::display(other)),
        }
    }

    pub(crate) fn as_value(&self) -> &dyn TracingValue {
        match self {
            FieldValue::I64(v) => v,
            FieldValue::U64(v) => v,
            FieldValue::F64(v) => v,
            FieldValue::Bool(v) => v,
            FieldValue::Str(v) => v,
            FieldValue::Text(v) => v,
        }
    }
}
