// A sync function that returns a future through a type alias (which the attribute cannot read) is
// refused at the type check: its event would time only the creation of the future.
use std::future::Future;
use std::pin::Pin;

use notify_core::instrument_event;

type Job = Pin<Box<dyn Future<Output = u8> + Send>>;

async fn work() -> u8 {
    1
}

#[instrument_event]
fn schedule() -> Job {
    Box::pin(work())
}

#[instrument_event(ret)]
fn schedule_ret() -> std::future::Ready<u8> {
    std::future::ready(1)
}

fn main() {
    drop(schedule());
    drop(schedule_ret());
}
