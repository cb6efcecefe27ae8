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
//! subscriber each for `timed_1` (empty payload) and `payload_3_keys` (benches/support/fixture.rs).
//! Cases: timed, timed_1, timed_monotonic,
//! event_object, evented, silenced, unsubscribed, unsubscribed_dynamic, payload_3_keys, and
//! payload_3_keys_redacted (the same event with the bench's redaction policy of 10 key patterns, none
//! matching: the policy's cost is the difference with payload_3_keys). The write path:
//! subscribe_unsubscribe (one exact subscribe + unsubscribe pair on the populated notifier) and
//! subscribe_unsubscribe_100000 (the pair on a notifier with 100,000 other exact subscriptions);
//! unsubscribe_name_100000 (one `unsubscribe_name` of a new name, formatted in the loop, after
//! 100,000 names were excluded from a glob subscription: the bench's
//! `registry/unsubscribe_name_100000_exclusions`). The bridge: bridge_notify_to_tracing (the bench's
//! `peers/bridge_notify_to_tracing`: an `#[instrument_event]` fn listened by
//! `notify_tracing::TracingForwarder`, each call a span on tracing's `Registry` with a do-nothing
//! layer) and tracing_fn_listened (the same span made by tracing's `#[instrument]`, its peer).

use std::hint::black_box;

use notify_core::Payload;

#[path = "../support/fixture.rs"]
mod fixture;

fn main() {
    let mut args = std::env::args().skip(1);
    let case = args.next().unwrap_or_else(|| "timed".into());
    let iterations: u64 = args
        .next()
        .map_or(1_000_000, |n| n.parse().expect("iterations: a number"));

    let fixture = fixture::fixture();
    let redacting = fixture::redacting_notifier();
    let many = match case.as_str() {
        "subscribe_unsubscribe_100000" => fixture::many_exact(100_000),
        "unsubscribe_name_100000" => fixture::many_exclusions(100_000),
        _ => notify_core::Notifier::new(),
    };
    let notifier = match case.as_str() {
        "payload_3_keys_redacted" => &redacting,
        "subscribe_unsubscribe_100000" | "unsubscribe_name_100000" => &many,
        _ => &fixture.notifier,
    };
    let name = match case.as_str() {
        "unsubscribed_dynamic" => format!("unsubscribed_dynamic.{}", std::process::id()),
        other => format!("{other}.bench"),
    };
    match case.as_str() {
        "unsubscribe_name_100000" => {
            for i in 0..iterations {
                notifier.unsubscribe_name(black_box(&format!("{}.excluded", 100_000 + i)));
            }
        }
        "subscribe_unsubscribe" | "subscribe_unsubscribe_100000" => {
            (0..iterations).for_each(|_| fixture::subscribe_unsubscribe(notifier));
        }
        "bridge_notify_to_tracing" | "tracing_fn_listened" => bridge(&case, iterations),
        "payload_3_keys" | "payload_3_keys_redacted" => {
            (0..iterations).for_each(|_| fixture::payload_3_keys(notifier));
        }
        _ => instrument_named(notifier, &name, iterations),
    }
}

/// The named cases' loop in a function of its own, as the bench's one closure for them is: the
/// compiler's inlining choices inside it are then those of the bench, not those of a `main` that
/// holds every case.
#[inline(never)]
fn instrument_named(notifier: &notify_core::Notifier, name: &str, iterations: u64) {
    for _ in 0..iterations {
        notifier.instrument(black_box(name), Payload::new, |_| {});
    }
}

/// The bridge's case and its peer, as in the bench: `notify_fn` through the bridge, or
/// `tracing_fn`, on a `Registry` with a do-nothing layer.
fn bridge(case: &str, iterations: u64) {
    use tracing_subscriber::layer::SubscriberExt;
    let bridge = notify_tracing::TracingForwarder::new().subscribe(notify_core::Notifier::global(), "peer_fn.bench");
    let subscriber = tracing_subscriber::registry().with(fixture::NoopLayer);
    tracing::subscriber::with_default(subscriber, || {
        for _ in 0..iterations {
            if case == "bridge_notify_to_tracing" {
                fixture::notify_fn(black_box(7));
            } else {
                fixture::tracing_fn(black_box(7));
            }
        }
    });
    bridge.unsubscribe().expect("subscribed above");
}
