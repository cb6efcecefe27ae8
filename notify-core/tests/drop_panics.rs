//! Issue 33.3, the synchronous side: a subscriber whose `Drop` panics (or the drop of a value it
//! captured), dropped by the registry on the instrumenting thread or on the thread that
//! unsubscribes. The panic used to unwind out of `instrument` / `unsubscribe`; now it is caught,
//! reported once through the notifier's failure hook (`SubscriberFailure::in_drop`) and counted
//! (`Notifier::failures`). Each test asserts the exact outcome.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use notify_core::{
    context::EventContext, failure::FailurePolicy, failure::SubscriberFailure, Event, EventedSubscriber, Notifier,
    Payload, Subscriber,
};

/// What the subscribers capture: counts its drops, then panics.
struct PanicsOnDrop(Arc<AtomicU64>);

impl Drop for PanicsOnDrop {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
        panic!("r33: dropped");
    }
}

/// Keeps this file's intentional panics (`r33:` messages) out of the output.
fn quiet_panics() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !notify_core::failure::panic_message(info.payload()).starts_with("r33:") {
                default(info);
            }
        }));
    });
}

/// (in_drop, thread name, the report's line) of each failure.
type Reports = Arc<Mutex<Vec<(bool, String, String)>>>;

fn capture(notifier: &Notifier) -> Reports {
    let reports: Reports = Arc::default();
    let sink = reports.clone();
    notifier.set_failure_hook(move |f: &SubscriberFailure| {
        let thread = std::thread::current().name().unwrap_or("").to_owned();
        sink.lock().unwrap().push((f.in_drop(), thread, f.to_string()));
    });
    reports
}

fn this_thread() -> String {
    std::thread::current().name().unwrap_or("").to_owned()
}

/// An evented subscriber holding a [`PanicsOnDrop`].
struct Holding {
    _held: PanicsOnDrop,
    starts: Arc<AtomicU64>,
    finishes: Arc<AtomicU64>,
}

impl EventedSubscriber for Holding {
    fn start(&self, _: &str, _: &EventContext, _: &Payload) {
        self.starts.fetch_add(1, Ordering::SeqCst);
    }

    fn finish(&self, _: &str, _: &EventContext, _: &Payload) {
        self.finishes.fetch_add(1, Ordering::SeqCst);
    }
}

/// `FailurePolicy::Detach` removes a subscriber that panicked; its captured value panics when
/// dropped. The drop happens on the instrumenting thread when the event lets go of the listener
/// set; the panic used to unwind out of `instrument`. Now `instrument` returns the block's value,
/// both failures are reported once each (the callback's, then the drop's), and the next event
/// reaches the other subscriber.
#[test]
fn issue33_3_a_detached_subscriber_whose_drop_panics_does_not_unwind_into_instrument() {
    quiet_panics();
    let notifier = Notifier::new();
    let reports = capture(&notifier);
    notifier.set_failure_policy(FailurePolicy::Detach);
    let drops = Arc::new(AtomicU64::new(0));
    let held = PanicsOnDrop(drops.clone());
    let _ = notifier.subscribe(
        "query.sql",
        Subscriber::event(move |_: &Event| {
            let _ = &held;
            panic!("r33: callback");
        })
        .named("audit"),
    );
    let others = Arc::new(AtomicU64::new(0));
    let o = others.clone();
    let _ = notifier.subscribe(
        "query.sql",
        Subscriber::event(move |_: &Event| {
            o.fetch_add(1, Ordering::SeqCst);
        }),
    );
    let value = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        notifier.instrument("query.sql", Payload::new, |_| 7)
    }));
    assert_eq!(value.ok(), Some(7), "nothing unwound out of instrument");
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    assert_eq!(notifier.instrument("query.sql", Payload::new, |_| 8), 8);
    assert_eq!(others.load(Ordering::SeqCst), 2);
    let me = this_thread();
    assert_eq!(
        *reports.lock().unwrap(),
        [
            (
                false,
                me.clone(),
                "subscriber `audit` (event, subscription #1) panicked on `query.sql`: r33: callback".to_owned()
            ),
            (
                true,
                me,
                "subscriber `audit` (event, subscription #1) panicked when dropped: r33: dropped".to_owned()
            ),
        ]
    );
    assert_eq!(notifier.failures(), 2);
}

