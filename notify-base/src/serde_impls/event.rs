//! Serde forms of [`Event`] and [`Outcome`].
//!
//! An event is a map (JSON object):
//!
//! | field | form |
//! |---|---|
//! | `name` | string |
//! | `start`, `end` | wall-clock times, RFC 3339 UTC strings with nanoseconds |
//! | `duration_ns` | number: `end - start` on the monotonic clock, in nanoseconds |
//! | `id` | 16 lowercase hex digits in a string ([`EventId`](crate::EventId), a W3C span id); a bare number is read too |
//! | `transaction_id` | number ([`TransactionId`](crate::TransactionId)) |
//! | `parent_id` | as `id`, or `null` |
//! | `trace_id` | 32 lowercase hex digits (W3C trace-context) |
//! | `sampled` | bool: the trace's head-sampling decision ([`Event::is_sampled`]) |
//! | `parent_is_remote` | bool: the parent lives in another process ([`Event::parent_is_remote`]) |
//! | `tracestate` | string: the W3C `tracestate` of the event's trace ([`Event::trace_state`]); written only when not empty |
//! | `outcome` | `"completed"`, `"panicked"` or `"cancelled"` |
//! | `payload` | map (see [`Payload`](crate::Payload)) |
//! | `cpu_time_ns`, `allocations` | number or `null` |
//! | `location` | `{"file", "line", "module_path"}` or `null`; written, not read back |
//!
//! The event's baggage ([`Event::baggage`]) is not part of this form: it is user data, carried
//! only for the exporters that propagate it.
//!
//! Reading one back needs `name`, `start`, `duration_ns` (or `end`), `id`, `transaction_id` and `trace_id`;
//! the other fields default (no parent, completed, empty payload, not measured, sampled, parent not
//! remote), and fields this
//! version does not know are skipped, so a newer writer's events still read. The event gets its
//! monotonic `start` from its wall-clock `start` (through this process's clock anchor) and
//! `end = start + duration`, so its duration is exact.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::de::{self, IgnoredAny, MapAccess, Visitor};
use serde::ser::SerializeStruct;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::event::{monotonic_clock, Event, Name, Outcome};
use crate::event_id::EventId;
use crate::payload::Payload;
use crate::trace_id::TraceId;
use crate::transaction_id::TransactionId;

const OUTCOMES: &[&str] = &["completed", "panicked", "cancelled"];

impl Serialize for Outcome {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let index = *self as u32;
        s.serialize_unit_variant("Outcome", index, OUTCOMES[index as usize])
    }
}

impl<'de> Deserialize<'de> for Outcome {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Outcome, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        match &*text {
            "completed" => Ok(Outcome::Completed),
            "panicked" => Ok(Outcome::Panicked),
            "cancelled" => Ok(Outcome::Cancelled),
            // serde quotes the name whole: an excerpt of it (the text may come from another process).
            other => Err(de::Error::unknown_variant(
                &crate::escape::Excerpt::new(other).to_string(),
                OUTCOMES,
            )),
        }
    }
}

/// Nanoseconds as a number: `u64` when it fits (584 years), else `u128`.
struct Nanos(Duration);

impl Serialize for Nanos {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match u64::try_from(self.0.as_nanos()) {
            Ok(ns) => s.serialize_u64(ns),
            Err(_) => s.serialize_u128(self.0.as_nanos()),
        }
    }
}

/// A wall-clock time in its RFC 3339 form.
struct Time(std::time::SystemTime);

impl Serialize for Time {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        super::time::serialize(self.0, s)
    }
}

impl<'de> Deserialize<'de> for Time {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Time, D::Error> {
        super::time::deserialize(d).map(Time)
    }
}

