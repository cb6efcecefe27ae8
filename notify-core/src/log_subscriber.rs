//! Log subscribers: turn the events of one namespace into lines of the [`log`] facade, one
//! formatting method and one [`Level`] per event — AS::N's `ActiveSupport::LogSubscriber`
//! (`attach_to`, `subscribe_log_level`, `color`).
//!
//! # Event names: `"<method>.<namespace>"`
//!
//! notify follows AS::N's convention: an event name is the *method* (what happened, a verb or a
//! noun: `query`, `transaction`, `request`) followed by a dot and the *namespace* (who published
//! it: `sql`, `db`, `bookstore`), e.g. `"query.sql"`, `"request.bookstore"`, as Rails publishes
//! `"sql.active_record"` and `"process_action.action_controller"`. The namespace is everything
//! after the first dot and may itself contain dots (`"query.db.replica"`); the method never does.
//! Why this order: a whole library is one glob (`Pattern::glob("*.sql")`), the method part is the
//! name of the formatting method, and Rails users read the names they already know.
//!
//! # How a log subscriber works
//!
//! A type implements [`LogSubscriber`] by returning a [`LogConfig`]: its namespace, its `log`
//! target (the namespace unless set) and its methods, each with a level and a formatting function
//! that turns a [`LogEvent`] into a line. [`LogSubscriber::attach_to`] subscribes one
//! [`LogMethod`] per method, by exact event name, in the *silenceable* listener group: before each
//! event the notifier asks [`SilenceableSubscriber::silenced`], which answers exactly what
//! `log::log_enabled!(target: …, level)` would answer *now* (the static and dynamic max level, then
//! the logger's own `enabled`). Nothing is cached, so raising the logger's level takes effect on
//! the next event, without re-subscribing; and while the logger would drop the line, the event
//! costs what an unlistened event costs (no payload, no clock read, no callback).
//!
//! The configuration lives in the attached value, never in a `static`: two log-subscriber types
//! (or two instances of one) cannot see each other's targets or levels.
//!
//! # Durations
//!
//! Silenceable subscribers are *evented* (`start`, `finish`), so a log method measures its own
//! duration: `start` reads the monotonic clock and pushes `(method, event id, Instant)` on a small
//! thread-local stack; `finish` takes its entry back by event id. No lock, no allocation after the
//! first event of a thread, no sharing between threads. Start and finish of a synchronous event
//! (`instrument`, a callsite, a handle finished where it was started) run on one thread, so the
//! entry is always found. An event finished on *another* thread (a [`Handle`](crate::Handle) sent
//! elsewhere, an async event resumed on another worker) finds no entry: its
//! [`LogEvent::duration`] is `None` and [`LogEvent::elapsed`] prints `?ms`; the line is still
//! logged. The stack keeps at most 64 open entries per thread (the oldest is dropped), so an event
//! started and never finished cannot leak memory. The alternative — asking the core to read the
//! clock for the silenceable group — would cost every silenceable subscriber two clock reads
//! even when it wants none, which is why this module measures for itself.
//!
//! # Failures
//!
//! A formatting method that panics is caught: the log subscriber writes
//! `could not log <event name>: <panic message>` at [`Level::Error`] to its target (AS::N's
//! `log_exception`), and the next events are logged normally. The instrumented code never sees it.
//!
//! ```
//! use notify_core::log_subscriber::{Level, LogConfig, LogEvent, LogSubscriber};
//! use notify_core::{Notifier, Payload};
//!
//! struct Db;
//! impl LogSubscriber for Db {
//!     fn config() -> LogConfig<Db> {
//!         LogConfig::new("db").method("query", Level::Debug, |_: &Db, event: &LogEvent<'_>| {
//!             Some(format!("{} ({})  {}", event.method(), event.elapsed(), event.payload().get("sql")?))
//!         })
//!     }
//! }
//!
//! let notifier = Notifier::new();
//! let attached = Db.attach_to(&notifier)?;
//! assert_eq!(attached.event_names().collect::<Vec<_>>(), ["query.db"]);
//! // No logger is installed here, so the `log` facade drops everything: the subscriber is silenced.
//! assert!(!notifier.listening("query.db"));
//! notifier.instrument("query.db", || Payload::new().with("sql", "SELECT 1"), |_| ());
//! # Ok::<(), notify_core::log_subscriber::LogSubscriberError>(())
//! ```

use std::fmt;
use std::io::IsTerminal;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::failure::panic_message;
use crate::notifier::{Notifier, Subscription};
use crate::pattern::Pattern;
use crate::payload::Payload;
use crate::subscriber::{EventedSubscriber, SilenceableSubscriber, Subscriber};

pub use log::Level;

