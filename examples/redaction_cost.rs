//! The cost of a redaction policy in instructions, for a machine too loaded for timings: the
//! `payload_3_keys` event of benches/notifications.rs (one timed subscriber, a 3-entry payload)
//! `N` times, on a notifier without a policy (`plain`) or with the bench's policy of 10 key
//! patterns, none matching (`redacted`). Run it twice under callgrind with N and 2N; the
//! difference of the totals divided by N is the cost of one event:
//!
//! ```sh
//! cargo build --release --example redaction_cost
//! for case in plain redacted; do for n in 100000 200000; do
//!   valgrind --tool=callgrind --callgrind-out-file=/dev/null target/release/examples/redaction_cost $case $n 2>&1 | grep refs
//! done; done
//! ```

use std::hint::black_box;
use std::time::SystemTime;

use notify_core::{Notifier, Payload, Redaction, Subscriber};

fn main() {
    let mut args = std::env::args().skip(1);
    let case = args.next().unwrap_or_default();
    let n: u64 = args.next().and_then(|n| n.parse().ok()).unwrap_or(100_000);
    let notifier = Notifier::new();
    match case.as_str() {
        "plain" => {}
        "redacted" => {
            notifier.set_redaction(
                Redaction::builder()
                    .key("password")
                    .key("passwd")
                    .key("secret")
                    .key("token")
                    .key("authorization")
                    .key("cookie")
                    .key_glob("*_token")
                    .key_glob("*_secret")
                    .key_glob("api_key*")
                    .key_regex("^x-.*-key$")
                    .case_insensitive(true)
                    .build()
                    .expect("a valid policy"),
            );
        }
        other => {
            eprintln!("usage: redaction_cost plain|redacted [N] (got {other:?})");
            std::process::exit(2);
        }
    }
    let _ = notifier.subscribe(
        "payload_3_keys.bench",
        Subscriber::timed(|_: &str, _: SystemTime, _: SystemTime, _: u64, _: &Payload| {}),
    );
    for _ in 0..n {
        notifier.instrument(
            black_box("payload_3_keys.bench"),
            || {
                Payload::new()
                    .with("sql", "SELECT * FROM books WHERE id = ?")
                    .with("rows", 3_u64)
                    .with("cached", false)
            },
            |_| {},
        );
    }
}
