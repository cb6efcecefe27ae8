//! One event as a formatting method sees it ([`LogEvent`]), and what its helpers display
//! ([`Styled`], [`Elapsed`]).

use std::cell::RefCell;
use std::fmt;
use std::time::Duration;

use super::Color;
use notify_core::escape::{Escaped, EscapedDisplay};
use notify_core::{context::Tags, event::EventId, Payload, TraceId, Value};

/// One event as a formatting method sees it: name, method, namespace, ids (event, parent, trace),
/// payload, duration, and AS::N's `color` helper.
///
/// # Missing keys are visible
///
/// A formatting method that returns `None` after [`LogEvent::get`] found no value for a key (the
/// `event.get("sql")?` pattern) does not lose its line: the log subscriber writes
/// `<event name> (<elapsed>)  [missing sql]` at the method's level instead. [`LogEvent::field`]
/// shows a value or `[missing <key>]` in place, for lines that should always be written whole.
///
/// ```
/// use notify_log::{Color, LogEvent};
/// use notify_core::Payload;
/// let payload = Payload::new().with("sql", "SELECT 1");
/// let event = LogEvent::new("query.db", &payload, Some(std::time::Duration::from_micros(420)));
/// assert_eq!((event.method(), event.namespace()), ("query", "db"));
/// assert_eq!(event.elapsed().to_string(), "0.4ms");
/// assert_eq!(event.color("Book Load", Some(Color::Cyan), true).to_string(), "Book Load");
/// ```
#[derive(Clone, Copy, Debug)]
pub struct LogEvent<'a> {
    name: &'a str,
    method: &'a str,
    namespace: &'a str,
    id: EventId,
    payload: &'a Payload,
    duration: Option<Duration>,
    color: bool,
    trace_id: Option<TraceId>,
    parent_id: Option<EventId>,
    /// Where [`LogEvent::get`] notes the keys it did not find (attached methods only).
    missing: Option<&'a RefCell<Vec<String>>>,
}

