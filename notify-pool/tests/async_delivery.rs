//! Async delivery cases A1, A2, A5 and A6 (shared/cases/async.md). A3 and A4 measure the whole
//! process (CPU ticks, thread count) and live in files of their own, so no other test runs beside
//! them.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

mod support;

use support::{check_order, field, publish, quiet_panics, recorder, within, Seen};

use notify_core::{Event, Notifier, Pattern};
use notify_pool::{AsyncFailure, AsyncFailurePolicy, AsyncOptions, AsyncSubscription, Overflow, WorkerPool};

/// One subscriber per `seen` on `name`: a third with `small` mailboxes dropping the newest, a third
/// with `small` mailboxes dropping the oldest (so gaps really happen), a third with room for `room`.
fn mixed_subscribers(
    pool: &WorkerPool,
    notifier: &Notifier,
    name: &'static str,
    seen: &[Seen],
    small: usize,
    room: usize,
) -> Vec<AsyncSubscription> {
    pool.subscribe_all(
        notifier,
        seen.iter().enumerate().map(|(i, s)| {
            let options = match i % 3 {
                0 => AsyncOptions::new().capacity(small).overflow(Overflow::DropNewest),
                1 => AsyncOptions::new().capacity(small).overflow(Overflow::DropOldest),
                _ => AsyncOptions::new().capacity(room),
            };
            (Pattern::exact(name), options, recorder(s))
        }),
    )
}

/// A1, one producer. The case asks for 1,000,000 events x 1,000 subscribers (10^9 deliveries);
/// this runs 1,000 x 1,000 (10^6 deliveries) so it finishes in seconds in a debug build. A third
/// of the subscribers have 4-event mailboxes dropping the newest, a third 4-event mailboxes
/// dropping the oldest, so gaps really happen.
#[test]
fn a1_one_producer_order_with_exact_drop_counts() {
    const SUBSCRIBERS: usize = 1_000;
    const EVENTS: u64 = 1_000;
    let pool = WorkerPool::builder().threads(2).build();
    let notifier = Notifier::new();
    let seen: Vec<Seen> = (0..SUBSCRIBERS).map(|_| Seen::default()).collect();
    let subs = mixed_subscribers(&pool, &notifier, "a1.one", &seen, 4, EVENTS as usize);
    for n in 0..EVENTS {
        publish(&notifier, "a1.one", 0, n);
    }
    pool.flush();
    let mut total_dropped = 0;
    for (sub, seen) in subs.iter().zip(&seen) {
        check_order(&seen.lock().unwrap(), 1, EVENTS as i64, sub.dropped());
        total_dropped += sub.dropped();
    }
    // Subscribers with room for every event lose none.
    assert!(subs.iter().skip(2).step_by(3).all(|s| s.dropped() == 0));
    assert_eq!(pool.delivered() + total_dropped, SUBSCRIBERS as u64 * EVENTS);
    assert_eq!(pool.pending(), 0);
}

/// A1, two producers on two threads publishing interleaved sequences into the same subscribers.
#[test]
fn a1_two_producers_each_sequence_in_order() {
    const SUBSCRIBERS: usize = 300;
    const EVENTS: u64 = 1_000;
    let pool = WorkerPool::builder().threads(2).build();
    let notifier = Notifier::new();
    let seen: Vec<Seen> = (0..SUBSCRIBERS).map(|_| Seen::default()).collect();
    let subs = mixed_subscribers(&pool, &notifier, "a1.two", &seen, 8, 2 * EVENTS as usize);
    std::thread::scope(|scope| {
        for producer in 0..2 {
            let notifier = &notifier;
            scope.spawn(move || {
                for n in 0..EVENTS {
                    publish(notifier, "a1.two", producer, n);
                }
            });
        }
    });
    pool.flush();
    for (sub, seen) in subs.iter().zip(&seen) {
        check_order(&seen.lock().unwrap(), 2, EVENTS as i64, sub.dropped());
    }
    assert!(subs.iter().skip(2).step_by(3).all(|s| s.dropped() == 0));
}

