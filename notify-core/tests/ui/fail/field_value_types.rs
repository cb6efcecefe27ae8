use notify_core::instrument_event;

struct Opaque;

#[instrument_event(fields(value = opaque))]
fn not_a_value(opaque: Opaque) -> Opaque {
    opaque
}

#[instrument_event(fields(shown = %opaque))]
fn not_display(opaque: &Opaque) {}

#[instrument_event(ret)]
fn ret_not_debug() -> Opaque {
    Opaque
}

#[derive(Debug)]
struct NotDisplayError;

#[instrument_event(err)]
fn err_not_display() -> Result<(), NotDisplayError> {
    Ok(())
}

#[instrument_event(err)]
fn err_not_result() -> u8 {
    1
}

fn main() {}
