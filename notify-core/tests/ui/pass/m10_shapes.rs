//! Every function shape the attribute accepts compiles (shared/cases M10, M2, M3, M6).
#![deny(warnings)]

use std::fmt::Display;

use notify_core::instrument_event;

#[instrument_event]
fn free() {}

#[instrument_event("shape.generic", fields(?value))]
fn generic<T: std::fmt::Debug, U>(value: T, _other: U) -> T
where
    U: Clone,
{
    value
}

#[instrument_event(ret)]
fn lifetimes<'a, 'b>(a: &'a str, _b: &'b str) -> &'a str {
    a
}

/// # Safety
/// None needed; it is only `unsafe` to show the shape.
#[instrument_event(err)]
unsafe fn unsafe_fn(x: u8) -> Result<u8, std::fmt::Error> {
    Ok(x)
}

#[instrument_event]
pub(crate) fn crate_visible() -> u8 {
    1
}

#[instrument_event]
fn iter() -> impl Iterator<Item = u8> {
    0..3
}

#[instrument_event(err)]
fn result_impl() -> Result<impl Display, std::fmt::Error> {
    Ok(1)
}

#[instrument_event(fields(n = %n), ret)]
fn impl_arg(n: impl Display + std::fmt::Debug) -> impl Display {
    n
}

trait Area {
    fn area(&self) -> u32;

    #[instrument_event("shape.default_method", fields(area = self.area()))]
    fn doubled(&self) -> u32 {
        self.area() * 2
    }
}

struct Square(u32);

impl Area for Square {
    #[instrument_event]
    fn area(&self) -> u32 {
        self.0 * self.0
    }
}

struct Holder<T>(T);

impl<T: Area> Holder<T> {
    #[instrument_event(fields(area = self.0.area()))]
    fn by_ref(&self) -> u32 {
        self.0.area()
    }

    #[instrument_event(err)]
    fn by_mut(&mut self) -> Result<&mut T, std::fmt::Error> {
        Ok(&mut self.0)
    }

    #[instrument_event]
    fn by_value(self) -> T {
        self.0
    }

    #[instrument_event]
    fn by_mut_value(mut self, other: T) -> T {
        self.0 = other;
        self.0
    }

    #[instrument_event]
    fn get_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

#[instrument_event]
async fn async_free(x: u8) -> u8 {
    x
}

#[instrument_event(err)]
async fn async_result_impl() -> Result<impl Display, std::fmt::Error> {
    Ok(1)
}

#[instrument_event]
async fn async_closure() -> impl Fn() -> u8 {
    || 1
}

#[instrument_event]
async fn async_generic<'a, T: Sync>(value: &'a T) -> &'a T {
    value
}

#[instrument_event]
async fn async_mut_ref(mut s: &str) -> usize {
    let local = String::from("local");
    let before = s.len();
    s = &local;
    before + s.len()
}

#[instrument_event]
async fn async_reborrow(buf: &mut Vec<u8>) -> &mut u8 {
    &mut buf[0]
}

#[instrument_event]
async fn async_patterns((a, b): (u8, u8), [c, mut d]: [u8; 2]) -> u8 {
    d += 1;
    a + b + c + d
}

/// # Safety
/// None needed.
#[instrument_event]
async unsafe fn async_unsafe() {}

trait Repo {
    async fn find(&self, id: u64) -> Option<u64>;
}

impl Repo for Square {
    #[instrument_event(fields(id, side = self.0))]
    async fn find(&self, id: u64) -> Option<u64> {
        Some(id + u64::from(self.0))
    }
}

impl Square {
    #[instrument_event(fields(side = self.0))]
    async fn grow(&mut self) -> &mut u32 {
        self.0 += 1;
        &mut self.0
    }

    #[instrument_event]
    async fn into_side(self) -> u32 {
        self.0
    }
}

#[instrument_event]
fn r#raw_name() {}

#[instrument_event]
fn inner_attributes() -> u8 {
    #![allow(clippy::let_and_return)]
    let x = 1;
    x
}

fn main() {
    free();
    let _ = generic(1, ());
    let _ = lifetimes("a", "b");
    // SAFETY: no requirement.
    let _ = unsafe { unsafe_fn(1) };
    let _ = crate_visible();
    let _ = iter().count();
    let _ = result_impl().map(|d| d.to_string());
    let _ = impl_arg(3).to_string();
    let _ = Square(2).doubled();
    let mut holder = Holder(Square(1));
    let _ = holder.by_ref();
    let _ = holder.by_mut();
    let _ = holder.get_mut();
    let _ = holder.by_mut_value(Square(3)).area();
    let _ = Holder(Square(2)).by_value();
    let _ = async_free(1);
    let _ = async_result_impl();
    let _ = async_closure();
    let _ = async_generic(&1);
    let _ = async_mut_ref("x");
    let mut buf = vec![1];
    let _ = async_reborrow(&mut buf);
    let _ = async_patterns((1, 2), [3, 4]);
    // SAFETY: no requirement.
    let _ = unsafe { async_unsafe() };
    let mut square = Square(1);
    let _ = square.find(1);
    let _ = square.grow();
    let _ = Square(1).into_side();
    raw_name();
    let _ = inner_attributes();
}
