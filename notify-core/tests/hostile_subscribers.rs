//! Subscribers that misbehave on purpose (issue 16): a panic whose payload panics when dropped, and
//! a subscriber that instruments its own event. Each test asserts the exact outcome.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use notify_core::{
    context::EventContext, context::TransactionId, failure::FailurePolicy, failure::SubscriberErrors,
    failure::SubscriberFailure, Event, EventedSubscriber, Notifier, Payload, SilenceableSubscriber, Subscriber,
};

#[path = "support/phases.rs"]
mod phases;
use phases::{PanicsInSilenced, PhaseRecorder};

/// A panic payload whose `Drop` panics too.
struct Bomb;

impl Drop for Bomb {
    fn drop(&mut self) {
        panic!("the bomb went off while its panic was dropped");
    }
}

/// Silences the default panic hook for the intentional panics of this file.
fn quiet_panics() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let bomb = info.payload().downcast_ref::<Bomb>().is_some();
            let message = notify_core::failure::panic_message(info.payload());
            if !bomb && !message.contains("bomb") && !message.contains("boom") {
                default(info);
            }
        }));
    });
}

fn capture_failures(notifier: &Notifier) -> Arc<Mutex<Vec<SubscriberFailure>>> {
    let failures = Arc::new(Mutex::new(Vec::new()));
    let sink = failures.clone();
    notifier.set_failure_hook(move |f: &SubscriberFailure| sink.lock().unwrap().push(f.clone()));
    failures
}

#[test]
fn a_panic_payload_that_panics_when_dropped_never_reaches_the_caller() {
    quiet_panics();
    let notifier = Notifier::new();
    let failures = capture_failures(&notifier);
    let after = Arc::new(AtomicUsize::new(0));
    let _ = notifier.subscribe(
        "query.sql",
        Subscriber::event(|_: &Event| std::panic::panic_any(Bomb)).named("bomb"),
    );
    let counter = after.clone();
    let _ = notifier.subscribe(
        "query.sql",
        Subscriber::event(move |_: &Event| {
            counter.fetch_add(1, Ordering::SeqCst);
        }),
    );
    for _ in 0..3 {
        assert_eq!(notifier.instrument("query.sql", Payload::new, |_| 7), 7);
    }
    assert_eq!(after.load(Ordering::SeqCst), 3);
    let failures = failures.lock().unwrap();
    assert_eq!(failures.len(), 3);
    assert_eq!(failures[0].subscriber(), "bomb");
    assert_eq!(failures[0].message(), "<non-string panic payload>");
}

#[test]
fn a_bomb_in_every_callback_kind_and_in_silenced_is_contained() {
    quiet_panics();
    struct Evented;
    impl EventedSubscriber for Evented {
        fn start(&self, _: &str, _: &EventContext, _: &Payload) {
            std::panic::panic_any(Bomb)
        }
        fn finish(&self, _: &str, _: &EventContext, _: &Payload) {
            std::panic::panic_any(Bomb)
        }
    }
    struct Silencer;
    impl EventedSubscriber for Silencer {
        fn start(&self, _: &str, _: &EventContext, _: &Payload) {}
        fn finish(&self, _: &str, _: &EventContext, _: &Payload) {}
    }
    impl SilenceableSubscriber for Silencer {
        fn silenced(&self, _: &str) -> bool {
            std::panic::panic_any(Bomb)
        }
    }
    let notifier = Notifier::new();
    let failures = capture_failures(&notifier);
    let _ = notifier.subscribe("render.view", Subscriber::evented(Evented));
    let _ = notifier.subscribe(
        "render.view",
        Subscriber::timed(|_: &str, _, _, _: TransactionId, _: &Payload| std::panic::panic_any(Bomb)),
    );
    let _ = notifier.subscribe("render.view", Subscriber::silenceable(Silencer));
    // `listening`: the bomb in `silenced` counts as silenced, unreported; the others listen.
    assert!(notifier.listening("render.view"));
    assert_eq!(notifier.instrument("render.view", Payload::new, |_| "ok"), "ok");
    let now = std::time::SystemTime::now();
    notifier.publish("render.view", now, now, TransactionId::new(1), Payload::new());
    let kinds: Vec<String> = failures.lock().unwrap().iter().map(|f| f.kind().to_string()).collect();
    // instrument: silenced, evented start, timed, evented finish; publish: timed, then silenced
    // (asked before a silenceable subscriber's `publish`; the evented one has the default, empty).
    assert_eq!(
        kinds,
        ["silenceable", "evented", "timed", "evented", "timed", "silenceable"]
    );
}

