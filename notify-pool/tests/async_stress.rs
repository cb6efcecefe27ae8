//! A bounded stress run (about 2 s) with exact accounting: subscription churn, two producers,
//! mailboxes of every overflow policy and a fan-out group, flushes, and a shutdown racing the
//! producers. Every event handed to the pool ends as exactly one of delivered, dropped, rejected
//! or abandoned: `delivered + dropped + rejected + abandoned == published`, exactly.
//!
//! "Published" is counted independently of the pool: each async subscriber is registered in the
//! same registry change as a synchronous counter with the same pattern (and removed with it), so
//! every event reaches both or neither.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use notify_core::{Event, Notifier, Pattern, Payload, Subscriber, Subscription};
use notify_pool::{AsyncHandle, AsyncOptions, Overflow, WorkerPool};

/// One async subscriber (or fan-out member) with its counters.
struct Tracked {
    published: Arc<AtomicU64>,
    delivered: Arc<AtomicU64>,
    handle: AsyncHandle,
    /// How many callbacks one published event makes (1; the group's member count for a group).
    per_event: u64,
}

fn counter(count: &Arc<AtomicU64>) -> impl Fn(&Event) + Send + Sync + 'static {
    let count = count.clone();
    move |_: &Event| {
        count.fetch_add(1, Ordering::Relaxed);
    }
}

/// Subscribes one tracked async subscriber with `options` next to its synchronous counter.
fn subscribe(pool: &WorkerPool, notifier: &Notifier, options: AsyncOptions) -> (Tracked, Vec<Subscription>) {
    let published = Arc::new(AtomicU64::new(0));
    let delivered = Arc::new(AtomicU64::new(0));
    let (registered, handle) = pool.mailbox(options, counter(&delivered)).expect("mailbox");
    let counting = Subscriber::event(counter(&published));
    let pattern = Pattern::glob("*.stress").expect("pattern");
    let subscriptions = notifier.subscribe_all([(pattern.clone(), registered), (pattern, counting)]);
    let tracked = Tracked {
        published,
        delivered,
        handle,
        per_event: 1,
    };
    (tracked, subscriptions)
}

const POLICIES: [Overflow; 3] = [Overflow::DropNewest, Overflow::DropOldest, Overflow::Block];

#[test]
fn r16_stress_churn_flush_and_shutdown_race_account_exactly() {
    let pool = WorkerPool::builder().threads(2).build();
    let notifier = Notifier::new();
    let stop = Arc::new(AtomicBool::new(false));
    let tracked = Arc::new(Mutex::new(Vec::new()));

    // A fan-out group, tracked as one subscriber whose deliveries count once per member.
    let group_published = Arc::new(AtomicU64::new(0));
    let group_delivered = Arc::new(AtomicU64::new(0));
    let members = 40;
    let fanout = pool.subscribe_fanout(
        &notifier,
        Pattern::glob("*.stress").unwrap(),
        AsyncOptions::new().capacity(8),
        (0..members).map(|_| counter(&group_delivered)),
    );
    let group_counter = notifier.subscribe(
        Pattern::glob("*.stress").unwrap(),
        Subscriber::event(counter(&group_published)),
    );

    let started = Instant::now();
    let producers: Vec<_> = (0..2)
        .map(|_| {
            let notifier = notifier.clone();
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    notifier.instrument("run.stress", Payload::new, |_| ());
                }
            })
        })
        .collect();
    let churn = {
        let (pool, notifier, stop, tracked) = (pool.clone(), notifier.clone(), stop.clone(), tracked.clone());
        std::thread::spawn(move || {
            let mut round = 0_usize;
            while !stop.load(Ordering::Relaxed) {
                let options = AsyncOptions::new()
                    .capacity(1 + round % 16)
                    .overflow(POLICIES[round % 3]);
                let options = if round.is_multiple_of(50) {
                    options.dedicated()
                } else {
                    options
                };
                let (t, subscriptions) = subscribe(&pool, &notifier, options);
                std::thread::sleep(Duration::from_micros(200));
                if !round.is_multiple_of(4) {
                    // Most go away again (the rest stay until the end).
                    notifier.unsubscribe_all(&subscriptions);
                    t.handle.close();
                }
                tracked.lock().unwrap().push(t);
                round += 1;
            }
        })
    };
    // Flushes while everything runs, then the shutdown races the producers and the churn.
    while started.elapsed() < Duration::from_millis(1200) {
        assert!(pool.flush_timeout(Duration::from_secs(30)), "flush timed out");
    }
    let report = pool.shutdown(Duration::from_millis(20));
    std::thread::sleep(Duration::from_millis(100));
    stop.store(true, Ordering::Relaxed);
    for producer in producers {
        producer.join().unwrap();
    }
    churn.join().unwrap();

    let mut tracked = std::mem::take(&mut *tracked.lock().unwrap());
    for handle in fanout.members() {
        tracked.push(Tracked {
            published: group_published.clone(),
            delivered: Arc::new(AtomicU64::new(0)),
            handle: handle.clone(),
            per_event: 1,
        });
    }
    let published: u64 = tracked
        .iter()
        .map(|t| t.published.load(Ordering::Relaxed) * t.per_event)
        .sum();
    let delivered: u64 = tracked.iter().map(|t| t.delivered.load(Ordering::Relaxed)).sum::<u64>()
        + group_delivered.load(Ordering::Relaxed);
    let dropped: u64 = tracked.iter().map(|t| t.handle.dropped()).sum();
    let rejected = pool.rejected();
    assert!(published > 10_000, "a real load: {published} published");
    assert!(rejected > 0, "the shutdown raced the producers");
    assert_eq!(
        delivered + dropped + rejected + report.abandoned,
        published,
        "delivered {delivered} + dropped {dropped} + rejected {rejected} + abandoned {} != published {published}",
        report.abandoned
    );
    assert_eq!(report.delivered, delivered, "the pool's own count of callbacks");
    assert_eq!(pool.pending(), 0);
    let _ = group_counter.unsubscribe();
}
