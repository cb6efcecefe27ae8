//! Cases A1, A2, A4 and A5 (shared/cases/async.md) for fan-out groups
//! ([`WorkerPool::subscribe_fanout`]): many members behind one registry subscription, sharing one
//! event log read through a cursor per shard of members. Groups here are large enough to have
//! several shards, so members of different shards run on different workers.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::Duration;

mod support;

use support::{check_order, field, publish, quiet_panics, recorder, Seen};

use notify_core::{Event, Notifier};
use notify_pool::{AsyncFailure, AsyncFailurePolicy, AsyncOptions, Overflow, WorkerPool};

fn recorders(n: usize) -> Vec<Seen> {
    (0..n).map(|_| Seen::default()).collect()
}

/// A1 for a group: 300 members (several shards), two producers on two threads, a capacity large
/// enough that nothing drops: every member sees every event, each producer's in order.
#[test]
fn a1_fanout_order_per_member_two_producers() {
    const MEMBERS: usize = 300;
    const EVENTS: u64 = 2_000;
    let pool = WorkerPool::builder().threads(2).build();
    let notifier = Arc::new(Notifier::new());
    let seen = recorders(MEMBERS);
    let fanout = pool.subscribe_fanout(
        &notifier,
        "a1.fan",
        AsyncOptions::new().capacity(EVENTS as usize * 2),
        seen.iter().map(recorder),
    );
    let producers: Vec<_> = (0..2_u64)
        .map(|p| {
            let notifier = notifier.clone();
            std::thread::spawn(move || (0..EVENTS).for_each(|n| publish(&notifier, "a1.fan", p, n)))
        })
        .collect();
    producers.into_iter().for_each(|t| t.join().unwrap());
    pool.flush();
    for (member, seen) in fanout.members().iter().zip(&seen) {
        assert_eq!(member.dropped(), 0);
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len() as u64, 2 * EVENTS);
        check_order(&seen, 2, EVENTS as i64, 0);
    }
    assert_eq!(pool.pending(), 0);
    assert_eq!(pool.delivered(), MEMBERS as u64 * 2 * EVENTS);
}

/// A1 with overflow: members with an 8-event capacity, dropping the newest or the oldest, some
/// slower than others. Each member's gaps equal its drop counter exactly, and flush leaves nothing
/// pending.
#[test]
fn a1_fanout_exact_drop_counts_under_overflow() {
    const MEMBERS: usize = 200;
    const EVENTS: u64 = 3_000;
    for overflow in [Overflow::DropNewest, Overflow::DropOldest] {
        let pool = WorkerPool::builder().threads(2).build();
        let notifier = Notifier::new();
        let seen = recorders(MEMBERS);
        let fanout = pool.subscribe_fanout(
            &notifier,
            "a1.drop",
            AsyncOptions::new().capacity(8).overflow(overflow),
            seen.iter().enumerate().map(|(i, s)| {
                let record = recorder(s);
                move |e: &Event| {
                    if i % 50 == 0 {
                        std::thread::yield_now();
                    }
                    record(e);
                }
            }),
        );
        for n in 0..EVENTS {
            publish(&notifier, "a1.drop", 0, n);
        }
        pool.flush();
        let mut dropped_total = 0;
        for (member, seen) in fanout.members().iter().zip(&seen) {
            let seen = seen.lock().unwrap();
            check_order(&seen, 1, EVENTS as i64, member.dropped());
            dropped_total += member.dropped();
        }
        assert!(dropped_total > 0, "{overflow:?}: the test must overflow");
        assert_eq!(pool.pending(), 0);
        assert_eq!(pool.delivered() + dropped_total, MEMBERS as u64 * EVENTS);
    }
}

/// Exact drops at a known point: the only worker is held inside member 0's first callback, so the
/// group's one shard holds `capacity` events and the rest overflow, for every member alike.
#[test]
fn a1_fanout_overflow_at_a_known_point() {
    const MEMBERS: usize = 10;
    const CAPACITY: u64 = 4;
    const MORE: u64 = 10;
    for overflow in [Overflow::DropNewest, Overflow::DropOldest] {
        let pool = WorkerPool::builder().threads(1).build();
        let notifier = Notifier::new();
        let gate = Arc::new(Barrier::new(2));
        let seen = recorders(MEMBERS);
        let fanout = pool.subscribe_fanout(
            &notifier,
            "a1.gate",
            AsyncOptions::new().capacity(CAPACITY as usize).overflow(overflow),
            seen.iter().enumerate().map(|(i, s)| {
                let record = recorder(s);
                let gate = gate.clone();
                move |e: &Event| {
                    if i == 0 && field(e, "n") == 0 {
                        gate.wait();
                    }
                    record(e);
                }
            }),
        );
        publish(&notifier, "a1.gate", 0, 0);
        while fanout.members()[0].queued() == 1 {
            std::thread::yield_now();
        }
        // The worker took event 0 and waits at the gate.
        for n in 1..=MORE {
            publish(&notifier, "a1.gate", 0, n);
        }
        assert_eq!(fanout.members()[3].queued(), CAPACITY as usize);
        for member in fanout.members() {
            assert_eq!(member.dropped(), MORE - CAPACITY);
        }
        gate.wait();
        pool.flush();
        let kept: Vec<i64> = match overflow {
            Overflow::DropNewest => (0..=CAPACITY as i64).collect(),
            _ => std::iter::once(0)
                .chain((MORE - CAPACITY + 1) as i64..=MORE as i64)
                .collect(),
        };
        for seen in &seen {
            let got: Vec<i64> = seen.lock().unwrap().iter().map(|s| s.1).collect();
            assert_eq!(got, kept, "{overflow:?}");
        }
        assert_eq!(pool.pending(), 0);
    }
}

