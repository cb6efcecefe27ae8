//! Structured lines (JSON, logfmt), tags, rate limits, and the ids and missing keys of the
//! Rails-style subscribers (issue 37).
//!
//! The `log` facade has one logger per process, so this file installs one capturing logger for
//! the whole test binary and serialises the tests with a mutex.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Mutex, MutexGuard, Once};
use std::time::Duration;

use log::{Level, LevelFilter, Log, Metadata, Record};
use notify_core::{
    context::tagged, context::Tags, event::Callsite, event::EventId, event::Location, Context, Instrument, Notifier,
    Pattern, Payload, TraceId,
};
use notify_log::{Format, Keys, LineKey, LogConfig, LogEvent, LogSubscriber, Placement, StructuredLog};
use serde_json::Value as Json;

/// One captured record: level, target, message.
type Line = (Level, String, String);

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

fn messages() -> Vec<String> {
    lines().into_iter().map(|(_, _, m)| m).collect()
}

fn json(line: &str) -> Json {
    assert!(!line.contains('\n'), "one line: {line:?}");
    serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
}

fn hex16(id: EventId) -> String {
    format!("{:016x}", id.get())
}

/// logfmt pairs, unquoting and unescaping values (enough for the lines these tests write).
fn logfmt(line: &str) -> Vec<(String, String)> {
    assert!(!line.contains('\n'), "one line: {line:?}");
    let mut pairs = Vec::new();
    let mut chars = line.chars().peekable();
    while chars.peek().is_some() {
        let key: String = chars.by_ref().take_while(|c| *c != '=').collect();
        let mut value = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            while let Some(c) = chars.next() {
                match c {
                    '"' => break,
                    '\\' => match chars.next() {
                        Some('n') => value.push('\n'),
                        Some('r') => value.push('\r'),
                        Some('t') => value.push('\t'),
                        Some('"') => value.push('"'),
                        Some('\\') => value.push('\\'),
                        Some(other) => {
                            value.push('\\');
                            value.push(other);
                        }
                        None => {}
                    },
                    c => value.push(c),
                }
            }
            assert!(
                matches!(chars.next(), None | Some(' ')),
                "a quoted value ends the pair: {line}"
            );
        } else {
            value = chars.by_ref().take_while(|c| *c != ' ').collect();
        }
        pairs.push((key, value));
    }
    pairs
}

fn get<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

#[test]
fn a_json_line_has_every_fact_of_a_nested_event_and_its_nested_payload() {
    let _serial = setup(LevelFilter::Trace);
    let notifier = Notifier::new();
    let logger = StructuredLog::json().namespace_level("sql", Level::Debug).build();
    let _s = logger.subscribe(&notifier, Pattern::all());
    let mut ids = (None, None);
    notifier.instrument("request.http", Payload::new, |_| {
        let outer = Context::current();
        tagged([("request_id", "r-17")], || {
            notifier.instrument(
                "query.sql",
                || {
                    Payload::new()
                        .with("sql", "SELECT 1")
                        .with(
                            "binds",
                            vec![notify_core::Value::from("Ada"), notify_core::Value::from(7_u64)],
                        )
                        .with("conn", Payload::new().with("pool", "main").with("id", 3_u64))
                        .with("big", u128::MAX)
                        .with("ratio", f64::NAN)
                },
                |_| ids = (outer.event_id(), Context::current().event_id().zip(outer.trace_id())),
            );
        });
    });
    let (outer, Some((inner, trace))) = ids else {
        panic!("ids: {ids:?}")
    };
    let captured = lines();
    assert_eq!(captured.len(), 2, "{captured:?}");
    let (level, target, query) = &captured[0];
    assert_eq!((*level, target.as_str()), (Level::Debug, "sql"));
    let query = json(query);
    assert_eq!(query["level"], "DEBUG");
    assert_eq!(query["event"], "query.sql");
    assert_eq!(query["outcome"], "completed");
    assert_eq!(query["trace_id"], trace.to_string());
    assert_eq!(query["span_id"], hex16(inner));
    assert_eq!(query["parent_id"], hex16(outer.unwrap()));
    assert!(query["duration_ms"].as_f64().unwrap() >= 0.0);
    let time = query["timestamp"].as_str().unwrap();
    assert!(time.ends_with('Z') && humantime::parse_rfc3339(time).is_ok(), "{time}");
    assert_eq!(query["tags"], serde_json::json!({"request_id": "r-17"}));
    assert_eq!(
        query["payload"],
        serde_json::json!({
            "sql": "SELECT 1",
            "binds": ["Ada", 7],
            "conn": {"pool": "main", "id": 3},
            "big": u128::MAX.to_string(),
            "ratio": "NaN",
        })
    );
    assert!(query.get("location").is_none(), "no callsite, no location");
    let request = json(&captured[1].2);
    assert_eq!((captured[1].0, captured[1].1.as_str()), (Level::Info, "http"));
    assert_eq!(request["span_id"], hex16(outer.unwrap()));
    assert!(request.get("parent_id").is_none(), "a root has no parent: {request}");
    assert!(
        request.get("tags").is_none(),
        "the request finished outside the tagged scope"
    );
    assert_eq!(logger.written(), 2);
}

