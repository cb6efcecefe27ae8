// This crate reaches notify-core only through notify-macro-facade: without `crate = path` the
// attribute says so, at the attribute.
#[notify_macro_facade::instrument_event("missing.option")]
fn f() -> u32 {
    1
}

fn main() {
    f();
}
