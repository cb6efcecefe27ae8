//! Trace ids, contexts carried across threads, evented ids, and the exact parent stack.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use notify_core::{
    context::EventContext, event::EventId, subscriber::EventedOptions, Context, Event, EventedSubscriber, Handle,
    Notifier, Pattern, Payload, Subscriber, TraceId,
};

#[path = "support/collecting.rs"]
mod collecting;

use collecting::collecting;

#[test]
fn roots_get_distinct_random_trace_ids_and_descendants_inherit_them() {
    let (notifier, events) = collecting();
    for _ in 0..3 {
        notifier.instrument("request.app", Payload::new, |_| {
            notifier.instrument("query.sql", Payload::new, |_| {
                notifier.instrument("read.disk", Payload::new, |_| ());
            });
        });
    }
    let events = events.lock().unwrap();
    assert_eq!(events.len(), 9);
    let mut traces = HashSet::new();
    for trio in events.chunks(3) {
        let (read, query, request) = (&trio[0], &trio[1], &trio[2]);
        assert_eq!(request.parent_id(), None);
        assert_eq!(query.parent_id(), Some(request.id()));
        assert_eq!(read.parent_id(), Some(query.id()));
        assert_eq!(query.trace_id(), request.trace_id());
        assert_eq!(read.trace_id(), request.trace_id());
        traces.insert(request.trace_id());
    }
    assert_eq!(traces.len(), 3, "each root starts its own trace");
}

#[test]
#[cfg(feature = "serde")]
fn the_serialised_event_carries_its_trace_id_as_32_hex_digits() {
    let (notifier, events) = collecting();
    notifier.instrument("request.app", Payload::new, |_| ());
    let event = events.lock().unwrap().pop().unwrap();
    let json = serde_json::to_value(&event).unwrap();
    assert_eq!(json["trace_id"], event.trace_id().to_string());
    assert_eq!(json["trace_id"].as_str().unwrap().len(), 32);
    assert_eq!(json["parent_id"], serde_json::Value::Null);
}

#[test]
fn a_context_attached_on_another_thread_parents_its_events_and_the_guard_restores() {
    let (notifier, events) = collecting();
    notifier.instrument("request.app", Payload::new, |_| {
        let context = Context::current();
        assert!(context.event_id().is_some());
        let n = notifier.clone();
        std::thread::spawn(move || {
            assert_eq!(notify_core::context::current_event_id(), None);
            {
                let _attached = context.attach();
                assert_eq!(Context::current(), context);
                n.instrument("job.app", Payload::new, |_| ());
            }
            assert_eq!(Context::current(), Context::none());
            n.instrument("unrelated.app", Payload::new, |_| ());
        })
        .join()
        .unwrap();
    });
    let events = events.lock().unwrap();
    let (job, unrelated, request) = (&events[0], &events[1], &events[2]);
    assert_eq!(job.parent_id(), Some(request.id()));
    assert_eq!(job.trace_id(), request.trace_id());
    assert_eq!(unrelated.parent_id(), None);
    assert_ne!(unrelated.trace_id(), request.trace_id());
}

#[test]
fn guards_dropped_out_of_order_remove_exactly_what_they_attached() {
    let (a, b) = (
        Context::new(TraceId::new(1).unwrap(), Some(EventId::new(10))),
        Context::new(TraceId::new(2).unwrap(), Some(EventId::new(20))),
    );
    let guard_a = a.attach();
    let guard_b = b.attach();
    drop(guard_a);
    assert_eq!(Context::current(), b);
    drop(guard_b);
    assert_eq!(Context::current(), Context::none());
}

#[test]
fn an_empty_context_makes_a_root_and_new_trace_gives_roots_a_shared_trace() {
    let (notifier, events) = collecting();
    let request = Context::new_trace();
    notifier.instrument("outer.app", Payload::new, |_| {
        Context::none().in_scope(|| notifier.instrument("detached.app", Payload::new, |_| ()));
        request.in_scope(|| notifier.instrument("first.app", Payload::new, |_| ()));
        request.in_scope(|| notifier.instrument("second.app", Payload::new, |_| ()));
    });
    let events = events.lock().unwrap();
    let (detached, first, second, outer) = (&events[0], &events[1], &events[2], &events[3]);
    assert_eq!(detached.parent_id(), None);
    assert_ne!(detached.trace_id(), outer.trace_id());
    assert_eq!((first.parent_id(), second.parent_id()), (None, None));
    assert_eq!(Some(first.trace_id()), request.trace_id());
    assert_eq!(Some(second.trace_id()), request.trace_id());
}

