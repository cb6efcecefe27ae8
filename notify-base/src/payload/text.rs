//! [`Text`]: the text of a [`Value::Str`](super::Value::Str), borrowed when static, inline when
//! short, else owned.

use std::borrow::{Borrow, Cow};
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::sync::Arc;

/// The text of a [`Value::Str`](crate::Value::Str), stored one of four ways, none of which shows
/// in its value (equality, order, hashing and formatting are those of the `str`):
///
/// * a `&'static str`, borrowed ([`Text::from_static`], `From<&'static str>`): no copy,
///   nothing to free;
/// * up to [`Text::INLINE_CAPACITY`] (38) bytes copied inline ([`Text::new`] of a short
///   `&str`, what `Payload::with("key", text)` does with borrowed text): no allocation;
/// * a `String` ([`Text::new`] of longer text, `From<String>`: moved, not copied);
/// * an `Arc<str>`, shared (`From<Arc<str>>`: a reference count, no copy): one text in many
///   payloads, as an importer gives the events of one batch a statement they all carry.
///
/// A `Text` is 40 bytes, so a [`Value`](crate::Value) stays 48 bytes. It dereferences to `str`.
///
/// ```
/// use notify_core::payload::Text;
/// let sql = Text::new("SELECT * FROM books WHERE id = ?"); // 32 bytes: inline, no allocation
/// assert_eq!(sql, "SELECT * FROM books WHERE id = ?");
/// assert_eq!(sql.len(), 32);
/// assert_eq!(Text::from_static("users").as_static(), Some("users"));
/// assert_eq!(Text::new("users"), Text::from(String::from("users")));
/// ```
#[derive(Clone)]
pub struct Text(Repr);

#[derive(Clone)]
enum Repr {
    Static(&'static str),
    Inline(Inline),
    Owned(String),
    Shared(Arc<str>),
}

/// Short text stored in place: `bytes[..len]` is valid UTF-8 (copied from a `&str`).
#[derive(Clone, Copy)]
struct Inline {
    len: u8,
    bytes: [u8; Text::INLINE_CAPACITY],
}

impl Text {
    /// True when the text is held in a `String` or an `Arc` (dropping it may free memory).
    #[inline(always)]
    pub(crate) fn is_owned(&self) -> bool {
        matches!(self.0, Repr::Owned(_) | Repr::Shared(_))
    }

    /// The longest text, in bytes, that [`Text::new`] stores without allocating: what fits in
    /// a 48-byte [`Value`](crate::Value) beside its tags.
    pub const INLINE_CAPACITY: usize = 38;

    /// Static text, borrowed: no copy, nothing to free; `const`.
    ///
    /// ```
    /// const TABLE: notify_core::payload::Text = notify_core::payload::Text::from_static("books");
    /// assert_eq!(TABLE.as_static(), Some("books"));
    /// ```
    #[inline]
    pub const fn from_static(text: &'static str) -> Text {
        Text(Repr::Static(text))
    }

    /// A copy of `text`: inline when it has at most [`Text::INLINE_CAPACITY`] bytes (no
    /// allocation), else in a `String`.
    ///
    /// ```
    /// let t = notify_core::payload::Text::new("rows");
    /// assert_eq!((t.as_str(), t.as_static()), ("rows", None));
    /// ```
    #[inline]
    pub fn new(text: &str) -> Text {
        if text.len() <= Text::INLINE_CAPACITY {
            let mut bytes = [0; Text::INLINE_CAPACITY];
            bytes[..text.len()].copy_from_slice(text.as_bytes());
            Text(Repr::Inline(Inline {
                len: text.len() as u8,
                bytes,
            }))
        } else {
            Text(Repr::Owned(text.to_owned()))
        }
    }

