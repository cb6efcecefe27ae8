//! Log subscriber cases (shared/cases/log.md L1-L3) and duration measurement.
//!
//! The `log` facade has one logger per process, so this file installs one capturing logger for
//! the whole test binary and serialises the tests with a mutex.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Once};

use log::{Level, LevelFilter, Log, Metadata, Record};
use notify_core::{
    failure::SubscriberFailure, EventedSubscriber, Notifier, Pattern, Payload, SilenceableSubscriber, Subscriber,
};
use notify_log::{ColorChoice, LogConfig, LogEvent, LogMethod, LogSubscriber};

/// One captured record: level, target, message.
type Line = (Level, String, String);

/// A logger that keeps every record it accepts; per-target filters on top of `log::max_level()`.
struct Capture {
    lines: Mutex<Vec<Line>>,
    filters: Mutex<HashMap<String, LevelFilter>>,
}

impl Log for Capture {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        let filters = self.filters.lock().unwrap();
        metadata.level() <= filters.get(metadata.target()).copied().unwrap_or(LevelFilter::Trace)
    }

    fn log(&self, record: &Record<'_>) {
        if self.enabled(record.metadata()) {
            let line = (record.level(), record.target().to_owned(), record.args().to_string());
            self.lines.lock().unwrap().push(line);
        }
    }

    fn flush(&self) {}
}

static LOGGER: std::sync::LazyLock<Capture> = std::sync::LazyLock::new(|| Capture {
    lines: Mutex::new(Vec::new()),
    filters: Mutex::new(HashMap::new()),
});

static SERIAL: Mutex<()> = Mutex::new(());

/// Installs the capturing logger once, takes the serial lock, clears lines and filters, and sets
/// the max level.
fn setup(max: LevelFilter) -> MutexGuard<'static, ()> {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| log::set_logger(&*LOGGER).expect("the only logger of this test binary"));
    let guard = SERIAL.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    LOGGER.lines.lock().unwrap().clear();
    LOGGER.filters.lock().unwrap().clear();
    log::set_max_level(max);
    guard
}

fn lines() -> Vec<Line> {
    LOGGER.lines.lock().unwrap().clone()
}

fn line(level: Level, target: &str, message: &str) -> Line {
    (level, target.to_owned(), message.to_owned())
}

/// A log subscriber for namespace "db": `query` at debug, the line is the payload's `sql`.
struct Db {
    formatted: Arc<AtomicUsize>,
}

impl LogSubscriber for Db {
    fn config() -> LogConfig<Db> {
        LogConfig::new("db")
            .color(ColorChoice::Never)
            .method("query", Level::Debug, |db: &Db, event: &LogEvent<'_>| {
                db.formatted.fetch_add(1, Ordering::SeqCst);
                Some(format!("{} {}", event.method(), event.payload().get("sql")?))
            })
    }
}

/// Wraps a log method and counts every call the notifier makes to it.
struct Counting {
    inner: LogMethod<Db>,
    starts: Arc<AtomicUsize>,
    finishes: Arc<AtomicUsize>,
}

impl EventedSubscriber for Counting {
    fn start(&self, name: &str, id: &notify_core::context::EventContext, payload: &Payload) {
        self.starts.fetch_add(1, Ordering::SeqCst);
        self.inner.start(name, id, payload);
    }
    fn finish(&self, name: &str, id: &notify_core::context::EventContext, payload: &Payload) {
        self.finishes.fetch_add(1, Ordering::SeqCst);
        self.inner.finish(name, id, payload);
    }
}

impl SilenceableSubscriber for Counting {
    fn silenced(&self, name: &str) -> bool {
        self.inner.silenced(name)
    }
}

struct Counters {
    formatted: Arc<AtomicUsize>,
    starts: Arc<AtomicUsize>,
    finishes: Arc<AtomicUsize>,
}

impl Counters {
    fn get(&self) -> (usize, usize, usize) {
        (
            self.starts.load(Ordering::SeqCst),
            self.finishes.load(Ordering::SeqCst),
            self.formatted.load(Ordering::SeqCst),
        )
    }
}