#[test]
fn a_logfmt_line_has_dotted_keys_and_quoted_values() {
    let _serial = setup(LevelFilter::Trace);
    let notifier = Notifier::new();
    let logger = StructuredLog::logfmt().build();
    let _s = logger.subscribe(&notifier, "import.books");
    let mut seen = None;
    tagged(Tags::new().with("job", "nightly"), || {
        notifier.instrument(
            "import.books",
            || {
                Payload::new()
                    .with("file", "my books.csv")
                    .with("rows", 1200_u64)
                    .with("source", Payload::new().with("host", "a"))
                    .with("list", vec![notify_core::Value::from("x y")])
            },
            |_| seen = Some(Context::current()),
        )
    });
    let context = seen.unwrap();
    let messages = messages();
    assert_eq!(messages.len(), 1, "{messages:?}");
    let pairs = logfmt(&messages[0]);
    let keys: Vec<&str> = pairs.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        keys,
        [
            "time",
            "level",
            "event",
            "duration_ms",
            "outcome",
            "trace_id",
            "span_id",
            "tags.job",
            "payload.file",
            "payload.rows",
            "payload.source.host",
            "payload.list"
        ]
    );
    assert!(humantime::parse_rfc3339(get(&pairs, "time").unwrap()).is_ok());
    assert_eq!(get(&pairs, "level"), Some("info"));
    assert_eq!(
        get(&pairs, "trace_id"),
        Some(context.trace_id().unwrap().to_string().as_str())
    );
    assert_eq!(
        get(&pairs, "span_id"),
        Some(hex16(context.event_id().unwrap()).as_str())
    );
    assert!(
        messages[0].contains(r#" payload.file="my books.csv" payload.rows=1200 "#),
        "{}",
        messages[0]
    );
    assert!(messages[0].ends_with(r#" payload.list="[\"x y\"]""#), "{}", messages[0]);
}

const FORGED: &str = "x\n{\"level\":\"ERROR\",\"event\":\"admin.login\"} \u{1b}[2J\r\"=\\ \u{202e}";

#[test]
fn values_and_keys_cannot_forge_a_json_line_and_round_trip_exactly() {
    let _serial = setup(LevelFilter::Trace);
    let notifier = Notifier::new();
    let _s = StructuredLog::json().build().subscribe(&notifier, Pattern::all());
    notifier.instrument("login.auth", || Payload::new().with(FORGED, FORGED), |_| ());
    let messages = messages();
    assert_eq!(messages.len(), 1);
    let line = json(&messages[0]);
    assert_eq!(line["payload"][FORGED], FORGED);
    assert_eq!(line["event"], "login.auth");
    assert_eq!(line["level"], "INFO");
}

#[test]
fn values_and_keys_cannot_forge_a_logfmt_line_or_add_a_key() {
    let _serial = setup(LevelFilter::Trace);
    let notifier = Notifier::new();
    let keys = Keys::default().omit(LineKey::Time).omit(LineKey::Duration);
    let _s = StructuredLog::logfmt()
        .keys(keys)
        .build()
        .subscribe(&notifier, Pattern::all());
    notifier.instrument("login.auth", || Payload::new().with("a b=c\"d\n", FORGED), |_| ());
    let messages = messages();
    assert_eq!(messages.len(), 1);
    let line = &messages[0];
    assert!(!line.contains(['\n', '\r', '\u{1b}', '\u{202e}']), "{line:?}");
    let pairs = logfmt(line);
    assert_eq!(
        pairs.len(),
        6,
        "level event outcome trace_id span_id + one payload key: {pairs:?}"
    );
    let (key, value) = &pairs[5];
    // Percent-encoded (issue 44 item 6: the old `_` made distinct keys equal).
    assert_eq!(key, "payload.a%20b%3Dc%22d%0A");
    assert_eq!(
        value,
        "x\n{\"level\":\"ERROR\",\"event\":\"admin.login\"} \\u{1b}[2J\r\"=\\ \\u{202e}"
    );
}

#[test]
fn levels_per_namespace_and_per_name_silence_through_log() {
    let _serial = setup(LevelFilter::Info);
    let notifier = Notifier::new();
    let logger = StructuredLog::json()
        .namespace_level("sql", Level::Debug)
        .name_level("migration.sql", Level::Warn)
        .build();
    let _s = logger.subscribe(&notifier, Pattern::all());
    assert!(
        !notifier.listening("query.sql"),
        "debug is below the logger's info: silenced"
    );
    assert!(notifier.listening("migration.sql"));
    assert!(notifier.listening("request.http"));
    // Silenced: the payload is not even built, as for an unlistened event.
    let mut built = 0;
    notifier.instrument(
        "query.sql",
        || {
            built += 1;
            Payload::new()
        },
        |_| (),
    );
    assert_eq!(built, 0);
    notifier.instrument("migration.sql", Payload::new, |_| ());
    let captured = lines();
    assert_eq!(captured.len(), 1);
    assert_eq!((captured[0].0, captured[0].1.as_str()), (Level::Warn, "sql"));
    // A per-target filter of the logger counts too, and is asked now, not cached.
    LOGGER.filters.lock().unwrap().insert("http".into(), LevelFilter::Warn);
    assert!(!notifier.listening("request.http"));
    log::set_max_level(LevelFilter::Debug);
    assert!(notifier.listening("query.sql"));
    notifier.instrument("query.sql", Payload::new, |_| ());
    assert_eq!(lines().len(), 2);
    assert_eq!(logger.written(), 2);
}

#[test]
fn a_logger_whose_every_level_is_dropped_is_silenced_and_one_level_passing_is_not() {
    let _serial = setup(LevelFilter::Info);
    let notifier = Notifier::new();
    let debug_only = StructuredLog::json()
        .level(Level::Debug)
        .namespace_level("sql", Level::Trace)
        .build();
    let _a = debug_only.subscribe(&notifier, Pattern::all());
    assert!(!notifier.listening("query.sql"));
    assert!(!notifier.listening("request.http"));
    let one_passes = StructuredLog::json()
        .level(Level::Debug)
        .name_level("audit.app", Level::Warn)
        .build();
    let _b = one_passes.subscribe(&notifier, Pattern::all());
    assert!(notifier.listening("audit.app"));
    assert!(!notifier.listening("request.http"));
    notifier.instrument("audit.app", Payload::new, |_| ());
    notifier.instrument("request.http", Payload::new, |_| ());
    assert_eq!((debug_only.written(), one_passes.written()), (0, 1));
}

#[test]
fn a_fixed_target_and_a_panicked_outcome() {
    let _serial = setup(LevelFilter::Trace);
    let notifier = Notifier::new();
    let _s = StructuredLog::json()
        .target("app")
        .build()
        .subscribe(&notifier, Pattern::all());
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        notifier.instrument("job.worker", Payload::new, |_| panic!("boom"))
    }));
    assert!(result.is_err());
    let captured = lines();
    assert_eq!(captured.len(), 1);
    assert_eq!(captured[0].1, "app");
    assert_eq!(json(&captured[0].2)["outcome"], "panicked");
}

