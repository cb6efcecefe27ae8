//! `#[instrument_event]` at run time: names, payloads, every exit path, methods, function shapes.
//! Tests run in parallel on the global notifier, so every test uses event names of its own.

use std::cell::Cell;
use std::fmt::Display;
use std::panic;

use notify_core::testing::capture_notifications;
use notify_core::{
    event::{EventId, Outcome},
    instrument_event, Event, Notifier, Pattern, Value,
};

fn capture<T>(pattern: &str, f: impl FnOnce() -> T) -> (T, Vec<Event>) {
    capture_notifications(Notifier::global(), pattern, f)
}

fn str_of<'e>(event: &'e Event, key: &str) -> &'e str {
    event
        .payload()
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("no text under {key:?} in {event:?}"))
}

fn exception(event: &Event) -> (&str, &str) {
    match event.payload().get("exception") {
        Some(Value::Exception { type_name, message }) => (type_name, message),
        other => panic!("no exception in {event:?}: {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Names
// ---------------------------------------------------------------------------------------------

mod billing {
    #[notify_core::instrument_event]
    pub fn charge_default_name() -> u8 {
        1
    }

    pub mod invoices {
        #[notify_core::instrument_event]
        pub fn render_default_name() {}
    }
}

#[test]
fn default_name_is_function_dot_last_module_segment() {
    let (value, events) = capture("charge_default_name.billing", billing::charge_default_name);
    assert_eq!(value, 1);
    assert_eq!(events.len(), 1);
    let ((), events) = capture("render_default_name.invoices", billing::invoices::render_default_name);
    assert_eq!(events.len(), 1);
}

#[instrument_event]
fn at_crate_root_default_name() {}

#[test]
fn default_name_at_the_crate_root_uses_the_crate_name() {
    let ((), events) = capture("at_crate_root_default_name.macro_events", at_crate_root_default_name);
    assert_eq!(events.len(), 1);
}

#[instrument_event("bare.name_override")]
fn bare_name() {}

#[instrument_event(name = "keyed.name_override")]
fn keyed_name() {}

#[test]
fn a_name_overrides_the_default() {
    let ((), events) = capture("bare.name_override", bare_name);
    assert_eq!(events.len(), 1);
    let ((), events) = capture("keyed.name_override", keyed_name);
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].name(), "keyed.name_override");
}

// ---------------------------------------------------------------------------------------------
// Payload
// ---------------------------------------------------------------------------------------------

thread_local! {
    static EVALUATED: Cell<u32> = const { Cell::new(0) };
}

fn counted(x: u64) -> u64 {
    EVALUATED.with(|c| c.set(c.get() + 1));
    x
}

#[instrument_event("fields.lazy", fields(rows = counted(rows)))]
fn lazy_fields(rows: u64) -> u64 {
    rows
}

#[test]
fn m8_an_unlistened_call_evaluates_no_field() {
    EVALUATED.with(|c| c.set(0));
    assert_eq!(lazy_fields(4), 4);
    assert_eq!(EVALUATED.with(Cell::get), 0, "no listener: no payload expression ran");
    let (_, events) = capture("fields.lazy", || lazy_fields(5));
    assert_eq!(EVALUATED.with(Cell::get), 1);
    assert_eq!(events[0].payload().get("rows"), Some(&Value::U64(5)));
}

fn exploding(x: u64) -> u64 {
    assert!(x != 0, "payload panic");
    x
}

#[instrument_event("fields.exploding", fields(x = exploding(x)))]
fn exploding_field(x: u64) -> u64 {
    x
}

#[test]
fn a_panicking_field_expression_delivers_no_event_and_leaves_no_current_event() {
    let (caught, events) = capture("fields.exploding", || panic::catch_unwind(|| exploding_field(0)));
    assert!(caught.is_err());
    assert!(events.is_empty(), "{events:?}");
    assert_eq!(notify_core::context::current_event_id(), None);
    let (value, events) = capture("fields.exploding", || exploding_field(2));
    assert_eq!(value, 2);
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].parent_id(), None);
}

