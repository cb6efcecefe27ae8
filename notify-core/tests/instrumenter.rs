//! `Instrumenter` (issue 19, item 2): AS::N's per-thread instrumenter with its id, `instrument`,
//! `start`, `finish` and `build_handle`, per thread and per notifier.

use std::sync::{Arc, Mutex};

use notify_core::{
    context::EventContext, context::TransactionId, event::EventId, Event, EventedSubscriber, Notifier, NotifyError,
    Pattern, Payload, Subscriber,
};

/// Every event delivered to an event-object subscriber of all names: (name, id, parent id, payload keys).
type Seen = Arc<Mutex<Vec<(String, EventId, Option<EventId>, Vec<String>)>>>;

fn recording(notifier: &Notifier) -> Seen {
    let seen: Seen = Arc::default();
    let sink = seen.clone();
    let _ = notifier.subscribe(
        Pattern::all(),
        Subscriber::event(move |e: &Event| {
            let keys = e.payload().keys().map(str::to_owned).collect();
            sink.lock()
                .unwrap()
                .push((e.name().to_owned(), e.id(), e.parent_id(), keys));
        }),
    );
    seen
}

#[test]
fn i1_the_id_is_the_threads_transaction_id_and_what_timed_subscribers_get() {
    let notifier = Notifier::new();
    let ids = Arc::new(Mutex::new(Vec::new()));
    let sink = ids.clone();
    let _ = notifier.subscribe(
        "x",
        Subscriber::timed(move |_: &str, _, _, id: TransactionId, _: &Payload| sink.lock().unwrap().push(id)),
    );
    let here = notifier.instrumenter();
    assert_eq!(here.id(), notify_core::context::transaction_id());
    assert_eq!(
        here.id(),
        notify_core::instrumenter().id(),
        "one id per thread, whatever the notifier"
    );
    here.instrument("x", Payload::new, |_| ());
    here.start("x", Payload::new());
    here.finish("x", Payload::new()).unwrap();
    let n = notifier.clone();
    let there = std::thread::spawn(move || {
        let i = n.instrumenter();
        i.instrument("x", Payload::new, |_| ());
        i.id()
    })
    .join()
    .unwrap();
    assert_ne!(here.id(), there);
    assert_eq!(*ids.lock().unwrap(), [here.id(), here.id(), there]);
}

#[test]
fn i2_start_and_finish_nest_finish_by_name_and_merge_the_payload() {
    let notifier = Notifier::new();
    let seen = recording(&notifier);
    let i = notifier.instrumenter();
    let outer = i
        .start("request.app", Payload::new().with("path", "/").with("status", 0_u64))
        .unwrap();
    let inner = i.start("sql.app", Payload::new()).unwrap();
    assert_eq!(inner.parent_id(), Some(outer.id()));
    assert_eq!(i.open(), 2);

    // Unknown name: an error, nothing changes.
    assert_eq!(i.finish("render.app", Payload::new()), Err(NotifyError::NotStarted));
    assert_eq!(i.open(), 2);

    // Finishing the outer event first finishes it, not the innermost one.
    i.finish("request.app", Payload::new().with("status", 200_u64)).unwrap();
    i.finish("sql.app", Payload::new()).unwrap();
    assert_eq!(i.open(), 0);
    assert_eq!(i.finish("sql.app", Payload::new()), Err(NotifyError::NotStarted));

    let seen = seen.lock().unwrap();
    assert_eq!(
        *seen,
        [
            (
                "request.app".to_owned(),
                outer.id(),
                None,
                vec!["path".to_owned(), "status".to_owned()]
            ),
            ("sql.app".to_owned(), inner.id(), Some(outer.id()), vec![]),
        ]
    );
    drop(seen);
    // The finish payload replaced the start's value of `status`.
    let notifier2 = Notifier::new();
    let statuses = Arc::new(Mutex::new(Vec::new()));
    let sink = statuses.clone();
    let _ = notifier2.subscribe(
        "request.app",
        Subscriber::event(move |e: &Event| {
            sink.lock()
                .unwrap()
                .push(e.payload().get("status").and_then(|v| v.as_i64()))
        }),
    );
    let i2 = notifier2.instrumenter();
    i2.start("request.app", Payload::new().with("status", 0_u64));
    i2.finish("request.app", Payload::new().with("status", 200_u64))
        .unwrap();
    assert_eq!(*statuses.lock().unwrap(), [Some(200)]);
}