impl<'a> LogEvent<'a> {
    /// An event named `name` (split at its first dot into method and namespace) with colour off
    /// and event id 0: for testing formatting methods without a notifier.
    ///
    /// ```
    /// let payload = notify_core::Payload::new();
    /// let event = notify_log::LogEvent::new("request", &payload, None);
    /// assert_eq!((event.method(), event.namespace()), ("request", ""));
    /// ```
    pub fn new(name: &'a str, payload: &'a Payload, duration: Option<Duration>) -> LogEvent<'a> {
        let (method, namespace) = name.split_once('.').unwrap_or((name, ""));
        LogEvent::from_parts(name, method, namespace, EventId::new(0), payload, duration, false)
    }

    /// The event of an attached method: `method` and `namespace` come from its configuration.
    pub(super) fn from_parts(
        name: &'a str,
        method: &'a str,
        namespace: &'a str,
        id: EventId,
        payload: &'a Payload,
        duration: Option<Duration>,
        color: bool,
    ) -> LogEvent<'a> {
        LogEvent {
            name,
            method,
            namespace,
            id,
            payload,
            duration,
            color,
            trace_id: None,
            parent_id: None,
            missing: None,
        }
    }

    /// Sets the event's ids: its own, its parent's and its trace's (an attached subscriber sets
    /// them from the event; for testing formatting methods).
    ///
    /// ```
    /// use notify_core::{event::EventId, TraceId};
    /// let p = notify_core::Payload::new();
    /// let trace = TraceId::new(0xabc).unwrap();
    /// let event = notify_log::LogEvent::new("query.sql", &p, None).with_ids(EventId::new(2), Some(EventId::new(1)), Some(trace));
    /// assert_eq!((event.id(), event.parent_id(), event.trace_id()), (EventId::new(2), Some(EventId::new(1)), Some(trace)));
    /// assert_eq!(event.trace_id().unwrap().to_string(), "00000000000000000000000000000abc");
    /// ```
    #[must_use]
    pub fn with_ids(mut self, id: EventId, parent_id: Option<EventId>, trace_id: Option<TraceId>) -> LogEvent<'a> {
        self.id = id;
        self.parent_id = parent_id;
        self.trace_id = trace_id;
        self
    }

    /// Notes keys [`LogEvent::get`] does not find in `missing`.
    pub(super) fn noting_missing(mut self, missing: &'a RefCell<Vec<String>>) -> LogEvent<'a> {
        self.missing = Some(missing);
        self
    }

    /// The trace id (32 hex digits when displayed): shared by every event of one request. `None`
    /// only for a [`LogEvent::new`] without [`LogEvent::with_ids`].
    pub fn trace_id(&self) -> Option<TraceId> {
        self.trace_id
    }

    /// The parent event's id; `None` for a root.
    pub fn parent_id(&self) -> Option<EventId> {
        self.parent_id
    }

    /// The tags of the scope the event finished in ([`notify_core::context::tagged`]).
    ///
    /// ```
    /// let p = notify_core::Payload::new();
    /// let tags = notify_core::context::tagged([("request_id", "r-1")], || notify_log::LogEvent::new("query.sql", &p, None).tags());
    /// assert_eq!(tags.get("request_id").and_then(|v| v.as_str()), Some("r-1"));
    /// ```
    pub fn tags(&self) -> Tags {
        Tags::current()
    }

    /// Payload entry `key` as [`LogEvent::get`] shows it, or `[missing <key>]` when there is none:
    /// the line is written whole and the gap is visible.
    ///
    /// ```
    /// let p = notify_core::Payload::new().with("sql", "SELECT 1");
    /// let event = notify_log::LogEvent::new("query.sql", &p, None);
    /// assert_eq!(format!("{} {}", event.field("sql"), event.field("binds")), "SELECT 1 [missing binds]");
    /// ```
    pub fn field<'k>(&self, key: &'k str) -> Field<'a, 'k> {
        Field {
            value: self.payload.get(key),
            key,
        }
    }

    /// Turns colour on or off for [`LogEvent::color`] and [`LogEvent::elapsed`] (an attached
    /// subscriber sets it from its [`ColorChoice`]).
    ///
    /// ```
    /// use notify_log::{Color, LogEvent};
    /// let payload = notify_core::Payload::new();
    /// let event = LogEvent::new("query.db", &payload, None).with_color(true);
    /// assert_eq!(event.color("x", Some(Color::Red), false).to_string(), "\u{1b}[31mx\u{1b}[0m");
    /// ```
    ///
    /// [`ColorChoice`]: super::ColorChoice
    #[must_use]
    pub fn with_color(mut self, color: bool) -> LogEvent<'a> {
        self.color = color;
        self
    }

    /// The full event name, e.g. `"query.sql"`.
    ///
    /// ```
    /// let p = notify_core::Payload::new();
    /// assert_eq!(notify_log::LogEvent::new("query.sql", &p, None).name(), "query.sql");
    /// ```
    pub fn name(&self) -> &'a str {
        self.name
    }

    /// The method part of the name, e.g. `"query"`.
    ///
    /// ```
    /// let p = notify_core::Payload::new();
    /// assert_eq!(notify_log::LogEvent::new("query.sql", &p, None).method(), "query");
    /// ```
    pub fn method(&self) -> &'a str {
        self.method
    }

    /// The namespace part of the name, e.g. `"sql"`.
    ///
    /// ```
    /// let p = notify_core::Payload::new();
    /// assert_eq!(notify_log::LogEvent::new("query.db.replica", &p, None).namespace(), "db.replica");
    /// ```
    pub fn namespace(&self) -> &'a str {
        self.namespace
    }

    /// The event id (pairs `start` and `finish`; 0 for [`LogEvent::new`]).
    ///
    /// ```
    /// let p = notify_core::Payload::new();
    /// assert_eq!(notify_log::LogEvent::new("query.sql", &p, None).id().get(), 0);
    /// ```
    pub fn id(&self) -> EventId {
        self.id
    }

    /// The payload, including what the instrumented block added.
    ///
    /// ```
    /// let p = notify_core::Payload::new().with("rows", 3_u64);
    /// let event = notify_log::LogEvent::new("query.sql", &p, None);
    /// assert_eq!(event.payload().get("rows").and_then(|v| v.as_i64()), Some(3));
    /// ```
    pub fn payload(&self) -> &'a Payload {
        self.payload
    }

    /// The value of payload entry `key` as a log line shows it: its `Display`, escaped
    /// ([`Value::escaped`]), so a value typed by a user (an SQL bind, a path) cannot start a new
    /// line or send escape sequences to a terminal. Use [`LogEvent::payload`] for the raw value
    /// (numbers, `as_str`).
    ///
    /// ```
    /// let p = notify_core::Payload::new().with("name", "x\n[INFO  auth] admin logged in");
    /// let event = notify_log::LogEvent::new("query.sql", &p, None);
    /// assert_eq!(event.get("name").unwrap().to_string(), r"x\n[INFO  auth] admin logged in");
    /// assert!(event.get("rows").is_none());
    /// ```
    pub fn get(&self, key: &str) -> Option<EscapedDisplay<&'a Value>> {
        let value = self.payload.get(key);
        if let (None, Some(missing)) = (value, self.missing) {
            if let Ok(mut missing) = missing.try_borrow_mut() {
                if !missing.iter().any(|k| k == key) {
                    missing.push(key.to_owned());
                }
            }
        }
        value.map(Value::escaped)
    }

    /// Wall time from `start` to `finish` as measured by the log subscriber (monotonic clock);
    /// `None` when the event finished on another thread than it started (see the module docs).
    ///
    /// ```
    /// use std::time::Duration;
    /// let p = notify_core::Payload::new();
    /// let event = notify_log::LogEvent::new("query.sql", &p, Some(Duration::from_millis(2)));
    /// assert_eq!(event.duration(), Some(Duration::from_millis(2)));
    /// ```
    pub fn duration(&self) -> Option<Duration> {
        self.duration
    }

    /// The duration as AS::N prints it, in milliseconds with one decimal: `"0.4ms"`, `"12.0ms"`,
    /// or `"?ms"` when unknown. With colour on it is green under 10 ms, yellow under 100 ms and
    /// red from 100 ms.
    ///
    /// ```
    /// use std::time::Duration;
    /// let p = notify_core::Payload::new();
    /// let event = notify_log::LogEvent::new("query.sql", &p, Some(Duration::from_micros(12_040)));
    /// assert_eq!(event.elapsed().to_string(), "12.0ms");
    /// ```
    pub fn elapsed(&self) -> Elapsed {
        Elapsed {
            duration: self.duration,
            color: self.color,
        }
    }

    /// True when the subscriber writes colours.
    ///
    /// ```
    /// let p = notify_core::Payload::new();
    /// assert!(!notify_log::LogEvent::new("query.sql", &p, None).color_enabled());
    /// ```
    pub fn color_enabled(&self) -> bool {
        self.color
    }

    /// `text` in `color` (or the default colour for `None`), bold when `bold` — AS::N's
    /// `color(text, color, bold: true)`. Plain `text` when colour is off. The text is escaped
    /// ([`notify_core::escape`]), so user input can be passed as it is; for the same reason a
    /// styled text cannot be nested inside another (its escape sequences would show escaped).
    ///
    /// ```
    /// use notify_log::{Color, LogEvent};
    /// let p = notify_core::Payload::new();
    /// let event = LogEvent::new("query.sql", &p, None).with_color(true);
    /// assert_eq!(event.color("Book Load", None, true).to_string(), "\u{1b}[1mBook Load\u{1b}[0m");
    /// ```
    pub fn color<D: fmt::Display>(&self, text: D, color: Option<Color>, bold: bool) -> Styled<D> {
        let mut style = anstyle::Style::new().fg_color(color.map(|c| c.ansi().into()));
        if bold {
            style = style.bold();
        }
        Styled {
            text,
            style: if self.color { style } else { anstyle::Style::new() },
        }
    }
}

