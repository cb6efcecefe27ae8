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
//! A log method is subscribed with [`EventedOptions::duration`](notify_core::subscriber::EventedOptions), so
//! the core reads the monotonic clock when the event starts and finishes and hands the times to
//! `finish` in its [`EventContext`](notify_core::context::EventContext): [`LogEvent::duration`] is the
//! event's own duration, also for an event that finishes on another thread than it started on (a
//! [`Handle`](notify_core::Handle) sent elsewhere, an async fn or instrumented future resumed on
//! another tokio worker). The clock is read only while some log method of the event is not
//! silenced (a silenced event costs what an unlistened one costs) and is shared with every other
//! listener that needs it. [`LogEvent::elapsed`] prints `?ms` only for a [`LogEvent`] built by hand
//! without a duration.
//!
//! # Built on notify-core's method-per-event subscribers
//!
//! A log subscriber is notify-core's [`NamespaceSubscriber`](notify_core::subscriber::NamespaceSubscriber)
//! mechanism plus a level and a line: [`LogSubscriber::attach_to`] declares one silenceable
//! [`Method`](notify_core::subscriber::Method) per configured method in a [`Methods`](notify_core::subscriber::Methods) and
//! attaches it, so names, validation and `detach` behave as they do for any subscriber type with a
//! method per event. AS::N's `method_added` (a method defined after `attach_to` is subscribed too)
//! has no run-time counterpart in Rust: a method added to [`LogSubscriber::config`] is subscribed by
//! the next `attach_to`, so detach ([`Attached::detach`]) and attach again to pick it up.
//!
//! # Colour: off unless asked, never decided by standard error
//!
//! [`LogEvent::color`] and [`LogEvent::elapsed`] colour text (AS::N's `color(text, :red, bold:
//! true)`) only when the subscriber's [`ColorChoice`] is [`ColorChoice::Always`]. The default is
//! [`ColorChoice::Never`]: a log subscriber cannot see where the `log` logger writes, so it never
//! guesses from standard error (a logger writing to a file while standard error is a terminal
//! must not get escape codes). Give it the handle your logger writes to,
//! `ColorChoice::for_sink(&std::io::stderr())`, to colour exactly when that handle is a terminal.
//!
//! # Lines cannot be forged
//!
//! Event names, payload values and panic messages can come from users. So that none can start a
//! new line (`"\n[INFO  auth] admin logged in"`), clear the screen, set the window title or
//! reverse the text a reader sees, a log subscriber escapes them ([`notify_core::escape`]):
//!
//! * [`LogEvent::get`] shows a payload value escaped ([`Value::escaped`](notify_core::Value::escaped));
//!   use it for values in lines. [`LogEvent::color`] escapes the text it styles.
//! * Every line a formatting method returns is escaped once more before it is logged: any control
//!   character left (from a raw `payload().get(..)` value, say) is written escaped. When colour is
//!   on, well-formed SGR sequences (`ESC [ … m`, colours only) are kept, so [`LogEvent::color`] and
//!   [`LogEvent::elapsed`] work; when colour is off nothing is kept. A line is therefore always
//!   one line: a method that wants two lines logs two events.
//! * The `could not log <event name>: <panic message>` line escapes the name and the message.
//!
//! # Structured lines: JSON and logfmt for any event
//!
//! [`StructuredLog`] needs no code per event name: one line per event with time, level, name,
//! duration, outcome, trace id, span id, parent id, location, tags ([`notify_core::context::tagged`]) and
//! payload, as JSON or logfmt, levels per namespace or name, silenced like the methods above,
//! optionally rate limited. See the [`structured`] module for an example line of each.
//!
//! # Ids and missing keys
//!
//! [`LogEvent::trace_id`], [`LogEvent::id`] and [`LogEvent::parent_id`] let a formatting method
//! show where its event sits in a trace. A method that returns `None` after [`LogEvent::get`] missed
//! a key (`event.get("sql")?`) does not lose its line: `<event name> (<elapsed>)  [missing sql]` is
//! written at its level instead; [`LogEvent::field`] marks a missing key in place.
//!
//! # Failures
//!
//! A formatting method that panics is caught: the log subscriber writes
//! `could not log <event name>: <panic message>` at [`Level::Error`] to its target (AS::N's
//! `log_exception`), and the next events are logged normally. The instrumented code never sees it.
//!
//! ```
//! use notify_log::{Level, LogConfig, LogEvent, LogSubscriber};
//! use notify_core::{Notifier, Payload};
//!
//! struct Db;
//! impl LogSubscriber for Db {
//!     fn config() -> LogConfig<Db> {
//!         LogConfig::new("db").method("query", Level::Debug, |_: &Db, event: &LogEvent<'_>| {
//!             Some(format!("{} ({})  {}", event.method(), event.elapsed(), event.get("sql")?))
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
//! # Ok::<(), notify_log::LogSubscriberError>(())
//! ```
//!
//! [`SilenceableSubscriber::silenced`]: notify_core::SilenceableSubscriber::silenced

