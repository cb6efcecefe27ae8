//! Lines notify-core writes itself cannot be forged (issue 16, item 6): the default failure report
//! through the `log` facade, with a hostile event name and a hostile panic message.

use notify_core::{Notifier, Payload, Subscriber};

/// Newline (a forged line), CR, ESC (clear screen), OSC (window title), a right-to-left override.
const HOSTILE: &str = "\n[INFO  auth] admin logged in\r\u{1b}[2J\u{1b}]0;pwned\u{7}\u{202e}exe.txt";
const ESCAPED: &str = r"\n[INFO  auth] admin logged in\r\u{1b}[2J\u{1b}]0;pwned\u{7}\u{202e}exe.txt";

#[cfg(feature = "log")]
struct Capture(std::sync::Mutex<Vec<(String, String)>>);

#[cfg(feature = "log")]
impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }
    fn log(&self, record: &log::Record<'_>) {
        self.0
            .lock()
            .unwrap()
            .push((record.target().to_owned(), record.args().to_string()));
    }
    fn flush(&self) {}
}

#[cfg(feature = "log")]
static LOGGER: Capture = Capture(std::sync::Mutex::new(Vec::new()));

#[test]
#[cfg(feature = "log")]
fn default_failure_report_escapes_the_event_name_and_the_panic_message() {
    log::set_logger(&LOGGER).unwrap();
    log::set_max_level(log::LevelFilter::Trace);
    let notifier = Notifier::new();
    let name = format!("login.auth{HOSTILE}");
    let _ = notifier.subscribe(
        name.as_str(),
        Subscriber::event(|_: &notify_core::Event| std::panic::panic_any(format!("boom{HOSTILE}"))).named("audit"),
    );
    let prior = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    notifier.instrument(&name, Payload::new, |_| ());
    std::panic::set_hook(prior);

    let lines = LOGGER.0.lock().unwrap();
    assert_eq!(lines.len(), 1, "{lines:?}");
    let (target, line) = &lines[0];
    assert_eq!(target, "notify");
    assert_eq!(
        *line,
        format!("subscriber `audit` (event, subscription #1) panicked on `login.auth{ESCAPED}`: boom{ESCAPED}")
    );
    assert!(!line.chars().any(notify_core::escape::needs_escape), "{line:?}");
}

#[test]
#[cfg(feature = "testing")]
fn testing_assertions_quote_the_pattern_escaped() {
    let notifier = Notifier::new();
    let pattern = format!("x{HOSTILE}");
    let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        notify_core::testing::assert_notifications_count(&notifier, pattern.as_str(), 1, || {})
    }))
    .unwrap_err();
    let message = notify_core::failure::panic_message(&*panic);
    assert_eq!(message, format!("expected 1 `x{ESCAPED}` event(s), found 0: []"));
}

#[test]
fn strict_mode_report_escapes_every_failure() {
    let notifier = Notifier::new();
    notifier.set_failure_hook(|_: &notify_core::failure::SubscriberFailure| {});
    notifier.set_failure_policy(notify_core::failure::FailurePolicy::Strict);
    let name = format!("x{HOSTILE}");
    let _ = notifier.subscribe(
        name.as_str(),
        Subscriber::event(|_: &notify_core::Event| std::panic::panic_any(format!("boom{HOSTILE}"))),
    );
    let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        notifier.instrument(&name, Payload::new, |_| ())
    }))
    .unwrap_err();
    let errors = panic.downcast::<notify_core::failure::SubscriberErrors>().unwrap();
    assert_eq!(
        errors.to_string(),
        format!("1 subscriber(s) failed:\n  subscriber `event` (event, subscription #1) panicked on `x{ESCAPED}`: boom{ESCAPED}")
    );
}

/// 16.6 / 17: a redaction policy's invalid pattern is named in one short line: a hostile pattern
/// is quoted escaped, and a 1 MB pattern is cut (the regex crate's own message quoted it twice,
/// caret diagram included: 2,097,235 bytes for `(` + 1 MB).
#[test]
#[cfg(feature = "redaction")]
fn redaction_errors_quote_the_pattern_escaped_and_truncated() {
    let hostile = format!("({HOSTILE}");
    let err = notify_core::redaction::Redaction::builder()
        .value_regex(&hostile)
        .build()
        .unwrap_err();
    assert_eq!(err.pattern, hostile);
    assert_eq!(
        err.to_string(),
        format!("invalid redaction pattern `({ESCAPED}` at byte 0: unclosed group")
    );

    let big = format!("({}", "a".repeat(1 << 20));
    let err = notify_core::redaction::Redaction::builder()
        .key("password")
        .key_regex(&big)
        .build()
        .unwrap_err();
    assert_eq!(
        (err.pattern.len(), err.position, err.reason.as_str()),
        (big.len(), Some(0), "unclosed group")
    );
    assert_eq!(
        err.to_string(),
        format!(
            "invalid redaction pattern `({}…[1048577 bytes]` at byte 0: unclosed group",
            "a".repeat(79)
        )
    );

    let err = notify_core::redaction::Redaction::builder()
        .key_glob("")
        .build()
        .unwrap_err();
    assert_eq!(err.to_string(), "invalid redaction pattern ``: empty pattern");
}
