//! Structured lines for any event, no code per name: [`StructuredLog`] (the builder) and
//! [`StructuredLogger`] (the subscriber), writing JSON lines ([`Format::Json`]) or logfmt lines
//! ([`Format::Logfmt`]) through the `log` facade.
//!
//! Each line has the time the line was written (RFC 3339, UTC, microseconds), the level, the event
//! name, its duration in milliseconds, its outcome, its trace id (32 hex digits), event id (the W3C
//! span id, 16 hex digits) and parent id, its source location when known (callsites,
//! `#[instrument_event]`), the [`Tags`] of its scope and its payload. The names of these keys
//! ([`LineKey`]) and where the payload and tags go are set with [`Keys`].
//!
//! JSON (one object per line; nested payload values are JSON objects and arrays):
//!
//! ```text
//! {"timestamp":"2026-12-03T19:03:01.123456Z","level":"DEBUG","event":"query.sql","duration_ms":0.412,"outcome":"completed","trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"00f067aa0ba902b7","parent_id":"53995c3f42cd8ad8","location":"src/bookstore/db.rs:88","tags":{"request_id":"r-17"},"payload":{"name":"Book Load","sql":"SELECT * FROM books WHERE author = ?1","binds":["Ada Abbott"],"rows":3}}
//! ```
//!
//! logfmt (nested values as dotted keys; a value with a space, `=`, `"` or a control character is
//! quoted and escaped; lists are written as quoted JSON):
//!
//! ```text
//! time=2026-12-03T19:03:01.123456Z level=debug event=query.sql duration_ms=0.412 outcome=completed trace_id=4bf92f3577b34da6a3ce929d0e0e4736 span_id=00f067aa0ba902b7 parent_id=53995c3f42cd8ad8 location=src/bookstore/db.rs:88 tags.request_id=r-17 payload.name="Book Load" payload.sql="SELECT * FROM books WHERE author = ?1" payload.binds="[\"Ada Abbott\"]" payload.rows=3
//! ```
//!
//! # Levels and silencing
//!
//! Every event logs at the default level ([`StructuredLog::level`], `INFO` unless set), a
//! namespace's level ([`StructuredLog::namespace_level`]) or a name's ([`StructuredLog::name_level`]),
//! the most specific first. The `log` target is the event's namespace (`"sql"` for `"query.sql"`),
//! or the name when it has no dot, unless [`StructuredLog::target`] sets one for every line. The
//! subscriber is silenceable: before each event the notifier asks it whether `log` would keep a
//! record of that level and target (`log::log_enabled!`, asked now, nothing cached), so at
//! `RUST_LOG=info` a `DEBUG` event costs what an unlistened one costs.
//!
//! # Values cannot forge lines
//!
//! JSON is written by `serde_json`: every string is escaped, a line is one JSON object. In logfmt
//! keys lose the characters that would end or split them (space, `=`, `"`, control characters
//! become `_`) and values are quoted and escaped (`\"`, `\\`, `\n`, `\u{1b}`), so no value can
//! start a line or add a key.
//!
//! # Rate limits
//!
//! Off by default. [`StructuredLog::rate_limit`]`(n, interval)` writes at most `n` lines per event
//! name per interval; the first line of that name after an interval in which some were dropped is
//! preceded by one line saying how many were (`"suppressed":17`). Drops are counted
//! ([`StructuredLogger::suppressed`]); [`StructuredLogger::flush_suppressed`] writes the pending
//! summary lines (at shutdown, say).

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use log::Level;
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};

mod record;
pub use self::record::{is_event_line, write_record, RecordLine, FIELDS_KEY, MESSAGE_KEY, TARGET_KEY};

use notify_core::escape::needs_escape;
use notify_core::{
    context::EventContext, context::Tags, event::EventId, event::Location, event::Outcome, subscriber::EventedOptions,
    Event, EventedSubscriber, Notifier, Pattern, Payload, SilenceableSubscriber, Subscriber, Subscription, TraceId,
    Value,
};

/// The line format of a [`StructuredLog`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// One JSON object per line (written with `serde_json`).
    Json,
    /// `key=value` pairs separated by spaces (logfmt, as Heroku and Grafana Loki read it).
    Logfmt,
}

