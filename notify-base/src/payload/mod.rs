//! Payloads: the small ordered map of facts an event carries ("sql" → the statement, "rows" → 3).

mod convert;
mod index;
mod key;
mod nested;
mod rfc3339;
mod text;
mod value;

use std::borrow::Cow;
use std::fmt;

use smallvec::SmallVec;

pub use self::convert::ToValue;
use self::index::{Index, INDEX_FROM};
pub use self::key::Key;
#[cfg(feature = "serde")]
pub(crate) use self::rfc3339::parse as parse_rfc3339;
pub(crate) use self::rfc3339::Rfc3339;
pub use self::text::Text;
pub use self::value::Value;

/// The payload of an event: an ordered map from [`Key`]s (static or owned text) to [`Value`]s.
///
/// Up to four entries live inline, so building a small payload does not allocate. Inserting a key
/// that is already present replaces its value in place. From 16 entries on, a payload keeps a hash
/// index of its keys, so building one of N distinct keys takes O(N) key comparisons, not O(N²).
/// With the `serde` feature, payloads serialize as a map and deserialize from one.
///
/// ```
/// use notify_core::{Payload, Value};
/// let header = String::from("x-request-id");
/// let mut payload = Payload::new().with("sql", "SELECT 1").with(header, 'x');
/// payload.insert("rows", 1_u64);
/// assert_eq!(payload.get("rows"), Some(&Value::U64(1)));
/// assert_eq!(payload.keys().collect::<Vec<_>>(), ["sql", "x-request-id", "rows"]);
/// ```
#[derive(Clone, Default)]
pub struct Payload {
    entries: SmallVec<[(Key, Value); INLINE]>,
    /// Present from [`INDEX_FROM`] entries on.
    index: Option<Box<Index>>,
}

/// Entries a payload holds inline (without allocating).
const INLINE: usize = 4;

/// The payload key under which [`Payload::record_error`] stores an error, as in AS::N.
pub const EXCEPTION_KEY: &str = "exception";

impl Payload {
    /// An empty payload; does not allocate.
    ///
    /// Not a `const fn`: built in `const` form (smallvec's `new_const`), the ~330 bytes of inline
    /// storage were zeroed with a `memset` on every listened event (rustc materialises the
    /// uninitialised constant); this form writes only the length and the index (issue 15:
    /// `timed_1` 784 → 746 instructions per event).
    ///
    /// ```
    /// assert!(notify_core::Payload::new().is_empty());
    /// ```
    #[inline(always)]
    pub fn new() -> Payload {
        Payload {
            entries: SmallVec::new(),
            index: None,
        }
    }

    /// True when dropping this payload does nothing (no entries, nothing allocated), so the
    /// unlistened fast paths can skip the out-of-line drop of their scratch payload.
    #[inline]
    pub(crate) fn is_trivially_droppable(&self) -> bool {
        !self.entries.spilled() && self.entries.is_empty()
    }

    /// Empties an event's payload for reuse (`export::recycle`): drops the entries and the index
    /// but writes only the length, not the ~330 bytes of inline storage a new payload would (the
    /// event is refilled on another thread: fewer cache lines to move back). A spilled payload
    /// keeps its heap buffer.
    #[inline]
    pub(crate) fn clear(&mut self) {
        self.entries.clear();
        self.index = None;
    }

    /// Moves the entries of `from` into this payload, meant to be empty (a recycled event's):
    /// when both are inline and this one is empty, only the entries present are copied (for 2
    /// entries, 2 × 72 bytes, against a swap of two whole payloads); else the two are swapped.
    /// `from` is left empty or with this payload's former entries.
    #[inline]
    pub(crate) fn fill_from(&mut self, from: &mut Payload) {
        if self.entries.is_empty() && !self.entries.spilled() && !from.entries.spilled() && from.index.is_none() {
            let len = from.entries.len();
            // SAFETY: both payloads are inline, so `from` holds `len <= INLINE` entries and this
            // one has room for `INLINE`; this one is empty, so nothing is overwritten. The `len`
            // entries are moved bit for bit, then owned by this payload only: `from`'s length is
            // set to 0 first, so no entry is dropped twice (and none if the copy were to unwind:
            // it cannot). `copy_nonoverlapping`: two distinct payloads (`&mut` both).
            unsafe {
                from.entries.set_len(0);
                std::ptr::copy_nonoverlapping(from.entries.as_ptr(), self.entries.as_mut_ptr(), len);
                self.entries.set_len(len);
            }
        } else {
            std::mem::swap(self, from);
        }
    }

