//! [`BatchEncoder`]: batches built event by event under a size limit.

use std::fmt::Write as _;

use notify_core::baggage::Baggage;
use notify_core::{Event, Value};

use super::nesting::{nests_deeper_than, too_deep};
use super::serde_form::EventOut;
use super::v3::{self, Previous, StringTable};
use super::{Encoding, JSON_VERSION, MAGIC, WIRE_VERSION};

/// Version, source, count and JSON brackets: an upper bound of what a batch adds to its events.
const FRAME: usize = 64;

/// Builds batches event by event under a size limit; one encoder per exporter, buffers reused.
pub(crate) struct BatchEncoder {
    encoding: Encoding,
    /// The wire version written: [`WIRE_VERSION`] or 2 for binary batches, [`JSON_VERSION`] for
    /// JSON ones.
    version: u16,
    source: u64,
    /// The events of the batch being built, encoded back to back.
    body: Vec<u8>,
    /// One event's encoding (to check its size before it joins `body`; versions 2 and JSON).
    scratch: Vec<u8>,
    count: usize,
    /// Version 3: the batch's string table and what the next event is encoded relative to.
    table: StringTable,
    previous: Previous,
    /// The events' baggage in header form (version 3 and JSON); `None`: not propagated
    /// ([`BatchEncoder::propagate_baggage`]).
    baggage: Option<BaggageText>,
}

/// The `baggage` header form of the last baggage met, formatted once for the run of events that
/// share it (the events of one request share one baggage).
#[derive(Default)]
struct BaggageText {
    last: Baggage,
    text: String,
}

impl BaggageText {
    /// `baggage`'s header form; `None` when it is empty.
    #[inline]
    fn of(&mut self, baggage: &Baggage) -> Option<&str> {
        if baggage.is_empty() {
            return None;
        }
        // The same members behind the same pointer compare without reading them.
        if *baggage != self.last {
            self.text.clear();
            write!(self.text, "{baggage}").expect("a String accepts every write");
            self.last = baggage.clone();
        }
        Some(&self.text)
    }
}

/// Why one event could not join a batch.
#[derive(Debug)]
pub(crate) enum PushError {
    /// Its encoding alone exceeds the message size limit (bytes).
    TooLarge(usize),
    /// The serializer failed.
    Encode(String),
}

/// The binary wire versions an exporter can write: the newest, and the one before it for a
/// rolling upgrade (importers of version 2 refuse version 3 batches).
pub(crate) const WRITABLE_VERSIONS: [u16; 2] = [2, WIRE_VERSION];

/// Why an event with a NaN or infinite float is not written as JSON.
const NON_FINITE: &str = "payload value is a NaN or infinite float, which JSON cannot carry";

/// True when `value` is, or holds, a NaN or infinite `F64` (called after the nesting check: the
/// recursion is bounded).
fn holds_non_finite(value: &Value) -> bool {
    match value {
        Value::F64(v) => !v.is_finite(),
        Value::List(items) => items.iter().any(holds_non_finite),
        Value::Map(map) => map.iter().any(|(_, v)| holds_non_finite(v)),
        _ => false,
    }
}

impl BatchEncoder {
    /// An encoder of the newest version ([`WIRE_VERSION`] for binary, [`JSON_VERSION`] for JSON).
    pub(crate) fn new(encoding: Encoding, source: u64) -> BatchEncoder {
        BatchEncoder::with_version(encoding, source, WIRE_VERSION)
    }

    /// An encoder writing binary batches of `version` (one of [`WRITABLE_VERSIONS`]; JSON batches
    /// are always [`JSON_VERSION`]).
    ///
    /// # Panics
    ///
    /// `version` is not one of [`WRITABLE_VERSIONS`] (the exporter's builder checks it first).
    pub(crate) fn with_version(encoding: Encoding, source: u64, version: u16) -> BatchEncoder {
        assert!(
            WRITABLE_VERSIONS.contains(&version),
            "wire version {version} cannot be written (2 or {WIRE_VERSION})"
        );
        BatchEncoder {
            encoding,
            version: match encoding {
                Encoding::Binary => version,
                Encoding::Json => JSON_VERSION,
            },
            source,
            body: Vec::new(),
            scratch: Vec::new(),
            count: 0,
            table: StringTable::new(),
            previous: Previous::default(),
            baggage: Some(BaggageText::default()),
        }
    }

    /// Whether the events' W3C baggage ([`Event::baggage`]) is written (default true; version 3
    /// and JSON: version 2 has no field for it).
    #[must_use]
    pub(crate) fn propagate_baggage(mut self, yes: bool) -> BatchEncoder {
        self.baggage = yes.then(BaggageText::default);
        self
    }