    /// The text.
    #[inline]
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Static(text) => text,
            // SAFETY: `bytes[..len]` was copied from a `&str` by `Text::new` and never changed
            // (the field is private), so it is valid UTF-8; `len <= INLINE_CAPACITY`
            // (tests: `inline_text_reads_back_exactly`).
            Repr::Inline(inline) => unsafe { std::str::from_utf8_unchecked(&inline.bytes[..usize::from(inline.len)]) },
            Repr::Owned(text) => text,
            Repr::Shared(text) => text,
        }
    }

    /// The text when it is a borrowed `&'static str` (for bridges to APIs that take static text
    /// without copying, such as OpenTelemetry's `StringValue`); `None` for copied or owned text.
    ///
    /// ```
    /// use notify_core::payload::Text;
    /// assert_eq!(Text::from("a").as_static(), Some("a"));
    /// assert_eq!(Text::new("a").as_static(), None);
    /// ```
    #[inline]
    pub fn as_static(&self) -> Option<&'static str> {
        match self.0 {
            Repr::Static(text) => Some(text),
            _ => None,
        }
    }

    /// The text's shared allocation when it is shared (made from an `Arc<str>`: an importer's
    /// text a batch repeats), for bridges to APIs that keep an `Arc<str>` without copying (as
    /// OpenTelemetry's `StringValue` does); `None` for static, inline or `String` text.
    ///
    /// ```
    /// use notify_core::payload::Text;
    /// use std::sync::Arc;
    /// let shared: Arc<str> = Arc::from("SELECT * FROM books WHERE author_id = $1 ORDER BY title");
    /// let text = Text::from(shared.clone());
    /// assert!(Arc::ptr_eq(text.as_shared().unwrap(), &shared));
    /// assert!(Text::new("rows").as_shared().is_none());
    /// ```
    #[inline]
    pub fn as_shared(&self) -> Option<&Arc<str>> {
        match &self.0 {
            Repr::Shared(text) => Some(text),
            _ => None,
        }
    }

    /// The text as a `String` (moved out when owned, else copied).
    ///
    /// ```
    /// assert_eq!(notify_core::payload::Text::new("a").into_string(), "a");
    /// ```
    pub fn into_string(self) -> String {
        match self.0 {
            Repr::Owned(text) => text,
            _ => self.as_str().to_owned(),
        }
    }

    /// True when the text is stored inline (copied, not allocated).
    #[cfg(test)]
    fn is_inline(&self) -> bool {
        matches!(self.0, Repr::Inline(_))
    }
}

impl Deref for Text {
    type Target = str;