/// A formatting method: the subscriber, the event; the line to log, or `None` to log nothing.
type FormatFn<T> = Box<dyn Fn(&T, &LogEvent<'_>) -> Option<String> + Send + Sync>;

/// A type whose values log the events of one namespace — AS::N's `ActiveSupport::LogSubscriber`
/// subclass. [`LogSubscriber::config`] plays the part of the class body (its methods and
/// `subscribe_log_level` calls); [`LogSubscriber::attach_to`] is AS::N's `attach_to`.
///
/// ```
/// use notify_core::log_subscriber::{Level, LogConfig, LogEvent, LogSubscriber};
///
/// struct Mailer;
/// impl Mailer {
///     fn deliver(&self, event: &LogEvent<'_>) -> Option<String> {
///         Some(format!("Delivered mail to {} ({})", event.payload().get("to")?, event.elapsed()))
///     }
/// }
/// impl LogSubscriber for Mailer {
///     fn config() -> LogConfig<Mailer> {
///         LogConfig::new("mailer").method("deliver", Level::Info, Mailer::deliver)
///     }
/// }
/// let attached = Mailer.attach_to(&notify_core::Notifier::new())?;
/// assert_eq!(attached.target(), "mailer");
/// # Ok::<(), notify_core::log_subscriber::LogSubscriberError>(())
/// ```
pub trait LogSubscriber: Send + Sync + Sized + 'static {
    /// The namespace, target and methods of this type. Called once per attach; the result is kept
    /// in the attached value (never in a `static`), so configurations of different types cannot leak
    /// into each other.
    fn config() -> LogConfig<Self>;

    /// This value's colour choice, which overrides the configuration's [`LogConfig::color`] when
    /// `Some` (default `None`), so one type can colour in a terminal program and not in another.
    ///
    /// ```
    /// use notify_core::log_subscriber::{ColorChoice, Level, LogConfig, LogEvent, LogSubscriber};
    /// struct Plain(Option<ColorChoice>);
    /// impl LogSubscriber for Plain {
    ///     fn config() -> LogConfig<Plain> {
    ///         LogConfig::new("plain").color(ColorChoice::Always).method("x", Level::Info, |_: &Plain, _: &LogEvent<'_>| None)
    ///     }
    ///     fn color(&self) -> Option<ColorChoice> { self.0 }
    /// }
    /// assert_eq!(Plain(Some(ColorChoice::Never)).color(), Some(ColorChoice::Never));
    /// ```
    fn color(&self) -> Option<ColorChoice> {
        None
    }

    /// Subscribes `self` to `notifier`: one silenceable subscription per method, on the exact name
    /// `"<method>.<namespace>"` (AS::N's `attach_to`, which subscribes each public method the same way).
    ///
    /// # Errors
    /// [`LogSubscriberError`] when the configuration is invalid (empty namespace, a method name that
    /// is empty or contains a dot); nothing is subscribed then.
    ///
    /// ```
    /// use notify_core::log_subscriber::{Level, LogConfig, LogEvent, LogSubscriber};
    /// struct Jobs;
    /// impl LogSubscriber for Jobs {
    ///     fn config() -> LogConfig<Jobs> {
    ///         LogConfig::new("jobs").method("perform", Level::Info, |_: &Jobs, _: &LogEvent<'_>| None)
    ///     }
    /// }
    /// let notifier = notify_core::Notifier::new();
    /// let attached = Jobs.attach_to(&notifier)?;
    /// assert_eq!(notifier.subscriber_count(), 1);
    /// assert_eq!(attached.detach(), 1);
    /// assert_eq!(notifier.subscriber_count(), 0);
    /// # Ok::<(), notify_core::log_subscriber::LogSubscriberError>(())
    /// ```
    fn attach_to(self, notifier: &Notifier) -> Result<Attached<Self>, LogSubscriberError> {
        let methods = LogMethod::all(self)?;
        let subscriptions = notifier.subscribe_all(methods.iter().map(|m| {
            let label = format!("log subscriber `{}` ({})", m.shared.target, m.event_name());
            (
                Pattern::exact(m.event_name()),
                Subscriber::silenceable(m.clone()).named(label),
            )
        }));
        Ok(Attached { methods, subscriptions })
    }
}

/// When a log subscriber writes ANSI colours (AS::N's `colorize_logging`).
///
/// ```
/// use notify_core::log_subscriber::ColorChoice;
/// assert_eq!(ColorChoice::default(), ColorChoice::Auto);
/// assert!(ColorChoice::Always.resolve());
/// assert!(!ColorChoice::Never.resolve());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ColorChoice {
    /// Colour when standard error (where `env_logger` and most loggers write) is a terminal and the
    /// `NO_COLOR` environment variable is unset or empty (<https://no-color.org>).
    #[default]
    Auto,
    /// Always colour.
    Always,
    /// Never colour.
    Never,
}

impl ColorChoice {
    /// True when this choice means "write colours", checking the terminal and `NO_COLOR` for
    /// [`ColorChoice::Auto`]. A log subscriber resolves its choice once, when it is attached.
    ///
    /// ```
    /// use notify_core::log_subscriber::ColorChoice;
    /// // Under a test harness standard error is usually captured, so `Auto` means no colour there.
    /// let _ = ColorChoice::Auto.resolve();
    /// ```
    pub fn resolve(self) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
                !no_color && std::io::stderr().is_terminal()
            }
        }
    }
}

/// The eight basic ANSI colours, for [`LogEvent::color`] (AS::N's `color(text, :red)` symbols).
///
/// ```
/// use notify_core::log_subscriber::Color;
/// assert_ne!(Color::Red, Color::Green);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Color {
    /// Black.
    Black,
    /// Red.
    Red,
    /// Green.
    Green,
    /// Yellow.
    Yellow,
    /// Blue.
    Blue,
    /// Magenta.
    Magenta,
    /// Cyan.
    Cyan,
    /// White.
    White,
}

