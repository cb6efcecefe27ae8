//! tracing field values into notify payload values.

use std::fmt;

use notify_core::{payload::Text, Payload, Value};
use tracing_core::field::{Field, Visit};

/// Collects the fields of a span, a `record` call or an event into a [`Payload`]: integers,
/// floats, booleans and strings keep their type, 128-bit integers that do not fit 64 bits and
/// `Debug`/`Display` values become text, an error (`record_error`) becomes its `Display` text.
/// A field named `message` (what `info!("…")` records) is kept under `message`.
pub(crate) struct PayloadVisitor<'a> {
    pub(crate) payload: &'a mut Payload,
    /// The text of a field named `error`, when one was recorded (for the span's `exception`).
    pub(crate) error: Option<String>,
}

impl<'a> PayloadVisitor<'a> {
    pub(crate) fn new(payload: &'a mut Payload) -> PayloadVisitor<'a> {
        PayloadVisitor { payload, error: None }
    }

    fn put(&mut self, field: &Field, value: Value) {
        if field.name() == ERROR_FIELD {
            self.error = Some(value.to_string());
        }
        self.payload.insert(field.name(), value);
    }
}

/// The field name `#[tracing::instrument(err)]` records an error under.
pub(crate) const ERROR_FIELD: &str = "error";

impl Visit for PayloadVisitor<'_> {
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.put(field, Value::F64(value));
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, Value::I64(value));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put(field, Value::U64(value));
    }

    fn record_i128(&mut self, field: &Field, value: i128) {
        let value = i64::try_from(value).map_or_else(|_| Value::display(&value), Value::I64);
        self.put(field, value);
    }

    fn record_u128(&mut self, field: &Field, value: u128) {
        let value = u64::try_from(value).map_or_else(|_| Value::display(&value), Value::U64);
        self.put(field, value);
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(field, Value::Bool(value));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, Value::Str(Text::new(value)));
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        // Through `&dyn Error`'s own Display impl: an upcast to `dyn Display` needs Rust 1.86.
        self.put(field, Value::display(&value));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        // `info!("text {x}")` records `message` as `format_args!`, whose Debug is the text itself.
        self.put(field, Value::debug(value));
    }
}
