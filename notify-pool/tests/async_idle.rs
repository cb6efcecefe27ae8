//! Case A3 (shared/cases/async.md): an idle pool is asleep. Alone in its file, so no other test
//! uses CPU in this process during the window.

use std::time::Duration;

use notify_core::{Event, Notifier, Pattern};
use notify_pool::{AsyncOptions, WorkerPool};

/// utime + stime of this process, in clock ticks (fields 14 and 15 of /proc/self/stat).
fn cpu_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    // The command name (field 2) may hold spaces; the fields after it start past the last ')'.
    let after = &stat[stat.rfind(')').expect("comm") + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    // `after` starts at field 3 (state): utime is field 14, stime field 15.
    let utime: u64 = fields[14 - 3].parse().expect("utime");
    let stime: u64 = fields[15 - 3].parse().expect("stime");
    utime + stime
}

/// A3: 10,000 async subscriptions and no events for 3 s: 0 CPU ticks in the window, and the
/// workers record no wake-ups.
#[test]
fn a3_idle_pool_uses_no_cpu_and_never_wakes() {
    let pool = WorkerPool::builder().threads(2).build();
    let notifier = Notifier::new();
    let subs = pool.subscribe_all(
        &notifier,
        (0..10_000).map(|i| (Pattern::exact(format!("a3.{i}")), AsyncOptions::new(), |_: &Event| {})),
    );
    assert_eq!(subs.len(), 10_000);
    // Let the workers finish their short spin and park (setting up is not part of the window).
    std::thread::sleep(Duration::from_millis(200));
    let wakeups_before = pool.wakeups();
    let ticks_before = cpu_ticks();
    std::thread::sleep(Duration::from_secs(3));
    let ticks_after = cpu_ticks();
    let wakeups_after = pool.wakeups();
    assert_eq!(ticks_after - ticks_before, 0, "CPU ticks used by an idle pool in 3 s");
    assert_eq!(
        wakeups_before,
        vec![0, 0],
        "no event was ever published: nobody woke a worker"
    );
    assert_eq!(wakeups_after, wakeups_before, "wake-ups during the idle window");
    assert_eq!(pool.shutdown(Duration::from_secs(5)).abandoned, 0);
}