impl Color {
    fn ansi(self) -> anstyle::AnsiColor {
        match self {
            Color::Black => anstyle::AnsiColor::Black,
            Color::Red => anstyle::AnsiColor::Red,
            Color::Green => anstyle::AnsiColor::Green,
            Color::Yellow => anstyle::AnsiColor::Yellow,
            Color::Blue => anstyle::AnsiColor::Blue,
            Color::Magenta => anstyle::AnsiColor::Magenta,
            Color::Cyan => anstyle::AnsiColor::Cyan,
            Color::White => anstyle::AnsiColor::White,
        }
    }
}

/// What a log-subscriber type declares: namespace, `log` target, methods with their levels, colour.
/// Built with [`LogConfig::new`] and the builder methods; returned by [`LogSubscriber::config`].
///
/// ```
/// use notify_core::log_subscriber::{Level, LogConfig, LogEvent};
/// struct Sql;
/// let config = LogConfig::<Sql>::new("sql")
///     .target("app::sql")
///     .method("query", Level::Debug, |_: &Sql, _: &LogEvent<'_>| None)
///     .method("migration", Level::Info, |_: &Sql, _: &LogEvent<'_>| None);
/// assert_eq!(config.target_name(), "app::sql");
/// assert_eq!(config.events_at(Level::Debug), ["query.sql"]);
/// assert_eq!(config.level_of("migration.sql"), Some(Level::Info));
/// ```
pub struct LogConfig<T> {
    namespace: String,
    target: Option<String>,
    methods: Vec<MethodSpec<T>>,
    color: ColorChoice,
}

struct MethodSpec<T> {
    method: String,
    event_name: String,
    level: Level,
    format: FormatFn<T>,
}

impl<T> LogConfig<T> {
    /// A configuration for the events `"*.<namespace>"`, with target `namespace`, no methods and
    /// [`ColorChoice::Auto`]. The namespace is checked when the subscriber is attached.
    ///
    /// ```
    /// let config = notify_core::log_subscriber::LogConfig::<()>::new("db");
    /// assert_eq!(config.namespace(), "db");
    /// assert_eq!(config.target_name(), "db");
    /// ```
    pub fn new(namespace: impl Into<String>) -> LogConfig<T> {
        LogConfig {
            namespace: namespace.into(),
            target: None,
            methods: Vec::new(),
            color: ColorChoice::Auto,
        }
    }

    /// Sets the `log` target of every line (default: the namespace), so logger filters such as
    /// `RUST_LOG=app::sql=debug` select it.
    ///
    /// ```
    /// let config = notify_core::log_subscriber::LogConfig::<()>::new("db").target("myapp::db");
    /// assert_eq!(config.target_name(), "myapp::db");
    /// ```
    #[must_use]
    pub fn target(mut self, target: impl Into<String>) -> LogConfig<T> {
        self.target = Some(target.into());
        self
    }

    /// Maps the event `"<method>.<namespace>"` to `format` at `level` (AS::N: a public method plus
    /// `subscribe_log_level :method, :level`). `format` returns the line, or `None` to log nothing
    /// for this event. Declaring a method twice keeps the last declaration.
    ///
    /// ```
    /// use notify_core::log_subscriber::{Level, LogConfig, LogEvent};
    /// let config = LogConfig::<()>::new("db")
    ///     .method("query", Level::Info, |_: &(), _: &LogEvent<'_>| None)
    ///     .method("query", Level::Debug, |_: &(), _: &LogEvent<'_>| None);
    /// assert_eq!(config.level_of("query.db"), Some(Level::Debug));
    /// ```
    #[must_use]
    pub fn method(
        mut self,
        method: impl Into<String>,
        level: Level,
        format: impl Fn(&T, &LogEvent<'_>) -> Option<String> + Send + Sync + 'static,
    ) -> LogConfig<T> {
        let method = method.into();
        let event_name = format!("{method}.{}", self.namespace);
        self.methods.retain(|m| m.method != method);
        self.methods.push(MethodSpec {
            method,
            event_name,
            level,
            format: Box::new(format),
        });
        self
    }

    /// Sets when lines are coloured (default [`ColorChoice::Auto`]).
    ///
    /// ```
    /// use notify_core::log_subscriber::{ColorChoice, LogConfig};
    /// let config = LogConfig::<()>::new("db").color(ColorChoice::Never);
    /// assert_eq!(config.color_choice(), ColorChoice::Never);
    /// ```
    #[must_use]
    pub fn color(mut self, choice: ColorChoice) -> LogConfig<T> {
        self.color = choice;
        self
    }

    /// The namespace.
    ///
    /// ```
    /// assert_eq!(notify_core::log_subscriber::LogConfig::<()>::new("sql").namespace(), "sql");
    /// ```
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The `log` target: the one set with [`LogConfig::target`], else the namespace.
    ///
    /// ```
    /// assert_eq!(notify_core::log_subscriber::LogConfig::<()>::new("sql").target_name(), "sql");
    /// ```
    pub fn target_name(&self) -> &str {
        self.target.as_deref().unwrap_or(&self.namespace)
    }

    /// The colour choice.
    ///
    /// ```
    /// use notify_core::log_subscriber::{ColorChoice, LogConfig};
    /// assert_eq!(LogConfig::<()>::new("sql").color_choice(), ColorChoice::Auto);
    /// ```
    pub fn color_choice(&self) -> ColorChoice {
        self.color
    }

    /// The level of the method for the event `event_name`, if this configuration has one.
    ///
    /// ```
    /// use notify_core::log_subscriber::{Level, LogConfig, LogEvent};
    /// let config = LogConfig::<()>::new("db").method("query", Level::Debug, |_: &(), _: &LogEvent<'_>| None);
    /// assert_eq!(config.level_of("query.db"), Some(Level::Debug));
    /// assert_eq!(config.level_of("query.other"), None);
    /// ```
    pub fn level_of(&self, event_name: &str) -> Option<Level> {
        self.methods
            .iter()
            .find(|m| m.event_name == event_name)
            .map(|m| m.level)
    }

    /// The event names whose methods log at exactly `level`, in declaration order (AS::N keeps the
    /// same per class in `log_levels`).
    ///
    /// ```
    /// use notify_core::log_subscriber::{Level, LogConfig, LogEvent};
    /// let config = LogConfig::<()>::new("db")
    ///     .method("query", Level::Debug, |_: &(), _: &LogEvent<'_>| None)
    ///     .method("connect", Level::Info, |_: &(), _: &LogEvent<'_>| None);
    /// assert_eq!(config.events_at(Level::Info), ["connect.db"]);
    /// ```
    pub fn events_at(&self, level: Level) -> Vec<String> {
        self.methods
            .iter()
            .filter(|m| m.level == level)
            .map(|m| m.event_name.clone())
            .collect()
    }

    fn validate(&self) -> Result<(), LogSubscriberError> {
        let ns = &self.namespace;
        if ns.is_empty() || ns.starts_with('.') || ns.ends_with('.') || ns.contains("..") {
            return Err(LogSubscriberError::InvalidNamespace(ns.clone()));
        }
        if let Some(m) = self
            .methods
            .iter()
            .find(|m| m.method.is_empty() || m.method.contains('.'))
        {
            return Err(LogSubscriberError::InvalidMethod {
                namespace: ns.clone(),
                method: m.method.clone(),
            });
        }
        Ok(())
    }
}

impl<T> fmt::Debug for LogConfig<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LogConfig")
            .field("namespace", &self.namespace)
            .field("target", &self.target_name())
            .field(
                "methods",
                &self
                    .methods
                    .iter()
                    .map(|m| (&m.event_name, m.level))
                    .collect::<Vec<_>>(),
            )
            .field("color", &self.color)
            .finish()
    }
}

