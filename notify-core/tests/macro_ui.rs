//! Compile behaviour of `#[instrument_event]` (trybuild). Regenerate the `.stderr` files with
//! `TRYBUILD=overwrite cargo test -p notify-core --test macro_ui` after a deliberate change.

/// shared/cases M10 (and M2, M3, M4, M6): every function shape compiles, with warnings denied.
#[test]
fn m10_every_function_shape_compiles() {
    trybuild::TestCases::new().pass("tests/ui/pass/*.rs");
}

/// shared/cases M7: a malformed attribute (unknown key, duplicate key, wrong value type, a field
/// naming a missing argument) is an error naming the key and pointing at it; type errors in the
/// body point at the user's expression.
#[test]
fn m7_malformed_attributes_and_type_errors_point_at_the_culprit() {
    trybuild::TestCases::new().compile_fail("tests/ui/fail/*.rs");
}

/// shared/cases M5: `dead_code`, `unused_variables` and `unused_mut` still fire on instrumented
/// functions and their unlisted arguments.
#[test]
fn m5_dead_code_and_unused_arguments_still_fire() {
    trybuild::TestCases::new().compile_fail("tests/ui/m5/*.rs");
}
