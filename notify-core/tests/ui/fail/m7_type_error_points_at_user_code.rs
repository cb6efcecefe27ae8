use notify_core::instrument_event;

#[instrument_event(err)]
fn sync_body() -> Result<u8, String> {
    let n: u8 = "not a number";
    Ok(n)
}

#[instrument_event]
fn sync_tail() -> u8 {
    "wrong tail"
}

#[instrument_event]
async fn async_body() -> u8 {
    let s: String = 5;
    s.len()
}

fn main() {}

#[instrument_event(err, ret)]
fn closure_tail() -> Result<u8, String> {
    Ok("wrong")
}

#[instrument_event(err)]
async fn async_tail() -> Result<u8, String> {
    if true {
        return Ok(1);
    }
    Ok("wrong")
}