mod color;
mod config;
mod event;
mod facts;
mod format;
mod json;
mod keys;
mod line;
mod line_keys;
mod logfmt;
mod method;
mod rate_limit;
mod record;
pub mod structured;

pub use log::Level;

pub use self::color::{Color, ColorChoice};
pub use self::config::{LogConfig, LogSubscriberError};
pub use self::event::{Elapsed, Field, LogEvent, Styled};
pub use self::method::{Attached, LogMethod};
pub use self::rate_limit::RateLimitStats;
pub use self::structured::{Format, Keys, LineKey, Placement, StructuredLog, StructuredLogger};

use notify_core::Notifier;

/// A type whose values log the events of one namespace — AS::N's `ActiveSupport::LogSubscriber`
/// subclass. [`LogSubscriber::config`] plays the part of the class body (its methods and
/// `subscribe_log_level` calls); [`LogSubscriber::attach_to`] is AS::N's `attach_to`.
///
/// ```
/// use notify_log::{Level, LogConfig, LogEvent, LogSubscriber};
///
/// struct Mailer;
/// impl Mailer {
///     fn deliver(&self, event: &LogEvent<'_>) -> Option<String> {
///         Some(format!("Delivered mail to {} ({})", event.get("to")?, event.elapsed()))
///     }
/// }
/// impl LogSubscriber for Mailer {
///     fn config() -> LogConfig<Mailer> {
///         LogConfig::new("mailer").method("deliver", Level::Info, Mailer::deliver)
///     }
/// }
/// let attached = Mailer.attach_to(&notify_core::Notifier::new())?;
/// assert_eq!(attached.target(), "mailer");
/// # Ok::<(), notify_log::LogSubscriberError>(())
/// ```
pub trait LogSubscriber: Send + Sync + Sized + 'static {
    /// The namespace, target and methods of this type. Called once per attach; the result is kept
    /// in the attached value (never in a `static`), so configurations of different types cannot leak
    /// into each other.
    fn config() -> LogConfig<Self>;

    /// This value's colour choice, which overrides the configuration's [`LogConfig::color`] when
    /// `Some` (default `None`), so one type can colour in a terminal program and not in another:
    /// return [`ColorChoice::for_sink`] of the handle the program's logger writes to (see
    /// [`ColorChoice`] for the rule; colour is off unless asked).
    ///
    /// ```
    /// use notify_log::{ColorChoice, Level, LogConfig, LogEvent, LogSubscriber};
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
    /// use notify_log::{Level, LogConfig, LogEvent, LogSubscriber};
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
    /// # Ok::<(), notify_log::LogSubscriberError>(())
    /// ```
    fn attach_to(self, notifier: &Notifier) -> Result<Attached<Self>, LogSubscriberError> {
        Attached::attach(self, notifier)
    }
}

/// This crate's README.md: its code blocks are compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
