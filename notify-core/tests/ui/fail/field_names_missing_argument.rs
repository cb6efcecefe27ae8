use notify_core::instrument_event;

#[instrument_event(fields(user_id, %sql))]
fn query(sql: &str) -> usize {
    sql.len()
}

struct S;

impl S {
    #[instrument_event(fields(?self, other))]
    fn method(&self) {}
}

#[instrument_event(fields(?self))]
fn no_receiver() {}

fn main() {}