#[derive(Debug)]
struct Table(&'static str);

#[instrument_event(
    "fields.formats",
    fields(sql, %addr, ?table, table_name = table.0, len = sql.len(), "db.kind" = "pg", upper = %sql.to_uppercase(), opt = ?Some(1))
)]
fn formats(sql: &str, addr: std::net::Ipv4Addr, table: &Table, unlisted: u8) -> u8 {
    unlisted
}

#[test]
fn fields_record_values_display_and_debug() {
    let (value, events) = capture("fields.formats", || {
        formats("select 1", std::net::Ipv4Addr::LOCALHOST, &Table("users"), 9)
    });
    assert_eq!(value, 9);
    let payload = events[0].payload();
    assert_eq!(
        payload.keys().collect::<Vec<_>>(),
        ["sql", "addr", "table", "table_name", "len", "db.kind", "upper", "opt"],
        "only the listed fields, in order"
    );
    assert_eq!(str_of(&events[0], "sql"), "select 1");
    assert_eq!(str_of(&events[0], "addr"), "127.0.0.1");
    assert_eq!(str_of(&events[0], "table"), "Table(\"users\")");
    assert_eq!(payload.get("len"), Some(&Value::U64(8)));
    assert_eq!(str_of(&events[0], "db.kind"), "pg");
    assert_eq!(str_of(&events[0], "upper"), "SELECT 1");
    assert_eq!(str_of(&events[0], "opt"), "Some(1)");
}

/// A string literal in `fields` is stored borrowed (`Value::from_static`): no copy per event. Any
/// other expression goes through `ToValue`, which copies text, even a `&'static str` it returns.
#[test]
fn fields_string_literals_are_stored_borrowed() {
    let (_, events) = capture("fields.formats", || {
        formats("select 1", std::net::Ipv4Addr::LOCALHOST, &Table("users"), 9)
    });
    let payload = events[0].payload();
    assert_eq!(payload.get("db.kind").and_then(Value::as_static_str), Some("pg"));
    assert_eq!(payload.get("table_name").and_then(Value::as_static_str), None);
    assert_eq!(str_of(&events[0], "table_name"), "users");
}

#[instrument_event("fields.not_moved", fields(name))]
fn fields_do_not_move_arguments(name: String) -> String {
    name
}

#[test]
fn fields_borrow_their_arguments() {
    let (value, events) = capture("fields.not_moved", || fields_do_not_move_arguments("ada".to_owned()));
    assert_eq!(value, "ada");
    assert_eq!(str_of(&events[0], "name"), "ada");
}

/// Issue 14 item 4's list, as arguments of every type the conversion covers.
#[allow(clippy::too_many_arguments)]
#[instrument_event(
    "fields.conversions",
    fields(
        small, wide, uwide, ratio, flag, letter, text, owned, shared, cow, some, none, slice, list, elapsed, at, map
    )
)]
fn conversions(
    small: i8,
    wide: i128,
    uwide: u128,
    ratio: f32,
    flag: bool,
    letter: char,
    text: &str,
    owned: &String,
    shared: std::sync::Arc<str>,
    cow: std::borrow::Cow<'_, str>,
    some: Option<u64>,
    none: Option<u64>,
    slice: &[u16],
    list: Vec<i32>,
    elapsed: std::time::Duration,
    at: std::time::SystemTime,
    map: notify_core::Payload,
) {
    let _ = (
        small, wide, uwide, ratio, flag, letter, text, owned, shared, cow, some, none, slice, list, elapsed, at, map,
    );
}

