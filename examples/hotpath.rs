//! One case of `benches/notifications.rs`'s `as_notifications` group in a plain loop, for counting
//! instructions with callgrind (deterministic, unlike wall time on a shared machine):
//!
//! ```text
//! cargo build --release --example hotpath
//! valgrind --tool=callgrind --callgrind-out-file=/tmp/a.out target/release/examples/hotpath timed 1000
//! valgrind --tool=callgrind --callgrind-out-file=/tmp/b.out target/release/examples/hotpath timed 11000
//! ```
//!
//! The difference of the two totals divided by 10,000 is the cost of one call, set-up excluded
//! (`callgrind_annotate` on either file shows where it goes). The fixture is the bench's: ten
//! subscribers of each kind on that kind's own name, ten silenced log subscribers, one timed
//! subscriber for `payload_3_keys`. Cases: timed, timed_monotonic, event_object, evented, silenced,
//! unsubscribed, unsubscribed_dynamic, payload_3_keys.

use std::hint::black_box;

use notify_core::{Event, EventContext, EventedSubscriber, Notifier, Payload, Subscriber};
use notify_log::{Attached, Level, LogConfig, LogEvent, LogSubscriber};

struct NoopEvented;

impl EventedSubscriber for NoopEvented {
    fn start(&self, _: &str, _: &EventContext, _: &Payload) {}
    fn finish(&self, _: &str, _: &EventContext, _: &Payload) {}
}

/// The bench's log subscriber at `debug`: silenced, as no logger is installed.
struct BenchLog;

impl LogSubscriber for BenchLog {
    fn config() -> LogConfig<BenchLog> {
        LogConfig::new("bench").method("silenced", Level::Debug, |_: &BenchLog, e: &LogEvent<'_>| {
            Some(format!("{} {}", e.method(), e.elapsed()))
        })
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let case = args.next().unwrap_or_else(|| "timed".into());
    let iterations: u64 = args
        .next()
        .map_or(1_000_000, |n| n.parse().expect("iterations: a number"));

    let notifier = Notifier::new();
    for _ in 0..10 {
        let _ = notifier.subscribe(
            "timed.bench",
            Subscriber::timed(|_: &str, _, _, _: u64, _: &Payload| {}),
        );
        let _ = notifier.subscribe(
            "timed_monotonic.bench",
            Subscriber::monotonic(|_: &str, _, _, _: u64, _: &Payload| {}),
        );
        let _ = notifier.subscribe("event_object.bench", Subscriber::event(|_: &Event| {}));
        let _ = notifier.subscribe("evented.bench", Subscriber::evented(NoopEvented));
    }
    let _logs: Vec<Attached<BenchLog>> = (0..10)
        .map(|_| BenchLog.attach_to(&notifier).expect("valid log subscriber"))
        .collect();
    let _ = notifier.subscribe(
        "payload_3_keys.bench",
        Subscriber::timed(|_: &str, _, _, _: u64, _: &Payload| {}),
    );
    let dynamic = format!("unsubscribed_dynamic.{}", std::process::id());
    let name = match case.as_str() {
        "unsubscribed_dynamic" => dynamic,
        other => format!("{other}.bench"),
    };
    for _ in 0..iterations {
        if case == "payload_3_keys" {
            notifier.instrument(
                black_box(name.as_str()),
                || {
                    Payload::new()
                        .with("sql", "SELECT * FROM books WHERE id = ?")
                        .with("rows", 3_u64)
                        .with("cached", false)
                },
                |_| {},
            );
        } else {
            notifier.instrument(black_box(name.as_str()), Payload::new, |_| {});
        }
    }
}
