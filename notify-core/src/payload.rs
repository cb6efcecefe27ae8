//! Payloads: the small ordered map of facts an event carries ("sql" → the statement, "rows" → 3).

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

use serde::ser::{SerializeMap, SerializeStruct};
use serde::{Serialize, Serializer};
use smallvec::SmallVec;

/// One payload value.
///
/// Numbers, booleans, strings and durations are stored as they are; anything else is stored through
/// its `Display` or `Debug` text ([`Value::display`], [`Value::debug`]). An error recorded with
/// [`Payload::record_error`] is a [`Value::Exception`].
///
/// ```
/// use notify_core::Value;
/// assert_eq!(Value::from(3_u32), Value::U64(3));
/// assert_eq!(Value::from("users"), Value::Str("users".into()));
/// assert_eq!(Value::debug(&Some(1)), Value::Str("Some(1)".into()));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// A boolean.
    Bool(bool),
    /// A signed integer.
    I64(i64),
    /// An unsigned integer (counts, sizes in bytes).
    U64(u64),
    /// A floating-point number.
    F64(f64),
    /// Text; a `&'static str` is stored without allocating.
    Str(Cow<'static, str>),
    /// A duration (serialized as nanoseconds).
    Duration(Duration),
    /// An error: its type name and its `Display` message, as AS::N's `exception` payload entry
    /// (`[class name, message]`).
    Exception {
        /// `std::any::type_name` of the error.
        type_name: Cow<'static, str>,
        /// The error's `Display` text.
        message: String,
    },
}

impl Value {
    /// Stores `value`'s `Display` text (allocates once).
    ///
    /// ```
    /// use notify_core::Value;
    /// assert_eq!(Value::display(&std::net::Ipv4Addr::LOCALHOST), Value::Str("127.0.0.1".into()));
    /// ```
    pub fn display(value: &dyn fmt::Display) -> Value {
        Value::Str(Cow::Owned(value.to_string()))
    }

    /// Stores `value`'s `Debug` text (allocates once).
    ///
    /// ```
    /// use notify_core::Value;
    /// assert_eq!(Value::debug(&[1, 2]), Value::Str("[1, 2]".into()));
    /// ```
    pub fn debug(value: &dyn fmt::Debug) -> Value {
        Value::Str(Cow::Owned(format!("{value:?}")))
    }

    /// The value as an `i64`, if it is an integer that fits.
    ///
    /// ```
    /// use notify_core::Value;
    /// assert_eq!(Value::U64(7).as_i64(), Some(7));
    /// assert_eq!(Value::Bool(true).as_i64(), None);
    /// ```
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Value::I64(v) => Some(v),
            Value::U64(v) => i64::try_from(v).ok(),
            _ => None,
        }
    }

    /// The value as text, if it is a [`Value::Str`].
    ///
    /// ```
    /// use notify_core::Value;
    /// assert_eq!(Value::from("x").as_str(), Some("x"));
    /// ```
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Bool(v) => v.fmt(f),
            Value::I64(v) => v.fmt(f),
            Value::U64(v) => v.fmt(f),
            Value::F64(v) => v.fmt(f),
            Value::Str(v) => v.fmt(f),
            Value::Duration(v) => write!(f, "{v:?}"),
            Value::Exception { type_name, message } => write!(f, "{type_name}: {message}"),
        }
    }
}

macro_rules! value_from {
    ($($t:ty => $variant:ident as $as:ty),* $(,)?) => {
        $(impl From<$t> for Value {
            fn from(v: $t) -> Value {
                Value::$variant(<$as>::from(v))
            }
        })*
    };
}

value_from!(
    bool => Bool as bool,
    i8 => I64 as i64, i16 => I64 as i64, i32 => I64 as i64, i64 => I64 as i64,
    u8 => U64 as u64, u16 => U64 as u64, u32 => U64 as u64, u64 => U64 as u64,
    f32 => F64 as f64, f64 => F64 as f64,
    Duration => Duration as Duration,
    &'static str => Str as Cow<'static, str>,
    String => Str as Cow<'static, str>,
    Cow<'static, str> => Str as Cow<'static, str>,
);

impl From<usize> for Value {
    fn from(v: usize) -> Value {
        Value::U64(v as u64)
    }
}

impl From<isize> for Value {
    fn from(v: isize) -> Value {
        Value::I64(v as i64)
    }
}

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::Bool(v) => s.serialize_bool(*v),
            Value::I64(v) => s.serialize_i64(*v),
            Value::U64(v) => s.serialize_u64(*v),
            Value::F64(v) => s.serialize_f64(*v),
            Value::Str(v) => s.serialize_str(v),
            Value::Duration(v) => s.serialize_u128(v.as_nanos()),
            Value::Exception { type_name, message } => {
                let mut st = s.serialize_struct("Exception", 2)?;
                st.serialize_field("type_name", type_name)?;
                st.serialize_field("message", message)?;
                st.end()
            }
        }
    }
}

