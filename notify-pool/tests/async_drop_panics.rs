//! Issue 33.3 and 33.4 for the worker pool: a subscriber whose `Drop` panics never kills a worker
//! nor unwinds into the thread that dropped it, wherever its last reference goes (a worker, the
//! shutdown, whoever unsubscribed); a flush from a pool's thread returns at once (two pools whose
//! callbacks flush each other used to deadlock).

#[allow(dead_code)]
mod support;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use notify_core::{Event, Notifier, Payload};
use notify_pool::{AsyncFailure, AsyncOptions, WorkerPool};
use support::within;

/// What a subscriber captures: its `Drop` panics (after running `before`, if any).
struct PanicsOnDrop {
    before: Option<Box<dyn FnOnce() + Send + Sync>>,
}

impl PanicsOnDrop {
    fn new() -> PanicsOnDrop {
        PanicsOnDrop { before: None }
    }

    fn after(before: impl FnOnce() + Send + Sync + 'static) -> PanicsOnDrop {
        PanicsOnDrop {
            before: Some(Box::new(before)),
        }
    }
}

impl Drop for PanicsOnDrop {
    fn drop(&mut self) {
        if let Some(before) = self.before.take() {
            before();
        }
        panic!("r33: dropped");
    }
}

/// Keeps this file's expected panics (`r33:` messages) out of the output.
fn quiet_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let expected = payload.downcast_ref::<&str>().is_some_and(|s| s.starts_with("r33:"))
            || payload.downcast_ref::<String>().is_some_and(|s| s.starts_with("r33:"));
        if !expected {
            default(info);
        }
    }));
}

/// One failure report: (in_drop, thread that reported it, the report's line).
type Report = (bool, String, String);

fn reporting_pool(name: &str) -> (WorkerPool, Arc<Mutex<Vec<Report>>>) {
    let reports = Arc::new(Mutex::new(Vec::new()));
    let sink = reports.clone();
    let pool = WorkerPool::builder()
        .threads(1)
        .name(name)
        .failure_hook(move |f: &AsyncFailure| {
            let thread = std::thread::current().name().unwrap_or("").to_owned();
            sink.lock().unwrap().push((f.in_drop(), thread, f.to_string()));
        })
        .build();
    (pool, reports)
}

/// A subscriber that counts its events.
fn counter(count: &Arc<AtomicU64>) -> impl Fn(&Event) + Send + Sync + 'static {
    let count = count.clone();
    move |_: &Event| {
        count.fetch_add(1, Ordering::SeqCst);
    }
}

/// Subscribes a subscriber that captures a [`PanicsOnDrop`] and waits at a gate on its first
/// event; publishes that event and waits until the worker is in the callback. Returns the gate's
/// sender (send to release the callback).
fn held_on_the_worker(
    pool: &WorkerPool,
    notifier: &Notifier,
    bomb: PanicsOnDrop,
) -> (notify_pool::AsyncSubscription, mpsc::Sender<()>) {
    let (release, gate) = mpsc::channel::<()>();
    let (entered_tx, entered) = mpsc::channel::<()>();
    let gate = Mutex::new(gate);
    let entered_tx = Mutex::new(entered_tx);
    let sub = pool.subscribe(notifier, "held", AsyncOptions::new().named("bomb"), move |_: &Event| {
        let _ = &bomb;
        let _ = entered_tx.lock().unwrap().send(());
        let _ = gate.lock().unwrap().recv();
    });
    notifier.instrument("held", Payload::new, |_| ());
    entered
        .recv_timeout(Duration::from_secs(60))
        .expect("the worker took the event");
    (sub, release)
}

/// 33.3: the worker drops the last reference of a subscriber whose `Drop` panics (unsubscribed
/// while its event was in the callback). The worker used to die there: later events were never
/// delivered and `flush` never returned. Now the panic is reported once (on the worker, as a
/// drop failure), counted, and the one worker goes on delivering.
#[test]
fn issue33_3_a_subscriber_dropped_last_by_a_worker_panicking_does_not_kill_it() {
    quiet_panics();
    let (pool, reports) = reporting_pool("r33drop");
    let notifier = Notifier::new();
    let (sub, release) = held_on_the_worker(&pool, &notifier, PanicsOnDrop::new());
    sub.unsubscribe().unwrap();
    drop(sub);
    // Only the worker's turn holds the mailbox now: it drops it when the callback returns.
    release.send(()).unwrap();
    let later = Arc::new(AtomicU64::new(0));
    pool.subscribe(&notifier, "later", AsyncOptions::new(), counter(&later));
    for _ in 0..10 {
        notifier.instrument("later", Payload::new, |_| ());
    }
    let p = pool.clone();
    assert!(within("flush after the drop panic", 60, move || p.flush()));
    assert_eq!(
        later.load(Ordering::SeqCst),
        10,
        "later events delivered by the same worker"
    );
    assert_eq!(
        *reports.lock().unwrap(),
        [(
            true,
            "r33drop-0".to_owned(),
            "async subscriber `bomb` (mailbox #1) panicked when dropped: r33: dropped".to_owned()
        )]
    );
    assert_eq!(pool.failures(), 1);
    let report = pool.shutdown(Duration::from_secs(10));
    assert_eq!((report.delivered, report.abandoned, report.drained), (11, 0, true));
    assert!(report.detached.is_empty());
}