/// An invalid [`LogConfig`]; nothing was subscribed.
///
/// ```
/// use notify_core::log_subscriber::{Level, LogConfig, LogEvent, LogSubscriber, LogSubscriberError};
/// struct Bad;
/// impl LogSubscriber for Bad {
///     fn config() -> LogConfig<Bad> {
///         LogConfig::new("db").method("query.slow", Level::Debug, |_: &Bad, _: &LogEvent<'_>| None)
///     }
/// }
/// let err = Bad.attach_to(&notify_core::Notifier::new()).unwrap_err();
/// assert_eq!(err.to_string(), "invalid log subscriber method `query.slow` in namespace `db`: a method name is non-empty and has no dot");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LogSubscriberError {
    /// The namespace is empty, or starts or ends with a dot, or has an empty part (`"a..b"`).
    InvalidNamespace(String),
    /// A method name is empty or contains a dot.
    InvalidMethod {
        /// The namespace of the configuration.
        namespace: String,
        /// The method name as given.
        method: String,
    },
}

impl fmt::Display for LogSubscriberError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LogSubscriberError::InvalidNamespace(ns) => write!(
                f,
                "invalid log subscriber namespace `{ns}`: a namespace is non-empty dot-separated words"
            ),
            LogSubscriberError::InvalidMethod { namespace, method } => write!(
                f,
                "invalid log subscriber method `{method}` in namespace `{namespace}`: a method name is non-empty and has no dot"
            ),
        }
    }
}

impl std::error::Error for LogSubscriberError {}

/// What every [`LogMethod`] of one attached log subscriber shares.
struct Shared<T> {
    subscriber: T,
    namespace: String,
    target: String,
    color: bool,
    methods: Vec<MethodSpec<T>>,
}

/// One method of one log subscriber, as a [`SilenceableSubscriber`]: what
/// [`LogSubscriber::attach_to`] subscribes for each method. Use [`LogMethod::all`] to subscribe
/// them yourself (another pattern, a label, a wrapper).
///
/// ```
/// use notify_core::log_subscriber::{Level, LogConfig, LogEvent, LogMethod, LogSubscriber};
/// use notify_core::{Notifier, Pattern, Subscriber};
/// struct Db;
/// impl LogSubscriber for Db {
///     fn config() -> LogConfig<Db> {
///         LogConfig::new("db").method("query", Level::Debug, |_: &Db, _: &LogEvent<'_>| None)
///     }
/// }
/// let notifier = Notifier::new();
/// for method in LogMethod::all(Db)? {
///     assert_eq!(method.level(), Level::Debug);
///     notifier.subscribe(Pattern::exact(method.event_name()), Subscriber::silenceable(method));
/// }
/// assert_eq!(notifier.subscriber_count(), 1);
/// # Ok::<(), notify_core::log_subscriber::LogSubscriberError>(())
/// ```
pub struct LogMethod<T> {
    shared: Arc<Shared<T>>,
    index: usize,
}

impl<T> Clone for LogMethod<T> {
    fn clone(&self) -> Self {
        LogMethod {
            shared: self.shared.clone(),
            index: self.index,
        }
    }
}

