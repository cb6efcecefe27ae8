use notify_core::instrument_event;

#[instrument_event("a.b", name = "c.d")]
fn bare_and_keyed() {}

#[instrument_event(name = "a.b", name = "c.d")]
fn name_twice() {}

#[instrument_event(err, err)]
fn err_twice() -> Result<(), String> {
    Ok(())
}

#[instrument_event(ret, fields(a), ret)]
fn ret_twice(a: u8) -> u8 {
    a
}

#[instrument_event(fields(a), fields(b))]
fn fields_twice(a: u8, b: u8) -> u8 {
    a + b
}

#[instrument_event(fields(a, a = 2))]
fn field_key_twice(a: u8) -> u8 {
    a
}

fn main() {}
