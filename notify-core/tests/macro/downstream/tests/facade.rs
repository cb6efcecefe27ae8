//! `#[instrument_event]` through a facade crate (issue 11, fault 1): a crate without a
//! notify-core dependency instruments functions with `crate = path` and the events are published.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use notify_macro_downstream::{checkout, orders, ship};
use notify_macro_facade::notify_core::testing::capture_notifications;
use notify_macro_facade::notify_core::{Notifier, Value};

#[test]
fn facade_crate_path_option_publishes_fields_and_errors() {
    let (result, events) = capture_notifications(Notifier::global(), "checkout.downstream", || checkout(3));
    assert_eq!(result, Ok(6));
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].payload().get("cart"), Some(&Value::U64(3)));

    let (result, events) = capture_notifications(Notifier::global(), "checkout.downstream", || checkout(0));
    assert_eq!(result, Err(std::fmt::Error));
    assert_eq!(events.len(), 1);
    assert!(
        matches!(events[0].payload().get("exception"), Some(Value::Exception { .. })),
        "{:?}",
        events[0]
    );
}

#[test]
fn facade_crate_path_as_a_string_and_default_name() {
    let (value, events) = capture_notifications(Notifier::global(), "place.orders", orders::place);
    assert_eq!(value, 7);
    assert_eq!(events.len(), 1);
}

#[test]
fn facade_crate_path_on_an_async_fn() {
    let (poll, events) = capture_notifications(Notifier::global(), "ship.downstream", || {
        pin!(ship("box")).poll(&mut Context::from_waker(Waker::noop()))
    });
    assert_eq!(poll, Poll::Ready(3));
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].payload().get("parcel").and_then(Value::as_str), Some("box"));
    assert_eq!(events[0].payload().get("return").and_then(Value::as_str), Some("3"));
}

#[test]
fn facade_instruments_its_own_functions_without_options() {
    let (value, events) = capture_notifications(Notifier::global(), "facade_own.fixture", || {
        notify_macro_facade::facade_own(1)
    });
    assert_eq!(value, 2);
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].payload().get("return").and_then(Value::as_str), Some("2"));
}
