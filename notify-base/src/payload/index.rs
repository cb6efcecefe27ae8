//! The hash index of a large payload: key → position, so that building a payload of N distinct
//! keys is O(N), not O(N²). Small payloads (fewer than [`INDEX_FROM`] entries) have none and are
//! searched linearly, which is faster at that size and allocates nothing.

use std::hash::{Hash, Hasher};

use rustc_hash::FxHasher;

use super::Key;

/// The entry count from which a payload keeps an index.
pub(crate) const INDEX_FROM: usize = 16;

/// One slot: `pos` is the entry's position + 1 (0: empty); `hash` is the key's full hash, compared
/// before the keys are, so a probe compares text only when the hashes agree.
#[derive(Clone, Copy, Default)]
struct Slot {
    pos: usize,
    hash: u64,
}

/// An open-addressing table (linear probing) of entry positions, at most half full.
#[derive(Clone)]
pub(crate) struct Index {
    slots: Box<[Slot]>,
    len: usize,
}

/// The hash of a key's text.
#[inline]
pub(crate) fn hash(key: &str) -> u64 {
    let mut hasher = FxHasher::default();
    key.hash(&mut hasher);
    hasher.finish()
}

/// Key equality, counted in tests (the payload's complexity tests assert the count).
#[inline]
pub(crate) fn same_key(a: &str, b: &str) -> bool {
    #[cfg(test)]
    COMPARISONS.with(|c| c.set(c.get() + 1));
    a == b
}

#[cfg(test)]
thread_local! {
    /// Key comparisons made by this thread (tests only).
    pub(crate) static COMPARISONS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

impl Index {
    /// An index of `keys` (distinct), positions in iteration order.
    pub(crate) fn build<'a>(keys: impl ExactSizeIterator<Item = &'a Key>) -> Index {
        let mut index = Index {
            slots: vec![Slot::default(); (keys.len() * 2).next_power_of_two().max(32)].into_boxed_slice(),
            len: 0,
        };
        for (pos, key) in keys.enumerate() {
            index.push(hash(key), pos);
        }
        index
    }

    /// The position of `key` (whose hash is `hash`) among `keys`.
    #[inline]
    pub(crate) fn find<'a>(&self, hash: u64, key: &str, key_at: impl Fn(usize) -> &'a str) -> Option<usize> {
        let mask = self.slots.len() - 1;
        let mut i = hash as usize & mask;
        loop {
            let slot = self.slots[i];
            if slot.pos == 0 {
                return None;
            }
            if slot.hash == hash && same_key(key_at(slot.pos - 1), key) {
                return Some(slot.pos - 1);
            }
            i = (i + 1) & mask;
        }
    }

    /// Records a new key (not present yet) at `pos`, growing the table to stay at most half full.
    pub(crate) fn push(&mut self, hash: u64, pos: usize) {
        if (self.len + 1) * 2 > self.slots.len() {
            let grown = vec![Slot::default(); self.slots.len() * 2].into_boxed_slice();
            let old = std::mem::replace(&mut self.slots, grown);
            for slot in old.iter().filter(|s| s.pos != 0) {
                self.place(*slot);
            }
        }
        self.place(Slot { pos: pos + 1, hash });
        self.len += 1;
    }

    fn place(&mut self, slot: Slot) {
        let mask = self.slots.len() - 1;
        let mut i = slot.hash as usize & mask;
        while self.slots[i].pos != 0 {
            i = (i + 1) & mask;
        }
        self.slots[i] = slot;
    }
}
