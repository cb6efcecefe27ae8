//! Redaction end to end (issue 17, items 2 and 4), both directions of the bridges.
//!
//! * notify -> tracing: a secret planted in a payload, a macro field, an error recorded by `err`
//!   and values recorded during the body is absent from everything tracing-subscriber's `fmt`
//!   layer writes (full and JSON formats, spans and events-at-finish), which shows the keyed hash.
//! * tracing -> notify and log -> notify: spans, span records, error events and log records
//!   republished into a notifier with a policy reach its subscribers redacted.
//!
//! Its own test binary: it sets the global notifier's policy.

#[path = "../../notify-core/tests/support/secrets.rs"]
mod secrets;

use std::io;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use log::Log as _;
use notify_core::{
    context::EventContext, context::TransactionId, Event, EventedSubscriber, Notifier, Pattern, Payload, Subscriber,
};
use notify_tracing::{NotifyLayer, NotifyLogger, TracingForwarder};
use secrets::SECRET;
use tracing_subscriber::fmt::format::FmtSpan;
use tracing_subscriber::prelude::*;

/// What a `fmt` layer writes, kept in memory.
#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl io::Write for Buffer {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Buffer {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).expect("fmt writes UTF-8")
    }
}

/// Plants the fixture's secrets with the bridge (spans, or events at finish) subscribed to the
/// global notifier and `subscriber` as this thread's tracing subscriber; returns what it wrote.
fn through_fmt(bridge: TracingForwarder, subscriber: impl tracing::Subscriber + Send + Sync + 'static) {
    let _serial = secrets::serial();
    let subscription = bridge.subscribe(secrets::global(), Pattern::glob("*.secrets").unwrap());
    tracing::subscriber::with_default(subscriber, secrets::plant);
    subscription.unsubscribe().unwrap();
}

/// A registry with a `fmt` layer (full format, span NEW and CLOSE lines) writing into `buffer`.
fn fmt_subscriber(buffer: &Buffer) -> impl tracing::Subscriber + Send + Sync + 'static {
    let buffer = buffer.clone();
    tracing_subscriber::registry().with(
        tracing_subscriber::fmt::layer()
            .with_ansi(false)
            .with_span_events(FmtSpan::NEW | FmtSpan::CLOSE)
            .with_writer(move || buffer.clone()),
    )
}

#[test]
fn secrets_are_absent_from_fmt_output_of_bridged_spans() {
    let buffer = Buffer::default();
    through_fmt(TracingForwarder::new(), fmt_subscriber(&buffer));
    let text = buffer.text();
    // A new and a close line per span.
    assert_eq!(text.lines().count(), 8, "{text}");
    for name in secrets::EVENTS {
        let span = name.split('.').next().unwrap();
        assert!(text.contains(&format!("{span}{{")), "no span {span}: {text}");
    }
    secrets::assert_redacted("tracing fmt output (spans)", text.as_bytes());
    assert!(text.contains("user=\"ann\"") || text.contains("user=ann"), "{text}");
}

#[test]
fn secrets_are_absent_from_json_fmt_output_of_bridged_spans_and_events() {
    for bridge in [TracingForwarder::new(), TracingForwarder::new().events_at_finish()] {
        let buffer = Buffer::default();
        let writer = buffer.clone();
        let layer = tracing_subscriber::fmt::layer()
            .json()
            .with_current_span(true)
            .with_span_list(true)
            .with_span_events(FmtSpan::NEW | FmtSpan::CLOSE)
            .with_writer(move || writer.clone());
        through_fmt(bridge, tracing_subscriber::registry().with(layer));
        let text = buffer.text();
        assert!(text.lines().count() >= 4, "{text}");
        for line in text.lines() {
            serde_json::from_str::<serde_json::Value>(line).expect("one JSON object per line");
        }
        secrets::assert_redacted("tracing JSON fmt output", text.as_bytes());
    }
}

#[test]
fn secrets_are_absent_from_fmt_output_of_bridged_events_at_finish() {
    let buffer = Buffer::default();
    through_fmt(TracingForwarder::new().events_at_finish(), fmt_subscriber(&buffer));
    let text = buffer.text();
    assert_eq!(text.lines().count(), 4, "one event per notify event: {text}");
    secrets::assert_redacted("tracing fmt output (events at finish)", text.as_bytes());
    let hash = secrets::hashed_secret();
    assert!(
        text.contains(&format!("session_token=\"{hash}\"")) || text.contains(&format!("session_token={hash}")),
        "{text}"
    );
}

