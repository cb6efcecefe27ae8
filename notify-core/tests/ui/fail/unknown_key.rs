use notify_core::instrument_event;

#[instrument_event(name = "a.b", level = "debug")]
fn f() {}

#[instrument_event(skip(x))]
fn g(x: u8) -> u8 {
    x
}

fn main() {}