/// Where a group of fields (the payload, the tags) goes in a line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Under one key: a JSON object, or dotted keys `key.field=` in logfmt.
    Nested(Cow<'static, str>),
    /// Beside the standard keys. A field whose name is one of the line's standard keys is written
    /// as `payload.<name>` (or `tags.<name>`) instead, so it cannot overwrite the event's own facts.
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
    /// `completed`, `panicked` or `cancelled` ([`Outcome::as_str`]). Default key `outcome`.
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
/// go. [`Keys::default`] gives the names of the module example.
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
const DEFAULT_TIME: &str = "timestamp";

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

    /// The standard keys that are written, in line order.
    fn standard(&self) -> impl Iterator<Item = &str> {
        self.names.iter().filter_map(|k| k.as_deref())
    }
}

/// Builds a [`StructuredLogger`]: format, levels, target, keys, rate limit.
///
/// ```
/// use notify_log::{Level, StructuredLog};
/// use notify_core::{Notifier, Pattern};
/// let notifier = Notifier::new();
/// let logger = StructuredLog::json().level(Level::Info).namespace_level("sql", Level::Debug).build();
/// let _subscription = logger.subscribe(&notifier, Pattern::all());
/// assert_eq!(logger.level_of("query.sql"), Level::Debug);
/// assert_eq!(logger.level_of("request.http"), Level::Info);
/// ```
#[derive(Clone, Debug)]
pub struct StructuredLog {
    format: Format,
    level: Level,
    names: HashMap<String, Level>,
    namespaces: HashMap<String, Level>,
    target: Option<String>,
    keys: Keys,
    rate_limit: Option<(u64, Duration)>,
}

impl StructuredLog {
    /// A builder for `format` lines at `INFO`, default keys, no rate limit.
    pub fn new(format: Format) -> StructuredLog {
        StructuredLog {
            format,
            level: Level::Info,
            names: HashMap::new(),
            namespaces: HashMap::new(),
            target: None,
            keys: Keys::default(),
            rate_limit: None,
        }
    }

    /// [`StructuredLog::new`]`(Format::Json)`.
    pub fn json() -> StructuredLog {
        StructuredLog::new(Format::Json)
    }

    /// [`StructuredLog::new`]`(Format::Logfmt)`.
    pub fn logfmt() -> StructuredLog {
        StructuredLog::new(Format::Logfmt)
    }

    /// The level of events without a more specific one (default `INFO`).
    #[must_use]
    pub fn level(mut self, level: Level) -> StructuredLog {
        self.level = level;
        self
    }

    /// The level of the events `"*.<namespace>"` (the namespace is everything after the name's
    /// first dot: `"db.replica"` for `"query.db.replica"`).
    #[must_use]
    pub fn namespace_level(mut self, namespace: impl Into<String>, level: Level) -> StructuredLog {
        self.namespaces.insert(namespace.into(), level);
        self
    }

    /// The level of the events named exactly `name`; wins over its namespace's.
    #[must_use]
    pub fn name_level(mut self, name: impl Into<String>, level: Level) -> StructuredLog {
        self.names.insert(name.into(), level);
        self
    }

    /// The `log` target of every line (default: each event's namespace, or its name when it has
    /// no dot, so `RUST_LOG=sql=debug` selects the `"*.sql"` events).
    #[must_use]
    pub fn target(mut self, target: impl Into<String>) -> StructuredLog {
        self.target = Some(target.into());
        self
    }

    /// The keys of a line and where payload and tags go.
    #[must_use]
    pub fn keys(mut self, keys: Keys) -> StructuredLog {
        self.keys = keys;
        self
    }

    /// At most `lines` lines per event name per `interval`, then one line saying how many were
    /// dropped (see the module docs). `lines == 0` or a zero interval turns the limit off.
    #[must_use]
    pub fn rate_limit(mut self, lines: u64, interval: Duration) -> StructuredLog {
        self.rate_limit = (lines > 0 && !interval.is_zero()).then_some((lines, interval));
        self
    }

    /// The subscriber.
    pub fn build(self) -> StructuredLogger {
        let mut keys = self.keys;
        if self.format == Format::Logfmt && keys.name(LineKey::Time) == Some(DEFAULT_TIME) {
            keys = keys.rename(LineKey::Time, "time");
        }
        StructuredLogger {
            inner: Arc::new(Inner {
                format: self.format,
                level: self.level,
                least_verbose: self
                    .names
                    .values()
                    .chain(self.namespaces.values())
                    .fold(self.level, |a, b| a.min(*b)),
                names: self.names.into_iter().collect(),
                namespaces: self.namespaces.into_iter().collect(),
                target: self.target,
                keys,
                limiter: self.rate_limit.map(|(lines, interval)| Limiter {
                    lines,
                    interval,
                    windows: Mutex::new(HashMap::new()),
                }),
                suppressed: AtomicU64::new(0),
                written: AtomicU64::new(0),
            }),
        }
    }
}