// ---------------------------------------------------------------------------------------------
// tracing -> notify, log -> notify
// ---------------------------------------------------------------------------------------------

/// Everything a notifier's subscribers of the timed, event-object and evented kinds saw, as
/// `Debug` and JSON text.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<String>>>);

impl Seen {
    fn push(&self, what: &str, name: &str, payload: &Payload) {
        let json = serde_json::to_string(payload).unwrap();
        self.0
            .lock()
            .unwrap()
            .push(format!("{what} {name}: {payload:?} {json}"));
    }
}

struct Evented(Seen);

impl EventedSubscriber for Evented {
    fn start(&self, name: &str, _: &EventContext, payload: &Payload) {
        self.0.push("start", name, payload);
    }
    fn finish(&self, name: &str, _: &EventContext, payload: &Payload) {
        self.0.push("finish", name, payload);
    }
}

fn redacting_notifier() -> (Notifier, Seen) {
    let notifier = Notifier::new();
    notifier.set_redaction(secrets::policy());
    let seen = Seen::default();
    let s = seen.clone();
    let _ = notifier.subscribe(
        Pattern::all(),
        Subscriber::timed(
            move |name: &str, _: SystemTime, _: SystemTime, _: TransactionId, p: &Payload| s.push("timed", name, p),
        ),
    );
    let s = seen.clone();
    let _ = notifier.subscribe(
        Pattern::all(),
        Subscriber::event(move |e: &Event| {
            let json = serde_json::to_string(e).unwrap();
            s.0.lock().unwrap().push(format!("event {}: {e:?} {json}", e.name()));
        }),
    );
    let _ = notifier.subscribe(Pattern::all(), Subscriber::evented(Evented(seen.clone())));
    (notifier, seen)
}

#[tracing::instrument(err)]
fn check_password(password: &str) -> Result<(), String> {
    Err(format!("rejected Bearer {password}"))
}

#[test]
fn spans_records_and_error_events_republished_by_the_layer_are_redacted() {
    let (notifier, seen) = redacting_notifier();
    let subscriber = tracing_subscriber::registry().with(NotifyLayer::with_notifier(notifier));
    tracing::subscriber::with_default(subscriber, || {
        let span = tracing::info_span!(
            "login",
            user = "ann",
            password = SECRET,
            session_token = tracing::field::Empty
        );
        let _entered = span.enter();
        span.record("session_token", SECRET);
        tracing::info!(api_token = SECRET, "token checked");
        tracing::error!(error = %format!("refused: Bearer {SECRET}"), "login failed");
        assert!(check_password(SECRET).is_err());
    });
    let lines = seen.0.lock().unwrap().clone();
    // login and check_password spans: start, finish, timed, event; the info and two error
    // events: finish, timed, event (no start, they are instants published with `instrument`...
    // which evented subscribers see started too).
    for name in [
        "login.redaction",
        "check_password.redaction",
        "info.redaction",
        "error.redaction",
    ] {
        assert!(
            lines.iter().any(|l| l.starts_with(&format!("event {name}:"))),
            "{name}: {lines:#?}"
        );
    }
    for line in &lines {
        secrets::assert_clean("a subscriber of a notifier fed by NotifyLayer", line.as_bytes());
    }
    let hash = secrets::hashed_secret();
    let login = lines.iter().find(|l| l.starts_with("event login.redaction:")).unwrap();
    assert!(login.contains(&format!("\"password\":\"{hash}\"")), "{login}");
    assert!(login.contains(&format!("\"session_token\":\"{hash}\"")), "{login}");
    assert!(login.contains("\"user\":\"ann\""), "{login}");
}

#[test]
fn log_records_republished_by_the_logger_are_redacted() {
    let (notifier, seen) = redacting_notifier();
    let logger = NotifyLogger::with_notifier(notifier);
    logger.log(
        &log::Record::builder()
            .level(log::Level::Warn)
            .target("auth")
            .args(format_args!("login with Bearer {SECRET}"))
            .build(),
    );
    let lines = seen.0.lock().unwrap().clone();
    assert_eq!(
        lines.iter().filter(|l| l.starts_with("event warn.auth:")).count(),
        1,
        "{lines:#?}"
    );
    for line in &lines {
        secrets::assert_clean("a subscriber of a notifier fed by NotifyLogger", line.as_bytes());
        assert!(line.contains("\"message\":\"hmac:"), "{line}");
    }
}