    #[inline]
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Text {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for Text {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl PartialEq for Text {
    fn eq(&self, other: &Text) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Text {}

impl PartialEq<str> for Text {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Text {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialOrd for Text {
    fn partial_cmp(&self, other: &Text) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Text {
    fn cmp(&self, other: &Text) -> Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl Hash for Text {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

impl From<&'static str> for Text {
    /// Borrows: a `&'static str` is not copied.
    #[inline]
    fn from(text: &'static str) -> Text {
        Text::from_static(text)
    }
}

impl From<String> for Text {
    /// Moves the `String` in (no copy).
    #[inline]
    fn from(text: String) -> Text {
        Text(Repr::Owned(text))
    }
}

impl From<Arc<str>> for Text {
    /// Shares the text (a reference count; no copy).
    ///
    /// ```
    /// use notify_core::payload::Text;
    /// use std::sync::Arc;
    /// let sql: Arc<str> = Arc::from("SELECT id, title FROM books WHERE author = ?1 ORDER BY year");
    /// let (a, b) = (Text::from(sql.clone()), Text::from(sql));
    /// assert_eq!(a, b);
    /// assert_eq!(a.as_ptr(), b.as_ptr());
    /// ```
    #[inline]
    fn from(text: Arc<str>) -> Text {
        Text(Repr::Shared(text))
    }
}

impl From<Cow<'static, str>> for Text {
    #[inline]
    fn from(text: Cow<'static, str>) -> Text {
        match text {
            Cow::Borrowed(text) => Text::from_static(text),
            Cow::Owned(text) => Text::from(text),
        }
    }
}

impl From<char> for Text {
    /// Inline (a `char` is at most 4 bytes).
    fn from(c: char) -> Text {
        Text::new(c.encode_utf8(&mut [0; 4]))
    }
}

impl From<Text> for String {
    fn from(text: Text) -> String {
        text.into_string()
    }
}

impl From<Text> for Cow<'static, str> {
    /// Static text stays borrowed; inline and shared text is copied into a `String`.
    fn from(text: Text) -> Cow<'static, str> {
        match text.0 {
            Repr::Static(text) => Cow::Borrowed(text),
            _ => Cow::Owned(text.into_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_text_reads_back_exactly() {
        let long = "é".repeat(30);
        for len in 0..=long.len() {
            let Some(text) = long.get(..len) else { continue };
            let t = Text::new(text);
            assert_eq!(t.as_str(), text);
            assert_eq!(t.is_inline(), len <= Text::INLINE_CAPACITY, "{len} bytes");
            assert_eq!(t.clone(), t);
        }
        let exact = "x".repeat(Text::INLINE_CAPACITY);
        assert!(Text::new(&exact).is_inline());
        assert!(!Text::new(&(exact + "x")).is_inline());
    }

    #[test]
    fn equal_order_and_hash_are_the_texts_whatever_the_storage() {
        use std::collections::hash_map::DefaultHasher;
        let hash = |t: &Text| {
            let mut h = DefaultHasher::new();
            t.hash(&mut h);
            h.finish()
        };
        let ways = [
            Text::from_static("books"),
            Text::new("books"),
            Text::from(String::from("books")),
        ];
        for a in &ways {
            for b in &ways {
                assert_eq!(a, b);
                assert_eq!(hash(a), hash(b));
            }
            assert!(*a < Text::new("booksz") && *a == "books");
            assert_eq!(format!("{a}|{a:>7}|{a:?}"), r#"books|  books|"books""#);
        }
        assert_eq!(ways[0].as_static(), Some("books"));
        assert_eq!(ways[1].as_static(), None);
        assert_eq!(Text::from('é'), "é");
        assert!(Text::from('é').is_inline());
    }

    #[test]
    fn conversions_keep_borrowed_text_borrowed() {
        assert!(matches!(Cow::from(Text::from("a")), Cow::Borrowed("a")));
        assert!(matches!(Cow::from(Text::new("a")), Cow::Owned(s) if s == "a"));
        assert_eq!(Text::from(Cow::Borrowed("a")).as_static(), Some("a"));
        assert_eq!(String::from(Text::new("ab")), "ab");
        let long = "y".repeat(100);
        assert_eq!(Text::new(&long).into_string(), long);
    }

    /// Shared text is one allocation for all its clones, reads and compares as its `str`, is
    /// dropped (not skipped as static or inline text is), and is copied out into a `String`.
    #[test]
    fn shared_text_is_one_allocation_and_behaves_as_its_str() {
        let arc: Arc<str> = Arc::from("z".repeat(60).as_str());
        let (a, b) = (Text::from(arc.clone()), Text::from(arc.clone()).clone());
        assert_eq!(Arc::strong_count(&arc), 3);
        assert_eq!((a.as_ptr(), b.as_ptr()), (arc.as_ptr(), arc.as_ptr()));
        assert_eq!(a, Text::new(&arc));
        assert!(a.is_owned() && !a.is_inline() && a.as_static().is_none());
        assert!(!crate::Value::Str(a.clone()).owns_nothing());
        let hash = |t: &Text| {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            t.hash(&mut h);
            h.finish()
        };
        assert_eq!(hash(&a), hash(&Text::new(&arc)));
        assert_eq!(a.into_string(), *arc);
        drop(b);
        assert_eq!(Arc::strong_count(&arc), 1);
    }

    #[test]
    fn sizes() {
        assert_eq!(std::mem::size_of::<Text>(), 40);
        assert_eq!(std::mem::size_of::<crate::Value>(), 48);
    }
}
