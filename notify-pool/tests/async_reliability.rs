//! Issue 16 (reliability) for the worker pool: panic payloads that panic when dropped, deadlines
//! that are upper bounds, absurd thread counts, and report lines that hostile text cannot forge.
//! (Exit is in async_exit.rs, which runs child processes; the stress run in async_stress.rs.)

#[allow(dead_code)]
mod support;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use notify_core::{Event, Notifier, Payload};
use notify_pool::{AsyncFailure, AsyncOptions, Overflow, SlowSubscriber, WorkerPool};
use support::within;

/// A panic payload whose `Drop` panics too.
struct Bomb;

impl Drop for Bomb {
    fn drop(&mut self) {
        panic!("r16: the bomb payload went off while dropped");
    }
}

/// Keeps this file's expected panics (Bomb payloads and `r16:` messages) out of the output.
fn quiet_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let expected = payload.is::<Bomb>()
            || payload.downcast_ref::<&str>().is_some_and(|s| s.starts_with("r16:"))
            || payload.downcast_ref::<String>().is_some_and(|s| s.starts_with("r16:"));
        if !expected {
            default(info);
        }
    }));
}

fn failures_pool(threads: usize) -> (WorkerPool, Arc<Mutex<Vec<String>>>) {
    let failures = Arc::new(Mutex::new(Vec::new()));
    let sink = failures.clone();
    let pool = WorkerPool::builder()
        .threads(threads)
        .failure_hook(move |f: &AsyncFailure| sink.lock().unwrap().push(f.to_string()))
        .build();
    (pool, failures)
}

/// 16.1: a callback that panics with a payload whose `Drop` panics. The worker used to die
/// dropping the payload, and `flush` never returned. Now the worker lives on, the failure is
/// reported once, and every other event is delivered — for a mailbox and for fan-out members.
#[test]
fn r16_1_bomb_payload_does_not_kill_the_worker() {
    quiet_panics();
    let (pool, failures) = failures_pool(1);
    let notifier = Notifier::new();
    let delivered = Arc::new(AtomicU64::new(0));
    let d = delivered.clone();
    let sub = pool.subscribe(&notifier, "run.bomb", AsyncOptions::new(), move |e: &Event| {
        if e.payload().get("n").and_then(|v| v.as_i64()) == Some(0) {
            std::panic::panic_any(Bomb);
        }
        d.fetch_add(1, Ordering::SeqCst);
    });
    let members: Vec<_> = (0..3)
        .map(|i| {
            let d = delivered.clone();
            move |e: &Event| {
                if i == 1 && e.payload().get("n").and_then(|v| v.as_i64()) == Some(1) {
                    std::panic::panic_any(Bomb);
                }
                d.fetch_add(1, Ordering::SeqCst);
            }
        })
        .collect();
    let fanout = pool.subscribe_fanout(&notifier, "run.bomb", AsyncOptions::new(), members);
    for n in 0..10_u64 {
        notifier.instrument("run.bomb", || Payload::new().with("n", n), |_| ());
    }
    let p = pool.clone();
    within("flush after a bomb payload", 60, move || p.flush());
    assert_eq!(delivered.load(Ordering::SeqCst), 9 + 3 * 10 - 1);
    // One report each; the two subscribers run independently (in no promised order).
    let mut reported = failures.lock().unwrap().clone();
    reported.sort();
    let mut expected = vec![
        format!(
            "async subscriber `async` (mailbox {}) panicked on `run.bomb`: <non-string panic payload>",
            sub.handle().id()
        ),
        format!(
            "async subscriber `async` (mailbox {}) panicked on `run.bomb`: <non-string panic payload>",
            fanout.members()[1].id()
        ),
    ];
    expected.sort();
    assert_eq!(reported, expected);
    assert_eq!(pool.pending(), 0);
    let report = pool.shutdown(Duration::from_secs(10));
    assert_eq!((report.delivered, report.abandoned), (10 + 3 * 10, 0));
}

