//! Payload keys of imported events.
//!
//! notify-core's payload keys are `&'static str`, so a key that arrives over the network is
//! interned: each distinct key text is leaked once and reused for every later event. Payload keys
//! are a small fixed vocabulary in practice ("sql", "rows", "name"); to keep memory bounded against
//! a sender that invents keys, at most [`MAX_KEYS`] distinct keys are interned, and the values of
//! further new keys are kept under [`OVERFLOW_KEY`] as `"key=value"` text.

use std::collections::HashSet;

use once_cell::sync::Lazy;
use parking_lot::Mutex;

/// The most distinct payload keys an importing process interns.
pub const MAX_KEYS: usize = 4_096;

/// The key under which entries with keys beyond [`MAX_KEYS`] are kept (as `"key=value"` text).
pub const OVERFLOW_KEY: &str = "notify_nats.key_overflow";

static KEYS: Lazy<Mutex<HashSet<&'static str>>> = Lazy::new(|| Mutex::new(HashSet::new()));

/// The interned `&'static str` for `key`, or `None` when [`MAX_KEYS`] distinct keys are interned
/// already and `key` is not one of them.
pub(crate) fn intern(key: &str) -> Option<&'static str> {
    let mut keys = KEYS.lock();
    if let Some(known) = keys.get(key) {
        return Some(known);
    }
    if keys.len() >= MAX_KEYS {
        return None;
    }
    let leaked: &'static str = Box::leak(key.to_owned().into_boxed_str());
    keys.insert(leaked);
    Some(leaked)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interning_returns_one_static_per_text() {
        let a = intern("rows").unwrap();
        let b = intern(&String::from("rows")).unwrap();
        assert!(std::ptr::eq(a, b));
        assert_eq!(a, "rows");
    }
}
