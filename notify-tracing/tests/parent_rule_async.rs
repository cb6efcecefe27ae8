//! One parent rule across tracing spans and notify events, in async code (issue 35, item 3): the
//! parent of a span or event is the innermost unfinished one of either API, for every nesting
//! order of tracing futures (`tracing::Instrument::instrument`) and notify futures
//! (`notify_core::Instrument::instrument`), with awaits that yield between the levels, in both
//! bridge directions; and across a task spawned with `in_current_context`.

mod support;

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use notify_core::{Event, Notifier, Pattern, Payload, Subscriber};
use notify_tracing::{NotifyLayer, TracingForwarder};
use support::Capture;
use tracing_subscriber::prelude::*;

/// A boxed task.
type Task = Pin<Box<dyn Future<Output = ()> + Send>>;

const ORDERS: [&str; 8] = ["TTT", "TTN", "TNT", "TNN", "NTT", "NTN", "NNT", "NNN"];

fn collect(notifier: &Notifier) -> Arc<Mutex<Vec<Event>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let _ = notifier.subscribe(
        Pattern::all(),
        Subscriber::event(move |e: &Event| sink.lock().unwrap().push(e.clone())),
    );
    seen
}

fn tracing_span(depth: usize) -> tracing::Span {
    match depth {
        0 => tracing::info_span!(target: "t", "l0"),
        1 => tracing::info_span!(target: "t", "l1"),
        2 => tracing::info_span!(target: "t", "l2"),
        _ => tracing::info_span!(target: "t", "l3"),
    }
}

/// The future of `order[depth..]`: each level a tracing or a notify future around the next,
/// yielding before and after it; the innermost level ends with a tracing span and a notify event
/// made synchronously ("leaf").
fn level(notifier: Notifier, order: &'static [u8], depth: usize) -> Task {
    Box::pin(async move {
        let Some(kind) = order.get(depth) else {
            tokio::task::yield_now().await;
            return;
        };
        let inner = level(notifier.clone(), order, depth + 1);
        let body = async move {
            tokio::task::yield_now().await;
            inner.await;
            tokio::task::yield_now().await;
        };
        if *kind == b'T' {
            tracing::Instrument::instrument(body, tracing_span(depth)).await;
        } else {
            let handle = notifier.build_handle(format!("l{depth}.n"), Payload::new());
            notify_core::Instrument::instrument(body, handle).await;
        }
    })
}

/// The name each level gets: `l<depth>.t` (a tracing span, as NotifyLayer names it) or `l<depth>.n`.
fn names(order: &str) -> Vec<String> {
    order
        .chars()
        .enumerate()
        .map(|(depth, kind)| format!("l{depth}.{}", if kind == 'T' { 't' } else { 'n' }))
        .collect()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap()
}

// ---- tracing -> notify (NotifyLayer): the notify events' parents ----

fn assert_notify_chain(seen: &[Event], names: &[String], what: &str) {
    let find = |name: &str| {
        seen.iter()
            .find(|e| e.name() == name)
            .unwrap_or_else(|| panic!("{what}: no {name} in {seen:#?}"))
    };
    assert_eq!(find(&names[0]).parent_id(), None, "{what}: {} is a root", names[0]);
    for pair in names.windows(2) {
        let (parent, child) = (find(&pair[0]), find(&pair[1]));
        assert_eq!(
            child.parent_id(),
            Some(parent.id()),
            "{what}: {} under {}: {seen:#?}",
            pair[1],
            pair[0]
        );
        assert_eq!(child.trace_id(), parent.trace_id(), "{what}");
    }
}

#[test]
fn tracing_to_notify_every_async_nesting_order_gives_the_innermost_as_parent() {
    let runtime = runtime();
    for order in ORDERS {
        let notifier = Notifier::new();
        let seen = collect(&notifier);
        let subscriber = tracing_subscriber::registry().with(NotifyLayer::with_notifier(notifier.clone()));
        let dispatch = tracing::Dispatch::new(subscriber);
        let future = tracing::instrument::WithSubscriber::with_subscriber(
            level(notifier.clone(), order.as_bytes(), 0),
            dispatch,
        );
        runtime.block_on(async move { tokio::spawn(future).await.unwrap() });
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 3, "{order}: {seen:?}");
        assert_notify_chain(&seen, &names(order), order);
    }
}

// ---- notify -> tracing (TracingForwarder): the tracing spans' parents ----

/// Asserts the captured spans form the chain `names` (`l<depth>.t` is span `l<depth>` of target
/// `t`, `l<depth>.n` span `l<depth>` of target `n`).
fn assert_tracing_chain(capture: &Capture, names: &[String], what: &str) {
    let spans = capture.spans();
    let find = |name: &str| {
        let (span, target) = name.split_once('.').unwrap();
        spans
            .iter()
            .find(|s| s.name == span && s.target == target)
            .unwrap_or_else(|| panic!("{what}: no {name} in {spans:#?}"))
    };
    assert_eq!(find(&names[0]).parent, None, "{what}: {} is a root", names[0]);
    for pair in names.windows(2) {
        let (parent, child) = (find(&pair[0]), find(&pair[1]));
        assert_eq!(
            child.parent,
            Some(parent.id),
            "{what}: {} under {}: {spans:#?}",
            pair[1],
            pair[0]
        );
    }
    assert!(
        spans.iter().all(|s| s.closed && s.entered == s.exited),
        "{what}: {spans:#?}"
    );
}