/// A2: a subscriber is never invoked concurrently with itself, under 4 producers and 4 workers.
#[test]
fn a2_never_two_at_once() {
    const PRODUCERS: u64 = 4;
    const EVENTS: u64 = 200;
    let pool = WorkerPool::builder().threads(4).batch(2).build();
    let notifier = Notifier::new();
    let overlaps = Arc::new(AtomicU64::new(0));
    let mut counters = Vec::new();
    for _ in 0..4 {
        let inside = Arc::new(AtomicBool::new(false));
        let count = Arc::new(AtomicU64::new(0));
        let (o, c) = (overlaps.clone(), count.clone());
        pool.subscribe(
            &notifier,
            "a2",
            AsyncOptions::new().capacity(1 << 20),
            move |_: &Event| {
                if inside.swap(true, Ordering::SeqCst) {
                    o.fetch_add(1, Ordering::SeqCst);
                }
                std::thread::sleep(Duration::from_micros(50));
                c.fetch_add(1, Ordering::SeqCst);
                inside.store(false, Ordering::SeqCst);
            },
        );
        counters.push(count);
    }
    std::thread::scope(|scope| {
        for producer in 0..PRODUCERS {
            let notifier = &notifier;
            scope.spawn(move || {
                for n in 0..EVENTS {
                    publish(notifier, "a2", producer, n);
                }
            });
        }
    });
    pool.flush();
    assert_eq!(
        overlaps.load(Ordering::SeqCst),
        0,
        "a callback ran while another was inside"
    );
    for count in &counters {
        assert_eq!(count.load(Ordering::SeqCst), PRODUCERS * EVENTS);
    }
}

/// A5: a panicking subscriber does not kill a worker: everyone else, and (policy `Keep`) that
/// subscriber's next events, are still delivered; each panic is reported exactly once. Policy
/// `Detach` stops delivering to it after its first panic.
#[test]
fn a5_panicking_subscriber_keeps_workers_alive() {
    quiet_panics();
    const EVENTS: u64 = 300;
    let failures = Arc::new(Mutex::new(Vec::<AsyncFailure>::new()));
    let sink = failures.clone();
    // One worker: if a panic killed it, nothing after the first panic would be delivered.
    let pool = WorkerPool::builder()
        .threads(1)
        .failure_hook(move |f: &AsyncFailure| sink.lock().unwrap().push(f.clone()))
        .build();
    let notifier = Notifier::new();
    let kept_seen = Arc::new(AtomicU64::new(0));
    let k = kept_seen.clone();
    let kept = pool.subscribe(
        &notifier,
        "a5",
        AsyncOptions::new().capacity(1 << 20).named("kept"),
        move |e: &Event| {
            k.fetch_add(1, Ordering::SeqCst);
            if field(e, "n") % 3 == 0 {
                panic!("a5: every third event");
            }
        },
    );
    let detached_seen = Arc::new(AtomicU64::new(0));
    let d = detached_seen.clone();
    let detached = pool.subscribe(
        &notifier,
        "a5",
        AsyncOptions::new()
            .capacity(1 << 20)
            .on_failure(AsyncFailurePolicy::Detach)
            .named("detached"),
        move |e: &Event| {
            d.fetch_add(1, Ordering::SeqCst);
            if field(e, "n") == 10 {
                panic!("a5: once");
            }
        },
    );
    let healthy_seen = Arc::new(AtomicU64::new(0));
    let h = healthy_seen.clone();
    pool.subscribe(
        &notifier,
        "a5",
        AsyncOptions::new().capacity(1 << 20),
        move |_: &Event| {
            h.fetch_add(1, Ordering::SeqCst);
        },
    );
    for n in 0..EVENTS {
        publish(&notifier, "a5", 0, n);
    }
    pool.flush();
    assert_eq!(healthy_seen.load(Ordering::SeqCst), EVENTS);
    assert_eq!(
        kept_seen.load(Ordering::SeqCst),
        EVENTS,
        "kept: every event, panics included"
    );
    assert!(!kept.is_closed());
    assert_eq!(
        detached_seen.load(Ordering::SeqCst),
        11,
        "detached after its panic on event 10"
    );
    assert!(detached.is_closed());
    assert_eq!(detached.dropped(), EVENTS - 11);
    let failures = failures.lock().unwrap();
    let kept_reports = failures.iter().filter(|f| f.subscriber() == "kept").count() as u64;
    assert_eq!(kept_reports, EVENTS.div_ceil(3), "one report per panic");
    let detach_reports: Vec<_> = failures.iter().filter(|f| f.subscriber() == "detached").collect();
    assert_eq!(detach_reports.len(), 1);
    assert!(detach_reports[0].detached());
    assert_eq!(detach_reports[0].message(), "a5: once");
    assert_eq!(detach_reports[0].event(), "a5");
    assert_eq!(pool.pending(), 0);
}