    /// True when dropping this payload frees nothing: its entries are inline and none owns memory
    /// (static keys, scalar values, static or inline text), so forgetting it is dropping it. What
    /// lets the listened path skip the payload's out-of-line drop (about 140 instructions for a
    /// payload of 3 such entries: one `drop_in_place` per value and the `SmallVec`'s).
    #[inline]
    pub(crate) fn owns_nothing(&self) -> bool {
        !self.entries.spilled()
            && self.index.is_none()
            && self
                .entries
                .iter()
                .all(|(key, value)| !key.is_owned() && value.owns_nothing())
    }

    /// The entries, values mutable in place: how a redaction policy rewrites values. Callers must
    /// not change a key (the hash index of a large payload would no longer find it).
    #[cfg(feature = "redaction")]
    pub(crate) fn entries_mut(&mut self) -> &mut [(Key, Value)] {
        &mut self.entries
    }

    /// Builder form of [`Payload::insert`].
    ///
    /// ```
    /// let p = notify_core::Payload::new().with("rows", 3_u64).with("user", Some("ann"));
    /// assert_eq!(p.len(), 2);
    /// ```
    #[must_use]
    #[inline(always)]
    pub fn with(mut self, key: impl Into<Key>, value: impl ToValue) -> Payload {
        // Not `insert`: there is no old value to hand back (and drop out of line) per call.
        self.put(key.into(), value.into_value());
        self
    }

    /// Sets `key` to `value` (converted by [`ToValue::into_value`]), replacing an existing value of
    /// that key in place (the key keeps its position); returns the old value.
    ///
    /// ```
    /// let mut p = notify_core::Payload::new();
    /// assert_eq!(p.insert("rows", 1_u64), None);
    /// assert_eq!(p.insert("rows", 2_u64), Some(1_u64.into()));
    /// ```
    pub fn insert(&mut self, key: impl Into<Key>, value: impl ToValue) -> Option<Value> {
        self.insert_value(key.into(), value.into_value())
    }

    fn insert_value(&mut self, key: Key, value: Value) -> Option<Value> {
        match self.find_for_insert(&key) {
            Some(at) => Some(std::mem::replace(&mut self.entries[at].1, value)),
            None => {
                self.push_new(key, value);
                None
            }
        }
    }

    /// `insert_value` without returning the old value (dropped in place when replaced). Inline
    /// for a payload with room left inline (at most `INLINE - 1` compares and a store), else
    /// [`Payload::put_slow`]. An inline payload has no index (one is built from [`INDEX_FROM`]
    /// entries), and asking "inline?" rather than "no index?" lets the compiler drop `push`'s
    /// growth path (`payload_3_keys` 777 -> 751 instructions).
    ///
    /// The compares are over the `INLINE - 1` slots there can be, a loop of constant length, not
    /// over the entries: in a `.with(..).with(..)` chain the compiler resolves them with the keys
    /// and the length it knows, and keeps the chain in one stack slot. With a loop over the
    /// entries, in a build of several codegen units (the default), every step from the third on
    /// was copied whole (~350 bytes, a `memcpy`) into a slot of its own (issue 15:
    /// `payload_3_keys` 857 -> 777 instructions, one `memcpy` per event instead of two).
    #[inline(always)]
    fn put(&mut self, key: Key, value: Value) {
        if !self.entries.spilled() && self.entries.len() < INLINE {
            let len = self.entries.len();
            let entries = &mut self.entries[..];
            match (0..INLINE - 1).find(|&i| i < len && index::same_key(&entries[i].0, &key)) {
                Some(at) => entries[at].1 = value,
                // `push` does not grow here: inline, with fewer entries than its capacity.
                None => self.entries.push((key, value)),
            }
        } else {
            self.put_slow(key, value);
        }
    }

    /// [`Payload::put`] for a payload that is full inline, spilled or indexed.
    #[inline(never)]
    fn put_slow(&mut self, key: Key, value: Value) {
        match self.find_for_insert(&key) {
            Some(at) => self.entries[at].1 = value,
            None => self.push_new(key, value),
        }
    }

    /// The position of `key`; when absent, a large payload's index already has it at the
    /// position [`Payload::push_new`] gives it next.
    #[inline]
    fn find_for_insert(&mut self, key: &Key) -> Option<usize> {
        match &mut self.index {
            None => self.entries.iter().position(|(k, _)| index::same_key(k, key)),
            Some(index) => {
                let hash = index::hash(key);
                let entries = &self.entries;
                let at = index.find(hash, key, |i| &entries[i].0);
                if at.is_none() {
                    index.push(hash, self.entries.len());
                }
                at
            }
        }
    }