#[test]
fn a_future_dropped_before_it_completes_is_logged_as_cancelled() {
    let _serial = setup(LevelFilter::Trace);
    let notifier = Notifier::new();
    let _s = StructuredLog::json().build().subscribe(&notifier, Pattern::all());
    let handle = notifier.build_handle("job.async", Payload::new());
    let mut future = Box::pin(std::future::pending::<()>().instrument(handle));
    let waker = std::task::Waker::noop();
    let polled = future.as_mut().poll(&mut std::task::Context::from_waker(waker));
    assert!(polled.is_pending());
    drop(future);
    let messages = messages();
    assert_eq!(messages.len(), 1, "{messages:?}");
    assert_eq!(json(&messages[0])["outcome"], "cancelled");
}

#[test]
fn keys_can_be_renamed_dropped_and_the_payload_flattened_without_overwriting_facts() {
    let _serial = setup(LevelFilter::Trace);
    let notifier = Notifier::new();
    let keys = Keys::default()
        .rename(LineKey::Time, "ts")
        .omit(LineKey::Location)
        .omit(LineKey::ParentId)
        .payload(Placement::Flat)
        .tags(Placement::Omit);
    let _s = StructuredLog::json()
        .keys(keys)
        .build()
        .subscribe(&notifier, Pattern::all());
    tagged([("t", 1_u64)], || {
        notifier.instrument(
            "a.b",
            || Payload::new().with("event", "mine").with("rows", 2_u64),
            |_| (),
        )
    });
    let line = json(&messages()[0]);
    let keys: Vec<&str> = line.as_object().unwrap().keys().map(String::as_str).collect();
    let mut expected = [
        "ts",
        "level",
        "event",
        "duration_ms",
        "outcome",
        "trace_id",
        "span_id",
        "payload.event",
        "rows",
    ];
    expected.sort_unstable();
    let mut keys = keys;
    keys.sort_unstable();
    assert_eq!(keys, expected);
    assert_eq!(line["event"], "a.b");
    assert_eq!(line["payload.event"], "mine");
}

