//! One method of one attached log subscriber ([`LogMethod`]): the silencing check (the `log`
//! facade's own), the evented `start`/`finish` that measures and logs, and [`Attached`], the
//! methods of one attached subscriber with their subscriptions. Attaching goes through
//! notify-core's [`Methods`] (the `ActiveSupport::Subscriber` mechanism): each log method is one
//! silenceable method of the namespace.

use std::cell::RefCell;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Duration;

use log::Level;

use super::config::MethodSpec;
use super::line::Line;
use super::{LogEvent, LogSubscriber, LogSubscriberError};
use notify_core::escape::Escaped;
use notify_core::failure::panic_message;
use notify_core::{
    context::EventContext, event::EventId, event::Location, subscriber::EventedOptions, subscriber::SilenceKey, Event,
    EventedSubscriber, SilenceableSubscriber, TraceId,
};
use notify_core::{
    context::Tags, subscriber::Attachment, subscriber::Methods, Notifier, Payload, Subscriber, Subscription,
};

/// A log subscriber's shared state and its notify-core declaration.
type Declared<T> = (Arc<Shared<T>>, Methods<Shared<T>>);

/// What every [`LogMethod`] of one attached log subscriber shares: the value notify-core's
/// [`Methods`] are declared on.
pub(super) struct Shared<T> {
    subscriber: T,
    namespace: String,
    target: String,
    color: bool,
    /// Prefix lines with the scope's tags ([`LogConfig::tagged`](super::LogConfig::tagged)).
    tags: bool,
    methods: Vec<MethodSpec<T>>,
}

/// One method of one log subscriber, as a [`SilenceableSubscriber`]: what
/// [`LogSubscriber::attach_to`] subscribes for each method. Use [`LogMethod::all`] to subscribe
/// them yourself (another pattern, a label, a wrapper).
///
/// ```
/// use notify_log::{Level, LogConfig, LogEvent, LogMethod, LogSubscriber};
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
/// # Ok::<(), notify_log::LogSubscriberError>(())
/// ```
pub struct LogMethod<T> {
    shared: Arc<Shared<T>>,
    index: usize,
    /// `shared.methods[index].level`, kept here: [`LogMethod::silenced`] runs on every event and
    /// then reads the level without following the shared state to the method's spec.
    level: Level,
}

impl<T> Clone for LogMethod<T> {
    fn clone(&self) -> Self {
        LogMethod {
            shared: self.shared.clone(),
            index: self.index,
            level: self.level,
        }
    }
}

impl<T: LogSubscriber> LogMethod<T> {
    /// The methods of `subscriber`'s configuration ([`LogSubscriber::config`]), sharing one
    /// subscriber value, in declaration order. The colour choice is read here.
    ///
    /// # Errors
    /// [`LogSubscriberError`] when the configuration is invalid.
    ///
    /// ```
    /// use notify_log::{Level, LogConfig, LogEvent, LogMethod, LogSubscriber};
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
    /// # Ok::<(), notify_log::LogSubscriberError>(())
    /// ```
    pub fn all(subscriber: T) -> Result<Vec<LogMethod<T>>, LogSubscriberError> {
        let (shared, _) = LogMethod::declare(subscriber)?;
        Ok(LogMethod::of(&shared))
    }

