//! [`NameMap`]: a persistent hash map from event names to values (the registry's exact names to
//! their resolved listeners), built for a lookup as cheap as a flat hash table's and a change that
//! copies only the path to the name it changes.
//!
//! A hash array mapped trie of 16-way branches on the name's FxHash (4 bits per level, so about
//! log16 n levels: 2 for a hundred names, 4 to 5 for a hundred thousand). A lookup hashes the name
//! once and follows one bitmap-indexed slot per level to a leaf; a clone is one `Arc` clone; an
//! insert or remove copies the branches on the path to the name (at most 16 slots each) and shares
//! every other node with the map it came from. Names whose 64-bit hashes are equal share a leaf.
//!
//! Why 16 and not 32 slots: copying a branch increments the reference count of every node it
//! points to, and dropping the old copy decrements them again, each a locked read-modify-write
//! (`perf`: at 100,000 names they were most of a write's time, and a pass of plain loads to bring
//! the counts into the cache first changed nothing). The path of a name through 100,000 holds
//! about 67 such slots with 32-way branches (32 + 32 + 3) and about 50 with 16-way ones; 8-way
//! (about 43) measured no better than 16 (`registry/subscribe_unsubscribe_100000`,
//! docs/benchmarks.md), and every level more is one more step of a lookup that misses the
//! per-thread cache of recent names.

use std::hash::BuildHasher;
use std::sync::Arc;

use rustc_hash::FxBuildHasher;

/// Hash bits used per level (16 slots per branch: see the module doc).
const BITS: u32 = 4;
/// Slots of a branch.
const MASK: u64 = (1 << BITS) - 1;

/// The hash a [`NameMap`] files `name` under: FxHash, as the name filter and the name cache use.
#[inline(always)]
pub(crate) fn name_hash(name: &str) -> u64 {
    FxBuildHasher.hash_one(name)
}

/// A persistent map from names to `V`; see the module doc.
pub(crate) struct NameMap<V> {
    root: Arc<Branch<V>>,
    len: usize,
}

struct Branch<V> {
    /// Bit `i` set: slot index `i` (of 16) is present, at position popcount(bits below `i`).
    bitmap: u16,
    slots: Vec<Slot<V>>,
}

enum Slot<V> {
    Leaf(Arc<Leaf<V>>),
    Branch(Arc<Branch<V>>),
}

/// The names of one hash: almost always one (`name`); names of an equal 64-bit hash after it in
/// `more`.
struct Leaf<V> {
    hash: u64,
    name: Arc<str>,
    value: V,
    more: Vec<(Arc<str>, V)>,
}

impl<V> Clone for NameMap<V> {
    fn clone(&self) -> Self {
        NameMap {
            root: self.root.clone(),
            len: self.len,
        }
    }
}

impl<V: Clone> Clone for Branch<V> {
    /// A copy with room for one more slot: a branch is copied (`Arc::make_mut`) to be changed,
    /// and an insert adds a slot without growing the copy again.
    fn clone(&self) -> Self {
        let mut slots = Vec::with_capacity(self.slots.len() + 1);
        slots.extend(self.slots.iter().cloned());
        Branch {
            bitmap: self.bitmap,
            slots,
        }
    }
}

impl<V> Clone for Slot<V> {
    fn clone(&self) -> Self {
        match self {
            Slot::Leaf(leaf) => Slot::Leaf(leaf.clone()),
            Slot::Branch(branch) => Slot::Branch(branch.clone()),
        }
    }
}

impl<V: Clone> Clone for Leaf<V> {
    fn clone(&self) -> Self {
        Leaf {
            hash: self.hash,
            name: self.name.clone(),
            value: self.value.clone(),
            more: self.more.clone(),
        }
    }
}

impl<V> Default for NameMap<V> {
    fn default() -> Self {
        NameMap {
            root: Arc::new(Branch {
                bitmap: 0,
                slots: Vec::new(),
            }),
            len: 0,
        }
    }
}

