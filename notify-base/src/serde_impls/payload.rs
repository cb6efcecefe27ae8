//! Serde forms of [`Payload`], [`Value`] and [`Key`].
//!
//! A payload is a map in insertion order; a value is its plain data: `Null` → unit (JSON `null`),
//! numbers and text as they are, `Duration` → whole nanoseconds, `Time` → RFC 3339 UTC string,
//! `List` → sequence, `Map` → map, `Exception` → `{"type_name": ..., "message": ...}`.
//! Deserializing gives back the same for null, booleans, numbers within 64 bits, text, lists and
//! maps (128-bit integers only from a format that reads them untyped: not serde_json); a
//! duration comes back as its nanoseconds (`U64`) and a time as its text (`Str`), as the form
//! does not say what they were; a map `{"type_name": text, "message": text}` under the key
//! [`EXCEPTION_KEY`] comes back as a `Value::Exception`. Lists and maps nest at most
//! [`Value::MAX_NESTING`] deep (the error: [`TOO_DEEP`]).

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::payload::{Key, Payload, Text, Value, EXCEPTION_KEY};

impl Serialize for Key {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self)
    }
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
        String::deserialize(d).map(Key::from)
    }
}

impl Serialize for Payload {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        serialize_entries(self, 0, s)
    }
}

/// The entries of `payload`, whose values are at nesting `depth`.
fn serialize_entries<S: Serializer>(payload: &Payload, depth: usize, s: S) -> Result<S::Ok, S::Error> {
    let mut map = s.serialize_map(Some(payload.len()))?;
    for (k, v) in payload.iter() {
        map.serialize_entry(k, &ValueAt(v, depth))?;
    }
    map.end()
}

impl<'de> Deserialize<'de> for Payload {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Payload, D::Error> {
        d.deserialize_map(PayloadVisitor { depth: 0 })
    }
}

/// The error of a value nested deeper than [`Value::MAX_NESTING`] lists and maps: it names the
/// limit, never a value (a decoder's error may be logged; the payload may hold secrets).
const TOO_DEEP: &str = "payload value nested deeper than 32 lists and maps";

const _: () = assert!(Value::MAX_NESTING == 32, "TOO_DEEP names the limit");

/// Serializing refuses what decoding refuses: a list or a map nested deeper than
/// [`Value::MAX_NESTING`] is the error `TOO_DEEP` (a value built in the process may nest
/// deeper; its form would be refused on the other side, and writing it would recurse once per
/// level on the serializing thread's stack).
impl Serialize for Value {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        ValueAt(self, 0).serialize(s)
    }
}

/// A value at nesting `depth` (a payload's own values are at 0).
struct ValueAt<'a>(&'a Value, usize);

impl Serialize for ValueAt<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let depth = self.1;
        match self.0 {
            Value::Null => s.serialize_unit(),
            Value::Bool(v) => s.serialize_bool(*v),
            Value::I64(v) => s.serialize_i64(*v),
            Value::U64(v) => s.serialize_u64(*v),
            Value::I128(v) => s.serialize_i128(*v),
            Value::U128(v) => s.serialize_u128(*v),
            Value::F64(v) => s.serialize_f64(*v),
            Value::Str(v) => s.serialize_str(v),
            Value::Duration(v) => match u64::try_from(v.as_nanos()) {
                Ok(ns) => s.serialize_u64(ns),
                Err(_) => s.serialize_u128(v.as_nanos()),
            },
            Value::Time(v) => super::time::serialize(*v, s),
            Value::List(_) | Value::Map(_) if depth >= Value::MAX_NESTING => Err(serde::ser::Error::custom(TOO_DEEP)),
            Value::List(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(&ValueAt(item, depth + 1))?;
                }
                seq.end()
            }
            Value::Map(map) => serialize_entries(map, depth + 1, s),
            Value::Exception { type_name, message } => {
                let mut map = s.serialize_map(Some(2))?;
                map.serialize_entry("type_name", type_name)?;
                map.serialize_entry("message", message)?;
                map.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
        ValueSeed { depth: 0 }.deserialize(d)
    }
}

/// Reads a value at `depth` (a payload's own values are at 0, the items of a list or map at
/// depth `d` are at `d + 1`): the visitor refuses a list or a map at depth
/// [`Value::MAX_NESTING`], so recursion is bounded whatever the input.
#[derive(Clone, Copy)]
struct ValueSeed {
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for ValueSeed {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(ValueVisitor { depth: self.depth })
    }
}

struct ValueVisitor {
    depth: usize,
}