/// `fields(...)`, `Payload::with` and `Payload::insert` share one conversion (`ToValue`): each type
/// of issue 14's list gives the same value through all three.
#[test]
fn fields_with_and_insert_convert_alike() {
    use notify_core::Payload;
    use std::borrow::Cow;
    use std::sync::Arc;
    use std::time::{Duration, SystemTime};

    let owned = String::from("owned");
    let at = SystemTime::UNIX_EPOCH + Duration::from_nanos(1_764_547_200_123_456_789);
    let map = Payload::new().with("k", "v");
    let (_, events) = capture("fields.conversions", || {
        conversions(
            -1,
            i128::MIN,
            u128::MAX,
            1.5,
            true,
            'x',
            "text",
            &owned,
            Arc::from("shared"),
            Cow::Borrowed("cow"),
            Some(7),
            None,
            &[1, 2],
            vec![-3],
            Duration::from_micros(3),
            at,
            map.clone(),
        )
    });
    let by_with = Payload::new()
        .with("small", -1_i8)
        .with("wide", i128::MIN)
        .with("uwide", u128::MAX)
        .with("ratio", 1.5_f32)
        .with("flag", true)
        .with("letter", 'x')
        .with("text", "text")
        .with("owned", &owned)
        .with("shared", Arc::<str>::from("shared"))
        .with("cow", Cow::Borrowed("cow"))
        .with("some", Some(7_u64))
        .with("none", None::<u64>)
        .with("slice", &[1_u16, 2][..])
        .with("list", vec![-3_i32])
        .with("elapsed", Duration::from_micros(3))
        .with("at", at)
        .with("map", map.clone());
    let mut by_insert = Payload::new();
    for (key, value) in by_with.iter() {
        by_insert.insert(key.to_owned(), value);
    }
    assert_eq!(events[0].payload(), &by_with);
    assert_eq!(events[0].payload(), &by_insert);
    let expected = [
        ("small", Value::I64(-1)),
        ("wide", Value::I128(i128::MIN)),
        ("uwide", Value::U128(u128::MAX)),
        ("ratio", Value::F64(1.5)),
        ("flag", Value::Bool(true)),
        ("letter", Value::from("x")),
        ("text", Value::from("text")),
        ("owned", Value::from("owned")),
        ("shared", Value::from("shared")),
        ("cow", Value::from("cow")),
        ("some", Value::U64(7)),
        ("none", Value::Null),
        ("slice", Value::List(vec![Value::U64(1), Value::U64(2)])),
        ("list", Value::List(vec![Value::I64(-3)])),
        ("elapsed", Value::Duration(Duration::from_micros(3))),
        ("at", Value::Time(at)),
        ("map", Value::Map(Box::new(map))),
    ];
    assert_eq!(
        events[0]
            .payload()
            .iter()
            .map(|(k, v)| (k, v.clone()))
            .collect::<Vec<_>>(),
        expected
    );
}

#[instrument_event("payload.untouched")]
fn no_fields(secret: &str) -> usize {
    secret.len()
}

#[test]
fn unlisted_arguments_are_not_recorded() {
    let (n, events) = capture("payload.untouched", || no_fields("hunter2"));
    assert_eq!(n, 7);
    assert!(events[0].payload().is_empty(), "{:?}", events[0].payload());
}

// ---------------------------------------------------------------------------------------------
// err / ret
// ---------------------------------------------------------------------------------------------

#[instrument_event("result.err", err)]
fn parse_err(s: &str) -> Result<u8, std::num::ParseIntError> {
    s.parse()
}

#[instrument_event("result.ret", ret)]
fn double_ret(x: u32) -> Vec<u32> {
    vec![x, x]
}

#[instrument_event("result.err_ret", err, ret)]
fn parse_err_ret(s: &str) -> Result<u8, std::num::ParseIntError> {
    s.parse()
}

#[test]
fn err_records_the_error_type_and_message() {
    let (_, events) = capture("result.err", || parse_err("x"));
    assert_eq!(events.len(), 1);
    assert_eq!(
        exception(&events[0]),
        ("core::num::error::ParseIntError", "invalid digit found in string")
    );
    assert_eq!(events[0].outcome(), Outcome::Completed);
    let (_, events) = capture("result.err", || parse_err("7"));
    assert!(events[0].payload().get("exception").is_none());
}

