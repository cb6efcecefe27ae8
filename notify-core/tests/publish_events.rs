//! `Notifier::publish_events`: a batch delivers each event exactly as `publish_event` would, one
//! lookup per run of one name, looked up again when the subscriptions change during the batch.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use notify_core::{failure::FailurePolicy, Event, Notifier, Pattern, Payload, Subscriber, Subscription};

fn event(name: &str, seq: u64) -> Event {
    let now = Instant::now();
    Event::new(name.to_owned(), now, now, Payload::new().with("seq", seq))
}

/// `n` events named `job.batch`, `seq` 0 to `n - 1`.
fn batch(n: u64) -> Vec<Event> {
    (0..n).map(|seq| event("job.batch", seq)).collect()
}

/// Every heard event as `name seq`, in order.
fn recorder(into: &Arc<Mutex<Vec<String>>>) -> Subscriber {
    let into = into.clone();
    Subscriber::event(move |e: &Event| {
        let seq = e.payload().get("seq").map(ToString::to_string).unwrap_or_default();
        into.lock().unwrap().push(format!("{} {seq}", e.name()));
    })
}

#[test]
fn a_batch_of_mixed_names_reaches_each_names_listeners_in_order() {
    let notifier = Notifier::new();
    let (all, only_a) = (Arc::default(), Arc::default());
    let _all = notifier.subscribe(Pattern::all(), recorder(&all));
    let _a = notifier.subscribe("a.batch", recorder(&only_a));
    // Names equal by text but not by pointer (owned strings) are one run.
    let names = ["a.batch", "a.batch", "b.batch", "a.batch", "unheard", "a.batch"];
    notifier.publish_events(&mut names.iter().zip(0..).map(|(name, seq)| event(name, seq)).collect());
    assert_eq!(
        *all.lock().unwrap(),
        [
            "a.batch 0",
            "a.batch 1",
            "b.batch 2",
            "a.batch 3",
            "unheard 4",
            "a.batch 5"
        ]
    );
    assert_eq!(
        *only_a.lock().unwrap(),
        ["a.batch 0", "a.batch 1", "a.batch 3", "a.batch 5"]
    );
    // Nobody listening: nothing happens (and an empty batch is fine).
    Notifier::new().publish_events(&mut batch(3));
    notifier.publish_events(&mut Vec::new());
    assert_eq!(all.lock().unwrap().len(), 6);
}

#[test]
fn a_subscriber_added_during_a_batch_hears_the_events_after_it() {
    let notifier = Notifier::new();
    let late = Arc::new(Mutex::new(Vec::new()));
    let added: Arc<Mutex<Option<Subscription>>> = Arc::default();
    let (n2, late2, added2) = (notifier.clone(), late.clone(), added.clone());
    let _first = notifier.subscribe(
        "job.batch",
        Subscriber::event(move |e: &Event| {
            if e.payload().get("seq").map(ToString::to_string).as_deref() == Some("2") {
                *added2.lock().unwrap() = Some(n2.subscribe("job.batch", recorder(&late2)));
            }
        }),
    );
    notifier.publish_events(&mut batch(6));
    // Subscribed while event 2 was delivered: 3, 4 and 5 (as with separate publish_event calls).
    assert_eq!(*late.lock().unwrap(), ["job.batch 3", "job.batch 4", "job.batch 5"]);
    assert!(added.lock().unwrap().is_some());
}

#[test]
fn a_subscriber_unsubscribed_during_a_batch_hears_nothing_after_it() {
    let notifier = Notifier::new();
    let heard = Arc::new(AtomicUsize::new(0));
    let me: Arc<Mutex<Option<Subscription>>> = Arc::default();
    let (heard2, me2) = (heard.clone(), me.clone());
    *me.lock().unwrap() = Some(notifier.subscribe(
        "job.batch",
        Subscriber::event(move |_: &Event| {
            if heard2.fetch_add(1, Ordering::Relaxed) + 1 == 3 {
                let subscription = me2.lock().unwrap().take().expect("subscribed");
                subscription.unsubscribe().expect("still subscribed");
            }
        }),
    ));
    let others = Arc::default();
    let _others = notifier.subscribe("job.batch", recorder(&others));
    notifier.publish_events(&mut batch(10));
    assert_eq!(heard.load(Ordering::Relaxed), 3);
    assert_eq!(others.lock().unwrap().len(), 10);
}

