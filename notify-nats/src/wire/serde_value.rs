//! A payload value in serde's form: [`WireValue`] as decoded (by hand, nesting bounded) and
//! [`ValueOut`] / [`PayloadOut`] as encoded (borrowed, no copy).

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

use notify_core::{Payload, Value};
use serde::de::{self, DeserializeSeed, EnumAccess, SeqAccess, VariantAccess, Visitor};
use serde::ser::SerializeSeq;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::nesting::too_deep;
use super::time::{time_from_parts, time_parts};
use super::variant::{self, VARIANTS};

/// A payload value as decoded: an externally tagged enum, so that every [`Value`] variant comes
/// back as itself in both encodings (postcard is not self-describing, and JSON alone cannot tell
/// a duration from a number or a time from a string). The variants of wire version 1 keep their
/// positions (postcard writes the position); version 2 appended `Null` … `Map`.
///
/// Deserialized by hand ([`WireSeed`]), not derived: lists and maps nest at most
/// [`Value::MAX_NESTING`] deep, so that a hostile message cannot overflow the importer's stack
/// (postcard has no depth limit; one message nesting 1,500 lists, 3 KB, aborted the process).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum WireValue {
    Bool(bool),
    I64(i64),
    U64(u64),
    F64(f64),
    Str(String),
    Duration {
        secs: u64,
        nanos: u32,
    },
    Exception {
        type_name: String,
        message: String,
    },
    Null,
    I128(i128),
    U128(u128),
    /// Seconds since the Unix epoch (negative before it) and nanoseconds forward from there.
    Time {
        secs: i64,
        nanos: u32,
    },
    List(Vec<WireValue>),
    /// Entries in order.
    Map(Vec<(String, WireValue)>),
}

thread_local! {
    /// Set when [`WireSeed`] refused a value nested too deep on this thread: postcard's errors
    /// drop a custom message (`Error::SerdeDeCustom`), so [`parse`] asks here what it was.
    ///
    /// [`parse`]: super::serde_form::parse
    pub(super) static REFUSED_TOO_DEEP: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

impl<'de> Deserialize<'de> for WireValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<WireValue, D::Error> {
        WireSeed { depth: 0 }.deserialize(d)
    }
}

/// Reads a [`WireValue`] at `depth` (a payload's own values are at 0, the items of a list or map
/// at depth `d` are at `d + 1`); a list or a map at depth [`Value::MAX_NESTING`] is refused, so
/// the recursion is bounded whatever the input.
#[derive(Clone, Copy)]
pub(super) struct WireSeed {
    depth: usize,
}

impl WireSeed {
    /// The depth of the items of a list or map at this depth, or the error.
    fn inner<E: de::Error>(self) -> Result<usize, E> {
        if self.depth >= Value::MAX_NESTING {
            REFUSED_TOO_DEEP.with(|refused| refused.set(true));
            Err(E::custom(too_deep()))
        } else {
            Ok(self.depth + 1)
        }
    }
}

impl<'de> DeserializeSeed<'de> for WireSeed {
    type Value = WireValue;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<WireValue, D::Error> {
        d.deserialize_enum("WireValue", VARIANTS, self)
    }
}

/// A variant of [`WireValue`] by position (postcard) or name (JSON).
pub(super) struct Tag(usize);

impl<'de> Deserialize<'de> for Tag {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Tag, D::Error> {
        struct TagVisitor;
        impl Visitor<'_> for TagVisitor {
            type Value = Tag;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a payload value variant")
            }

            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Tag, E> {
                match usize::try_from(v) {
                    Ok(i) if i < VARIANTS.len() => Ok(Tag(i)),
                    _ => Err(E::custom(format_args!(
                        "unknown payload value variant {v} (0 to {} known)",
                        VARIANTS.len() - 1
                    ))),
                }
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<Tag, E> {
                match VARIANTS.iter().position(|&n| n == v) {
                    Some(i) => Ok(Tag(i)),
                    // The name is not quoted: it is text from the message.
                    None => Err(E::custom("unknown payload value variant")),
                }
            }
        }
        d.deserialize_identifier(TagVisitor)
    }
}