/// `Overflow::Block` on a group: the publisher waits for the slowest shard; nothing is lost.
#[test]
fn a1_fanout_block_loses_nothing() {
    const MEMBERS: usize = 130;
    const EVENTS: u64 = 500;
    let pool = WorkerPool::builder().threads(2).build();
    let notifier = Notifier::new();
    let seen = recorders(MEMBERS);
    let fanout = pool.subscribe_fanout(
        &notifier,
        "a1.block",
        AsyncOptions::new().capacity(2).overflow(Overflow::Block),
        seen.iter().map(recorder),
    );
    for n in 0..EVENTS {
        publish(&notifier, "a1.block", 0, n);
    }
    pool.flush();
    for (member, seen) in fanout.members().iter().zip(&seen) {
        assert_eq!(member.dropped(), 0);
        let got: Vec<i64> = seen.lock().unwrap().iter().map(|s| s.1).collect();
        assert_eq!(got, (0..EVENTS as i64).collect::<Vec<_>>());
    }
}

/// A2 for a group: no member is ever invoked twice at once, under 4 producers.
#[test]
fn a2_fanout_never_two_at_once() {
    const MEMBERS: usize = 150;
    const EVENTS: u64 = 300;
    let pool = WorkerPool::builder().threads(2).build();
    let notifier = Arc::new(Notifier::new());
    let overlaps = Arc::new(AtomicU64::new(0));
    let counts: Vec<Arc<AtomicU64>> = (0..MEMBERS).map(|_| Arc::default()).collect();
    pool.subscribe_fanout(
        &notifier,
        "a2.fan",
        AsyncOptions::new().capacity(100_000),
        counts.iter().map(|count| {
            let inside = AtomicBool::new(false);
            let overlaps = overlaps.clone();
            let count = count.clone();
            move |_: &Event| {
                if inside.swap(true, Ordering::SeqCst) {
                    overlaps.fetch_add(1, Ordering::SeqCst);
                }
                std::thread::yield_now();
                count.fetch_add(1, Ordering::SeqCst);
                inside.store(false, Ordering::SeqCst);
            }
        }),
    );
    let producers: Vec<_> = (0..4_u64)
        .map(|p| {
            let notifier = notifier.clone();
            std::thread::spawn(move || (0..EVENTS).for_each(|n| publish(&notifier, "a2.fan", p, n)))
        })
        .collect();
    producers.into_iter().for_each(|t| t.join().unwrap());
    pool.flush();
    assert_eq!(overlaps.load(Ordering::SeqCst), 0);
    for count in &counts {
        assert_eq!(count.load(Ordering::SeqCst), 4 * EVENTS);
    }
}

/// Flush is exact for a group: after each flush every member got exactly what was published
/// before it, round after round.
#[test]
fn a1_fanout_flush_is_exact() {
    const MEMBERS: usize = 100;
    let pool = WorkerPool::builder().threads(2).build();
    let notifier = Notifier::new();
    let counts: Vec<Arc<AtomicU64>> = (0..MEMBERS).map(|_| Arc::default()).collect();
    pool.subscribe_fanout(
        &notifier,
        "flush.fan",
        AsyncOptions::new().capacity(1 << 16),
        counts.iter().map(|count| {
            let count = count.clone();
            move |_: &Event| {
                count.fetch_add(1, Ordering::SeqCst);
            }
        }),
    );
    let mut published = 0;
    for round in 1..=20_u64 {
        for n in 0..round * 7 {
            publish(&notifier, "flush.fan", 0, n);
        }
        published += round * 7;
        pool.flush();
        for count in &counts {
            assert_eq!(count.load(Ordering::SeqCst), published, "round {round}");
        }
        assert_eq!(pool.pending(), 0);
    }
}

/// Closing one member: what was published before still reaches it, what comes after is counted
/// as dropped; the other members are not affected.
#[test]
fn a1_fanout_closed_member_counts_later_events_as_dropped() {
    let pool = WorkerPool::builder().threads(1).build();
    let notifier = Notifier::new();
    let seen = recorders(3);
    let fanout = pool.subscribe_fanout(&notifier, "close.fan", AsyncOptions::new(), seen.iter().map(recorder));
    for n in 0..5 {
        publish(&notifier, "close.fan", 0, n);
    }
    fanout.members()[1].close();
    assert!(fanout.members()[1].is_closed());
    for n in 5..8 {
        publish(&notifier, "close.fan", 0, n);
    }
    pool.flush();
    let lens: Vec<usize> = seen.iter().map(|s| s.lock().unwrap().len()).collect();
    assert_eq!(lens, [8, 5, 8]);
    let dropped: Vec<u64> = fanout.members().iter().map(|m| m.dropped()).collect();
    assert_eq!(dropped, [0, 3, 0]);
    fanout.unsubscribe().unwrap();
    assert!(fanout.members().iter().all(|m| m.is_closed()));
    assert_eq!(pool.pending(), 0);
}