    /// The shared state of `subscriber`'s configuration and its notify-core declaration: one
    /// silenceable method per log method, labelled "log subscriber <target> (<event name>)" (the
    /// failure report quotes the label in backticks).
    fn declare(subscriber: T) -> Result<Declared<T>, LogSubscriberError> {
        let config = T::config();
        let target = config.target_name().to_owned();
        let color = subscriber.color().unwrap_or(config.color).is_enabled();
        let shared = Arc::new(Shared {
            subscriber,
            namespace: config.namespace,
            target,
            color,
            tags: config.tags,
            methods: config.methods,
        });
        let mut methods = Methods::new(shared.namespace.clone());
        for (index, spec) in shared.methods.iter().enumerate() {
            methods = methods.subscriber(spec.method.clone(), move |shared: &Arc<Shared<T>>| {
                let method = LogMethod {
                    shared: shared.clone(),
                    index,
                    level: shared.methods[index].level,
                };
                let label = format!("log subscriber {} ({})", method.target(), method.event_name());
                // The core reads the monotonic clock at start and finish for it: the duration comes
                // from the event, wherever it finishes.
                Subscriber::silenceable_with(EventedOptions { duration: true }, method).named(label)
            });
        }
        methods
            .validate()
            .map_err(|e| LogSubscriberError::from_methods(e, &shared.namespace))?;
        Ok((shared, methods))
    }

    fn of(shared: &Arc<Shared<T>>) -> Vec<LogMethod<T>> {
        (0..shared.methods.len())
            .map(|index| LogMethod {
                shared: shared.clone(),
                index,
                level: shared.methods[index].level,
            })
            .collect()
    }
}

impl<T> LogMethod<T> {
    fn spec(&self) -> &MethodSpec<T> {
        &self.shared.methods[self.index]
    }

    /// The event name this method formats, `"<method>.<namespace>"`.
    ///
    /// ```
    /// # use notify_log::{Level, LogConfig, LogEvent, LogMethod, LogSubscriber};
    /// # struct Db;
    /// # impl LogSubscriber for Db {
    /// #     fn config() -> LogConfig<Db> { LogConfig::new("db").method("query", Level::Debug, |_: &Db, _: &LogEvent<'_>| None) }
    /// # }
    /// assert_eq!(LogMethod::all(Db)?[0].event_name(), "query.db");
    /// # Ok::<(), notify_log::LogSubscriberError>(())
    /// ```
    pub fn event_name(&self) -> &str {
        &self.spec().event_name
    }

    /// The level this method logs at.
    ///
    /// ```
    /// # use notify_log::{Level, LogConfig, LogEvent, LogMethod, LogSubscriber};
    /// # struct Db;
    /// # impl LogSubscriber for Db {
    /// #     fn config() -> LogConfig<Db> { LogConfig::new("db").method("query", Level::Debug, |_: &Db, _: &LogEvent<'_>| None) }
    /// # }
    /// assert_eq!(LogMethod::all(Db)?[0].level(), Level::Debug);
    /// # Ok::<(), notify_log::LogSubscriberError>(())
    /// ```
    pub fn level(&self) -> Level {
        self.level
    }

    /// The `log` target of this method's lines.
    ///
    /// ```
    /// # use notify_log::{Level, LogConfig, LogEvent, LogMethod, LogSubscriber};
    /// # struct Db;
    /// # impl LogSubscriber for Db {
    /// #     fn config() -> LogConfig<Db> { LogConfig::new("db").method("query", Level::Debug, |_: &Db, _: &LogEvent<'_>| None) }
    /// # }
    /// assert_eq!(LogMethod::all(Db)?[0].target(), "db");
    /// # Ok::<(), notify_log::LogSubscriberError>(())
    /// ```
    pub fn target(&self) -> &str {
        &self.shared.target
    }

    /// The subscriber value the methods are called on.
    ///
    /// ```
    /// # use notify_log::{Level, LogConfig, LogEvent, LogMethod, LogSubscriber};
    /// struct Db { prefix: &'static str }
    /// # impl LogSubscriber for Db {
    /// #     fn config() -> LogConfig<Db> { LogConfig::new("db").method("query", Level::Debug, |_: &Db, _: &LogEvent<'_>| None) }
    /// # }
    /// assert_eq!(LogMethod::all(Db { prefix: "db" })?[0].subscriber().prefix, "db");
    /// # Ok::<(), notify_log::LogSubscriberError>(())
    /// ```
    pub fn subscriber(&self) -> &T {
        &self.shared.subscriber
    }
}