/// Writes a JSON or logfmt line for each event it is subscribed to (see the module docs); built
/// by [`StructuredLog`]. Cheap to clone (shared state), so one logger can be subscribed to several
/// patterns or notifiers with one set of counters.
///
/// ```
/// use notify_log::StructuredLog;
/// use notify_core::{Notifier, Payload};
/// let notifier = Notifier::new();
/// let logger = StructuredLog::logfmt().build();
/// let _subscription = logger.subscribe(&notifier, "request.http");
/// // No `log` logger is installed here: the subscriber is silenced and the event costs nothing.
/// assert!(!notifier.listening("request.http"));
/// notifier.instrument("request.http", Payload::new, |_| ());
/// assert_eq!(logger.written(), 0);
/// ```
#[derive(Clone, Debug)]
pub struct StructuredLogger {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    format: Format,
    level: Level,
    names: Vec<(String, Level)>,
    namespaces: Vec<(String, Level)>,
    /// The least verbose (most severe) of `level` and the overrides.
    least_verbose: Level,
    target: Option<String>,
    keys: Keys,
    limiter: Option<Limiter>,
    suppressed: AtomicU64,
    written: AtomicU64,
}

impl Inner {
    /// The level of event `name` of namespace `namespace`. Linear scans: a logger has a handful of
    /// overrides, and comparing a few short strings costs less than hashing the name once.
    #[inline]
    fn level_in(&self, name: &str, namespace: Option<&str>) -> Level {
        if !self.names.is_empty() {
            if let Some((_, level)) = self.names.iter().find(|(n, _)| n == name) {
                return *level;
            }
        }
        match namespace {
            Some(ns) if !self.namespaces.is_empty() => self
                .namespaces
                .iter()
                .find(|(n, _)| n == ns)
                .map_or(self.level, |(_, level)| *level),
            _ => self.level,
        }
    }
}

/// The per-name windows of a rate limit.
#[derive(Debug)]
struct Limiter {
    lines: u64,
    interval: Duration,
    windows: Mutex<HashMap<String, Window>>,
}

#[derive(Debug)]
struct Window {
    start: Instant,
    lines: u64,
    suppressed: u64,
    level: Level,
}

/// What the limiter says about one line.
enum Admit {
    /// Write it.
    Yes,
    /// Write `suppressed` summary first (for the window that ended), then the line.
    AfterSummary { suppressed: u64, level: Level },
    /// Drop it.
    No,
}

impl Limiter {
    fn admit(&self, name: &str, level: Level, now: Instant) -> Admit {
        let mut windows = self.windows.lock().unwrap_or_else(|e| e.into_inner());
        let window = match windows.get_mut(name) {
            Some(window) => window,
            None => windows.entry(name.to_owned()).or_insert(Window {
                start: now,
                lines: 0,
                suppressed: 0,
                level,
            }),
        };
        if now.saturating_duration_since(window.start) >= self.interval {
            let suppressed = std::mem::take(&mut window.suppressed);
            let summary_level = window.level;
            *window = Window {
                start: now,
                lines: 1,
                suppressed: 0,
                level,
            };
            return if suppressed > 0 {
                Admit::AfterSummary {
                    suppressed,
                    level: summary_level,
                }
            } else {
                Admit::Yes
            };
        }
        if window.lines < self.lines {
            window.lines += 1;
            Admit::Yes
        } else {
            window.suppressed += 1;
            window.level = level;
            Admit::No
        }
    }
}

/// The facts of one finished event a line is made of.
struct Facts<'a> {
    name: &'a str,
    id: EventId,
    parent_id: Option<EventId>,
    trace_id: Option<TraceId>,
    location: Option<&'static Location>,
    duration: Option<Duration>,
    outcome: Outcome,
    payload: &'a Payload,
}