impl<T: LogSubscriber> LogMethod<T> {
    /// The methods of `subscriber`'s configuration ([`LogSubscriber::config`]), sharing one
    /// subscriber value, in declaration order. The colour choice is resolved here.
    ///
    /// # Errors
    /// [`LogSubscriberError`] when the configuration is invalid.
    ///
    /// ```
    /// use notify_core::log_subscriber::{Level, LogConfig, LogEvent, LogMethod, LogSubscriber};
    /// struct Db;
    /// impl LogSubscriber for Db {
    ///     fn config() -> LogConfig<Db> {
    ///         LogConfig::new("db")
    ///             .method("query", Level::Debug, |_: &Db, _: &LogEvent<'_>| None)
    ///             .method("connect", Level::Info, |_: &Db, _: &LogEvent<'_>| None)
    ///     }
    /// }
    /// let names: Vec<String> = LogMethod::all(Db)?.iter().map(|m| m.event_name().to_owned()).collect();
    /// assert_eq!(names, ["query.db", "connect.db"]);
    /// # Ok::<(), notify_core::log_subscriber::LogSubscriberError>(())
    /// ```
    pub fn all(subscriber: T) -> Result<Vec<LogMethod<T>>, LogSubscriberError> {
        let config = T::config();
        config.validate()?;
        let target = config.target_name().to_owned();
        let color = subscriber.color().unwrap_or(config.color).resolve();
        let shared = Arc::new(Shared {
            subscriber,
            namespace: config.namespace,
            target,
            color,
            methods: config.methods,
        });
        Ok((0..shared.methods.len())
            .map(|index| LogMethod {
                shared: shared.clone(),
                index,
            })
            .collect())
    }
}

impl<T> LogMethod<T> {
    fn spec(&self) -> &MethodSpec<T> {
        &self.shared.methods[self.index]
    }

    /// The event name this method formats, `"<method>.<namespace>"`.
    ///
    /// ```
    /// # use notify_core::log_subscriber::{Level, LogConfig, LogEvent, LogMethod, LogSubscriber};
    /// # struct Db;
    /// # impl LogSubscriber for Db {
    /// #     fn config() -> LogConfig<Db> { LogConfig::new("db").method("query", Level::Debug, |_: &Db, _: &LogEvent<'_>| None) }
    /// # }
    /// assert_eq!(LogMethod::all(Db)?[0].event_name(), "query.db");
    /// # Ok::<(), notify_core::log_subscriber::LogSubscriberError>(())
    /// ```
    pub fn event_name(&self) -> &str {
        &self.spec().event_name
    }

    /// The level this method logs at.
    ///
    /// ```
    /// # use notify_core::log_subscriber::{Level, LogConfig, LogEvent, LogMethod, LogSubscriber};
    /// # struct Db;
    /// # impl LogSubscriber for Db {
    /// #     fn config() -> LogConfig<Db> { LogConfig::new("db").method("query", Level::Debug, |_: &Db, _: &LogEvent<'_>| None) }
    /// # }
    /// assert_eq!(LogMethod::all(Db)?[0].level(), Level::Debug);
    /// # Ok::<(), notify_core::log_subscriber::LogSubscriberError>(())
    /// ```
    pub fn level(&self) -> Level {
        self.spec().level
    }

    /// The `log` target of this method's lines.
    ///
    /// ```
    /// # use notify_core::log_subscriber::{Level, LogConfig, LogEvent, LogMethod, LogSubscriber};
    /// # struct Db;
    /// # impl LogSubscriber for Db {
    /// #     fn config() -> LogConfig<Db> { LogConfig::new("db").method("query", Level::Debug, |_: &Db, _: &LogEvent<'_>| None) }
    /// # }
    /// assert_eq!(LogMethod::all(Db)?[0].target(), "db");
    /// # Ok::<(), notify_core::log_subscriber::LogSubscriberError>(())
    /// ```
    pub fn target(&self) -> &str {
        &self.shared.target
    }

    /// The subscriber value the methods are called on.
    ///
    /// ```
    /// # use notify_core::log_subscriber::{Level, LogConfig, LogEvent, LogMethod, LogSubscriber};
    /// struct Db { prefix: &'static str }
    /// # impl LogSubscriber for Db {
    /// #     fn config() -> LogConfig<Db> { LogConfig::new("db").method("query", Level::Debug, |_: &Db, _: &LogEvent<'_>| None) }
    /// # }
    /// assert_eq!(LogMethod::all(Db { prefix: "db" })?[0].subscriber().prefix, "db");
    /// # Ok::<(), notify_core::log_subscriber::LogSubscriberError>(())
    /// ```
    pub fn subscriber(&self) -> &T {
        &self.shared.subscriber
    }

    /// A key unique to this method of this attached subscriber while it lives.
    fn key(&self) -> usize {
        self.spec() as *const MethodSpec<T> as usize
    }
}

/// True when the `log` facade would keep a record of `level` for `target` right now: the same
/// check as `log::log_enabled!(target: target, level)`, made on every call.
fn log_enabled(level: Level, target: &str) -> bool {
    level <= log::STATIC_MAX_LEVEL
        && level <= log::max_level()
        && log::logger().enabled(&log::Metadata::builder().level(level).target(target).build())
}

