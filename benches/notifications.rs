//! The benchmark suite of issue 5: AS::N's cases, the macro's fast path, and `tracing` side by side
//! in one criterion run, so every ratio comes from one process on one machine state.
//!
//! * `as_notifications/*`: the cases of the AS::N benchmark that introduced subscriber groups. One
//!   notifier holds, for each kind, 10 subscribers on that kind's own event name, and each case
//!   measures `notifier.instrument(name, Payload::new, |_| {})` on its name. `evented_1` is
//!   `evented` with one subscriber, not 10: with `evented` it splits the event into its fixed
//!   part (lookup, pin, ids, guards) and its per-subscriber part. `unsubscribed` is a
//!   name nobody listens to (on the same, populated notifier); `silenced` has 10 real log
//!   subscribers at `debug` while the `log` facade drops everything (no logger is installed, so its
//!   max level is `Off`). Then: `unsubscribed_callsite` (a `static Callsite` nobody listens to),
//!   `unsubscribed_dynamic` (a runtime `String` name), `timed_1` (1 timed subscriber, empty
//!   payload), `payload_3_keys` (the same kind of subscriber, a 3-entry payload built per event:
//!   issue 15's target is `payload_3_keys` <= `timed_1` + 30 ns), `payload_3_keys_redacted` (the same on a notifier with a
//!   redaction policy of 10 key patterns, none matching), `subscribe_unsubscribe` (one pair on the
//!   populated notifier).
//! * `peers/*`: one `#[inline(never)]` function, plain, under `#[instrument_event]` and under
//!   `tracing`'s `#[instrument]` (both record the argument), nobody listening, then one do-nothing
//!   listener each: an evented notify subscriber (start and finish, no clock, like a span's
//!   new/enter/exit/close) and a do-nothing layer on `tracing_subscriber`'s `Registry`, set with
//!   `tracing::subscriber::with_default` inside that bench only. `tracing_event_disabled` is
//!   `info!` with no subscriber; it runs before the listened cases. The bridges of crate
//!   notify-tracing: `bridge_notify_to_tracing` is `notify_fn` listened by
//!   `notify_tracing::TracingForwarder` (each call a tracing span on the same Registry + do-nothing
//!   layer; compare with `tracing_fn_listened`, target ≤ 1.5×), `layer_tracing_to_notify_unlistened`
//!   is `tracing_fn` on a Registry with `notify_tracing::NotifyLayer` while nobody listens in
//!   notify (compare with `tracing_fn_registry`, the Registry alone; target ≤ +5 ns).
//!   `notify_future_listened` /
//!   `tracing_future_listened`: a ready future instrumented as one event (notify's
//!   `Instrument::instrument` with a callsite handle and the evented listener) or one span (tracing's
//!   `Instrument::instrument`, the do-nothing layer), polled to completion.
//! * `clock/*`: `Instant::now()` and `SystemTime::now()`, the floor of the timed cases (each timed
//!   event reads its clock twice); `dyn_calls_20`, the floor of `evented`: twenty indirect calls
//!   of a do-nothing trait object (its 10 subscribers' starts and finishes) and nothing else.
//!
//! Settings: 1 s warm-up, 2 s measurement, 50 samples, so the 20 cases finish in about 80 s
//! on 2 cores. Quick mode (`NOTIFY_BENCH_QUICK=1`): 0.2 s, 0.5 s, 10 samples, about 20 s: for
//! checking the suite runs, not for quoting. Criterion's own flags (`--warm-up-time`,
//! `--measurement-time`, `--sample-size`, a name filter) override either. `scripts/bench-report`
//! runs the suite and prints the markdown table of docs/benchmarks.md.

use std::future::Future;
use std::hint::black_box;
use std::time::{Duration, Instant, SystemTime};

use criterion::{criterion_group, criterion_main, Criterion};
use notify_core::{event::Callsite, Notifier, Payload, Subscriber};

#[path = "support/fixture.rs"]
mod fixture;

use fixture::{
    fixture, many_exact, notify_fn, payload_3_keys, redacting_notifier, subscribe_unsubscribe, tracing_fn, NoopEvented,
    NoopLayer,
};

