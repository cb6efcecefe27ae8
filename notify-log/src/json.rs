//! JSON lines of a [`StructuredLogger`](crate::StructuredLogger), written by `serde_json`, every
//! key once (see [`structured`](crate::structured#unique-keys)).

use std::time::{Duration, SystemTime};

use log::Level;
use notify_core::{context::Tags, Payload, Value};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};

use crate::facts::{millis, non_finite, Facts, LocationText, SpanHex};
use crate::keys::LineKey;
use crate::line_keys::{Claimed, Group, LineNames, Place};

/// One JSON line.
pub(crate) struct JsonLine<'a> {
    pub(crate) names: &'a LineNames,
    pub(crate) now: SystemTime,
    pub(crate) level: Level,
    pub(crate) facts: &'a Facts<'a>,
    pub(crate) tags: &'a Tags,
}

impl Serialize for JsonLine<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (names, facts) = (self.names, self.facts);
        let mut map = serializer.serialize_map(None)?;
        if let Some(k) = names.fact(LineKey::Time) {
            map.serialize_entry(k, &Rfc3339(self.now))?;
        }
        if let Some(k) = names.fact(LineKey::Level) {
            map.serialize_entry(k, self.level.as_str())?;
        }
        if let Some(k) = names.fact(LineKey::Event) {
            map.serialize_entry(k, facts.name)?;
        }
        if let (Some(k), Some(d)) = (names.fact(LineKey::Duration), facts.duration) {
            map.serialize_entry(k, &millis(d))?;
        }
        if let Some(k) = names.fact(LineKey::Outcome) {
            map.serialize_entry(k, facts.outcome.as_str())?;
        }
        if let (Some(k), Some(t)) = (names.fact(LineKey::TraceId), facts.trace_id) {
            map.serialize_entry(k, &Shown(t))?;
        }
        if let Some(k) = names.fact(LineKey::SpanId) {
            map.serialize_entry(k, &Shown(SpanHex(facts.id)))?;
        }
        if let (Some(k), Some(p)) = (names.fact(LineKey::ParentId), facts.parent_id) {
            map.serialize_entry(k, &Shown(SpanHex(p)))?;
        }
        if let (Some(k), Some(l)) = (names.fact(LineKey::Location), facts.location) {
            map.serialize_entry(k, &Shown(LocationText(l)))?;
        }
        let mut claimed = Claimed::new(names);
        if !self.tags.is_empty() {
            json_group(&mut map, &mut claimed, Group::Tags, Fields::Tags(self.tags))?;
        }
        json_group(&mut map, &mut claimed, Group::Payload, Fields::Payload(facts.payload))?;
        map.end()
    }
}

/// Writes the fields of `group` where the line's names place them: nested, one object under the
/// group's key; flat, each field under a key claimed by the rule of unique keys.
fn json_group<'a, M: SerializeMap>(
    map: &mut M,
    claimed: &mut Claimed<'_, 'a>,
    group: Group,
    fields: Fields<'a>,
) -> Result<(), M::Error> {
    match claimed.names().place(group) {
        Place::Nested(key) => map.serialize_entry(&**key, &fields),
        Place::Flat => {
            for (k, v) in fields.iter() {
                let name = claimed.flat_name(group, k);
                let name = claimed.claim(name);
                map.serialize_entry(&*name, &JsonValue(v))?;
            }
            Ok(())
        }
        Place::Omit => Ok(()),
    }
}

/// The rate limit's summary line.
pub(crate) struct Summary<'a> {
    pub(crate) names: &'a LineNames,
    pub(crate) now: SystemTime,
    pub(crate) level: Level,
    pub(crate) name: &'a str,
    pub(crate) suppressed: u64,
    pub(crate) interval: Duration,
}

impl Serialize for Summary<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        if let Some(k) = self.names.fact(LineKey::Time) {
            map.serialize_entry(k, &Rfc3339(self.now))?;
        }
        if let Some(k) = self.names.fact(LineKey::Level) {
            map.serialize_entry(k, self.level.as_str())?;
        }
        if let Some(k) = self.names.fact(LineKey::Event) {
            map.serialize_entry(k, self.name)?;
        }
        map.serialize_entry(&*self.names.suppressed, &self.suppressed)?;
        map.serialize_entry(&*self.names.interval_ms, &(self.interval.as_millis() as u64))?;
        map.end()
    }
}

pub(crate) struct Rfc3339(pub(crate) SystemTime);

impl Serialize for Rfc3339 {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&humantime::format_rfc3339_micros(self.0))
    }
}

/// A `Display` value serialized as a string, without an intermediate `String`.
struct Shown<D>(D);

impl<D: std::fmt::Display> Serialize for Shown<D> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&self.0)
    }
}

/// Payload or tags: key-values written as a JSON object.
#[derive(Clone, Copy)]
enum Fields<'a> {
    Payload(&'a Payload),
    Tags(&'a Tags),
}

impl<'a> Fields<'a> {
    fn iter(self) -> impl Iterator<Item = (&'a str, &'a Value)> {
        let (payload, tags) = match self {
            Fields::Payload(p) => (Some(p.iter()), None),
            Fields::Tags(t) => (None, Some(t.iter())),
        };
        payload.into_iter().flatten().chain(tags.into_iter().flatten())
    }
}

impl Serialize for Fields<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        for (k, v) in self.iter() {
            map.serialize_entry(k, &JsonValue(v))?;
        }
        map.end()
    }
}

/// A payload value as JSON: numbers (128-bit ones as strings when they do not fit 64 bits,
/// non-finite floats as `"NaN"`, `"inf"`, `"-inf"`), strings, durations as milliseconds, times as
/// RFC 3339 strings, lists as arrays, maps as objects, an exception as `{"type", "message"}`.
pub(crate) struct JsonValue<'v>(pub(crate) &'v Value);

impl Serialize for JsonValue<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Null => serializer.serialize_unit(),
            Value::Bool(b) => serializer.serialize_bool(*b),
            Value::I64(n) => serializer.serialize_i64(*n),
            Value::U64(n) => serializer.serialize_u64(*n),
            Value::I128(n) => match i64::try_from(*n) {
                Ok(n) => serializer.serialize_i64(n),
                Err(_) => serializer.collect_str(n),
            },
            Value::U128(n) => match u64::try_from(*n) {
                Ok(n) => serializer.serialize_u64(n),
                Err(_) => serializer.collect_str(n),
            },
            Value::F64(f) if f.is_finite() => serializer.serialize_f64(*f),
            Value::F64(f) => serializer.serialize_str(non_finite(*f)),
            Value::Str(text) => serializer.serialize_str(text),
            Value::Duration(d) => serializer.serialize_f64(millis(*d)),
            Value::Time(t) => Rfc3339(*t).serialize(serializer),
            Value::List(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(&JsonValue(item))?;
                }
                seq.end()
            }
            Value::Map(payload) => Fields::Payload(payload).serialize(serializer),
            Value::Exception { type_name, message } => {
                let mut map = serializer.serialize_map(Some(2))?;
                map.serialize_entry("type", type_name)?;
                map.serialize_entry("message", message)?;
                map.end()
            }
            other => serializer.collect_str(other),
        }
    }
}
