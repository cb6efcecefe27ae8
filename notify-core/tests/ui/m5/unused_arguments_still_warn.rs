#![deny(unused_variables, unused_mut)]

use notify_core::instrument_event;

#[instrument_event(fields(listed))]
fn sync_unlisted(listed: u8, unlisted: u8) {}

#[instrument_event(fields(listed), err)]
fn sync_closure(listed: u8, unlisted: u8) -> Result<(), String> {
    Ok(())
}

#[instrument_event(fields(listed))]
async fn async_unlisted(listed: u8, unlisted: u8, mut never_mutated: u8, mut_ref: &mut u8) -> u8 {
    never_mutated
}

fn main() {
    sync_unlisted(1, 2);
    let _ = sync_closure(1, 2);
    let _ = async_unlisted(1, 2, 3, &mut 4);
}
