//! Issue 16.3: events still queued when `main` returns. Without a guard they are lost, and the
//! count is written to stderr at exit; with `WorkerPool::flush_guard` held in `main` they are
//! delivered. Each scenario runs in a child process (this binary again, with `NOTIFY_POOL_EXIT`
//! naming the scenario), since what is checked happens when a process exits.

use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Mutex};
use std::time::Duration;

use notify_core::{Event, Notifier, Payload};
use notify_pool::{AsyncOptions, WorkerPool};

const EVENTS: u64 = 200;
static DELIVERED: AtomicU64 = AtomicU64::new(0);

fn publish(notifier: &Notifier) {
    for _ in 0..EVENTS {
        notifier.instrument("run.exit", Payload::new, |_| ());
    }
}

/// The child's `main`: returns with events queued on the global pool.
fn child(scenario: &str) {
    let notifier = Notifier::new();
    let pool = WorkerPool::global();
    match scenario {
        "lost" => {
            // A callback that never returns: all 200 events are still pending at exit.
            let (_keep, gate) = mpsc::channel::<()>();
            let gate = Mutex::new(gate);
            pool.subscribe(&notifier, "run.exit", AsyncOptions::new(), move |_: &Event| {
                let _ = gate.lock().unwrap().recv();
            });
            publish(&notifier);
            std::mem::forget(_keep);
        }
        "guarded" => {
            // The scope stands for `main`'s body: the guard is dropped at its end.
            let _guard = pool.flush_guard(Duration::from_secs(60));
            pool.subscribe(&notifier, "run.exit", AsyncOptions::new(), |_: &Event| {
                std::thread::sleep(Duration::from_micros(50));
                DELIVERED.fetch_add(1, Ordering::SeqCst);
            });
            publish(&notifier);
        }
        "guard_timeout" => {
            let (_keep, gate) = mpsc::channel::<()>();
            let gate = Mutex::new(gate);
            let _guard = pool.flush_guard(Duration::from_millis(100));
            pool.subscribe(&notifier, "run.exit", AsyncOptions::new(), move |_: &Event| {
                let _ = gate.lock().unwrap().recv();
            });
            publish(&notifier);
            std::mem::forget(_keep);
        }
        other => panic!("unknown scenario {other}"),
    }
    println!("returning from main, {} delivered", DELIVERED.load(Ordering::SeqCst));
}

/// Runs `scenario` in a child process: (exit success, stdout, stderr).
fn run(scenario: &str) -> (bool, String, String) {
    let out = Command::new(std::env::current_exe().expect("this test binary"))
        .env("NOTIFY_POOL_EXIT", scenario)
        .output()
        .expect("run the child process");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn main() {
    if let Ok(scenario) = std::env::var("NOTIFY_POOL_EXIT") {
        child(&scenario);
        return;
    }

    let (ok, stdout, stderr) = run("lost");
    assert!(ok, "{stderr}");
    assert_eq!(stdout, "returning from main, 0 delivered\n");
    assert_eq!(
        stderr,
        "notify-pool: worker pool `notify-global`: 200 queued events were never delivered: the process \
         exited first (hold WorkerPool::flush_guard in main to deliver them)\n"
    );
    println!("r16_3_lost_events_are_counted_at_exit ... ok");

    let (ok, stdout, stderr) = run("guarded");
    assert!(ok, "{stderr}");
    assert_eq!(stdout, "returning from main, 200 delivered\n");
    assert_eq!(stderr, "", "the guard flushed: nothing was lost");
    println!("r16_3_flush_guard_delivers_at_the_end_of_main ... ok");

    let (ok, _, stderr) = run("guard_timeout");
    assert!(ok, "{stderr}");
    assert_eq!(
        stderr,
        "notify-pool: worker pool `notify-global`: 200 events still pending after the flush guard waited 100ms; \
         they are delivered only if the process lives on\n\
         notify-pool: worker pool `notify-global`: 200 queued events were never delivered: the process \
         exited first (hold WorkerPool::flush_guard in main to deliver them)\n"
    );
    println!("r16_3_flush_guard_timeout_reports_what_is_pending ... ok");
}
