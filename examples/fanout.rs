//! Subscriptions x 10 events on the worker pool against one thread per subscription, printed as
//! CSV: `subscriptions,pool_seconds,thread_per_subscription_seconds,pool_bytes_per_subscription`.
//!
//! ```text
//! cargo run --release --example fanout              # 1 .. 100,000 subscriptions
//! cargo run --release --example fanout -- 1000000   # up to 1,000,000 (threads stop at 10,000)
//! ```
//!
//! `pool_seconds`: from the first publish until every subscription got its 10 events
//! ([`WorkerPool::flush`] returned), with the N subscriptions behind one registry subscription
//! ([`WorkerPool::subscribe_fanout`]). `thread_per_subscription_seconds`: the same with one OS
//! thread per subscription fed by a channel (spawning excluded; empty above 10,000, where spawning
//! fails near 16,000 threads on this kind of machine). `pool_bytes_per_subscription`: heap bytes
//! still allocated per subscription after subscribing, before any event (the idle cost), counted
//! by this example's global allocator. Set-up times go to stderr.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::{Duration, Instant};

use notify_app::baseline::ThreadPerSubscription;
use notify_core::{Event, Notifier, Payload};
use notify_pool::{AsyncOptions, WorkerPool};

/// The system allocator, keeping a running total of live heap bytes.
struct Counting;

static LIVE_BYTES: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so `System`'s
// guarantees hold; the only addition is a relaxed counter update, which cannot fail or allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE_BYTES.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: forwarded as received (see the impl).
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE_BYTES.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: forwarded as received (see the impl).
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE_BYTES.fetch_add(new_size as isize - layout.size() as isize, Ordering::Relaxed);
        // SAFETY: forwarded as received (see the impl).
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const EVENTS: u64 = 10;
const THREADS_UP_TO: usize = 10_000;

fn publish(notifier: &Notifier) {
    for _ in 0..EVENTS {
        notifier.instrument("fanout.example", Payload::new, |_| ());
    }
}

fn pool_row(pool: &WorkerPool, n: usize) -> (f64, f64) {
    let notifier = Notifier::new();
    let before = LIVE_BYTES.load(Ordering::Relaxed);
    let started = Instant::now();
    let fanout = pool.subscribe_fanout(
        &notifier,
        "fanout.example",
        AsyncOptions::new(),
        (0..n).map(|_| {
            |e: &Event| {
                std::hint::black_box(e.id());
            }
        }),
    );
    let subscribed = started.elapsed();
    let bytes = (LIVE_BYTES.load(Ordering::Relaxed) - before) as f64 / n as f64;
    let started = Instant::now();
    publish(&notifier);
    pool.flush();
    let delivered = started.elapsed();
    let dropped: u64 = fanout.members().iter().map(|m| m.dropped()).sum();
    assert_eq!(dropped, 0, "a mailbox dropped events");
    eprintln!(
        "pool: {n} subscriptions subscribed in {:.3} s",
        subscribed.as_secs_f64()
    );
    (delivered.as_secs_f64(), bytes)
}

fn threads_row(n: usize) -> f64 {
    let started = Instant::now();
    let threads = ThreadPerSubscription::start(n, EVENTS, |e: &Event| {
        std::hint::black_box(e.id());
    });
    let notifier = Notifier::new();
    let subscriptions = threads.subscribe(&notifier, "fanout.example");
    eprintln!(
        "threads: {n} spawned and subscribed in {:.3} s",
        started.elapsed().as_secs_f64()
    );
    let started = Instant::now();
    threads.round(|| publish(&notifier));
    let delivered = started.elapsed();
    notifier.unsubscribe_all(&subscriptions);
    drop(notifier);
    threads.stop();
    delivered.as_secs_f64()
}

fn main() {
    let max: usize = match std::env::args().nth(1) {
        Some(arg) => arg.parse().expect("usage: fanout [MAX_SUBSCRIPTIONS]"),
        None => 100_000,
    };
    let pool = WorkerPool::new();
    eprintln!("worker pool: {} threads", pool.threads());
    println!("subscriptions,pool_seconds,thread_per_subscription_seconds,pool_bytes_per_subscription");
    let mut n = 1;
    while n <= max {
        let (pool_seconds, bytes) = pool_row(&pool, n);
        let threads = if n <= THREADS_UP_TO {
            format!("{:.6}", threads_row(n))
        } else {
            String::new()
        };
        println!("{n},{pool_seconds:.6},{threads},{bytes:.0}");
        n *= 10;
    }
    let report = pool.shutdown(Duration::from_secs(10));
    eprintln!(
        "pool: {} callbacks delivered, {} abandoned",
        report.delivered, report.abandoned
    );
}
