// An `err` or `ret` that does not fit an async fn's return type is one error, at the key: for
// bodies that never await (instrumented in place) and for bodies that await (wrapped).
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

#[instrument_event(ret)]
async fn not_debug_awaiting() -> Opaque {
    std::future::ready(()).await;
    Opaque
}

#[instrument_event(err)]
async fn error_not_display_awaiting() -> Result<u8, NotDisplayError> {
    std::future::ready(()).await;
    Ok(1)
}

#[instrument_event(err)]
async fn not_a_result_awaiting() -> u8 {
    std::future::ready(()).await;
    1
}

fn main() {}
