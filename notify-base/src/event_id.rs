//! [`EventId`]: what names one listened event in this process.

use crate::id_type::id_type;

id_type! {
    /// The id of one listened event ([`Event::id`](crate::Event::id),
    /// [`EventContext::id`](crate::EventContext::id), [`Handle::id`](crate::Handle::id),
    /// [`current_event_id`](crate::current_event_id)); a child's
    /// [`parent_id`](crate::Event::parent_id) is its parent's id.
    ///
    /// Unique in this process and never 0 for the events it makes: each thread reserves blocks of
    /// 1,024 ids from one process-wide counter that starts at 1 and hands them out in order, so the ids
    /// of one thread increase but ids of different threads interleave (they do not say which event
    /// started first). Unlistened events get none. Ids of events made elsewhere (an importer's
    /// [`Event::with_ids`](crate::Event::with_ids), [`EventContext::new`](crate::EventContext::new),
    /// [`Context::new`](crate::Context::new)) are whatever the other process gave them, not checked
    /// here.
    ///
    /// Displays as the decimal number (`17`), the number serde writes (feature `serde`: the bare
    /// number, so an event's JSON form is `"id": 17`). The counter stays far below 2^53 in practice,
    /// where JavaScript (`jq`, browsers) reads JSON numbers exactly.
    ///
    /// ```
    /// use notify_core::{Event, EventId, Notifier, Payload, Subscriber};
    /// use std::sync::{Arc, Mutex};
    /// let notifier = Notifier::new();
    /// let ids = Arc::new(Mutex::new(Vec::new()));
    /// let sink = ids.clone();
    /// notifier.subscribe("query.sql", Subscriber::event(move |e: &Event| sink.lock().unwrap().push(e.id())));
    /// notifier.instrument("query.sql", Payload::new, |_| ());
    /// notifier.instrument("query.sql", Payload::new, |_| ());
    /// let ids = ids.lock().unwrap();
    /// assert!(ids[0] < ids[1], "one thread's ids increase");
    /// assert_ne!(ids[0].get(), 0);
    /// assert_eq!(EventId::new(17).to_string(), "17");
    /// ```
    pub struct EventId: decimal;
    new: "The event id with this number, e.g. one read from another process (an importer, a bridge).";
    get: "The number (never 0 for an event of this process).";
}
