//! [`Value`]: one payload value, and its accessors.

use std::borrow::Cow;
use std::fmt;
use std::time::{Duration, SystemTime};

use super::{Payload, Text};

/// One payload value.
///
/// Build values with [`ToValue`](crate::ToValue) (what [`Payload::with`] and `fields(...)` of
/// `#[instrument_event]` use) or `From`; anything else is stored through its `Display` or `Debug`
/// text ([`Value::display`], [`Value::debug`]). An error recorded with [`Payload::record_error`] is
/// a [`Value::Exception`]. Each variant has an accessor (`as_*`), so code reading a payload need
/// not match on this enum, which may gain variants (`#[non_exhaustive]`).
///
/// Integers keep their signedness; 128-bit integers that fit in 64 bits are stored as
/// [`Value::I64`] / [`Value::U64`], so a value reads the same whatever integer type produced it.
///
/// ```
/// use notify_core::Value;
/// assert_eq!(Value::from(3_u32), Value::U64(3));
/// assert_eq!(Value::from(3_u128), Value::U64(3));
/// assert_eq!(Value::from("users"), Value::Str("users".into()));
/// assert_eq!(Value::from(None::<u64>), Value::Null);
/// assert_eq!(Value::from(vec![1_u8, 2]), Value::List(vec![Value::U64(1), Value::U64(2)]));
/// assert_eq!(Value::debug(&Some(1)), Value::Str("Some(1)".into()));
/// ```
///
/// # Serialized form (feature `serde`)
///
/// Plain data: `Null` → `null`, numbers and text as they are (128-bit integers as numbers),
/// `Duration` → whole nanoseconds (a number), `Time` → an RFC 3339 UTC string with nanoseconds
/// (JavaScript reads JSON numbers exactly only to 2^53; see [`Event`](crate::Event)), `List` → a
/// sequence, `Map` → a map in order, `Exception` → `{"type_name": …, "message": …}`. Reading
/// back gives the same null, booleans, numbers, text, lists, maps and (under the key
/// `"exception"`) errors; a duration comes back as `U64` and a time as `Str`, since the plain
/// form does not say what they were. Integers beyond the 64-bit range come back as `I128` /
/// `U128` only from a format that reads 128-bit numbers untyped; serde_json does not (without its
/// `arbitrary_precision` feature it reads them as `F64`, losing digits), and JavaScript reads any
/// JSON number above 2^53 approximately, so put such numbers in a payload as text when they must
/// survive JSON exactly.
/// `Clone`, `PartialEq`, `Debug` and `Drop` never recurse once per nesting level: a value built in
/// the process may nest lists and maps to any depth and be copied, compared and freed on a thread
/// with a small stack; `Debug`, like `Display`, writes [`Value::MAX_NESTING`] levels, deeper ones
/// as `…`, and `Serialize` refuses a value nested deeper than that (as decoders do).
#[non_exhaustive]
pub enum Value {
    /// No value (`None`; JSON `null`).
    Null,
    /// A boolean.
    Bool(bool),
    /// A signed integer.
    I64(i64),
    /// An unsigned integer (counts, sizes in bytes).
    U64(u64),
    /// A signed integer below `i64::MIN` or above `i64::MAX`.
    I128(i128),
    /// An unsigned integer above `u64::MAX`.
    U128(u128),
    /// A floating-point number.
    F64(f64),
    /// Text: a `&'static str` given through `From` or [`Value::from_static`] is borrowed, short
    /// text is copied inline, longer text is owned (see [`Text`]).
    Str(Text),
    /// A duration (serialized as whole nanoseconds).
    Duration(Duration),
    /// A wall-clock time (serialized as an RFC 3339 UTC string with nanoseconds).
    Time(SystemTime),
    /// A list of values.
    List(Vec<Value>),
    /// A nested map, ordered as inserted (boxed: a [`Payload`] holds values inline).
    Map(Box<Payload>),
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
    /// How deep lists and maps may nest in a value read by a decoder: 32. A value of the payload
    /// itself is at depth 0; the items of a list or the entries of a map at depth 0 are at depth
    /// 1, and so on: `[[1]]` (JSON) nests 2 deep, and a value with 32 lists or maps inside one
    /// another is read, 33 is refused.
    ///
    /// Deserializing a [`Payload`] or a [`Value`] (feature `serde`, any serde format) and
    /// notify-nats' importer refuse a value nested deeper with the error
    /// `"payload value nested deeper than 32 lists and maps"` (plus the format's position, if it
    /// gives one), so a hostile message of a few kilobytes cannot overflow the reading thread's
    /// stack (postcard, for one, has no depth limit of its own). The limit applies to decoding,
    /// to encoding (`Serialize` refuses a deeper value with the same error, rather than write
    /// what the other side would refuse) and to the text of `Display` and `Debug` (deeper lists
    /// and maps are written `…`): a value built in the process may nest deeper, and is copied,
    /// compared and freed without recursion at any depth. 32 leaves serde_json's own limit (128
    /// levels) to the envelope around a payload.
    ///
    /// ```
    /// assert_eq!(notify_core::Value::MAX_NESTING, 32);
    /// ```
    pub const MAX_NESTING: usize = 32;

