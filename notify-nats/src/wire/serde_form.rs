//! The serde-derived form of events and batches: what JSON batches are written and read in, and
//! [`decode`], the reference decoder that the one-pass binary reader is compared against.

use std::time::{Duration, SystemTime};

use notify_core::baggage::Baggage;
use notify_core::escape::Escaped;
use notify_core::event::{EventId, Outcome};
use notify_core::{Event, Payload};
use serde::{Deserialize, Serialize};

use super::envelope::{Envelope, WireOutcome};
use super::json_reason::json_reason;
use super::nesting::too_deep;
use super::read::decode_v3;
use super::serde_value::{payload_from, PayloadOut, WireValue, REFUSED_TOO_DEEP};
use super::{check_version, strip_magic, DecodeError, Encoding};

pub(super) fn unix_ns(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// One event as encoded; the field order is the wire format (see [`EventIn`]).
#[derive(Serialize)]
pub(crate) struct EventOut<'a> {
    pub(super) name: &'a str,
    pub(super) start_unix_ns: u64,
    pub(super) end_unix_ns: u64,
    pub(super) duration_ns: u64,
    pub(super) id: u64,
    pub(super) parent_id: Option<u64>,
    pub(super) transaction_id: u64,
    pub(super) trace_id: u128,
    pub(super) outcome: WireOutcome,
    pub(super) payload: PayloadOut<'a>,
    /// Since version 2.
    pub(super) cpu_time_ns: Option<u64>,
    /// Since version 2.
    pub(super) allocations: Option<u64>,
    /// JSON only, when the event has baggage and the exporter propagates it: its `baggage`
    /// header form (postcard's version 2 has no field for it; [`EventOut::write_postcard`]
    /// does not write it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) baggage: Option<&'a str>,
}

