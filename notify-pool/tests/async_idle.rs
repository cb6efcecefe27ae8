//! Case A3 (shared/cases/async.md): an idle pool is asleep. Alone in its file, so no other test
//! uses CPU in this process during the window.
//!
//! The case counts CPU ticks (utime + stime of /proc/self/stat). Those are the process's precise
//! run time rounded down to whole ticks (10 ms), so even the microseconds this test spends reading
//! them can carry the count over a tick boundary: a fresh-clone CI run once read 1 tick. The test
//! therefore reads the precise figure the ticks come from, each thread's time on a CPU in ns
//! (field 1 of /proc/self/task/TID/schedstat), and asserts that the pool's workers used exactly
//! 0 ns and the whole process less than a tenth of one tick.

use std::collections::BTreeMap;
use std::time::Duration;

use notify_core::{Event, Notifier, Pattern};
use notify_pool::{AsyncOptions, WorkerPool};

/// One clock tick (`USER_HZ` = 100 on Linux), in ns.
const TICK_NS: u64 = 10_000_000;

/// Each thread of this process: its name (comm) and its time on a CPU so far, in ns.
fn cpu_ns_by_thread() -> BTreeMap<u64, (String, u64)> {
    let mut threads = BTreeMap::new();
    for entry in std::fs::read_dir("/proc/self/task").expect("/proc/self/task") {
        let dir = entry.expect("task entry").path();
        let tid: u64 = dir.file_name().unwrap().to_str().unwrap().parse().expect("tid");
        let comm = std::fs::read_to_string(dir.join("comm")).expect("comm");
        let schedstat = std::fs::read_to_string(dir.join("schedstat")).expect("schedstat");
        let ns: u64 = schedstat.split_whitespace().next().unwrap().parse().expect("run time");
        threads.insert(tid, (comm.trim_end().to_owned(), ns));
    }
    threads
}

/// A3: 10,000 async subscriptions and no events for 3 s: no CPU time in the window (the workers
/// 0 ns, the process under a tenth of a tick), and the workers record no wake-ups.
#[test]
fn a3_idle_pool_uses_no_cpu_and_never_wakes() {
    let pool = WorkerPool::builder().threads(2).name("a3-idle").build();
    let notifier = Notifier::new();
    let subs = pool.subscribe_all(
        &notifier,
        (0..10_000).map(|i| (Pattern::exact(format!("a3.{i}")), AsyncOptions::new(), |_: &Event| {})),
    );
    assert_eq!(subs.len(), 10_000);
    // Let the workers finish their short spin and park (setting up is not part of the window).
    std::thread::sleep(Duration::from_millis(200));
    let wakeups_before = pool.wakeups();
    let before = cpu_ns_by_thread();
    std::thread::sleep(Duration::from_secs(3));
    let after = cpu_ns_by_thread();
    let wakeups_after = pool.wakeups();

    let workers: Vec<(&String, u64)> = after
        .iter()
        .filter(|(_, (name, _))| name.starts_with("a3-idle-"))
        .map(|(tid, (name, ns))| (name, ns - before.get(tid).map_or(0, |(_, was)| *was)))
        .collect();
    assert_eq!(workers.len(), 2, "the pool's worker threads: {after:?}");
    for (name, used) in &workers {
        assert_eq!(*used, 0, "ns on a CPU used by idle worker {name} in 3 s");
    }
    let process: u64 = after
        .iter()
        .map(|(tid, (_, ns))| ns - before.get(tid).map_or(0, |(_, was)| *was))
        .sum();
    assert!(
        process < TICK_NS / 10,
        "the process used {process} ns of CPU in 3 s idle (one tick is {TICK_NS} ns)"
    );
    assert_eq!(
        wakeups_before,
        vec![0, 0],
        "no event was ever published: nobody woke a worker"
    );
    assert_eq!(wakeups_after, wakeups_before, "wake-ups during the idle window");
    assert_eq!(pool.shutdown(Duration::from_secs(5)).abandoned, 0);
}
