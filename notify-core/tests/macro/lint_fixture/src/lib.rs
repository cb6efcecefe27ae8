//! Fixture for issue 11, fault 4: functions that trip lints (rustc's and clippy's, pedantic
//! included), each written once and instrumented only with the feature `instrumented`
//! (`cfg_attr`), so the attribute adds no line. `tests/macro_clippy.rs` runs clippy on both builds
//! and compares the warnings: the user's lints fire the same with and without the attribute, for
//! sync and async functions, with no option, `err` and `ret`.
#![warn(clippy::pedantic)]
#![allow(clippy::missing_errors_doc, clippy::unused_self, dead_code)]

use std::fmt;
use std::sync::Mutex;

/// An error.
#[derive(Debug)]
pub struct Error;

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("error")
    }
}

// clippy::needless_return

#[cfg_attr(feature = "instrumented", notify_core::instrument_event)]
pub fn needless_return() -> u32 {
    return 2;
}

#[cfg_attr(feature = "instrumented", notify_core::instrument_event(ret))]
pub fn needless_return_ret() -> u32 {
    return 2;
}

#[cfg_attr(feature = "instrumented", notify_core::instrument_event(err))]
pub fn needless_return_err() -> Result<u32, Error> {
    return Ok(2);
}

#[cfg_attr(feature = "instrumented", notify_core::instrument_event)]
pub async fn needless_return_async() -> u32 {
    return 2;
}

#[cfg_attr(feature = "instrumented", notify_core::instrument_event(ret))]
pub async fn needless_return_async_ret() -> u32 {
    return 2;
}

#[cfg_attr(feature = "instrumented", notify_core::instrument_event(err))]
pub async fn needless_return_async_err() -> Result<u32, Error> {
    return Ok(2);
}

#[cfg_attr(feature = "instrumented", notify_core::instrument_event(ret))]
pub async fn needless_return_async_awaiting() -> u32 {
    std::future::ready(()).await;
    return 2;
}

// clippy::unused_async (and no false one where the body awaits)

#[cfg_attr(feature = "instrumented", notify_core::instrument_event)]
pub async fn unused_async() {}

#[cfg_attr(feature = "instrumented", notify_core::instrument_event(ret))]
pub async fn unused_async_ret() -> u8 {
    1
}

#[cfg_attr(feature = "instrumented", notify_core::instrument_event(err))]
pub async fn unused_async_err() -> Result<u8, Error> {
    Ok(1)
}

#[cfg_attr(feature = "instrumented", notify_core::instrument_event(err, ret))]
pub async fn unused_async_with_macros(x: u8) -> Result<u8, Error> {
    assert!(x < 200, "too big: {x}");
    println!("{}", format_args!("{x}"));
    Ok(x)
}

#[cfg_attr(feature = "instrumented", notify_core::instrument_event)]
pub async fn unused_async_await_in_block() {
    let future = async {
        std::future::ready(()).await;
    };
    drop(future);
}

#[cfg_attr(feature = "instrumented", notify_core::instrument_event(ret))]
pub async fn awaiting(x: u8) -> u8 {
    std::future::ready(x).await
}

// clippy::let_and_return, clippy::semicolon_if_nothing_returned, rustc's unused_mut and
// unreachable_code, in sync and async bodies

fn unit_call() {}

#[cfg_attr(feature = "instrumented", notify_core::instrument_event(ret))]
pub fn let_and_return(x: u32) -> u32 {
    let y = x + 1;
    y
}

#[cfg_attr(feature = "instrumented", notify_core::instrument_event)]
pub fn semicolon() {
    unit_call()
}

#[cfg_attr(feature = "instrumented", notify_core::instrument_event(ret))]
pub async fn let_and_return_async(x: u32) -> u32 {
    let y = x + 1;
    std::future::ready(()).await;
    y
}

#[cfg_attr(feature = "instrumented", notify_core::instrument_event(err))]
pub fn unreachable(x: u32) -> Result<u32, Error> {
    let mut unused = x;
    return Ok(x);
    unused += 1;
    Ok(unused)
}

// clippy::missing_panics_doc, clippy::must_use_candidate, clippy::unnecessary_wraps,
// clippy::needless_pass_by_value

/// Panics on an empty slice, undocumented.
#[cfg_attr(feature = "instrumented", notify_core::instrument_event(ret))]
pub fn first(values: &[u8]) -> u8 {
    *values.first().unwrap()
}

/// Pure.
#[cfg_attr(feature = "instrumented", notify_core::instrument_event)]
pub fn pure(x: u8) -> u8 {
    x.wrapping_add(1)
}

#[cfg_attr(feature = "instrumented", notify_core::instrument_event)]
fn always_ok(x: u8) -> Result<u8, Error> {
    Ok(x)
}

// The one lint known to be lost (see `tests/macro_clippy.rs`): with `err` or `ret` the body runs
// in a closure, and `unnecessary_wraps` reads only the function's own return values.
#[cfg_attr(feature = "instrumented", notify_core::instrument_event(err))]
fn always_ok_err(x: u8) -> Result<u8, Error> {
    Ok(x)
}

/// Calls the private functions.
pub fn run() {
    let _ = always_ok(1);
    let _ = always_ok_err(1);
}

/// Takes a `String` it only reads.
#[cfg_attr(feature = "instrumented", notify_core::instrument_event(ret))]
#[must_use]
pub fn by_value(text: String) -> usize {
    text.len()
}

// clippy::await_holding_lock

#[cfg_attr(feature = "instrumented", notify_core::instrument_event(ret))]
pub async fn holding_lock(m: &Mutex<u8>) -> u8 {
    let guard = m.lock().unwrap();
    std::future::ready(()).await;
    *guard
}

// clippy::manual_async_fn

#[cfg_attr(feature = "instrumented", notify_core::instrument_event(ret))]
pub fn manual_async(x: u8) -> impl std::future::Future<Output = u8> {
    async move { x }
}

// Methods.

/// A type with methods.
pub struct Service(u8);

impl Service {
    #[cfg_attr(feature = "instrumented", notify_core::instrument_event(ret))]
    pub fn method_return(&self) -> u8 {
        return self.0;
    }

    #[cfg_attr(feature = "instrumented", notify_core::instrument_event)]
    pub async fn method_unused_async(&self) -> u8 {
        self.0
    }
}