/// Subscribes `Db`'s methods wrapped in [`Counting`]; returns the counters.
fn subscribe_counting_db(notifier: &Notifier) -> Counters {
    let formatted = Arc::new(AtomicUsize::new(0));
    let starts = Arc::new(AtomicUsize::new(0));
    let finishes = Arc::new(AtomicUsize::new(0));
    for method in LogMethod::all(Db {
        formatted: formatted.clone(),
    })
    .unwrap()
    {
        let pattern = Pattern::exact(method.event_name());
        let counting = Counting {
            inner: method,
            starts: starts.clone(),
            finishes: finishes.clone(),
        };
        let _ = notifier.subscribe(pattern, Subscriber::silenceable(counting));
    }
    Counters {
        formatted,
        starts,
        finishes,
    }
}

#[test]
fn l1_silenced_until_the_level_is_raised_without_resubscribing() {
    let _serial = setup(LevelFilter::Info);
    let notifier = Notifier::new();
    let counters = subscribe_counting_db(&notifier);
    let payloads_built = AtomicUsize::new(0);
    let query = |sql: &'static str| {
        notifier.instrument(
            "query.db",
            || {
                payloads_built.fetch_add(1, Ordering::SeqCst);
                Payload::new().with("sql", sql)
            },
            |_| 42,
        )
    };

    // Max level info, method at debug: silenced.
    assert!(!notifier.listening("query.db"));
    assert_eq!(query("SELECT 1"), 42);
    assert_eq!(counters.get(), (0, 0, 0), "no start, no finish, no formatting");
    assert_eq!(payloads_built.load(Ordering::SeqCst), 0, "no payload built");
    assert_eq!(lines(), []);

    // Raise to debug: the next event is logged once, same subscription.
    log::set_max_level(LevelFilter::Debug);
    assert!(notifier.listening("query.db"));
    assert_eq!(query("SELECT 2"), 42);
    assert_eq!(counters.get(), (1, 1, 1));
    assert_eq!(payloads_built.load(Ordering::SeqCst), 1);
    assert_eq!(lines(), [line(Level::Debug, "db", "query SELECT 2")]);

    // Lower again: silenced on the very next call (never cached).
    log::set_max_level(LevelFilter::Info);
    assert!(!notifier.listening("query.db"));
    assert_eq!(query("SELECT 3"), 42);
    assert_eq!(counters.get(), (1, 1, 1));

    // Max level debug, but the logger itself filters target "db" at info: still silenced,
    // because the check is the logger's own `enabled`, not only the max level.
    log::set_max_level(LevelFilter::Trace);
    LOGGER
        .filters
        .lock()
        .unwrap()
        .insert("db".to_owned(), LevelFilter::Info);
    assert!(!notifier.listening("query.db"));
    assert_eq!(query("SELECT 4"), 42);
    assert_eq!(counters.get(), (1, 1, 1));
    assert_eq!(payloads_built.load(Ordering::SeqCst), 1);
    assert_eq!(lines().len(), 1);
}

#[test]
fn l1_only_the_plain_subscriber_runs_beside_a_silenced_one() {
    let _serial = setup(LevelFilter::Info);
    let notifier = Notifier::new();
    let counters = subscribe_counting_db(&notifier);
    let plain = Arc::new(AtomicUsize::new(0));
    let seen = plain.clone();
    let _ = notifier.subscribe(
        "query.db",
        Subscriber::event(move |event: &notify_core::Event| {
            assert_eq!(event.payload().get("sql").and_then(|v| v.as_str()), Some("SELECT 1"));
            seen.fetch_add(1, Ordering::SeqCst);
        }),
    );

    assert!(notifier.listening("query.db"));
    let value = notifier.instrument("query.db", || Payload::new().with("sql", "SELECT 1"), |_| "done");
    assert_eq!(value, "done");
    assert_eq!(plain.load(Ordering::SeqCst), 1);
    assert_eq!(counters.get(), (0, 0, 0));
    assert_eq!(lines(), []);
}

/// Log subscriber type X: namespace "x", target "app::x".
struct X;
impl LogSubscriber for X {
    fn config() -> LogConfig<X> {
        LogConfig::new("x")
            .target("app::x")
            .color(ColorChoice::Never)
            .method("query", Level::Debug, |_: &X, e: &LogEvent<'_>| {
                Some(format!("X {}", e.name()))
            })
            .method("connect", Level::Info, |_: &X, e: &LogEvent<'_>| {
                Some(format!("X {}", e.name()))
            })
    }
}