    /// Appends an entry whose key is absent, building the index at [`INDEX_FROM`] entries.
    #[inline]
    fn push_new(&mut self, key: Key, value: Value) {
        self.entries.push((key, value));
        if self.index.is_none() && self.entries.len() >= INDEX_FROM {
            self.index = Some(Box::new(Index::build(self.entries.iter().map(|(k, _)| k))));
        }
    }

    fn position(&self, key: &str) -> Option<usize> {
        match &self.index {
            None => self.entries.iter().position(|(k, _)| index::same_key(k, key)),
            Some(index) => index.find(index::hash(key), key, |i| &self.entries[i].0),
        }
    }

    /// The value of `key`.
    ///
    /// ```
    /// let p = notify_core::Payload::new().with("a", true);
    /// assert!(p.get("a").is_some() && p.get("b").is_none());
    /// ```
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.position(key).map(|at| &self.entries[at].1)
    }

    /// The value of `key`, to change in place.
    ///
    /// ```
    /// let mut p = notify_core::Payload::new().with("rows", 1_u64);
    /// *p.get_mut("rows").unwrap() = 2_u64.into();
    /// assert_eq!(p.get("rows").and_then(|v| v.as_u64()), Some(2));
    /// ```
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Value> {
        self.position(key).map(|at| &mut self.entries[at].1)
    }

    /// True when `key` is present.
    pub fn contains_key(&self, key: &str) -> bool {
        self.position(key).is_some()
    }

    /// Removes `key`, returning its value; later entries keep their order (O(N)).
    ///
    /// ```
    /// let mut p = notify_core::Payload::new().with("a", 1_u64);
    /// assert!(p.remove("a").is_some() && p.is_empty());
    /// ```
    pub fn remove(&mut self, key: &str) -> Option<Value> {
        let at = self.position(key)?;
        let (_, value) = self.entries.remove(at);
        self.index =
            (self.entries.len() >= INDEX_FROM).then(|| Box::new(Index::build(self.entries.iter().map(|(k, _)| k))));
        Some(value)
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
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &Value)> + '_ {
        self.entries.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// The entries in insertion order, with the keys as [`Key`]s (to tell static keys from owned
    /// ones, or to keep a key without copying its text).
    ///
    /// ```
    /// let p = notify_core::Payload::new().with("a", 1_u64);
    /// let (key, _) = p.entries().next().unwrap();
    /// assert_eq!(key.as_static(), Some("a"));
    /// ```
    pub fn entries(&self) -> impl ExactSizeIterator<Item = (&Key, &Value)> + '_ {
        self.entries.iter().map(|(k, v)| (k, v))
    }

    /// The keys in insertion order.
    ///
    /// ```
    /// let p = notify_core::Payload::new().with("a", 1_u64).with("b", 2_u64);
    /// assert_eq!(p.keys().collect::<String>(), "ab");
    /// ```
    pub fn keys(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.entries.iter().map(|(k, _)| k.as_str())
    }
}

/// Payloads are equal when they hold the same entries in the same order.
impl PartialEq for Payload {
    fn eq(&self, other: &Payload) -> bool {
        self.entries == other.entries
    }
}

impl fmt::Debug for Payload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// The entries in insertion order, by value.
///
/// ```
/// let p = notify_core::Payload::new().with("a", 1_u64);
/// let (key, value) = p.into_iter().next().unwrap();
/// assert_eq!((key.as_str(), value.as_u64()), ("a", Some(1)));
/// ```
impl IntoIterator for Payload {
    type Item = (Key, Value);
    type IntoIter = smallvec::IntoIter<[(Key, Value); INLINE]>;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.into_iter()
    }
}

/// Collects `(key, value)` pairs; a repeated key keeps its first position and its last value.
///
/// ```
/// let p: notify_core::Payload = [("a", 1), ("b", 2), ("a", 3)].into_iter().collect();
/// assert_eq!(format!("{p:?}"), r#"{"a": I64(3), "b": I64(2)}"#);
/// ```
impl<K: Into<Key>, V: ToValue> FromIterator<(K, V)> for Payload {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Payload {
        let mut payload = Payload::new();
        payload.extend(iter);
        payload
    }
}