fn as_notifications(c: &mut Criterion) {
    let fixture = fixture();
    let notifier = &fixture.notifier;
    let mut group = c.benchmark_group("as_notifications");
    for (case, name) in [
        ("timed", "timed.bench"),
        ("timed_1", "timed_1.bench"),
        ("timed_monotonic", "timed_monotonic.bench"),
        ("event_object", "event_object.bench"),
        ("evented", "evented.bench"),
        ("evented_1", "evented_1.bench"),
        ("silenced", "silenced.bench"),
        ("unsubscribed", "unsubscribed.bench"),
    ] {
        group.bench_function(case, |b| {
            b.iter(|| notifier.instrument(black_box(name), Payload::new, |_| {}));
        });
    }

    // As `tracing_event_disabled` does with its callsite: the static is used directly (a
    // `black_box(&SITE)` would add a store-to-load round trip before the interest load).
    static SITE: Callsite = Callsite::new("unsubscribed_callsite.bench");
    group.bench_function("unsubscribed_callsite", |b| {
        b.iter(|| SITE.instrument(Payload::new, |_| {}));
    });

    let dynamic: String = format!("unsubscribed_dynamic.{}", std::process::id());
    group.bench_function("unsubscribed_dynamic", |b| {
        b.iter(|| notifier.instrument(black_box(dynamic.as_str()), Payload::new, |_| {}));
    });

    group.bench_function("payload_3_keys", |b| b.iter(|| payload_3_keys(notifier)));

    // The same event on a notifier with a redaction policy of 10 key patterns (issue 17: at most
    // +50 ns over `payload_3_keys`). None of the 3 keys matches: the cost of checking them.
    let redacting = redacting_notifier();
    group.bench_function("payload_3_keys_redacted", |b| b.iter(|| payload_3_keys(&redacting)));

    group.bench_function("subscribe_unsubscribe", |b| {
        b.iter(|| subscribe_unsubscribe(notifier));
    });
    group.finish();
}

/// The same function three ways (`fixture::notify_fn` and `fixture::tracing_fn` are the other
/// two). The body is small on purpose: the cases measure the wrapper.
#[inline(never)]
fn plain_fn(x: u64) -> u64 {
    black_box(x).wrapping_mul(3)
}

fn peers(c: &mut Criterion) {
    let mut group = c.benchmark_group("peers");
    group.bench_function("plain_fn", |b| b.iter(|| plain_fn(black_box(7))));
    group.bench_function("notify_fn_unlistened", |b| b.iter(|| notify_fn(black_box(7))));
    group.bench_function("tracing_fn_unlistened", |b| b.iter(|| tracing_fn(black_box(7))));
    group.bench_function("tracing_event_disabled", |b| {
        b.iter(|| tracing::info!(x = black_box(7_u64), "disabled"));
    });

    group.bench_function("notify_fn_listened", |b| {
        let subscription = notify_core::subscribe("peer_fn.bench", Subscriber::evented(NoopEvented));
        b.iter(|| notify_fn(black_box(7)));
        subscription.unsubscribe().expect("subscribed above");
    });
    group.bench_function("tracing_fn_listened", |b| {
        use tracing_subscriber::layer::SubscriberExt;
        let subscriber = tracing_subscriber::registry().with(NoopLayer);
        tracing::subscriber::with_default(subscriber, || b.iter(|| tracing_fn(black_box(7))));
    });

    // The bridges (crate notify-tracing), against `tracing_fn_listened` and `tracing_fn_registry`.
    group.bench_function("bridge_notify_to_tracing", |b| {
        use tracing_subscriber::layer::SubscriberExt;
        let bridge = notify_tracing::TracingForwarder::new().subscribe(Notifier::global(), "peer_fn.bench");
        let subscriber = tracing_subscriber::registry().with(NoopLayer);
        tracing::subscriber::with_default(subscriber, || b.iter(|| notify_fn(black_box(7))));
        bridge.unsubscribe().expect("subscribed above");
    });
    group.bench_function("tracing_fn_registry", |b| {
        tracing::subscriber::with_default(tracing_subscriber::registry(), || b.iter(|| tracing_fn(black_box(7))));
    });
    group.bench_function("layer_tracing_to_notify_unlistened", |b| {
        use tracing_subscriber::layer::SubscriberExt;
        let subscriber = tracing_subscriber::registry().with(notify_tracing::NotifyLayer::new());
        tracing::subscriber::with_default(subscriber, || b.iter(|| tracing_fn(black_box(7))));
    });

    // A future instrumented as one event and polled to completion (it is ready at once), with one
    // do-nothing listener: notify's `Instrument::instrument` with a callsite handle and an evented
    // subscriber, against tracing's `Instrument::instrument` with a span on the registry and a
    // do-nothing layer. Both build the event or span, enter and exit it around the poll, and close it.
    static FUTURE_SITE: Callsite = Callsite::new("peer_future.bench");
    let waker = std::task::Waker::noop();
    group.bench_function("notify_future_listened", |b| {
        use notify_core::Instrument;
        let subscription = notify_core::subscribe("peer_future.bench", Subscriber::evented(NoopEvented));
        let mut cx = std::task::Context::from_waker(waker);
        b.iter(|| {
            let future = std::pin::pin!(async { black_box(7_u64) }.instrument(FUTURE_SITE.handle(Payload::new)));
            black_box(future.poll(&mut cx))
        });
        subscription.unsubscribe().expect("subscribed above");
    });
    group.bench_function("tracing_future_listened", |b| {
        use tracing::Instrument;
        use tracing_subscriber::layer::SubscriberExt;
        let subscriber = tracing_subscriber::registry().with(NoopLayer);
        let mut cx = std::task::Context::from_waker(waker);
        tracing::subscriber::with_default(subscriber, || {
            b.iter(|| {
                let future = std::pin::pin!(async { black_box(7_u64) }.instrument(tracing::info_span!("peer_future")));
                black_box(future.poll(&mut cx))
            })
        });
    });
    group.finish();
}

