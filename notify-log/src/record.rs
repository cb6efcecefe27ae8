//! Lines for what is not an event — a `log` record, a tracing event — in a [`StructuredLog`]'s
//! format, so an application's own lines and its events make one stream ([`write_record`]), and
//! the mark that tells a logger a record is an event's finished line ([`is_event_line`]).
//!
//! A record line has the time, the level, the `log` target, the message, the trace id and span id
//! of the current context (the innermost unfinished event: the request a handler serves), the
//! source location and the record's fields, under the same keys as an event's line ([`Keys`]).
//! JSON:
//!
//! ```text
//! {"timestamp":"2026-12-07T02:31:07.004211Z","level":"WARN","target":"catalog","message":"price missing","trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"00f067aa0ba902b7","location":"src/main.rs:41","fields":{"book":7}}
//! ```
//!
//! logfmt:
//!
//! ```text
//! time=2026-12-07T02:31:07.004211Z level=warn target=catalog message="price missing" trace_id=4bf92f3577b34da6a3ce929d0e0e4736 span_id=00f067aa0ba902b7 location=src/main.rs:41 fields.book=7
//! ```
//!
//! [`StructuredLog`]: crate::StructuredLog

use std::cell::Cell;
use std::time::SystemTime;

use log::Level;
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

use notify_core::context::Tags;
use notify_core::{Context, Payload};

use crate::facts::SpanHex;
use crate::format::Format;
use crate::json::{JsonValue, Rfc3339};
use crate::keys::{Keys, LineKey, DEFAULT_TIME};
use crate::line_keys::LineNames;
use crate::logfmt::Logfmt;

/// Key of the current scope's tags (`tags`, a JSON object or `tags.<name>=` in logfmt).
const TAGS_KEY: &str = "tags";

/// Key of a record's text (`message`), as tracing-subscriber's JSON lines name it.
pub const MESSAGE_KEY: &str = "message";
/// Key of a record's `log` target (`target`).
pub const TARGET_KEY: &str = "target";
/// Key of a record's fields (`fields`, a JSON object or `fields.<name>=` in logfmt), as
/// tracing-subscriber's JSON lines name them.
pub const FIELDS_KEY: &str = "fields";

thread_local! {
    static EMITTING: Cell<bool> = const { Cell::new(false) };
}

/// True while a [`StructuredLogger`](crate::StructuredLogger) hands one of its lines to the `log`
/// facade on this thread: the record's message is then a finished line (JSON or logfmt) that a
/// logger writes as it is, where any other record is the application's own and gets formatted
/// ([`write_record`]).
pub fn is_event_line() -> bool {
    EMITTING.with(Cell::get)
}

/// Runs `f` marked as the hand-off of a finished line (see [`is_event_line`]); the mark is
/// restored even when the logger panics.
pub(crate) fn emitting<T>(f: impl FnOnce() -> T) -> T {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            EMITTING.with(|e| e.set(self.0));
        }
    }
    let _restore = Restore(EMITTING.with(|e| e.replace(true)));
    f()
}

/// What a record line says (see the module docs).
#[derive(Clone, Copy, Debug)]
pub struct RecordLine<'a> {
    /// The record's level.
    pub level: Level,
    /// Its `log` target (a tracing event's target).
    pub target: &'a str,
    /// Its text.
    pub message: &'a str,
    /// Its other fields (a tracing event's fields but `message`; empty for a `log` record).
    pub fields: &'a Payload,
    /// `file:line` when known.
    pub location: Option<(&'a str, u32)>,
}