impl Serialize for Event {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Event", 16)?;
        st.serialize_field("name", self.name())?;
        st.serialize_field("start", &Time(self.start_time()))?;
        st.serialize_field("end", &Time(self.end_time()))?;
        st.serialize_field("duration_ns", &Nanos(self.duration()))?;
        st.serialize_field("id", &self.id())?;
        st.serialize_field("parent_id", &self.parent_id())?;
        st.serialize_field("transaction_id", &self.transaction_id())?;
        st.serialize_field("trace_id", &self.trace_id())?;
        st.serialize_field("sampled", &self.is_sampled())?;
        st.serialize_field("parent_is_remote", &self.parent_is_remote())?;
        if self.trace_state().is_empty() {
            st.skip_field("tracestate")?;
        } else {
            st.serialize_field("tracestate", self.trace_state().as_str())?;
        }
        st.serialize_field("outcome", &self.outcome())?;
        st.serialize_field("payload", self.payload())?;
        st.serialize_field("cpu_time_ns", &self.cpu_time().map(Nanos))?;
        st.serialize_field("allocations", &self.allocations())?;
        st.serialize_field("location", &self.location())?;
        st.end()
    }
}

impl<'de> Deserialize<'de> for Event {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Event, D::Error> {
        d.deserialize_map(EventVisitor)
    }
}

struct EventVisitor;

/// Reads a nanosecond count (`u64` or `u128`) as a duration.
fn nanos<E: de::Error>(ns: u128) -> Result<Duration, E> {
    let secs = u64::try_from(ns / 1_000_000_000).map_err(|_| E::custom("duration out of range"))?;
    Ok(Duration::new(secs, (ns % 1_000_000_000) as u32))
}

