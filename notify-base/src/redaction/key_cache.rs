//! What a redaction policy decided for keys of static text, so that a key is matched against the
//! policy's patterns once, not once per event.
//!
//! Payload keys are nearly always `&'static str` literals (`"sql"`, `"rows"`), the same few per
//! call site. The text at a static address never changes and is never freed, so the pair
//! (address, length) names the text for good, and the policy's answer for it can be kept. The
//! cache is direct-mapped: 64 slots, each one `AtomicU64` packing address, length and answer, so
//! a lookup is one relaxed load and a compare, a miss just matches and stores, and two keys
//! sharing a slot take turns (correct, only slower). Readers never lock; racing writers leave one
//! complete entry or the other, never a mix.

use std::sync::atomic::{AtomicU64, Ordering};

const SLOTS: usize = 64;

/// Addresses up to 2^48 (user space on x86-64 and AArch64) and lengths up to 2^15 − 1 bytes fit;
/// other keys are matched every time.
const ADDRESS_BITS: u32 = 48;
const LENGTH_BITS: u32 = 15;

pub(super) struct KeyCache {
    /// 0: empty; else address << 16 | length << 1 | matched.
    slots: [AtomicU64; SLOTS],
}

impl KeyCache {
    pub(super) fn new() -> KeyCache {
        KeyCache {
            slots: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    /// The policy's answer for `key`, computed by `matches` on a miss.
    #[inline]
    pub(super) fn get_or_match(&self, key: &'static str, matches: impl FnOnce(&str) -> bool) -> bool {
        let Some((slot, tag)) = locate(key) else {
            return matches(key);
        };
        let entry = self.slots[slot].load(Ordering::Relaxed);
        if entry & !1 == tag {
            return entry & 1 == 1;
        }
        let matched = matches(key);
        self.slots[slot].store(tag | u64::from(matched), Ordering::Relaxed);
        matched
    }
}

/// The slot of `key` and its entry without the answer bit; `None` when it cannot be packed.
#[inline]
fn locate(key: &'static str) -> Option<(usize, u64)> {
    let address = key.as_ptr() as usize as u64;
    let length = key.len() as u64;
    if address >> ADDRESS_BITS != 0 || length >> LENGTH_BITS != 0 {
        return None;
    }
    // Fibonacci hashing of the address: the top 6 bits of the product pick one of 64 slots.
    let slot = (address.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - SLOTS.trailing_zeros())) as usize;
    // A reference is never null, so a packed entry is never 0 (the empty slot).
    Some((slot, address << 16 | length << 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_remembered_per_static_key_and_match_runs_once() {
        let cache = KeyCache::new();
        let mut runs = 0;
        for _ in 0..3 {
            assert!(cache.get_or_match("password", |k| {
                runs += 1;
                k == "password"
            }));
        }
        assert_eq!(runs, 1);
        assert!(!cache.get_or_match("sql", |k| k == "password"));
        assert!(!cache.get_or_match("sql", |_| unreachable!("remembered")));
        // The same text at another address is another key: matched again, same answer.
        let leaked: &'static str = Box::leak(String::from("password").into_boxed_str());
        let mut again = false;
        assert!(cache.get_or_match(leaked, |k| {
            again = true;
            k == "password"
        }));
        assert!(again);
    }

    #[test]
    fn a_prefix_of_a_key_is_a_different_key() {
        let cache = KeyCache::new();
        let long: &'static str = "password_hint";
        let short = &long[..8]; // "password", same address, other length
        assert!(!cache.get_or_match(long, |k| k == "password"));
        assert!(cache.get_or_match(short, |k| k == "password"));
        // Same address, same slot: `short` replaced `long`'s entry, which is matched again.
        assert!(!cache.get_or_match(long, |k| k == "password"));
        assert!(cache.get_or_match(short, |k| k == "password"));
    }

    #[test]
    fn keys_sharing_a_slot_take_turns_and_stay_correct() {
        let cache = KeyCache::new();
        let keys: Vec<&'static str> = (0..500)
            .map(|i| &*Box::leak(format!("key{i}").into_boxed_str()))
            .collect();
        for _ in 0..2 {
            for (i, key) in keys.iter().enumerate() {
                assert_eq!(cache.get_or_match(key, |k| k.ends_with('7')), i % 10 == 7, "{key}");
            }
        }
    }

    #[test]
    fn concurrent_lookups_agree_with_the_matcher() {
        let cache = KeyCache::new();
        let keys: Vec<&'static str> = (0..200)
            .map(|i| &*Box::leak(format!("k{i}").into_boxed_str()))
            .collect();
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..50 {
                        for key in &keys {
                            let expected = key.len() % 2 == 0;
                            assert_eq!(cache.get_or_match(key, |k| k.len() % 2 == 0), expected);
                        }
                    }
                });
            }
        });
    }
}