#[test]
fn ret_records_the_debug_of_the_return_value() {
    let (_, events) = capture("result.ret", || double_ret(3));
    assert_eq!(str_of(&events[0], "return"), "[3, 3]");
}

#[test]
fn err_and_ret_record_the_ok_value_or_the_error() {
    let (_, events) = capture("result.err_ret", || parse_err_ret("42"));
    assert_eq!(str_of(&events[0], "return"), "42");
    assert!(events[0].payload().get("exception").is_none());
    let (_, events) = capture("result.err_ret", || parse_err_ret("-"));
    assert!(events[0].payload().get("return").is_none());
    assert_eq!(exception(&events[0]).0, "core::num::error::ParseIntError");
}

// ---------------------------------------------------------------------------------------------
// M1: every exit path finishes exactly one event
// ---------------------------------------------------------------------------------------------

#[derive(Debug)]
struct Boom;

impl Display for Boom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("boom")
    }
}

fn fails(fail: bool) -> Result<u8, Boom> {
    if fail {
        Err(Boom)
    } else {
        Ok(1)
    }
}

#[instrument_event("m1.exits", fields(path), err)]
fn exits(path: &str) -> Result<u8, Boom> {
    if path == "early" {
        return Ok(2);
    }
    let one = fails(path == "question")?;
    assert!(path != "panic", "instrumented panic");
    Ok(one + 10)
}

#[instrument_event("m1.exits_no_err", fields(path))]
fn exits_without_err(path: &str) -> Result<u8, Boom> {
    if path == "early" {
        return Ok(2);
    }
    let one = fails(path == "question")?;
    assert!(path != "panic", "instrumented panic");
    Ok(one + 10)
}

fn check_exits(name: &str, f: fn(&str) -> Result<u8, Boom>) {
    let (value, events) = capture(name, || f("tail"));
    assert_eq!(value.unwrap(), 11);
    assert_eq!((events.len(), events[0].outcome()), (1, Outcome::Completed));

    let (value, events) = capture(name, || f("early"));
    assert_eq!(value.unwrap(), 2);
    assert_eq!((events.len(), events[0].outcome()), (1, Outcome::Completed));

    let (value, events) = capture(name, || f("question"));
    assert!(value.is_err());
    assert_eq!((events.len(), events[0].outcome()), (1, Outcome::Completed));

    let (caught, events) = capture(name, || panic::catch_unwind(|| f("panic")));
    let message = caught.expect_err("the panic goes on");
    assert_eq!(message.downcast_ref::<&str>(), Some(&"instrumented panic"));
    assert_eq!((events.len(), events[0].outcome()), (1, Outcome::Panicked));
}

#[test]
fn m1_every_exit_path_finishes_exactly_one_event() {
    check_exits("m1.exits", exits);
    check_exits("m1.exits_no_err", exits_without_err);
}

#[instrument_event("m1.question", fields(path), err)]
fn question(path: &str) -> Result<u8, Boom> {
    let one = fails(path == "question")?;
    Ok(one)
}

#[test]
fn m1_an_err_from_question_mark_is_recorded() {
    let (_, events) = capture("m1.question", || question("question"));
    assert_eq!(exception(&events[0]), ("macro_events::Boom", "boom"));
    assert_eq!(str_of(&events[0], "path"), "question");
}

// ---------------------------------------------------------------------------------------------
// M2, M10: shapes
// ---------------------------------------------------------------------------------------------

#[instrument_event("m2.iter")]
fn bytes(n: u8) -> impl Iterator<Item = u8> {
    0..n
}

#[instrument_event("m2.result_impl", err, fields(n))]
fn displayable(n: u8) -> Result<impl Display, Boom> {
    if n == 0 {
        return Err(Boom);
    }
    let n = fails(false)? + n;
    Ok(format!("n={n}"))
}

