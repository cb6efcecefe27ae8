use notify_core::instrument_event;

#[instrument_event(crate = 5)]
fn number() {}

#[instrument_event(crate)]
fn missing_value() {}

#[instrument_event(crate = "not a path")]
fn bad_string() {}

#[instrument_event(crate = notify_core, crate = notify_core)]
fn twice() {}

fn main() {}