    /// True when dropping the value frees nothing: scalars, times, durations and text that is
    /// static or inline.
    #[inline(always)]
    pub(crate) fn owns_nothing(&self) -> bool {
        match self {
            Value::Str(text) => !text.is_owned(),
            Value::List(_) | Value::Map(_) | Value::Exception { .. } => false,
            // Listed one by one: a new variant must be sorted into one arm or the other.
            Value::Null
            | Value::Bool(_)
            | Value::I64(_)
            | Value::U64(_)
            | Value::I128(_)
            | Value::U128(_)
            | Value::F64(_)
            | Value::Duration(_)
            | Value::Time(_) => true,
        }
    }

    /// Text of static lifetime, stored without copying (no allocation, nothing to free); `const`.
    /// The same as `Value::from(text)`, spelled out where the borrow matters, as in a payload
    /// built per event:
    ///
    /// ```
    /// use notify_core::{Payload, Value};
    /// let p = Payload::new().with("sql", Value::from_static("SELECT 1"));
    /// assert_eq!(p.get("sql").and_then(Value::as_static_str), Some("SELECT 1"));
    /// ```
    ///
    /// `.with("sql", "SELECT 1")` copies the text instead (see [`ToValue`](crate::ToValue) for
    /// why `with` cannot tell a literal from a shorter-lived `&str`): inline, without allocating,
    /// up to [`Text::INLINE_CAPACITY`] bytes; `#[instrument_event]`'s `fields(key = "literal")`
    /// borrows, as the macro sees the literal.
    #[inline]
    pub const fn from_static(text: &'static str) -> Value {
        Value::Str(Text::from_static(text))
    }

    /// The text of a [`Value::Str`] that is borrowed `&'static str` (built by
    /// [`Value::from_static`] or `From<&'static str>`); `None` for copied or owned text and for
    /// other variants.
    ///
    /// ```
    /// use notify_core::Value;
    /// assert_eq!(Value::from_static("a").as_static_str(), Some("a"));
    /// assert_eq!(Value::from(String::from("a")).as_static_str(), None);
    /// ```
    pub fn as_static_str(&self) -> Option<&'static str> {
        match *self {
            Value::Str(ref text) => text.as_static(),
            _ => None,
        }
    }

    /// Stores `value`'s `Display` text (allocates once).
    ///
    /// ```
    /// use notify_core::Value;
    /// assert_eq!(Value::display(&std::net::Ipv4Addr::LOCALHOST), Value::Str("127.0.0.1".into()));
    /// ```
    pub fn display(value: &dyn fmt::Display) -> Value {
        Value::Str(Text::from(value.to_string()))
    }

    /// Stores `value`'s `Debug` text (allocates once).
    ///
    /// ```
    /// use notify_core::Value;
    /// assert_eq!(Value::debug(&[1, 2]), Value::Str("[1, 2]".into()));
    /// ```
    pub fn debug(value: &dyn fmt::Debug) -> Value {
        Value::Str(Text::from(format!("{value:?}")))
    }

    /// True for [`Value::Null`].
    ///
    /// ```
    /// assert!(notify_core::Value::from(None::<u8>).is_null());
    /// ```
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// The value of a [`Value::Bool`].
    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            Value::Bool(v) => Some(v),
            _ => None,
        }
    }

    /// The value as an `i64`, if it is an integer that fits.
    ///
    /// ```
    /// use notify_core::Value;
    /// assert_eq!(Value::U64(7).as_i64(), Some(7));
    /// assert_eq!(Value::U64(u64::MAX).as_i64(), None);
    /// assert_eq!(Value::Bool(true).as_i64(), None);
    /// ```
    pub fn as_i64(&self) -> Option<i64> {
        self.as_i128().and_then(|v| i64::try_from(v).ok())
    }

    /// The value as a `u64`, if it is an integer that fits.
    ///
    /// ```
    /// use notify_core::Value;
    /// assert_eq!(Value::I64(7).as_u64(), Some(7));
    /// assert_eq!(Value::I64(-1).as_u64(), None);
    /// ```
    pub fn as_u64(&self) -> Option<u64> {
        self.as_u128().and_then(|v| u64::try_from(v).ok())
    }

    /// The value as an `i128`, if it is an integer that fits (all but [`Value::U128`]s above
    /// `i128::MAX`).
    ///
    /// ```
    /// use notify_core::Value;
    /// assert_eq!(Value::U64(u64::MAX).as_i128(), Some(u64::MAX as i128));
    /// ```
    pub fn as_i128(&self) -> Option<i128> {
        match *self {
            Value::I64(v) => Some(v.into()),
            Value::U64(v) => Some(v.into()),
            Value::I128(v) => Some(v),
            Value::U128(v) => i128::try_from(v).ok(),
            _ => None,
        }
    }

    /// The value as a `u128`, if it is a non-negative integer.
    ///
    /// ```
    /// use notify_core::Value;
    /// assert_eq!(Value::from(u128::MAX).as_u128(), Some(u128::MAX));
    /// assert_eq!(Value::I64(-1).as_u128(), None);
    /// ```
    pub fn as_u128(&self) -> Option<u128> {
        match *self {
            Value::U128(v) => Some(v),
            _ => self.as_i128().and_then(|v| u128::try_from(v).ok()),
        }
    }

    /// The value of a [`Value::F64`] (integers are not converted: use `as_i64` and friends).
    ///
    /// ```
    /// use notify_core::Value;
    /// assert_eq!(Value::from(0.5_f32).as_f64(), Some(0.5));
    /// assert_eq!(Value::U64(1).as_f64(), None);
    /// ```
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::F64(v) => Some(v),
            _ => None,
        }
    }

    /// The text of a [`Value::Str`].
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

    /// The value of a [`Value::Duration`].
    pub fn as_duration(&self) -> Option<Duration> {
        match *self {
            Value::Duration(v) => Some(v),
            _ => None,
        }
    }

    /// The value of a [`Value::Time`].
    pub fn as_time(&self) -> Option<SystemTime> {
        match *self {
            Value::Time(v) => Some(v),
            _ => None,
        }
    }

    /// The items of a [`Value::List`].
    ///
    /// ```
    /// use notify_core::Value;
    /// assert_eq!(Value::from(&["a", "b"][..]).as_list().map(<[Value]>::len), Some(2));
    /// ```
    pub fn as_list(&self) -> Option<&[Value]> {
        match self {
            Value::List(v) => Some(v),
            _ => None,
        }
    }

    /// The entries of a [`Value::Map`].
    ///
    /// ```
    /// use notify_core::{Payload, Value};
    /// let v = Value::from(Payload::new().with("port", 80_u16));
    /// assert_eq!(v.as_map().and_then(|m| m.get("port")), Some(&Value::U64(80)));
    /// ```
    pub fn as_map(&self) -> Option<&Payload> {
        match self {
            Value::Map(v) => Some(v),
            _ => None,
        }
    }

    /// The type name and message of a [`Value::Exception`].
    ///
    /// ```
    /// let mut p = notify_core::Payload::new();
    /// p.record_error(&std::fmt::Error);
    /// assert_eq!(p.get("exception").and_then(|v| v.as_exception()),
    ///     Some(("core::fmt::Error", "an error occurred when formatting an argument")));
    /// ```
    pub fn as_exception(&self) -> Option<(&str, &str)> {
        match self {
            Value::Exception { type_name, message } => Some((type_name, message)),
            _ => None,
        }
    }
}