#[test]
fn i3_started_events_of_two_notifiers_are_kept_apart() {
    let (a, b) = (Notifier::new(), Notifier::new());
    let (seen_a, seen_b) = (recording(&a), recording(&b));
    a.instrumenter().start("job", Payload::new());
    assert_eq!(b.instrumenter().open(), 0);
    assert_eq!(
        b.instrumenter().finish("job", Payload::new()),
        Err(NotifyError::NotStarted)
    );
    assert_eq!(
        a.instrumenter().open(),
        1,
        "another value of the same thread and notifier sees it"
    );
    a.instrumenter().finish("job", Payload::new()).unwrap();
    assert_eq!(seen_a.lock().unwrap().len(), 1);
    assert_eq!(seen_b.lock().unwrap().len(), 0);
}

#[test]
fn i4_evented_subscribers_and_subscribers_that_use_the_instrumenter() {
    #[derive(Default)]
    struct Edges(Mutex<Vec<String>>);
    impl EventedSubscriber for Edges {
        fn start(&self, name: &str, _: &EventContext, _: &Payload) {
            self.0.lock().unwrap().push(format!("start {name}"));
        }
        fn finish(&self, name: &str, _: &EventContext, _: &Payload) {
            self.0.lock().unwrap().push(format!("finish {name}"));
        }
    }
    let notifier = Notifier::new();
    let edges = Arc::new(Edges::default());
    let _ = notifier.subscribe(Pattern::all(), Subscriber::evented(edges.clone()));
    // A subscriber that starts and finishes an event of its own while being delivered one.
    let n = notifier.clone();
    let _ = notifier.subscribe(
        "outer",
        Subscriber::event(move |_: &Event| {
            let i = n.instrumenter();
            i.start("audit", Payload::new());
            i.finish("audit", Payload::new()).unwrap();
        }),
    );
    let i = notifier.instrumenter();
    i.start("outer", Payload::new());
    assert_eq!(*edges.0.lock().unwrap(), ["start outer"]);
    i.finish("outer", Payload::new()).unwrap();
    assert_eq!(
        *edges.0.lock().unwrap(),
        ["start outer", "finish outer", "start audit", "finish audit"]
    );
    assert_eq!(i.open(), 0);
}

#[test]
fn i5_unlistened_events_start_and_finish_cheaply() {
    let notifier = Notifier::new();
    let i = notifier.instrumenter();
    assert_eq!(i.start("nobody", Payload::new()), None);
    assert_eq!(i.open(), 1);
    assert_eq!(i.finish("nobody", Payload::new()), Ok(()));
    assert_eq!(i.open(), 0);
    let mut handle = i.build_handle("nobody", Payload::new());
    assert_eq!(handle.name(), "nobody");
    handle.start().unwrap();
    assert!(!handle.is_listened());
}

#[test]
fn i6_an_event_left_open_when_its_thread_ends_is_not_delivered() {
    let notifier = Notifier::new();
    let seen = recording(&notifier);
    let n = notifier.clone();
    std::thread::spawn(move || {
        n.instrumenter().start("abandoned", Payload::new()).unwrap();
    })
    .join()
    .expect("the thread ends normally");
    assert!(seen.lock().unwrap().is_empty());
    // The notifier still works from here.
    notifier.instrumenter().instrument("after", Payload::new, |_| ());
    assert_eq!(seen.lock().unwrap().len(), 1);
}