impl<'a> EventOut<'a> {
    pub(crate) fn new(event: &'a Event) -> EventOut<'a> {
        let start = unix_ns(event.start_time());
        let duration_ns = saturating_ns(event.duration());
        EventOut {
            name: event.name(),
            start_unix_ns: start,
            end_unix_ns: start.saturating_add(duration_ns),
            duration_ns,
            id: event.id().get(),
            parent_id: event.parent_id().map(EventId::get),
            transaction_id: event.transaction_id().get(),
            trace_id: event.trace_id().get(),
            outcome: match event.outcome() {
                Outcome::Completed => WireOutcome::Completed,
                Outcome::Panicked => WireOutcome::Panicked,
                Outcome::Cancelled => WireOutcome::Cancelled,
                // An outcome added to notify-core after this wire version (Outcome is
                // non_exhaustive): the event did not simply complete, and did not panic here.
                _ => WireOutcome::Cancelled,
            },
            payload: PayloadOut(event.payload()),
            cpu_time_ns: event.cpu_time().map(saturating_ns),
            allocations: event.allocations(),
            baggage: None,
        }
    }
}

pub(super) fn saturating_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// One event as read from the wire (version 2): the fields of [`EventOut`], in the same order.
#[derive(Deserialize)]
pub(super) struct RawEvent {
    name: String,
    start_unix_ns: u64,
    end_unix_ns: u64,
    duration_ns: u64,
    id: u64,
    parent_id: Option<u64>,
    transaction_id: u64,
    trace_id: u128,
    outcome: WireOutcome,
    payload: Vec<(String, WireValue)>,
    cpu_time_ns: Option<u64>,
    allocations: Option<u64>,
    /// JSON only ([`JsonEvent`]): not a field of postcard's form.
    #[serde(skip)]
    baggage: Option<String>,
}

/// One event of a JSON batch: version 2's fields, then the baggage's `baggage` header form
/// (written only for an event that has one).
#[derive(Deserialize)]
struct JsonEvent {
    name: String,
    start_unix_ns: u64,
    end_unix_ns: u64,
    duration_ns: u64,
    id: u64,
    parent_id: Option<u64>,
    transaction_id: u64,
    trace_id: u128,
    outcome: WireOutcome,
    payload: Vec<(String, WireValue)>,
    cpu_time_ns: Option<u64>,
    allocations: Option<u64>,
    #[serde(default)]
    baggage: Option<String>,
}

impl From<JsonEvent> for RawEvent {
    fn from(json: JsonEvent) -> RawEvent {
        RawEvent {
            name: json.name,
            start_unix_ns: json.start_unix_ns,
            end_unix_ns: json.end_unix_ns,
            duration_ns: json.duration_ns,
            id: json.id,
            parent_id: json.parent_id,
            transaction_id: json.transaction_id,
            trace_id: json.trace_id,
            outcome: json.outcome,
            payload: json.payload,
            cpu_time_ns: json.cpu_time_ns,
            allocations: json.allocations,
            baggage: json.baggage,
        }
    }
}

/// One event of wire version 1: version 2 without its last two fields.
#[derive(Deserialize)]
struct RawEventV1 {
    name: String,
    start_unix_ns: u64,
    end_unix_ns: u64,
    duration_ns: u64,
    id: u64,
    parent_id: Option<u64>,
    transaction_id: u64,
    trace_id: u128,
    outcome: WireOutcome,
    payload: Vec<(String, WireValue)>,
}

impl From<RawEventV1> for RawEvent {
    fn from(v1: RawEventV1) -> RawEvent {
        RawEvent {
            name: v1.name,
            start_unix_ns: v1.start_unix_ns,
            end_unix_ns: v1.end_unix_ns,
            duration_ns: v1.duration_ns,
            id: v1.id,
            parent_id: v1.parent_id,
            transaction_id: v1.transaction_id,
            trace_id: v1.trace_id,
            outcome: v1.outcome,
            payload: v1.payload,
            cpu_time_ns: None,
            allocations: None,
            baggage: None,
        }
    }
}

/// One event as decoded and checked: its payload already built, so that a message with an
/// impossible value is refused whole before any of its events is republished.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct EventIn {
    pub(crate) name: String,
    pub(crate) start_unix_ns: u64,
    pub(crate) end_unix_ns: u64,
    pub(crate) duration_ns: u64,
    pub(crate) id: u64,
    pub(crate) parent_id: Option<u64>,
    pub(crate) transaction_id: u64,
    pub(crate) trace_id: u128,
    outcome: WireOutcome,
    pub(super) payload: Payload,
    cpu_time_ns: Option<u64>,
    allocations: Option<u64>,
    /// Read from version 3 only (versions 1 and 2 and JSON do not carry it).
    trace_state: notify_core::trace_context::TraceState,
    /// Read from version 3 and JSON (version 1 and 2 binary batches do not carry it).
    baggage: Baggage,
}

impl RawEvent {
    pub(super) fn check(self) -> Result<EventIn, String> {
        let payload = payload_from(self.payload)
            .map_err(|e| format!("event {} ({}): {e}", self.id, Escaped::truncated(&self.name, 200)))?;
        Ok(EventIn {
            name: self.name,
            start_unix_ns: self.start_unix_ns,
            end_unix_ns: self.end_unix_ns,
            duration_ns: self.duration_ns,
            id: self.id,
            parent_id: self.parent_id,
            transaction_id: self.transaction_id,
            trace_id: self.trace_id,
            outcome: self.outcome,
            payload,
            cpu_time_ns: self.cpu_time_ns,
            allocations: self.allocations,
            trace_state: Default::default(),
            // Read as an incoming `baggage` header is: invalid members dropped and counted.
            baggage: self
                .baggage
                .map_or_else(Baggage::new, |text| Baggage::from_values([text.as_str()])),
        })
    }
}

