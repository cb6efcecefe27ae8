use notify_core::instrument_event;

// Every problem is reported, not only the first.
#[instrument_event(name = 1, colour = "red", err, err, fields(nope))]
fn f() {}

fn main() {}