#[test]
fn m2_opaque_return_types_compile_and_emit() {
    let (sum, events) = capture("m2.iter", || bytes(4).map(u32::from).sum::<u32>());
    assert_eq!((sum, events.len()), (6, 1));
    let (text, events) = capture("m2.result_impl", || displayable(2).map(|d| d.to_string()));
    assert_eq!((text.unwrap().as_str(), events.len()), ("n=3", 1));
    let (_, events) = capture("m2.result_impl", || displayable(0).is_err());
    assert_eq!(exception(&events[0]).1, "boom");
}

#[instrument_event("m10.generic", fields(?value))]
fn generic<T: std::fmt::Debug + Clone>(value: &T) -> T {
    value.clone()
}

#[instrument_event("m10.lifetimes", ret)]
fn longest<'a, 'b: 'a>(a: &'a str, b: &'b str) -> &'a str {
    if a.len() >= b.len() {
        a
    } else {
        b
    }
}

/// # Safety
/// `p` must be valid for reads.
#[instrument_event("m10.unsafe")]
unsafe fn read(p: *const u8) -> u8 {
    // SAFETY: the caller promises `p` is readable.
    unsafe { *p }
}

/// # Safety
/// `p` must be valid for reads.
#[instrument_event("m10.unsafe_ret", ret)]
unsafe fn read_ret(p: *const u8) -> u8 {
    // SAFETY: the caller promises `p` is readable.
    unsafe { *p }
}

#[instrument_event("m10.crate_visible", fields(pair = ?(a, b)))]
pub(crate) fn crate_visible((a, b): (u8, u8), mut acc: u8) -> u8 {
    acc += a + b;
    acc
}

trait Shape {
    fn area(&self) -> u32;
}

struct Square(u32);

impl Shape for Square {
    fn area(&self) -> u32 {
        self.0 * self.0
    }
}

struct Holder<T>(T);

impl<T: Shape> Holder<T> {
    #[instrument_event("m10.impl_generic", fields(area = self.0.area()))]
    fn doubled(&self) -> u32 {
        self.0.area() * 2
    }
}

#[test]
fn m10_generic_lifetime_unsafe_crate_visible_and_generic_impl_functions_emit() {
    let (v, events) = capture("m10.generic", || generic(&vec![1, 2]));
    assert_eq!((v, str_of(&events[0], "value")), (vec![1, 2], "[1, 2]"));
    let (v, events) = capture("m10.lifetimes", || longest("abc", "de"));
    assert_eq!((v, str_of(&events[0], "return")), ("abc", "\"abc\""));
    let byte = 7_u8;
    // SAFETY: `&byte` is readable.
    let (v, events) = capture("m10.unsafe", || unsafe { read(&byte) });
    assert_eq!((v, events.len()), (7, 1));
    // SAFETY: `&byte` is readable.
    let (v, events) = capture("m10.unsafe_ret", || unsafe { read_ret(&byte) });
    assert_eq!((v, str_of(&events[0], "return")), (7, "7"));
    let (v, events) = capture("m10.crate_visible", || crate_visible((1, 2), 3));
    assert_eq!((v, str_of(&events[0], "pair")), (6, "(1, 2)"));
    let (v, events) = capture("m10.impl_generic", || Holder(Square(3)).doubled());
    assert_eq!((v, events[0].payload().get("area")), (18, Some(&Value::U64(9))));
}

// ---------------------------------------------------------------------------------------------
// Methods, M6: `self` in fields
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct Account {
    id: u64,
    balance: i64,
}

impl Account {
    #[instrument_event("m6.by_ref", fields(id = self.id))]
    fn balance(&self) -> i64 {
        self.balance
    }

    #[instrument_event("m6.by_mut", fields(id = self.id, before = self.balance), ret)]
    fn deposit(&mut self, amount: i64) -> i64 {
        self.balance += amount;
        self.balance
    }

    #[instrument_event("m6.by_mut_borrow", err)]
    fn balance_mut(&mut self) -> Result<&mut i64, Boom> {
        Ok(&mut self.balance)
    }

    #[instrument_event("m6.by_value", fields(?self))]
    fn close(self) -> i64 {
        self.balance
    }
}

trait Ledger {
    fn entries(&self, limit: usize) -> usize;
}

