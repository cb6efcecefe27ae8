#![deny(dead_code)]

use notify_core::instrument_event;

#[instrument_event]
fn never_called() {}

#[instrument_event(err)]
async fn never_awaited() -> Result<(), String> {
    Ok(())
}

fn main() {}