thread_local! {
    /// The line being written; reused, so a line costs no allocation once warm.
    static BUFFER: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

impl StructuredLogger {
    /// Subscribes this logger (a clone sharing its counters) to `pattern` on `notifier`, as a
    /// silenceable subscriber that asks for the event's duration.
    ///
    /// ```
    /// let notifier = notify_core::Notifier::new();
    /// let logger = notify_log::StructuredLog::json().build();
    /// let subscription = logger.subscribe(&notifier, notify_core::Pattern::glob("*.sql").unwrap());
    /// assert_eq!(notifier.subscriber_count(), 1);
    /// subscription.unsubscribe().unwrap();
    /// ```
    pub fn subscribe(&self, notifier: &Notifier, pattern: impl Into<Pattern>) -> Subscription {
        notifier.subscribe(pattern, self.subscriber())
    }

    /// This logger as a [`Subscriber`] (for [`Notifier::subscribe`] with options of your own).
    pub fn subscriber(&self) -> Subscriber {
        Subscriber::silenceable_with(EventedOptions { duration: true }, self.clone()).named("structured log")
    }

    /// The format.
    pub fn format(&self) -> Format {
        self.inner.format
    }

    /// The level of event `name`: its own, else its namespace's, else the default.
    pub fn level_of(&self, name: &str) -> Level {
        self.inner.level_in(name, namespace(name))
    }

    /// The `log` target of event `name`'s lines.
    pub fn target_of<'a>(&'a self, name: &'a str) -> &'a str {
        self.inner
            .target
            .as_deref()
            .unwrap_or_else(|| namespace(name).unwrap_or(name))
    }

    /// Lines handed to the `log` logger so far (suppression summaries included).
    pub fn written(&self) -> u64 {
        self.inner.written.load(Ordering::Relaxed)
    }

    /// Lines dropped by the rate limit so far.
    pub fn suppressed(&self) -> u64 {
        self.inner.suppressed.load(Ordering::Relaxed)
    }

    /// Writes the summary line of every name with lines dropped in its current window and starts
    /// new windows; returns how many summary lines were written. For the end of a program: a
    /// summary is otherwise written before the next line of its name.
    pub fn flush_suppressed(&self) -> usize {
        let Some(limiter) = &self.inner.limiter else {
            return 0;
        };
        let pending: Vec<(String, u64, Level)> = {
            let mut windows = limiter.windows.lock().unwrap_or_else(|e| e.into_inner());
            windows
                .iter_mut()
                .filter(|(_, w)| w.suppressed > 0)
                .map(|(name, w)| (name.clone(), std::mem::take(&mut w.suppressed), w.level))
                .collect()
        };
        for (name, suppressed, level) in &pending {
            self.summary(name, *suppressed, *level);
        }
        pending.len()
    }

    /// Formats `facts` as a line and hands it to the `log` facade, through the rate limit.
    fn log(&self, facts: &Facts<'_>) {
        let level = self.level_of(facts.name);
        let target = self.target_of(facts.name);
        if !log_enabled(level, target) {
            return;
        }
        if let Some(limiter) = &self.inner.limiter {
            match limiter.admit(facts.name, level, Instant::now()) {
                Admit::Yes => {}
                Admit::AfterSummary { suppressed, level } => self.summary(facts.name, suppressed, level),
                Admit::No => {
                    self.inner.suppressed.fetch_add(1, Ordering::Relaxed);
                    return;
                }
            }
        }
        with_buffer(|buffer| {
            self.write_line(buffer, level, facts);
            self.emit(level, target, facts.location, buffer);
        });
    }

    /// Writes the line saying that `suppressed` lines of `name` were dropped.
    fn summary(&self, name: &str, suppressed: u64, level: Level) {
        let target = self.target_of(name);
        let interval = self.inner.limiter.as_ref().map_or(Duration::ZERO, |l| l.interval);
        with_buffer(|buffer| {
            let keys = &self.inner.keys;
            let now = SystemTime::now();
            match self.inner.format {
                Format::Json => {
                    let line = Summary {
                        keys,
                        now,
                        level,
                        name,
                        suppressed,
                        interval,
                    };
                    serde_json::to_writer(&mut *buffer, &line).expect("a Vec accepts every write");
                }
                Format::Logfmt => {
                    let mut line = Logfmt::new(buffer);
                    if let Some(k) = keys.name(LineKey::Time) {
                        line.raw(k, &humantime::format_rfc3339_micros(now).to_string());
                    }
                    if let Some(k) = keys.name(LineKey::Level) {
                        line.raw(k, &level.as_str().to_ascii_lowercase());
                    }
                    if let Some(k) = keys.name(LineKey::Event) {
                        line.text(k, name);
                    }
                    line.raw("suppressed", &suppressed.to_string());
                    line.raw("interval_ms", &interval.as_millis().to_string());
                }
            }
            self.emit(level, target, None, buffer);
        });
    }

    fn emit(&self, level: Level, target: &str, location: Option<&'static Location>, line: &[u8]) {
        // Both writers write UTF-8 only (serde_json, and logfmt from `str`s).
        let line = std::str::from_utf8(line).unwrap_or("<line not UTF-8>");
        record::emitting(|| {
            log::logger().log(
                &log::Record::builder()
                    .level(level)
                    .target(target)
                    .args(format_args!("{line}"))
                    .file_static(location.map(Location::file))
                    .line(location.map(Location::line))
                    .module_path_static(location.map(Location::module_path))
                    .build(),
            )
        });
        self.inner.written.fetch_add(1, Ordering::Relaxed);
    }

    fn write_line(&self, buffer: &mut Vec<u8>, level: Level, facts: &Facts<'_>) {
        let now = SystemTime::now();
        Tags::with_current(|tags| match self.inner.format {
            Format::Json => {
                let line = JsonLine {
                    keys: &self.inner.keys,
                    now,
                    level,
                    facts,
                    tags,
                };
                serde_json::to_writer(&mut *buffer, &line).expect("a Vec accepts every write");
            }
            Format::Logfmt => write_logfmt(&mut Logfmt::new(buffer), &self.inner.keys, now, level, facts, tags),
        });
    }
}

/// Runs `f` with this thread's line buffer, emptied; a fresh one when it is in use (a logger that
/// instruments an event which is logged while the outer line is being written).
fn with_buffer(f: impl FnOnce(&mut Vec<u8>)) {
    let mut f = Some(f);
    let _ = BUFFER.try_with(|cell| {
        if let Ok(mut buffer) = cell.try_borrow_mut() {
            buffer.clear();
            if let Some(f) = f.take() {
                f(&mut buffer);
            }
            // A huge payload's line does not keep its memory for the thread's lifetime.
            if buffer.capacity() > 64 * 1024 {
                *buffer = Vec::new();
            }
        }
    });
    if let Some(f) = f {
        f(&mut Vec::new());
    }
}

/// The namespace of `name`: everything after its first dot.
#[inline]
fn namespace(name: &str) -> Option<&str> {
    let dot = name.bytes().position(|b| b == b'.')?;
    Some(&name[dot + 1..])
}

/// `log::log_enabled!(target: target, level)`, asked now (see [`crate::LogMethod`]).
#[inline]
fn log_enabled(level: Level, target: &str) -> bool {
    level <= log::STATIC_MAX_LEVEL
        && level <= log::max_level()
        && log::logger().enabled(&log::Metadata::builder().level(level).target(target).build())
}

impl EventedSubscriber for StructuredLogger {
    fn start(&self, _name: &str, _event: &EventContext, _payload: &Payload) {}

    fn finish(&self, name: &str, event: &EventContext, payload: &Payload) {
        self.log(&Facts {
            name,
            id: event.id(),
            parent_id: event.parent_id(),
            trace_id: Some(event.trace_id()),
            location: event.location(),
            duration: event.duration(),
            outcome: event.outcome(),
            payload,
        });
    }

    /// An event published whole (imported from another process, say) is logged with its own
    /// facts.
    fn publish(&self, event: &Event) {
        self.log(&Facts {
            name: event.name(),
            id: event.id(),
            parent_id: event.parent_id(),
            trace_id: Some(event.trace_id()),
            location: event.location(),
            duration: Some(event.duration()),
            outcome: event.outcome(),
            payload: event.payload(),
        });
    }
}

impl SilenceableSubscriber for StructuredLogger {
    /// True exactly when `log` would drop this event's line now (its level and target).
    #[inline]
    fn silenced(&self, name: &str) -> bool {
        let inner = &*self.inner;
        let max = log::max_level();
        // Not even this logger's least verbose level passes the `log` max level (a logger of
        // debug lines only, under `info`): silenced without looking the name up.
        if inner.least_verbose > max {
            return true;
        }
        let namespace = namespace(name);
        let level = inner.level_in(name, namespace);
        if level > log::STATIC_MAX_LEVEL || level > max {
            return true;
        }
        let target = inner.target.as_deref().unwrap_or(namespace.unwrap_or(name));
        !log::logger().enabled(&log::Metadata::builder().level(level).target(target).build())
    }
}

/// An event id as W3C writes a span id: 16 lowercase hex digits.
struct SpanHex(EventId);

impl std::fmt::Display for SpanHex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:016x}", self.0.get())
    }
}