/// The fields of the two-field variants `Duration`, `Time` (`secs`, `nanos`).
#[derive(Deserialize)]
struct SecsNanos<T> {
    secs: T,
    nanos: u32,
}

/// The fields of `Exception`.
#[derive(Deserialize)]
struct ExceptionParts {
    type_name: String,
    message: String,
}

impl<'de> Visitor<'de> for WireSeed {
    type Value = WireValue;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a payload value")
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<WireValue, A::Error> {
        let (Tag(tag), v) = data.variant::<Tag>()?;
        // The struct variants are read as a newtype holding a struct: the same bytes in postcard
        // (fields back to back) and the same text in JSON (`{"secs": .., "nanos": ..}`).
        Ok(match VARIANTS[tag] {
            "Bool" => WireValue::Bool(v.newtype_variant()?),
            "I64" => WireValue::I64(v.newtype_variant()?),
            "U64" => WireValue::U64(v.newtype_variant()?),
            "F64" => WireValue::F64(v.newtype_variant()?),
            "Str" => WireValue::Str(v.newtype_variant()?),
            "Duration" => {
                let SecsNanos { secs, nanos } = v.newtype_variant()?;
                WireValue::Duration { secs, nanos }
            }
            "Exception" => {
                let ExceptionParts { type_name, message } = v.newtype_variant()?;
                WireValue::Exception { type_name, message }
            }
            "Null" => {
                v.unit_variant()?;
                WireValue::Null
            }
            "I128" => WireValue::I128(v.newtype_variant()?),
            "U128" => WireValue::U128(v.newtype_variant()?),
            "Time" => {
                let SecsNanos { secs, nanos } = v.newtype_variant()?;
                WireValue::Time { secs, nanos }
            }
            "List" => WireValue::List(v.newtype_variant_seed(ListSeed { depth: self.inner()? })?),
            _ => WireValue::Map(v.newtype_variant_seed(MapSeed { depth: self.inner()? })?),
        })
    }
}

/// A list whose items are at `depth`.
struct ListSeed {
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for ListSeed {
    type Value = Vec<WireValue>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Vec<WireValue>, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for ListSeed {
    type Value = Vec<WireValue>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of payload values")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<WireValue>, A::Error> {
        // The length comes from the message: not trusted for more than a small reservation.
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
        while let Some(item) = seq.next_element_seed(WireSeed { depth: self.depth })? {
            items.push(item);
        }
        Ok(items)
    }
}

/// A map (a list of `(key, value)` pairs) whose values are at `depth`.
struct MapSeed {
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for MapSeed {
    type Value = Vec<(String, WireValue)>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for MapSeed {
    type Value = Vec<(String, WireValue)>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of (key, payload value) pairs")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut entries = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
        while let Some(entry) = seq.next_element_seed(EntrySeed { depth: self.depth })? {
            entries.push(entry);
        }
        Ok(entries)
    }
}

/// One `(key, value)` pair of a map, its value at `depth`.
struct EntrySeed {
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for EntrySeed {
    type Value = (String, WireValue);

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_tuple(2, self)
    }
}

impl<'de> Visitor<'de> for EntrySeed {
    type Value = (String, WireValue);

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a (key, payload value) pair")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let key = seq
            .next_element::<String>()?
            .ok_or_else(|| de::Error::invalid_length(0, &self))?;
        let value = seq
            .next_element_seed(WireSeed { depth: self.depth })?
            .ok_or_else(|| de::Error::invalid_length(1, &self))?;
        Ok((key, value))
    }
}

/// A value borrowed for encoding, written in [`WireValue`]'s form without copying it (nested
/// lists and maps included).
pub(super) struct ValueOut<'a>(pub(super) &'a Value);