/// The payload of an event: an ordered map from `&'static str` keys to [`Value`]s.
///
/// Up to four entries live inline, so building a small payload does not allocate. Inserting a key
/// that is already present replaces its value in place. Payloads serialize as a map (serde).
///
/// ```
/// use notify_core::{Payload, Value};
/// let mut payload = Payload::new().with("sql", "SELECT 1").with("name", "Load");
/// payload.insert("rows", 1_u64);
/// assert_eq!(payload.get("rows"), Some(&Value::U64(1)));
/// assert_eq!(payload.keys().collect::<Vec<_>>(), ["sql", "name", "rows"]);
/// ```
#[derive(Clone, Default, PartialEq)]
pub struct Payload {
    entries: SmallVec<[(&'static str, Value); 4]>,
}

/// The payload key under which [`Payload::record_error`] stores an error, as in AS::N.
pub const EXCEPTION_KEY: &str = "exception";

impl Payload {
    /// An empty payload; does not allocate.
    ///
    /// ```
    /// assert!(notify_core::Payload::new().is_empty());
    /// ```
    pub const fn new() -> Payload {
        Payload {
            entries: SmallVec::new_const(),
        }
    }

    /// True when dropping this payload does nothing (no entries, nothing allocated), so the
    /// unlistened fast paths can skip the out-of-line drop of their scratch payload.
    #[inline]
    pub(crate) fn is_trivially_droppable(&self) -> bool {
        !self.entries.spilled() && self.entries.is_empty()
    }

    /// The entries, mutable in place (keys and order kept): how a redaction policy rewrites values.
    pub(crate) fn entries_mut(&mut self) -> &mut [(&'static str, Value)] {
        &mut self.entries
    }

    /// Builder form of [`Payload::insert`].
    ///
    /// ```
    /// let p = notify_core::Payload::new().with("rows", 3_u64);
    /// assert_eq!(p.len(), 1);
    /// ```
    #[must_use]
    pub fn with(mut self, key: &'static str, value: impl Into<Value>) -> Payload {
        self.insert(key, value);
        self
    }

    /// Sets `key` to `value`, replacing an existing value of that key in place; returns the old value.
    ///
    /// ```
    /// let mut p = notify_core::Payload::new();
    /// assert_eq!(p.insert("rows", 1_u64), None);
    /// assert_eq!(p.insert("rows", 2_u64), Some(1_u64.into()));
    /// ```
    pub fn insert(&mut self, key: &'static str, value: impl Into<Value>) -> Option<Value> {
        let value = value.into();
        match self.entries.iter_mut().find(|(k, _)| *k == key) {
            Some((_, slot)) => Some(std::mem::replace(slot, value)),
            None => {
                self.entries.push((key, value));
                None
            }
        }
    }

    /// The value of `key`.
    ///
    /// ```
    /// let p = notify_core::Payload::new().with("a", true);
    /// assert!(p.get("a").is_some() && p.get("b").is_none());
    /// ```
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.entries.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// Removes `key`, returning its value.
    ///
    /// ```
    /// let mut p = notify_core::Payload::new().with("a", 1_u64);
    /// assert!(p.remove("a").is_some() && p.is_empty());
    /// ```
    pub fn remove(&mut self, key: &str) -> Option<Value> {
        let at = self.entries.iter().position(|(k, _)| *k == key)?;
        Some(self.entries.remove(at).1)
    }

    /// Records `error` under [`EXCEPTION_KEY`] as a [`Value::Exception`] (its type name and
    /// `Display` message), as AS::N does when the instrumented block raises.
    ///
    /// ```
    /// use notify_core::{Payload, Value};
    /// let mut p = Payload::new();
    /// let err = "x".parse::<u8>().unwrap_err();
    /// p.record_error(&err);
    /// let Some(Value::Exception { type_name, message }) = p.get("exception") else { panic!() };
    /// assert_eq!(type_name, "core::num::error::ParseIntError");
    /// assert_eq!(message, "invalid digit found in string");
    /// ```
    pub fn record_error<E: fmt::Display + ?Sized>(&mut self, error: &E) {
        self.insert(
            EXCEPTION_KEY,
            Value::Exception {
                type_name: Cow::Borrowed(std::any::type_name::<E>()),
                message: error.to_string(),
            },
        );
    }

    /// Number of entries.
    ///
    /// ```
    /// assert_eq!(notify_core::Payload::new().with("a", 1_u64).len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when there are no entries.
    ///
    /// ```
    /// assert!(notify_core::Payload::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entries in insertion order.
    ///
    /// ```
    /// let p = notify_core::Payload::new().with("a", 1_u64);
    /// assert_eq!(p.iter().count(), 1);
    /// ```
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&'static str, &Value)> + '_ {
        self.entries.iter().map(|(k, v)| (*k, v))
    }

    /// The keys in insertion order.
    ///
    /// ```
    /// let p = notify_core::Payload::new().with("a", 1_u64).with("b", 2_u64);
    /// assert_eq!(p.keys().collect::<String>(), "ab");
    /// ```
    pub fn keys(&self) -> impl ExactSizeIterator<Item = &'static str> + '_ {
        self.entries.iter().map(|(k, _)| *k)
    }
}

impl fmt::Debug for Payload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl Serialize for Payload {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.len()))?;
        for (k, v) in self.iter() {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serializes_as_an_ordered_map() {
        let p = Payload::new()
            .with("sql", "SELECT 1")
            .with("rows", 2_u64)
            .with("took", Duration::from_micros(3));
        assert_eq!(
            serde_json::to_string(&p).unwrap(),
            r#"{"sql":"SELECT 1","rows":2,"took":3000}"#
        );
    }

    #[test]
    fn small_payloads_stay_inline() {
        let p = Payload::new().with("a", 1_u64).with("b", 2_u64).with("c", 3_u64);
        assert!(!p.entries.spilled());
    }
}