impl<T: Send + Sync + 'static> EventedSubscriber for LogMethod<T> {
    fn start(&self, _name: &str, id: u64, _payload: &Payload) {
        starts::push(self.key(), id, Instant::now());
    }

    fn finish(&self, name: &str, id: u64, payload: &Payload) {
        let duration = starts::take(self.key(), id).map(|at| at.elapsed());
        let shared = &*self.shared;
        let spec = self.spec();
        let event = LogEvent {
            name,
            method: &spec.method,
            namespace: &shared.namespace,
            id,
            payload,
            duration,
            color: shared.color,
        };
        match catch_unwind(AssertUnwindSafe(|| (spec.format)(&shared.subscriber, &event))) {
            Ok(Some(line)) => log::log!(target: &shared.target, spec.level, "{line}"),
            Ok(None) => {}
            Err(panic) => {
                log::error!(target: &shared.target, "could not log {name}: {}", panic_message(&*panic))
            }
        }
    }
}

impl<T: Send + Sync + 'static> SilenceableSubscriber for LogMethod<T> {
    /// True exactly when the `log` facade would drop this method's record now (see [`LogMethod`]).
    fn silenced(&self, _name: &str) -> bool {
        !log_enabled(self.spec().level, &self.shared.target)
    }
}

impl<T> fmt::Debug for LogMethod<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LogMethod")
            .field("event_name", &self.event_name())
            .field("level", &self.level())
            .field("target", &self.target())
            .finish()
    }
}

/// A log subscriber attached to a notifier: its methods and their subscriptions. Dropping it keeps
/// the subscriptions (as AS::N's `attach_to` does); [`Attached::detach`] removes them.
///
/// ```
/// use notify_core::log_subscriber::{Level, LogConfig, LogEvent, LogSubscriber};
/// struct Db;
/// impl LogSubscriber for Db {
///     fn config() -> LogConfig<Db> {
///         LogConfig::new("db").target("app::db").method("query", Level::Debug, |_: &Db, _: &LogEvent<'_>| None)
///     }
/// }
/// let attached = Db.attach_to(&notify_core::Notifier::new())?;
/// assert_eq!((attached.namespace(), attached.target()), ("db", "app::db"));
/// assert_eq!(attached.events_at(Level::Debug), ["query.db"]);
/// # Ok::<(), notify_core::log_subscriber::LogSubscriberError>(())
/// ```
pub struct Attached<T> {
    methods: Vec<LogMethod<T>>,
    subscriptions: Vec<Subscription>,
}

impl<T> Attached<T> {
    /// The namespace.
    ///
    /// ```
    /// # use notify_core::log_subscriber::{Level, LogConfig, LogEvent, LogSubscriber};
    /// # struct Db;
    /// # impl LogSubscriber for Db {
    /// #     fn config() -> LogConfig<Db> { LogConfig::new("db").method("query", Level::Debug, |_: &Db, _: &LogEvent<'_>| None) }
    /// # }
    /// assert_eq!(Db.attach_to(&notify_core::Notifier::new())?.namespace(), "db");
    /// # Ok::<(), notify_core::log_subscriber::LogSubscriberError>(())
    /// ```
    pub fn namespace(&self) -> &str {
        self.methods.first().map_or("", |m| m.shared.namespace.as_str())
    }

    /// The `log` target of every line.
    ///
    /// ```
    /// # use notify_core::log_subscriber::{Level, LogConfig, LogEvent, LogSubscriber};
    /// # struct Db;
    /// # impl LogSubscriber for Db {
    /// #     fn config() -> LogConfig<Db> { LogConfig::new("db").method("query", Level::Debug, |_: &Db, _: &LogEvent<'_>| None) }
    /// # }
    /// assert_eq!(Db.attach_to(&notify_core::Notifier::new())?.target(), "db");
    /// # Ok::<(), notify_core::log_subscriber::LogSubscriberError>(())
    /// ```
    pub fn target(&self) -> &str {
        self.methods.first().map_or("", |m| m.shared.target.as_str())
    }

    /// The attached methods, in declaration order.
    ///
    /// ```
    /// # use notify_core::log_subscriber::{Level, LogConfig, LogEvent, LogSubscriber};
    /// # struct Db;
    /// # impl LogSubscriber for Db {
    /// #     fn config() -> LogConfig<Db> { LogConfig::new("db").method("query", Level::Debug, |_: &Db, _: &LogEvent<'_>| None) }
    /// # }
    /// assert_eq!(Db.attach_to(&notify_core::Notifier::new())?.methods()[0].level(), Level::Debug);
    /// # Ok::<(), notify_core::log_subscriber::LogSubscriberError>(())
    /// ```
    pub fn methods(&self) -> &[LogMethod<T>] {
        &self.methods
    }

