// A function that returns a future the attribute cannot instrument is refused: its event would
// time only the creation of the future.
use std::future::Future;
use std::pin::Pin;

use notify_core::instrument_event;

async fn work() -> u8 {
    1
}

#[instrument_event]
fn ready_future() -> impl Future<Output = u8> {
    std::future::ready(1)
}

#[instrument_event]
fn boxed_call() -> Pin<Box<dyn Future<Output = u8> + Send>> {
    Box::pin(work())
}

fn main() {}