impl EventIn {
    /// The event read by the one-pass reader (version 3): its end is its start plus its duration
    /// (saturating, as [`EventOut`] writes it).
    pub(super) fn from_envelope(name: String, envelope: Envelope, payload: Payload) -> EventIn {
        EventIn {
            name,
            start_unix_ns: envelope.start_unix_ns,
            end_unix_ns: envelope.start_unix_ns.saturating_add(envelope.duration_ns),
            duration_ns: envelope.duration_ns,
            id: envelope.id,
            parent_id: envelope.parent_id,
            transaction_id: envelope.transaction_id,
            trace_id: envelope.trace_id,
            outcome: envelope.outcome,
            payload,
            cpu_time_ns: envelope.cpu_time_ns,
            allocations: envelope.allocations,
            trace_state: envelope.trace_state,
            baggage: envelope.baggage,
        }
    }

    /// The event, with its original name, times, ids, outcome, payload, CPU time and allocation
    /// count.
    pub(crate) fn into_event(self) -> Event {
        Envelope {
            start_unix_ns: self.start_unix_ns,
            duration_ns: self.duration_ns,
            id: self.id,
            parent_id: self.parent_id,
            transaction_id: self.transaction_id,
            trace_id: self.trace_id,
            outcome: self.outcome,
            cpu_time_ns: self.cpu_time_ns,
            allocations: self.allocations,
            trace_state: self.trace_state,
            baggage: self.baggage,
        }
        .into_event(self.name, self.payload)
    }
}

/// A decoded batch: the exporter's id and its events, in export order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BatchIn {
    pub(crate) version: u16,
    pub(crate) source: u64,
    pub(crate) events: Vec<EventIn>,
}

#[derive(Deserialize)]
struct RawBatch<E> {
    version: u16,
    source: u64,
    events: Vec<E>,
}

#[derive(Deserialize)]
struct VersionProbe {
    version: u16,
}

/// Decodes a batch, refusing a newer version before looking at the rest: through serde (postcard
/// or JSON) up to version 2 and for JSON, through the one-pass reader for binary version 3.
pub(crate) fn decode(encoding: Encoding, body: &[u8]) -> Result<BatchIn, DecodeError> {
    let malformed = |reason: String| DecodeError::Malformed { encoding, reason };
    let body = match encoding {
        Encoding::Binary => strip_magic(body)?,
        Encoding::Json => body,
    };
    let version = match encoding {
        Encoding::Binary => postcard::take_from_bytes::<u16>(body)
            .map(|(v, _)| v)
            .map_err(|e| malformed(e.to_string()))?,
        Encoding::Json => serde_json::from_slice::<VersionProbe>(body)
            .map(|p| p.version)
            .map_err(|e| malformed(json_reason(&e)))?,
    };
    check_version(encoding, version)?;
    if encoding == Encoding::Binary && version >= 3 {
        // Version 3 is no longer postcard's form of these types: the one-pass reader reads it.
        return decode_v3(body);
    }
    // JSON batches keep version 2's shape whatever their version.
    let raw: RawBatch<RawEvent> = if version == 1 {
        let v1: RawBatch<RawEventV1> = parse(encoding, body).map_err(malformed)?;
        RawBatch {
            version: v1.version,
            source: v1.source,
            events: v1.events.into_iter().map(RawEvent::from).collect(),
        }
    } else if encoding == Encoding::Json {
        let json: RawBatch<JsonEvent> = parse(encoding, body).map_err(malformed)?;
        RawBatch {
            version: json.version,
            source: json.source,
            events: json.events.into_iter().map(RawEvent::from).collect(),
        }
    } else {
        parse(encoding, body).map_err(malformed)?
    };
    Ok(BatchIn {
        version: raw.version,
        source: raw.source,
        events: raw
            .events
            .into_iter()
            .map(RawEvent::check)
            .collect::<Result<_, _>>()
            .map_err(malformed)?,
    })
}