/// A subscriber unsubscribed while one of its events is in flight: the event keeps its listener
/// set, and the instrumenting thread drops the last reference when the event finishes. The panic
/// used to unwind out of `instrument`; now the event is finished (the subscriber still gets its
/// finish), the block's value returned, and the drop's panic reported once.
#[test]
fn issue33_3_unsubscribed_while_in_flight_its_drop_panic_does_not_unwind_into_instrument() {
    quiet_panics();
    let notifier = Notifier::new();
    let reports = capture(&notifier);
    let drops = Arc::new(AtomicU64::new(0));
    let (starts, finishes) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let subscription = notifier.subscribe(
        "render.view",
        Subscriber::evented(Holding {
            _held: PanicsOnDrop(drops.clone()),
            starts: starts.clone(),
            finishes: finishes.clone(),
        }),
    );
    let value = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        notifier.instrument("render.view", Payload::new, |_| {
            subscription.unsubscribe().unwrap();
            "done"
        })
    }));
    assert_eq!(value.ok(), Some("done"), "nothing unwound out of instrument");
    assert_eq!((starts.load(Ordering::SeqCst), finishes.load(Ordering::SeqCst)), (1, 1));
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    assert_eq!(
        *reports.lock().unwrap(),
        [(
            true,
            this_thread(),
            "subscriber `evented` (evented, subscription #1) panicked when dropped: r33: dropped".to_owned()
        )]
    );
    assert_eq!(notifier.failures(), 1);
    // Later events: nobody listens, nothing else is reported.
    notifier.instrument("render.view", Payload::new, |_| ());
    assert_eq!(notifier.failures(), 1);
}

/// The thread that unsubscribes drops the last reference (no event in flight): the panic used to
/// unwind out of `unsubscribe`; now it returns `Ok` and the drop is reported once.
#[test]
fn issue33_3_unsubscribe_of_a_subscriber_whose_drop_panics_returns_ok() {
    quiet_panics();
    let notifier = Notifier::new();
    let reports = capture(&notifier);
    let drops = Arc::new(AtomicU64::new(0));
    let held = PanicsOnDrop(drops.clone());
    let subscription = notifier.subscribe(
        "x",
        Subscriber::timed(
            move |_: &str,
                  _: std::time::SystemTime,
                  _: std::time::SystemTime,
                  _: notify_core::context::TransactionId,
                  _: &Payload| {
                let _ = &held;
            },
        )
        .named("timer"),
    );
    notifier.instrument("x", Payload::new, |_| ());
    let unsubscribed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| subscription.unsubscribe()));
    assert!(
        matches!(unsubscribed, Ok(Ok(()))),
        "unsubscribe returned Ok without unwinding"
    );
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    let lines: Vec<(bool, String)> = reports.lock().unwrap().iter().map(|r| (r.0, r.2.clone())).collect();
    assert_eq!(
        lines,
        [(
            true,
            "subscriber `timer` (timed, subscription #1) panicked when dropped: r33: dropped".to_owned()
        )]
    );
    assert_eq!(notifier.failures(), 1);
}

/// The notifier itself is dropped with subscriptions whose drops panic: each is reported once
/// through the hook it had (the entries keep it), and nothing unwinds out of the drop.
#[test]
fn issue33_3_dropping_a_notifier_with_subscribers_whose_drop_panics_reports_each_once() {
    quiet_panics();
    let notifier = Notifier::new();
    let reports = capture(&notifier);
    let drops = Arc::new(AtomicU64::new(0));
    for name in ["a", "b", "c"] {
        let held = PanicsOnDrop(drops.clone());
        let _ = notifier.subscribe(
            name,
            Subscriber::event(move |_: &Event| {
                let _ = &held;
            }),
        );
    }
    notifier.instrument("b", Payload::new, |_| ());
    let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(notifier)));
    assert!(dropped.is_ok(), "nothing unwound out of the notifier's drop");
    assert_eq!(drops.load(Ordering::SeqCst), 3);
    let mut lines: Vec<String> = reports.lock().unwrap().iter().map(|r| r.2.clone()).collect();
    lines.sort();
    assert_eq!(
        lines,
        [1, 2, 3].map(|i| format!("subscriber `event` (event, subscription #{i}) panicked when dropped: r33: dropped"))
    );
}