/// Log subscriber type Y: namespace "y", target "app::y", different methods and levels.
struct Y;
impl LogSubscriber for Y {
    fn config() -> LogConfig<Y> {
        LogConfig::new("y")
            .target("app::y")
            .color(ColorChoice::Never)
            .method("render", Level::Debug, |_: &Y, e: &LogEvent<'_>| {
                Some(format!("Y {}", e.name()))
            })
            .method("boot", Level::Warn, |_: &Y, e: &LogEvent<'_>| {
                Some(format!("Y {}", e.name()))
            })
    }
}

/// Two types on one namespace with opposite levels for the same method.
struct SharedDebug;
impl LogSubscriber for SharedDebug {
    fn config() -> LogConfig<SharedDebug> {
        LogConfig::new("shared")
            .target("app::debug")
            .color(ColorChoice::Never)
            .method("query", Level::Debug, |_: &SharedDebug, _: &LogEvent<'_>| {
                Some("debug-typed".into())
            })
    }
}
struct SharedInfo;
impl LogSubscriber for SharedInfo {
    fn config() -> LogConfig<SharedInfo> {
        LogConfig::new("shared")
            .target("app::info")
            .color(ColorChoice::Never)
            .method("query", Level::Info, |_: &SharedInfo, _: &LogEvent<'_>| {
                Some("info-typed".into())
            })
    }
}

#[test]
fn l2_per_type_configuration_does_not_leak() {
    let _serial = setup(LevelFilter::Trace);
    let notifier = Notifier::new();
    let x = X.attach_to(&notifier).unwrap();
    let y = Y.attach_to(&notifier).unwrap();

    assert_eq!(x.events_at(Level::Debug), ["query.x"]);
    assert_eq!(y.events_at(Level::Debug), ["render.y"]);
    assert_eq!(X::config().events_at(Level::Debug), ["query.x"]);
    assert_eq!(Y::config().events_at(Level::Debug), ["render.y"]);
    assert_eq!(x.event_names().collect::<Vec<_>>(), ["query.x", "connect.x"]);
    assert_eq!(y.event_names().collect::<Vec<_>>(), ["render.y", "boot.y"]);
    assert_eq!((x.target(), y.target()), ("app::x", "app::y"));

    for name in ["query.x", "render.y", "connect.x", "boot.y", "query.y", "render.x"] {
        notifier.instrument(name, Payload::new, |_| ());
    }
    assert_eq!(
        lines(),
        [
            line(Level::Debug, "app::x", "X query.x"),
            line(Level::Debug, "app::y", "Y render.y"),
            line(Level::Info, "app::x", "X connect.x"),
            line(Level::Warn, "app::y", "Y boot.y"),
        ]
    );

    // Same namespace and method, two types, two levels: each keeps its own.
    let notifier = Notifier::new();
    let debug = SharedDebug.attach_to(&notifier).unwrap();
    let info = SharedInfo.attach_to(&notifier).unwrap();
    assert_eq!(debug.events_at(Level::Debug), ["query.shared"]);
    assert!(debug.events_at(Level::Info).is_empty());
    assert_eq!(info.events_at(Level::Info), ["query.shared"]);
    assert!(info.events_at(Level::Debug).is_empty());
    LOGGER.lines.lock().unwrap().clear();
    log::set_max_level(LevelFilter::Info);
    notifier.instrument("query.shared", Payload::new, |_| ());
    assert_eq!(lines(), [line(Level::Info, "app::info", "info-typed")]);
}

/// A log subscriber whose formatter panics on the statement "boom".
struct Fragile;
impl LogSubscriber for Fragile {
    fn config() -> LogConfig<Fragile> {
        LogConfig::new("db").color(ColorChoice::Never).method(
            "query",
            Level::Debug,
            |_: &Fragile, event: &LogEvent<'_>| {
                let sql = event.payload().get("sql")?.as_str()?;
                assert_ne!(sql, "boom", "formatter failed");
                Some(sql.to_owned())
            },
        )
    }
}

