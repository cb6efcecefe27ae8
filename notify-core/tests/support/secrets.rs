//! The end-to-end redaction fixture (issue 17, item 4), shared by the tests of the crates that
//! write events out — notify-log, notify-tracing, notify-opentelemetry, notify-nats — through
//! `#[path = "../../notify-core/tests/support/secrets.rs"] mod secrets;`.
//!
//! [`plant`] publishes one event per way a secret gets into a payload, on the global notifier
//! (the one `#[instrument_event]` publishes to), whose policy [`global`] sets once per test
//! binary: a keyed hash, so an output shows [`hashed_secret`] where the secret was.
//! [`assert_clean`] scans an output's bytes for the secret.

#![allow(dead_code)]

use std::sync::{Mutex, MutexGuard, Once};

use notify_core::{instrument_event, record, redaction::Redaction, Notifier, Payload, Value};

/// The secret every event carries. Plain ASCII, so any encoding that keeps text readable
/// (log lines, fmt, JSON, postcard strings, OTLP attributes) would show these very bytes.
pub const SECRET: &str = "hunter2-s3cr3t-e2e";

/// The events [`plant`] publishes, in order: a payload given to `instrument`, a field of
/// `#[instrument_event]`, an error recorded by its `err`, and values `record`ed during the body.
pub const EVENTS: [&str; 4] = ["payload.secrets", "field.secrets", "err.secrets", "record.secrets"];

const HASH_KEY: &[u8; 32] = b"notify end-to-end redaction key!";

/// Keys `password` and `*_token`, values with a bearer token; replaced by a keyed hash.
pub fn policy() -> Redaction {
    Redaction::builder()
        .key("password")
        .key_glob("*_token")
        .value_regex(r"Bearer \S+")
        .keyed_hash(HASH_KEY)
        .build()
        .expect("a valid policy")
}

/// What the policy puts in place of [`SECRET`] under a matched key (`"hmac:"` and 16 hex
/// digits). Checked to differ from the secret.
pub fn hashed_secret() -> String {
    let mut payload = Payload::new().with("password", SECRET);
    assert_eq!(policy().redact(&mut payload), 1);
    let hash = payload
        .get("password")
        .and_then(Value::as_str)
        .expect("a text hash")
        .to_owned();
    assert!(hash.starts_with("hmac:") && hash.len() == 21, "{hash}");
    assert_ne!(hash, SECRET);
    assert!(!hash.contains(SECRET));
    hash
}

/// The global notifier, with [`policy`] set (once per test binary).
pub fn global() -> &'static Notifier {
    static SET: Once = Once::new();
    SET.call_once(|| Notifier::global().set_redaction(policy()));
    Notifier::global()
}

/// Serialises the tests of one binary that subscribe to the global notifier, so that each sees
/// only the events it planted.
pub fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[instrument_event("field.secrets", fields(user, api_token = token.to_owned()))]
fn log_in(user: &str, token: &str) {}

#[instrument_event("err.secrets", err)]
fn refuse(token: &str) -> Result<(), String> {
    Err(format!("refused: Bearer {token}"))
}

#[instrument_event("record.secrets")]
fn run_session(token: &str) {
    record("session_token", token.to_owned());
    record("header", format!("Bearer {token}"));
}

/// Publishes the four [`EVENTS`], each carrying [`SECRET`] (the first also inside a map and a
/// list), on [`global`], and returns when all have finished. The `user` entries (`"ann"`) are not secret and stay.
pub fn plant() {
    global().instrument(
        "payload.secrets",
        || {
            Payload::new()
                .with("user", "ann")
                .with("password", SECRET)
                .with("authorization", format!("Bearer {SECRET}"))
                // Nested: a map with a matched key, a list with a matched value.
                .with("headers", Payload::new().with("x_token", SECRET).with("accept", "*/*"))
                .with("tried", vec![format!("Bearer {SECRET}"), "anonymous".to_owned()])
        },
        |_| (),
    );
    log_in("ann", SECRET);
    assert!(refuse(SECRET).is_err());
    run_session(SECRET);
}

/// Asserts that `output` (named `what` in the message) holds no copy of [`SECRET`]'s bytes.
pub fn assert_clean(what: &str, output: &[u8]) {
    let secret = SECRET.as_bytes();
    if let Some(at) = output.windows(secret.len()).position(|w| w == secret) {
        let from = at.saturating_sub(120);
        let to = (at + secret.len() + 120).min(output.len());
        panic!(
            "the secret leaked into {what} at byte {at}: …{}…",
            String::from_utf8_lossy(&output[from..to])
        );
    }
}

/// [`assert_clean`], and the output shows the keyed hash where the secret was (so it is the
/// redacted event that got there, not nothing).
pub fn assert_redacted(what: &str, output: &[u8]) {
    assert_clean(what, output);
    let hash = hashed_secret();
    assert!(
        output.windows(hash.len()).any(|w| w == hash.as_bytes()),
        "{what} does not show the keyed hash {hash}: {}",
        String::from_utf8_lossy(output)
    );
}