impl ValueVisitor {
    /// The depth of this value's items, or the error when a list or a map may not start here.
    fn inner<E: de::Error>(&self) -> Result<usize, E> {
        if self.depth >= Value::MAX_NESTING {
            Err(E::custom(TOO_DEEP))
        } else {
            Ok(self.depth + 1)
        }
    }
}

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a payload value: null, a boolean, a number, a string, a list or a map")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        ValueSeed { depth: self.depth }.deserialize(d)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::I64(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(Value::U64(v))
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Ok(Value::F64(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::Str(Text::new(v)))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::Str(Text::from(v)))
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let depth = self.inner()?;
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(item) = seq.next_element_seed(ValueSeed { depth })? {
            items.push(item);
        }
        Ok(Value::List(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Value, A::Error> {
        let depth = self.inner()?;
        PayloadVisitor { depth }.visit_map(map).map(|p| Value::Map(Box::new(p)))
    }
}

/// Reads a map whose values are at `depth`.
struct PayloadVisitor {
    depth: usize,
}

impl<'de> Visitor<'de> for PayloadVisitor {
    type Value = Payload;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a payload: a map of string keys to values")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Payload, A::Error> {
        let mut payload = Payload::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value_seed(ValueSeed { depth: self.depth })?;
            let value = if key == EXCEPTION_KEY { exception(value) } else { value };
            payload.insert(key, value);
        }
        Ok(payload)
    }
}