#[test]
fn a_callsite_event_has_its_location() {
    let _serial = setup(LevelFilter::Trace);
    static SITE: Callsite = Callsite::at("located.structured", Location::new(file!(), 42, module_path!()));
    let subscription = StructuredLog::logfmt()
        .build()
        .subscribe(Notifier::global(), "located.structured");
    SITE.instrument(Payload::new, |_| ());
    subscription.unsubscribe().unwrap();
    let messages = messages();
    assert_eq!(messages.len(), 1, "{messages:?}");
    let pairs = logfmt(&messages[0]);
    assert_eq!(get(&pairs, "location"), Some(format!("{}:42", file!()).as_str()));
}

#[test]
fn the_rate_limit_writes_n_lines_then_one_summary_and_counts_every_drop() {
    let _serial = setup(LevelFilter::Trace);
    let notifier = Notifier::new();
    let logger = StructuredLog::json().rate_limit(2, Duration::from_millis(40)).build();
    let _s = logger.subscribe(&notifier, Pattern::all());
    for _ in 0..5 {
        notifier.instrument("hot.path", Payload::new, |_| ());
    }
    notifier.instrument("cold.path", Payload::new, |_| ());
    assert_eq!((logger.written(), logger.suppressed()), (3, 3));
    std::thread::sleep(Duration::from_millis(60));
    notifier.instrument("hot.path", Payload::new, |_| ());
    let messages = messages();
    assert_eq!(messages.len(), 5, "{messages:#?}");
    let summary = json(&messages[3]);
    assert_eq!(summary["event"], "hot.path");
    assert_eq!(summary["suppressed"], 3);
    assert_eq!(summary["interval_ms"], 40);
    assert_eq!(json(&messages[4])["event"], "hot.path");
    assert!(json(&messages[4]).get("suppressed").is_none());
    assert_eq!((logger.written(), logger.suppressed()), (5, 3));
    assert_eq!(logger.flush_suppressed(), 0, "nothing pending");
}

