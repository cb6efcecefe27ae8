//! Instrumented futures and contexts carried into spawned tasks, on tokio's multi-thread runtime.

use std::collections::HashMap;
use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::task::{Context as TaskContext, Waker};

use notify_core::{
    context::EventContext, event::EventId, event::Outcome, Event, EventedSubscriber, Instrument, Notifier, Payload,
    Subscriber,
};
#[cfg(feature = "macros")]
use notify_core::{instrument_event, Context, Pattern};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .build()
        .expect("a tokio runtime")
}

#[path = "support/collecting.rs"]
mod collecting;

use collecting::collecting;

/// Yields to the runtime once, so tasks interleave.
async fn yield_now() {
    tokio::task::yield_now().await;
}

/// One request: an instrumented future that spawns 3 subtasks (carrying the context), each with
/// an instrumented future holding a synchronous nested event, plus a synchronous event in the
/// request itself between awaits.
async fn request(notifier: Notifier, n: u64) {
    let handle = notifier.build_handle("request.app", Payload::new().with("n", n));
    let inner = notifier.clone();
    async move {
        yield_now().await;
        let mut tasks = Vec::new();
        for part in 0..3_u64 {
            let notifier = inner.clone();
            let subtask = async move {
                yield_now().await;
                let handle = notifier.build_handle("subtask.app", Payload::new().with("n", n).with("part", part));
                let nested = notifier.clone();
                async move {
                    yield_now().await;
                    nested.instrument(
                        "query.sql",
                        || Payload::new().with("n", n),
                        |_| {
                            nested.instrument("read.disk", || Payload::new().with("n", n), |_| ());
                        },
                    );
                    yield_now().await;
                }
                .instrument(handle)
                .await;
            };
            tasks.push(tokio::spawn(subtask.in_current_context()));
        }
        inner.instrument("render.app", || Payload::new().with("n", n), |_| ());
        for task in tasks {
            task.await.unwrap();
        }
    }
    .instrument(handle)
    .await;
}

#[test]
fn a_hundred_concurrent_requests_with_spawned_subtasks_keep_their_traces_and_parents() {
    let (notifier, events) = collecting();
    runtime().block_on(async {
        let requests: Vec<_> = (0..100).map(|n| tokio::spawn(request(notifier.clone(), n))).collect();
        for r in requests {
            r.await.unwrap();
        }
    });
    let events = events.lock().unwrap();
    // Per request: the request, 3 subtasks, 3 queries, 3 disk reads, 1 render.
    assert_eq!(events.len(), 100 * 11);
    let by_id: HashMap<EventId, &Event> = events.iter().map(|e| (e.id(), e)).collect();
    assert_eq!(by_id.len(), events.len(), "event ids are unique");
    let request_of = |e: &Event| e.payload().get("n").and_then(|v| v.as_i64()).unwrap();
    let mut roots: HashMap<i64, &Event> = HashMap::new();
    for event in events.iter().filter(|e| e.name() == "request.app") {
        assert_eq!(event.parent_id(), None);
        assert_eq!(event.outcome(), Outcome::Completed);
        assert!(roots.insert(request_of(event), event).is_none());
    }
    assert_eq!(roots.len(), 100);
    let mut traces: Vec<_> = roots.values().map(|r| r.trace_id()).collect();
    traces.sort();
    traces.dedup();
    assert_eq!(traces.len(), 100, "every request is its own trace");

    let (mut checked, mut cross_request) = (0, 0);
    for event in events.iter().filter(|e| e.name() != "request.app") {
        let root = roots[&request_of(event)];
        assert_eq!(
            event.trace_id(),
            root.trace_id(),
            "{} of request {}",
            event.name(),
            request_of(event)
        );
        let parent = by_id[&event.parent_id().expect("every non-root event has a parent")];
        assert_eq!(parent.trace_id(), event.trace_id());
        if request_of(parent) != request_of(event) {
            cross_request += 1;
        }
        let expected_parent = match event.name() {
            "subtask.app" | "render.app" => "request.app",
            "query.sql" => "subtask.app",
            "read.disk" => "query.sql",
            other => panic!("unexpected event {other}"),
        };
        assert_eq!(parent.name(), expected_parent, "the parent of {}", event.name());
        checked += 1;
    }
    assert_eq!(checked, 100 * 10);
    assert_eq!(cross_request, 0, "no event has a parent in another request");
}

