//! [`EventId`]: what names one listened event: a W3C span id.

use crate::id_type::id_type;

id_type! {
    /// The id of one listened event ([`Event::id`](crate::Event::id),
    /// [`EventContext::id`](crate::EventContext::id), [`Handle::id`](crate::Handle::id),
    /// [`current_event_id`](crate::current_event_id)); a child's
    /// [`parent_id`](crate::Event::parent_id) is its parent's id.
    ///
    /// A W3C trace-context span id: 64 random bits, never 0, from a per-thread generator seeded
    /// from the operating system's randomness (through the standard library's `RandomState`), so
    /// ids of different processes continuing one trace do not collide (two generators share an id
    /// with probability about n²/2⁶⁵ for n ids). One thread's ids never repeat (a bijection of a
    /// sequence that does not repeat within 2⁶⁴ steps); making one is a few arithmetic operations,
    /// no system call. Ids carry no order: they do not say which event started first. Unlistened
    /// events get none. Ids of events made elsewhere (an importer's
    /// [`Event::with_ids`](crate::Event::with_ids), [`EventContext::new`](crate::EventContext::new),
    /// [`Context::new`](crate::Context::new)) are whatever the other process gave them, not checked
    /// here.
    ///
    /// Displays as the decimal number (`17`). Serializes (feature `serde`) as 16 lowercase hex
    /// digits in a string in human-readable formats (JSON: `"id": "00f067aa0ba902b7"`, the form of
    /// a W3C `parent-id`, exact for readers that hold numbers as doubles) and reads that form or
    /// the bare number of earlier versions; binary formats (postcard) carry the `u64`.
    ///
    /// ```
    /// use notify_core::{event::EventId, Event, Notifier, Payload, Subscriber};
    /// use std::sync::{Arc, Mutex};
    /// let notifier = Notifier::new();
    /// let ids = Arc::new(Mutex::new(Vec::new()));
    /// let sink = ids.clone();
    /// notifier.subscribe("query.sql", Subscriber::event(move |e: &Event| sink.lock().unwrap().push(e.id())));
    /// notifier.instrument("query.sql", Payload::new, |_| ());
    /// notifier.instrument("query.sql", Payload::new, |_| ());
    /// let ids = ids.lock().unwrap();
    /// assert_ne!(ids[0], ids[1]);
    /// assert_ne!(ids[0].get(), 0);
    /// assert_eq!(EventId::new(17).to_string(), "17");
    /// ```
    pub struct EventId: decimal, serde hex;
    new: "The event id with this number, e.g. one read from another process (an importer, a bridge).";
    get: "The number (never 0 for an event of this process).";
}