#[test]
fn pending_suppressed_lines_are_summarised_by_flush_and_the_limit_is_off_by_default() {
    let _serial = setup(LevelFilter::Trace);
    let notifier = Notifier::new();
    let limited = StructuredLog::logfmt().rate_limit(1, Duration::from_secs(3600)).build();
    let unlimited = StructuredLog::logfmt().target("all").build();
    let _a = limited.subscribe(&notifier, Pattern::all());
    let _b = unlimited.subscribe(&notifier, Pattern::all());
    for _ in 0..10 {
        notifier.instrument("hot.path", Payload::new, |_| ());
    }
    assert_eq!((unlimited.written(), unlimited.suppressed()), (10, 0));
    assert_eq!((limited.written(), limited.suppressed()), (1, 9));
    assert_eq!(limited.flush_suppressed(), 1);
    let last = messages().pop().unwrap();
    let pairs = logfmt(&last);
    assert_eq!(get(&pairs, "suppressed"), Some("9"));
    assert_eq!(get(&pairs, "interval_ms"), Some("3600000"));
    assert_eq!(limited.flush_suppressed(), 0);
    // A zero limit is no limit.
    let off = StructuredLog::json().rate_limit(0, Duration::from_secs(1)).build();
    let _c = off.subscribe(&notifier, "x.y");
    notifier.instrument("x.y", Payload::new, |_| ());
    notifier.instrument("x.y", Payload::new, |_| ());
    assert_eq!((off.written(), off.suppressed()), (2, 0));
}

#[test]
fn i44_4_names_beyond_the_limit_share_one_window_and_every_drop_is_counted_by_cause() {
    let _serial = setup(LevelFilter::Trace);
    let notifier = Notifier::new();
    let logger = StructuredLog::json()
        .rate_limit(1, Duration::from_secs(3600))
        .rate_limit_names(3)
        .build();
    let _s = logger.subscribe(&notifier, Pattern::all());
    // Five names (imported from outside, say), two lines each.
    for name in ["a.x", "b.x", "c.x", "d.x", "e.x"] {
        for _ in 0..2 {
            notifier.instrument(name, Payload::new, |_| ());
        }
    }
    // a, b, c have a window each (1 line written, 1 dropped each); d and e share one: 1 of 4.
    let stats = logger.rate_limit_stats();
    assert_eq!(
        (
            stats.names,
            stats.suppressed_per_name,
            stats.suppressed_shared,
            stats.lines_shared
        ),
        (3, 3, 3, 4)
    );
    assert_eq!((logger.written(), logger.suppressed()), (4, 6));
    let written: Vec<Json> = messages().iter().map(|m| json(m)).collect();
    let events: Vec<&str> = written.iter().map(|l| l["event"].as_str().unwrap()).collect();
    assert_eq!(events, ["a.x", "b.x", "c.x", "d.x"]);
    // The summaries: one per own window, one for the shared window under `*`.
    assert_eq!(logger.flush_suppressed(), 4);
    let mut summaries: Vec<(String, u64)> = messages()[4..]
        .iter()
        .map(|m| {
            let line = json(m);
            (
                line["event"].as_str().unwrap().to_owned(),
                line["suppressed"].as_u64().unwrap(),
            )
        })
        .collect();
    summaries.sort();
    assert_eq!(
        summaries,
        [
            ("*".to_owned(), 3),
            ("a.x".to_owned(), 1),
            ("b.x".to_owned(), 1),
            ("c.x".to_owned(), 1)
        ]
    );
    assert_eq!(lines()[7].1, "notify_log", "the shared summary's target");
}