impl<V> Leaf<V> {
    fn new(hash: u64, name: Arc<str>, value: V) -> Leaf<V> {
        Leaf {
            hash,
            name,
            value,
            more: Vec::new(),
        }
    }

    /// The position of `name` in `more`.
    #[cold]
    fn find(&self, name: &str) -> Option<usize> {
        self.more.iter().position(|(n, _)| **n == *name)
    }

    /// Calls `f` on every name and value.
    fn each(&self, f: &mut impl FnMut(&Arc<str>, &V)) {
        f(&self.name, &self.value);
        self.more.iter().for_each(|(name, value)| f(name, value));
    }
}

impl<V> Branch<V> {
    /// The position in `slots` of the slot for `hash` at `shift`, if present.
    #[inline(always)]
    fn position(&self, hash: u64, shift: u32) -> Result<usize, usize> {
        let bit = 1_u16 << ((hash >> shift) & MASK);
        let at = (self.bitmap & (bit - 1)).count_ones() as usize;
        match self.bitmap & bit {
            0 => Err(at),
            _ => Ok(at),
        }
    }
}

impl<V: Clone> NameMap<V> {
    /// How many names the map holds.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The value of `name`.
    #[inline(always)]
    pub(crate) fn get(&self, name: &str) -> Option<&V> {
        self.get_hashed(name, name_hash(name))
    }

    /// The value of `name`, whose [`name_hash`] is `hash`.
    #[inline(always)]
    pub(crate) fn get_hashed(&self, name: &str, hash: u64) -> Option<&V> {
        let mut branch: &Branch<V> = &self.root;
        let mut shift = 0;
        loop {
            let at = branch.position(hash, shift).ok()?;
            match &branch.slots[at] {
                Slot::Branch(next) => {
                    branch = next;
                    shift += BITS;
                }
                Slot::Leaf(leaf) if leaf.hash == hash => {
                    if same_name(&leaf.name, name) {
                        return Some(&leaf.value);
                    }
                    return leaf.find(name).map(|at| &leaf.more[at].1);
                }
                Slot::Leaf(_) => return None,
            }
        }
    }

