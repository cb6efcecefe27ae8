//! [`NotifyLogger`]: `log` records as notify events (log -> notify), for crates that only log.

use std::cell::{Cell, RefCell};
use std::fmt::Write as _;

use log::{LevelFilter, Log, Metadata, Record, SetLoggerError};
use notify_core::{suppression::is_telemetry_suppressed, Notifier, Payload, Value};

thread_local! {
    /// The event name being built (reused: no allocation per record).
    static NAME: RefCell<String> = const { RefCell::new(String::new()) };
    /// Set while a record is published: records logged by subscribers meanwhile only go to the
    /// forward logger (no loop through notify).
    static PUBLISHING: Cell<bool> = const { Cell::new(false) };
}

/// A [`log::Log`] that publishes each record as a notify event of zero duration named
/// `"<level>.<target>"` (level in lower case: `log::warn!(target: "db", …)` is `"warn.db"`, the
/// same names [`NotifyLayer`](crate::NotifyLayer) gives tracing events), and passes every record on
/// to the logger given to [`NotifyLogger::forward_to`] first, so output does not change.
///
/// The payload: `message` (the formatted text), `level` (`"WARN"`), and `module_path`, `file`,
/// `line` when the record has them. Key-value pairs of the `kv` feature are not carried (payload
/// keys are `&'static str`).
///
/// A record is published only when somebody listens to its name; [`Log::enabled`] answers true
/// when the forward logger or a notify subscriber wants it. A record logged by a notify subscriber
/// while a record is being published (say, a log subscriber of every event) goes to the forward
/// logger only, so nothing loops. Records logged on a thread where
/// [`notify_core::suppression::is_telemetry_suppressed`] holds (an exporter's own threads) also go to the
/// forward logger only: published, they would be exported and log again.
///
/// ```
/// use notify_core::{Event, Notifier, Subscriber};
/// use notify_tracing::NotifyLogger;
/// use log::Log;
///
/// let notifier = Notifier::new();
/// let (tx, rx) = std::sync::mpsc::channel();
/// notifier.subscribe("warn.db", Subscriber::event(move |e: &Event| {
///     tx.send(e.payload().get("message").unwrap().to_string()).unwrap();
/// }));
/// let logger = NotifyLogger::with_notifier(notifier);
/// logger.log(&log::Record::builder()
///     .args(format_args!("slow query: {} ms", 120))
///     .level(log::Level::Warn)
///     .target("db")
///     .build());
/// assert_eq!(rx.recv()?, "slow query: 120 ms");
/// // As the global logger: NotifyLogger::new().forward_to(env_logger::Logger::from_default_env()).install()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct NotifyLogger {
    notifier: Notifier,
    forward: Option<Box<dyn Log>>,
    max_level: LevelFilter,
}

impl Default for NotifyLogger {
    fn default() -> NotifyLogger {
        NotifyLogger::new()
    }
}

impl NotifyLogger {
    /// A logger publishing to the global notifier, forwarding nowhere, max level `Trace`.
    pub fn new() -> NotifyLogger {
        NotifyLogger::with_notifier(Notifier::global().clone())
    }

    /// A logger publishing to `notifier`.
    pub fn with_notifier(notifier: Notifier) -> NotifyLogger {
        NotifyLogger {
            notifier,
            forward: None,
            max_level: LevelFilter::Trace,
        }
    }

    /// Passes every record on to `logger` as well (say `env_logger`), whether or not notify
    /// listens.
    #[must_use]
    pub fn forward_to(mut self, logger: impl Log + 'static) -> NotifyLogger {
        self.forward = Some(Box::new(logger));
        self
    }

    /// The level [`NotifyLogger::install`] sets as `log`'s max level (default `Trace`: every
    /// `log!` call then asks [`Log::enabled`], one notify name lookup). Records above it never
    /// reach the logger.
    #[must_use]
    pub fn max_level(mut self, level: LevelFilter) -> NotifyLogger {
        self.max_level = level;
        self
    }

    /// Makes this the global `log` logger and sets the max level.
    ///
    /// # Errors
    /// [`SetLoggerError`] when a global logger was already set.
    pub fn install(self) -> Result<(), SetLoggerError> {
        let level = self.max_level;
        log::set_boxed_logger(Box::new(self))?;
        log::set_max_level(level);
        Ok(())
    }

