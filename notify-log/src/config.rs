//! What a log-subscriber type declares ([`LogConfig`]: namespace, target, methods, colour) and
//! how a declaration can be invalid ([`LogSubscriberError`]).

use std::fmt;

use log::Level;
use notify_core::escape::Escaped;
use notify_core::subscriber::MethodsError;

use super::{ColorChoice, LogEvent};

/// A formatting method: the subscriber, the event; the line to log, or `None` to log nothing.
type FormatFn<T> = Box<dyn Fn(&T, &LogEvent<'_>) -> Option<String> + Send + Sync>;

/// What a log-subscriber type declares: namespace, `log` target, methods with their levels, colour.
/// Built with [`LogConfig::new`] and the builder methods; returned by [`LogSubscriber::config`].
///
/// ```
/// use notify_log::{Level, LogConfig, LogEvent};
/// struct Sql;
/// let config = LogConfig::<Sql>::new("sql")
///     .target("app::sql")
///     .method("query", Level::Debug, |_: &Sql, _: &LogEvent<'_>| None)
///     .method("migration", Level::Info, |_: &Sql, _: &LogEvent<'_>| None);
/// assert_eq!(config.target_name(), "app::sql");
/// assert_eq!(config.events_at(Level::Debug), ["query.sql"]);
/// assert_eq!(config.level_of("migration.sql"), Some(Level::Info));
/// ```
///
/// [`LogSubscriber::config`]: super::LogSubscriber::config
pub struct LogConfig<T> {
    pub(super) namespace: String,
    target: Option<String>,
    pub(super) methods: Vec<MethodSpec<T>>,
    pub(super) color: ColorChoice,
    pub(super) tags: bool,
}

/// One declared method: its name, its event name `"<method>.<namespace>"`, its level and its
/// formatting function.
pub(super) struct MethodSpec<T> {
    pub(super) method: String,
    pub(super) event_name: String,
    pub(super) level: Level,
    pub(super) format: FormatFn<T>,
}

impl<T> LogConfig<T> {
    /// A configuration for the events `"*.<namespace>"`, with target `namespace`, no methods and
    /// no colour ([`ColorChoice::Never`]). The namespace is checked when the subscriber is attached.
    ///
    /// ```
    /// let config = notify_log::LogConfig::<()>::new("db");
    /// assert_eq!(config.namespace(), "db");
    /// assert_eq!(config.target_name(), "db");
    /// ```
    pub fn new(namespace: impl Into<String>) -> LogConfig<T> {
        LogConfig {
            namespace: namespace.into(),
            target: None,
            methods: Vec::new(),
            color: ColorChoice::Never,
            tags: false,
        }
    }

    /// Sets the `log` target of every line (default: the namespace), so logger filters such as
    /// `RUST_LOG=app::sql=debug` select it.
    ///
    /// ```
    /// let config = notify_log::LogConfig::<()>::new("db").target("myapp::db");
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
    /// use notify_log::{Level, LogConfig, LogEvent};
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

    /// Sets whether lines are coloured (default [`ColorChoice::Never`]). Colour is off unless
    /// asked: pass [`ColorChoice::Always`], or [`ColorChoice::for_sink`] with the handle your
    /// logger writes to, so a logger writing to a file or a JSON sink never gets escape codes.
    ///
    /// ```
    /// use notify_log::{ColorChoice, LogConfig};
    /// let config = LogConfig::<()>::new("db").color(ColorChoice::for_sink(&std::io::stderr()));
    /// assert_eq!(config.color_choice(), ColorChoice::for_sink(&std::io::stderr()));
    /// ```
    #[must_use]
    pub fn color(mut self, choice: ColorChoice) -> LogConfig<T> {
        self.color = choice;
        self
    }

    /// Prefixes every line with the tags of the event's scope ([`notify_core::context::tagged`]), each value
    /// in brackets as Rails' `ActiveSupport::TaggedLogging` does: `[req-7] [acme]   Book Load …`
    /// (default off: lines are as the methods return them). Values are escaped.
    ///
    /// ```
    /// assert!(notify_log::LogConfig::<()>::new("sql").tagged(true).shows_tags());
    /// ```
    #[must_use]
    pub fn tagged(mut self, show: bool) -> LogConfig<T> {
        self.tags = show;
        self
    }

    /// True when lines are prefixed with the tags ([`LogConfig::tagged`]).
    pub fn shows_tags(&self) -> bool {
        self.tags
    }

    /// The namespace.
    ///
    /// ```
    /// assert_eq!(notify_log::LogConfig::<()>::new("sql").namespace(), "sql");
    /// ```
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The `log` target: the one set with [`LogConfig::target`], else the namespace.
    ///
    /// ```
    /// assert_eq!(notify_log::LogConfig::<()>::new("sql").target_name(), "sql");
    /// ```
    pub fn target_name(&self) -> &str {
        self.target.as_deref().unwrap_or(&self.namespace)
    }

    /// The colour choice.
    ///
    /// ```
    /// use notify_log::{ColorChoice, LogConfig};
    /// assert_eq!(LogConfig::<()>::new("sql").color_choice(), ColorChoice::Never);
    /// ```
    pub fn color_choice(&self) -> ColorChoice {
        self.color
    }

    /// The level of the method for the event `event_name`, if this configuration has one.
    ///
    /// ```
    /// use notify_log::{Level, LogConfig, LogEvent};
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
    /// use notify_log::{Level, LogConfig, LogEvent};
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
/// use notify_log::{Level, LogConfig, LogEvent, LogSubscriber, LogSubscriberError};
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
#[non_exhaustive]
pub enum LogSubscriberError {
    /// The namespace is empty, starts or ends with a dot, has an empty part (`"a..b"`) or a
    /// control character.
    InvalidNamespace(String),
    /// A method name is empty, contains a dot or a control character.
    InvalidMethod {
        /// The namespace of the configuration.
        namespace: String,
        /// The method name as given.
        method: String,
    },
    /// Another error of notify-core's [`Methods`](notify_core::subscriber::Methods), which log subscribers
    /// are attached with.
    Methods(MethodsError),
}

impl LogSubscriberError {
    pub(super) fn from_methods(error: MethodsError, namespace: &str) -> LogSubscriberError {
        match error {
            MethodsError::InvalidNamespace(ns) => LogSubscriberError::InvalidNamespace(ns),
            MethodsError::InvalidMethod { method, .. } => LogSubscriberError::InvalidMethod {
                namespace: namespace.to_owned(),
                method,
            },
            other => LogSubscriberError::Methods(other),
        }
    }
}

impl fmt::Display for LogSubscriberError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LogSubscriberError::InvalidNamespace(ns) => write!(
                f,
                "invalid log subscriber namespace `{}`: a namespace is non-empty dot-separated words",
                Escaped::truncated(ns, QUOTED_CHARS)
            ),
            LogSubscriberError::InvalidMethod { namespace, method } => write!(
                f,
                "invalid log subscriber method `{}` in namespace `{}`: a method name is non-empty and has no dot",
                Escaped::truncated(method, QUOTED_CHARS),
                Escaped::truncated(namespace, QUOTED_CHARS)
            ),
            LogSubscriberError::Methods(e) => e.fmt(f),
        }
    }
}

/// Characters of a namespace or method name an error message quotes.
const QUOTED_CHARS: usize = 80;

impl std::error::Error for LogSubscriberError {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{LogMethod, LogSubscriber};

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