/// 33.3: the subscriber's `Drop` calls `flush()` on its own pool, run by the worker. It used to
/// panic there (flush from a pool's own thread), which killed the worker. Now flush returns false
/// at once (33.4), nothing panics, and the worker goes on.
#[test]
fn issue33_3_flush_from_a_drop_run_by_the_worker_returns_false_at_once() {
    quiet_panics();
    let (pool, reports) = reporting_pool("r33flushdrop");
    let notifier = Notifier::new();
    let flushed = Arc::new(Mutex::new(Vec::new()));
    let (f, p) = (flushed.clone(), pool.clone());
    let bomb = PanicsOnDrop::after(move || {
        let thread = std::thread::current().name().unwrap_or("").to_owned();
        f.lock().unwrap().push((thread, p.flush()));
    });
    let (sub, release) = held_on_the_worker(&pool, &notifier, bomb);
    sub.unsubscribe().unwrap();
    drop(sub);
    release.send(()).unwrap();
    let later = Arc::new(AtomicU64::new(0));
    pool.subscribe(&notifier, "later", AsyncOptions::new(), counter(&later));
    notifier.instrument("later", Payload::new, |_| ());
    let p = pool.clone();
    assert!(within("flush after the drop", 60, move || p.flush()));
    assert_eq!(later.load(Ordering::SeqCst), 1);
    assert_eq!(*flushed.lock().unwrap(), [("r33flushdrop-0".to_owned(), false)]);
    assert_eq!(reports.lock().unwrap().len(), 1, "the drop's own panic, once");
    assert_eq!(pool.failures(), 1);
}

/// 33.3: shutdown abandons a queued mailbox whose subscriber was unsubscribed: the shutdown drops
/// its last reference, on the caller's thread. The panic used to unwind out of `shutdown`; now it
/// is reported once and the report is exact.
#[test]
fn issue33_3_a_subscriber_dropped_last_by_shutdown_does_not_unwind_out_of_it() {
    quiet_panics();
    let (pool, reports) = reporting_pool("r33shutdown");
    let notifier = Notifier::new();
    // The one worker is held in another subscriber's callback.
    let (_held, release) = held_on_the_worker(&pool, &notifier, PanicsOnDrop::after(|| {}));
    std::mem::forget(_held); // its drop is not what this test is about
    let bomb = PanicsOnDrop::new();
    let queued = pool.subscribe(
        &notifier,
        "queued",
        AsyncOptions::new().named("queued"),
        move |_: &Event| {
            let _ = &bomb;
        },
    );
    for _ in 0..3 {
        notifier.instrument("queued", Payload::new, |_| ());
    }
    queued.unsubscribe().unwrap();
    drop(queued);
    let me = std::thread::current().name().unwrap_or("").to_owned();
    // Release the held callback once the shutdown stopped the pool (it is past its deadline).
    let releaser = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        release.send(()).unwrap();
    });
    let report = pool.shutdown(Duration::ZERO);
    releaser.join().unwrap();
    // The held callback returns within the stop grace (100 ms), or, on a machine too loaded to
    // run the releaser in time, its thread is detached and its event counted as abandoned.
    let held = if report.detached.is_empty() {
        assert_eq!(report.delivered, 1, "the held callback returned within the grace");
        0
    } else {
        assert_eq!(report.detached, ["r33shutdown-0"]);
        assert_eq!(report.delivered, 0);
        1
    };
    assert_eq!(report.abandoned, 3 + held, "the queued mailbox's events");
    assert_eq!(
        *reports.lock().unwrap(),
        [(
            true,
            me,
            "async subscriber `queued` (mailbox #2) panicked when dropped: r33: dropped".to_owned()
        )]
    );
    assert_eq!(pool.failures(), 1);
}

/// Counts its drops; panics in it when `panics`.
struct CountedDrop {
    drops: Arc<AtomicU64>,
    panics: bool,
}

impl Drop for CountedDrop {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
        if self.panics {
            panic!("r33: dropped");
        }
    }
}

