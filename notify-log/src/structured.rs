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
//! the characters of a key that would end or split it (whitespace, `=`, `"`, control and invisible
//! characters) and `%` itself are percent-encoded per UTF-8 byte (`a b` is written `a%20b`, `a=b`
//! `a%3Db`, `50%` `50%25`: distinct keys stay distinct), and values are quoted and escaped (`\"`,
//! `\\`, `\n`, `\u{1b}`), so no value can start a line or add a key.
//!
//! # Unique keys
//!
//! Every line has each key once, and no value shadows another (a reader or a log store that keeps
//! the first or the last of two equal keys would lose one). Keys are claimed in line order: the
//! line's own keys first (the facts, [`LineKey`], then the key of each [`Placement::Nested`] group,
//! tags then payload; made unique once, when the logger is built), then the tags' fields, then the
//! payload's, and in logfmt the dotted key of each nested value. The first to claim a key keeps
//! it; a later claim of a taken key is written as
//!
//! 1. `<group>.<name>` (`payload.user`, `tags.level`) when it is a field placed
//!    [`Placement::Flat`] and that key is free;
//! 2. otherwise the key with the first free suffix `~2`, `~3`, … (`level~2`, `payload.a.b~2`).
//!
//! So with a flat payload and flat tags, a tag `user` is written `user` and a payload field `user`
//! `payload.user`; a flat payload field `tags` beside nested tags is written `payload.tags`; a
//! flat payload field `level` is written `payload.level`, and a field literally named
//! `payload.level` after it `payload.payload.level` (before it, it keeps `payload.level` and the
//! `level` field becomes `payload.level~2`: the first claim wins); facts renamed
//! to one name (`outcome` renamed `level`) are written `level` and `level~2`; in logfmt a map field
//! `a: {b: 1}` and a field `a.b` are written `payload.a.b` and `payload.a.b~2`. The summary
//! line's `suppressed` and `interval_ms` follow rule 2 against the facts.
//!
//! # Rate limits
//!
//! Off by default. [`StructuredLog::rate_limit`]`(n, interval)` writes at most `n` lines per event
//! name per interval; a window in which some were dropped is followed by one line saying how many
//! were (`"suppressed":17`), written before the next line of that name, or earlier, when the
//! limiter frees the windows that ended (on the first line of any name once an interval has passed
//! since it last did). Drops are counted ([`StructuredLogger::suppressed`], by cause in
//! [`StructuredLogger::rate_limit_stats`]); [`StructuredLogger::flush_suppressed`] writes the
//! pending summary lines (at shutdown, say).
//!
//! The limiter is bounded: at most [`StructuredLog::rate_limit_names`] names (default 10,000) have
//! a window of their own; further names, and names longer than 256 bytes, share one window of `n`
//! lines per interval (summarised as event `*`), so names from outside (an importer) cannot grow
//! its memory without end.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use log::Level;
use notify_core::{
    context::EventContext, context::Tags, event::Location, subscriber::EventedOptions, Event, EventedSubscriber,
    Notifier, Pattern, Payload, SilenceableSubscriber, Subscriber, Subscription,
};

pub use crate::format::Format;
pub use crate::keys::{Keys, LineKey, Placement};
pub use crate::record::{is_event_line, write_record, RecordLine, FIELDS_KEY, MESSAGE_KEY, TARGET_KEY};

use crate::facts::Facts;
use crate::json::{JsonLine, Summary};
use crate::keys::DEFAULT_TIME;
use crate::line_keys::LineNames;
use crate::logfmt::{write_logfmt, Logfmt};
use crate::rate_limit::{Limiter, Pending, RateLimitStats, DEFAULT_MAX_NAMES, SHARED_NAME};

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
    levels: Option<Levels>,
    target: Option<String>,
    keys: Keys,
    rate_limit: Option<(u64, Duration)>,
    rate_limit_names: usize,
}

/// Levels known only at run time, by event name ([`StructuredLog::levels`]).
#[derive(Clone)]
struct Levels(Arc<LevelFn>);

type LevelFn = dyn Fn(&str) -> Option<Level> + Send + Sync;

impl std::fmt::Debug for Levels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Levels(..)")
    }
}