#[test]
fn l3_a_panicking_formatter_logs_could_not_log_and_logging_goes_on() {
    let _serial = setup(LevelFilter::Trace);
    let notifier = Notifier::new();
    let hook_failures = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = hook_failures.clone();
    notifier.set_failure_hook(move |failure: &SubscriberFailure| sink.lock().unwrap().push(failure.to_string()));
    let _attached = Fragile.attach_to(&notifier).unwrap();

    let results: Vec<u32> = ["SELECT 1", "boom", "SELECT 2"]
        .into_iter()
        .zip(1..)
        .map(|(sql, n)| notifier.instrument("query.db", || Payload::new().with("sql", sql), |_| n))
        .collect();

    assert_eq!(results, [1, 2, 3], "the instrumented code is unaffected");
    let got = lines();
    assert_eq!(got.len(), 3);
    assert_eq!(got[0], line(Level::Debug, "db", "SELECT 1"));
    assert_eq!((got[1].0, got[1].1.as_str()), (Level::Error, "db"));
    assert!(
        got[1]
            .2
            .starts_with("could not log query.db: assertion `left != right` failed: formatter failed"),
        "{:?}",
        got[1].2
    );
    assert_eq!(got[2], line(Level::Debug, "db", "SELECT 2"));
    assert!(
        hook_failures.lock().unwrap().is_empty(),
        "the log subscriber handles its own failure"
    );
}

/// A formatter that panics with a payload whose `Drop` panics too (issue 16, item 1).
struct Bombing;

/// A panic payload that panics again when dropped.
struct Bomb;

impl Drop for Bomb {
    fn drop(&mut self) {
        panic!("l3: the bomb went off while its panic was dropped");
    }
}

impl LogSubscriber for Bombing {
    fn config() -> LogConfig<Bombing> {
        LogConfig::new("db").color(ColorChoice::Never).method(
            "query",
            Level::Debug,
            |_: &Bombing, _: &LogEvent<'_>| -> Option<String> { std::panic::panic_any(Bomb) },
        )
    }
}

/// The log subscriber drops the caught payload itself, under a guard: the bomb used to go off in
/// `finish` after `could not log` was written, so notify-core reported the same failure a second
/// time, as a panic of the log subscriber ("the bomb went off ...").
#[test]
fn l3_a_formatter_panicking_with_a_bomb_payload_is_reported_once() {
    let _serial = setup(LevelFilter::Trace);
    let notifier = Notifier::new();
    let hook_failures = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = hook_failures.clone();
    notifier.set_failure_hook(move |failure: &SubscriberFailure| sink.lock().unwrap().push(failure.to_string()));
    let _attached = Bombing.attach_to(&notifier).unwrap();
    let prior = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let results: Vec<u32> = (1..=2)
        .map(|n| notifier.instrument("query.db", Payload::new, |_| n))
        .collect();
    std::panic::set_hook(prior);
    assert_eq!(results, [1, 2]);
    let could_not_log = line(Level::Error, "db", "could not log query.db: <non-string panic payload>");
    assert_eq!(lines(), [could_not_log.clone(), could_not_log]);
    assert_eq!(*hook_failures.lock().unwrap(), Vec::<String>::new());
}

/// Logs the duration the event carries: "<sql> <known|unknown>".
struct Timed;
impl LogSubscriber for Timed {
    fn config() -> LogConfig<Timed> {
        LogConfig::new("timed").color(ColorChoice::Never).method(
            "query",
            Level::Info,
            |_: &Timed, event: &LogEvent<'_>| {
                let known = if event.duration().is_some() { "known" } else { "unknown" };
                Some(format!(
                    "{} {known} {}",
                    event.payload().get("sql")?,
                    digits_as_n(&event.elapsed().to_string())
                ))
            },
        )
    }
}

/// "12.0ms" -> "N.Nms": the shape of a duration without its value.
fn digits_as_n(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if !c.is_ascii_digit() {
            out.push(c);
        } else if !out.ends_with('N') {
            out.push('N');
        }
    }
    out
}