/// 16.1: the failure hook and the slow-subscriber hook panic with a bomb payload: swallowed (the
/// hook's panic never reaches the worker or the publisher), and delivery goes on.
#[test]
fn r16_1_bomb_payload_in_hooks_is_contained() {
    quiet_panics();
    let pool = WorkerPool::builder()
        .threads(1)
        .report_interval(Duration::ZERO)
        .failure_hook(|_: &AsyncFailure| std::panic::panic_any(Bomb))
        .slow_subscriber_hook(|_: &SlowSubscriber| std::panic::panic_any(Bomb))
        .build();
    let notifier = Notifier::new();
    let delivered = Arc::new(AtomicU64::new(0));
    let d = delivered.clone();
    let (gate_tx, gate) = mpsc::channel::<()>();
    let gate = Mutex::new(gate);
    let sub = pool.subscribe(
        &notifier,
        "run.hooks",
        AsyncOptions::new().capacity(1),
        move |e: &Event| {
            if e.payload().get("n").and_then(|v| v.as_i64()) == Some(0) {
                gate.lock().unwrap().recv().unwrap();
                panic!("r16: a failure for the hook to report");
            }
            d.fetch_add(1, Ordering::SeqCst);
        },
    );
    notifier.instrument("run.hooks", || Payload::new().with("n", 0), |_| ());
    while sub.queued() > 0 {
        std::thread::yield_now();
    }
    // The worker holds event 0: event 1 fills the mailbox, event 2 overflows (the slow hook
    // panics with a bomb on this, the publishing, thread).
    notifier.instrument("run.hooks", || Payload::new().with("n", 1), |_| ());
    notifier.instrument("run.hooks", || Payload::new().with("n", 2), |_| ());
    gate_tx.send(()).unwrap();
    let p = pool.clone();
    within("flush after bomb hooks", 60, move || p.flush());
    assert_eq!(delivered.load(Ordering::SeqCst), 1, "event 1 (event 2 was dropped)");
    assert_eq!(sub.dropped(), 1);
    notifier.instrument("run.hooks", || Payload::new().with("n", 3), |_| ());
    pool.flush();
    assert_eq!(delivered.load(Ordering::SeqCst), 2, "the worker is alive");
}

/// 16.2: a callback blocked forever. `shutdown(100 ms)` used to wait for it; now it returns by
/// the deadline plus `STOP_GRACE`, counts the events it holds and the queued ones as abandoned
/// exactly, and names the detached thread. `flush_timeout` is bounded meanwhile.
#[test]
fn r16_2_shutdown_returns_by_its_deadline_with_a_stuck_callback() {
    let pool = WorkerPool::builder().threads(1).name("stuck").build();
    let notifier = Notifier::new();
    let (release, gate) = mpsc::channel::<()>();
    let gate = Mutex::new(gate);
    let started = Arc::new(AtomicU64::new(0));
    let s = started.clone();
    pool.subscribe(&notifier, "run.stuck", AsyncOptions::new(), move |_: &Event| {
        s.fetch_add(1, Ordering::SeqCst);
        let _ = gate.lock().unwrap().recv();
    });
    for _ in 0..5 {
        notifier.instrument("run.stuck", Payload::new, |_| ());
    }
    while started.load(Ordering::SeqCst) == 0 {
        std::thread::yield_now();
    }
    let asked = Instant::now();
    assert!(!pool.flush_timeout(Duration::from_millis(50)), "the callback is stuck");
    let waited = asked.elapsed();
    assert!(waited < Duration::from_secs(2), "flush_timeout(50 ms) took {waited:?}");

    let asked = Instant::now();
    let report = pool.shutdown(Duration::from_millis(100));
    let took = asked.elapsed();
    assert!(
        took < Duration::from_millis(100) + WorkerPool::STOP_GRACE + Duration::from_secs(1),
        "shutdown(100 ms) took {took:?}"
    );
    assert_eq!(report.delivered, 0, "no callback returned");
    assert_eq!(report.abandoned, 5, "the one in progress and the 4 queued");
    assert!(!report.drained);
    assert_eq!(report.detached, ["stuck-0"]);
    assert_eq!(pool.pending(), 0);
    // Let the detached thread end.
    for _ in 0..5 {
        let _ = release.send(());
    }
}

/// 16.2: dropping the last handle of a pool whose callback is blocked forever returns within
/// `DROP_DEADLINE` plus `STOP_GRACE` (it used to hang).
#[test]
fn r16_2_drop_with_a_stuck_callback_is_bounded() {
    let pool = WorkerPool::builder().threads(1).build();
    let notifier = Notifier::new();
    let (release, gate) = mpsc::channel::<()>();
    let gate = Mutex::new(gate);
    let sub = pool.subscribe(&notifier, "run.drop", AsyncOptions::new(), move |_: &Event| {
        let _ = gate.lock().unwrap().recv();
    });
    notifier.instrument("run.drop", Payload::new, |_| ());
    notifier.instrument("run.drop", Payload::new, |_| ());
    drop(sub);
    let asked = Instant::now();
    within("drop of the last handle", 60, move || drop(pool));
    let took = asked.elapsed();
    assert!(
        took < WorkerPool::DROP_DEADLINE + WorkerPool::STOP_GRACE + Duration::from_secs(2),
        "drop took {took:?}"
    );
    let _ = release.send(());
    let _ = release.send(());
}