/// Subscribes `n` counting subscribers to `name`; the last of `expected` deliveries signals `done`.
fn counting_subscribers(
    pool: &WorkerPool,
    notifier: &Notifier,
    name: &'static str,
    n: usize,
    expected: u64,
) -> mpsc::Receiver<()> {
    let (done, finished) = mpsc::channel();
    let done = Mutex::new(done);
    let count = Arc::new(AtomicU64::new(0));
    let done = Arc::new(done);
    for _ in 0..n {
        let (count, done) = (count.clone(), done.clone());
        pool.subscribe(notifier, name, AsyncOptions::new(), move |_: &Event| {
            if count.fetch_add(1, Ordering::SeqCst) + 1 == expected {
                let _ = done.lock().unwrap().send(());
            }
        });
    }
    finished
}

/// A6: a subscriber that blocks holds one worker, not the pool: with 2 workers, 100 other
/// subscribers get all their events while it is blocked. On a 1-worker pool, the same blocking
/// subscriber on a dedicated thread leaves the worker free. (The blocker waits on a gate rather
/// than sleeping 1 s, so the test does not depend on timing; the 60 s bound only turns a hang
/// into a failure.)
#[test]
fn a6_blocking_subscriber_stalls_at_most_one_worker() {
    for (threads, options) in [(2, AsyncOptions::new()), (1, AsyncOptions::new().dedicated())] {
        let pool = WorkerPool::builder().threads(threads).build();
        let notifier = Notifier::new();
        let (release, gate) = mpsc::channel::<()>();
        let gate = Mutex::new(gate);
        let blocked_calls = Arc::new(AtomicU64::new(0));
        let b = blocked_calls.clone();
        pool.subscribe(&notifier, "a6", options.clone(), move |_: &Event| {
            b.fetch_add(1, Ordering::SeqCst);
            gate.lock().unwrap().recv().expect("released");
        });
        let finished = counting_subscribers(&pool, &notifier, "a6", 100, 100 * 10);
        for n in 0..10 {
            publish(&notifier, "a6", 0, n);
        }
        finished
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("others stalled behind the blocker ({threads} workers, {options:?})"));
        // The blocker's worker may not have picked up its first event yet: wait until it has.
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while blocked_calls.load(Ordering::SeqCst) == 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "the blocker never received its first event"
            );
            std::thread::yield_now();
        }
        assert_eq!(
            blocked_calls.load(Ordering::SeqCst),
            1,
            "the blocker is still inside its first event"
        );
        for _ in 0..10 {
            release.send(()).unwrap();
        }
        pool.flush();
        assert_eq!(blocked_calls.load(Ordering::SeqCst), 10);
        let report = pool.shutdown(Duration::from_secs(10));
        assert_eq!((report.delivered, report.abandoned), (1010, 0));
    }
}

/// Regression: a publisher blocked on a full `Overflow::Block` mailbox is released when the
/// subscriber is detached after a panic (`AsyncFailurePolicy::Detach`), its event counted as dropped, and
/// `flush` returns. Before the fix, detaching emptied the queue but woke nobody: the publisher and
/// every later `flush` waited forever.
#[test]
fn a5_detach_releases_a_blocked_publisher() {
    quiet_panics();
    let pool = WorkerPool::builder()
        .threads(1)
        .failure_hook(|_: &AsyncFailure| {})
        .build();
    let notifier = Notifier::new();
    let (release, gate) = mpsc::channel::<()>();
    let gate = Mutex::new(gate);
    let calls = Arc::new(AtomicU64::new(0));
    let c = calls.clone();
    let sub = pool.subscribe(
        &notifier,
        "a5.block",
        AsyncOptions::new()
            .capacity(1)
            .overflow(Overflow::Block)
            .on_failure(AsyncFailurePolicy::Detach),
        move |_: &Event| {
            c.fetch_add(1, Ordering::SeqCst);
            gate.lock().unwrap().recv().expect("released");
            panic!("a5: detach me");
        },
    );
    // Event 0 is taken by the worker (which waits at the gate), event 1 fills the mailbox, event
    // 2 blocks the publisher.
    let n = notifier.clone();
    let publisher = std::thread::spawn(move || {
        for i in 0..3 {
            publish(&n, "a5.block", 0, i);
        }
    });
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !(calls.load(Ordering::SeqCst) == 1 && sub.queued() == 1 && pool.pending() == 3) {
        assert!(
            std::time::Instant::now() < deadline,
            "the publisher never reached the full mailbox"
        );
        std::thread::yield_now();
    }
    // Give the publisher the moment it needs to go from "accepted" to "blocked" (not a timing
    // assertion: the outcome is the same either way, only the path differs).
    std::thread::sleep(Duration::from_millis(50));
    assert!(!publisher.is_finished(), "event 2 waits for room");
    release.send(()).unwrap();
    within("the blocked publisher", 60, move || publisher.join().unwrap());
    let p = pool.clone();
    within("flush after a detach", 60, move || p.flush());
    assert!(sub.is_closed());
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(
        sub.dropped(),
        2,
        "event 1 discarded by the detach, event 2 refused by the closed mailbox"
    );
    assert_eq!((pool.delivered(), pool.pending()), (1, 0));
    let report = pool.shutdown(Duration::from_secs(10));
    assert_eq!((report.delivered, report.abandoned, report.drained), (1, 0, true));
}

