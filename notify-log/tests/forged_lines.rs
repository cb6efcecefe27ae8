//! Log lines cannot be forged (issue 16, item 6): event names, payload values and panic messages
//! holding a newline, CR, ESC (clear screen), OSC (window title) or a right-to-left override are
//! written escaped, on every path a log subscriber writes.
//!
//! One capturing logger per test binary; the tests are serialised with a mutex.

use std::sync::{Mutex, MutexGuard, Once};

use log::{Level, LevelFilter, Log, Metadata, Record};
use notify_core::escape::needs_escape;
use notify_core::{Notifier, Pattern, Payload, Subscriber};
use notify_log::{Color, ColorChoice, LogConfig, LogEvent, LogMethod, LogSubscriber};

/// Newline (a forged line), CR, ESC (clear screen), OSC (window title), a right-to-left override.
const HOSTILE: &str = "\n[INFO  auth] admin logged in\r\u{1b}[2J\u{1b}]0;pwned\u{7}\u{202e}exe.txt";
const ESCAPED: &str = r"\n[INFO  auth] admin logged in\r\u{1b}[2J\u{1b}]0;pwned\u{7}\u{202e}exe.txt";

type Line = (Level, String, String);

struct Capture(Mutex<Vec<Line>>);

impl Log for Capture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn log(&self, record: &Record<'_>) {
        let line = (record.level(), record.target().to_owned(), record.args().to_string());
        self.0.lock().unwrap().push(line);
    }
    fn flush(&self) {}
}

static LOGGER: Capture = Capture(Mutex::new(Vec::new()));
static SERIAL: Mutex<()> = Mutex::new(());

fn setup() -> MutexGuard<'static, ()> {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| log::set_logger(&LOGGER).expect("the only logger of this test binary"));
    let guard = SERIAL.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    LOGGER.0.lock().unwrap().clear();
    log::set_max_level(LevelFilter::Trace);
    guard
}

fn lines() -> Vec<Line> {
    LOGGER.0.lock().unwrap().clone()
}

/// Logs `"<sql value> | <escaped sql> | <styled sql>"`: a raw value (what a careless formatting
/// method writes), the documented escaping display, and a coloured value.
struct Sql(ColorChoice);

impl LogSubscriber for Sql {
    fn config() -> LogConfig<Sql> {
        LogConfig::new("sql").method("query", Level::Info, |_: &Sql, event: &LogEvent<'_>| {
            let raw = event.payload().get("sql")?;
            Some(format!(
                "{raw} | {} | {}",
                event.get("sql")?,
                event.color(raw, Some(Color::Red), false)
            ))
        })
    }

    fn color(&self) -> Option<ColorChoice> {
        Some(self.0)
    }
}

fn log_hostile_sql(color: ColorChoice) -> Vec<Line> {
    let notifier = Notifier::new();
    let attached = Sql(color).attach_to(&notifier).unwrap();
    notifier.instrument(
        "query.sql",
        || Payload::new().with("sql", format!("SELECT 1{HOSTILE}")),
        |_| (),
    );
    attached.detach();
    lines()
}

#[test]
fn f1_payload_values_are_escaped_in_lines_without_colour() {
    let _serial = setup();
    let lines = log_hostile_sql(ColorChoice::Never);
    let expected = format!("SELECT 1{ESCAPED} | SELECT 1{ESCAPED} | SELECT 1{ESCAPED}");
    assert_eq!(lines, [(Level::Info, "sql".to_owned(), expected)]);
    assert!(!lines[0].2.chars().any(needs_escape));
}

#[test]
fn f2_with_colour_only_the_subscribers_own_colour_sequences_are_kept() {
    let _serial = setup();
    let lines = log_hostile_sql(ColorChoice::Always);
    let expected = format!("SELECT 1{ESCAPED} | SELECT 1{ESCAPED} | \u{1b}[31mSELECT 1{ESCAPED}\u{1b}[0m");
    assert_eq!(lines, [(Level::Info, "sql".to_owned(), expected.clone())]);
    // The only ESC characters left are the two of the red style.
    assert_eq!(lines[0].2.matches('\u{1b}').count(), 2);
    assert!(!lines[0].2.contains('\n') && !lines[0].2.contains('\r') && !lines[0].2.contains('\u{202e}'));
}

#[test]
fn f3_could_not_log_escapes_the_event_name_and_the_panic_message() {
    struct Fragile;
    impl LogSubscriber for Fragile {
        fn config() -> LogConfig<Fragile> {
            LogConfig::new("db").color(ColorChoice::Never).method(
                "query",
                Level::Info,
                |_: &Fragile, _: &LogEvent<'_>| std::panic::panic_any(format!("bad bind{HOSTILE}")),
            )
        }
    }
    let _serial = setup();
    let notifier = Notifier::new();
    // Subscribed to every name, so a hostile event name reaches the method.
    for method in LogMethod::all(Fragile).unwrap() {
        let _ = notifier.subscribe(Pattern::all(), Subscriber::silenceable(method));
    }
    let prior = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let name = format!("query.db{HOSTILE}");
    assert_eq!(notifier.instrument(&name, Payload::new, |_| 7), 7);
    std::panic::set_hook(prior);
    assert_eq!(
        lines(),
        [(
            Level::Error,
            "db".to_owned(),
            format!("could not log query.db{ESCAPED}: bad bind{ESCAPED}")
        )]
    );
}

#[test]
fn f4_a_line_built_from_the_event_name_stays_one_line() {
    struct Names;
    impl LogSubscriber for Names {
        fn config() -> LogConfig<Names> {
            LogConfig::new("db").color(ColorChoice::Never).method(
                "query",
                Level::Info,
                |_: &Names, event: &LogEvent<'_>| Some(format!("event {}", event.name())),
            )
        }
    }
    let _serial = setup();
    let notifier = Notifier::new();
    for method in LogMethod::all(Names).unwrap() {
        let _ = notifier.subscribe(Pattern::all(), Subscriber::silenceable(method));
    }
    notifier.instrument(&format!("query.db{HOSTILE}"), Payload::new, |_| ());
    assert_eq!(
        lines(),
        [(Level::Info, "db".to_owned(), format!("event query.db{ESCAPED}"))]
    );
}

#[test]
fn f5_configuration_errors_quote_names_escaped() {
    struct Hostile;
    impl LogSubscriber for Hostile {
        fn config() -> LogConfig<Hostile> {
            LogConfig::new("db").method(format!("q{HOSTILE}"), Level::Info, |_: &Hostile, _: &LogEvent<'_>| None)
        }
    }
    let notifier = Notifier::new();
    let err = Hostile.attach_to(&notifier).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "invalid log subscriber method `q{ESCAPED}` in namespace `db`: a method name is non-empty and has no dot"
        )
    );
    assert_eq!(notifier.subscriber_count(), 0);
}