/// A4 for a group: shutdown with a short deadline while slow members still have events: the
/// report's `abandoned` is exact (every member's share counted once), and the pool's threads end.
#[test]
fn a4_fanout_shutdown_reports_abandoned_exactly() {
    const MEMBERS: u64 = 10;
    const EVENTS: u64 = 200;
    let pool = WorkerPool::builder().threads(2).build();
    let notifier = Notifier::new();
    let delivered = Arc::new(AtomicU64::new(0));
    let fanout = pool.subscribe_fanout(
        &notifier,
        "a4.fan",
        AsyncOptions::new().capacity(EVENTS as usize),
        (0..MEMBERS).map(|_| {
            let delivered = delivered.clone();
            move |_: &Event| {
                std::thread::sleep(Duration::from_micros(500));
                delivered.fetch_add(1, Ordering::SeqCst);
            }
        }),
    );
    for n in 0..EVENTS {
        publish(&notifier, "a4.fan", 0, n);
    }
    let report = pool.shutdown(Duration::from_millis(20));
    let delivered = delivered.load(Ordering::SeqCst);
    assert!(!report.drained);
    assert_eq!(report.delivered, delivered);
    assert_eq!(report.abandoned, MEMBERS * EVENTS - delivered, "abandoned is exact");
    assert!(report.abandoned > 0);
    assert_eq!(pool.pending(), 0, "abandoned events are in the report, not pending");
    let dropped: u64 = fanout.members().iter().map(|m| m.dropped()).sum();
    assert_eq!(dropped, 0, "abandoned events are not drops");
    publish(&notifier, "a4.fan", 0, EVENTS);
    assert_eq!(pool.rejected(), MEMBERS, "one refusal per member");
}

/// A5 for a group: a member that panics on every third event keeps getting its events (`Keep`),
/// one failure report per panic; a member that detaches on its first panic gets nothing after it,
/// and every later event counts as dropped for it alone; every other member gets everything.
#[test]
fn a5_fanout_panicking_member() {
    quiet_panics();
    const MEMBERS: usize = 130;
    const EVENTS: u64 = 90;
    for policy in [AsyncFailurePolicy::Report, AsyncFailurePolicy::Detach] {
        let failures = Arc::new(Mutex::new(Vec::<AsyncFailure>::new()));
        let sink = failures.clone();
        // One worker: a panic that killed it would stop every delivery.
        let pool = WorkerPool::builder()
            .threads(1)
            .failure_hook(move |f: &AsyncFailure| sink.lock().unwrap().push(f.clone()))
            .build();
        let notifier = Notifier::new();
        let seen = recorders(MEMBERS);
        const BAD: usize = 70;
        let fanout = pool.subscribe_fanout(
            &notifier,
            "a5.fan",
            AsyncOptions::new().capacity(1_000).on_failure(policy),
            seen.iter().enumerate().map(|(i, s)| {
                let record = recorder(s);
                move |e: &Event| {
                    record(e);
                    if i == BAD && field(e, "n") % 3 == 1 {
                        panic!("a5: member {i} fails");
                    }
                }
            }),
        );
        for n in 0..EVENTS {
            publish(&notifier, "a5.fan", 0, n);
        }
        pool.flush();
        let bad = &fanout.members()[BAD];
        let failures = failures.lock().unwrap();
        assert!(failures.iter().all(|f| f.mailbox() == bad.id()));
        match policy {
            AsyncFailurePolicy::Report => {
                assert_eq!(failures.len() as u64, EVENTS / 3, "one report per panic");
                assert_eq!(seen[BAD].lock().unwrap().len() as u64, EVENTS);
                assert_eq!(bad.dropped(), 0);
                assert!(!bad.is_closed());
            }
            AsyncFailurePolicy::Detach => {
                assert_eq!(failures.len(), 1);
                assert!(failures[0].detached());
                let got: Vec<i64> = seen[BAD].lock().unwrap().iter().map(|s| s.1).collect();
                assert_eq!(got, [0, 1], "nothing after the panic on event 1");
                assert_eq!(bad.dropped(), EVENTS - 2);
                assert!(bad.is_closed());
            }
            other => unreachable!("policy {other:?} is not in this test's list"),
        }
        for (i, seen) in seen.iter().enumerate().filter(|(i, _)| *i != BAD) {
            assert_eq!(seen.lock().unwrap().len() as u64, EVENTS, "member {i}");
            assert_eq!(fanout.members()[i].dropped(), 0);
        }
        assert_eq!(pool.pending(), 0);
    }
}