    /// The wire version of the batches written.
    pub(crate) fn version(&self) -> u16 {
        self.version
    }

    /// Number of events in the batch being built.
    pub(crate) fn len(&self) -> usize {
        self.count
    }

    /// Encodes `event` and adds it if the batch stays within `max_bytes`; returns `Ok(false)`
    /// (event not added) when the batch is full, so the caller finishes it and tries again.
    pub(crate) fn push(&mut self, event: &Event, max_bytes: usize) -> Result<bool, PushError> {
        if self.encoding == Encoding::Binary && self.version >= 3 {
            return self.push_v3(event, max_bytes);
        }
        // An importer refuses the whole message holding such an event (the nesting limit of the
        // decoder): refused here, alone, so that the other events of its batch arrive (version
        // 3 checks it as it writes).
        if event
            .payload()
            .iter()
            .any(|(_, value)| nests_deeper_than(value, Value::MAX_NESTING))
        {
            return Err(PushError::Encode(too_deep()));
        }
        // JSON has no NaN or infinity (serde_json writes `null`, which the importer refuses as a
        // float, and with it the whole message): refused here, alone.
        if self.encoding == Encoding::Json && event.payload().iter().any(|(_, value)| holds_non_finite(value)) {
            return Err(PushError::Encode(NON_FINITE.to_owned()));
        }
        self.scratch.clear();
        let mut out = EventOut::new(event);
        if self.encoding == Encoding::Json {
            out.baggage = self.baggage.as_mut().and_then(|text| text.of(event.baggage()));
        }
        match self.encoding {
            Encoding::Binary => out
                .write_postcard(&mut self.scratch)
                .map_err(|_| PushError::Encode(too_deep()))?,
            Encoding::Json => {
                serde_json::to_writer(&mut self.scratch, &out).map_err(|e| PushError::Encode(e.to_string()))?
            }
        }
        if self.scratch.len() + FRAME > max_bytes {
            return Err(PushError::TooLarge(self.scratch.len()));
        }
        if self.count > 0 && self.body.len() + self.scratch.len() + 1 + FRAME > max_bytes {
            return Ok(false);
        }
        if self.encoding == Encoding::Json && self.count > 0 {
            self.body.push(b',');
        }
        self.body.extend_from_slice(&self.scratch);
        self.count += 1;
        Ok(true)
    }

    /// Version 3: the event is written straight into the batch, then taken back (with the
    /// strings it added to the table) when the batch would exceed `max_bytes` or a value nests
    /// too deep (an importer would refuse the whole batch: [`PushError::Encode`], alone). An
    /// event that does not fit a batch holding others ends that batch (`Ok(false)`); one that
    /// does not fit an empty batch is [`PushError::TooLarge`].
    fn push_v3(&mut self, event: &Event, max_bytes: usize) -> Result<bool, PushError> {
        let (mark, entries, previous) = (self.body.len(), self.table.len(), self.previous);
        let baggage = self.baggage.as_mut().and_then(|text| text.of(event.baggage()));
        let written = v3::put_event(&mut self.body, &mut self.table, &mut self.previous, event, baggage);
        if written.is_ok() && self.body.len() + FRAME <= max_bytes {
            self.count += 1;
            return Ok(true);
        }
        let len = self.body.len() - mark;
        self.body.truncate(mark);
        self.table.truncate(entries);
        self.previous = previous;
        if written.is_err() {
            Err(PushError::Encode(too_deep()))
        } else if self.count == 0 {
            Err(PushError::TooLarge(len))
        } else {
            Ok(false)
        }
    }