/// Writes `line` in `format` (without a newline) into `out`, with the trace id and span id of the
/// current context ([`Context::current`]) and the current scope's tags. The time, level, trace id,
/// span id and location are written under `keys`' names for them (left out where `keys` omits
/// them), then [`TARGET_KEY`], [`MESSAGE_KEY`], the tags under `tags` and the fields under
/// [`FIELDS_KEY`]: nested, so no field can shadow a fact. In logfmt a field that is not text or a
/// number is written as quoted JSON.
///
/// ```
/// use notify_core::Payload;
/// use notify_log::structured::{write_record, Format, Keys, RecordLine};
/// let fields = Payload::new().with("book", 7_u64);
/// let line = RecordLine { level: log::Level::Warn, target: "catalog", message: "price missing", fields: &fields, location: None };
/// let mut out = Vec::new();
/// write_record(Format::Logfmt, &Keys::default(), &line, &mut out);
/// let text = String::from_utf8(out).unwrap();
/// assert!(text.contains(r#"level=warn target=catalog message="price missing" fields.book=7"#), "{text}");
/// ```
pub fn write_record(format: Format, keys: &Keys, line: &RecordLine<'_>, out: &mut Vec<u8>) {
    let now = SystemTime::now();
    let context = Context::current();
    Tags::with_current(|tags| match format {
        Format::Json => {
            let json = JsonRecord {
                keys,
                now,
                line,
                context: &context,
                tags,
            };
            serde_json::to_writer(&mut *out, &json).expect("a Vec accepts every write");
        }
        Format::Logfmt => {
            let names = LineNames::new(keys, true);
            let mut w = Logfmt::new(out, &names);
            if let Some(k) = keys.name(LineKey::Time) {
                let k = if k == DEFAULT_TIME { "time" } else { k };
                w.raw(k, &humantime::format_rfc3339_micros(now).to_string());
            }
            if let Some(k) = keys.name(LineKey::Level) {
                w.raw(k, &line.level.as_str().to_ascii_lowercase());
            }
            w.text(TARGET_KEY, line.target);
            w.text(MESSAGE_KEY, line.message);
            if let (Some(k), Some(t)) = (keys.name(LineKey::TraceId), context.trace_id()) {
                w.raw(k, &t.to_string());
            }
            if let (Some(k), Some(id)) = (keys.name(LineKey::SpanId), context.event_id()) {
                w.raw(k, &SpanHex(id).to_string());
            }
            if let (Some(k), Some((file, n))) = (keys.name(LineKey::Location), line.location) {
                w.text(k, &format!("{file}:{n}"));
            }
            let fields = tags
                .iter()
                .map(|(k, v)| (TAGS_KEY, k, v))
                .chain(line.fields.iter().map(|(k, v)| (FIELDS_KEY, k, v)));
            for (group, k, v) in fields {
                let key = format!("{group}.{k}");
                match v {
                    notify_core::Value::Str(text) => w.text(&key, text),
                    other => w.text(&key, &serde_json::to_string(&JsonValue(other)).unwrap_or_default()),
                }
            }
        }
    });
}

struct JsonRecord<'a> {
    keys: &'a Keys,
    now: SystemTime,
    line: &'a RecordLine<'a>,
    context: &'a Context,
    tags: &'a Tags,
}

/// Key-values written as one JSON object.
struct Object<'a, I>(std::cell::RefCell<Option<I>>, std::marker::PhantomData<&'a ()>);

impl<'a, I: Iterator<Item = (&'a str, &'a notify_core::Value)>> Serialize for Object<'a, I> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        for (k, v) in self.0.borrow_mut().take().into_iter().flatten() {
            map.serialize_entry(k, &JsonValue(v))?;
        }
        map.end()
    }
}

fn object<'a, I: Iterator<Item = (&'a str, &'a notify_core::Value)>>(fields: I) -> Object<'a, I> {
    Object(std::cell::RefCell::new(Some(fields)), std::marker::PhantomData)
}

impl Serialize for JsonRecord<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (keys, line) = (self.keys, self.line);
        let mut map = serializer.serialize_map(None)?;
        if let Some(k) = keys.name(LineKey::Time) {
            map.serialize_entry(k, &Rfc3339(self.now))?;
        }
        if let Some(k) = keys.name(LineKey::Level) {
            map.serialize_entry(k, line.level.as_str())?;
        }
        map.serialize_entry(TARGET_KEY, line.target)?;
        map.serialize_entry(MESSAGE_KEY, line.message)?;
        if let (Some(k), Some(t)) = (keys.name(LineKey::TraceId), self.context.trace_id()) {
            map.serialize_entry(k, &t.to_string())?;
        }
        if let (Some(k), Some(id)) = (keys.name(LineKey::SpanId), self.context.event_id()) {
            map.serialize_entry(k, &SpanHex(id).to_string())?;
        }
        if let (Some(k), Some((file, n))) = (keys.name(LineKey::Location), line.location) {
            map.serialize_entry(k, &format!("{file}:{n}"))?;
        }
        if !self.tags.is_empty() {
            map.serialize_entry(TAGS_KEY, &object(self.tags.iter()))?;
        }
        if !line.fields.is_empty() {
            map.serialize_entry(FIELDS_KEY, &object(line.fields.iter()))?;
        }
        map.end()
    }
}
