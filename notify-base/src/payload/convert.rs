//! [`ToValue`]: the one conversion into payload values, shared by [`Payload::with`],
//! [`Payload::insert`] and the `fields(...)` of `#[instrument_event]`.

use std::borrow::Cow;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::{Payload, Text, Value};

/// A type that can be stored in a payload as it is (not through its `Display`/`Debug` text).
///
/// | type | [`Value`] |
/// |---|---|
/// | `bool` | `Bool` |
/// | `i8` … `i64`, `isize` | `I64` |
/// | `u8` … `u64`, `usize` | `U64` |
/// | `i128`, `u128` | `I64`/`U64` when they fit, else `I128`/`U128` |
/// | `f32`, `f64` | `F64` |
/// | `char`, `str`, `String`, `Cow<str>`, `Box<str>`, `Arc<str>`, `Rc<str>`, [`Text`] | `Str` |
/// | `Duration` | `Duration` |
/// | `SystemTime` | `Time` |
/// | `Option<T>` | `Null` for `None`, else `T`'s value |
/// | `[T]`, `[T; N]`, `Vec<T>` | `List` |
/// | [`Payload`] | `Map` |
/// | [`Value`] | itself |
/// | `&T`, `&mut T`, `Box<T>`, `Arc<T>`, `Rc<T>` | `T`'s value |
///
/// Borrowed text is copied (the payload owns its values: events outlive the call that published
/// them): inline, without allocating, up to [`Text::INLINE_CAPACITY`] (38) bytes, else into a
/// `String`; owned text (`String`, an owned `Cow`) is moved by [`ToValue::into_value`]. Shared
/// text is kept shared only as `Value::from(arc)` (an `Arc<str>` given to `with` goes through
/// `Arc<T>`'s impl and is copied: the blanket impl leaves no room for one of `Arc<str>` alone).
///
/// # Static text: `Value::from_static`, not a `&'static str` impl
///
/// A [`Value::Str`]'s [`Text`] can hold a `&'static str` borrowed: no copy at all, nothing to
/// free (text over 38 bytes would otherwise cost a malloc, a copy and a free: about 200
/// instructions per value). `ToValue` cannot do that for a plain `"literal"` argument: one impl,
/// `&T` for every lifetime, serves `&'static str` and a `&str` borrowed from a local alike, and
/// nothing in a generic function tells the two apart (no specialization on lifetimes). An impl
/// for `&'static str` alone would replace that one, and `with("key", &local_string[..])` would
/// stop compiling, which issue 14's table above rules out. So the borrow is asked for by name:
/// [`Value::from_static`] (or `Value::from(text)`, whose `From<&'static str>` is the same), which
/// `with`, `insert` and `fields(...)` take as they take any `Value` (moved, not converted).
/// `#[instrument_event]` does this by itself for a string literal in `fields(key = "...")`.
///
/// ```
/// use notify_core::{Payload, Value};
/// let table = String::from("books");
/// let p = Payload::new()
///     .with("sql", Value::from_static("SELECT * FROM books")) // borrowed
///     .with("table", &table[..]) // a shorter-lived &str: copied
///     .with("db", "primary"); // a literal through `ToValue`: copied too
/// assert_eq!(p.get("sql").and_then(Value::as_static_str), Some("SELECT * FROM books"));
/// assert_eq!(p.get("db").and_then(Value::as_static_str), None);
/// ```
///
/// Implement it for your own types to use them in `with`, `insert` and `fields(...)`:
///
/// ```
/// use notify_core::{payload::ToValue, Payload, Value};
/// struct UserId(u64);
/// impl ToValue for UserId {
///     fn to_value(&self) -> Value {
///         Value::U64(self.0)
///     }
/// }
/// let p = Payload::new().with("user", UserId(7)).with("tags", ["a", "b"]).with("parent", None::<u64>);
/// assert_eq!(p.get("user"), Some(&Value::U64(7)));
/// assert_eq!(p.get("parent"), Some(&Value::Null));
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be stored in a payload as it is",
    label = "not a number, bool, text, time, option, list or map",
    note = "record its `Display` text with `Value::display(&x)` (in `fields`: `key = %expr`), or its `Debug` text with `Value::debug(&x)` (`key = ?expr`); or implement `notify_core::payload::ToValue` for it"
)]
pub trait ToValue {
    /// The payload value, built from a borrow (text is copied).
    fn to_value(&self) -> Value;

    /// The payload value, consuming `self`: owned text moves instead of being copied. The default
    /// calls [`ToValue::to_value`].
    #[inline]
    fn into_value(self) -> Value
    where
        Self: Sized,
    {
        self.to_value()
    }
}

macro_rules! copy_to_value {
    ($($t:ty => |$v:ident| $e:expr),* $(,)?) => {
        $(impl ToValue for $t {
            #[inline]
            fn to_value(&self) -> Value {
                let $v = *self;
                $e
            }
        }

        impl From<$t> for Value {
            #[inline]
            fn from($v: $t) -> Value {
                $e
            }
        })*
    };
}