#[test]
fn tags_follow_spawned_futures_and_threads_with_their_context() {
    let _serial = setup(LevelFilter::Trace);
    let notifier = Notifier::new();
    let _s = StructuredLog::json().build().subscribe(&notifier, Pattern::all());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let n = notifier.clone();
    let trace = tagged([("request_id", "r-1")], || {
        notifier.instrument("request.http", Payload::new, |_| {
            let job = async move { n.instrument("job.async", Payload::new, |_| ()) }.in_current_context();
            runtime.block_on(async { tokio::spawn(job).await.unwrap() });
            let (context, tags, n) = (Context::current(), Tags::current(), notifier.clone());
            std::thread::spawn(move || {
                let _context = context.attach();
                tags.in_scope(|| n.instrument("job.thread", Payload::new, |_| ()));
            })
            .join()
            .unwrap();
            // Not carried: a thread given only the context.
            let (context, n) = (Context::current(), notifier.clone());
            std::thread::spawn(move || context.in_scope(|| n.instrument("job.untagged", Payload::new, |_| ())))
                .join()
                .unwrap();
            Context::current().trace_id().unwrap()
        })
    });
    let lines: Vec<Json> = messages().iter().map(|m| json(m)).collect();
    let by_name = |name: &str| {
        lines
            .iter()
            .find(|l| l["event"] == name)
            .unwrap_or_else(|| panic!("{name}: {lines:?}"))
    };
    for name in ["job.async", "job.thread", "request.http"] {
        assert_eq!(
            by_name(name)["tags"],
            serde_json::json!({"request_id": "r-1"}),
            "{name}"
        );
        assert_eq!(by_name(name)["trace_id"], trace.to_string(), "{name}");
    }
    assert!(by_name("job.untagged").get("tags").is_none());
    assert_eq!(by_name("job.untagged")["trace_id"], trace.to_string());
}

struct Db;
impl LogSubscriber for Db {
    fn config() -> LogConfig<Db> {
        LogConfig::new("db")
            .method("query", Level::Debug, |_: &Db, event: &LogEvent<'_>| {
                Some(format!("{} {}", event.get("sql")?, event.get("binds")?))
            })
            .method("ids", Level::Info, |_: &Db, event: &LogEvent<'_>| {
                let trace = event.trace_id().map(|t| t.to_string()).unwrap_or_default();
                let parent = event.parent_id().map(hex16).unwrap_or_default();
                Some(format!(
                    "trace={trace} span={} parent={parent} {}",
                    hex16(event.id()),
                    event.field("x")
                ))
            })
    }
}

#[test]
fn a_missing_key_marks_the_line_instead_of_dropping_it() {
    let _serial = setup(LevelFilter::Trace);
    let notifier = Notifier::new();
    let _attached = Db.attach_to(&notifier).unwrap();
    notifier.instrument(
        "query.db",
        || Payload::new().with("sql", "SELECT 1").with("binds", "[1]"),
        |_| (),
    );
    notifier.instrument("query.db", || Payload::new().with("binds", "[1]"), |_| ());
    notifier.instrument("query.db", Payload::new, |_| ());
    let captured = lines();
    assert_eq!(captured.len(), 3, "{captured:?}");
    assert_eq!(captured[0].2, "SELECT 1 [1]");
    assert_eq!(captured[1].0, Level::Debug);
    assert!(
        captured[1].2.starts_with("query.db (") && captured[1].2.ends_with("ms)  [missing sql]"),
        "{}",
        captured[1].2
    );
    // `?` stops at the first missing key.
    assert!(captured[2].2.ends_with("  [missing sql]"), "{}", captured[2].2);
}

#[test]
fn the_rails_style_formatter_can_show_trace_event_and_parent_ids() {
    let _serial = setup(LevelFilter::Trace);
    let notifier = Notifier::new();
    let _attached = Db.attach_to(&notifier).unwrap();
    let outer = Context::new(TraceId::new(0xabc).unwrap(), Some(EventId::new(77)));
    let inner = outer.in_scope(|| {
        let mut inner = None;
        notifier.instrument("ids.db", Payload::new, |_| inner = Context::current().event_id());
        inner.unwrap()
    });
    let expected = format!(
        "trace=00000000000000000000000000000abc span={} parent=000000000000004d [missing x]",
        hex16(inner)
    );
    assert_eq!(messages(), [expected]);
}

#[test]
fn formats_are_named() {
    assert_eq!(StructuredLog::json().build().format(), Format::Json);
    assert_eq!(StructuredLog::logfmt().build().format(), Format::Logfmt);
}

struct TaggedDb;
impl LogSubscriber for TaggedDb {
    fn config() -> LogConfig<TaggedDb> {
        LogConfig::new("tdb")
            .tagged(true)
            .method("query", Level::Info, |_: &TaggedDb, event: &LogEvent<'_>| {
                Some(format!("{}", event.field("sql")))
            })
    }
}

