//! [`Key`]: a payload key, static text (no allocation) or owned text.

use std::borrow::{Borrow, Cow};
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

/// A payload key: a `&'static str` (stored without allocating, as literal keys are) or owned text
/// (keys known only at run time, such as request header names).
///
/// Built with `From`: `&'static str`, `String`, `&String` (copied), `Box<str>`, `Arc<str>`
/// (copied) and `Cow<'static, str>`. A `&str` that is not `'static` is not accepted, so that a key
/// is never copied without the caller saying so: pass `name.to_owned()`.
///
/// ```
/// use notify_core::{payload::Key, Payload};
/// let header = String::from("x-request-id");
/// let p = Payload::new().with("method", "GET").with(&header, "abc");
/// assert_eq!(p.keys().collect::<Vec<_>>(), ["method", "x-request-id"]);
/// assert_eq!(Key::from("method"), "method");
/// ```
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key(Cow<'static, str>);

impl Key {
    /// True when the key's text is owned (dropping it frees memory).
    #[inline(always)]
    pub(crate) fn is_owned(&self) -> bool {
        matches!(self.0, Cow::Owned(_))
    }

    /// A key of static text; `const`, does not allocate.
    ///
    /// ```
    /// const SQL: notify_core::payload::Key = notify_core::payload::Key::from_static("sql");
    /// assert_eq!(SQL.as_str(), "sql");
    /// ```
    pub const fn from_static(key: &'static str) -> Key {
        Key(Cow::Borrowed(key))
    }

    /// The key's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The key's text when it is a `&'static str` (for bridges to APIs that need static names,
    /// such as `tracing`'s field names); `None` for owned keys.
    ///
    /// ```
    /// use notify_core::payload::Key;
    /// assert_eq!(Key::from("sql").as_static(), Some("sql"));
    /// assert_eq!(Key::from(String::from("sql")).as_static(), None);
    /// ```
    pub fn as_static(&self) -> Option<&'static str> {
        match self.0 {
            Cow::Borrowed(key) => Some(key),
            Cow::Owned(_) => None,
        }
    }
}

impl Deref for Key {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Key {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for Key {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl PartialEq<str> for Key {
    fn eq(&self, other: &str) -> bool {
        *self.0 == *other
    }
}

impl PartialEq<&str> for Key {
    fn eq(&self, other: &&str) -> bool {
        *self.0 == **other
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&'static str> for Key {
    #[inline]
    fn from(key: &'static str) -> Key {
        Key(Cow::Borrowed(key))
    }
}

impl From<String> for Key {
    fn from(key: String) -> Key {
        Key(Cow::Owned(key))
    }
}

impl From<&String> for Key {
    fn from(key: &String) -> Key {
        Key(Cow::Owned(key.clone()))
    }
}

impl From<Box<str>> for Key {
    fn from(key: Box<str>) -> Key {
        Key(Cow::Owned(key.into()))
    }
}

impl From<Arc<str>> for Key {
    fn from(key: Arc<str>) -> Key {
        Key(Cow::Owned((*key).to_owned()))
    }
}

impl From<Cow<'static, str>> for Key {
    fn from(key: Cow<'static, str>) -> Key {
        Key(key)
    }
}

impl From<Key> for Cow<'static, str> {
    fn from(key: Key) -> Cow<'static, str> {
        key.0
    }
}
