use notify_core::instrument_event;

#[instrument_event(name = 5)]
fn name_number() {}

#[instrument_event(name = sql::query)]
fn name_path() {}

#[instrument_event(name)]
fn name_without_value() {}

#[instrument_event(fields = "a")]
fn fields_string() {}

#[instrument_event(err = true)]
fn err_value() -> Result<(), String> {
    Ok(())
}

#[instrument_event(ret("debug"))]
fn ret_list() -> u8 {
    1
}

#[instrument_event("")]
fn empty_name() {}

fn main() {}
