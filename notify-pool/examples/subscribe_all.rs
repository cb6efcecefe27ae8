//! N `subscribe_all` subscriptions x 10 events, as `benches/async_delivery.rs`'s
//! `subscriptions/pool/N` measures them, in a plain program for callgrind (the instructions per
//! delivery of issue 15's async target, which a loaded machine's timings cannot show):
//!
//! ```text
//! cargo build --release -p notify-pool --example subscribe_all
//! valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.1 target/release/examples/subscribe_all 100000 1
//! valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.3 target/release/examples/subscribe_all 100000 3
//! # instructions per delivery = (Ir of cg.3 - Ir of cg.1) / (2 x 100,000 x 10)
//! ```
//!
//! Arguments: subscriptions (default 100,000) and rounds (default 1); each round publishes 10
//! events to every subscription and flushes. Prints each round's time (wall clock).

use std::time::{Duration, Instant};

use notify_core::{Event, Notifier, Pattern, Payload};
use notify_pool::{AsyncOptions, WorkerPool};

fn noop(e: &Event) {
    std::hint::black_box(e.id());
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args
        .next()
        .map_or(100_000, |a| a.parse().expect("usage: subscribe_all [N] [ROUNDS]"));
    let rounds: usize = args
        .next()
        .map_or(1, |a| a.parse().expect("usage: subscribe_all [N] [ROUNDS]"));
    let pool = WorkerPool::new();
    let notifier = Notifier::new();
    let name = Pattern::exact("subs.bench");
    let subs = pool.subscribe_all(&notifier, (0..n).map(|_| (name.clone(), AsyncOptions::new(), noop)));
    for round in 0..rounds {
        let started = Instant::now();
        for _ in 0..10 {
            notifier.instrument("subs.bench", Payload::new, |_| ());
        }
        pool.flush();
        println!(
            "round {round}: {n} x 10 in {:.1} ms",
            started.elapsed().as_secs_f64() * 1e3
        );
    }
    let dropped: u64 = subs.iter().map(|s| s.dropped()).sum();
    assert_eq!(dropped, 0, "no mailbox may drop (capacity 1,024 > 10 events)");
    pool.shutdown(Duration::from_secs(10));
}