#[test]
fn a_tagged_rails_style_subscriber_prefixes_its_lines_with_the_scope_tags_escaped() {
    let _serial = setup(LevelFilter::Trace);
    let notifier = Notifier::new();
    let _tagged = TaggedDb.attach_to(&notifier).unwrap();
    let _plain = Db.attach_to(&notifier).unwrap();
    notifier.instrument("query.tdb", || Payload::new().with("sql", "SELECT 0"), |_| ());
    tagged([("request_id", "req-7"), ("tenant", "ac\nme")], || {
        notifier.instrument("query.tdb", || Payload::new().with("sql", "SELECT 1"), |_| ());
        notifier.instrument(
            "query.db",
            || Payload::new().with("sql", "SELECT 2").with("binds", "[]"),
            |_| (),
        );
    });
    tagged([("bad", "x\n[INFO  auth] admin")], || {
        notifier.instrument("query.tdb", || Payload::new().with("sql", "SELECT 3"), |_| ())
    });
    assert_eq!(
        messages(),
        [
            "SELECT 0",
            "[req-7] [ac\\nme] SELECT 1",
            "SELECT 2 []",
            "[x\\n[INFO  auth] admin] SELECT 3"
        ]
    );
}

// Issue 44 item 6: every line has each key once, no value shadows another (the rule is in the
// `structured` module docs, "Unique keys").

/// The top-level keys of a JSON line in order, duplicates kept (a JSON map would fold them).
fn json_keys(line: &str) -> Vec<String> {
    struct Keys(Vec<String>);
    impl<'de> serde::de::Visitor<'de> for Keys {
        type Value = Vec<String>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(mut self, mut map: A) -> Result<Vec<String>, A::Error> {
            while let Some((k, _)) = map.next_entry::<String, serde::de::IgnoredAny>()? {
                self.0.push(k);
            }
            Ok(self.0)
        }
    }
    let mut de = serde_json::Deserializer::from_str(line);
    serde::Deserializer::deserialize_map(&mut de, Keys(Vec::new())).unwrap()
}

fn assert_unique(keys: &[String], line: &str) {
    let mut sorted: Vec<&String> = keys.iter().collect();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), keys.len(), "a key twice in {line}");
}

/// The JSON and logfmt lines of one event published with `keys`, `tags` and `payload`: each line's
/// keys (checked unique) and the line, JSON first.
fn both_lines(keys: Keys, tags: Tags, payload: fn() -> Payload) -> (Json, Vec<(String, String)>) {
    let notifier = Notifier::new();
    let keys = keys.omit(LineKey::Time).omit(LineKey::Duration);
    let _j = StructuredLog::json()
        .keys(keys.clone())
        .build()
        .subscribe(&notifier, Pattern::all());
    let _l = StructuredLog::logfmt()
        .keys(keys)
        .build()
        .subscribe(&notifier, Pattern::all());
    LOGGER.lines.lock().unwrap().clear();
    tags.in_scope(|| notifier.instrument("a.b", payload, |_| ()));
    let messages = messages();
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert_unique(&json_keys(&messages[0]), &messages[0]);
    let pairs = logfmt(&messages[1]);
    let logfmt_keys: Vec<String> = pairs.iter().map(|(k, _)| k.clone()).collect();
    assert_unique(&logfmt_keys, &messages[1]);
    (json(&messages[0]), pairs)
}

#[test]
fn i44_6_flat_tag_and_payload_user_are_both_written_unique() {
    let _serial = setup(LevelFilter::Trace);
    let keys = Keys::default().tags(Placement::Flat).payload(Placement::Flat);
    let (json, pairs) = both_lines(keys, Tags::new().with("user", "from-tag"), || {
        Payload::new().with("user", "from-payload")
    });
    assert_eq!(
        (&json["user"], &json["payload.user"]),
        (&Json::from("from-tag"), &Json::from("from-payload"))
    );
    assert_eq!(get(&pairs, "user"), Some("from-tag"));
    assert_eq!(get(&pairs, "payload.user"), Some("from-payload"));
}

