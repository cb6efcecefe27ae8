//! Helpers for your own tests: capture the events a closure causes, and assert on them (AS::N's
//! `capture_notifications`, `assert_notification`, `assert_notifications_count`,
//! `assert_no_notifications`).
//!
//! Each helper subscribes for the duration of the closure only, on the notifier you pass
//! ([`Notifier::global`] for code instrumented with the free functions or the macro). Events
//! published by other threads meanwhile are captured too; use distinct names, or your own
//! [`Notifier`], to keep parallel tests apart.

use std::sync::{Arc, Mutex};

use crate::escape::Escaped;
use crate::event::Event;
use crate::notifier::Notifier;
use crate::pattern::Pattern;
use crate::payload::{Payload, Value};
use crate::subscriber::Subscriber;

/// Runs `f` and returns its value with every event matching `pattern` that finished meanwhile,
/// in finish order.
///
/// ```
/// use notify_core::{testing, Notifier, Payload};
/// let notifier = Notifier::new();
/// let (value, events) = testing::capture_notifications(&notifier, "run.job", || {
///     notifier.instrument("run.job", || Payload::new().with("id", 7_u64), |_| "done")
/// });
/// assert_eq!(value, "done");
/// assert_eq!(events.len(), 1);
/// assert_eq!(events[0].payload().get("id").unwrap().as_i64(), Some(7));
/// ```
pub fn capture_notifications<T>(
    notifier: &Notifier,
    pattern: impl Into<Pattern>,
    f: impl FnOnce() -> T,
) -> (T, Vec<Event>) {
    let captured = Arc::new(Mutex::new(Vec::new()));
    let sink = captured.clone();
    let subscriber = Subscriber::event(move |event: &Event| {
        sink.lock().unwrap_or_else(|e| e.into_inner()).push(event.clone());
    })
    .named("notify_core::testing");
    let value = notifier.subscribed(pattern, subscriber, f);
    let events = std::mem::take(&mut *captured.lock().unwrap_or_else(|e| e.into_inner()));
    (value, events)
}

/// Asserts that `f` caused exactly one event matching `pattern` whose payload contains every entry
/// of `expected` (other entries are allowed), and returns that event.
///
/// # Panics
/// When there is no such event or more than one, listing what was captured.
///
/// ```
/// use notify_core::{testing, Notifier, Payload};
/// let notifier = Notifier::new();
/// let event = testing::assert_notification(&notifier, "read.cache", &Payload::new().with("hit", true), || {
///     notifier.instrument("read.cache", || Payload::new().with("hit", true).with("key", "k"), |_| ());
/// });
/// assert_eq!(event.name(), "read.cache");
/// ```
pub fn assert_notification(
    notifier: &Notifier,
    pattern: impl Into<Pattern>,
    expected: &Payload,
    f: impl FnOnce(),
) -> Event {
    let pattern = pattern.into();
    // Quoted escaped and truncated: a hostile or huge pattern cannot garble the test output.
    let text = Escaped::truncated(pattern.as_str(), 80).to_string();
    let ((), events) = capture_notifications(notifier, pattern, f);
    let mut matching: Vec<Event> = events
        .iter()
        .filter(|e| contains(e.payload(), expected))
        .cloned()
        .collect();
    assert!(
        matching.len() == 1,
        "expected exactly one `{text}` event with payload {expected:?}, found {}; captured: {events:?}",
        matching.len()
    );
    matching.remove(0)
}

fn contains(payload: &Payload, expected: &Payload) -> bool {
    expected.iter().all(|(k, v): (&str, &Value)| payload.get(k) == Some(v))
}

/// Asserts that `f` caused exactly `count` events matching `pattern`.
///
/// # Panics
/// When the count differs, listing what was captured.
///
/// ```
/// use notify_core::{testing, Notifier, Payload};
/// let notifier = Notifier::new();
/// testing::assert_notifications_count(&notifier, "tick", 3, || {
///     for _ in 0..3 { notifier.instrument("tick", Payload::new, |_| ()); }
/// });
/// ```
pub fn assert_notifications_count(notifier: &Notifier, pattern: impl Into<Pattern>, count: usize, f: impl FnOnce()) {
    let pattern = pattern.into();
    // Quoted escaped and truncated: a hostile or huge pattern cannot garble the test output.
    let text = Escaped::truncated(pattern.as_str(), 80).to_string();
    let ((), events) = capture_notifications(notifier, pattern, f);
    assert!(
        events.len() == count,
        "expected {count} `{text}` event(s), found {}: {events:?}",
        events.len()
    );
}

/// Asserts that `f` caused no event matching `pattern`.
///
/// # Panics
/// When any was captured, listing them.
///
/// ```
/// use notify_core::{testing, Notifier, Pattern};
/// let notifier = Notifier::new();
/// testing::assert_no_notifications(&notifier, Pattern::all(), || {});
/// ```
pub fn assert_no_notifications(notifier: &Notifier, pattern: impl Into<Pattern>, f: impl FnOnce()) {
    assert_notifications_count(notifier, pattern, 0, f);
}
