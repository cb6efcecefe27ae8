//! Issue 33 item 9: a started [`Handle`] is not the thread's current event; being current is a
//! `!Send` scope ([`Handle::enter`], [`Handle::in_scope`]), so a task holding a handle across
//! `.await` never becomes the parent of other tasks' events polled on that thread meanwhile.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use notify_core::{event::EventId, Event, Handle, Instrument, Notifier, Pattern, Payload, Subscriber};

/// Every finished event: (name, id, parent id), in finish order.
type Seen = Arc<Mutex<Vec<(String, EventId, Option<EventId>)>>>;

fn collecting() -> (Notifier, Seen) {
    let notifier = Notifier::new();
    let seen: Seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let _ = notifier.subscribe(
        Pattern::all(),
        Subscriber::event(move |e: &Event| sink.lock().unwrap().push((e.name().to_owned(), e.id(), e.parent_id()))),
    );
    (notifier, seen)
}

/// Yields to the executor until `flag` is set.
async fn until(flag: &AtomicBool) {
    while !flag.load(Ordering::SeqCst) {
        tokio::task::yield_now().await;
    }
}

/// Compiles only for `Send` futures (what `tokio::spawn` takes).
fn assert_send<F: Future + Send>(future: F) -> F {
    future
}

/// The guard held across `.await` in a `Send` future does not compile (trybuild).
#[test]
fn an_entered_guard_held_across_await_in_a_send_future_is_refused() {
    trybuild::TestCases::new().compile_fail("tests/ui/handle/*.rs");
}

/// A task holds a started handle across awaits (a `Send` future: it compiles and spawns); another
/// task polled on the same thread meanwhile makes an event: its parent is not the handle (it
/// was, when `start` made the handle current). Children made inside the handle's scope and
/// inside an instrumented future still get the right parent.
#[test]
fn another_tasks_event_polled_while_a_handle_is_held_across_await_gets_the_right_parent() {
    let (notifier, seen) = collecting();
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let a_started = Arc::new(AtomicBool::new(false));
    let b_done = Arc::new(AtomicBool::new(false));
    runtime.block_on(async {
        let a = {
            let (notifier, a_started, b_done) = (notifier.clone(), a_started.clone(), b_done.clone());
            tokio::spawn(assert_send(async move {
                let mut handle: Handle = notifier.build_handle("a.task", Payload::new());
                handle.start().unwrap();
                a_started.store(true, Ordering::SeqCst);
                until(&b_done).await;
                handle.in_scope(|| notifier.instrument("a.child", Payload::new, |_| ()));
                handle.finish().unwrap();
            }))
        };
        let b = {
            let (notifier, a_started, b_done) = (notifier.clone(), a_started.clone(), b_done.clone());
            tokio::spawn(async move {
                until(&a_started).await;
                notifier.instrument("b.event", Payload::new, |_| ());
                b_done.store(true, Ordering::SeqCst);
            })
        };
        let c = {
            let (notifier, a_started) = (notifier.clone(), a_started.clone());
            let body = {
                let notifier = notifier.clone();
                async move {
                    until(&a_started).await;
                    notifier.instrument("c.child", Payload::new, |_| ());
                }
            };
            tokio::spawn(body.instrument(notifier.build_handle("c.task", Payload::new())))
        };
        a.await.unwrap();
        b.await.unwrap();
        c.await.unwrap();
    });
    let seen = seen.lock().unwrap();
    let find = |name: &str| seen.iter().find(|e| e.0 == name).cloned().unwrap();
    let (a, c) = (find("a.task"), find("c.task"));
    assert_eq!(
        find("b.event").2,
        None,
        "b's event is not a child of a's handle: {seen:?}"
    );
    assert_eq!(find("a.child").2, Some(a.1));
    assert_eq!(find("c.child").2, Some(c.1));
    assert_eq!((a.2, c.2), (None, None));
    assert_eq!(seen.len(), 5);
    assert_eq!(notify_core::context::current_event_id(), None);
}

/// The scope guard ends the scope on drop (also when the code inside panics), on the thread
/// that entered: nothing stays current.
#[test]
fn in_scope_and_enter_end_the_scope_even_when_the_body_panics() {
    let (notifier, seen) = collecting();
    let mut handle = notifier.build_handle("scoped.app", Payload::new());
    handle.start().unwrap();
    let id = handle.id();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        handle.in_scope(|| {
            assert_eq!(notify_core::context::current_event_id(), id);
            panic!("inside the scope");
        })
    }));
    assert!(result.is_err());
    assert_eq!(notify_core::context::current_event_id(), None);
    {
        let _entered = handle.enter();
        notifier.instrument("child.app", Payload::new, |_| ());
    }
    notifier.instrument("sibling.app", Payload::new, |_| ());
    handle.finish().unwrap();
    let seen = seen.lock().unwrap();
    let parents: Vec<(&str, Option<EventId>)> = seen.iter().map(|e| (e.0.as_str(), e.2)).collect();
    assert_eq!(
        parents,
        [("child.app", id), ("sibling.app", None), ("scoped.app", None)]
    );
}

/// Issue 44 item 7: an event's tags are those current when it started, however and wherever it
/// ends (Rails' `event.tagged`).
#[test]
fn i44_7_a_handle_ends_with_the_tags_current_at_its_start() {
    use notify_core::context::{tagged, Tags};
    let notifier = Notifier::new();
    // (event name, its `request_id` tag as subscribers see it when the event finishes)
    type SeenTags = Arc<Mutex<Vec<(String, Option<String>)>>>;
    let seen = SeenTags::default();
    let sink = seen.clone();
    let _s = notifier.subscribe(
        Pattern::all(),
        Subscriber::event(move |e: &Event| {
            let tag = Tags::current()
                .get("request_id")
                .and_then(|v| v.as_str().map(str::to_owned));
            sink.lock().unwrap().push((e.name().to_owned(), tag));
        }),
    );
    let mut request = notifier.build_handle("request.app", Payload::new());
    tagged([("request_id", "r-1")], || request.start()).unwrap();
    // Entered outside the scope (a body polled by the server): events inside get the tags too.
    request.in_scope(|| notifier.instrument("chunk.app", Payload::new, |_| ()));
    // Finished in another request's scope: still its own tags; then ended by drop on a thread.
    tagged([("request_id", "r-2")], || request.finish()).unwrap();
    let mut dropped = notifier.build_handle("dropped.app", Payload::new());
    tagged([("request_id", "r-3")], || dropped.start()).unwrap();
    std::thread::spawn(move || drop(dropped)).join().unwrap();
    // A handle started with no tags ends with none, whatever is current then.
    let mut untagged = notifier.build_handle("untagged.app", Payload::new());
    untagged.start().unwrap();
    tagged([("request_id", "r-4")], || untagged.finish()).unwrap();
    let r = |s: &str| Some(s.to_owned());
    assert_eq!(
        *seen.lock().unwrap(),
        [
            ("chunk.app".to_owned(), r("r-1")),
            ("request.app".to_owned(), r("r-1")),
            ("dropped.app".to_owned(), r("r-3")),
            ("untagged.app".to_owned(), None),
        ]
    );
    assert!(Tags::current().is_empty(), "every guard restored the outer tags");
}