#[test]
fn i44_6_a_payload_key_named_payload_level_does_not_shadow_the_renamed_level() {
    let _serial = setup(LevelFilter::Trace);
    let keys = Keys::default().payload(Placement::Flat);
    let (json, pairs) = both_lines(keys, Tags::new(), || {
        Payload::new().with("level", "mine").with("payload.level", "forged")
    });
    assert_eq!(
        (&json["level"], &json["payload.level"], &json["payload.payload.level"]),
        (&Json::from("INFO"), &Json::from("mine"), &Json::from("forged"))
    );
    assert_eq!(get(&pairs, "level"), Some("info"));
    assert_eq!(get(&pairs, "payload.level"), Some("mine"));
    assert_eq!(get(&pairs, "payload.payload.level"), Some("forged"));
    // The other order: the first claim keeps `payload.level`, the renamed `level` gets a suffix.
    let keys = Keys::default().payload(Placement::Flat);
    let (json, pairs) = both_lines(keys, Tags::new(), || {
        Payload::new().with("payload.level", "forged").with("level", "mine")
    });
    assert_eq!(
        (&json["level"], &json["payload.level"], &json["payload.level~2"]),
        (&Json::from("INFO"), &Json::from("forged"), &Json::from("mine"))
    );
    assert_eq!(get(&pairs, "payload.level~2"), Some("mine"));
}

#[test]
fn i44_6_a_flat_payload_key_tags_does_not_duplicate_the_tags_object() {
    let _serial = setup(LevelFilter::Trace);
    // Tags in their default place (nested under `tags`), the payload flat.
    let keys = Keys::default().payload(Placement::Flat);
    let (json, pairs) = both_lines(keys, Tags::new().with("request_id", "r-17"), || {
        Payload::new().with("tags", Payload::new().with("request_id", "forged"))
    });
    assert_eq!(json["tags"], serde_json::json!({"request_id": "r-17"}));
    assert_eq!(json["payload.tags"], serde_json::json!({"request_id": "forged"}));
    assert_eq!(get(&pairs, "tags.request_id"), Some("r-17"));
    assert_eq!(get(&pairs, "payload.tags.request_id"), Some("forged"));
}

#[test]
fn i44_6_logfmt_keys_that_differ_only_in_unsafe_characters_stay_distinct() {
    let _serial = setup(LevelFilter::Trace);
    let (json, pairs) = both_lines(Keys::default(), Tags::new(), || {
        Payload::new()
            .with("a b", 1_u64)
            .with("a_b", 2_u64)
            .with("a=b", 3_u64)
            .with("a%20b", 4_u64)
    });
    assert_eq!(
        json["payload"],
        serde_json::json!({"a b": 1, "a_b": 2, "a=b": 3, "a%20b": 4})
    );
    let payload: Vec<(&str, &str)> = pairs[pairs.len() - 4..]
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(
        payload,
        [
            ("payload.a%20b", "1"),
            ("payload.a_b", "2"),
            ("payload.a%3Db", "3"),
            ("payload.a%2520b", "4")
        ]
    );
}

#[test]
fn i44_6_facts_renamed_alike_and_dotted_keys_get_a_suffix() {
    let _serial = setup(LevelFilter::Trace);
    let keys = Keys::default().rename(LineKey::Outcome, "level");
    let (json, pairs) = both_lines(keys, Tags::new(), || {
        Payload::new()
            .with("a", Payload::new().with("b", 1_u64))
            .with("a.b", 2_u64)
    });
    assert_eq!(
        (&json["level"], &json["level~2"]),
        (&Json::from("INFO"), &Json::from("completed"))
    );
    assert_eq!(json["payload"], serde_json::json!({"a": {"b": 1}, "a.b": 2}));
    assert_eq!(
        (get(&pairs, "level"), get(&pairs, "level~2")),
        (Some("info"), Some("completed"))
    );
    assert_eq!(get(&pairs, "payload.a.b"), Some("1"));
    assert_eq!(get(&pairs, "payload.a.b~2"), Some("2"));
}