/// The threads of this process whose name starts with `prefix` (names are cut at 15 bytes).
fn threads_named(prefix: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task")
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .filter(|name| name.starts_with(prefix))
        .count()
}

/// Regression: the last `WorkerPool` clone, held by a callback's closure, is dropped on the pool's
/// own worker after the subscription went away. The drop used to drain on that worker, waiting
/// forever for the other subscriber's event, which only that worker could deliver. Now the other
/// event is delivered and every pool thread (the hand-off thread included) ends.
#[test]
fn a4_last_clone_dropped_on_a_worker_shuts_down() {
    let pool = WorkerPool::builder().threads(1).name("a4lastdrop").build();
    let notifier = Notifier::new();
    let (release, gate) = mpsc::channel::<()>();
    let gate = Mutex::new(gate);
    let keep = pool.clone();
    let holder = pool.subscribe(&notifier, "a4.drop", AsyncOptions::new(), move |_: &Event| {
        let _ = &keep;
        gate.lock().unwrap().recv().expect("released");
    });
    let (done, other_done) = mpsc::channel();
    let done = Mutex::new(done);
    let other_calls = Arc::new(AtomicU64::new(0));
    let c = other_calls.clone();
    let other = pool.subscribe(&notifier, "a4.drop", AsyncOptions::new(), move |_: &Event| {
        c.fetch_add(1, Ordering::SeqCst);
        let _ = done.lock().unwrap().send(());
    });
    publish(&notifier, "a4.drop", 0, 0);
    // The worker is inside the holder's callback; drop everything but the closure's clone.
    drop((holder, other, notifier, pool));
    release.send(()).unwrap();
    other_done
        .recv_timeout(Duration::from_secs(60))
        .expect("the other subscriber's event was never delivered (deadlock)");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while threads_named("a4lastdrop") > 0 {
        assert!(std::time::Instant::now() < deadline, "the pool's threads never ended");
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(other_calls.load(Ordering::SeqCst), 1);
}

/// Regression: `shutdown` called from a callback of the same pool used to wait for that callback
/// and report it abandoned (`delivered: 0, abandoned: 1`), and cache that wrong report. It now
/// panics at once with a message naming the problem (reported as the callback's panic), and a
/// shutdown from another thread reports exactly.
#[test]
fn a4_shutdown_from_a_callback_panics() {
    quiet_panics();
    let failures = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = failures.clone();
    let pool = WorkerPool::builder()
        .threads(1)
        .name("a4inside")
        .failure_hook(move |f: &AsyncFailure| sink.lock().unwrap().push(f.message().to_owned()))
        .build();
    let notifier = Notifier::new();
    let p = pool.clone();
    pool.subscribe(&notifier, "a4.inside", AsyncOptions::new(), move |_: &Event| {
        p.shutdown(Duration::from_millis(100));
    });
    publish(&notifier, "a4.inside", 0, 0);
    let p = pool.clone();
    within("flush", 60, move || p.flush());
    assert_eq!(
        *failures.lock().unwrap(),
        [
            "notify: WorkerPool::shutdown called from a callback of pool `a4inside` (on its own thread): it \
          would wait for that callback; shut the pool down from another thread"
        ]
    );
    assert!(!pool.is_shut_down());
    let report = pool.shutdown(Duration::from_secs(10));
    assert_eq!((report.delivered, report.abandoned, report.drained), (1, 0, true));
}

/// Regression: a dedicated subscription's thread ends, after delivering what was queued, when the
/// subscription is unsubscribed or closed (it used to live until the pool shut down: 200 rounds of
/// subscribe/unsubscribe left 200 threads). Its deliveries still count.
#[test]
fn a6_dedicated_thread_ends_with_its_subscription() {
    const ROUNDS: u64 = 50;
    let pool = WorkerPool::builder().threads(1).name("a6ded").build();
    let notifier = Notifier::new();
    let count = Arc::new(AtomicU64::new(0));
    for round in 0..ROUNDS {
        let c = count.clone();
        let sub = pool.subscribe(
            &notifier,
            "a6.ded",
            AsyncOptions::new().dedicated(),
            move |_: &Event| {
                c.fetch_add(1, Ordering::SeqCst);
            },
        );
        publish(&notifier, "a6.ded", 0, round);
        publish(&notifier, "a6.ded", 0, round);
        if round % 2 == 0 {
            sub.unsubscribe().unwrap();
        } else {
            sub.handle().close();
        }
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while threads_named("a6ded-dedi") > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "{} dedicated threads still running",
            threads_named("a6ded-dedi")
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    let p = pool.clone();
    within("flush", 60, move || p.flush());
    // Closed subscriptions still get what was queued before the close: every event arrived.
    assert_eq!(count.load(Ordering::SeqCst), 2 * ROUNDS);
    assert_eq!((pool.delivered(), pool.pending()), (2 * ROUNDS, 0));
    assert_eq!(threads_named("a6ded-0"), 1, "the shared worker is unaffected");
    let report = pool.shutdown(Duration::from_secs(10));
    assert_eq!(
        (report.delivered, report.abandoned, report.drained),
        (2 * ROUNDS, 0, true)
    );
}

/// Regression: a callback on pool A publishing into a full `Overflow::Block` mailbox of pool B does
/// not block (it used to, only same-pool publishers were exempt, so two pools publishing into each
/// other deadlocked): the event is dropped as with `DropNewest` and counted.
#[test]
fn a6_block_from_another_pools_worker_drops_instead() {
    let a = WorkerPool::builder().threads(1).build();
    let b = WorkerPool::builder().threads(1).build();
    let (na, nb) = (Notifier::new(), Notifier::new());
    let (release, gate) = mpsc::channel::<()>();
    let gate = Mutex::new(gate);
    let b_calls = Arc::new(AtomicU64::new(0));
    let c = b_calls.clone();
    let b_sub = b.subscribe(
        &nb,
        "b",
        AsyncOptions::new().capacity(1).overflow(Overflow::Block),
        move |_: &Event| {
            c.fetch_add(1, Ordering::SeqCst);
            gate.lock().unwrap().recv().expect("released");
        },
    );
    let nb2 = nb.clone();
    a.subscribe(&na, "a", AsyncOptions::new(), move |_: &Event| {
        for n in 0..3 {
            publish(&nb2, "b", 1, n);
        }
    });
    // B's worker takes event 0 and waits at the gate: B's mailbox is empty, with room for 1.
    publish(&nb, "b", 0, 0);
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while b_calls.load(Ordering::SeqCst) == 0 {
        assert!(std::time::Instant::now() < deadline, "B never took its first event");
        std::thread::yield_now();
    }
    // A's callback publishes 3 events into B: the first fills the mailbox, the other two would
    // block A's worker.
    publish(&na, "a", 0, 0);
    let pa = a.clone();
    within("pool A's flush", 60, move || pa.flush());
    assert_eq!((b_sub.queued(), b_sub.dropped()), (1, 2));
    for _ in 0..2 {
        release.send(()).unwrap();
    }
    b.flush();
    assert_eq!(b_calls.load(Ordering::SeqCst), 2);
    assert_eq!((a.delivered(), b.delivered(), b.pending()), (1, 2, 0));
}

/// Regression: `flush` called from a callback of the same pool used to wait for that callback
/// forever (then, issue 16, it panicked). Issue 33.4: on any pool's thread it returns false at
/// once, without waiting and without a panic; the pool goes on.
#[test]
fn a5_flush_from_a_callback_returns_false_at_once() {
    let failures = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = failures.clone();
    let pool = WorkerPool::builder()
        .threads(1)
        .name("a5flush")
        .failure_hook(move |f: &AsyncFailure| sink.lock().unwrap().push(f.message().to_owned()))
        .build();
    let notifier = Notifier::new();
    let p = pool.clone();
    let flushed = Arc::new(Mutex::new(Vec::new()));
    let f = flushed.clone();
    let sub = pool.subscribe(&notifier, "a5.flush", AsyncOptions::new(), move |_: &Event| {
        f.lock()
            .unwrap()
            .push((p.flush(), p.flush_timeout(Duration::from_secs(60))));
    });
    publish(&notifier, "a5.flush", 0, 0);
    let p = pool.clone();
    assert!(within("flush", 60, move || p.flush()));
    assert_eq!(*flushed.lock().unwrap(), [(false, false)]);
    assert!(failures.lock().unwrap().is_empty());
    assert!(!sub.is_closed());
    let report = pool.shutdown(Duration::from_secs(10));
    assert_eq!((report.delivered, report.abandoned, report.drained), (1, 0, true));
}