#[test]
fn an_instrumented_future_is_current_only_while_polled_so_interleaved_futures_never_nest() {
    let (notifier, events) = collecting();
    let make = |name: &'static str| {
        let n = notifier.clone();
        async move {
            yield_now().await;
            n.instrument("child.app", Payload::new, |_| ());
            yield_now().await;
        }
        .instrument(notifier.build_handle(name, Payload::new()))
    };
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(async {
            let (a, b) = (make("a.app"), make("b.app"));
            let outside = notifier.clone();
            // One thread: the three tasks interleave at every yield.
            let tasks = [
                tokio::spawn(a),
                tokio::spawn(b),
                tokio::spawn(async move {
                    yield_now().await;
                    assert_eq!(
                        notify_core::context::current_event_id(),
                        None,
                        "not current between polls"
                    );
                    outside.instrument("outside.app", Payload::new, |_| ());
                }),
            ];
            for task in tasks {
                task.await.unwrap();
            }
        });
    let events = events.lock().unwrap();
    let find = |name: &str| events.iter().filter(|e| e.name() == name).collect::<Vec<_>>();
    let (a, b) = (find("a.app")[0], find("b.app")[0]);
    assert_eq!((a.parent_id(), b.parent_id()), (None, None), "siblings never nest");
    let children = find("child.app");
    assert_eq!(children.len(), 2);
    assert_eq!(
        children.iter().filter(|c| c.parent_id() == Some(a.id())).count(),
        1,
        "one child under each"
    );
    assert_eq!(children.iter().filter(|c| c.parent_id() == Some(b.id())).count(), 1);
    assert_eq!(find("outside.app")[0].parent_id(), None);
}

#[test]
fn a_dropped_future_is_cancelled_a_panicking_one_panicked_and_an_unpolled_one_publishes_nothing() {
    let (notifier, events) = collecting();
    let mut pending =
        Box::pin(std::future::pending::<()>().instrument(notifier.build_handle("pending.app", Payload::new())));
    let cx = &mut TaskContext::from_waker(Waker::noop());
    assert!(pending.as_mut().poll(cx).is_pending());
    drop(pending);

    let panicking = async { panic!("boom") }.instrument(notifier.build_handle("panics.app", Payload::new()));
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut panicking = pin!(panicking);
        let _ = panicking.as_mut().poll(&mut TaskContext::from_waker(Waker::noop()));
    }));
    assert!(caught.is_err());

    drop(async {}.instrument(notifier.build_handle("never.app", Payload::new())));

    let events = events.lock().unwrap();
    let outcomes: Vec<(&str, Outcome)> = events.iter().map(|e| (e.name(), e.outcome())).collect();
    assert_eq!(
        outcomes,
        [("pending.app", Outcome::Cancelled), ("panics.app", Outcome::Panicked)]
    );
    assert_eq!(notify_core::context::current_event_id(), None);
}

#[test]
fn the_parent_of_an_instrumented_future_is_where_it_was_built_even_when_spawned() {
    let (notifier, events) = collecting();
    runtime().block_on(async {
        let n = notifier.clone();
        let spawned = notifier.instrument("request.app", Payload::new, |_| {
            // Built here, spawned without in_current_context: the event still belongs here.
            tokio::spawn(async move { yield_now().await }.instrument(n.build_handle("job.app", Payload::new())))
        });
        spawned.await.unwrap();
    });
    let events = events.lock().unwrap();
    assert_eq!(events.len(), 2);
    // The job may finish before or after the request: find them by name.
    let find = |name: &str| events.iter().find(|e| e.name() == name).unwrap();
    let (request, job) = (find("request.app"), find("job.app"));
    assert_eq!(job.parent_id(), Some(request.id()));
    assert_eq!(job.trace_id(), request.trace_id());
}

#[test]
fn record_inside_an_instrumented_future_reaches_its_payload_across_polls() {
    let (notifier, events) = collecting();
    runtime().block_on(
        async {
            notify_core::record("first", 1_u64);
            yield_now().await;
            notify_core::record("second", 2_u64);
        }
        .instrument(notifier.build_handle("recorded.app", Payload::new())),
    );
    let events = events.lock().unwrap();
    let payload = events[0].payload();
    assert_eq!(payload.get("first").and_then(|v| v.as_i64()), Some(1));
    assert_eq!(payload.get("second").and_then(|v| v.as_i64()), Some(2));
}