fn parse<T: serde::de::DeserializeOwned>(encoding: Encoding, body: &[u8]) -> Result<T, String> {
    REFUSED_TOO_DEEP.with(|refused| refused.set(false));
    match encoding {
        Encoding::Binary => postcard::from_bytes(body).map_err(|e| match e {
            // postcard keeps no custom message: the one custom error this decoder raises is
            // the nesting limit's.
            postcard::Error::SerdeDeCustom if REFUSED_TOO_DEEP.with(|refused| refused.take()) => too_deep(),
            e => e.to_string(),
        }),
        Encoding::Json => serde_json::from_slice(body).map_err(|e| json_reason(&e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::encode_batch;
    use crate::wire::encoder::BatchEncoder;
    use crate::wire::tests::{decoded_both_ways, sample};
    use std::sync::Arc;

    /// Issue 45 item 3: JSON batches carry an event's baggage as `"baggage"`, its header form,
    /// only when it has one and the exporter propagates it; read back as a `baggage` header is
    /// (an invalid member dropped alone); a batch without the field reads as before.
    #[test]
    fn i45_3_the_baggage_of_an_event_round_trips_in_json() {
        let baggage: Baggage = "tenant=acme,user=Am%C3%A9lie;ttl=60".parse().unwrap();
        let with = Arc::new(sample().with_baggage(baggage.clone()));
        let events = [with.clone(), Arc::new(sample())];
        let body = encode_batch(Encoding::Json, 7, &events);
        let text = std::str::from_utf8(&body).unwrap();
        assert_eq!(
            text.matches(r#","baggage":"tenant=acme,user=Am%C3%A9lie;ttl=60"}"#)
                .count(),
            1,
            "{text}"
        );
        assert_eq!(text.matches("baggage").count(), 1, "none for the event without");
        let (_, _, got) = decoded_both_ways(Encoding::Json, &body).unwrap();
        assert_eq!((got[0].baggage(), got[1].baggage()), (&baggage, &Baggage::new()));

        let mut off = BatchEncoder::new(Encoding::Json, 7).propagate_baggage(false);
        assert!(off.push(&with, usize::MAX / 2).unwrap());
        let body = off.finish();
        assert!(!std::str::from_utf8(&body).unwrap().contains("baggage"));
        assert!(decoded_both_ways(Encoding::Json, &body).unwrap().2[0]
            .baggage()
            .is_empty());

        let by_hand = |baggage: &str| {
            format!(
                r#"{{"version":2,"source":1,"events":[{{"name":"a.b","start_unix_ns":0,"end_unix_ns":0,"duration_ns":0,"id":3,"parent_id":null,"transaction_id":1,"trace_id":1,"outcome":"Completed","payload":[],"cpu_time_ns":null,"allocations":null{baggage}}}]}}"#
            )
        };
        let (_, _, got) =
            decoded_both_ways(Encoding::Json, by_hand(r#","baggage":"a=1,bad key=2""#).as_bytes()).unwrap();
        assert_eq!(got[0].baggage().to_string(), "a=1");
        let (_, _, got) = decoded_both_ways(Encoding::Json, by_hand("").as_bytes()).unwrap();
        assert!(got[0].baggage().is_empty());
    }

    #[test]
    fn impossible_values_make_the_message_malformed_naming_them() {
        let json = br#"{"version":2,"source":1,"events":[{"name":"a.b","start_unix_ns":0,"end_unix_ns":0,"duration_ns":0,"id":3,"parent_id":null,"transaction_id":1,"trace_id":1,"outcome":"Completed","payload":[["ok",{"U64":1}],["at",{"Time":{"secs":0,"nanos":1000000000}}]],"cpu_time_ns":null,"allocations":null}]}"#;
        assert_eq!(
            decode(Encoding::Json, json).unwrap_err(),
            DecodeError::Malformed {
                encoding: Encoding::Json,
                reason: "event 3 (a.b): time with nanoseconds out of range (at most 999999999)".to_owned()
            }
        );
    }
}