#[test]
fn durations_come_from_the_event_for_nested_events_and_events_finished_on_another_thread() {
    let _serial = setup(LevelFilter::Trace);
    let notifier = Notifier::new();
    let _attached = Timed.attach_to(&notifier).unwrap();

    notifier.instrument(
        "query.timed",
        || Payload::new().with("sql", "outer"),
        |_| notifier.instrument("query.timed", || Payload::new().with("sql", "inner"), |_| ()),
    );
    let mut handle = notifier.build_handle("query.timed", Payload::new().with("sql", "moved"));
    handle.start().unwrap();
    std::thread::spawn(move || handle.finish().unwrap()).join().unwrap();

    assert_eq!(
        lines(),
        [
            line(Level::Info, "timed", "inner known N.Nms"),
            line(Level::Info, "timed", "outer known N.Nms"),
            line(Level::Info, "timed", "moved known N.Nms"),
        ]
    );
}

#[test]
fn a_published_event_is_logged_with_its_own_duration_and_a_silenced_one_is_not() {
    let _serial = setup(LevelFilter::Trace);
    let notifier = Notifier::new();
    let _attached = Timed.attach_to(&notifier).unwrap();
    let _jobs = Jobs.attach_to(&notifier).unwrap();
    let start = std::time::Instant::now();
    let imported = |name: &'static str, key: &'static str, value: &'static str, ms: u64| {
        let end = start + std::time::Duration::from_millis(ms);
        notify_core::Event::new(name, start, end, Payload::new().with(key, value))
    };
    // As notify-nats' Importer republishes an event of another process.
    notifier.publish_event(imported("query.timed", "sql", "imported", 12));
    notifier.publish_event(imported("perform.jobs", "job", "7", 1500));
    // Silenced by the logger: not formatted, not logged.
    LOGGER
        .filters
        .lock()
        .unwrap()
        .insert("timed".to_owned(), LevelFilter::Warn);
    notifier.publish_event(imported("query.timed", "sql", "silenced", 3));
    assert_eq!(
        lines(),
        [
            line(Level::Info, "timed", "imported known N.Nms"),
            line(Level::Info, "jobs", "Performed job 7 in 1500.0ms"),
        ]
    );
}

/// "Performed job N in X.Yms", as a job-queue log subscriber writes it.
struct Jobs;
impl LogSubscriber for Jobs {
    fn config() -> LogConfig<Jobs> {
        LogConfig::new("jobs").color(ColorChoice::Never).method(
            "perform",
            Level::Info,
            |_: &Jobs, event: &LogEvent<'_>| {
                Some(format!(
                    "Performed job {} in {}",
                    event.payload().get("job")?,
                    event.elapsed()
                ))
            },
        )
    }
}

#[test]
fn every_async_job_on_a_multi_thread_runtime_logs_its_duration() {
    use notify_core::Instrument;
    let _serial = setup(LevelFilter::Trace);
    let notifier = Notifier::new();
    let _attached = Jobs.attach_to(&notifier).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(3)
        .enable_time()
        .build()
        .unwrap();
    for _run in 0..5 {
        runtime.block_on(async {
            let jobs: Vec<_> = (0..6_u64)
                .map(|job| {
                    let handle = notifier.build_handle("perform.jobs", Payload::new().with("job", job));
                    tokio::spawn(
                        async move {
                            for _ in 0..3 {
                                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
                            }
                        }
                        .instrument(handle),
                    )
                })
                .collect();
            for job in jobs {
                job.await.unwrap();
            }
        });
    }
    let lines = lines();
    assert_eq!(lines.len(), 30);
    for (_, _, text) in &lines {
        assert!(text.starts_with("Performed job "), "{text}");
        assert!(!text.contains("?ms"), "{text}");
        let ms: f64 = text.rsplit(' ').next().unwrap().trim_end_matches("ms").parse().unwrap();
        assert!(ms >= 3.0, "three 1 ms sleeps: {text}");
    }
}

#[test]
fn colour_always_styles_names_and_durations() {
    struct Colored;
    impl LogSubscriber for Colored {
        fn config() -> LogConfig<Colored> {
            LogConfig::new("paint").color(ColorChoice::Always).method(
                "query",
                Level::Info,
                |_: &Colored, event: &LogEvent<'_>| Some(format!("{}", event.color("Book Load", None, true))),
            )
        }
    }
    let _serial = setup(LevelFilter::Trace);
    let notifier = Notifier::new();
    let _attached = Colored.attach_to(&notifier).unwrap();
    notifier.instrument("query.paint", Payload::new, |_| ());
    assert_eq!(lines(), [line(Level::Info, "paint", "\u{1b}[1mBook Load\u{1b}[0m")]);
}