#[test]
fn explicit_parents_for_handles_and_instrument_override_the_current_event() {
    let (notifier, events) = collecting();
    let remote = Context::new(
        "4bf92f3577b34da6a3ce929d0e0e4736".parse().unwrap(),
        Some(EventId::new(0xb7ad6b7169203331)),
    );
    notifier.instrument("outer.app", Payload::new, |_| {
        let mut handle = notifier.build_handle("handle.app", Payload::new());
        handle.set_parent(remote).unwrap();
        handle.start().unwrap();
        handle.in_scope(|| notifier.instrument("child.app", Payload::new, |_| ()));
        handle.finish().unwrap();
        notifier.instrument_with_parent(remote, "instrumented.app", Payload::new, |_| ());
    });
    let events = events.lock().unwrap();
    let (child, handle, instrumented, outer) = (&events[0], &events[1], &events[2], &events[3]);
    for event in [handle, instrumented] {
        assert_eq!(event.parent_id(), remote.event_id());
        assert_eq!(Some(event.trace_id()), remote.trace_id());
    }
    assert_eq!(
        child.parent_id(),
        Some(handle.id()),
        "children of an explicit-parent event still nest"
    );
    assert_eq!(outer.parent_id(), None);
}

/// Records every evented call as (call, name, context).
#[derive(Default)]
struct Calls(Mutex<Vec<(&'static str, String, EventContext)>>);

impl EventedSubscriber for Calls {
    fn start(&self, name: &str, event: &EventContext, _: &Payload) {
        self.0.lock().unwrap().push(("start", name.to_owned(), *event));
    }
    fn finish(&self, name: &str, event: &EventContext, _: &Payload) {
        self.0.lock().unwrap().push(("finish", name.to_owned(), *event));
    }
    fn enter(&self, name: &str, event: &EventContext) {
        self.0.lock().unwrap().push(("enter", name.to_owned(), *event));
    }
    fn exit(&self, name: &str, event: &EventContext) {
        self.0.lock().unwrap().push(("exit", name.to_owned(), *event));
    }
}

#[test]
fn evented_subscribers_get_the_ids_at_start_and_finish_and_enter_exit_only_for_entered_polls() {
    let notifier = Notifier::new();
    let calls = Arc::new(Calls::default());
    let _ = notifier.subscribe(Pattern::all(), Subscriber::evented(calls.clone()));
    notifier.instrument("outer.app", Payload::new, |_| {
        notifier.instrument("inner.app", Payload::new, |_| ());
    });
    let mut detached = notifier.build_handle("async.app", Payload::new());
    detached.start().unwrap();
    drop(detached.enter());
    detached.finish().unwrap();

    let calls = calls.0.lock().unwrap();
    let shape: Vec<(&str, &str)> = calls.iter().map(|(c, n, _)| (*c, n.as_str())).collect();
    assert_eq!(
        shape,
        [
            ("start", "outer.app"),
            ("start", "inner.app"),
            ("finish", "inner.app"),
            ("finish", "outer.app"),
            ("start", "async.app"),
            ("enter", "async.app"),
            ("exit", "async.app"),
            ("finish", "async.app"),
        ]
    );
    let (outer, inner) = (calls[0].2, calls[1].2);
    assert_eq!(inner.parent_id(), Some(outer.id()));
    assert_eq!(inner.trace_id(), outer.trace_id());
    assert_eq!(calls[2].2, inner, "finish gets the ids start got");
    assert_eq!(calls[3].2, outer);
    assert_eq!(inner.duration(), None, "no times unless asked for");
    let asynchronous = calls[4].2;
    assert!(calls[4..].iter().all(|(_, _, c)| c.id() == asynchronous.id()));
    assert_ne!(asynchronous.trace_id(), outer.trace_id());
}

#[test]
fn evented_subscribers_asking_for_duration_get_start_and_end_at_finish() {
    let notifier = Notifier::new();
    let calls = Arc::new(Calls::default());
    let _ = notifier.subscribe(
        "x",
        Subscriber::evented_with(EventedOptions { duration: true }, calls.clone()),
    );
    notifier.instrument("x", Payload::new, |_| {
        std::thread::sleep(std::time::Duration::from_millis(2))
    });
    let calls = calls.0.lock().unwrap();
    assert_eq!(calls[0].2.start(), None, "the clock is read after the start calls");
    let finish = calls[1].2;
    assert!(finish.duration().unwrap() >= std::time::Duration::from_millis(2));
    assert_eq!(
        finish.end().unwrap() - finish.start().unwrap(),
        finish.duration().unwrap()
    );
}

/// `n` nested events started with the thread's instrumenter (current from their start, as AS::N's
/// `instrumenter.start`), named `level{i}.app`; their ids.
fn nested(notifier: &Notifier, n: usize) -> Vec<Option<EventId>> {
    let instrumenter = notifier.instrumenter();
    (0..n)
        .map(|i| {
            instrumenter
                .start(format!("level{i}.app"), Payload::new())
                .map(|e| e.id())
        })
        .collect()
}

/// Finishes `level{i}.app`, started by [`nested`].
fn finish(notifier: &Notifier, i: usize) {
    notifier
        .instrumenter()
        .finish(&format!("level{i}.app"), Payload::new())
        .unwrap();
}

/// The case of issue 10: 17 nested events, the 16th finished before the 17th, then the rest.
#[test]
fn seventeen_nested_events_finished_sixteenth_first_leave_no_current_event() {
    let (notifier, events) = collecting();
    let ids = nested(&notifier, 17);
    assert_eq!(notify_core::context::current_event_id(), ids[16]);
    finish(&notifier, 15);
    assert_eq!(notify_core::context::current_event_id(), ids[16]);
    finish(&notifier, 16);
    assert_eq!(notify_core::context::current_event_id(), ids[14]);
    for i in (0..15).rev() {
        finish(&notifier, i);
    }
    assert_eq!(notify_core::context::current_event_id(), None);
    notifier.instrument("after.app", Payload::new, |_| ());
    let events = events.lock().unwrap();
    assert_eq!(events.last().unwrap().parent_id(), None);
    for (i, id) in ids.iter().enumerate().skip(1) {
        let event = events.iter().find(|e| Some(e.id()) == *id).unwrap();
        assert_eq!(event.parent_id(), ids[i - 1], "level {i}");
    }
}

/// A small deterministic generator for the finishing orders.
fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

#[test]
fn nested_events_at_any_depth_finished_in_many_orders_leave_no_current_event() {
    let (notifier, _events) = collecting();
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    for depth in [16, 17, 18, 33, 64] {
        for _ in 0..50 {
            let ids = nested(&notifier, depth);
            let mut order: Vec<usize> = (0..depth).collect();
            for i in (1..depth).rev() {
                order.swap(i, (xorshift(&mut seed) % (i as u64 + 1)) as usize);
            }
            let mut open: Vec<usize> = (0..depth).collect();
            for &i in &order {
                finish(&notifier, i);
                open.retain(|&j| j != i);
                let expected = open.last().and_then(|&j| ids[j]);
                assert_eq!(
                    notify_core::context::current_event_id(),
                    expected,
                    "depth {depth}, order {order:?}"
                );
            }
            assert_eq!(notify_core::context::current_event_id(), None);
        }
    }
}

/// Issue 33 item 9: handles nest through their scopes, and finishing them anywhere (here, some on
/// another thread) never changes this thread's current event: a started handle is not current.
#[test]
fn nested_handles_finished_on_other_threads_leave_no_current_event() {
    let (notifier, events) = collecting();
    let mut handles: Vec<Handle> = Vec::new();
    for i in 0..20 {
        let mut handle = notifier.build_handle(format!("level{i}.app"), Payload::new());
        match handles.last() {
            Some(parent) => parent.in_scope(|| handle.start().unwrap()),
            None => handle.start().unwrap(),
        }
        assert_eq!(notify_core::context::current_event_id(), None);
        handles.push(handle);
    }
    let ids: Vec<Option<EventId>> = handles.iter().map(Handle::id).collect();
    let far: Vec<Handle> = handles.drain(3..13).collect();
    std::thread::spawn(move || {
        for mut handle in far {
            handle.finish().unwrap();
        }
    })
    .join()
    .unwrap();
    assert_eq!(notify_core::context::current_event_id(), None);
    for handle in handles.iter_mut().rev() {
        handle.finish().unwrap();
        assert_eq!(notify_core::context::current_event_id(), None);
    }
    let events = events.lock().unwrap();
    for (i, id) in ids.iter().enumerate().skip(1) {
        let event = events.iter().find(|e| Some(e.id()) == *id).unwrap();
        assert_eq!(event.parent_id(), ids[i - 1], "level {i}");
    }
}

static LOCATED: notify_core::event::Callsite = notify_core::event::Callsite::at(
    "located.app",
    notify_core::event::Location::new(file!(), 7, module_path!()),
);

#[test]
fn callsite_events_carry_their_location_to_events_evented_subscribers_and_the_serialised_event() {
    let events = Arc::new(Mutex::new(Vec::new()));
    let calls = Arc::new(Calls::default());
    let sink = events.clone();
    let a = notify_core::subscribe(
        "located.app",
        Subscriber::event(move |e: &Event| sink.lock().unwrap().push(e.clone())),
    );
    let b = notify_core::subscribe("located.app", Subscriber::evented(calls.clone()));
    LOCATED.instrument(Payload::new, |_| ());
    let mut handle = LOCATED.handle(Payload::new).unwrap();
    handle.start().unwrap();
    handle.finish().unwrap();
    a.unsubscribe().unwrap();
    b.unsubscribe().unwrap();
    let events = events.lock().unwrap();
    assert_eq!(events.len(), 2);
    for event in events.iter() {
        let location = event.location().expect("a callsite event has a location");
        assert_eq!(
            (location.file(), location.line(), location.module_path()),
            (file!(), 7, module_path!())
        );
        #[cfg(feature = "serde")]
        {
            let json = serde_json::to_value(event).unwrap();
            assert_eq!(json["location"]["line"], 7);
            assert_eq!(json["location"]["file"], file!());
        }
    }
    let calls = calls.0.lock().unwrap();
    assert!(calls.iter().all(|(_, _, c)| c.location().map(|l| l.line()) == Some(7)));
    let (notifier, by_name) = collecting();
    notifier.instrument("x", Payload::new, |_| ());
    assert_eq!(by_name.lock().unwrap()[0].location(), None);
}