copy_to_value!(
    bool => |v| Value::Bool(v),
    i8 => |v| Value::I64(v.into()),
    i16 => |v| Value::I64(v.into()),
    i32 => |v| Value::I64(v.into()),
    i64 => |v| Value::I64(v),
    // `isize` and `usize` are at most 64 bits on every target Rust supports.
    isize => |v| Value::I64(v as i64),
    u8 => |v| Value::U64(v.into()),
    u16 => |v| Value::U64(v.into()),
    u32 => |v| Value::U64(v.into()),
    u64 => |v| Value::U64(v),
    usize => |v| Value::U64(v as u64),
    i128 => |v| i64::try_from(v).map_or(Value::I128(v), Value::I64),
    u128 => |v| u64::try_from(v).map_or(Value::U128(v), Value::U64),
    f32 => |v| Value::F64(v.into()),
    f64 => |v| Value::F64(v),
    char => |v| Value::Str(Text::from(v)),
    Duration => |v| Value::Duration(v),
    SystemTime => |v| Value::Time(v),
);

impl ToValue for str {
    #[inline]
    fn to_value(&self) -> Value {
        Value::Str(Text::new(self))
    }
}

impl ToValue for String {
    #[inline]
    fn to_value(&self) -> Value {
        Value::Str(Text::new(self))
    }

    #[inline]
    fn into_value(self) -> Value {
        Value::Str(Text::from(self))
    }
}

impl ToValue for Cow<'_, str> {
    fn to_value(&self) -> Value {
        Value::Str(Text::new(self))
    }

    fn into_value(self) -> Value {
        match self {
            Cow::Borrowed(text) => Value::Str(Text::new(text)),
            Cow::Owned(text) => Value::Str(Text::from(text)),
        }
    }
}

impl ToValue for Text {
    fn to_value(&self) -> Value {
        Value::Str(self.clone())
    }

    #[inline]
    fn into_value(self) -> Value {
        Value::Str(self)
    }
}

impl ToValue for Value {
    fn to_value(&self) -> Value {
        self.clone()
    }

    #[inline]
    fn into_value(self) -> Value {
        self
    }
}

impl ToValue for Payload {
    fn to_value(&self) -> Value {
        Value::Map(Box::new(self.clone()))
    }

    fn into_value(self) -> Value {
        Value::Map(Box::new(self))
    }
}

impl<T: ToValue> ToValue for Option<T> {
    #[inline]
    fn to_value(&self) -> Value {
        self.as_ref().map_or(Value::Null, T::to_value)
    }

    #[inline]
    fn into_value(self) -> Value {
        self.map_or(Value::Null, T::into_value)
    }
}

impl<T: ToValue> ToValue for [T] {
    fn to_value(&self) -> Value {
        Value::List(self.iter().map(T::to_value).collect())
    }
}

impl<T: ToValue, const N: usize> ToValue for [T; N] {
    fn to_value(&self) -> Value {
        self[..].to_value()
    }

    fn into_value(self) -> Value {
        Value::List(self.into_iter().map(T::into_value).collect())
    }
}

impl<T: ToValue> ToValue for Vec<T> {
    fn to_value(&self) -> Value {
        self[..].to_value()
    }

    fn into_value(self) -> Value {
        Value::List(self.into_iter().map(T::into_value).collect())
    }
}

macro_rules! deref_to_value {
    ($($ptr:ident),*) => {
        $(impl<T: ToValue + ?Sized> ToValue for $ptr<T> {
            #[inline]
            fn to_value(&self) -> Value {
                (**self).to_value()
            }
        })*
    };
}

deref_to_value!(Box, Arc, Rc);

impl<T: ToValue + ?Sized> ToValue for &T {
    #[inline]
    fn to_value(&self) -> Value {
        (**self).to_value()
    }
}

impl<T: ToValue + ?Sized> ToValue for &mut T {
    #[inline]
    fn to_value(&self) -> Value {
        (**self).to_value()
    }
}

// `From` for the owned forms; `&'static str` and `Cow<'static, str>` are stored without copying.

impl From<&'static str> for Value {
    #[inline]
    fn from(v: &'static str) -> Value {
        Value::Str(Text::from_static(v))
    }
}

impl From<Cow<'static, str>> for Value {
    #[inline]
    fn from(v: Cow<'static, str>) -> Value {
        Value::Str(Text::from(v))
    }
}

impl From<String> for Value {
    #[inline]
    fn from(v: String) -> Value {
        Value::Str(Text::from(v))
    }
}

impl From<Text> for Value {
    #[inline]
    fn from(v: Text) -> Value {
        Value::Str(v)
    }
}

impl From<&String> for Value {
    fn from(v: &String) -> Value {
        v.to_value()
    }
}

impl From<Arc<str>> for Value {
    /// Shares the text (see [`Text`]'s `From<Arc<str>>`): no copy.
    fn from(v: Arc<str>) -> Value {
        Value::Str(Text::from(v))
    }
}

impl From<Payload> for Value {
    fn from(v: Payload) -> Value {
        v.into_value()
    }
}

impl<T: ToValue> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Value {
        v.into_value()
    }
}

impl<T: ToValue> From<Vec<T>> for Value {
    fn from(v: Vec<T>) -> Value {
        v.into_value()
    }
}

impl<T: ToValue> From<&[T]> for Value {
    fn from(v: &[T]) -> Value {
        v.to_value()
    }
}