/// Same class: a failure hook replaced while it runs, whose captured value panics when dropped.
/// The event's clone of the old hook is its last reference: dropped under the guard, it used to
/// unwind out of `instrument`.
#[test]
fn issue33_3_a_failure_hook_replaced_while_it_runs_whose_drop_panics_does_not_unwind() {
    quiet_panics();
    let notifier = Notifier::new();
    let drops = Arc::new(AtomicU64::new(0));
    let held = PanicsOnDrop(drops.clone());
    let n = notifier.clone();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    notifier.set_failure_hook(move |f: &SubscriberFailure| {
        let _ = &held;
        let sink = sink.clone();
        // Replaced from inside the hook: the old one's last reference is the event's clone.
        n.set_failure_hook(move |f: &SubscriberFailure| sink.lock().unwrap().push(f.message().to_owned()));
        let _ = f;
    });
    let _ = notifier.subscribe("x", Subscriber::event(|_: &Event| panic!("r33: callback")));
    let value = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        notifier.instrument("x", Payload::new, |_| 1)
    }));
    assert_eq!(value.ok(), Some(1));
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    notifier.instrument("x", Payload::new, |_| ());
    assert_eq!(
        *seen.lock().unwrap(),
        ["r33: callback"],
        "the second failure, through the new hook"
    );
    assert_eq!(notifier.failures(), 2);
}

/// A handle's event holds its listener set from `start` to `finish`: unsubscribed meanwhile, the
/// subscriber is dropped when the handle finishes (or is dropped). Neither unwinds; the evented
/// subscriber still gets its finish, and the drop is reported once.
#[test]
fn issue33_3_a_handle_finishing_after_an_unsubscribe_does_not_unwind() {
    quiet_panics();
    let notifier = Notifier::new();
    let reports = capture(&notifier);
    let drops = Arc::new(AtomicU64::new(0));
    let (starts, finishes) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let subscription = notifier.subscribe(
        "job.run",
        Subscriber::evented(Holding {
            _held: PanicsOnDrop(drops.clone()),
            starts: starts.clone(),
            finishes: finishes.clone(),
        }),
    );
    let mut handle = notifier.build_handle("job.run", Payload::new());
    handle.start().unwrap();
    subscription.unsubscribe().unwrap();
    assert_eq!(
        drops.load(Ordering::SeqCst),
        0,
        "the handle's event keeps the subscriber"
    );
    let finished = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        let finished = handle.finish();
        drop(handle);
        finished
    }));
    assert!(matches!(finished, Ok(Ok(()))), "finish returned Ok without unwinding");
    assert_eq!(
        (
            starts.load(Ordering::SeqCst),
            finishes.load(Ordering::SeqCst),
            drops.load(Ordering::SeqCst)
        ),
        (1, 1, 1)
    );
    assert_eq!(reports.lock().unwrap().len(), 1);
    assert!(reports.lock().unwrap()[0].0, "a drop failure");
    assert_eq!(notifier.failures(), 1);
}

/// Same class: the failure hook is dropped with the notifier's failure sink, wherever its last
/// reference goes (here the notifier's drop; it can be the last registry entry's, on an
/// instrumenting thread). A hook whose captures panic when dropped is swallowed there.
#[test]
fn issue33_3_a_failure_hook_that_panics_when_dropped_does_not_unwind_out_of_the_notifiers_drop() {
    quiet_panics();
    let notifier = Notifier::new();
    let drops = Arc::new(AtomicU64::new(0));
    let held = PanicsOnDrop(drops.clone());
    notifier.set_failure_hook(move |_: &SubscriberFailure| {
        let _ = &held;
    });
    let _ = notifier.subscribe("x", Subscriber::event(|_: &Event| panic!("r33: callback")));
    notifier.instrument("x", Payload::new, |_| ());
    assert_eq!(notifier.failures(), 1);
    let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(notifier)));
    assert!(dropped.is_ok(), "nothing unwound out of the notifier's drop");
    assert_eq!(drops.load(Ordering::SeqCst), 1, "the hook was dropped");
}