/// Milliseconds with microsecond precision.
fn millis(duration: Duration) -> f64 {
    (duration.as_micros() as f64) / 1000.0
}

/// `file:line`.
struct LocationText(&'static Location);

impl std::fmt::Display for LocationText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.0.file(), self.0.line())
    }
}

/// One JSON line.
struct JsonLine<'a> {
    keys: &'a Keys,
    now: SystemTime,
    level: Level,
    facts: &'a Facts<'a>,
    tags: &'a Tags,
}

impl Serialize for JsonLine<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (keys, facts) = (self.keys, self.facts);
        let mut map = serializer.serialize_map(None)?;
        if let Some(k) = keys.name(LineKey::Time) {
            map.serialize_entry(k, &Rfc3339(self.now))?;
        }
        if let Some(k) = keys.name(LineKey::Level) {
            map.serialize_entry(k, self.level.as_str())?;
        }
        if let Some(k) = keys.name(LineKey::Event) {
            map.serialize_entry(k, facts.name)?;
        }
        if let (Some(k), Some(d)) = (keys.name(LineKey::Duration), facts.duration) {
            map.serialize_entry(k, &millis(d))?;
        }
        if let Some(k) = keys.name(LineKey::Outcome) {
            map.serialize_entry(k, facts.outcome.as_str())?;
        }
        if let (Some(k), Some(t)) = (keys.name(LineKey::TraceId), facts.trace_id) {
            map.serialize_entry(k, &Shown(t))?;
        }
        if let Some(k) = keys.name(LineKey::SpanId) {
            map.serialize_entry(k, &Shown(SpanHex(facts.id)))?;
        }
        if let (Some(k), Some(p)) = (keys.name(LineKey::ParentId), facts.parent_id) {
            map.serialize_entry(k, &Shown(SpanHex(p)))?;
        }
        if let (Some(k), Some(l)) = (keys.name(LineKey::Location), facts.location) {
            map.serialize_entry(k, &Shown(LocationText(l)))?;
        }
        if !self.tags.is_empty() {
            json_group(&mut map, keys, &keys.tags, "tags", Fields::Tags(self.tags))?;
        }
        json_group(&mut map, keys, &keys.payload, "payload", Fields::Payload(facts.payload))?;
        map.end()
    }
}