/// `Display`: numbers and text as they are, a duration as its `Debug` form (`1.5ms`), a time as
/// RFC 3339 UTC (`2024-05-01T12:00:00.000000001Z`; before 1970 too, and years past 9999 in ISO
/// 8601's expanded form `+10000-…`, so no time makes it fail), null as `null`, lists as `[a, b]`, maps as
/// `{k: v, ...}`, an exception as `type: message`. A list or map nested deeper than
/// [`Value::MAX_NESTING`] is written `…`: the text is written by recursion, and a value nested
/// thousands deep (code in the process can build one; decoders refuse it) would overflow the stack
/// of the thread writing it (an exporter's, 2 MiB) and abort the process.
///
/// ```
/// use notify_core::Value;
/// let mut deep = Value::from(1_u64);
/// for _ in 0..10_000 {
///     deep = Value::List(vec![deep]);
/// }
/// let text = deep.to_string();
/// assert!(text.starts_with(&"[".repeat(Value::MAX_NESTING)) && text.contains("[…]"));
/// ```
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write_nested(f, 0)
    }
}

impl Value {
    /// [`Value`]'s `Display` at nesting `depth` (0: the outermost value).
    fn write_nested(&self, f: &mut fmt::Formatter<'_>, depth: usize) -> fmt::Result {
        use fmt::Display;
        match self {
            Value::Null => f.write_str("null"),
            Value::Bool(v) => v.fmt(f),
            Value::I64(v) => v.fmt(f),
            Value::U64(v) => v.fmt(f),
            Value::I128(v) => v.fmt(f),
            Value::U128(v) => v.fmt(f),
            Value::F64(v) => v.fmt(f),
            Value::Str(v) => v.fmt(f),
            Value::Duration(v) => write!(f, "{v:?}"),
            Value::Time(v) => super::Rfc3339(*v).fmt(f),
            Value::List(_) | Value::Map(_) if depth >= Value::MAX_NESTING => f.write_str("…"),
            Value::List(items) => {
                f.write_str("[")?;
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    item.write_nested(f, depth + 1)?;
                }
                f.write_str("]")
            }
            Value::Map(map) => {
                f.write_str("{")?;
                for (i, (key, value)) in map.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{key}: ")?;
                    value.write_nested(f, depth + 1)?;
                }
                f.write_str("}")
            }
            Value::Exception { type_name, message } => write!(f, "{type_name}: {message}"),
        }
    }
}