#[test]
fn a_subscriber_detached_for_a_panic_during_a_batch_is_not_called_again() {
    let notifier = Notifier::new();
    notifier.set_failure_policy(FailurePolicy::Detach);
    let calls = Arc::new(AtomicUsize::new(0));
    let calls2 = calls.clone();
    let _bad = notifier.subscribe(
        "job.batch",
        Subscriber::event(move |_: &Event| {
            calls2.fetch_add(1, Ordering::Relaxed);
            panic!("bad subscriber");
        }),
    );
    let good = Arc::default();
    let _good = notifier.subscribe("job.batch", recorder(&good));
    notifier.publish_events(&mut batch(5));
    assert_eq!(calls.load(Ordering::Relaxed), 1);
    assert_eq!(good.lock().unwrap().len(), 5);
    assert_eq!((notifier.subscriber_count(), notifier.failures()), (1, 1));
}

#[test]
fn timed_subscribers_of_a_batch_get_each_events_wall_clock_edges() {
    use notify_core::context::TransactionId;
    use std::time::{Duration, SystemTime};
    let notifier = Notifier::new();
    let edges = Arc::new(Mutex::new(Vec::new()));
    let sink = edges.clone();
    let _timed = notifier.subscribe(
        "job.batch",
        Subscriber::timed(
            move |_: &str, start: SystemTime, finish: SystemTime, _: TransactionId, _: &Payload| {
                sink.lock().unwrap().push((start, finish));
            },
        ),
    );
    let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let mut events: Vec<Event> = (1..=3)
        .map(|ms| Event::at_wall_clock("job.batch", start, Duration::from_millis(ms), Payload::new()))
        .collect();
    let expected: Vec<_> = events.iter().map(|e| (e.start_time(), e.end_time())).collect();
    notifier.publish_events(&mut events);
    assert!(events.is_empty());
    assert_eq!(*edges.lock().unwrap(), expected);
    let got = edges.lock().unwrap().clone();
    for ((from, to), ms) in got.into_iter().zip(1..) {
        assert_eq!(to.duration_since(from).unwrap(), Duration::from_millis(ms));
    }
}

/// Owned subscribers (an exporter's) get the whole event in an `Arc` (moved out of the vector, not
/// copied field by field into a lesser one), after the event-object subscribers saw it in place.
#[test]
fn owned_subscribers_of_a_batch_get_whole_events_and_the_vector_is_left_empty() {
    use notify_core::OwnedEventSubscriber;
    struct Keep(Mutex<Vec<Arc<Event>>>);
    impl OwnedEventSubscriber for Keep {
        fn deliver(&self, event: &Arc<Event>) {
            self.0.lock().unwrap().push(event.clone());
        }
    }
    let notifier = Notifier::new();
    let kept = Arc::new(Keep(Mutex::new(Vec::new())));
    let seen = Arc::default();
    let _seen = notifier.subscribe("job.batch", recorder(&seen));
    let _kept = notifier.subscribe("job.batch", Subscriber::owned(kept.clone()));
    let mut events = batch(4);
    let sent: Vec<_> = events
        .iter()
        .map(|e| (e.id(), e.trace_id(), e.start_time(), e.payload().clone()))
        .collect();
    let capacity = events.capacity();
    notifier.publish_events(&mut events);
    assert_eq!((events.len(), events.capacity()), (0, capacity));
    let got: Vec<_> = kept
        .0
        .lock()
        .unwrap()
        .iter()
        .map(|e| (e.id(), e.trace_id(), e.start_time(), e.payload().clone()))
        .collect();
    assert_eq!(got, sent);
    assert!(kept.0.lock().unwrap().iter().all(|e| e.name() == "job.batch"));
    assert_eq!(
        *seen.lock().unwrap(),
        ["job.batch 0", "job.batch 1", "job.batch 2", "job.batch 3"]
    );
}

/// Under `FailurePolicy::Strict` the failure's panic reaches the caller after the failing event;
/// the events after it are not delivered and the vector is empty.
#[test]
fn a_strict_failure_stops_the_batch_and_empties_the_vector() {
    let notifier = Notifier::new();
    notifier.set_failure_policy(FailurePolicy::Strict);
    let seen = Arc::default();
    let _seen = notifier.subscribe("job.batch", recorder(&seen));
    let _bad = notifier.subscribe(
        "job.batch",
        Subscriber::event(|e: &Event| {
            if e.payload().get("seq").map(ToString::to_string).as_deref() == Some("1") {
                panic!("bad subscriber");
            }
        }),
    );
    let mut events = batch(4);
    let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| notifier.publish_events(&mut events)));
    assert!(unwound.is_err());
    assert!(events.is_empty());
    assert_eq!(*seen.lock().unwrap(), ["job.batch 0", "job.batch 1"]);
}