/// Writes `fields` as `placement` says.
fn json_group<M: SerializeMap>(
    map: &mut M,
    keys: &Keys,
    placement: &Placement,
    prefix: &str,
    fields: Fields<'_>,
) -> Result<(), M::Error> {
    match placement {
        Placement::Nested(key) => map.serialize_entry(key.as_ref(), &fields),
        Placement::Flat => {
            for (k, v) in fields.iter() {
                if keys.standard().any(|s| s == k) {
                    map.serialize_entry(&format!("{prefix}.{k}"), &JsonValue(v))?;
                } else {
                    map.serialize_entry(k, &JsonValue(v))?;
                }
            }
            Ok(())
        }
        Placement::Omit => Ok(()),
    }
}

/// The rate limit's summary line.
struct Summary<'a> {
    keys: &'a Keys,
    now: SystemTime,
    level: Level,
    name: &'a str,
    suppressed: u64,
    interval: Duration,
}

impl Serialize for Summary<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        if let Some(k) = self.keys.name(LineKey::Time) {
            map.serialize_entry(k, &Rfc3339(self.now))?;
        }
        if let Some(k) = self.keys.name(LineKey::Level) {
            map.serialize_entry(k, self.level.as_str())?;
        }
        if let Some(k) = self.keys.name(LineKey::Event) {
            map.serialize_entry(k, self.name)?;
        }
        map.serialize_entry("suppressed", &self.suppressed)?;
        map.serialize_entry("interval_ms", &(self.interval.as_millis() as u64))?;
        map.end()
    }
}

struct Rfc3339(SystemTime);

impl Serialize for Rfc3339 {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&humantime::format_rfc3339_micros(self.0))
    }
}

/// A `Display` value serialized as a string, without an intermediate `String`.
struct Shown<D>(D);