impl Serialize for ValueOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStructVariant;
        const NAME: &str = "WireValue";
        // `WireValue::<variant>(value)`, the form of every variant that holds one value.
        macro_rules! newtype {
            ($variant:expr, $value:expr) => {{
                let (i, n) = $variant;
                s.serialize_newtype_variant(NAME, i, n, $value)
            }};
        }
        // `WireValue::<variant> { a, b }`, the form of the two-field variants.
        macro_rules! pair {
            ($variant:expr, $a:literal: $va:expr, $b:literal: $vb:expr) => {{
                let (i, n) = $variant;
                let mut st = s.serialize_struct_variant(NAME, i, n, 2)?;
                st.serialize_field($a, $va)?;
                st.serialize_field($b, $vb)?;
                st.end()
            }};
        }
        match self.0 {
            Value::Null => {
                let (i, n) = variant::NULL;
                s.serialize_unit_variant(NAME, i, n)
            }
            Value::Bool(v) => newtype!(variant::BOOL, v),
            Value::I64(v) => newtype!(variant::I64, v),
            Value::U64(v) => newtype!(variant::U64, v),
            Value::I128(v) => newtype!(variant::I128, v),
            Value::U128(v) => newtype!(variant::U128, v),
            Value::F64(v) => newtype!(variant::F64, v),
            Value::Str(v) => newtype!(variant::STR, &**v),
            Value::Duration(d) => pair!(variant::DURATION, "secs": &d.as_secs(), "nanos": &d.subsec_nanos()),
            Value::Time(t) => {
                let (secs, nanos) = time_parts(*t);
                pair!(variant::TIME, "secs": &secs, "nanos": &nanos)
            }
            Value::List(items) => newtype!(variant::LIST, &ListOut(items)),
            Value::Map(map) => newtype!(variant::MAP, &PayloadOut(map)),
            Value::Exception { type_name, message } => {
                pair!(variant::EXCEPTION, "type_name": &**type_name, "message": message)
            }
            // A variant added to notify-core after this wire version: its Display text.
            other => newtype!(variant::STR, &other.to_string()),
        }
    }
}

struct ListOut<'a>(&'a [Value]);

impl Serialize for ListOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for item in self.0 {
            seq.serialize_element(&ValueOut(item))?;
        }
        seq.end()
    }
}

impl WireValue {
    /// The value; a time this platform cannot represent, or a duration or time whose nanoseconds
    /// are out of range, is an error naming what is wrong, never the value (a payload may hold
    /// secrets, and decode errors are logged).
    fn into_value(self) -> Result<Value, String> {
        Ok(match self {
            WireValue::Null => Value::Null,
            WireValue::Bool(v) => Value::Bool(v),
            WireValue::I64(v) => Value::I64(v),
            WireValue::U64(v) => Value::U64(v),
            WireValue::I128(v) => Value::I128(v),
            WireValue::U128(v) => Value::U128(v),
            WireValue::F64(v) => Value::F64(v),
            WireValue::Str(v) => Value::Str(v.into()),
            WireValue::Duration { secs, nanos } => {
                if nanos >= 1_000_000_000 {
                    return Err("duration with nanoseconds out of range (at most 999999999)".to_owned());
                }
                Value::Duration(Duration::new(secs, nanos))
            }
            WireValue::Time { secs, nanos } => {
                if nanos >= 1_000_000_000 {
                    return Err("time with nanoseconds out of range (at most 999999999)".to_owned());
                }
                Value::Time(
                    time_from_parts(secs, nanos)
                        .ok_or_else(|| "time out of the range this platform represents".to_owned())?,
                )
            }
            WireValue::Exception { type_name, message } => Value::Exception {
                type_name: Cow::Owned(type_name),
                message,
            },
            WireValue::List(items) => {
                Value::List(items.into_iter().map(WireValue::into_value).collect::<Result<_, _>>()?)
            }
            WireValue::Map(entries) => Value::Map(Box::new(payload_from(entries)?)),
        })
    }
}

/// A payload from decoded entries (owned keys, in order).
pub(super) fn payload_from(entries: Vec<(String, WireValue)>) -> Result<Payload, String> {
    let mut payload = Payload::new();
    for (key, value) in entries {
        payload.insert(key, value.into_value()?);
    }
    Ok(payload)
}

/// A payload borrowed for encoding: a sequence of `(key, value)` pairs.
pub(super) struct PayloadOut<'a>(pub(super) &'a Payload);

impl Serialize for PayloadOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for (key, value) in self.0.iter() {
            seq.serialize_element(&(key, ValueOut(value)))?;
        }
        seq.end()
    }
}