/// `{"type_name": text, "message": text}` as a [`Value::Exception`]; anything else as it is.
fn exception(value: Value) -> Value {
    let Value::Map(map) = &value else { return value };
    match (map.len(), map.get("type_name"), map.get("message")) {
        (2, Some(Value::Str(type_name)), Some(Value::Str(message))) => Value::Exception {
            type_name: Cow::Owned(type_name.to_string()),
            message: message.to_string(),
        },
        _ => value,
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use super::*;

    #[test]
    fn serializes_as_an_ordered_map() {
        let p = Payload::new()
            .with("sql", "SELECT 1")
            .with("rows", 2_u64)
            .with("took", Duration::from_micros(3))
            .with("at", SystemTime::UNIX_EPOCH + Duration::new(1_700_000_000, 5))
            .with("cached", None::<bool>)
            .with("tags", ["a", "b"])
            .with("big", u128::MAX);
        assert_eq!(
            serde_json::to_string(&p).unwrap(),
            r#"{"sql":"SELECT 1","rows":2,"took":3000,"at":"2023-11-14T22:13:20.000000005Z","cached":null,"tags":["a","b"],"big":340282366920938463463374607431768211455}"#
        );
    }

    #[test]
    fn round_trips_through_json() {
        let mut p = Payload::new()
            .with("null", Value::Null)
            .with("bool", true)
            .with("neg", -3_i64)
            .with("u64", u64::MAX)
            .with("f64", 0.25)
            .with("str", "text")
            .with("list", vec![Value::from(1_u8), Value::Null, Value::from("x")])
            .with("map", Payload::new().with("inner", Payload::new().with("deep", 1_u8)));
        p.record_error(&std::fmt::Error);
        let json = serde_json::to_string(&p).unwrap();
        let back: Payload = serde_json::from_str(&json).unwrap();
        assert_eq!(back, p);
        assert_eq!(
            back.get(EXCEPTION_KEY).and_then(Value::as_exception),
            Some(("core::fmt::Error", "an error occurred when formatting an argument"))
        );
    }

    #[test]
    fn durations_and_times_come_back_as_their_plain_form() {
        let p = Payload::new()
            .with("took", Duration::from_nanos(1_500))
            .with("at", SystemTime::UNIX_EPOCH);
        let back: Payload = serde_json::from_str(&serde_json::to_string(&p).unwrap()).unwrap();
        assert_eq!(back.get("took"), Some(&Value::U64(1_500)));
        assert_eq!(back.get("at"), Some(&Value::from("1970-01-01T00:00:00.000000000Z")));
    }

    #[test]
    fn an_exception_lookalike_elsewhere_stays_a_map() {
        let json = r#"{"error":{"type_name":"E","message":"m"},"exception":{"type_name":"E","message":"m","x":1}}"#;
        let back: Payload = serde_json::from_str(json).unwrap();
        assert!(back.get("error").and_then(Value::as_map).is_some());
        assert!(back.get("exception").and_then(Value::as_map).is_some());
    }

    /// `{"v": [[...[1]...]]}` with `lists` lists, or `{"v": {"k": {"k": ... 1}}}` with `maps`
    /// maps, inside one another.
    fn nested_json(lists: usize, maps: usize) -> String {
        let mut inner = String::from("1");
        for _ in 0..lists {
            inner = format!("[{inner}]");
        }
        for _ in 0..maps {
            inner = format!("{{\"k\":{inner}}}");
        }
        format!("{{\"v\":{inner}}}")
    }

    fn depth_of(value: &Value) -> usize {
        match value {
            Value::List(items) => 1 + items.iter().map(depth_of).max().unwrap_or(0),
            Value::Map(map) => 1 + map.iter().map(|(_, v)| depth_of(v)).max().unwrap_or(0),
            _ => 0,
        }
    }

    #[test]
    fn values_nested_to_the_limit_are_read_one_more_is_refused_in_json_text() {
        for (lists, maps) in [(32, 0), (0, 32), (16, 16)] {
            let back: Payload = serde_json::from_str(&nested_json(lists, maps)).unwrap();
            assert_eq!(depth_of(back.get("v").unwrap()), Value::MAX_NESTING);
        }
        // The column is the 33rd bracket's: `{"v":` is 5 characters, `{"k":` 5 more per map.
        for (lists, maps, column) in [(33, 0, 38), (0, 33, 166), (17, 16, 102)] {
            let err = serde_json::from_str::<Payload>(&nested_json(lists, maps)).unwrap_err();
            let at = format!(" at line 1 column {column}");
            assert_eq!(err.to_string(), format!("{TOO_DEEP}{at}"), "{lists} lists, {maps} maps");
        }
        // A value alone: its own list counts.
        let one_past = format!("{}1{}", "[".repeat(33), "]".repeat(33));
        let err = serde_json::from_str::<Value>(&one_past).unwrap_err();
        assert_eq!(err.to_string(), format!("{TOO_DEEP} at line 1 column 33"));
    }

    /// serde_json::Value's deserializer has no depth limit of its own (unlike serde_json's text
    /// parser, which stops at 128): the limit here is what bounds the recursion, also for input
    /// nested 1,500 deep (issue 33: such a postcard message overflowed the importer's stack).
    #[test]
    fn values_nested_to_the_limit_are_read_one_more_is_refused_from_a_format_without_a_limit() {
        let nested = |lists: usize| {
            let mut v = serde_json::json!(1);
            for _ in 0..lists {
                v = serde_json::Value::Array(vec![v]);
            }
            serde_json::json!({ "v": v })
        };
        let back: Payload = serde_json::from_value(nested(32)).unwrap();
        assert_eq!(depth_of(back.get("v").unwrap()), 32);
        for lists in [33, 500] {
            let err = serde_json::from_value::<Payload>(nested(lists)).unwrap_err();
            assert_eq!(err.to_string(), TOO_DEEP);
        }
        assert_eq!(
            TOO_DEEP,
            format!("payload value nested deeper than {} lists and maps", Value::MAX_NESTING)
        );
    }

    #[test]
    fn a_payload_must_be_a_map() {
        let err = serde_json::from_str::<Payload>("[1]").unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid type: sequence, expected a payload: a map of string keys to values at line 1 column 0"
        );
    }

    /// Issue 44 item 8: serializing refuses what decoding refuses, with the decoder's error,
    /// without recursing per level (a million lists deep, on a 256 KiB stack).
    #[test]
    fn i44_8_a_value_nested_deeper_than_the_limit_is_refused_by_serialize_too() {
        let nest = |depth: usize| {
            let mut deep = Value::from(1_u64);
            for level in 0..depth {
                deep = if level % 2 == 0 {
                    Value::List(vec![deep])
                } else {
                    Value::Map(Box::new(Payload::new().with("k", deep)))
                };
            }
            deep
        };
        // 32 lists and maps: written, and read back the same.
        let at_limit = Payload::new().with("v", nest(Value::MAX_NESTING));
        let json = serde_json::to_string(&at_limit).unwrap();
        assert_eq!(serde_json::from_str::<Payload>(&json).unwrap(), at_limit);
        // 33: refused by both, with one error.
        let over = Payload::new().with("v", nest(Value::MAX_NESTING + 1));
        assert_eq!(serde_json::to_string(&over).unwrap_err().to_string(), TOO_DEEP);
        assert_eq!(
            serde_json::to_string(&nest(Value::MAX_NESTING + 1))
                .unwrap_err()
                .to_string(),
            TOO_DEEP
        );
        let million = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || {
                let over = Payload::new().with("v", nest(1_000_000));
                serde_json::to_vec(&over).unwrap_err().to_string()
            })
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(million, TOO_DEEP);
    }
}