impl<'de> Visitor<'de> for EventVisitor {
    type Value = Event;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an event: a map with name, start, duration_ns, id and transaction_id")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Event, A::Error> {
        let mut name: Option<String> = None;
        let mut start: Option<Time> = None;
        let mut end: Option<Time> = None;
        let mut duration: Option<u128> = None;
        let mut id: Option<EventId> = None;
        let mut parent_id: Option<Option<EventId>> = None;
        let mut transaction_id: Option<TransactionId> = None;
        let mut trace_id: Option<TraceId> = None;
        let mut outcome: Option<Outcome> = None;
        let mut sampled: Option<bool> = None;
        let mut parent_remote: Option<bool> = None;
        let mut trace_state: Option<String> = None;
        let mut payload: Option<Payload> = None;
        let mut cpu_time: Option<Option<u128>> = None;
        let mut allocations: Option<Option<u64>> = None;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            fn set<'de, A: MapAccess<'de>, T: Deserialize<'de>>(
                map: &mut A,
                slot: &mut Option<T>,
                field: &'static str,
            ) -> Result<(), A::Error> {
                if slot.is_some() {
                    return Err(de::Error::duplicate_field(field));
                }
                *slot = Some(map.next_value()?);
                Ok(())
            }
            match &*key {
                "name" => set(&mut map, &mut name, "name")?,
                "start" => set(&mut map, &mut start, "start")?,
                "end" => set(&mut map, &mut end, "end")?,
                "duration_ns" => set(&mut map, &mut duration, "duration_ns")?,
                "id" => set(&mut map, &mut id, "id")?,
                "parent_id" => set(&mut map, &mut parent_id, "parent_id")?,
                "transaction_id" => set(&mut map, &mut transaction_id, "transaction_id")?,
                "trace_id" => set(&mut map, &mut trace_id, "trace_id")?,
                "outcome" => set(&mut map, &mut outcome, "outcome")?,
                "sampled" => set(&mut map, &mut sampled, "sampled")?,
                "parent_is_remote" => set(&mut map, &mut parent_remote, "parent_is_remote")?,
                "tracestate" => set(&mut map, &mut trace_state, "tracestate")?,
                "payload" => set(&mut map, &mut payload, "payload")?,
                "cpu_time_ns" => set(&mut map, &mut cpu_time, "cpu_time_ns")?,
                "allocations" => set(&mut map, &mut allocations, "allocations")?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let name = name.ok_or_else(|| de::Error::missing_field("name"))?;
        let Time(start_time) = start.ok_or_else(|| de::Error::missing_field("start"))?;
        let duration = match (duration, end) {
            (Some(ns), _) => nanos(ns)?,
            (None, Some(Time(end))) => end
                .duration_since(start_time)
                .map_err(|_| de::Error::custom("`end` is before `start`"))?,
            (None, None) => return Err(de::Error::missing_field("duration_ns")),
        };
        let start = monotonic_clock(start_time);
        let mut event = Event::named(
            Name::Shared(Arc::from(name)),
            start,
            start + duration,
            payload.unwrap_or_default(),
        );
        event.id = id.ok_or_else(|| de::Error::missing_field("id"))?;
        event.transaction_id = transaction_id.ok_or_else(|| de::Error::missing_field("transaction_id"))?;
        event.trace_id = trace_id.ok_or_else(|| de::Error::missing_field("trace_id"))?;
        event.parent_id = parent_id.flatten();
        event.outcome = outcome.unwrap_or_default();
        event.sampled = sampled.unwrap_or(true);
        event.parent_remote = parent_remote.unwrap_or(false);
        // An invalid list is read as none, as an incoming header would be.
        event.trace_state = trace_state.and_then(|s| s.parse().ok()).unwrap_or_default();
        event.cpu_time = cpu_time.flatten().map(nanos).transpose()?;
        event.allocations = allocations.flatten();
        Ok(event)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_sampling_decision_and_the_remote_parent_mark_round_trip_and_default_when_absent() {
        let now = std::time::Instant::now();
        let mut event = Event::new("request.http", now, now, Payload::new());
        event.sampled = false;
        event.parent_remote = true;
        let json = serde_json::to_value(&event).unwrap();
        assert_eq!(
            (&json["sampled"], &json["parent_is_remote"]),
            (&serde_json::json!(false), &serde_json::json!(true))
        );
        let back: Event = serde_json::from_value(json).unwrap();
        assert_eq!((back.is_sampled(), back.parent_is_remote()), (false, true));
        let old = r#"{"name":"a","start":"2026-12-03T00:00:00Z","duration_ns":1,"id":"0000000000000009",
            "transaction_id":2,"trace_id":"0af7651916cd43dd8448eb211c80319c"}"#;
        let old: Event = serde_json::from_str(old).unwrap();
        assert_eq!((old.is_sampled(), old.parent_is_remote()), (true, false));
    }

    use std::time::{Instant, SystemTime};

    use super::*;

    fn sample() -> Event {
        let start = Instant::now();
        let mut payload = Payload::new()
            .with("sql", "SELECT 1")
            .with("rows", 3_u64)
            .with("cached", None::<bool>);
        payload.record_error(&std::fmt::Error);
        let mut event = Event::new("query.sql", start, start + Duration::from_nanos(1_234_567), payload);
        event.parent_id = Some(EventId(41));
        event.outcome = Outcome::Panicked;
        event.cpu_time = Some(Duration::from_nanos(1_000_001));
        event.allocations = Some(7);
        event
    }

    #[test]
    fn round_trips_through_json() {
        let event = sample();
        let json = serde_json::to_string(&event).unwrap();
        let back: Event = serde_json::from_str(&json).unwrap();
        assert_eq!(back.name(), event.name());
        assert_eq!(back.start_time(), event.start_time());
        assert_eq!(back.end_time(), event.end_time());
        assert_eq!(back.duration(), event.duration());
        assert_eq!(
            (
                back.id(),
                back.parent_id(),
                back.transaction_id(),
                back.trace_id(),
                back.outcome()
            ),
            (
                event.id(),
                Some(EventId(41)),
                event.transaction_id(),
                event.trace_id(),
                Outcome::Panicked
            )
        );
        assert_eq!(back.payload(), event.payload());
        assert_eq!((back.cpu_time(), back.allocations()), (event.cpu_time(), Some(7)));
        // And the same JSON again.
        assert_eq!(serde_json::to_string(&back).unwrap(), json);
    }

    #[test]
    fn times_are_strings_javascript_reads_exactly() {
        let event = sample();
        let json: serde_json::Value = serde_json::to_value(&event).unwrap();
        let start = json["start"].as_str().unwrap();
        assert_eq!(start, humantime::format_rfc3339_nanos(event.start_time()).to_string());
        assert_eq!(start.len(), "2024-05-01T12:00:00.123456789Z".len());
        assert_eq!(json["duration_ns"], 1_234_567);
        assert_eq!(json["outcome"], "panicked");
        assert_eq!(json["payload"]["exception"]["type_name"], "core::fmt::Error");
    }

    #[test]
    fn event_ids_are_16_hex_digit_strings_and_transaction_ids_numbers() {
        let event = sample().with_ids(EventId(u64::MAX), Some(EventId(41)), TransactionId(3));
        let json: serde_json::Value = serde_json::to_value(&event).unwrap();
        assert_eq!(json["id"], serde_json::json!("ffffffffffffffff"));
        assert_eq!(json["parent_id"], serde_json::json!("0000000000000029"));
        assert_eq!(json["transaction_id"], serde_json::json!(3));
        let root = Event::new("a.b", event.start(), event.end(), Payload::new());
        assert_eq!(
            serde_json::to_value(&root).unwrap()["parent_id"],
            serde_json::Value::Null
        );
        let back: Event = serde_json::from_value(json).unwrap();
        assert_eq!(
            (back.id(), back.parent_id(), back.transaction_id()),
            (EventId(u64::MAX), Some(EventId(41)), TransactionId(3))
        );
    }

    #[test]
    fn events_before_1970_and_after_9999_read_back() {
        for (start, end) in [
            ("1960-01-04T00:00:00.000000000Z", "1960-01-04T00:00:01.000000000Z"),
            ("+11476-08-15T05:20:00.000000000Z", "+11476-08-15T05:20:00.000000007Z"),
        ] {
            let json = format!(
                r#"{{"name":"old.job","start":"{start}","end":"{end}","id":9,"transaction_id":2,
                "trace_id":"0af7651916cd43dd8448eb211c80319c"}}"#
            );
            let event: Event = serde_json::from_str(&json).unwrap();
            let again: serde_json::Value = serde_json::to_value(&event).unwrap();
            assert_eq!(
                (again["start"].as_str(), again["end"].as_str()),
                (Some(start), Some(end))
            );
        }
    }

    #[test]
    fn reads_a_minimal_event_and_skips_unknown_fields() {
        let json = r#"{"name":"done.job","start":"2024-05-01T12:00:00.5Z","end":"2024-05-01T12:00:01Z",
            "id":9,"transaction_id":2,"trace_id":"0af7651916cd43dd8448eb211c80319c"}"#;
        let event: Event = serde_json::from_str(json).unwrap();
        assert_eq!(event.name(), "done.job");
        assert_eq!(event.duration(), Duration::from_millis(500));
        assert_eq!(
            event.start_time(),
            SystemTime::UNIX_EPOCH + Duration::from_millis(1_714_564_800_500)
        );
        assert_eq!(
            (event.id(), event.parent_id(), event.transaction_id(), event.outcome()),
            (EventId(9), None, TransactionId(2), Outcome::Completed)
        );
        assert!(event.payload().is_empty());
    }

    #[test]
    fn bad_events_are_errors_that_name_the_field() {
        let err = |json: &str| serde_json::from_str::<Event>(json).unwrap_err().to_string();
        assert_eq!(
            err(r#"{"name":"a","start":"2024-05-01T12:00:00Z","id":1,"transaction_id":1}"#),
            "missing field `duration_ns` at line 1 column 69"
        );
        assert_eq!(
            err(r#"{"name":"a","start":"yesterday"}"#),
            "invalid RFC 3339 UTC time \"yesterday\": the year is 4 digits at line 1 column 31"
        );
        assert_eq!(
            err(r#"{"name":"a","outcome":"failed"}"#),
            "unknown variant `failed`, expected one of `completed`, `panicked`, `cancelled` at line 1 column 31"
        );
    }
}