    /// The event names of the methods, in declaration order.
    ///
    /// ```
    /// # use notify_core::log_subscriber::{Level, LogConfig, LogEvent, LogSubscriber};
    /// # struct Db;
    /// # impl LogSubscriber for Db {
    /// #     fn config() -> LogConfig<Db> { LogConfig::new("db").method("query", Level::Debug, |_: &Db, _: &LogEvent<'_>| None) }
    /// # }
    /// let attached = Db.attach_to(&notify_core::Notifier::new())?;
    /// assert_eq!(attached.event_names().collect::<Vec<_>>(), ["query.db"]);
    /// # Ok::<(), notify_core::log_subscriber::LogSubscriberError>(())
    /// ```
    pub fn event_names(&self) -> impl Iterator<Item = &str> + '_ {
        self.methods.iter().map(|m| m.event_name())
    }

    /// The event names whose methods log at exactly `level` (AS::N's per-class `log_levels`).
    ///
    /// ```
    /// # use notify_core::log_subscriber::{Level, LogConfig, LogEvent, LogSubscriber};
    /// # struct Db;
    /// # impl LogSubscriber for Db {
    /// #     fn config() -> LogConfig<Db> { LogConfig::new("db").method("query", Level::Debug, |_: &Db, _: &LogEvent<'_>| None) }
    /// # }
    /// assert!(Db.attach_to(&notify_core::Notifier::new())?.events_at(Level::Info).is_empty());
    /// # Ok::<(), notify_core::log_subscriber::LogSubscriberError>(())
    /// ```
    pub fn events_at(&self, level: Level) -> Vec<String> {
        self.methods
            .iter()
            .filter(|m| m.level() == level)
            .map(|m| m.event_name().to_owned())
            .collect()
    }

    /// The subscriptions, one per method.
    ///
    /// ```
    /// # use notify_core::log_subscriber::{Level, LogConfig, LogEvent, LogSubscriber};
    /// # struct Db;
    /// # impl LogSubscriber for Db {
    /// #     fn config() -> LogConfig<Db> { LogConfig::new("db").method("query", Level::Debug, |_: &Db, _: &LogEvent<'_>| None) }
    /// # }
    /// assert_eq!(Db.attach_to(&notify_core::Notifier::new())?.subscriptions().len(), 1);
    /// # Ok::<(), notify_core::log_subscriber::LogSubscriberError>(())
    /// ```
    pub fn subscriptions(&self) -> &[Subscription] {
        &self.subscriptions
    }

    /// Unsubscribes every method (AS::N's `detach_from`); returns how many subscriptions were removed.
    ///
    /// ```
    /// # use notify_core::log_subscriber::{Level, LogConfig, LogEvent, LogSubscriber};
    /// # struct Db;
    /// # impl LogSubscriber for Db {
    /// #     fn config() -> LogConfig<Db> { LogConfig::new("db").method("query", Level::Debug, |_: &Db, _: &LogEvent<'_>| None) }
    /// # }
    /// assert_eq!(Db.attach_to(&notify_core::Notifier::new())?.detach(), 1);
    /// # Ok::<(), notify_core::log_subscriber::LogSubscriberError>(())
    /// ```
    pub fn detach(self) -> usize {
        self.subscriptions.iter().filter(|s| s.unsubscribe().is_ok()).count()
    }
}

impl<T> fmt::Debug for Attached<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Attached")
            .field("methods", &self.methods)
            .field("subscriptions", &self.subscriptions.len())
            .finish()
    }
}

/// One event as a formatting method sees it: name, method, namespace, payload, duration, and
/// AS::N's `color` helper.
///
/// ```
/// use notify_core::log_subscriber::{Color, LogEvent};
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
    id: u64,
    payload: &'a Payload,
    duration: Option<Duration>,
    color: bool,
}

impl<'a> LogEvent<'a> {
    /// An event named `name` (split at its first dot into method and namespace) with colour off
    /// and event id 0: for testing formatting methods without a notifier.
    ///
    /// ```
    /// let payload = notify_core::Payload::new();
    /// let event = notify_core::log_subscriber::LogEvent::new("request", &payload, None);
    /// assert_eq!((event.method(), event.namespace()), ("request", ""));
    /// ```
    pub fn new(name: &'a str, payload: &'a Payload, duration: Option<Duration>) -> LogEvent<'a> {
        let (method, namespace) = name.split_once('.').unwrap_or((name, ""));
        LogEvent {
            name,
            method,
            namespace,
            id: 0,
            payload,
            duration,
            color: false,
        }
    }

    /// Turns colour on or off for [`LogEvent::color`] and [`LogEvent::elapsed`] (an attached
    /// subscriber sets it from its [`ColorChoice`]).
    ///
    /// ```
    /// use notify_core::log_subscriber::{Color, LogEvent};
    /// let payload = notify_core::Payload::new();
    /// let event = LogEvent::new("query.db", &payload, None).with_color(true);
    /// assert_eq!(event.color("x", Some(Color::Red), false).to_string(), "\u{1b}[31mx\u{1b}[0m");
    /// ```
    #[must_use]
    pub fn with_color(mut self, color: bool) -> LogEvent<'a> {
        self.color = color;
        self
    }

    /// The full event name, e.g. `"query.sql"`.
    ///
    /// ```
    /// let p = notify_core::Payload::new();
    /// assert_eq!(notify_core::log_subscriber::LogEvent::new("query.sql", &p, None).name(), "query.sql");
    /// ```
    pub fn name(&self) -> &'a str {
        self.name
    }

    /// The method part of the name, e.g. `"query"`.
    ///
    /// ```
    /// let p = notify_core::Payload::new();
    /// assert_eq!(notify_core::log_subscriber::LogEvent::new("query.sql", &p, None).method(), "query");
    /// ```
    pub fn method(&self) -> &'a str {
        self.method
    }

    /// The namespace part of the name, e.g. `"sql"`.
    ///
    /// ```
    /// let p = notify_core::Payload::new();
    /// assert_eq!(notify_core::log_subscriber::LogEvent::new("query.db.replica", &p, None).namespace(), "db.replica");
    /// ```
    pub fn namespace(&self) -> &'a str {
        self.namespace
    }

    /// The event id (pairs `start` and `finish`; 0 for [`LogEvent::new`]).
    ///
    /// ```
    /// let p = notify_core::Payload::new();
    /// assert_eq!(notify_core::log_subscriber::LogEvent::new("query.sql", &p, None).id(), 0);
    /// ```
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The payload, including what the instrumented block added.
    ///
    /// ```
    /// let p = notify_core::Payload::new().with("rows", 3_u64);
    /// let event = notify_core::log_subscriber::LogEvent::new("query.sql", &p, None);
    /// assert_eq!(event.payload().get("rows").and_then(|v| v.as_i64()), Some(3));
    /// ```
    pub fn payload(&self) -> &'a Payload {
        self.payload
    }

    /// Wall time from `start` to `finish` as measured by the log subscriber (monotonic clock);
    /// `None` when the event finished on another thread than it started (see the module docs).
    ///
    /// ```
    /// use std::time::Duration;
    /// let p = notify_core::Payload::new();
    /// let event = notify_core::log_subscriber::LogEvent::new("query.sql", &p, Some(Duration::from_millis(2)));
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
    /// let event = notify_core::log_subscriber::LogEvent::new("query.sql", &p, Some(Duration::from_micros(12_040)));
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
    /// assert!(!notify_core::log_subscriber::LogEvent::new("query.sql", &p, None).color_enabled());
    /// ```
    pub fn color_enabled(&self) -> bool {
        self.color
    }

    /// `text` in `color` (or the default colour for `None`), bold when `bold` — AS::N's
    /// `color(text, color, bold: true)`. Plain `text` when colour is off.
    ///
    /// ```
    /// use notify_core::log_subscriber::{Color, LogEvent};
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
/// style is empty.
///
/// ```
/// let p = notify_core::Payload::new();
/// let styled = notify_core::log_subscriber::LogEvent::new("a.b", &p, None).color(7, None, true);
/// assert_eq!(format!("[{styled}]"), "[7]");
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Styled<D> {
    text: D,
    style: anstyle::Style,
}

