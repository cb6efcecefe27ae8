//! Fixture for shared/cases M5: every kind of instrumented function, checked with
//! `cargo clippy -- -D warnings -W clippy::pedantic` by `tests/macro_clippy.rs`. The code is
//! clippy-clean written by hand, so any warning comes from the expansion.

use std::fmt;

use notify_core::instrument_event;

/// An error.
#[derive(Debug)]
pub struct Error;

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("error")
    }
}

impl std::error::Error for Error {}

/// Unit-returning.
#[instrument_event]
pub fn unit() {}

/// Unit-returning with statements.
#[instrument_event(fields(n))]
pub fn unit_statements(n: u32) {
    let doubled = n * 2;
    println!("{doubled}");
}

/// `Result`-returning.
///
/// # Errors
/// When `fail`.
#[instrument_event("fixture.result", err)]
pub fn result(fail: bool) -> Result<u32, Error> {
    if fail {
        return Err(Error);
    }
    Ok(1)
}

/// `Result`-returning, with `?` and `ret`.
///
/// # Errors
/// When `fail`.
#[instrument_event(err, ret, fields(fail, text = %Error, dbg = ?Error))]
pub fn question(fail: bool) -> Result<u32, Error> {
    let one = result(fail)?;
    Ok(one + 1)
}

/// An `if`/`else` tail.
#[must_use]
#[instrument_event(fields(x))]
pub fn if_else(x: i64) -> i64 {
    if x > 0 {
        x
    } else {
        -x
    }
}

/// An `if`/`else` tail with `ret`.
#[must_use]
#[instrument_event(ret)]
pub fn if_else_ret(x: i64) -> &'static str {
    if x > 0 {
        "positive"
    } else {
        "not positive"
    }
}

/// Opaque return type.
#[instrument_event]
pub fn evens(n: u8) -> impl Iterator<Item = u8> {
    (0..n).filter(|x| x % 2 == 0)
}

/// A struct with methods.
#[derive(Debug, Default)]
pub struct Counter {
    hits: u64,
}

impl Counter {
    /// By reference.
    #[must_use]
    #[instrument_event(fields(hits = self.hits))]
    pub fn hits(&self) -> u64 {
        self.hits
    }

    /// By mutable reference.
    #[instrument_event(ret)]
    pub fn hit(&mut self) -> u64 {
        self.hits += 1;
        self.hits
    }

    /// Async, by mutable reference, no await (the user allows `unused_async`, as without the
    /// attribute).
    #[instrument_event(fields(hits = self.hits))]
    #[allow(clippy::unused_async)]
    pub async fn hit_later(&mut self) -> u64 {
        self.hits += 1;
        self.hits
    }
}

/// Async, unit, no await.
#[instrument_event]
#[allow(clippy::unused_async)]
pub async fn async_unit() {}

/// Async, `Result`.
///
/// # Errors
/// When `fail`.
#[instrument_event(err, ret)]
#[allow(clippy::unused_async)]
pub async fn async_result(fail: bool) -> Result<u32, Error> {
    let one = result(fail)?;
    Ok(one)
}

/// Async, `if`/`else` tail, a `mut` argument.
#[instrument_event(fields(x))]
pub async fn async_if_else(mut x: i64) -> i64 {
    std::future::ready(()).await;
    x += 1;
    if x > 0 {
        x
    } else {
        -x
    }
}

/// Async, a reborrow of a `&mut` argument.
#[instrument_event]
pub async fn async_first(buf: &mut [u8]) -> Option<&mut u8> {
    std::future::ready(()).await;
    buf.first_mut()
}
