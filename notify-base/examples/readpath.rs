//! The read path's cases in a plain loop, to measure each cache and reclamation mechanism of the
//! instrument path (docs/architecture.md, "The read path, justified") with callgrind, and to time
//! them roughly. Built with notify-base and the facade alone (no `notify-log`, no macros), so a
//! variant of notify-base rebuilds in seconds:
//!
//! ```text
//! cargo build --release -p notify-base --example readpath
//! valgrind --tool=callgrind --callgrind-out-file=/tmp/a.out target/release/examples/readpath timed 1000
//! valgrind --tool=callgrind --callgrind-out-file=/tmp/b.out target/release/examples/readpath timed 11000
//! target/release/examples/readpath timed 2000000 time
//! ```
//!
//! (I(11,000) − I(1,000)) ÷ 10,000 is one call's instructions, set-up excluded. With a third
//! argument `time` the case runs 11 rounds of the given count and prints the median nanoseconds
//! per call, in the thread's CPU time (the time other processes took is left out, not their effect
//! on caches; only a supporting number on a shared machine).
//!
//! The notifier is `benches/notifications.rs`'s `as_notifications` fixture without its ten
//! silenced log subscribers: ten subscribers of each kind on that kind's own name, one timed
//! subscriber on `timed_1.bench`. Cases:
//!
//! * `timed`, `timed_monotonic`, `event_object`, `evented`, `timed_1`: `notifier.instrument(name,
//!   Payload::new, |_| {})` on the kind's name (the bench's cases of the same names);
//!   `unsubscribed` (a name nobody listens to) and `unsubscribed_dynamic` (a runtime `String`).
//! * `unsubscribed_callsite`: a `static Callsite` nobody listens to; `callsite_listened`: a `static
//!   Callsite` with one do-nothing evented subscriber on the global notifier (what
//!   `peers/notify_fn_listened` measures through `#[instrument_event]`); `guard_listened`: the
//!   same callsite through the guard `#[instrument_event]` expands to (`__private::Guard`).
//! * `two_names` / `two_colliding_names`: one event on each of two names listened only through 21
//!   glob subscriptions (`registry/two_names`, `registry/two_colliding_names`).
//! * `subscribe_unsubscribe`: one exact pair on the populated notifier;
//!   `subscribe_unsubscribe_100000`: the pair with 100,000 other exact subscriptions.
//! * `clone_map_100000`: a clone of a `HashMap` of 100,000 names to `Arc`s, what a write would copy
//!   with a plain map instead of the persistent trie (`name_map.rs`).
//! * `dyn_calls_20`: twenty indirect calls of a do-nothing trait object, `evented`'s floor
//!   (`clock/dyn_calls_20`).

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Arc;

use notify_core::context::EventContext;
use notify_core::event::Callsite;
use notify_core::{Event, EventedSubscriber, Notifier, Pattern, Payload, Subscriber};

struct NoopEvented;

impl EventedSubscriber for NoopEvented {
    fn start(&self, _: &str, _: &EventContext, _: &Payload) {}
    fn finish(&self, _: &str, _: &EventContext, _: &Payload) {}
}

/// Subscribers per event name, as in the AS::N benchmark.
const SUBSCRIBERS: usize = 10;

fn fixture() -> Notifier {
    let notifier = Notifier::new();
    for _ in 0..SUBSCRIBERS {
        let _ = notifier.subscribe("timed.bench", Subscriber::timed(|_: &str, _, _, _, _: &Payload| {}));
        let _ = notifier.subscribe(
            "timed_monotonic.bench",
            Subscriber::monotonic(|_: &str, _, _, _, _: &Payload| {}),
        );
        let _ = notifier.subscribe("event_object.bench", Subscriber::event(|_: &Event| {}));
        let _ = notifier.subscribe("evented.bench", Subscriber::evented(NoopEvented));
    }
    let _ = notifier.subscribe("timed_1.bench", Subscriber::timed(|_: &str, _, _, _, _: &Payload| {}));
    notifier
}