    /// Runs `f` with the event name of records of `level` and `target`.
    fn with_name<T>(level: log::Level, target: &str, f: impl FnOnce(&str) -> T) -> T {
        NAME.with(|name| {
            let mut name = name.borrow_mut();
            name.clear();
            let _ = write!(name, "{}.{target}", level_method(level));
            f(&name)
        })
    }
}

/// `"error"`, `"warn"`, `"info"`, `"debug"` or `"trace"`.
fn level_method(level: log::Level) -> &'static str {
    match level {
        log::Level::Error => "error",
        log::Level::Warn => "warn",
        log::Level::Info => "info",
        log::Level::Debug => "debug",
        log::Level::Trace => "trace",
    }
}

impl Log for NotifyLogger {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        if self.forward.as_ref().is_some_and(|f| f.enabled(metadata)) {
            return true;
        }
        !PUBLISHING.with(Cell::get)
            && !is_telemetry_suppressed()
            && NotifyLogger::with_name(metadata.level(), metadata.target(), |name| {
                self.notifier.listening(name)
            })
    }

    fn log(&self, record: &Record<'_>) {
        if let Some(forward) = &self.forward {
            if forward.enabled(record.metadata()) {
                forward.log(record);
            }
        }
        if !PUBLISHING.with(Cell::get) && !is_telemetry_suppressed() {
            PUBLISHING.with(|p| p.set(true));
            struct Reset;
            impl Drop for Reset {
                fn drop(&mut self) {
                    PUBLISHING.with(|p| p.set(false));
                }
            }
            let _reset = Reset;
            NotifyLogger::with_name(record.level(), record.target(), |name| {
                self.notifier.instrument(name, || payload(record), |_| ());
            });
        }
    }

    fn flush(&self) {
        if let Some(forward) = &self.forward {
            forward.flush();
        }
    }
}

/// The payload of a record.
fn payload(record: &Record<'_>) -> Payload {
    let mut payload = Payload::new()
        .with("message", Value::display(record.args()))
        .with("level", record.level().as_str());
    if let Some(module) = record.module_path_static() {
        payload.insert("module_path", module);
    } else if let Some(module) = record.module_path() {
        payload.insert("module_path", module.to_owned());
    }
    if let Some(file) = record.file_static() {
        payload.insert("file", file);
    } else if let Some(file) = record.file() {
        payload.insert("file", file.to_owned());
    }
    if let Some(line) = record.line() {
        payload.insert("line", line);
    }
    payload
}

impl std::fmt::Debug for NotifyLogger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NotifyLogger")
            .field("notifier", &self.notifier)
            .field("forwards", &self.forward.is_some())
            .field("max_level", &self.max_level)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    use log::Log;
    use notify_core::{suppression::suppress_telemetry, Event, Notifier, Pattern, Subscriber};

    use super::NotifyLogger;

    struct Counting(Arc<AtomicUsize>);

    impl Log for Counting {
        fn enabled(&self, _: &log::Metadata<'_>) -> bool {
            true
        }
        fn log(&self, _: &log::Record<'_>) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
        fn flush(&self) {}
    }

    #[test]
    fn records_logged_while_telemetry_is_suppressed_are_only_forwarded() {
        let notifier = Notifier::new();
        let names: Arc<Mutex<Vec<String>>> = Arc::default();
        let sink = names.clone();
        let _subscription = notifier.subscribe(
            Pattern::all(),
            Subscriber::event(move |e: &Event| sink.lock().unwrap().push(e.name().to_owned())),
        );
        let forwarded = Arc::new(AtomicUsize::new(0));
        let logger = NotifyLogger::with_notifier(notifier.clone());
        let forwarding = NotifyLogger::with_notifier(notifier).forward_to(Counting(forwarded.clone()));
        let record = |target| {
            log::Record::builder()
                .args(format_args!("text"))
                .level(log::Level::Warn)
                .target(target)
                .build()
        };
        let metadata = log::Metadata::builder().level(log::Level::Warn).target("db").build();
        {
            let _suppressed = suppress_telemetry();
            assert!(!logger.enabled(&metadata), "notify does not want it while suppressed");
            assert!(forwarding.enabled(&metadata), "the forward logger still does");
            logger.log(&record("quiet"));
            forwarding.log(&record("quiet"));
        }
        assert!(logger.enabled(&metadata));
        logger.log(&record("db"));
        assert_eq!(*names.lock().unwrap(), ["warn.db"]);
        assert_eq!(forwarded.load(Ordering::Relaxed), 1);
    }
}