#[test]
fn notify_to_tracing_every_async_nesting_order_gives_the_innermost_as_parent() {
    let runtime = runtime();
    for order in ORDERS {
        let capture = Capture::default();
        let notifier = Notifier::new();
        let _s = TracingForwarder::new().subscribe(&notifier, Pattern::all());
        let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(capture.clone()));
        let future = tracing::instrument::WithSubscriber::with_subscriber(
            level(notifier.clone(), order.as_bytes(), 0),
            dispatch,
        );
        runtime.block_on(async move { tokio::spawn(future).await.unwrap() });
        assert_eq!(capture.spans().len(), 3, "{order}: {:?}", capture.spans());
        assert_tracing_chain(&capture, &names(order), order);
    }
}

#[test]
fn notify_to_tracing_every_sync_nesting_order_gives_the_innermost_as_parent() {
    fn level(notifier: &Notifier, order: &[u8], depth: usize) {
        let Some(kind) = order.get(depth) else { return };
        if *kind == b'T' {
            tracing_span(depth).in_scope(|| level(notifier, order, depth + 1));
        } else {
            notifier.instrument(&format!("l{depth}.n"), Payload::new, |_| {
                level(notifier, order, depth + 1)
            });
        }
    }
    for order in ORDERS {
        let capture = Capture::default();
        let notifier = Notifier::new();
        let _s = TracingForwarder::new().subscribe(&notifier, Pattern::all());
        let subscriber = tracing_subscriber::registry().with(capture.clone());
        tracing::subscriber::with_default(subscriber, || level(&notifier, order.as_bytes(), 0));
        assert_eq!(capture.spans().len(), 3, "{order}: {:?}", capture.spans());
        assert_tracing_chain(&capture, &names(order), order);
    }
}

// ---- across spawn: notify's `in_current_context`, tracing's `in_current_span` ----

/// A notify future `outer.n` spawns a task with `spawn` (which wraps it to carry the context);
/// the task runs a tracing span `middle` around a notify event `inner.n`.
fn spawned(notifier: Notifier, carry: fn(Task) -> Task) -> impl Future<Output = ()> {
    let outer = notifier.build_handle("outer.n", Payload::new());
    let body = async move {
        let task_notifier = notifier.clone();
        let task: Task = Box::pin(async move {
            tokio::task::yield_now().await;
            let inner = async {
                tokio::task::yield_now().await;
                let handle = task_notifier.build_handle("inner.n", Payload::new());
                notify_core::Instrument::instrument(tokio::task::yield_now(), handle).await;
            };
            tracing::Instrument::instrument(inner, tracing::info_span!(target: "t", "middle")).await;
        });
        tokio::spawn(carry(task)).await.unwrap();
    };
    notify_core::Instrument::instrument(body, outer)
}

fn in_current_context(task: Task) -> Task {
    // The task also carries this thread's tracing dispatcher (the test's, not a global one).
    let task = tracing::instrument::WithSubscriber::with_current_subscriber(tracing::Instrument::in_current_span(task));
    Box::pin(notify_core::Instrument::in_current_context(task))
}

#[test]
fn tracing_to_notify_a_task_spawned_in_current_context_stays_under_the_notify_event() {
    let runtime = runtime();
    let notifier = Notifier::new();
    let seen = collect(&notifier);
    let dispatch =
        tracing::Dispatch::new(tracing_subscriber::registry().with(NotifyLayer::with_notifier(notifier.clone())));
    let future =
        tracing::instrument::WithSubscriber::with_subscriber(spawned(notifier.clone(), in_current_context), dispatch);
    runtime.block_on(async move { tokio::spawn(future).await.unwrap() });
    let seen = seen.lock().unwrap();
    assert_notify_chain(
        &seen,
        &["outer.n".into(), "middle.t".into(), "inner.n".into()],
        "spawned",
    );
}

#[test]
fn notify_to_tracing_a_task_spawned_in_current_context_stays_under_the_notify_events_span() {
    let runtime = runtime();
    let capture = Capture::default();
    let notifier = Notifier::new();
    let _s = TracingForwarder::new().subscribe(&notifier, Pattern::all());
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(capture.clone()));
    let future =
        tracing::instrument::WithSubscriber::with_subscriber(spawned(notifier.clone(), in_current_context), dispatch);
    runtime.block_on(async move { tokio::spawn(future).await.unwrap() });
    let names = ["outer.n".to_owned(), "middle.t".to_owned(), "inner.n".to_owned()];
    assert_eq!(capture.spans().len(), 3, "{:?}", capture.spans());
    assert_tracing_chain(&capture, &names, "spawned");
}
