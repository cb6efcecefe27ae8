//! One parent rule across tracing spans and notify events (issue 35, item 3): the parent of a span
//! or event is the innermost unfinished one of either API, whatever order they nest in. tracing ->
//! notify (`NotifyLayer`): sync and async; notify -> tracing (`TracingForwarder`): synchronous
//! events.

mod support;

use std::sync::{Arc, Mutex};

use notify_core::{Event, Notifier, Pattern, Payload, Subscriber};
use notify_tracing::{NotifyLayer, TracingForwarder};
use support::Capture;
use tracing_subscriber::prelude::*;

/// Every event `notifier` delivers, in finish order.
fn collect(notifier: &Notifier) -> Arc<Mutex<Vec<Event>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let _ = notifier.subscribe(
        Pattern::all(),
        Subscriber::event(move |e: &Event| sink.lock().unwrap().push(e.clone())),
    );
    seen
}

/// The event named `name` among `seen`.
fn named<'a>(seen: &'a [Event], name: &str) -> &'a Event {
    seen.iter()
        .find(|e| e.name() == name)
        .unwrap_or_else(|| panic!("no {name} in {seen:?}"))
}

/// Asserts `child`'s parent is `parent` (same trace), by name.
fn assert_parent(seen: &[Event], child: &str, parent: Option<&str>) {
    let c = named(seen, child);
    match parent {
        Some(parent) => {
            let p = named(seen, parent);
            assert_eq!(
                c.parent_id(),
                Some(p.id()),
                "{child} should be under {parent}: {seen:#?}"
            );
            assert_eq!(c.trace_id(), p.trace_id());
        }
        None => assert_eq!(c.parent_id(), None, "{child} should be a root: {seen:#?}"),
    }
}

/// Runs `f` with a NotifyLayer on `notifier` as this thread's tracing subscriber.
fn with_layer(notifier: &Notifier, f: impl FnOnce()) {
    let subscriber = tracing_subscriber::registry().with(NotifyLayer::with_notifier(notifier.clone()));
    tracing::subscriber::with_default(subscriber, f);
}

#[test]
fn a_tracing_span_inside_a_notify_event_inside_a_tracing_span_is_the_notify_events_child() {
    let notifier = Notifier::new();
    let seen = collect(&notifier);
    with_layer(&notifier, || {
        tracing::info_span!(target: "t", "outer").in_scope(|| {
            notifier.instrument("middle.n", Payload::new, |_| {
                tracing::info_span!(target: "t", "inner").in_scope(|| {
                    tracing::info!(target: "t", "leaf");
                });
            });
        });
    });
    let seen = seen.lock().unwrap();
    assert_parent(&seen, "outer.t", None);
    assert_parent(&seen, "middle.n", Some("outer.t"));
    // Was `outer.t`: the layer took the current tracing span's event, skipping the notify event.
    assert_parent(&seen, "inner.t", Some("middle.n"));
    assert_parent(&seen, "info.t", Some("inner.t"));
}

#[test]
fn every_nesting_order_of_three_gives_the_innermost_as_parent() {
    // Each order of (tracing span "T", notify event "N") three levels deep.
    for order in ["TTT", "TTN", "TNT", "TNN", "NTT", "NTN", "NNT", "NNN"] {
        let notifier = Notifier::new();
        let seen = collect(&notifier);
        let names: Vec<String> = order
            .chars()
            .enumerate()
            .map(|(depth, kind)| match kind {
                'T' => format!("l{depth}.t"),
                _ => format!("l{depth}.n"),
            })
            .collect();
        fn level(notifier: &Notifier, order: &[u8], depth: usize) {
            let Some(kind) = order.first() else { return };
            let rest = &order[1..];
            if *kind == b'T' {
                let span = match depth {
                    0 => tracing::info_span!(target: "t", "l0"),
                    1 => tracing::info_span!(target: "t", "l1"),
                    _ => tracing::info_span!(target: "t", "l2"),
                };
                span.in_scope(|| level(notifier, rest, depth + 1));
            } else {
                notifier.instrument(&format!("l{depth}.n"), Payload::new, |_| {
                    level(notifier, rest, depth + 1)
                });
            }
        }
        with_layer(&notifier, || level(&notifier, order.as_bytes(), 0));
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 3, "{order}: {seen:?}");
        assert_parent(&seen, &names[0], None);
        assert_parent(&seen, &names[1], Some(&names[0]));
        assert_parent(&seen, &names[2], Some(&names[1]));
    }
}

