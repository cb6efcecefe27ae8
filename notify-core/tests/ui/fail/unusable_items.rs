use notify_core::instrument_event;

#[instrument_event]
const fn constant() -> u8 {
    1
}

trait Repo {
    #[instrument_event]
    fn find(&self) -> u8;
}

#[instrument_event]
struct NotAFunction;

fn main() {}