impl<K: Into<Key>, V: ToValue> Extend<(K, V)> for Payload {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, iter: I) {
        for (key, value) in iter {
            self.insert(key, value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn comparisons() -> u64 {
        index::COMPARISONS.with(std::cell::Cell::get)
    }

    /// `fill_from`'s unsafe inline copy: the entries (two owned heap texts among them) arrive
    /// whole and in order and the source is left empty; the texts are still intact after the
    /// source was dropped, and dropping the destination frees each once (a second free of the
    /// same `String` aborts the test binary under glibc's checks).
    #[test]
    fn fill_from_moves_inline_entries_once() {
        let long = "an owned text, longer than the inline capacity of a text".to_owned();
        let other = format!("{long}, and another one");
        let mut from = Payload::new()
            .with("a", 1_u64)
            .with("b", long.clone())
            .with("c", other.clone());
        let mut to = Payload::new();
        to.fill_from(&mut from);
        assert!(from.is_empty());
        drop(from);
        assert_eq!(to.keys().collect::<Vec<_>>(), ["a", "b", "c"]);
        assert_eq!(to.get("b").and_then(Value::as_str), Some(long.as_str()));
        assert_eq!(to.get("c").and_then(Value::as_str), Some(other.as_str()));
        drop(to);

        // Spilled source: swapped.
        let mut from = (0..6_u64).fold(Payload::new(), |p, i| p.with(format!("k{i}"), i));
        let mut to = Payload::new();
        to.fill_from(&mut from);
        assert_eq!(to.len(), 6);
        assert!(from.is_empty());
        // Non-empty destination: swapped, nothing lost.
        let mut from = Payload::new().with("x", 1_u64);
        let mut to = Payload::new().with("y", 2_u64);
        to.fill_from(&mut from);
        assert_eq!(to.keys().collect::<Vec<_>>(), ["x"]);
        assert_eq!(from.keys().collect::<Vec<_>>(), ["y"]);
    }

    #[test]
    fn small_payloads_stay_inline() {
        let p = Payload::new().with("a", 1_u64).with("b", 2_u64).with("c", 3_u64);
        assert!(!p.entries.spilled());
        assert!(p.index.is_none());
    }

    /// `with`'s inline path: each of the three slots it compares replaces in place, the fourth
    /// entry is pushed inline, the fifth spills; a spilled payload with fewer than four entries
    /// (after removals) takes the other path and still replaces and appends.
    #[test]
    fn with_replaces_in_every_inline_slot_and_spills_past_the_fourth() {
        let p = Payload::new().with("a", 1_u64).with("b", 2_u64).with("c", 3_u64);
        let p = p.with("a", 10_u64).with("b", 20_u64).with("c", 30_u64);
        assert_eq!(p.keys().collect::<String>(), "abc");
        let p = p.with("d", 4_u64);
        assert!(!p.entries.spilled());
        let mut p = p.with("d", 40_u64).with("e", 5_u64);
        assert!(p.entries.spilled());
        let values: Vec<_> = p.iter().map(|(_, v)| v.as_u64().unwrap()).collect();
        assert_eq!(values, [10, 20, 30, 40, 5]);
        for key in ["a", "c", "e"] {
            assert!(p.remove(key).is_some());
        }
        let p = p.with("d", 41_u64).with("f", 6_u64);
        assert!(p.entries.spilled());
        let entries: Vec<_> = p.iter().map(|(k, v)| (k, v.as_u64().unwrap())).collect();
        assert_eq!(entries, [("b", 20), ("d", 41), ("f", 6)]);
    }

    #[test]
    fn keys_static_or_owned() {
        let header = String::from("x-request-id");
        let borrowed: &str = &header;
        let p = Payload::new()
            .with("method", "GET")
            .with(&header, 1_u8)
            .with(borrowed.to_owned() + "-2", 2_u8)
            .with(std::sync::Arc::<str>::from("arc"), 3_u8);
        assert_eq!(
            p.keys().collect::<Vec<_>>(),
            ["method", "x-request-id", "x-request-id-2", "arc"]
        );
        assert_eq!(p.get("x-request-id"), Some(&Value::U64(1)));
    }

    #[test]
    fn one_conversion_for_every_listed_type() {
        use std::sync::Arc;
        use std::time::{Duration, SystemTime};
        let owned = String::from("owned");
        let arc: Arc<str> = Arc::from("arc");
        let p = Payload::new()
            .with("i128", i128::MIN)
            .with("u128", u128::MAX)
            .with("small_u128", 5_u128)
            .with("f32", 0.5_f32)
            .with("char", 'c')
            .with("str", "s")
            .with("string_ref", &owned)
            .with("string", owned.clone())
            .with("arc", arc)
            .with("cow", Cow::<str>::Borrowed("cow"))
            .with("none", None::<u64>)
            .with("some", Some(3_u64))
            .with("slice", &[1_i32, 2][..])
            .with("vec", vec!["a", "b"])
            .with("took", Duration::from_millis(2))
            .with("at", SystemTime::UNIX_EPOCH)
            .with("map", Payload::new().with("k", true));
        let v = |k: &str| p.get(k).unwrap().clone();
        assert_eq!(v("i128"), Value::I128(i128::MIN));
        assert_eq!(v("u128"), Value::U128(u128::MAX));
        assert_eq!(v("small_u128"), Value::U64(5));
        assert_eq!(v("f32"), Value::F64(0.5));
        assert_eq!(v("char"), Value::Str("c".into()));
        assert_eq!(v("str"), Value::Str("s".into()));
        assert_eq!(v("string_ref"), Value::Str("owned".into()));
        assert_eq!(v("string"), Value::Str("owned".into()));
        assert_eq!(v("arc"), Value::Str("arc".into()));
        assert_eq!(v("cow"), Value::Str("cow".into()));
        assert_eq!(v("none"), Value::Null);
        assert_eq!(v("some"), Value::U64(3));
        assert_eq!(v("slice"), Value::List(vec![Value::I64(1), Value::I64(2)]));
        assert_eq!(v("vec"), Value::List(vec![Value::from("a"), Value::from("b")]));
        assert_eq!(v("took").as_duration(), Some(Duration::from_millis(2)));
        assert_eq!(v("at").as_time(), Some(SystemTime::UNIX_EPOCH));
        assert_eq!(
            v("map").as_map().and_then(|m| m.get("k")).and_then(Value::as_bool),
            Some(true)
        );
        // The macro's path (`to_value` of a borrow) gives the same values.
        assert_eq!(crate::macro_support::value(&&'c'), v("char"));
        assert_eq!(crate::macro_support::value(&Some(3_u64)), v("some"));
    }

    #[test]
    fn replacing_keeps_the_position_and_removing_the_order() {
        let mut p: Payload = (0..20_u64).map(|i| (format!("k{i}"), i)).collect();
        assert!(p.index.is_some());
        assert_eq!(p.insert("k3", "three"), Some(Value::U64(3)));
        assert_eq!(p.keys().nth(3), Some("k3"));
        assert_eq!(p.remove("k0"), Some(Value::U64(0)));
        assert_eq!(p.keys().next(), Some("k1"));
        assert_eq!(p.get("k19"), Some(&Value::U64(19)));
        for i in 0..6 {
            p.remove(&format!("k{}", i + 10));
        }
        assert!(p.index.is_none(), "13 entries: searched linearly again");
        assert_eq!(p.get("k19"), Some(&Value::U64(19)));
        assert_eq!(p.get("k3"), Some(&Value::from("three")));
        assert_eq!(p.len(), 13);
    }

    /// Issue 16, 9: N distinct keys cost the linear search up to the index (0 + 1 + … + 15 = 120
    /// comparisons) and afterwards only comparisons with keys of the same 64-bit hash: none for
    /// these keys. Quadratic insertion would make 1.25 billion comparisons.
    #[test]
    fn distinct_keys_are_inserted_in_linear_comparisons() {
        const N: usize = 50_000;
        let keys: Vec<String> = (0..N).map(|i| format!("key{i}")).collect();
        let before = comparisons();
        let mut p = Payload::new();
        for (i, key) in keys.iter().enumerate() {
            p.insert(key, i);
        }
        assert_eq!(comparisons() - before, 120);
        assert_eq!(p.len(), N);
        // Each lookup compares exactly one key: its own.
        let before = comparisons();
        for (i, key) in keys.iter().enumerate() {
            assert_eq!(p.get(key), Some(&Value::U64(i as u64)));
        }
        assert_eq!(comparisons() - before, N as u64);
        assert_eq!(p.get("absent"), None);
        // Re-inserting every key replaces in place: one comparison each, no growth.
        let before = comparisons();
        for key in &keys {
            p.insert(key, true);
        }
        assert_eq!((comparisons() - before, p.len()), (N as u64, N));
    }
}
