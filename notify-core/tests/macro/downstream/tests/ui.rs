//! Compile behaviour of `#[instrument_event]` in a crate without a notify-core dependency
//! (trybuild). Regenerate the `.stderr` files with
//! `TRYBUILD=overwrite cargo test -p notify-macro-downstream --test ui`.

/// Issue 11, fault 1: without `crate = path`, a crate that reaches notify-core through a facade
/// gets an error that says to add it (it was E0433, "cannot find `notify_core`").
#[test]
fn facade_without_crate_option_says_to_add_it() {
    trybuild::TestCases::new().compile_fail("tests/ui/*.rs");
}
