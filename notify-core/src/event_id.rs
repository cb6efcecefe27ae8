//! [`EventId`]: what names one listened event in this process.

use std::fmt;
use std::num::ParseIntError;
use std::str::FromStr;

#[cfg(feature = "serde")]
use serde::{Deserialize, Deserializer, Serialize, Serializer};

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
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(transparent)]
pub struct EventId(pub(crate) u64);

impl EventId {
    /// The event id with this number, e.g. one read from another process (an importer, a bridge).
    pub const fn new(id: u64) -> EventId {
        EventId(id)
    }

    /// The number (never 0 for an event of this process).
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

/// Parses the [`Display`](fmt::Display) form, a decimal number (`"17"`), e.g. from a URL or a
/// log line.
///
/// ```
/// let id: notify_core::EventId = "17".parse()?;
/// assert_eq!(id, notify_core::EventId::new(17));
/// assert!("#17".parse::<notify_core::EventId>().is_err());
/// # Ok::<(), std::num::ParseIntError>(())
/// ```
impl FromStr for EventId {
    type Err = ParseIntError;

    fn from_str(text: &str) -> Result<EventId, ParseIntError> {
        text.parse().map(EventId)
    }
}

impl From<u64> for EventId {
    fn from(id: u64) -> EventId {
        EventId(id)
    }
}

impl From<EventId> for u64 {
    fn from(id: EventId) -> u64 {
        id.0
    }
}

#[cfg(feature = "serde")]
impl Serialize for EventId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(self.0)
    }
}

#[cfg(feature = "serde")]
impl<'de> Deserialize<'de> for EventId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<EventId, D::Error> {
        u64::deserialize(deserializer).map(EventId)
    }
}

#[cfg(test)]
mod tests {
    use super::EventId;

    #[test]
    fn displays_as_the_decimal_number_and_orders_by_it() {
        assert_eq!(EventId::new(17).to_string(), "17");
        assert_eq!(format!("{:>4}", EventId::new(7)), "   7");
        assert_eq!(format!("{:?}", EventId::new(17)), "EventId(17)");
        assert!(EventId::new(2) < EventId::new(10));
        assert_eq!(u64::from(EventId::from(u64::MAX)), u64::MAX);
        assert_eq!(std::mem::size_of::<EventId>(), 8);
    }

    #[test]
    fn parses_what_it_displays() {
        for n in [0, 1, 17, u64::MAX] {
            assert_eq!(EventId::new(n).to_string().parse::<EventId>(), Ok(EventId::new(n)));
        }
        assert!("".parse::<EventId>().is_err());
        assert!("-1".parse::<EventId>().is_err());
        assert!("18446744073709551616".parse::<EventId>().is_err(), "2^64 does not fit");
    }

    #[cfg(feature = "serde")]
    #[test]
    fn serializes_as_the_bare_number() {
        assert_eq!(serde_json::to_string(&EventId::new(17)).unwrap(), "17");
        assert_eq!(serde_json::to_string(&Some(EventId::new(3))).unwrap(), "3");
        assert_eq!(serde_json::from_str::<EventId>("17").unwrap(), EventId::new(17));
        let max = EventId::new(u64::MAX);
        assert_eq!(
            serde_json::from_str::<EventId>(&serde_json::to_string(&max).unwrap()).unwrap(),
            max
        );
        assert!(serde_json::from_str::<EventId>("\"17\"").is_err());
        assert!(serde_json::from_str::<EventId>("-1").is_err());
    }
}