#[test]
fn an_explicit_tracing_parent_still_wins_over_the_current_notify_event() {
    let notifier = Notifier::new();
    let seen = collect(&notifier);
    with_layer(&notifier, || {
        let chosen = tracing::info_span!(target: "t", "chosen");
        notifier.instrument("current.n", Payload::new, |_| {
            tracing::info_span!(target: "t", parent: &chosen, "explicit").in_scope(|| ());
            tracing::info_span!(target: "t", parent: None, "root").in_scope(|| ());
        });
        drop(chosen);
    });
    let seen = seen.lock().unwrap();
    assert_parent(&seen, "explicit.t", Some("chosen.t"));
    assert_parent(&seen, "root.t", None);
    assert_parent(&seen, "current.n", None);
}

#[test]
fn async_nesting_tracing_future_notify_future_tracing_span_across_awaits() {
    let notifier = Notifier::new();
    let seen = collect(&notifier);
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let subscriber = tracing_subscriber::registry().with(NotifyLayer::with_notifier(notifier.clone()));
    let _default = tracing::subscriber::set_default(subscriber);
    let inner = async {
        tokio::task::yield_now().await;
        tracing::info!(target: "t", "leaf");
    };
    let middle = async {
        tokio::task::yield_now().await;
        tracing::Instrument::instrument(inner, tracing::info_span!(target: "t", "inner")).await;
    };
    let outer = async {
        notify_core::Instrument::instrument(middle, notifier.build_handle("middle.n", Payload::new())).await;
    };
    runtime.block_on(tracing::Instrument::instrument(
        outer,
        tracing::info_span!(target: "t", "outer"),
    ));
    drop(_default);
    let seen = seen.lock().unwrap();
    assert_parent(&seen, "outer.t", None);
    assert_parent(&seen, "middle.n", Some("outer.t"));
    assert_parent(&seen, "inner.t", Some("middle.n"));
    assert_parent(&seen, "info.t", Some("inner.t"));
}

// ---- notify -> tracing ----

/// The parent's name of each captured span, by span name.
fn tracing_parents(capture: &Capture) -> Vec<(String, Option<String>)> {
    let spans = capture.spans();
    spans
        .iter()
        .map(|s| {
            let parent = s
                .parent
                .map(|p| spans.iter().find(|o| o.id == p).expect("parent captured").name.clone());
            (s.name.clone(), parent)
        })
        .collect()
}

#[test]
fn a_bridged_notify_event_inside_a_tracing_span_inside_a_bridged_event_is_the_tracing_spans_child() {
    let capture = Capture::default();
    let notifier = Notifier::new();
    let _s = TracingForwarder::new().subscribe(&notifier, Pattern::all());
    let subscriber = tracing_subscriber::registry().with(capture.clone());
    tracing::subscriber::with_default(subscriber, || {
        notifier.instrument("outer.n", Payload::new, |_| {
            tracing::info_span!(target: "t", "middle").in_scope(|| {
                notifier.instrument("inner.n", Payload::new, |_| ());
            });
            notifier.instrument("sibling.n", Payload::new, |_| ());
        });
    });
    let parents = tracing_parents(&capture);
    let parent_of = |name: &str| {
        parents
            .iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("{parents:?}"))
            .1
            .clone()
    };
    assert_eq!(parent_of("outer"), None);
    assert_eq!(parent_of("middle").as_deref(), Some("outer"));
    // Was `outer`: the bridge took the span of the notify parent, skipping the tracing span.
    assert_eq!(parent_of("inner").as_deref(), Some("middle"));
    assert_eq!(parent_of("sibling").as_deref(), Some("outer"));
}
