//! Issue 11, fault 1: with `nc = { package = "notify-core" }` the attribute finds notify-core as
//! `::nc` by itself (it read `::notify_core` and failed with E0433).

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use nc::testing::capture_notifications;
use nc::{Notifier, Value};

#[nc::instrument_event("renamed.ds")]
fn f() -> u32 {
    1
}

#[nc::instrument_event(fields(n), ret)]
async fn count(n: u8) -> u8 {
    n + 1
}

mod shelf {
    use nc::instrument_event;

    #[instrument_event]
    pub fn stack() {}
}

#[test]
fn renamed_dependency_needs_no_option() {
    let (value, events) = capture_notifications(Notifier::global(), "renamed.ds", f);
    assert_eq!(value, 1);
    assert_eq!(events.len(), 1);
}

#[test]
fn renamed_dependency_in_the_library_records_fields_and_errors() {
    let (value, events) = capture_notifications(Notifier::global(), "renamed.lib", || {
        notify_macro_renamed_2024::halve(3)
    });
    assert_eq!(value, Err(std::fmt::Error));
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].payload().get("x"), Some(&Value::U64(3)));
    assert!(events[0].payload().get("exception").is_some(), "{:?}", events[0]);
}

#[test]
fn renamed_dependency_default_names_and_async() {
    let ((), events) = capture_notifications(Notifier::global(), "stack.shelf", shelf::stack);
    assert_eq!(events.len(), 1);
    let (poll, events) = capture_notifications(Notifier::global(), "count.renamed_dependency", || {
        pin!(count(4)).poll(&mut Context::from_waker(Waker::noop()))
    });
    assert_eq!(poll, Poll::Ready(5));
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].payload().get("return").and_then(Value::as_str), Some("5"));
}