#[test]
fn a_failure_hook_that_panics_with_a_bomb_is_contained() {
    quiet_panics();
    let notifier = Notifier::new();
    let hooked = Arc::new(AtomicUsize::new(0));
    let counter = hooked.clone();
    notifier.set_failure_hook(move |_: &SubscriberFailure| {
        counter.fetch_add(1, Ordering::SeqCst);
        std::panic::panic_any(Bomb)
    });
    let _ = notifier.subscribe("query.sql", Subscriber::event(|_: &Event| panic!("boom")));
    let _ = notifier.subscribe("query.sql", Subscriber::event(|_: &Event| panic!("boom")));
    assert_eq!(notifier.instrument("query.sql", Payload::new, |_| 1), 1);
    assert_eq!(hooked.load(Ordering::SeqCst), 2);
}

#[test]
fn strict_mode_still_raises_the_list_when_a_payload_is_a_bomb() {
    quiet_panics();
    let notifier = Notifier::new();
    let _ = capture_failures(&notifier);
    notifier.set_failure_policy(FailurePolicy::Strict);
    let _ = notifier.subscribe("query.sql", Subscriber::event(|_: &Event| std::panic::panic_any(Bomb)));
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        notifier.instrument("query.sql", Payload::new, |_| ())
    }))
    .unwrap_err();
    let errors = caught.downcast::<SubscriberErrors>().expect("the strict list");
    assert_eq!(errors.failures().len(), 1);
    assert_eq!(errors.failures()[0].message(), "<non-string panic payload>");
}

/// A subscriber that instruments its own event from its callback, counting its calls.
fn recursive(notifier: &Notifier, name: &'static str) -> Arc<AtomicUsize> {
    let calls = Arc::new(AtomicUsize::new(0));
    let (again, counter) = (notifier.clone(), calls.clone());
    let _ = notifier.subscribe(
        name,
        Subscriber::timed(move |_: &str, _, _, _: TransactionId, _: &Payload| {
            counter.fetch_add(1, Ordering::SeqCst);
            again.instrument(name, Payload::new, |_| ());
        }),
    );
    calls
}

#[test]
fn a_subscriber_instrumenting_its_own_event_stops_at_the_default_depth() {
    let notifier = Notifier::new();
    assert_eq!(notifier.max_delivery_depth(), 32);
    let calls = recursive(&notifier, "loop.self");
    assert_eq!(notifier.instrument("loop.self", Payload::new, |_| 5), 5);
    // Depth 0 to 31 delivered; the event started 32 deliveries deep is counted, not delivered.
    assert_eq!(calls.load(Ordering::SeqCst), 32);
    assert_eq!(notifier.undelivered_too_deep(), 1);
    // The thread's depth is back to 0: the next event goes as deep again.
    notifier.instrument("loop.self", Payload::new, |_| ());
    assert_eq!(calls.load(Ordering::SeqCst), 64);
    assert_eq!(notifier.undelivered_too_deep(), 2);
}

#[test]
fn the_depth_limit_is_configurable_and_covers_evented_starts_and_publish() {
    struct Again(Notifier, Arc<AtomicUsize>);
    impl EventedSubscriber for Again {
        fn start(&self, name: &str, _: &EventContext, _: &Payload) {
            self.1.fetch_add(1, Ordering::SeqCst);
            let now = std::time::SystemTime::now();
            self.0
                .publish("loop.published", now, now, TransactionId::new(1), Payload::new());
            self.0.instrument(name, Payload::new, |_| ());
        }
        fn finish(&self, _: &str, _: &EventContext, _: &Payload) {}
    }
    let notifier = Notifier::new();
    notifier.set_max_delivery_depth(3);
    assert_eq!(notifier.max_delivery_depth(), 3);
    let starts = Arc::new(AtomicUsize::new(0));
    let _ = notifier.subscribe(
        "loop.evented",
        Subscriber::evented(Again(notifier.clone(), starts.clone())),
    );
    let published = recursive(&notifier, "loop.published");
    notifier.instrument("loop.evented", Payload::new, |_| ());
    // Starts at depth 0, 1, 2; the instrument at depth 3 is refused.
    assert_eq!(starts.load(Ordering::SeqCst), 3);
    // Each start publishes at depth d+1: delivered when d+1 < 3 (d = 0, 1), and each delivered
    // publish recurses through `recursive` until the limit: from depth 1, calls at depths 1 and 2
    // (2 calls, 1 refused); from depth 2, 1 call (1 refused); the publish at depth 3 is refused.
    assert_eq!(published.load(Ordering::SeqCst), 3);
    assert_eq!(notifier.undelivered_too_deep(), 4);
    notifier.set_max_delivery_depth(0);
    assert_eq!(notifier.max_delivery_depth(), 1, "at least one level");
}

