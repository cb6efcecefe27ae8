//! A callsite handle asks its silenceable subscribers (`silenced`) when it is made, before
//! `start`. Dropped unstarted, or when its `payload` closure panics, it delivers nothing, and
//! a `silenced` that panicked is still reported to the failure hook, once. Its own binary: the
//! test sets the global notifier's failure hook.

use std::sync::{Arc, Mutex};

use notify_core::{event::Callsite, Notifier, Payload, Subscriber};

#[path = "support/phases.rs"]
mod phases;
use phases::{PanicsInSilenced, PhaseRecorder};

#[test]
fn a_callsite_handle_dropped_unstarted_or_whose_payload_panics_reports_the_silenced_failure() {
    static SITE: Callsite = Callsite::new("site.handle.dropped");
    let previous = std::panic::take_hook();
    // Quiet for the two panics this test causes; any other (a failed assertion) is printed.
    std::panic::set_hook(Box::new(|info| {
        let message = notify_core::failure::panic_message(info.payload());
        if !message.starts_with("boom in") {
            eprintln!("{info}");
        }
    }));
    let failures = Arc::new(Mutex::new(Vec::new()));
    let sink = failures.clone();
    Notifier::global().set_failure_hook(move |f: &notify_core::failure::SubscriberFailure| {
        sink.lock()
            .unwrap()
            .push((f.kind().to_string(), f.message().to_owned()));
    });
    let calls = Arc::new(Mutex::new(Vec::new()));
    // The recorder makes the event listened; the silenceable subscriber is asked when a handle
    // is made.
    let recorder = notify_core::subscribe("site.handle.dropped", Subscriber::evented(PhaseRecorder(calls.clone())));
    let silenceable = notify_core::subscribe("site.handle.dropped", Subscriber::silenceable(PanicsInSilenced));
    let reported = || failures.lock().unwrap().clone();
    let expected = |n: usize| vec![("silenceable".to_owned(), "boom in silenced".to_owned()); n];

    // Made (which asks `silenced`, which panics) and dropped.
    let handle = SITE.handle(Payload::new).expect("a listened callsite");
    drop(handle);
    assert_eq!(reported(), expected(1));
    assert!(calls.lock().unwrap().is_empty(), "{:?}", calls.lock().unwrap());

    // The payload closure panics after `silenced` was asked.
    let caught = std::panic::catch_unwind(|| SITE.handle(|| panic!("boom in payload")));
    assert_eq!(
        notify_core::failure::panic_message(&*caught.unwrap_err()),
        "boom in payload"
    );
    assert_eq!(reported(), expected(2));
    assert!(calls.lock().unwrap().is_empty(), "{:?}", calls.lock().unwrap());

    // Started and finished: delivered, and the failure reported with the event (once).
    let mut handle = SITE.handle(Payload::new).expect("a listened callsite");
    handle.start().unwrap();
    handle.finish().unwrap();
    drop(handle);
    assert_eq!(reported(), expected(3));
    assert_eq!(
        *calls.lock().unwrap(),
        ["start site.handle.dropped", "finish site.handle.dropped"]
    );

    recorder.unsubscribe().unwrap();
    silenceable.unsubscribe().unwrap();
    std::panic::set_hook(previous);
}
