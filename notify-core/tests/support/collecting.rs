//! A notifier whose every event is collected, shared by tests/context.rs and
//! tests/context_async.rs through `#[path = "support/collecting.rs"] mod collecting;`.

use std::sync::{Arc, Mutex};

use notify_core::{Event, Notifier, Pattern, Subscriber};

/// A notifier whose every event is collected, in finish order.
pub fn collecting() -> (Notifier, Arc<Mutex<Vec<Event>>>) {
    let notifier = Notifier::new();
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let _ = notifier.subscribe(
        Pattern::all(),
        Subscriber::event(move |e: &Event| sink.lock().unwrap().push(e.clone())),
    );
    (notifier, events)
}