impl StructuredLog {
    /// A builder for `format` lines at `INFO`, default keys, no rate limit.
    pub fn new(format: Format) -> StructuredLog {
        StructuredLog {
            format,
            level: Level::Info,
            names: HashMap::new(),
            namespaces: HashMap::new(),
            levels: None,
            target: None,
            keys: Keys::default(),
            rate_limit: None,
            rate_limit_names: DEFAULT_MAX_NAMES,
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

    /// Levels decided at run time: `levels(name)` is asked for each event name without a
    /// [`name_level`](Self::name_level) of its own, before its namespace's level; `None` falls
    /// through. For names only known once seen: the tracing bridge's spans keep their tracing
    /// level this way (instrumentation-setup). The function runs for each line written and
    /// whenever a subscriber's silence is re-evaluated: keep it a lookup.
    ///
    /// ```
    /// use notify_log::{Level, StructuredLog};
    /// let logger = StructuredLog::json()
    ///     .levels(|name| (name == "connect.hyper::client").then_some(Level::Trace))
    ///     .build();
    /// assert_eq!(logger.level_of("connect.hyper::client"), Level::Trace);
    /// assert_eq!(logger.level_of("request.http"), Level::Info);
    /// ```
    #[must_use]
    pub fn levels(mut self, levels: impl Fn(&str) -> Option<Level> + Send + Sync + 'static) -> StructuredLog {
        self.levels = Some(Levels(Arc::new(levels)));
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

    /// At most `names` event names (at least 1; default 10,000) have a rate-limit window of their
    /// own at once. Lines of further names, and of names longer than 256 bytes, share one window
    /// of the same `n` lines per interval, summarised under the event name `*`. A window is freed
    /// within an interval after it ends (its summary written then if it has one), so the limiter
    /// holds at most `names` windows of at most 256 bytes of name each, however many names events
    /// from outside (an importer) bring. Counted in [`StructuredLogger::rate_limit_stats`].
    #[must_use]
    pub fn rate_limit_names(mut self, names: usize) -> StructuredLog {
        self.rate_limit_names = names.max(1);
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
                // Run-time levels can be anything, down to `ERROR`.
                least_verbose: if self.levels.is_some() {
                    Level::Error
                } else {
                    self.names
                        .values()
                        .chain(self.namespaces.values())
                        .fold(self.level, |a, b| a.min(*b))
                },
                levels: self.levels,
                names: self.names.into_iter().collect(),
                namespaces: self.namespaces.into_iter().collect(),
                target: self.target,
                line_names: LineNames::new(&keys, self.format == Format::Logfmt),
                limiter: self
                    .rate_limit
                    .map(|(lines, interval)| Limiter::new(lines, interval, self.rate_limit_names)),
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
    levels: Option<Levels>,
    /// The least verbose (most severe) of `level` and the overrides.
    least_verbose: Level,
    target: Option<String>,
    /// The line's own keys, unique (see the module docs' "Unique keys").
    line_names: LineNames,
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
        if let Some(Levels(levels)) = &self.levels {
            if let Some(level) = levels(name) {
                return level;
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

    /// The level of event `name`: its own, else the run-time one ([`StructuredLog::levels`]), else its
    /// namespace's, else the default.
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
        let pending = limiter.take_pending();
        for summary in &pending {
            self.summary(summary);
        }
        pending.len()
    }

    /// The rate limit's counters (all zero when there is none): lines dropped by cause, names
    /// with a window of their own now, windows freed.
    ///
    /// ```
    /// use std::time::Duration;
    /// use notify_log::StructuredLog;
    /// let logger = StructuredLog::json().rate_limit(10, Duration::from_secs(1)).rate_limit_names(500).build();
    /// assert_eq!(logger.rate_limit_stats().names, 0);
    /// ```
    pub fn rate_limit_stats(&self) -> RateLimitStats {
        self.inner.limiter.as_ref().map(Limiter::stats).unwrap_or_default()
    }

    /// Formats `facts` as a line and hands it to the `log` facade, through the rate limit.
    fn log(&self, facts: &Facts<'_>) {
        let level = self.level_of(facts.name);
        let target = self.target_of(facts.name);
        if !log_enabled(level, target) {
            return;
        }
        if let Some(limiter) = &self.inner.limiter {
            let mut summaries = Vec::new();
            let admitted = limiter.admit(facts.name, level, Instant::now(), &mut summaries);
            for summary in &summaries {
                self.summary(summary);
            }
            if !admitted {
                self.inner.suppressed.fetch_add(1, Ordering::Relaxed);
                return;
            }
        }
        with_buffer(|buffer| {
            self.write_line(buffer, level, facts);
            self.emit(level, target, facts.location, buffer);
        });
    }

    /// Writes the line saying that `pending.suppressed` lines of its name were dropped (`*` and
    /// this crate's target for the shared window, unless a fixed target is set).
    fn summary(&self, pending: &Pending) {
        let (suppressed, level) = (pending.suppressed, pending.level);
        let (name, target) = match &pending.name {
            Some(name) => (&**name, self.target_of(name)),
            None => (SHARED_NAME, self.inner.target.as_deref().unwrap_or("notify_log")),
        };
        let interval = self.inner.limiter.as_ref().map_or(Duration::ZERO, |l| l.interval);
        with_buffer(|buffer| {
            let names = &self.inner.line_names;
            let now = SystemTime::now();
            match self.inner.format {
                Format::Json => {
                    let line = Summary {
                        names,
                        now,
                        level,
                        name,
                        suppressed,
                        interval,
                    };
                    serde_json::to_writer(&mut *buffer, &line).expect("a Vec accepts every write");
                }
                Format::Logfmt => {
                    let mut line = Logfmt::new(buffer, names);
                    if let Some(k) = names.fact(LineKey::Time) {
                        line.raw(k, &humantime::format_rfc3339_micros(now).to_string());
                    }
                    if let Some(k) = names.fact(LineKey::Level) {
                        line.raw(k, &level.as_str().to_ascii_lowercase());
                    }
                    if let Some(k) = names.fact(LineKey::Event) {
                        line.text(k, name);
                    }
                    line.raw(&names.suppressed, &suppressed.to_string());
                    line.raw(&names.interval_ms, &interval.as_millis().to_string());
                }
            }
            self.emit(level, target, None, buffer);
        });
    }

    fn emit(&self, level: Level, target: &str, location: Option<&'static Location>, line: &[u8]) {
        // Both writers write UTF-8 only (serde_json, and logfmt from `str`s).
        let line = std::str::from_utf8(line).unwrap_or("<line not UTF-8>");
        crate::record::emitting(|| {
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
                    names: &self.inner.line_names,
                    now,
                    level,
                    facts,
                    tags,
                };
                serde_json::to_writer(&mut *buffer, &line).expect("a Vec accepts every write");
            }
            Format::Logfmt => write_logfmt(buffer, &self.inner.line_names, now, level, facts, tags),
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