    pub(crate) fn contains_key(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// Sets the value of `name`; returns the value it replaces. Copies the branches on the
    /// path to `name` that are shared with another map.
    pub(crate) fn insert(&mut self, name: Arc<str>, value: V) -> Option<V> {
        let hash = name_hash(&name);
        let old = insert_into(Arc::make_mut(&mut self.root), 0, hash, name, value);
        if old.is_none() {
            self.len += 1;
        }
        old
    }

    /// Removes `name`; returns its value. Copies the branches on the path to `name` that are
    /// shared with another map; a map without `name` is left as it is.
    pub(crate) fn remove(&mut self, name: &str) -> Option<V> {
        let hash = name_hash(name);
        self.get_hashed(name, hash)?;
        let old = remove_from(Arc::make_mut(&mut self.root), 0, hash, name);
        debug_assert!(old.is_some(), "found just before");
        self.len -= 1;
        old
    }

    /// Every name with its value, in no particular order.
    pub(crate) fn for_each(&self, mut f: impl FnMut(&Arc<str>, &V)) {
        fn walk<V>(branch: &Branch<V>, f: &mut impl FnMut(&Arc<str>, &V)) {
            for slot in &branch.slots {
                match slot {
                    Slot::Branch(next) => walk(next, f),
                    Slot::Leaf(leaf) => leaf.each(f),
                }
            }
        }
        walk(&self.root, &mut f);
    }
}

fn insert_into<V: Clone>(branch: &mut Branch<V>, shift: u32, hash: u64, name: Arc<str>, value: V) -> Option<V> {
    let at = match branch.position(hash, shift) {
        Ok(at) => at,
        Err(at) => {
            branch.bitmap |= 1 << ((hash >> shift) & MASK);
            branch
                .slots
                .insert(at, Slot::Leaf(Arc::new(Leaf::new(hash, name, value))));
            return None;
        }
    };
    match &mut branch.slots[at] {
        Slot::Branch(next) => insert_into(Arc::make_mut(next), shift + BITS, hash, name, value),
        Slot::Leaf(leaf) if leaf.hash == hash => {
            let leaf = Arc::make_mut(leaf);
            if *leaf.name == *name {
                return Some(std::mem::replace(&mut leaf.value, value));
            }
            match leaf.find(&name) {
                Some(at) => Some(std::mem::replace(&mut leaf.more[at].1, value)),
                None => {
                    leaf.more.push((name, value));
                    None
                }
            }
        }
        Slot::Leaf(leaf) => {
            // Another hash shares the slot so far: a branch one level down holds both. Two
            // different 64-bit hashes differ at some level before the bits run out (shift < 64).
            let other = leaf.clone();
            let mut split = Branch {
                bitmap: 1 << ((other.hash >> (shift + BITS)) & MASK),
                slots: vec![Slot::Leaf(other)],
            };
            insert_into(&mut split, shift + BITS, hash, name, value);
            branch.slots[at] = Slot::Branch(Arc::new(split));
            None
        }
    }
}

/// Removes `name` (present) under `branch`; a branch left with one leaf becomes that leaf, an
/// empty one goes.
fn remove_from<V: Clone>(branch: &mut Branch<V>, shift: u32, hash: u64, name: &str) -> Option<V> {
    let at = branch.position(hash, shift).ok()?;
    let bit = 1_u16 << ((hash >> shift) & MASK);
    match &mut branch.slots[at] {
        Slot::Branch(next) => {
            let next = Arc::make_mut(next);
            let old = remove_from(next, shift + BITS, hash, name)?;
            match next.slots.len() {
                0 => {
                    branch.slots.remove(at);
                    branch.bitmap &= !bit;
                }
                1 if matches!(next.slots[0], Slot::Leaf(_)) => {
                    let only = next.slots.pop().expect("one slot");
                    branch.slots[at] = only;
                }
                _ => {}
            }
            Some(old)
        }
        Slot::Leaf(leaf) if leaf.hash == hash => {
            if *leaf.name != *name {
                let at = leaf.find(name)?;
                return Some(Arc::make_mut(leaf).more.remove(at).1);
            }
            if !leaf.more.is_empty() {
                // The next name of the hash takes the first place.
                let leaf = Arc::make_mut(leaf);
                let (name, value) = leaf.more.remove(0);
                leaf.name = name;
                return Some(std::mem::replace(&mut leaf.value, value));
            }
            let value = leaf.value.clone();
            branch.slots.remove(at);
            branch.bitmap &= !bit;
            Some(value)
        }
        Slot::Leaf(_) => None,
    }
}

/// `a == b` for the name of a lookup, inline for names of 4 to 32 bytes (most event names: two
/// overlapping word loads per side, no call into libc's `memcmp` through the PLT, which the
/// silenced and listened paths paid on every event); other lengths compare as `==` does.
#[inline(always)]
pub(crate) fn same_name(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let n = a.len();
    if n != b.len() {
        return false;
    }
    match n {
        4..=7 => {
            let w = |s: &[u8], at: usize| u32::from_ne_bytes([s[at], s[at + 1], s[at + 2], s[at + 3]]);
            w(a, 0) == w(b, 0) && w(a, n - 4) == w(b, n - 4)
        }
        8..=16 => {
            let w = |s: &[u8], at: usize| u64::from_ne_bytes(s[at..at + 8].try_into().expect("8 bytes"));
            w(a, 0) == w(b, 0) && w(a, n - 8) == w(b, n - 8)
        }
        17..=32 => {
            let w = |s: &[u8], at: usize| u128::from_ne_bytes(s[at..at + 16].try_into().expect("16 bytes"));
            w(a, 0) == w(b, 0) && w(a, n - 16) == w(b, n - 16)
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustc_hash::FxHashMap;

    #[test]
    fn same_name_is_equality_at_every_length_and_every_differing_byte() {
        for n in 0..=40usize {
            let a: String = (0..n).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
            assert!(same_name(&a, &a.clone()), "len {n}");
            for at in 0..n {
                let mut b = a.clone().into_bytes();
                b[at] = b'.';
                let b = String::from_utf8(b).unwrap();
                assert!(!same_name(&a, &b), "len {n}, byte {at}");
            }
            assert!(!same_name(&a, &format!("{a}x")), "len {n} vs {}", n + 1);
        }
    }

    type Contents = Vec<(String, u32)>;

    fn contents(map: &NameMap<u32>) -> Contents {
        let mut all = Vec::new();
        map.for_each(|name, value| all.push((name.to_string(), *value)));
        all.sort();
        all
    }

    /// Against a `HashMap` model: 20,000 names inserted, replaced and removed in a mixed order,
    /// each step checked, with clones taken along the way that must keep their contents (the
    /// persistence) and branches collapsing as names go.
    #[test]
    fn agrees_with_a_hash_map_and_clones_keep_their_contents() {
        let mut map: NameMap<u32> = NameMap::default();
        let mut model: FxHashMap<String, u32> = FxHashMap::default();
        // Clones taken along the way, each with its contents then.
        let mut kept: Vec<(NameMap<u32>, Contents)> = Vec::new();
        let mut state = 0x2545_f491_u64;
        for step in 0..60_000_u32 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let name = format!("n{}.x", state % 20_000);
            match state % 3 {
                0 => assert_eq!(map.remove(&name), model.remove(&name), "{step}: remove {name}"),
                _ => assert_eq!(map.insert(name.as_str().into(), step), model.insert(name.clone(), step)),
            }
            assert_eq!(map.get(&name), model.get(&name), "{step}: get {name}");
            assert_eq!(map.len(), model.len());
            if step % 10_000 == 0 {
                kept.push((map.clone(), contents(&map)));
            }
        }
        let mut want: Vec<(String, u32)> = model.iter().map(|(k, v)| (k.clone(), *v)).collect();
        want.sort();
        assert_eq!(contents(&map), want);
        for (old, its) in &kept {
            assert_eq!(&contents(old), its, "a clone changed");
        }
        for name in model.keys() {
            assert!(map.remove(name).is_some());
        }
        assert!(map.is_empty());
        assert!(map.root.slots.is_empty(), "every branch went with its names");
    }

    /// Names of equal 64-bit hash (forced here through the internal functions) share a leaf:
    /// each is found, replaced and removed on its own.
    #[test]
    fn names_of_one_hash_share_a_leaf() {
        let mut root: Branch<u32> = Branch {
            bitmap: 0,
            slots: Vec::new(),
        };
        let hash = 0xdead_beef_u64;
        assert_eq!(insert_into(&mut root, 0, hash, "a".into(), 1), None);
        assert_eq!(insert_into(&mut root, 0, hash, "b".into(), 2), None);
        assert_eq!(insert_into(&mut root, 0, hash ^ (1 << 62), "c".into(), 3), None);
        assert_eq!(insert_into(&mut root, 0, hash, "b".into(), 4), Some(2));
        let map = NameMap {
            root: Arc::new(root),
            len: 3,
        };
        assert_eq!(map.get_hashed("a", hash), Some(&1));
        assert_eq!(map.get_hashed("b", hash), Some(&4));
        assert_eq!(map.get_hashed("c", hash ^ (1 << 62)), Some(&3));
        assert_eq!(map.get_hashed("c", hash), None);
        let mut root = Arc::try_unwrap(map.root).ok().expect("one owner");
        assert_eq!(remove_from(&mut root, 0, hash, "a"), Some(1));
        assert_eq!(remove_from(&mut root, 0, hash, "a"), None);
        assert_eq!(remove_from(&mut root, 0, hash, "b"), Some(4));
        assert_eq!(remove_from(&mut root, 0, hash ^ (1 << 62), "c"), Some(3));
        assert!(root.slots.is_empty());
    }
}
