//! The populated notifier of benches/notifications.rs's `as_notifications` group, shared with
//! benches/examples/hotpath.rs (the same cases in a plain loop, for callgrind). Included with `#[path]` by
//! each; not every includer uses every item.
#![allow(dead_code)]

use std::hint::black_box;

use notify_core::{
    context::TransactionId, redaction::Redaction, Event, EventedSubscriber, Notifier, Payload, Subscriber,
};
use notify_log::{Attached, Level, LogConfig, LogEvent, LogSubscriber};

/// Subscribers per event name in the `as_notifications` cases, as in the AS::N benchmark.
pub const SUBSCRIBERS: usize = 10;

pub struct NoopEvented;

impl EventedSubscriber for NoopEvented {
    fn start(&self, _: &str, _: &notify_core::context::EventContext, _: &Payload) {}
    fn finish(&self, _: &str, _: &notify_core::context::EventContext, _: &Payload) {}
}

/// A log subscriber at `debug`: silenced while the `log` facade drops `debug` (here: always, as
/// the bench installs no logger).
pub struct BenchLog;

impl LogSubscriber for BenchLog {
    fn config() -> LogConfig<BenchLog> {
        LogConfig::new("bench").method("silenced", Level::Debug, |_: &BenchLog, e: &LogEvent<'_>| {
            Some(format!("{} {}", e.method(), e.elapsed()))
        })
    }
}

/// The populated notifier of the `as_notifications` group.
pub struct Fixture {
    pub notifier: Notifier,
    _logs: Vec<Attached<BenchLog>>,
}

pub fn fixture() -> Fixture {
    let notifier = Notifier::new();
    for _ in 0..SUBSCRIBERS {
        let _ = notifier.subscribe(
            "timed.bench",
            Subscriber::timed(|_: &str, _, _, _: TransactionId, _: &Payload| {}),
        );
        let _ = notifier.subscribe(
            "timed_monotonic.bench",
            Subscriber::monotonic(|_: &str, _, _, _: TransactionId, _: &Payload| {}),
        );
        let _ = notifier.subscribe("event_object.bench", Subscriber::event(|_: &Event| {}));
        let _ = notifier.subscribe("evented.bench", Subscriber::evented(NoopEvented));
    }
    let logs: Vec<Attached<BenchLog>> = (0..SUBSCRIBERS)
        .map(|_| BenchLog.attach_to(&notifier).expect("valid log subscriber"))
        .collect();
    assert!(
        !notifier.listening("silenced.bench"),
        "no logger is installed: debug is dropped"
    );
    // `timed_1` and `payload_3_keys`: one do-nothing timed subscriber each, so the payload's cost
    // is payload_3_keys - timed_1 (issue 15: at most 30 ns).
    // `evented_1`: `evented` with one subscriber (its fixed part, and two calls).
    let _ = notifier.subscribe("evented_1.bench", Subscriber::evented(NoopEvented));
    for name in ["timed_1.bench", "payload_3_keys.bench"] {
        let _ = notifier.subscribe(
            name,
            Subscriber::timed(|_: &str, _, _, _: TransactionId, _: &Payload| {}),
        );
    }
    Fixture { notifier, _logs: logs }
}

/// One event with a 3-entry payload (text, integer, boolean) built per call.
pub fn payload_3_keys(notifier: &Notifier) {
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

/// A policy of 10 key patterns, ignoring case, as a web application's might be: 6 names, 3 globs
/// and a regex.
pub fn ten_key_patterns() -> Redaction {
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
        .expect("a valid policy")
}

/// A notifier with [`ten_key_patterns`] as its redaction policy and one timed subscriber on
/// `payload_3_keys.bench`: the `payload_3_keys_redacted` case.
pub fn redacting_notifier() -> Notifier {
    let notifier = Notifier::new();
    notifier.set_redaction(ten_key_patterns());
    let _ = notifier.subscribe(
        "payload_3_keys.bench",
        Subscriber::timed(|_: &str, _, _, _: TransactionId, _: &Payload| {}),
    );
    notifier
}

/// One subscribe + unsubscribe pair of a timed subscriber on `notifier`: the `subscribe_unsubscribe`
/// cases.
pub fn subscribe_unsubscribe(notifier: &Notifier) {
    let subscription = notifier.subscribe(
        black_box("subscribe_unsubscribe.bench"),
        Subscriber::timed(|_: &str, _, _, _: TransactionId, _: &Payload| {}),
    );
    subscription.unsubscribe().expect("just subscribed");
}

/// A notifier with one glob subscription (`*.excluded`, a do-nothing evented subscriber) from
/// which `unsubscribe_name` excluded `n` names (`0.excluded`, `1.excluded`, ...):
/// `registry/unsubscribe_name_100000_exclusions`' with n = 100,000. The glob's `Subscription` is
/// dropped, which keeps the subscription.
pub fn many_exclusions(n: usize) -> Notifier {
    let notifier = Notifier::new();
    let _ = notifier.subscribe(
        notify_core::Pattern::glob("*.excluded").expect("valid glob"),
        Subscriber::evented(NoopEvented),
    );
    for i in 0..n {
        notifier.unsubscribe_name(&format!("{i}.excluded"));
    }
    notifier
}

/// A notifier with `n` exact subscriptions (an evented do-nothing subscriber each) on `n` names
/// (`"{i}.many"`): `registry/subscribe_unsubscribe_100000`'s, with n = 100,000.
pub fn many_exact(n: usize) -> Notifier {
    let notifier = Notifier::new();
    // Dropping a `Subscription` keeps the subscription.
    let _ = notifier.subscribe_all((0..n).map(|i| {
        (
            notify_core::Pattern::exact(format!("{i}.many")),
            Subscriber::evented(NoopEvented),
        )
    }));
    notifier
}

/// The bench's `peers` function under `#[instrument_event]` (also the bridge's case).
#[notify_core::instrument_event("peer_fn.bench", fields(x))]
#[inline(never)]
pub fn notify_fn(x: u64) -> u64 {
    black_box(x).wrapping_mul(3)
}

/// The same function under tracing's `#[instrument]`, the peer.
#[tracing::instrument(level = "info")]
#[inline(never)]
pub fn tracing_fn(x: u64) -> u64 {
    black_box(x).wrapping_mul(3)
}

/// A `tracing` layer that does nothing: what the `Registry` under it does (span slots, the
/// current-span stack) is the cost measured.
pub struct NoopLayer;

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for NoopLayer {}