fn clock(c: &mut Criterion) {
    let mut group = c.benchmark_group("clock");
    group.bench_function("instant_now", |b| b.iter(Instant::now));
    group.bench_function("system_time_now", |b| b.iter(SystemTime::now));
    // The floor of `evented`: its 20 subscriber calls (10 starts, 10 finishes) alone, each an
    // indirect call of a do-nothing trait object with one pointer argument, as the delivery loop
    // makes them, and nothing else (no lookup, ids, guard or unwinding guard).
    let callees: Vec<Box<dyn Callee>> = (0..fixture::SUBSCRIBERS)
        .map(|_| Box::new(NoopCallee) as Box<dyn Callee>)
        .collect();
    let args = (7_u64, 11_u64);
    group.bench_function("dyn_calls_20", |b| {
        b.iter(|| {
            let (callees, args) = (black_box(&callees), black_box(&args));
            callees.iter().for_each(|c| c.call(args));
            callees.iter().for_each(|c| c.call(args));
        })
    });
    group.finish();
}

/// What `clock/dyn_calls_20` calls: one method, one pointer argument.
trait Callee {
    fn call(&self, args: &(u64, u64));
}

struct NoopCallee;

impl Callee for NoopCallee {
    fn call(&self, _: &(u64, u64)) {}
}

/// The suite's settings; `NOTIFY_BENCH_QUICK=1` for the quick mode; command-line flags win.
fn config() -> Criterion {
    let quick = std::env::var_os("NOTIFY_BENCH_QUICK").is_some_and(|v| !v.is_empty() && v != "0");
    let (warm_up, measurement, samples) = if quick {
        (Duration::from_millis(200), Duration::from_millis(500), 10)
    } else {
        (Duration::from_secs(1), Duration::from_secs(2), 50)
    };
    Criterion::default()
        .warm_up_time(warm_up)
        .measurement_time(measurement)
        .sample_size(samples)
        .configure_from_args()
}

/// Two names whose cache hashes agree in their low 16 bits: they share a set of the name cache
/// whatever its geometry (up to 65,536 sets), and a slot of any direct-mapped one.
fn colliding_names(prefix: &str) -> (String, String) {
    let low = |name: &str| notify_core::__private::name_cache_hash(name) & 0xffff;
    let mut seen = std::collections::HashMap::new();
    for i in 0.. {
        let name = format!("{prefix}{i}.hot");
        if let Some(first) = seen.insert(low(&name), name.clone()) {
            return (first, name);
        }
    }
    unreachable!()
}

