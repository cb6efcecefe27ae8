//! The keys of a structured line ([`Keys`], [`LineKey`]) and where payload and tags go
//! ([`Placement`]).

use std::borrow::Cow;

/// Where a group of fields (the payload, the tags) goes in a line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Under one key: a JSON object, or dotted keys `key.field=` in logfmt.
    Nested(Cow<'static, str>),
    /// Beside the standard keys. A field whose name is taken (a standard key of the line, a nested
    /// group's key, a field claimed before it) is written as `payload.<name>` (or `tags.<name>`)
    /// instead, or with a `~N` suffix when that is taken too, so it cannot overwrite the event's
    /// own facts or another field (see the module docs, "Unique keys").
    Flat,
    /// Not written.
    Omit,
}

/// The facts every line can have, each under a key that [`Keys`] names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LineKey {
    /// The time the line is written, RFC 3339 UTC with microseconds (`2026-12-03T19:03:01.123456Z`).
    /// Default key `timestamp`, written `time` in logfmt.
    Time,
    /// The level (`"DEBUG"` in JSON, `debug` in logfmt). Default key `level`.
    Level,
    /// The event name. Default key `event`.
    Event,
    /// The event's duration in milliseconds, a number with microsecond precision (`0.412`); left
    /// out when unknown. Default key `duration_ms`.
    Duration,
    /// `completed`, `panicked` or `cancelled` ([`Outcome::as_str`](notify_core::event::Outcome::as_str)). Default key `outcome`.
    Outcome,
    /// The trace id, 32 lowercase hex digits (W3C trace-context). Default key `trace_id`.
    TraceId,
    /// The event id, 16 lowercase hex digits (the W3C / OpenTelemetry span id). Default key `span_id`.
    SpanId,
    /// The parent's event id, 16 hex digits; left out for a root. Default key `parent_id`.
    ParentId,
    /// `file:line` of the instrumented code; left out when unknown. Default key `location`.
    Location,
}

impl LineKey {
    /// Every fact, in line order.
    pub const ALL: [LineKey; 9] = [
        LineKey::Time,
        LineKey::Level,
        LineKey::Event,
        LineKey::Duration,
        LineKey::Outcome,
        LineKey::TraceId,
        LineKey::SpanId,
        LineKey::ParentId,
        LineKey::Location,
    ];

    /// The default key.
    pub const fn default_name(self) -> &'static str {
        match self {
            LineKey::Time => DEFAULT_TIME,
            LineKey::Level => "level",
            LineKey::Event => "event",
            LineKey::Duration => "duration_ms",
            LineKey::Outcome => "outcome",
            LineKey::TraceId => "trace_id",
            LineKey::SpanId => "span_id",
            LineKey::ParentId => "parent_id",
            LineKey::Location => "location",
        }
    }
}

/// The names of a line's keys (a fact without a name is not written) and where payload and tags
/// go. [`Keys::default`] gives the names of the module example. Names that collide (two facts
/// renamed alike, a nested group under a fact's key) are made unique when the logger is built, by
/// a `~N` suffix on the later one in line order (see the module docs, "Unique keys"); [`Keys::name`]
/// gives the name as set.
///
/// ```
/// use notify_log::{Keys, LineKey, Placement};
/// let keys = Keys::default().rename(LineKey::Time, "ts").omit(LineKey::Location).payload(Placement::Flat);
/// assert_eq!(keys.name(LineKey::Time), Some("ts"));
/// assert_eq!(keys.name(LineKey::Location), None);
/// assert_eq!(keys.name(LineKey::TraceId), Some("trace_id"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Keys {
    names: [Option<Cow<'static, str>>; 9],
    tags: Placement,
    payload: Placement,
}

impl Default for Keys {
    /// Each fact under its [`LineKey::default_name`]; tags under `tags`, payload under `payload`.
    fn default() -> Keys {
        Keys {
            names: LineKey::ALL.map(|k| Some(Cow::Borrowed(k.default_name()))),
            tags: Placement::Nested(Cow::Borrowed("tags")),
            payload: Placement::Nested(Cow::Borrowed("payload")),
        }
    }
}

/// The default time key; logfmt writes it as `time`.
pub(crate) const DEFAULT_TIME: &str = "timestamp";

impl Keys {
    /// Writes `fact` under `name`.
    #[must_use]
    pub fn rename(mut self, fact: LineKey, name: impl Into<Cow<'static, str>>) -> Keys {
        self.names[fact as usize] = Some(name.into());
        self
    }

    /// Leaves `fact` out of every line.
    #[must_use]
    pub fn omit(mut self, fact: LineKey) -> Keys {
        self.names[fact as usize] = None;
        self
    }

    /// The key `fact` is written under; `None` when it is left out.
    pub fn name(&self, fact: LineKey) -> Option<&str> {
        self.names[fact as usize].as_deref()
    }

    /// Where the tags of the event's scope go (default: nested under `tags`; nothing is written
    /// when there are none).
    #[must_use]
    pub fn tags(mut self, placement: Placement) -> Keys {
        self.tags = placement;
        self
    }

    /// Where the payload's fields go (default: nested under `payload`).
    #[must_use]
    pub fn payload(mut self, placement: Placement) -> Keys {
        self.payload = placement;
        self
    }

    /// Where the tags go.
    pub(crate) fn tags_placement(&self) -> &Placement {
        &self.tags
    }

    /// Where the payload goes.
    pub(crate) fn payload_placement(&self) -> &Placement {
        &self.payload
    }
}