/// Hands one record to the `log` logger, pointing at the instrumented code (`location`) when the
/// event has one (callsites, `#[instrument_event]`), not at this file as `log::log!` would.
fn emit(level: Level, target: &str, location: Option<&'static Location>, args: std::fmt::Arguments<'_>) {
    // What `log::log!` checks before handing a record to the logger.
    if level > log::STATIC_MAX_LEVEL || level > log::max_level() {
        return;
    }
    log::logger().log(
        &log::Record::builder()
            .level(level)
            .target(target)
            .args(args)
            .file_static(location.map(Location::file))
            .line(location.map(Location::line))
            .module_path_static(location.map(Location::module_path))
            .build(),
    );
}

/// True when the `log` facade would keep a record of `level` for `target` right now: the same
/// check as `log::log_enabled!(target: target, level)`, made on every call. The max level (one
/// relaxed atomic load) comes first: the logger's `enabled` is called only when the level passes.
#[inline]
fn log_enabled(level: Level, target: &str) -> bool {
    level <= log::STATIC_MAX_LEVEL
        && level <= log::max_level()
        && log::logger().enabled(&log::Metadata::builder().level(level).target(target).build())
}

impl<T: Send + Sync + 'static> EventedSubscriber for LogMethod<T> {
    fn start(&self, _name: &str, _event: &EventContext, _payload: &Payload) {}

    fn finish(&self, name: &str, event: &EventContext, payload: &Payload) {
        let ids = (event.id(), event.parent_id(), Some(event.trace_id()));
        self.log(name, ids, event.location(), payload, event.duration());
    }

    /// An event published whole (e.g. imported from another process by notify-nats) is logged as
    /// a finished one, with its own duration.
    fn publish(&self, event: &Event) {
        let duration = Some(event.duration());
        let ids = (event.id(), event.parent_id(), Some(event.trace_id()));
        self.log(event.name(), ids, event.location(), event.payload(), duration);
    }
}

impl<T: Send + Sync + 'static> LogMethod<T> {
    /// Formats the line of a finished event and hands it to the `log` facade (a panicking format
    /// logs `could not log <name>: <panic>` at `ERROR` instead).
    fn log(
        &self,
        name: &str,
        (id, parent_id, trace_id): (EventId, Option<EventId>, Option<TraceId>),
        location: Option<&'static Location>,
        payload: &Payload,
        duration: Option<Duration>,
    ) {
        let shared = &*self.shared;
        let spec = self.spec();
        let event = LogEvent::from_parts(
            name,
            &spec.method,
            &shared.namespace,
            id,
            payload,
            duration,
            shared.color,
        )
        .with_ids(id, parent_id, trace_id);
        let missing = RefCell::new(Vec::new());
        let event = event.noting_missing(&missing);
        match catch_unwind(AssertUnwindSafe(|| (spec.format)(&shared.subscriber, &event))) {
            Ok(Some(line)) => {
                let line = Line {
                    text: &line,
                    keep_sgr: shared.color,
                };
                if shared.tags && !Tags::with_current(Tags::is_empty) {
                    let tags = Tags::with_current(|tags| {
                        tags.iter()
                            .map(|(_, value)| format!("[{}] ", value.escaped()))
                            .collect::<String>()
                    });
                    emit(spec.level, &shared.target, location, format_args!("{tags}{line}"));
                } else {
                    emit(spec.level, &shared.target, location, format_args!("{line}"));
                }
            }
            Ok(None) => {
                // A `get(..)?` that found nothing: the line is written with the gap marked, not dropped.
                let missing = missing.take();
                if !missing.is_empty() {
                    emit(
                        spec.level,
                        &shared.target,
                        location,
                        format_args!(
                            "{} ({})  [missing {}]",
                            Escaped::new(name),
                            event.elapsed(),
                            Escaped::new(&missing.join(", "))
                        ),
                    );
                }
            }
            Err(panic) => {
                emit(
                    Level::Error,
                    &shared.target,
                    location,
                    format_args!(
                        "could not log {}: {}",
                        Escaped::new(name),
                        Escaped::new(&panic_message(&*panic))
                    ),
                );
                // A payload whose `Drop` panics too (`panic_any(Bomb)`) is dropped under a guard
                // (and a second such payload forgotten): the failure was just logged, it must not
                // unwind out of this callback and be reported again as a failure of ours.
                if let Err(again) = catch_unwind(AssertUnwindSafe(move || drop(panic))) {
                    std::mem::forget(again);
                }
            }
        }
    }
}