/// Records (call, event id, thread) for every evented call.
#[derive(Default)]
struct Calls(Mutex<Vec<(&'static str, EventId, std::thread::ThreadId)>>);

impl Calls {
    fn push(&self, call: &'static str, event: &EventContext) {
        self.0
            .lock()
            .unwrap()
            .push((call, event.id(), std::thread::current().id()));
    }
}

impl EventedSubscriber for Calls {
    fn start(&self, _: &str, event: &EventContext, _: &Payload) {
        self.push("start", event);
    }
    fn finish(&self, _: &str, event: &EventContext, _: &Payload) {
        self.push("finish", event);
    }
    fn enter(&self, _: &str, event: &EventContext) {
        self.push("enter", event);
    }
    fn exit(&self, _: &str, event: &EventContext) {
        self.push("exit", event);
    }
}

#[test]
fn evented_subscribers_get_an_enter_and_exit_per_poll_on_the_polling_thread() {
    let notifier = Notifier::new();
    let calls = Arc::new(Calls::default());
    let _ = notifier.subscribe("job.app", Subscriber::evented(calls.clone()));
    runtime().block_on(async {
        let jobs: Vec<_> = (0..6)
            .map(|_| {
                tokio::spawn(
                    async {
                        for _ in 0..3 {
                            yield_now().await;
                        }
                    }
                    .instrument(notifier.build_handle("job.app", Payload::new())),
                )
            })
            .collect();
        for job in jobs {
            job.await.unwrap();
        }
    });
    let calls = calls.0.lock().unwrap();
    let mut per_event: HashMap<EventId, Vec<(&str, std::thread::ThreadId)>> = HashMap::new();
    for (call, id, thread) in calls.iter() {
        per_event.entry(*id).or_default().push((call, *thread));
    }
    assert_eq!(per_event.len(), 6);
    for sequence in per_event.values() {
        let names: Vec<&str> = sequence.iter().map(|(c, _)| *c).collect();
        let mut expected = vec!["start"];
        for _ in 0..4 {
            expected.extend(["enter", "exit"]);
        }
        expected.push("finish");
        assert_eq!(names, expected, "4 polls: 3 yields and the last");
        for pair in sequence[1..9].chunks(2) {
            assert_eq!(pair[0].1, pair[1].1, "enter and exit of one poll on one thread");
        }
    }
}

#[cfg(feature = "macros")]
#[instrument_event("outer.ctx_async")]
async fn outer_fn(n: u64) -> u64 {
    yield_now().await;
    inner_fn(n).await + 1
}

#[cfg(feature = "macros")]
#[instrument_event("inner.ctx_async")]
async fn inner_fn(n: u64) -> u64 {
    yield_now().await;
    notify_core::record("seen", n);
    n
}

#[cfg(feature = "macros")]
#[instrument_event("queued.ctx_async", parent = parent)]
async fn queued(parent: Context) {
    yield_now().await;
}

#[cfg(feature = "macros")]
#[test]
fn async_fns_under_the_macro_nest_record_and_take_an_explicit_parent() {
    let (notifier, events) = (Notifier::global(), Arc::new(Mutex::new(Vec::new())));
    let sink = events.clone();
    let subscription = notifier.subscribe(
        Pattern::glob("*.ctx_async").unwrap(),
        Subscriber::event(move |e: &Event| sink.lock().unwrap().push(e.clone())),
    );
    let explicit = Context::new(notify_core::TraceId::new(0x5eed).unwrap(), Some(EventId::new(77)));
    runtime().block_on(async {
        assert_eq!(tokio::spawn(outer_fn(4)).await.unwrap(), 5);
        tokio::spawn(queued(explicit)).await.unwrap();
    });
    subscription.unsubscribe().unwrap();
    let events = events.lock().unwrap();
    let (inner, outer, queued) = (&events[0], &events[1], &events[2]);
    assert_eq!(inner.parent_id(), Some(outer.id()));
    assert_eq!(inner.trace_id(), outer.trace_id());
    assert_eq!(inner.payload().get("seen").and_then(|v| v.as_i64()), Some(4));
    assert_eq!(queued.parent_id(), Some(EventId::new(77)));
    assert_eq!(Some(queued.trace_id()), explicit.trace_id());
}