impl<D: std::fmt::Display> Serialize for Shown<D> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&self.0)
    }
}

/// Payload or tags: key-values written as a JSON object.
#[derive(Clone, Copy)]
enum Fields<'a> {
    Payload(&'a Payload),
    Tags(&'a Tags),
}

impl<'a> Fields<'a> {
    fn iter(self) -> impl Iterator<Item = (&'a str, &'a Value)> {
        let (payload, tags) = match self {
            Fields::Payload(p) => (Some(p.iter()), None),
            Fields::Tags(t) => (None, Some(t.iter())),
        };
        payload.into_iter().flatten().chain(tags.into_iter().flatten())
    }
}

impl Serialize for Fields<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        for (k, v) in self.iter() {
            map.serialize_entry(k, &JsonValue(v))?;
        }
        map.end()
    }
}

/// A payload value as JSON: numbers (128-bit ones as strings when they do not fit 64 bits,
/// non-finite floats as `"NaN"`, `"inf"`, `"-inf"`), strings, durations as milliseconds, times as
/// RFC 3339 strings, lists as arrays, maps as objects, an exception as `{"type", "message"}`.
struct JsonValue<'v>(&'v Value);

impl Serialize for JsonValue<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Null => serializer.serialize_unit(),
            Value::Bool(b) => serializer.serialize_bool(*b),
            Value::I64(n) => serializer.serialize_i64(*n),
            Value::U64(n) => serializer.serialize_u64(*n),
            Value::I128(n) => match i64::try_from(*n) {
                Ok(n) => serializer.serialize_i64(n),
                Err(_) => serializer.collect_str(n),
            },
            Value::U128(n) => match u64::try_from(*n) {
                Ok(n) => serializer.serialize_u64(n),
                Err(_) => serializer.collect_str(n),
            },
            Value::F64(f) if f.is_finite() => serializer.serialize_f64(*f),
            Value::F64(f) => serializer.serialize_str(non_finite(*f)),
            Value::Str(text) => serializer.serialize_str(text),
            Value::Duration(d) => serializer.serialize_f64(millis(*d)),
            Value::Time(t) => Rfc3339(*t).serialize(serializer),
            Value::List(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(&JsonValue(item))?;
                }
                seq.end()
            }
            Value::Map(payload) => Fields::Payload(payload).serialize(serializer),
            Value::Exception { type_name, message } => {
                let mut map = serializer.serialize_map(Some(2))?;
                map.serialize_entry("type", type_name)?;
                map.serialize_entry("message", message)?;
                map.end()
            }
            other => serializer.collect_str(other),
        }
    }
}

fn non_finite(f: f64) -> &'static str {
    if f.is_nan() {
        "NaN"
    } else if f > 0.0 {
        "inf"
    } else {
        "-inf"
    }
}

/// A logfmt line being written: pairs separated by one space.
struct Logfmt<'b> {
    out: &'b mut Vec<u8>,
}