impl<T: Send + Sync + 'static> SilenceableSubscriber for LogMethod<T> {
    /// True exactly when the `log` facade would drop this method's record now (see [`LogMethod`]).
    fn silenced(&self, _name: &str) -> bool {
        !log_enabled(self.level, &self.shared.target)
    }

    /// `notify-log <level> <target>`: the `log` facade decides by level and target alone, so the
    /// methods of every log subscriber sharing both are asked once per event.
    fn silence_key(&self) -> Option<SilenceKey> {
        Some(SilenceKey::new(format!(
            "notify-log {} {}",
            self.spec().level,
            self.shared.target
        )))
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
/// use notify_log::{Level, LogConfig, LogEvent, LogSubscriber};
/// struct Db;
/// impl LogSubscriber for Db {
///     fn config() -> LogConfig<Db> {
///         LogConfig::new("db").target("app::db").method("query", Level::Debug, |_: &Db, _: &LogEvent<'_>| None)
///     }
/// }
/// let attached = Db.attach_to(&notify_core::Notifier::new())?;
/// assert_eq!((attached.namespace(), attached.target()), ("db", "app::db"));
/// assert_eq!(attached.events_at(Level::Debug), ["query.db"]);
/// # Ok::<(), notify_log::LogSubscriberError>(())
/// ```
pub struct Attached<T> {
    methods: Vec<LogMethod<T>>,
    subscriptions: Vec<Subscription>,
    attachment: Attachment<Shared<T>>,
}

impl<T: LogSubscriber> Attached<T> {
    /// Declares `subscriber`'s methods and attaches them to `notifier` in one registry change.
    pub(super) fn attach(subscriber: T, notifier: &Notifier) -> Result<Attached<T>, LogSubscriberError> {
        let (shared, methods) = LogMethod::declare(subscriber)?;
        let attachment = methods
            .attach(shared.clone(), notifier)
            .map_err(|e| LogSubscriberError::from_methods(e, &shared.namespace))?;
        Ok(Attached {
            methods: LogMethod::of(&shared),
            subscriptions: attachment.subscriptions(),
            attachment,
        })
    }
}

impl<T> Attached<T> {
    /// The namespace.
    ///
    /// ```
    /// # use notify_log::{Level, LogConfig, LogEvent, LogSubscriber};
    /// # struct Db;
    /// # impl LogSubscriber for Db {
    /// #     fn config() -> LogConfig<Db> { LogConfig::new("db").method("query", Level::Debug, |_: &Db, _: &LogEvent<'_>| None) }
    /// # }
    /// assert_eq!(Db.attach_to(&notify_core::Notifier::new())?.namespace(), "db");
    /// # Ok::<(), notify_log::LogSubscriberError>(())
    /// ```
    pub fn namespace(&self) -> &str {
        self.methods.first().map_or("", |m| m.shared.namespace.as_str())
    }

    /// The `log` target of every line.
    ///
    /// ```
    /// # use notify_log::{Level, LogConfig, LogEvent, LogSubscriber};
    /// # struct Db;
    /// # impl LogSubscriber for Db {
    /// #     fn config() -> LogConfig<Db> { LogConfig::new("db").method("query", Level::Debug, |_: &Db, _: &LogEvent<'_>| None) }
    /// # }
    /// assert_eq!(Db.attach_to(&notify_core::Notifier::new())?.target(), "db");
    /// # Ok::<(), notify_log::LogSubscriberError>(())
    /// ```
    pub fn target(&self) -> &str {
        self.methods.first().map_or("", |m| m.shared.target.as_str())
    }

    /// The attached methods, in declaration order.
    ///
    /// ```
    /// # use notify_log::{Level, LogConfig, LogEvent, LogSubscriber};
    /// # struct Db;
    /// # impl LogSubscriber for Db {
    /// #     fn config() -> LogConfig<Db> { LogConfig::new("db").method("query", Level::Debug, |_: &Db, _: &LogEvent<'_>| None) }
    /// # }
    /// assert_eq!(Db.attach_to(&notify_core::Notifier::new())?.methods()[0].level(), Level::Debug);
    /// # Ok::<(), notify_log::LogSubscriberError>(())
    /// ```
    pub fn methods(&self) -> &[LogMethod<T>] {
        &self.methods
    }

    /// The event names of the methods, in declaration order.
    ///
    /// ```
    /// # use notify_log::{Level, LogConfig, LogEvent, LogSubscriber};
    /// # struct Db;
    /// # impl LogSubscriber for Db {
    /// #     fn config() -> LogConfig<Db> { LogConfig::new("db").method("query", Level::Debug, |_: &Db, _: &LogEvent<'_>| None) }
    /// # }
    /// let attached = Db.attach_to(&notify_core::Notifier::new())?;
    /// assert_eq!(attached.event_names().collect::<Vec<_>>(), ["query.db"]);
    /// # Ok::<(), notify_log::LogSubscriberError>(())
    /// ```
    pub fn event_names(&self) -> impl Iterator<Item = &str> + '_ {
        self.methods.iter().map(|m| m.event_name())
    }

    /// The event names whose methods log at exactly `level` (AS::N's per-class `log_levels`).
    ///
    /// ```
    /// # use notify_log::{Level, LogConfig, LogEvent, LogSubscriber};
    /// # struct Db;
    /// # impl LogSubscriber for Db {
    /// #     fn config() -> LogConfig<Db> { LogConfig::new("db").method("query", Level::Debug, |_: &Db, _: &LogEvent<'_>| None) }
    /// # }
    /// assert!(Db.attach_to(&notify_core::Notifier::new())?.events_at(Level::Info).is_empty());
    /// # Ok::<(), notify_log::LogSubscriberError>(())
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
    /// # use notify_log::{Level, LogConfig, LogEvent, LogSubscriber};
    /// # struct Db;
    /// # impl LogSubscriber for Db {
    /// #     fn config() -> LogConfig<Db> { LogConfig::new("db").method("query", Level::Debug, |_: &Db, _: &LogEvent<'_>| None) }
    /// # }
    /// assert_eq!(Db.attach_to(&notify_core::Notifier::new())?.subscriptions().len(), 1);
    /// # Ok::<(), notify_log::LogSubscriberError>(())
    /// ```
    pub fn subscriptions(&self) -> &[Subscription] {
        &self.subscriptions
    }

    /// Unsubscribes every method (AS::N's `detach_from`); returns how many subscriptions were removed.
    ///
    /// ```
    /// # use notify_log::{Level, LogConfig, LogEvent, LogSubscriber};
    /// # struct Db;
    /// # impl LogSubscriber for Db {
    /// #     fn config() -> LogConfig<Db> { LogConfig::new("db").method("query", Level::Debug, |_: &Db, _: &LogEvent<'_>| None) }
    /// # }
    /// assert_eq!(Db.attach_to(&notify_core::Notifier::new())?.detach(), 1);
    /// # Ok::<(), notify_log::LogSubscriberError>(())
    /// ```
    pub fn detach(self) -> usize {
        self.attachment.detach()
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