    /// The finished message body (version, source, events); the encoder is empty afterwards.
    pub(crate) fn finish(&mut self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.body.len() + 24);
        match self.encoding {
            Encoding::Binary => {
                out.extend_from_slice(MAGIC);
                // postcard's encoding of BatchIn: its fields back to back, the Vec as varint length + elements.
                let header = (self.version, self.source, self.count);
                postcard::to_io(&header, &mut out).expect("writing to a Vec cannot fail");
            }
            Encoding::Json => {
                out.extend_from_slice(
                    format!("{{\"version\":{},\"source\":{},\"events\":[", self.version, self.source).as_bytes(),
                );
            }
        }
        out.extend_from_slice(&self.body);
        if self.encoding == Encoding::Json {
            out.extend_from_slice(b"]}");
        }
        self.body.clear();
        self.count = 0;
        self.table.clear();
        self.previous = Previous::default();
        if let Some(baggage) = &mut self.baggage {
            // Not kept alive past its batch.
            baggage.last = Baggage::new();
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::decode;
    use crate::wire::tests::{nested_event, sample};

    /// An event the importers would refuse is refused alone by the exporter (counted as an
    /// encode drop), not sent to make its whole batch malformed.
    #[test]
    fn the_encoder_refuses_an_event_nested_past_the_limit_alone() {
        for version in WRITABLE_VERSIONS {
            let mut encoder = BatchEncoder::with_version(Encoding::Binary, 1, version);
            // Refused first: the strings it wrote (name, keys) are taken back with it (version 3).
            assert!(matches!(
                encoder.push(&nested_event(0, 33), usize::MAX / 2),
                Err(PushError::Encode(_))
            ));
            assert_eq!(encoder.len(), 0);
            assert!(encoder.push(&nested_event(16, 16), usize::MAX / 2).unwrap());
            for (lists, maps) in [(33, 0), (0, 33), (1, 32)] {
                match encoder.push(&nested_event(lists, maps), usize::MAX / 2) {
                    Err(PushError::Encode(reason)) => {
                        assert_eq!(reason, "payload value nested deeper than 32 lists and maps")
                    }
                    other => panic!("{lists}+{maps}: {other:?}"),
                }
            }
            assert!(encoder.push(&nested_event(0, 32), usize::MAX / 2).unwrap());
            let batch = decode(Encoding::Binary, &encoder.finish()).unwrap();
            assert_eq!((batch.version, batch.events.len()), (version, 2));
        }
        assert!(!nests_deeper_than(&Value::List(vec![]), 1));
        assert!(nests_deeper_than(&Value::List(vec![]), 0));
        assert!(!nests_deeper_than(&Value::U64(1), 0));
    }

    /// JSON cannot carry NaN or infinity: such an event is refused alone (counted as an encode
    /// drop) instead of making its whole message malformed; binary carries them.
    #[test]
    fn json_refuses_an_event_with_a_non_finite_float_alone() {
        let now = std::time::Instant::now();
        let event = |value: Value| Event::new("float.test", now, now, notify_core::Payload::new().with("f", value));
        for bad in [
            Value::F64(f64::NAN),
            Value::F64(f64::INFINITY),
            Value::List(vec![Value::F64(f64::NEG_INFINITY)]),
        ] {
            let mut json = BatchEncoder::new(Encoding::Json, 1);
            assert!(json.push(&event(Value::F64(1.5)), usize::MAX / 2).unwrap());
            match json.push(&event(bad.clone()), usize::MAX / 2) {
                Err(PushError::Encode(reason)) => assert_eq!(reason, NON_FINITE),
                other => panic!("{bad:?}: {other:?}"),
            }
            assert!(json.push(&event(Value::F64(-0.25)), usize::MAX / 2).unwrap());
            let batch = decode(Encoding::Json, &json.finish()).unwrap();
            assert_eq!(batch.events.len(), 2);
            let mut binary = BatchEncoder::new(Encoding::Binary, 1);
            assert!(binary.push(&event(bad), usize::MAX / 2).unwrap());
            assert_eq!(decode(Encoding::Binary, &binary.finish()).unwrap().events.len(), 1);
        }
        // Finite floats read back to the same bits (serde_json's `float_roundtrip`; without it
        // about 9 % of random values came back one unit in the last place off).
        let mut json = BatchEncoder::new(Encoding::Json, 1);
        let floats = [3_258_773_334.900_966_6, 0.1 + 0.2, f64::MIN_POSITIVE, -1e308, 5e-324];
        for f in floats {
            assert!(json.push(&event(Value::F64(f)), usize::MAX / 2).unwrap());
        }
        let batch = decode(Encoding::Json, &json.finish()).unwrap();
        let got: Vec<u64> = batch
            .events
            .into_iter()
            .map(|e| match e.into_event().payload().get("f") {
                Some(Value::F64(f)) => f.to_bits(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(got, floats.map(f64::to_bits));
    }

    #[test]
    fn batch_respects_the_size_limit_and_refuses_an_event_too_large_alone() {
        let mut encoder = BatchEncoder::new(Encoding::Binary, 1);
        let event = sample();
        let mut added = 0;
        while encoder.push(&event, 1_000).unwrap() {
            added += 1;
        }
        let body = encoder.finish();
        assert!(body.len() <= 1_000, "{}", body.len());
        assert_eq!(decode(Encoding::Binary, &body).unwrap().events.len(), added);
        assert!(matches!(encoder.push(&event, 80), Err(PushError::TooLarge(n)) if n > 16));
        assert_eq!(encoder.len(), 0);
    }
}
