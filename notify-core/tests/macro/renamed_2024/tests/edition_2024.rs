//! Issue 11, fault 3: an instrumented body keeps its crate's edition (2024 here), in every shape:
//! sync and async, with no option, `err` and `ret`. Each function compiles without the attribute;
//! the async ones failed with it (E0597: the tail expression's temporary outlived `m`).

use std::future::Future;
use std::pin::pin;
use std::sync::Mutex;
use std::task::{Context, Poll, Waker};

use nc::testing::capture_notifications;
use nc::{Notifier, Value};

fn ready<F: Future>(future: F) -> F::Output {
    match pin!(future).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("the future is pending"),
    }
}

// Edition 2024 drops a block's tail-expression temporaries (the lock guard) before its locals (`m`).

#[nc::instrument_event("tail.sync.e2024")]
fn tail_sync() -> usize {
    let m = Mutex::new(vec![1u8, 2]);
    m.lock().unwrap().len()
}

#[nc::instrument_event("tail.sync.e2024", ret)]
fn tail_sync_ret() -> usize {
    let m = Mutex::new(vec![1u8, 2]);
    m.lock().unwrap().len()
}

#[nc::instrument_event("tail.sync.e2024", err)]
fn tail_sync_err() -> Result<usize, std::fmt::Error> {
    let m = Mutex::new(vec![1u8, 2]);
    Ok(m.lock().unwrap().len())
}

#[nc::instrument_event("tail.async.e2024")]
async fn tail_async() -> usize {
    let m = Mutex::new(vec![1u8, 2]);
    m.lock().unwrap().len()
}

#[nc::instrument_event("tail.async.e2024", ret)]
async fn tail_async_ret() -> usize {
    let m = Mutex::new(vec![1u8, 2]);
    m.lock().unwrap().len()
}

#[nc::instrument_event("tail.async.e2024", err)]
async fn tail_async_err() -> Result<usize, std::fmt::Error> {
    let m = Mutex::new(vec![1u8, 2]);
    Ok(m.lock().unwrap().len())
}

#[nc::instrument_event("tail.async.e2024", err, ret)]
async fn tail_async_awaiting() -> Result<usize, std::fmt::Error> {
    let m = Mutex::new(vec![1u8, 2]);
    std::future::ready(()).await;
    Ok(m.lock().unwrap().len())
}

#[test]
fn edition_2024_tail_temporaries_drop_before_locals_sync() {
    let (values, events) = capture_notifications(Notifier::global(), "tail.sync.e2024", || {
        (tail_sync(), tail_sync_ret(), tail_sync_err())
    });
    assert_eq!(values, (2, 2, Ok(2)));
    assert_eq!(events.len(), 3);
    assert_eq!(events[1].payload().get("return").and_then(Value::as_str), Some("2"));
}

#[test]
fn edition_2024_tail_temporaries_drop_before_locals_async() {
    let (values, events) = capture_notifications(Notifier::global(), "tail.async.e2024", || {
        (
            ready(tail_async()),
            ready(tail_async_ret()),
            ready(tail_async_err()),
            ready(tail_async_awaiting()),
        )
    });
    assert_eq!(values, (2, 2, Ok(2), Ok(2)));
    assert_eq!(events.len(), 4);
    assert_eq!(events[1].payload().get("return").and_then(Value::as_str), Some("2"));
    assert_eq!(events[3].payload().get("return").and_then(Value::as_str), Some("2"));
}

// Edition 2024 drops an `if let` scrutinee's temporaries before the `else` block: the lock is free
// there (in 2021 the guard would still be held and `try_lock` would fail).

#[nc::instrument_event("if_let.e2024")]
fn if_let_sync(m: &Mutex<Option<u8>>) -> bool {
    if let Some(held) = *m.lock().unwrap() {
        held == u8::MAX
    } else {
        m.try_lock().is_ok()
    }
}

#[nc::instrument_event("if_let.e2024", ret)]
fn if_let_sync_ret(m: &Mutex<Option<u8>>) -> bool {
    if let Some(held) = *m.lock().unwrap() {
        held == u8::MAX
    } else {
        m.try_lock().is_ok()
    }
}

#[nc::instrument_event("if_let.e2024", ret)]
async fn if_let_async(m: &Mutex<Option<u8>>) -> bool {
    if let Some(held) = *m.lock().unwrap() {
        held == u8::MAX
    } else {
        m.try_lock().is_ok()
    }
}

#[test]
fn edition_2024_if_let_rescoping_is_kept() {
    let m = Mutex::new(None);
    let (values, events) = capture_notifications(Notifier::global(), "if_let.e2024", || {
        (if_let_sync(&m), if_let_sync_ret(&m), ready(if_let_async(&m)))
    });
    assert_eq!(values, (true, true, true));
    assert_eq!(events.len(), 3);
}