/// Text with a terminal style; [`LogEvent::color`]'s result. Displays as the text alone when the
/// style is empty. The text is escaped ([`notify_core::escape`]); the style's own sequences are not.
///
/// ```
/// let p = notify_core::Payload::new();
/// let styled = notify_log::LogEvent::new("a.b", &p, None).color(7, None, true);
/// assert_eq!(format!("[{styled}]"), "[7]");
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Styled<D> {
    text: D,
    style: anstyle::Style,
}

impl<D: fmt::Display> fmt::Display for Styled<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = EscapedDisplay(&self.text);
        if self.style == anstyle::Style::new() {
            text.fmt(f)
        } else {
            write!(f, "{}{text}{}", self.style.render(), self.style.render_reset())
        }
    }
}

/// A payload value, or `[missing <key>]`; [`LogEvent::field`]'s result. Both are escaped.
#[derive(Clone, Copy, Debug)]
pub struct Field<'a, 'k> {
    value: Option<&'a Value>,
    key: &'k str,
}

impl Field<'_, '_> {
    /// True when the payload has the key.
    pub fn is_present(&self) -> bool {
        self.value.is_some()
    }
}

impl fmt::Display for Field<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.value {
            Some(value) => value.escaped().fmt(f),
            None => write!(f, "[missing {}]", Escaped::new(self.key)),
        }
    }
}

/// A duration printed as AS::N does (`"0.4ms"`); [`LogEvent::elapsed`]'s result.
///
/// ```
/// let p = notify_core::Payload::new();
/// assert_eq!(notify_log::LogEvent::new("a.b", &p, None).elapsed().to_string(), "?ms");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Elapsed {
    duration: Option<Duration>,
    color: bool,
}

impl fmt::Display for Elapsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Some(duration) = self.duration else {
            return f.write_str("?ms");
        };
        let ms = duration.as_secs_f64() * 1000.0;
        if !self.color {
            return write!(f, "{ms:.1}ms");
        }
        let color = if ms < 10.0 {
            anstyle::AnsiColor::Green
        } else if ms < 100.0 {
            anstyle::AnsiColor::Yellow
        } else {
            anstyle::AnsiColor::Red
        };
        let style = anstyle::Style::new().fg_color(Some(color.into()));
        write!(f, "{}{ms:.1}ms{}", style.render(), style.render_reset())
    }
}
