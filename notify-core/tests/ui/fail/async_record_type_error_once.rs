// An `err` or `ret` that does not fit an async fn's return type is one error, at the key.
use notify_core::instrument_event;

struct Opaque;

#[instrument_event(ret)]
async fn not_debug() -> Opaque {
    Opaque
}

#[derive(Debug)]
struct NotDisplayError;

#[instrument_event(err)]
async fn error_not_display() -> Result<u8, NotDisplayError> {
    Ok(1)
}

#[instrument_event(err)]
async fn not_a_result() -> u8 {
    1
}

fn main() {}