/// 33.3: a fan-out group whose members' captures panic when dropped (members 0 and 2 of 3): each
/// is reported once, with its own mailbox id, and every member is still dropped.
#[test]
fn issue33_3_fanout_members_that_panic_when_dropped_are_each_reported_once() {
    quiet_panics();
    let (pool, reports) = reporting_pool("r33fanout");
    let notifier = Notifier::new();
    let drops = Arc::new(AtomicU64::new(0));
    let members = (0..3).map(|i| {
        let capture = CountedDrop {
            drops: drops.clone(),
            panics: i != 1,
        };
        move |_: &Event| {
            let _ = &capture;
        }
    });
    let fanout = pool.subscribe_fanout(&notifier, "f", AsyncOptions::new(), members);
    notifier.instrument("f", Payload::new, |_| ());
    assert!(pool.flush());
    fanout.unsubscribe().unwrap();
    drop(fanout);
    let p = pool.clone();
    // The group's last reference may be the registry's, released by a later registry read.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while drops.load(Ordering::SeqCst) < 3 {
        notifier.instrument("f", Payload::new, |_| ());
        assert!(std::time::Instant::now() < deadline, "the group was never dropped");
        std::thread::yield_now();
    }
    assert!(p.flush());
    assert_eq!(drops.load(Ordering::SeqCst), 3, "every member was dropped");
    let lines: Vec<String> = reports.lock().unwrap().iter().map(|r| r.2.clone()).collect();
    assert_eq!(
        lines,
        [
            "async subscriber `async` (mailbox #1) panicked when dropped: r33: dropped",
            "async subscriber `async` (mailbox #3) panicked when dropped: r33: dropped",
        ]
    );
    assert_eq!(pool.failures(), 2);
    assert_eq!(pool.delivered(), 3);
}

/// 33.3 (same class): a failure hook replaced while a worker reports through it, whose captures
/// panic when dropped. The worker's clone of the old hook is its last reference: it is dropped
/// inside the guard, and the worker lives on.
#[test]
fn issue33_3_a_replaced_failure_hook_that_panics_when_dropped_does_not_kill_the_worker() {
    quiet_panics();
    let pool = WorkerPool::builder().threads(1).name("r33hook").build();
    let notifier = Notifier::new();
    let (entered_tx, entered) = mpsc::channel::<()>();
    let (release, gate) = mpsc::channel::<()>();
    let (entered_tx, gate) = (Mutex::new(entered_tx), Mutex::new(gate));
    let bomb = PanicsOnDrop::new();
    pool.set_failure_hook(move |_: &AsyncFailure| {
        let _ = &bomb;
        let _ = entered_tx.lock().unwrap().send(());
        let _ = gate.lock().unwrap().recv();
    });
    pool.subscribe(&notifier, "fails", AsyncOptions::new(), |_: &Event| {
        panic!("r33: callback")
    });
    notifier.instrument("fails", Payload::new, |_| ());
    entered
        .recv_timeout(Duration::from_secs(60))
        .expect("the worker is in the hook");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    pool.set_failure_hook(move |f: &AsyncFailure| sink.lock().unwrap().push(f.message().to_owned()));
    release.send(()).unwrap();
    notifier.instrument("fails", Payload::new, |_| ());
    let p = pool.clone();
    assert!(within("flush after the hook's drop", 60, move || p.flush()));
    assert_eq!(
        *seen.lock().unwrap(),
        ["r33: callback"],
        "the second failure, through the new hook"
    );
    assert_eq!(pool.failures(), 2);
    assert_eq!(pool.delivered(), 2);
}

/// 33.4: two pools whose callbacks flush each other. Both used to wait for the other's worker,
/// which waited for them (`flush_timeout` false after its whole timeout, workers detached at
/// shutdown). Now a flush on a pool's thread returns false at once, and everything finishes.
#[test]
fn issue33_4_two_pools_whose_callbacks_flush_each_other_do_not_deadlock() {
    let a = WorkerPool::builder().threads(1).name("r33a").build();
    let b = WorkerPool::builder().threads(1).name("r33b").build();
    let notifier = Notifier::new();
    let results = Arc::new(Mutex::new(Vec::new()));
    let (r, other) = (results.clone(), b.clone());
    a.subscribe(&notifier, "x", AsyncOptions::new(), move |_: &Event| {
        let timed = other.flush_timeout(Duration::from_secs(30));
        r.lock().unwrap().push(("a flushes b", other.flush(), timed));
    });
    let (r, other) = (results.clone(), a.clone());
    b.subscribe(&notifier, "x", AsyncOptions::new(), move |_: &Event| {
        let timed = other.flush_timeout(Duration::from_secs(30));
        r.lock().unwrap().push(("b flushes a", other.flush(), timed));
    });
    for _ in 0..5 {
        notifier.instrument("x", Payload::new, |_| ());
    }
    let started = std::time::Instant::now();
    let (pa, pb) = (a.clone(), b.clone());
    assert!(within("a's flush", 60, move || pa.flush()));
    assert!(within("b's flush", 60, move || pb.flush()));
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "no flush waited for its timeout"
    );
    let mut results = results.lock().unwrap().clone();
    results.sort();
    assert_eq!(
        results,
        [("a flushes b", false, false); 5]
            .into_iter()
            .chain([("b flushes a", false, false); 5])
            .collect::<Vec<_>>()
    );
    assert_eq!((a.delivered(), b.delivered(), a.pending(), b.pending()), (5, 5, 0, 0));
    for pool in [a, b] {
        let report = pool.shutdown(Duration::from_secs(10));
        assert_eq!((report.delivered, report.abandoned, report.drained), (5, 0, true));
        assert!(report.detached.is_empty());
    }
}