/// A subscriber whose `Drop` panics.
struct BoomOnDrop;

impl Drop for BoomOnDrop {
    fn drop(&mut self) {
        panic!("boom: a subscriber's Drop panicked");
    }
}

/// The registry's locks are never held while user code runs: a subscriber whose `Drop` panics
/// (when it is unsubscribed: caught and reported, issue 33.3) and a failure hook whose `Drop`
/// panics (when it is replaced: in the caller, whose own value it is), and the notifier goes on
/// working afterwards (no poisoned lock).
#[test]
fn a_panicking_drop_of_a_subscriber_or_hook_leaves_the_notifier_working() {
    quiet_panics();
    let notifier = Notifier::new();
    let boom = BoomOnDrop;
    let subscription = notifier.subscribe(
        "query.sql",
        Subscriber::event(move |_: &Event| {
            let _ = &boom;
        }),
    );
    let unsubscribed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| subscription.unsubscribe()));
    assert!(
        matches!(unsubscribed, Ok(Ok(()))),
        "issue 33.3: the subscriber's Drop panic is caught and reported, never raised in the caller"
    );
    assert_eq!(notifier.failures(), 1, "reported through the (default) hook");

    let boom = BoomOnDrop;
    notifier.set_failure_hook(move |_: &SubscriberFailure| {
        let _ = &boom;
    });
    let replaced = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        notifier.set_failure_hook(|_: &SubscriberFailure| {});
    }));
    assert!(replaced.is_err(), "the old hook's Drop panic reaches the caller");

    let failures = capture_failures(&notifier);
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = seen.clone();
    let again = notifier.subscribe(
        "query.sql",
        Subscriber::event(move |_: &Event| {
            counter.fetch_add(1, Ordering::SeqCst);
        }),
    );
    let _ = notifier.subscribe("query.sql", Subscriber::event(|_: &Event| panic!("boom")).named("boom"));
    notifier.instrument("query.sql", Payload::new, |_| {});
    assert_eq!(seen.load(Ordering::SeqCst), 1);
    assert_eq!(failures.lock().unwrap().len(), 1);
    assert_eq!(again.unsubscribe(), Ok(()));
    assert_eq!(notifier.unsubscribe_name("query.sql"), 1);
    notifier.instrument("query.sql", Payload::new, |_| {});
    assert_eq!(seen.load(Ordering::SeqCst), 1);
}

/// The delivery loop calls several subscribers per round (two; four was tried): a panic in any
/// call of a round, in calls in a row, in the first call and in the last, each resumes with the
/// next subscriber and is one failure, in order. The sets put a panic in every position of a
/// round of up to four.
#[test]
fn panics_in_any_call_of_a_round_and_in_a_row_each_resume_with_the_next() {
    quiet_panics();
    let sets: [&[usize]; 4] = [&[0, 2, 3, 5], &[0, 4, 5, 9], &[1, 2, 3], &[3, 6, 7, 8]];
    for panicking in sets {
        let notifier = Notifier::new();
        let failures = capture_failures(&notifier);
        let calls: Arc<Mutex<Vec<usize>>> = Arc::default();
        for i in 0..10 {
            let calls = calls.clone();
            let timed = move |_: &str, _, _, _: TransactionId, _: &Payload| {
                calls.lock().unwrap().push(i);
                if panicking.contains(&i) {
                    panic!("boom {i}");
                }
            };
            let _ = notifier.subscribe("rounds.test", Subscriber::timed(timed).named(format!("timed {i}")));
        }
        notifier.instrument("rounds.test", Payload::new, |_| ());
        assert_eq!(*calls.lock().unwrap(), (0..10).collect::<Vec<_>>(), "{panicking:?}");
        let reported: Vec<String> = failures
            .lock()
            .unwrap()
            .iter()
            .map(|f| f.subscriber().to_owned())
            .collect();
        let expected: Vec<String> = panicking.iter().map(|i| format!("timed {i}")).collect();
        assert_eq!(reported, expected);
    }
}