/// 21 glob subscriptions over `*.hot` names, as `registry/two_names`' notifier.
fn globs() -> Notifier {
    let notifier = Notifier::new();
    for i in 0..21 {
        let glob = Pattern::glob(&format!("*{}.hot", ["", "0", "1"][i % 3])).expect("valid glob");
        let _ = notifier.subscribe(glob, Subscriber::evented(NoopEvented));
    }
    notifier
}

/// Two names sharing a set of the pattern cache (their cache hashes agree in the low 16 bits).
fn colliding_names() -> (String, String) {
    let low = |name: &str| notify_core::__private::name_cache_hash(name) & 0xffff;
    let mut seen = HashMap::new();
    for i in 0.. {
        let name = format!("collide{i}.hot");
        if let Some(first) = seen.insert(low(&name), name.clone()) {
            return (first, name);
        }
    }
    unreachable!()
}

/// Two names of different sets of the pattern cache.
fn apart_names() -> (String, String) {
    let low = |name: &str| notify_core::__private::name_cache_hash(name) & 0xff;
    let first = "apart0.hot".to_owned();
    let second = (1..)
        .map(|i| format!("apart{i}.hot"))
        .find(|n| low(n) != low(&first))
        .expect("a name of another set");
    (first, second)
}

fn subscribe_unsubscribe(notifier: &Notifier) {
    let subscription = notifier.subscribe(
        black_box("subscribe_unsubscribe.bench"),
        Subscriber::timed(|_: &str, _, _, _, _: &Payload| {}),
    );
    subscription.unsubscribe().expect("just subscribed");
}

trait Callee {
    fn call(&self, args: &(u64, u64));
}

struct NoopCallee;

impl Callee for NoopCallee {
    fn call(&self, _: &(u64, u64)) {}
}

static UNLISTENED: Callsite = Callsite::new("unsubscribed_callsite.readpath");
static LISTENED: Callsite = Callsite::new("callsite_listened.readpath");

#[inline(never)]
fn instrument_named(notifier: &Notifier, name: &str, iterations: u64) {
    for _ in 0..iterations {
        notifier.instrument(black_box(name), Payload::new, |_| {});
    }
}

/// A function as `#[instrument_event]` expands it (no fields): the guard, started on the callsite,
/// finished when it drops.
#[inline(never)]
fn guarded(x: u64) -> u64 {
    let mut guard = notify_core::__private::Guard::new();
    notify_core::__private::Guard::start(&mut guard, &LISTENED, |_| {});
    black_box(x).wrapping_mul(3)
}

#[inline(never)]
fn instrument_two(notifier: &Notifier, (a, b): &(String, String), iterations: u64) {
    for _ in 0..iterations {
        notifier.instrument(black_box(a.as_str()), Payload::new, |_| {});
        notifier.instrument(black_box(b.as_str()), Payload::new, |_| {});
    }
}

/// Runs `iterations` of `case` once.
type Run<'a> = Box<dyn FnMut(u64) + 'a>;