/// 33.4 (same rule, for the drop of a pool's last clone): pool B's callback drops the last clone
/// of pool A, whose worker is busy. The drop used to shut A down right there, holding B's worker
/// for up to `DROP_DEADLINE` and then abandoning A's queued events; now it hands the shutdown to a
/// short-lived thread: B's callback returns at once, and A still delivers everything queued.
#[test]
fn issue33_4_a_pool_dropped_on_another_pools_worker_does_not_hold_it() {
    let a = WorkerPool::builder().threads(1).name("r33dropa").build();
    let b = WorkerPool::builder().threads(1).name("r33dropb").build();
    let notifier = Notifier::new();
    let (release, gate) = mpsc::channel::<()>();
    let (entered_tx, entered) = mpsc::channel::<()>();
    let (gate, entered_tx) = (Mutex::new(gate), Mutex::new(entered_tx));
    let a_count = Arc::new(AtomicU64::new(0));
    let c = a_count.clone();
    let _a_sub = a.subscribe(&notifier, "a", AsyncOptions::new(), move |_: &Event| {
        if c.fetch_add(1, Ordering::SeqCst) == 0 {
            let _ = entered_tx.lock().unwrap().send(());
            let _ = gate.lock().unwrap().recv();
        }
    });
    for _ in 0..3 {
        notifier.instrument("a", Payload::new, |_| ());
    }
    entered
        .recv_timeout(Duration::from_secs(60))
        .expect("A's worker is busy");
    let last_clone = Mutex::new(Some(a));
    let (returned_tx, returned) = mpsc::channel::<()>();
    let returned_tx = Mutex::new(returned_tx);
    b.subscribe(&notifier, "b", AsyncOptions::new(), move |_: &Event| {
        drop(last_clone.lock().unwrap().take());
        let _ = returned_tx.lock().unwrap().send(());
    });
    notifier.instrument("b", Payload::new, |_| ());
    // Without the hand-off, B's callback returns only after A's drop deadline (5 s), once A's
    // queued events were abandoned.
    returned
        .recv_timeout(Duration::from_secs(60))
        .expect("B's callback returned");
    release.send(()).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while a_count.load(Ordering::SeqCst) < 3 {
        assert!(
            std::time::Instant::now() < deadline,
            "A delivered {} of 3: its queued events were abandoned",
            a_count.load(Ordering::SeqCst)
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(b.flush());
    assert_eq!(b.delivered(), 1);
}

/// Same class: the pool's hooks are dropped with its state, wherever its last reference goes
/// (here: the drop of the pool's last clone, after its workers ended). A hook whose captures
/// panic when dropped used to unwind out of that drop; now it is swallowed, as a panic in a hook
/// is.
#[test]
fn issue33_3_hooks_that_panic_when_dropped_do_not_unwind_out_of_the_pools_drop() {
    quiet_panics();
    let drops = Arc::new(AtomicU64::new(0));
    let (d1, d2) = (drops.clone(), drops.clone());
    let failure = PanicsOnDrop::after(move || {
        d1.fetch_add(1, Ordering::SeqCst);
    });
    let slow = PanicsOnDrop::after(move || {
        d2.fetch_add(1, Ordering::SeqCst);
    });
    let pool = WorkerPool::builder()
        .threads(1)
        .failure_hook(move |_: &AsyncFailure| {
            let _ = &failure;
        })
        .slow_subscriber_hook(move |_: &notify_pool::SlowSubscriber| {
            let _ = &slow;
        })
        .build();
    let notifier = Notifier::new();
    let sub = pool.subscribe(&notifier, "x", AsyncOptions::new(), |_: &Event| panic!("r33: callback"));
    notifier.instrument("x", Payload::new, |_| ());
    assert!(pool.flush());
    assert_eq!(pool.failures(), 1);
    drop(sub);
    drop(notifier);
    let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(pool)));
    assert!(dropped.is_ok(), "nothing unwound out of the pool's drop");
    assert_eq!(drops.load(Ordering::SeqCst), 2, "both hooks were dropped");
}
