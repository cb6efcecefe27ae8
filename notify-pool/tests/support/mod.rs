//! Helpers shared by the async delivery tests: numbered events and the A1 order check.

use std::sync::{Arc, Mutex};

use notify_core::{Event, Notifier, Payload};

/// The integer `key` of a numbered event's payload.
pub fn field(event: &Event, key: &str) -> i64 {
    event
        .payload()
        .get(key)
        .and_then(|v| v.as_i64())
        .expect("numbered event")
}

/// Publishes event `n` of `producer` as `name`.
pub fn publish(notifier: &Notifier, name: &str, producer: u64, n: u64) {
    notifier.instrument(name, || Payload::new().with("p", producer).with("n", n), |_| ());
}

/// What one subscriber saw: (producer, sequence number) in delivery order.
pub type Seen = Arc<Mutex<Vec<(i64, i64)>>>;

/// A callback that records (producer, sequence number) into `seen`.
pub fn recorder(seen: &Seen) -> impl Fn(&Event) + Send + Sync + 'static {
    let seen = seen.clone();
    move |e: &Event| seen.lock().unwrap().push((field(e, "p"), field(e, "n")))
}

/// Checks one subscriber's record against `per_producer` events from each of `producers`: each
/// producer's sequence strictly increasing, and the events missing equal to `dropped` exactly.
pub fn check_order(seen: &[(i64, i64)], producers: i64, per_producer: i64, dropped: u64) {
    let mut missing = 0;
    for p in 0..producers {
        let sequence: Vec<i64> = seen.iter().filter(|s| s.0 == p).map(|s| s.1).collect();
        assert!(
            sequence.windows(2).all(|w| w[0] < w[1]),
            "producer {p}: not strictly increasing: {sequence:?}"
        );
        assert!(sequence.iter().all(|n| (0..per_producer).contains(n)));
        missing += per_producer - sequence.len() as i64;
    }
    assert_eq!(missing as u64, dropped, "gaps must equal the dropped counter exactly");
}

/// Runs `f` on a thread of its own and returns its result, or fails the test when it has not
/// returned within `secs` seconds: the bound only turns a hang into a failure. (Not every test
/// file that shares this module uses it.)
#[allow(dead_code)]
pub fn within<T: Send + 'static>(what: &str, secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (done, result) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(f());
    });
    result
        .recv_timeout(std::time::Duration::from_secs(secs))
        .unwrap_or_else(|_| panic!("{what}: still blocked after {secs} s (deadlock)"))
}

/// Keeps the expected panics of these tests (messages starting with `a5:`, and the pool's own
/// `notify: WorkerPool::` misuse panics) out of the output; any other panic prints as usual.
pub fn quiet_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let expected = payload.downcast_ref::<&str>().is_some_and(|s| s.starts_with("a5:"))
            || payload
                .downcast_ref::<String>()
                .is_some_and(|s| s.starts_with("notify: WorkerPool::"));
        if !expected {
            default(info);
        }
    }));
}
