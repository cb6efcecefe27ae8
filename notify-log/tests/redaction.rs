//! Redaction end to end (issue 17, item 4): a secret planted in a payload, a macro field, an
//! error recorded by `err` and values recorded during the body is absent from every line a log
//! subscriber writes through the `log` facade (message, target, module path, file), and the
//! lines show the keyed hash instead. Its own test binary: it installs the process's logger and
//! sets the global notifier's policy.

#[path = "../../notify-core/tests/support/secrets.rs"]
mod secrets;

use std::fmt::Write as _;
use std::sync::Mutex;

use log::{Level, LevelFilter, Log, Metadata, Record};
use notify_log::{ColorChoice, LogConfig, LogEvent, LogSubscriber};

/// Every record the `log` facade passes on, written out whole.
struct Capture(Mutex<Vec<String>>);

impl Log for Capture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn log(&self, record: &Record<'_>) {
        let line = format!(
            "{} {} {:?} {:?} {:?} {}",
            record.level(),
            record.target(),
            record.module_path(),
            record.file(),
            record.line(),
            record.args()
        );
        self.0.lock().unwrap().push(line);
    }

    fn flush(&self) {}
}

static LOGGER: Capture = Capture(Mutex::new(Vec::new()));

/// Logs each of the fixture's events with every payload entry (`key=value`, raw, not escaped:
/// nothing is left out of the line).
struct Secrets;

fn every_entry(_: &Secrets, event: &LogEvent<'_>) -> Option<String> {
    let mut line = format!("{} ({})", event.name(), event.elapsed());
    for (key, value) in event.payload().iter() {
        write!(line, " {key}={value}").unwrap();
    }
    Some(line)
}

impl LogSubscriber for Secrets {
    fn config() -> LogConfig<Secrets> {
        LogConfig::new("secrets")
            .color(ColorChoice::Never)
            .method("payload", Level::Info, every_entry)
            .method("field", Level::Info, every_entry)
            .method("err", Level::Error, every_entry)
            .method("record", Level::Debug, every_entry)
    }
}

#[test]
fn secrets_are_absent_from_every_log_line() {
    log::set_logger(&LOGGER).expect("the only logger of this test binary");
    log::set_max_level(LevelFilter::Trace);
    let attached = Secrets.attach_to(secrets::global()).unwrap();
    secrets::plant();
    attached.detach();

    let lines = LOGGER.0.lock().unwrap().clone();
    let ours: Vec<&String> = lines.iter().filter(|l| l.contains(".secrets (")).collect();
    assert_eq!(ours.len(), 4, "one line per event: {lines:#?}");
    for (line, name) in ours.iter().zip(secrets::EVENTS) {
        assert!(line.contains(name), "{line}");
        assert!(
            line.contains("user=ann") || name.starts_with("err") || name.starts_with("record"),
            "{line}"
        );
    }
    for line in &lines {
        secrets::assert_clean("a log line", line.as_bytes());
    }
    // Each line shows what replaced its secret: the hash under a matched key, and for the error
    // (matched by its value) a hash of the message, the type name kept.
    let hash = secrets::hashed_secret();
    assert!(ours[0].contains(&format!("password={hash}")), "{}", ours[0]);
    assert!(ours[1].contains(&format!("api_token={hash}")), "{}", ours[1]);
    assert!(
        ours[2].contains("exception=alloc::string::String: hmac:"),
        "{}",
        ours[2]
    );
    assert!(ours[3].contains(&format!("session_token={hash}")), "{}", ours[3]);
    assert!(ours[3].contains("header=hmac:"), "{}", ours[3]);
}