impl Ledger for Account {
    #[instrument_event("m6.trait_impl", fields(id = self.id, limit))]
    fn entries(&self, limit: usize) -> usize {
        limit.min(3)
    }
}

#[test]
fn m6_self_works_in_fields_of_methods_and_trait_impls() {
    let mut account = Account { id: 9, balance: 5 };
    let (v, events) = capture("m6.by_ref", || account.balance());
    assert_eq!((v, events[0].payload().get("id")), (5, Some(&Value::U64(9))));
    let (v, events) = capture("m6.by_mut", || account.deposit(10));
    assert_eq!(v, 15);
    assert_eq!(events[0].payload().get("before"), Some(&Value::I64(5)));
    assert_eq!(str_of(&events[0], "return"), "15");
    let (_, events) = capture("m6.by_mut_borrow", || *account.balance_mut().unwrap() += 1);
    assert_eq!((account.balance, events.len()), (16, 1));
    let (v, events) = capture("m6.trait_impl", || account.entries(10));
    assert_eq!((v, events[0].payload().get("limit")), (3, Some(&Value::U64(10))));
    let (v, events) = capture("m6.by_value", || account.clone().close());
    assert_eq!((v, str_of(&events[0], "self")), (16, "Account { id: 9, balance: 16 }"));
}

// ---------------------------------------------------------------------------------------------
// Nesting, R8
// ---------------------------------------------------------------------------------------------

#[instrument_event("nest.inner")]
fn inner() -> Option<EventId> {
    notify_core::context::current_event_id()
}

#[instrument_event("nest.outer")]
fn outer() -> Option<EventId> {
    inner()
}

#[test]
fn a_nested_instrumented_call_gets_the_outer_event_as_parent() {
    let (_, events) = capture_notifications(Notifier::global(), Pattern::glob("nest.*").unwrap(), outer);
    let [inner_event, outer_event] = &events[..] else {
        panic!("{events:?}")
    };
    assert_eq!(inner_event.name(), "nest.inner");
    assert_eq!(inner_event.parent_id(), Some(outer_event.id()));
    assert_eq!(outer_event.parent_id(), None);
}

#[instrument_event("r8_query.sql")]
fn r8_query() -> u8 {
    8
}

#[test]
fn r8_macro_callsite_cached_as_unlistened_is_delivered_after_glob_subscription() {
    // First call: nobody listens, the callsite caches that.
    assert_eq!(r8_query(), 8);
    let (_, events) = capture_notifications(Notifier::global(), Pattern::glob("*.sql").unwrap(), r8_query);
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].name(), "r8_query.sql");
    // And nothing after the subscription is gone.
    let (_, events) = capture("other.sql", r8_query);
    assert!(events.is_empty());
}

thread_local! {
    static BODY_RUNS: Cell<u32> = const { Cell::new(0) };
}

#[instrument_event("m3.once", err, ret)]
fn body_once(fail: bool) -> Result<u32, Boom> {
    BODY_RUNS.with(|c| c.set(c.get() + 1));
    fails(fail)?;
    Ok(BODY_RUNS.with(Cell::get))
}

#[test]
fn m3_the_body_runs_once_per_call_listened_or_not() {
    BODY_RUNS.with(|c| c.set(0));
    assert_eq!(body_once(false).unwrap(), 1);
    let (value, events) = capture("m3.once", || body_once(false));
    assert_eq!((value.unwrap(), events.len()), (2, 1));
    let (value, events) = capture("m3.once", || body_once(true));
    assert!(value.is_err());
    assert_eq!((BODY_RUNS.with(Cell::get), events.len()), (3, 1));
}

#[instrument_event("closure.capture")]
fn returns_closure(base: u8) -> impl Fn(u8) -> u8 {
    move |x| x + base
}

#[test]
fn a_function_returning_a_closure_emits_once() {
    let (f, events) = capture("closure.capture", || returns_closure(2));
    assert_eq!((f(1), events.len()), (3, 1));
}