impl<'b> Logfmt<'b> {
    fn new(out: &'b mut Vec<u8>) -> Logfmt<'b> {
        Logfmt { out }
    }

    /// `key=` with the key's unsafe characters replaced.
    fn key(&mut self, key: &str) {
        if !self.out.is_empty() {
            self.out.push(b' ');
        }
        if key.is_empty() {
            self.out.push(b'_');
        }
        let mut utf8 = [0; 4];
        for c in key.chars() {
            let c = if c.is_whitespace() || c == '=' || c == '"' || needs_escape(c) {
                '_'
            } else {
                c
            };
            self.out.extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
        }
        self.out.push(b'=');
    }

    /// A value known to need no quoting (numbers, ids, times, levels).
    fn raw(&mut self, key: &str, value: &str) {
        self.key(key);
        self.out.extend_from_slice(value.as_bytes());
    }

    /// A text value, quoted and escaped when it must be.
    fn text(&mut self, key: &str, value: &str) {
        self.key(key);
        let plain = !value.is_empty()
            && !value
                .chars()
                .any(|c| c.is_whitespace() || c == '=' || c == '"' || c == '\\' || needs_escape(c));
        if plain {
            self.out.extend_from_slice(value.as_bytes());
            return;
        }
        self.out.push(b'"');
        let mut utf8 = [0; 4];
        for c in value.chars() {
            match c {
                '"' => self.out.extend_from_slice(b"\\\""),
                '\\' => self.out.extend_from_slice(b"\\\\"),
                '\n' => self.out.extend_from_slice(b"\\n"),
                '\r' => self.out.extend_from_slice(b"\\r"),
                '\t' => self.out.extend_from_slice(b"\\t"),
                c if needs_escape(c) || (c.is_whitespace() && c != ' ') => {
                    let _ = write!(ByteWriter(self.out), "\\u{{{:x}}}", c as u32);
                }
                c => self.out.extend_from_slice(c.encode_utf8(&mut utf8).as_bytes()),
            }
        }
        self.out.push(b'"');
    }

    /// A payload value under `key`: maps as dotted keys, lists as quoted JSON.
    fn value(&mut self, key: &str, value: &Value) {
        match value {
            Value::Null => self.raw(key, "null"),
            Value::Bool(b) => self.raw(key, if *b { "true" } else { "false" }),
            Value::I64(_) | Value::U64(_) | Value::I128(_) | Value::U128(_) => self.raw(key, &value.to_string()),
            Value::F64(f) if f.is_finite() => self.raw(key, &f.to_string()),
            Value::F64(f) => self.raw(key, non_finite(*f)),
            Value::Str(text) => self.text(key, text),
            Value::Duration(d) => self.raw(key, &millis(*d).to_string()),
            Value::Time(t) => self.raw(key, &humantime::format_rfc3339_micros(*t).to_string()),
            Value::List(_) => {
                let json = serde_json::to_string(&JsonValue(value)).unwrap_or_default();
                self.text(key, &json);
            }
            Value::Map(payload) => {
                for (k, v) in payload.iter() {
                    self.value(&format!("{key}.{k}"), v);
                }
            }
            Value::Exception { type_name, message } => {
                self.text(&format!("{key}.type"), type_name);
                self.text(&format!("{key}.message"), message);
            }
            other => self.text(key, &other.to_string()),
        }
    }
}

/// `fmt::Write` into a byte vector.
struct ByteWriter<'a>(&'a mut Vec<u8>);

impl std::fmt::Write for ByteWriter<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

fn write_logfmt(line: &mut Logfmt<'_>, keys: &Keys, now: SystemTime, level: Level, facts: &Facts<'_>, tags: &Tags) {
    if let Some(k) = keys.name(LineKey::Time) {
        line.key(k);
        let _ = write!(ByteWriter(line.out), "{}", humantime::format_rfc3339_micros(now));
    }
    if let Some(k) = keys.name(LineKey::Level) {
        line.raw(k, &level.as_str().to_ascii_lowercase());
    }
    if let Some(k) = keys.name(LineKey::Event) {
        line.text(k, facts.name);
    }
    if let (Some(k), Some(d)) = (keys.name(LineKey::Duration), facts.duration) {
        line.raw(k, &millis(d).to_string());
    }
    if let Some(k) = keys.name(LineKey::Outcome) {
        line.raw(k, facts.outcome.as_str());
    }
    if let (Some(k), Some(t)) = (keys.name(LineKey::TraceId), facts.trace_id) {
        line.key(k);
        let _ = write!(ByteWriter(line.out), "{t}");
    }
    if let Some(k) = keys.name(LineKey::SpanId) {
        line.key(k);
        let _ = write!(ByteWriter(line.out), "{}", SpanHex(facts.id));
    }
    if let (Some(k), Some(p)) = (keys.name(LineKey::ParentId), facts.parent_id) {
        line.key(k);
        let _ = write!(ByteWriter(line.out), "{}", SpanHex(p));
    }
    if let (Some(k), Some(l)) = (keys.name(LineKey::Location), facts.location) {
        line.text(k, &LocationText(l).to_string());
    }
    logfmt_group(line, keys, &keys.tags, "tags", tags.iter());
    logfmt_group(line, keys, &keys.payload, "payload", facts.payload.iter());
}

fn logfmt_group<'v>(
    line: &mut Logfmt<'_>,
    keys: &Keys,
    placement: &Placement,
    prefix: &str,
    fields: impl Iterator<Item = (&'v str, &'v Value)>,
) {
    for (k, v) in fields {
        match placement {
            Placement::Nested(group) => line.value(&format!("{group}.{k}"), v),
            Placement::Flat if keys.standard().any(|s| s == k) => line.value(&format!("{prefix}.{k}"), v),
            Placement::Flat => line.value(k, v),
            Placement::Omit => return,
        }
    }
}