/// 16.2: `flush_timeout` reports success exactly when the events were delivered.
#[test]
fn r16_2_flush_timeout_succeeds_when_delivered() {
    let pool = WorkerPool::builder().threads(1).build();
    let notifier = Notifier::new();
    let (release, gate) = mpsc::channel::<()>();
    let gate = Mutex::new(gate);
    let count = Arc::new(AtomicU64::new(0));
    let c = count.clone();
    pool.subscribe(
        &notifier,
        "run.flush",
        AsyncOptions::new().overflow(Overflow::DropNewest),
        move |_: &Event| {
            gate.lock().unwrap().recv().unwrap();
            c.fetch_add(1, Ordering::SeqCst);
        },
    );
    for _ in 0..3 {
        notifier.instrument("run.flush", Payload::new, |_| ());
    }
    assert!(!pool.flush_timeout(Duration::from_millis(20)));
    for _ in 0..3 {
        release.send(()).unwrap();
    }
    assert!(pool.flush_timeout(Duration::from_secs(60)));
    assert_eq!(count.load(Ordering::SeqCst), 3);
}

/// 16.5: absurd thread counts are an `Err`, never a panic or an abort.
#[test]
fn r16_5_absurd_thread_counts_are_errors() {
    for threads in [usize::MAX, 1 << 40, WorkerPool::MAX_THREADS + 1] {
        let err = WorkerPool::builder().threads(threads).try_build().unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput, "{threads}");
        assert_eq!(
            err.to_string(),
            format!(
                "notify: a worker pool has at most {} threads; {threads} were asked for",
                WorkerPool::MAX_THREADS
            )
        );
    }
}

/// 16.6: the pool's report lines escape control characters: newline, CR, ESC (CSI), OSC and a
/// right-to-left override in an event name, a panic message and a label cannot forge a line or
/// drive the terminal.
#[test]
fn r16_6_report_lines_escape_control_characters() {
    quiet_panics();
    const HOSTILE: &str = "\n[INFO  auth] admin logged in\r\u{1b}[2J\u{1b}]0;title\u{7}\u{202e}";
    const ESCAPED: &str = "\\n[INFO  auth] admin logged in\\r\\u{1b}[2J\\u{1b}]0;title\\u{7}\\u{202e}";
    let (pool, failures) = failures_pool(1);
    let slow = Arc::new(Mutex::new(Vec::new()));
    let notifier = Notifier::new();
    let name = format!("run.job{HOSTILE}");
    let sub = pool.subscribe(
        &notifier,
        name.as_str(),
        AsyncOptions::new().named(format!("audit{HOSTILE}")),
        |_: &Event| panic!("r16: boom{HOSTILE}"),
    );
    notifier.instrument(&name, Payload::new, |_| ());
    pool.flush();
    let id = sub.handle().id();
    assert_eq!(
        *failures.lock().unwrap(),
        [format!(
            "async subscriber `audit{ESCAPED}` (mailbox {id}) panicked on `run.job{ESCAPED}`: r16: boom{ESCAPED}"
        )]
    );

    let sink = slow.clone();
    let pool = WorkerPool::builder()
        .threads(1)
        .slow_subscriber_hook(move |s: &SlowSubscriber| sink.lock().unwrap().push(s.to_string()))
        .build();
    let (release, gate) = mpsc::channel::<()>();
    let gate = Mutex::new(gate);
    let sub = pool.subscribe(
        &notifier,
        "run.slow",
        AsyncOptions::new().capacity(1).named(format!("audit{HOSTILE}")),
        move |_: &Event| gate.lock().unwrap().recv().unwrap(),
    );
    for _ in 0..3 {
        notifier.instrument("run.slow", Payload::new, |_| ());
        while sub.queued() > 0 && pool.pending() == 1 {
            std::thread::yield_now();
        }
    }
    for _ in 0..3 {
        let _ = release.send(());
    }
    pool.flush();
    let id = sub.handle().id();
    assert_eq!(
        slow.lock().unwrap()[0],
        format!(
            "async subscriber `audit{ESCAPED}` (mailbox {id}) is slow: mailbox full at 1 events, 1 dropped so far (drop newest)"
        )
    );
}