fn main() {
    let mut args = std::env::args().skip(1);
    let case = args.next().unwrap_or_else(|| "timed".into());
    let iterations: u64 = args
        .next()
        .map_or(1_000_000, |n| n.parse().expect("iterations: a number"));
    let time = args.next().as_deref() == Some("time");

    let fixture = fixture();
    let globs = globs();
    let many = Notifier::new();
    let mut map: HashMap<Box<str>, Arc<u64>> = HashMap::new();
    match case.as_str() {
        "subscribe_unsubscribe_100000" => {
            let _ = many.subscribe_all(
                (0..100_000).map(|i| (Pattern::exact(format!("{i}.many")), Subscriber::evented(NoopEvented))),
            );
        }
        "clone_map_100000" => {
            map = (0..100_000)
                .map(|i| (format!("{i}.many").into(), Arc::new(i)))
                .collect()
        }
        "callsite_listened" | "guard_listened" => {
            let _ = notify_core::subscribe(LISTENED.name(), Subscriber::evented(NoopEvented));
        }
        _ => {}
    }
    let callees: Vec<Box<dyn Callee>> = (0..SUBSCRIBERS)
        .map(|_| Box::new(NoopCallee) as Box<dyn Callee>)
        .collect();
    let (colliding, apart) = (colliding_names(), apart_names());
    let dynamic = format!("unsubscribed_dynamic.{}", std::process::id());
    let name = format!("{case}.bench");

    let mut run: Run<'_> = match case.as_str() {
        "unsubscribed_dynamic" => Box::new(|n| instrument_named(&fixture, &dynamic, n)),
        "unsubscribed_callsite" => Box::new(|n| (0..n).for_each(|_| UNLISTENED.instrument(Payload::new, |_| {}))),
        "callsite_listened" => Box::new(|n| (0..n).for_each(|_| LISTENED.instrument(Payload::new, |_| {}))),
        "guard_listened" => Box::new(|n| {
            (0..n).for_each(|_| {
                black_box(guarded(black_box(7)));
            })
        }),
        "two_names" => Box::new(|n| instrument_two(&globs, &apart, n)),
        "two_colliding_names" => Box::new(|n| instrument_two(&globs, &colliding, n)),
        "subscribe_unsubscribe" => Box::new(|n| (0..n).for_each(|_| subscribe_unsubscribe(&fixture))),
        "subscribe_unsubscribe_100000" => Box::new(|n| (0..n).for_each(|_| subscribe_unsubscribe(&many))),
        "clone_map_100000" => Box::new(|n| (0..n).for_each(|_| drop(black_box(map.clone())))),
        "dyn_calls_20" => Box::new(|n| {
            let args = (7_u64, 11_u64);
            for _ in 0..n {
                let (callees, args) = (black_box(&callees), black_box(&args));
                callees.iter().for_each(|c| c.call(args));
                callees.iter().for_each(|c| c.call(args));
            }
        }),
        "timed" | "timed_monotonic" | "event_object" | "evented" | "timed_1" | "unsubscribed" => {
            Box::new(|n| instrument_named(&fixture, &name, n))
        }
        other => panic!("unknown case {other}"),
    };
    if !time {
        run(iterations);
        return;
    }
    run(iterations / 10);
    let mut rounds: Vec<f64> = (0..11)
        .map(|_| {
            let start = on_cpu_ns();
            run(iterations);
            (on_cpu_ns() - start) as f64 / iterations as f64
        })
        .collect();
    rounds.sort_by(f64::total_cmp);
    println!("{case}\t{:.2} ns (median of 11 rounds of {iterations})", rounds[5]);
}

/// Nanoseconds this thread has run on a CPU (`CLOCK_THREAD_CPUTIME_ID`, 64-bit Linux): unlike the
/// wall time, it leaves out the time other processes ran while this one waited, which on a shared
/// machine is most of the noise. The wall time elsewhere.
fn on_cpu_ns() -> u64 {
    #[cfg(all(target_os = "linux", target_pointer_width = "64"))]
    {
        #[repr(C)]
        struct Timespec {
            seconds: i64,
            nanoseconds: i64,
        }
        extern "C" {
            fn clock_gettime(clock: i32, time: *mut Timespec) -> i32;
        }
        const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
        let mut time = Timespec {
            seconds: 0,
            nanoseconds: 0,
        };
        // SAFETY: the C library's `clock_gettime`, declared with its 64-bit Linux signature
        // (`clockid_t` is `int`, `struct timespec` two 64-bit fields); `time` is valid and
        // writable for the call, which keeps no pointer to it.
        let rc = unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut time) };
        assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
        time.seconds as u64 * 1_000_000_000 + time.nanoseconds as u64
    }
    #[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
    {
        static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
        START.get_or_init(std::time::Instant::now).elapsed().as_nanos() as u64
    }
}