/// Each delivery loop runs under one unwinding guard: when the 2nd and the 4th of five subscribers
/// of a kind panic, the loop resumes with the next one, every subscriber of every kind is still
/// called in subscription order (evented ones at start and finish), and each panic is one failure,
/// reported in the order the panics happened.
#[test]
fn a_panic_in_the_middle_of_a_group_resumes_with_the_next_subscriber() {
    quiet_panics();
    type Calls = Arc<Mutex<Vec<String>>>;
    struct Evented(usize, Calls);
    impl EventedSubscriber for Evented {
        fn start(&self, _: &str, _: &EventContext, _: &Payload) {
            self.1.lock().unwrap().push(format!("start {}", self.0));
            if self.0 % 2 == 1 {
                panic!("boom start {}", self.0);
            }
        }
        fn finish(&self, _: &str, _: &EventContext, _: &Payload) {
            self.1.lock().unwrap().push(format!("finish {}", self.0));
            if self.0 % 2 == 1 {
                panic!("boom finish {}", self.0);
            }
        }
    }
    let notifier = Notifier::new();
    let failures = capture_failures(&notifier);
    let calls: Calls = Arc::default();
    for i in 0..5 {
        let (t, e) = (calls.clone(), calls.clone());
        let _ = notifier.subscribe(
            "mixed.test",
            Subscriber::evented(Evented(i, calls.clone())).named(format!("evented {i}")),
        );
        let timed = move |_: &str, _, _, _: TransactionId, _: &Payload| {
            t.lock().unwrap().push(format!("timed {i}"));
            if i % 2 == 1 {
                panic!("boom timed {i}");
            }
        };
        let _ = notifier.subscribe("mixed.test", Subscriber::timed(timed).named(format!("timed {i}")));
        let event = move |_: &Event| {
            e.lock().unwrap().push(format!("event {i}"));
            if i % 2 == 1 {
                panic!("boom event {i}");
            }
        };
        let _ = notifier.subscribe("mixed.test", Subscriber::event(event).named(format!("event {i}")));
    }
    assert_eq!(notifier.instrument("mixed.test", Payload::new, |_| 7), 7);
    let expected: Vec<String> = ["start", "timed", "finish", "event"]
        .iter()
        .flat_map(|kind| (0..5).map(move |i| format!("{kind} {i}")))
        .collect();
    assert_eq!(*calls.lock().unwrap(), expected);
    let reported: Vec<(String, String)> = failures
        .lock()
        .unwrap()
        .iter()
        .map(|f| (f.subscriber().to_owned(), f.message().to_owned()))
        .collect();
    let mut want = Vec::new();
    for (kind, what) in [
        ("evented", "start"),
        ("timed", "timed"),
        ("evented", "finish"),
        ("event", "event"),
    ] {
        for i in [1, 3] {
            want.push((format!("{kind} {i}"), format!("boom {what} {i}")));
        }
    }
    assert_eq!(reported, want);
}

/// A `payload` closure that panics: the event never started, so nothing is delivered (no evented
/// `finish` without its `start`), the `silenced` failure asked before it is still reported once,
/// the panic reaches the caller, and the thread's context and nesting are as before.
#[test]
fn a_payload_closure_that_panics_delivers_nothing_and_reports_the_silenced_failure() {
    quiet_panics();
    let notifier = Notifier::new();
    let failures = capture_failures(&notifier);
    let calls = Arc::new(Mutex::new(Vec::new()));
    let _ = notifier.subscribe("payload.panics", Subscriber::evented(PhaseRecorder(calls.clone())));
    let sink = calls.clone();
    let _ = notifier.subscribe(
        "payload.panics",
        Subscriber::event(move |e: &Event| sink.lock().unwrap().push(format!("event {}", e.name()))),
    );
    let _ = notifier.subscribe("payload.panics", Subscriber::silenceable(PanicsInSilenced));
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        notifier.instrument("payload.panics", || panic!("boom in payload"), |_| ())
    }));
    let message = notify_core::failure::panic_message(&*caught.unwrap_err());
    assert_eq!(message, "boom in payload");
    assert!(calls.lock().unwrap().is_empty(), "{:?}", calls.lock().unwrap());
    let reported: Vec<(String, String)> = failures
        .lock()
        .unwrap()
        .iter()
        .map(|f| (f.kind().to_string(), f.message().to_owned()))
        .collect();
    assert_eq!(reported, [("silenceable".to_owned(), "boom in silenced".to_owned())]);
    assert_eq!(notify_core::context::current_event_id(), None);
    // The next event is delivered whole, as a root.
    notifier.instrument("payload.panics", Payload::new, |_| ());
    assert_eq!(
        *calls.lock().unwrap(),
        ["start payload.panics", "finish payload.panics", "event payload.panics"]
    );
    assert_eq!(failures.lock().unwrap().len(), 2);
}