/// The write path and the name cache (issue 15's write cases, issue 16 items 7 and 8):
///
/// * `unsubscribe_name_100000_exclusions`: one `unsubscribe_name` of a new name, after 100,000
///   distinct names were unsubscribed from one glob subscription (issue 16.7: 98.6 s for the
///   100,000 calls before, each copying the exclusion list).
/// * `two_colliding_names` / `two_names`: one event on each of two names listened only through
///   21 glob subscriptions (an evented do-nothing subscriber each), the names sharing a set of the
///   name cache (`colliding_names`) or not (issue 16.8: 2,666 against 175 ns per event before).
/// * `glob_subscribe_unsubscribe_full_cache`: a glob subscription and its unsubscription on a
///   notifier whose pattern cache is full (1,024 names instrumented) after 16 more threads used it.
/// * `subscribe_unsubscribe_100000`: one exact subscribe + unsubscribe pair with 100,000 other
///   exact subscriptions present (issue 15: 12.5 ms before).
fn registry(c: &mut Criterion) {
    let mut group = c.benchmark_group("registry");

    let notifier = Notifier::new();
    let _glob = notifier.subscribe(
        notify_core::Pattern::glob("*.excluded").expect("valid glob"),
        Subscriber::evented(NoopEvented),
    );
    for i in 0..100_000 {
        notifier.unsubscribe_name(&format!("{i}.excluded"));
    }
    let mut next = 100_000_u64;
    group.bench_function("unsubscribe_name_100000_exclusions", |b| {
        b.iter(|| {
            next += 1;
            notifier.unsubscribe_name(black_box(&format!("{next}.excluded")))
        });
    });
    drop(notifier);

    let notifier = Notifier::new();
    let _globs: Vec<_> = (0..21)
        .map(|i| {
            let glob = notify_core::Pattern::glob(&format!("*{}.hot", ["", "0", "1"][i % 3])).expect("valid glob");
            notifier.subscribe(glob, Subscriber::evented(NoopEvented))
        })
        .collect();
    let (a, b_name) = colliding_names("collide");
    group.bench_function("two_colliding_names", |b| {
        b.iter(|| {
            notifier.instrument(black_box(a.as_str()), Payload::new, |_| {});
            notifier.instrument(black_box(b_name.as_str()), Payload::new, |_| {});
        });
    });
    let c_name = "apart0.hot".to_owned();
    let low = |name: &str| notify_core::__private::name_cache_hash(name) & 0xffff;
    let d_name = (1..)
        .map(|i| format!("apart{i}.hot"))
        .find(|n| low(n) & 0xff != low(&c_name) & 0xff)
        .expect("a name of another set");
    group.bench_function("two_names", |b| {
        b.iter(|| {
            notifier.instrument(black_box(c_name.as_str()), Payload::new, |_| {});
            notifier.instrument(black_box(d_name.as_str()), Payload::new, |_| {});
        });
    });
    drop((_globs, notifier));

    let fixture = fixture();
    let notifier = &fixture.notifier;
    let _cached = notifier.subscribe(
        notify_core::Pattern::glob("*.cached").expect("valid glob"),
        Subscriber::evented(NoopEvented),
    );
    for i in 0..4096 {
        notifier.instrument(&format!("{i}.cached"), Payload::new, |_| {});
    }
    std::thread::scope(|scope| {
        for t in 0..16 {
            scope.spawn(move || notifier.instrument(&format!("{t}.cached"), Payload::new, |_| {}));
        }
    });
    let glob = notify_core::Pattern::glob("*.pair").expect("valid glob");
    group.bench_function("glob_subscribe_unsubscribe_full_cache", |b| {
        b.iter(|| {
            let subscription = notifier.subscribe(black_box(glob.clone()), Subscriber::evented(NoopEvented));
            subscription.unsubscribe().expect("just subscribed");
        });
    });

    let notifier = many_exact(100_000);
    group.sample_size(10);
    group.bench_function("subscribe_unsubscribe_100000", |b| {
        b.iter(|| subscribe_unsubscribe(&notifier));
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = config();
    targets = as_notifications, registry, peers, clock
}
criterion_main!(benches);