impl<D: fmt::Display> fmt::Display for Styled<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.style == anstyle::Style::new() {
            self.text.fmt(f)
        } else {
            write!(f, "{}{}{}", self.style.render(), self.text, self.style.render_reset())
        }
    }
}

/// A duration printed as AS::N does (`"0.4ms"`); [`LogEvent::elapsed`]'s result.
///
/// ```
/// let p = notify_core::Payload::new();
/// assert_eq!(notify_core::log_subscriber::LogEvent::new("a.b", &p, None).elapsed().to_string(), "?ms");
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

/// The thread-local stack of start instants, keyed by (log method, event id). See the module docs.
mod starts {
    use std::cell::RefCell;
    use std::time::Instant;

    /// Open entries kept per thread; beyond this the oldest is dropped.
    const CAPACITY: usize = 64;

    struct Start {
        key: usize,
        id: u64,
        at: Instant,
    }

    thread_local! {
        static STARTS: RefCell<Vec<Start>> = const { RefCell::new(Vec::new()) };
    }

    pub(super) fn push(key: usize, id: u64, at: Instant) {
        let _ = STARTS.try_with(|starts| {
            let mut starts = starts.borrow_mut();
            if starts.len() == CAPACITY {
                starts.remove(0);
            }
            starts.push(Start { key, id, at });
        });
    }

    /// Removes and returns the start of `(key, id)` pushed on this thread, if any (searching from
    /// the top: nested events finish first).
    pub(super) fn take(key: usize, id: u64) -> Option<Instant> {
        STARTS
            .try_with(|starts| {
                let mut starts = starts.borrow_mut();
                let i = starts.iter().rposition(|s| s.key == key && s.id == id)?;
                Some(starts.remove(i).at)
            })
            .ok()
            .flatten()
    }

    #[cfg(test)]
    pub(super) fn open() -> usize {
        STARTS.with(|starts| starts.borrow().len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_are_paired_by_key_and_id_and_bounded() {
        let base = starts::open();
        let t = Instant::now();
        starts::push(1, 10, t);
        starts::push(2, 10, t);
        starts::push(1, 11, t);
        assert_eq!(starts::take(1, 10), Some(t));
        assert_eq!(starts::take(1, 10), None);
        assert_eq!(starts::take(1, 11), Some(t));
        assert_eq!(starts::take(2, 10), Some(t));
        assert_eq!(starts::open(), base);
        for id in 0..100 {
            starts::push(3, id, t);
        }
        assert_eq!(starts::open(), base + 64);
        assert_eq!(starts::take(3, 0), None, "the oldest entries were dropped");
        assert_eq!(starts::take(3, 99), Some(t));
        for id in 36..99 {
            assert_eq!(starts::take(3, id), Some(t));
        }
        assert_eq!(starts::open(), base);
    }

    #[test]
    fn invalid_configurations_are_errors() {
        struct Empty;
        impl LogSubscriber for Empty {
            fn config() -> LogConfig<Empty> {
                LogConfig::new("")
            }
        }
        let err = LogMethod::all(Empty).unwrap_err();
        assert_eq!(err, LogSubscriberError::InvalidNamespace(String::new()));
        assert_eq!(
            err.to_string(),
            "invalid log subscriber namespace ``: a namespace is non-empty dot-separated words"
        );
    }
}
