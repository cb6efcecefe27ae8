//! The `log::Record` of a log subscriber's line points at the instrumented code.

use std::sync::Mutex;

use log::{Level, LevelFilter, Log, Metadata, Record};
use notify_core::{
    event::{Callsite, Location},
    instrument_event, Notifier, Payload,
};
use notify_log::{ColorChoice, LogConfig, LogEvent, LogSubscriber};

/// (message, file, line, module path) of every record.
type Seen = (String, Option<String>, Option<u32>, Option<String>);

static SEEN: Mutex<Vec<Seen>> = Mutex::new(Vec::new());

struct Capture;

impl Log for Capture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn log(&self, record: &Record<'_>) {
        SEEN.lock().unwrap().push((
            record.args().to_string(),
            record.file().map(str::to_owned),
            record.line(),
            record.module_path().map(str::to_owned),
        ));
    }
    fn flush(&self) {}
}

struct Located;
impl LogSubscriber for Located {
    fn config() -> LogConfig<Located> {
        LogConfig::new("located").color(ColorChoice::Never).method(
            "work",
            Level::Info,
            |_: &Located, e: &LogEvent<'_>| Some(e.name().to_owned()),
        )
    }
}

/// The line of the attribute below.
const WORK_LINE: u32 = line!() + 1;
#[instrument_event("work.located")]
fn work() {}

static SITE: Callsite = Callsite::at("work.located", Location::new(file!(), 42, module_path!()));

#[test]
fn records_carry_the_file_line_and_module_of_the_instrumented_code() {
    log::set_logger(&Capture).unwrap();
    log::set_max_level(LevelFilter::Trace);
    let attached = Located.attach_to(Notifier::global()).unwrap();

    work();
    SITE.instrument(Payload::new, |_| ());
    Notifier::global().instrument("work.located", Payload::new, |_| ());
    attached.detach();

    let seen = SEEN.lock().unwrap();
    let here = Some(file!().to_owned());
    let module = Some(module_path!().to_owned());
    assert_eq!(seen.len(), 3);
    assert_eq!(
        seen[0],
        ("work.located".to_owned(), here.clone(), Some(WORK_LINE), module.clone())
    );
    assert_eq!(seen[1], ("work.located".to_owned(), here, Some(42), module));
    assert_eq!(
        seen[2],
        ("work.located".to_owned(), None, None, None),
        "an event instrumented by name has no location"
    );
}
