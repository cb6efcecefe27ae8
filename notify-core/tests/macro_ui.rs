//! Compile behaviour of `#[instrument_event]` (trybuild): every function shape compiles with
//! warnings denied; every malformed attribute is an error naming the key and pointing at it; user
//! spans survive; `dead_code` and `unused_variables` still fire. Regenerate the `.stderr` files with
//! `TRYBUILD=overwrite cargo test -p notify-core --test macro_ui` after a deliberate change.

#[test]
fn m7_and_m10_compile_behaviour() {
    let cases = trybuild::TestCases::new();
    cases.pass("tests/ui/pass/*.rs");
    cases.compile_fail("tests/ui/fail/*.rs");
}
