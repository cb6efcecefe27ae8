//! [`NameMap`]: a persistent hash map from event names to values (the registry's exact names to
//! their resolved listeners), built for a lookup as cheap as a flat hash table's and a change that
//! copies only the path to the name it changes, touching no other node.
//!
//! A hash array mapped trie of 16-way branches on the name's FxHash (4 bits per level, so about
//! log16 n levels: 2 for a hundred names, 4 to 5 for a hundred thousand). A lookup hashes the name
//! once and follows one bitmap-indexed slot per level to a leaf. Names whose 64-bit hashes are
//! equal share a leaf.
//!
//! # Versions, and who frees a node
//!
//! The registry clones the current snapshot's map, changes the clone and publishes it, while
//! readers may still use the old one. A clone is a **fork**: it shares every node, and a change of
//! the fork copies the nodes on the path to the name it changes (the *replaced* nodes stay as they
//! are, for the versions that still reach them). Nodes hold no reference counts: copying a branch
//! copies its slots as plain pointers. (With `Arc` children, every copy incremented the count of
//! each of a branch's up to 16 children and the old copy's drop decremented them again, each a
//! locked read-modify-write; `perf` found those most of a write's time at 100,000 names.)
//!
//! Instead a map's versions form one line, oldest to newest: only the newest version of a family
//! is forked (a second fork of one version, or a change to a version already forked, first copies
//! the whole map into a new family: correct, and O(n), which the registry never does). Version `k`
//! holds an [`Epoch`] `E(k)`, made by the fork that made `k`, and each epoch holds the next one
//! (`E(k-1)` → `E(k)`), so `E(k)` lives exactly as long as some version `≤ k` does. Two things
//! are left in `E(k)`, and freed with it:
//!
//! * the nodes that version `k + 1` replaces: only versions `≤ k` could reach them. Version
//!   `k + 1` reaches `E(k)` through a `Weak` reference, upgraded for the length of each change
//!   (when `E(k)` is gone already, nobody can reach them and they are freed at once);
//! * version `k`'s whole tree, when `k` is dropped without having been forked.
//!
//! So a value removed by a change is dropped as soon as the versions before the change are gone
//! (for the registry: when the writer drops the snapshot it replaced, outside its lock, unless a
//! reader still uses it), not later. A node a version made and then replaced itself (two changes
//! before a fork) was never reachable from another version, and is freed at the end of the change
//! (never in its middle: a value's drop may panic, and the tree is whole again first): each node
//! records the **generation** of the version that made it. A value whose drop panics does not stop
//! the others of its garbage from being dropped (the panic then goes on to the caller, as
//! `Arc`'s would).
//!
//! **Why each node is freed exactly once.** In one version a node has at most one parent (a trie,
//! not a graph: a split or a collapse moves a pointer, it does not copy it). A node leaves a
//! family's line at most once: when the newest version replaces it (into the epoch before that
//! version, or freed at once when that version made it or nothing before it is left), or at the
//! end, in the tree of the last version. Forks never free anything.

use std::cell::UnsafeCell;
use std::hash::BuildHasher;
use std::mem;
use std::ptr::{self, NonNull};
use std::sync::atomic::{fence, AtomicBool, AtomicPtr, Ordering};
use std::sync::{Arc, Weak};

use rustc_hash::FxBuildHasher;
use smallvec::SmallVec;

/// Hash bits used per level (16 slots per branch).
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
    root: NonNull<Branch<V>>,
    len: usize,
    /// This version's generation: the nodes it made carry it (they are its own until it is
    /// forked). 32 bits: the fork that would wrap it copies the map into a new family instead.
    generation: u32,
    /// Set by the one fork of this version (after which it is never changed again in place).
    forked: AtomicBool,
    /// `E(k)` of the module doc: where the next version leaves the nodes it replaces, and this one
    /// its tree when dropped unforked; it holds the line of the epochs after it.
    epoch: Arc<Epoch<V>>,
    /// `E(k-1)`, where this version leaves the nodes it replaces (none for a family's first).
    older: Weak<Epoch<V>>,
    /// `older`, held through a change ([`NameMap::change`]); `None` there when it is gone.
    holding: Option<Arc<Epoch<V>>>,
    /// Nodes that nothing else reaches, unlinked by the change in progress: freed at its end,
    /// once the tree is whole again (a value's drop may panic).
    free_now: Vec<Node<V>>,
}

// SAFETY: a map owns, with the other versions of its family, the nodes it reaches, which hold
// `Arc<str>`s and `V`s and nothing tied to a thread. Sharing a map shares `&V` (hence `V: Sync`);
// its nodes may be freed, and their `V`s dropped, by whichever thread drops the last version that
// reaches them (hence `V: Send`). Nothing in a node changes once another version or thread can
// reach it (a change copies the node first, `NameMap::own_branch`).
unsafe impl<V: Send + Sync> Send for NameMap<V> {}
// SAFETY: as for `Send`; `&NameMap` allows lookups and forks only (the `forked` flag is atomic).
unsafe impl<V: Send + Sync> Sync for NameMap<V> {}

struct Branch<V> {
    generation: u32,
    /// Bit `i` set: slot index `i` (of 16) is present, at position popcount(bits below `i`).
    bitmap: u16,
    slots: Vec<Node<V>>,
}

/// The names of one hash: almost always one (`name`); names of an equal 64-bit hash after it in
/// `more`.
struct Leaf<V> {
    generation: u32,
    hash: u64,
    name: Arc<str>,
    value: V,
    more: Vec<(Arc<str>, V)>,
}

/// A pointer to a node, owned by the family (see the module doc); copying it copies the pointer.
enum Node<V> {
    Leaf(NonNull<Leaf<V>>),
    Branch(NonNull<Branch<V>>),
}

impl<V> Clone for Node<V> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<V> Copy for Node<V> {}

/// One link of a family's line of epochs (see the module doc): what the next version replaced (or
/// the tree of the version holding it, dropped unforked), and the next epoch.
struct Epoch<V> {
    /// Changed by one version at a time, and then only while it holds a strong reference: the next
    /// version (`NameMap::retire`, through `&mut` of it), or, only if there is no next
    /// version, the one that holds this epoch (its drop). Read only by this epoch's drop, after
    /// every strong reference is gone (`Arc`'s release and acquire order the accesses).
    garbage: UnsafeCell<Garbage<V>>,
    /// The next epoch (from `Arc::into_raw`), null until this version's fork links it.
    newer: AtomicPtr<Epoch<V>>,
}

// SAFETY: `garbage` is accessed by one version at a time, then by the drop (see the field);
// `newer` is atomic. What the garbage holds may be freed on the thread that drops the epoch, hence
// the bounds of `NameMap`'s impls.
unsafe impl<V: Send + Sync> Send for Epoch<V> {}
// SAFETY: as for `Send`: a shared `&Epoch` reads or writes nothing but `newer`, atomically.
unsafe impl<V: Send + Sync> Sync for Epoch<V> {}

impl<V> Default for Epoch<V> {
    fn default() -> Self {
        Epoch {
            garbage: UnsafeCell::new(Garbage {
                nodes: SmallVec::new(),
                tree: None,
            }),
            newer: AtomicPtr::new(ptr::null_mut()),
        }
    }
}

impl<V> Epoch<V> {
    /// The next epoch, unlinked (only the drop calls this, holding the epoch alone).
    fn take_newer(&mut self) -> Option<Arc<Epoch<V>>> {
        let newer = mem::replace(self.newer.get_mut(), ptr::null_mut());
        // SAFETY: a non-null `newer` is the `Arc::into_raw` of the fork's link, taken once here.
        (!newer.is_null()).then(|| unsafe { Arc::from_raw(newer) })
    }
}

impl<V> Drop for Epoch<V> {
    /// Drops the line of epochs after this one that nothing else holds, in a loop (a reader that
    /// kept an old version through many changes leaves a long line: no recursion per epoch). Each
    /// epoch's garbage is freed with it.
    fn drop(&mut self) {
        let mut newer = self.take_newer();
        while let Some(epoch) = newer.take() {
            if let Some(mut epoch) = Arc::into_inner(epoch) {
                // The next link is a local of this frame before `epoch` (and its garbage) drops:
                // if a value's drop panics there, the rest of the line still goes while unwinding.
                newer = epoch.take_newer();
                drop(epoch);
            }
        }
    }
}

/// What a version leaves in its epoch: the nodes it replaced, and its whole tree if it was
/// dropped without being forked. Freed when dropped, with the epoch.
struct Garbage<V> {
    /// Inline for the path of one change (a branch per level and a leaf).
    nodes: SmallVec<[Node<V>; 8]>,
    tree: Option<NonNull<Branch<V>>>,
}

impl<V> Drop for Garbage<V> {
    /// Frees the nodes. A value whose drop panics does not keep the others from being dropped
    /// (as the drop glue of a `Vec` goes on after a panicking element); the panic then goes on.
    fn drop(&mut self) {
        // SAFETY: garbage is dropped with its epoch `E(k)`, after every version that could reach
        // its nodes is gone (module doc); each node is in the garbage of one version only, and a
        // tree holds none of the nodes that a later version replaced.
        unsafe {
            free_each(&self.nodes);
            if let Some(root) = self.tree.take() {
                let mut all = Vec::new();
                Node::Branch(root).collect_tree(&mut all);
                free_each(&all);
            }
        }
    }
}

/// Frees each of `nodes` in order; when one panics (a value's drop), those after it are freed
/// while the panic unwinds.
///
/// # Safety
/// As for [`Node::free`], for each of `nodes`.
unsafe fn free_each<V>(nodes: &[Node<V>]) {
    /// The nodes after the one being freed, freed only if that one panics.
    struct Rest<'a, V>(&'a [Node<V>]);
    impl<V> Drop for Rest<'_, V> {
        fn drop(&mut self) {
            // SAFETY: `free_each`'s caller's, for these nodes, not freed yet.
            unsafe { free_each(self.0) }
        }
    }
    for (at, node) in nodes.iter().enumerate() {
        let rest = Rest(&nodes[at + 1..]);
        // SAFETY: the caller's.
        unsafe { node.free() };
        mem::forget(rest);
    }
}

impl<V> Node<V> {
    /// Frees this node only (a branch's slots are not followed).
    ///
    /// # Safety
    /// Nothing reaches the node any more, and it is freed once.
    unsafe fn free(self) {
        // SAFETY: the caller's; nodes are made by `Box::leak` (`alloc`).
        unsafe {
            match self {
                Node::Leaf(leaf) => drop(Box::from_raw(leaf.as_ptr())),
                Node::Branch(branch) => drop(Box::from_raw(branch.as_ptr())),
            }
        }
    }

    /// This node and every node under it, pushed onto `all` (children first).
    ///
    /// # Safety
    /// The subtree is alive.
    unsafe fn collect_tree(self, all: &mut Vec<Node<V>>) {
        if let Node::Branch(branch) = self {
            // SAFETY: the caller's.
            for &slot in unsafe { &(*branch.as_ptr()).slots } {
                // SAFETY: the caller's, for the child.
                unsafe { slot.collect_tree(all) };
            }
        }
        all.push(self);
    }
}

#[cfg(test)]
thread_local! {
    /// Whole-map copies made on this thread (`NameMap::deep_copy`): the registry's writes must
    /// make none (`fanout.rs`'s tests check it), or each would cost O(n).
    pub(crate) static DEEP_COPIES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// A new node, owned by the family from here on.
fn alloc<T>(node: T) -> NonNull<T> {
    NonNull::from(Box::leak(Box::new(node)))
}

impl<V> Default for NameMap<V> {
    fn default() -> Self {
        let root = alloc(Branch {
            generation: 0,
            bitmap: 0,
            slots: Vec::new(),
        });
        NameMap::first_of_family(root, 0)
    }
}

impl<V> Drop for NameMap<V> {
    /// Leaves this version's tree in its epoch, unless a fork took it over (the nodes it replaced
    /// went to the epoch before at each change).
    fn drop(&mut self) {
        if !self.free_now.is_empty() {
            // Left only by a change that panicked: unlinked, reached by nothing.
            drop(self.take_unlinked());
        }
        if !*self.forked.get_mut() {
            // SAFETY: with no next version, this one alone changes its epoch's garbage
            // (`Epoch::garbage`), holding it.
            unsafe { (*self.epoch.garbage.get()).tree = Some(self.root) };
        }
    }
}

impl<V: Clone> Clone for NameMap<V> {
    /// A fork: the next version, sharing every node (no node is touched). Forking a version that
    /// was forked already copies the whole map into a new family instead (O(n); see the module
    /// doc).
    fn clone(&self) -> Self {
        // Relaxed: the flag only decides which fork is the first (read-modify-writes of one atomic
        // are totally ordered); the tree is already visible to whoever holds `&self`.
        if self.forked.swap(true, Ordering::Relaxed) {
            return self.deep_copy();
        }
        let Some(generation) = self.generation.checked_add(1) else {
            return self.deep_copy();
        };
        let epoch = Arc::new(Epoch::default());
        // Release: nothing needs it (the link is read by the epoch's drop, ordered by `Arc`), but
        // it costs nothing on x86-64 and keeps the argument local. The first fork is the only one
        // here, so the link was null.
        let link = Arc::into_raw(epoch.clone()).cast_mut();
        self.epoch.newer.store(link, Ordering::Release);
        NameMap {
            root: self.root,
            len: self.len,
            generation,
            forked: AtomicBool::new(false),
            epoch,
            older: Arc::downgrade(&self.epoch),
            holding: None,
            free_now: Vec::new(),
        }
    }
}

impl<V> Leaf<V> {
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

impl<V> NameMap<V> {
    /// The first version of a new family over `root` (generation 0, made by no fork), holding
    /// `len` names: a new map, or a whole copy.
    fn first_of_family(root: NonNull<Branch<V>>, len: usize) -> NameMap<V> {
        NameMap {
            root,
            len,
            generation: 0,
            forked: AtomicBool::new(false),
            epoch: Arc::default(),
            older: Weak::new(),
            holding: None,
            free_now: Vec::new(),
        }
    }

    /// The nodes a change unlinked that nothing reaches (`free_now`), as garbage to drop.
    fn take_unlinked(&mut self) -> Garbage<V> {
        Garbage {
            nodes: SmallVec::from_vec(mem::take(&mut self.free_now)),
            tree: None,
        }
    }

    /// The branch at `at`, reached from this version's root.
    #[inline(always)]
    fn branch(&self, at: NonNull<Branch<V>>) -> &Branch<V> {
        // SAFETY: a node that a live version reaches is freed only after every version that can
        // reach it is gone (module doc), and nothing in it changes while another version or
        // thread can reach it; `&self` keeps this version alive for the borrow.
        unsafe { at.as_ref() }
    }

    /// The leaf at `at`, reached from this version's root.
    #[inline(always)]
    fn leaf(&self, at: NonNull<Leaf<V>>) -> &Leaf<V> {
        // SAFETY: as for `branch`.
        unsafe { at.as_ref() }
    }

    /// A node of an earlier version that this one no longer reaches (only during a change,
    /// [`NameMap::change`]): left in `E(k-1)`, or freed at the end of the change if that is gone.
    /// Never freed here: the caller links the node's copy after this.
    fn retire(&mut self, node: Node<V>) {
        match &self.holding {
            // SAFETY: this version, the next one of the version that holds `older`, alone changes
            // its garbage (`Epoch::garbage`), holding it; `&mut self` excludes any other use.
            Some(older) => unsafe { (*older.garbage.get()).nodes.push(node) },
            // `E(k-1)` is gone, and so is every version before this one: nothing else reaches
            // the node (`change` ordered their last reads before this).
            None => self.free_now.push(node),
        }
    }

    /// Runs `change` holding `E(k-1)`, where the nodes it replaces go (one upgrade of the weak
    /// reference per change, not per node), then frees what it unlinked that nothing reaches.
    /// Every change of the tree goes through here.
    fn change<R>(&mut self, change: impl FnOnce(&mut Self) -> R) -> R {
        self.holding = self.older.upgrade();
        if self.holding.is_none() {
            // A failed upgrade reads the count with `Relaxed`; this pairs with the `Release`
            // decrements of the threads that dropped the versions before, as `Arc`'s drop does,
            // so their reads of the nodes freed below come before the frees.
            fence(Ordering::Acquire);
        }
        let result = change(self);
        if self.free_now.is_empty() {
            // (The common case, without the frame below.) If that was the last reference, the
            // garbage of the versions before goes now.
            drop(self.holding.take());
            return result;
        }
        // Taken out before anything is dropped: a value's drop may panic in either, and then
        // the other still goes while unwinding (`free_now` first, as `Garbage`).
        let unlinked = self.take_unlinked();
        let held = self.holding.take();
        // If that was the last reference, the garbage of the versions before goes now.
        drop(held);
        drop(unlinked);
        result
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
        let mut branch = self.branch(self.root);
        let mut shift = 0;
        loop {
            let at = branch.position(hash, shift).ok()?;
            match branch.slots[at] {
                Node::Branch(next) => {
                    branch = self.branch(next);
                    shift += BITS;
                }
                Node::Leaf(leaf) => {
                    let leaf = self.leaf(leaf);
                    if leaf.hash != hash {
                        return None;
                    }
                    if same_name(&leaf.name, name) {
                        return Some(&leaf.value);
                    }
                    return leaf.find(name).map(|at| &leaf.more[at].1);
                }
            }
        }
    }

    pub(crate) fn contains_key(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// Every name with its value, in no particular order.
    pub(crate) fn for_each(&self, mut f: impl FnMut(&Arc<str>, &V)) {
        fn walk<V>(map: &NameMap<V>, branch: &Branch<V>, f: &mut impl FnMut(&Arc<str>, &V)) {
            for &slot in &branch.slots {
                match slot {
                    Node::Branch(next) => walk(map, map.branch(next), f),
                    Node::Leaf(leaf) => map.leaf(leaf).each(f),
                }
            }
        }
        walk(self, self.branch(self.root), &mut f);
    }

    /// Sets the value of `name`; returns the value it replaces. Copies the nodes on the path to
    /// `name` that this version did not make.
    pub(crate) fn insert(&mut self, name: Arc<str>, value: V) -> Option<V> {
        let hash = name_hash(&name);
        self.insert_hashed(hash, name, value)
    }

    /// Removes `name`; returns its value. Copies the nodes on the path to `name` that this version
    /// did not make; a map without `name` is left as it is.
    pub(crate) fn remove(&mut self, name: &str) -> Option<V> {
        let hash = name_hash(name);
        self.remove_hashed(hash, name)
    }

    /// [`NameMap::insert`] of a name whose hash is `hash`.
    fn insert_hashed(&mut self, hash: u64, name: Arc<str>, value: V) -> Option<V> {
        self.make_changeable();
        self.change(|map| map.insert_path(hash, name, value))
    }

    /// The change of [`NameMap::insert_hashed`], before the hand-over.
    fn insert_path(&mut self, hash: u64, name: Arc<str>, value: V) -> Option<V> {
        self.root = self.own_branch(self.root);
        let mut branch = self.root;
        let mut shift = 0;
        loop {
            // SAFETY: `branch` is this version's own (`own_branch`, or the split made below):
            // nothing else reaches it, and `&mut self` excludes every other use of this version.
            let here = unsafe { &mut *branch.as_ptr() };
            let at = match here.position(hash, shift) {
                Ok(at) => at,
                Err(at) => {
                    here.bitmap |= 1 << ((hash >> shift) & MASK);
                    let leaf = self.new_leaf(hash, name, value);
                    here.slots.insert(at, Node::Leaf(leaf));
                    self.len += 1;
                    return None;
                }
            };
            match here.slots[at] {
                Node::Branch(next) => {
                    let next = self.own_branch(next);
                    here.slots[at] = Node::Branch(next);
                    branch = next;
                    shift += BITS;
                }
                Node::Leaf(leaf) if self.leaf(leaf).hash == hash => {
                    let leaf = self.own_leaf(leaf);
                    here.slots[at] = Node::Leaf(leaf);
                    // SAFETY: as for `here` (`own_leaf`).
                    let leaf = unsafe { &mut *leaf.as_ptr() };
                    if *leaf.name == *name {
                        return Some(mem::replace(&mut leaf.value, value));
                    }
                    if let Some(at) = leaf.find(&name) {
                        return Some(mem::replace(&mut leaf.more[at].1, value));
                    }
                    leaf.more.push((name, value));
                    self.len += 1;
                    return None;
                }
                Node::Leaf(other) => {
                    // Another hash shares the slot so far: a branch one level down holds both
                    // (the other leaf moves into it, shared as it is). Two different 64-bit
                    // hashes differ at some level before the bits run out (shift < 64).
                    let bit = 1 << ((self.leaf(other).hash >> (shift + BITS)) & MASK);
                    let split = alloc(Branch {
                        generation: self.generation,
                        bitmap: bit,
                        slots: vec![Node::Leaf(other)],
                    });
                    here.slots[at] = Node::Branch(split);
                    branch = split;
                    shift += BITS;
                }
            }
        }
    }

    /// [`NameMap::remove`] of a name whose hash is `hash`.
    fn remove_hashed(&mut self, hash: u64, name: &str) -> Option<V> {
        self.get_hashed(name, hash)?;
        self.make_changeable();
        // Counted out first (the name is there): the change may end in a value's panicking drop.
        self.len -= 1;
        let old = self.change(|map| {
            map.root = map.own_branch(map.root);
            map.remove_from(map.root, 0, hash, name)
        });
        debug_assert!(old.is_some(), "found just before");
        old
    }

    /// Removes `name` (present) under `branch`, this version's own; a branch left with one leaf
    /// becomes that leaf, an empty one goes.
    fn remove_from(&mut self, branch: NonNull<Branch<V>>, shift: u32, hash: u64, name: &str) -> Option<V> {
        // SAFETY: as in `insert_hashed`: the caller made `branch` this version's own.
        let here = unsafe { &mut *branch.as_ptr() };
        let at = here.position(hash, shift).ok()?;
        let bit = 1_u16 << ((hash >> shift) & MASK);
        match here.slots[at] {
            Node::Branch(next) => {
                let next = self.own_branch(next);
                here.slots[at] = Node::Branch(next);
                let old = self.remove_from(next, shift + BITS, hash, name)?;
                // SAFETY: `next` is this version's own (`own_branch`).
                let below = unsafe { &mut *next.as_ptr() };
                match below.slots[..] {
                    [] => {
                        here.slots.remove(at);
                        here.bitmap &= !bit;
                        self.discard(Node::Branch(next));
                    }
                    [only @ Node::Leaf(_)] => {
                        here.slots[at] = only;
                        self.discard(Node::Branch(next));
                    }
                    _ => {}
                }
                Some(old)
            }
            Node::Leaf(leaf) if self.leaf(leaf).hash == hash => {
                let found = self.leaf(leaf);
                if *found.name != *name {
                    let at_more = found.find(name)?;
                    let leaf = self.own_leaf(leaf);
                    here.slots[at] = Node::Leaf(leaf);
                    // SAFETY: as for `here` (`own_leaf`).
                    return Some(unsafe { &mut *leaf.as_ptr() }.more.remove(at_more).1);
                }
                if !found.more.is_empty() {
                    // The next name of the hash takes the first place.
                    let leaf = self.own_leaf(leaf);
                    here.slots[at] = Node::Leaf(leaf);
                    // SAFETY: as for `here` (`own_leaf`).
                    let leaf = unsafe { &mut *leaf.as_ptr() };
                    let (name, value) = leaf.more.remove(0);
                    leaf.name = name;
                    return Some(mem::replace(&mut leaf.value, value));
                }
                here.slots.remove(at);
                here.bitmap &= !bit;
                let value = self.leaf(leaf).value.clone();
                self.discard(Node::Leaf(leaf));
                Some(value)
            }
            Node::Leaf(_) => None,
        }
    }

    /// Before a change: a version already forked is never changed in place (its fork shares its
    /// nodes as they are), so it becomes a copy in a new family first (O(n); see the module doc).
    fn make_changeable(&mut self) {
        if *self.forked.get_mut() {
            *self = self.deep_copy();
        }
    }

    /// True when this version made the node of `generation` (and, not forked, is the only one
    /// that reaches it).
    fn owns(&self, generation: u32) -> bool {
        debug_assert!(!self.forked.load(Ordering::Relaxed), "a forked version is not changed");
        generation == self.generation
    }

    /// The branch at `at`, made this version's own: itself when this version made it, else a copy
    /// (with room for one more slot), the original replaced.
    fn own_branch(&mut self, at: NonNull<Branch<V>>) -> NonNull<Branch<V>> {
        let branch = self.branch(at);
        if self.owns(branch.generation) {
            return at;
        }
        let mut slots = Vec::with_capacity(branch.slots.len() + 1);
        slots.extend_from_slice(&branch.slots);
        let copy = alloc(Branch {
            generation: self.generation,
            bitmap: branch.bitmap,
            slots,
        });
        self.retire(Node::Branch(at));
        copy
    }

    /// The leaf at `at`, made this version's own (as [`NameMap::own_branch`]).
    fn own_leaf(&mut self, at: NonNull<Leaf<V>>) -> NonNull<Leaf<V>> {
        let leaf = self.leaf(at);
        if self.owns(leaf.generation) {
            return at;
        }
        let copy = alloc(Leaf {
            generation: self.generation,
            hash: leaf.hash,
            name: leaf.name.clone(),
            value: leaf.value.clone(),
            more: leaf.more.clone(),
        });
        self.retire(Node::Leaf(at));
        copy
    }

    fn new_leaf(&self, hash: u64, name: Arc<str>, value: V) -> NonNull<Leaf<V>> {
        alloc(Leaf {
            generation: self.generation,
            hash,
            name,
            value,
            more: Vec::new(),
        })
    }

    /// A node this version no longer reaches: freed at the end of the change when this version
    /// made it (nothing else ever reached it), else replaced.
    fn discard(&mut self, node: Node<V>) {
        let generation = match node {
            Node::Leaf(leaf) => self.leaf(leaf).generation,
            Node::Branch(branch) => self.branch(branch).generation,
        };
        if self.owns(generation) {
            // This version made it and was not forked since (`owns`), so no other version
            // reaches it, and this version just unlinked it: freed at the end of the change.
            self.free_now.push(node);
        } else {
            self.retire(node);
        }
    }

    /// A copy of this version in a new family of its own (every node new).
    fn deep_copy(&self) -> NameMap<V> {
        #[cfg(test)]
        DEEP_COPIES.with(|n| n.set(n.get() + 1));
        fn copy<V: Clone>(map: &NameMap<V>, branch: &Branch<V>) -> NonNull<Branch<V>> {
            let slots = branch
                .slots
                .iter()
                .map(|&slot| match slot {
                    Node::Branch(next) => Node::Branch(copy(map, map.branch(next))),
                    Node::Leaf(leaf) => {
                        let leaf = map.leaf(leaf);
                        Node::Leaf(alloc(Leaf {
                            generation: 0,
                            hash: leaf.hash,
                            name: leaf.name.clone(),
                            value: leaf.value.clone(),
                            more: leaf.more.clone(),
                        }))
                    }
                })
                .collect();
            alloc(Branch {
                generation: 0,
                bitmap: branch.bitmap,
                slots,
            })
        }
        NameMap::first_of_family(copy(self, self.branch(self.root)), self.len)
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
    use std::panic::{catch_unwind, AssertUnwindSafe};

    /// Fewer steps under Miri, which checks every node access of these tests for use after free,
    /// double frees and leaks (`cargo +nightly miri test -p notify-base --lib name_map`).
    const SCALE: u32 = if cfg!(miri) { 50 } else { 1 };

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

    fn xorshift(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    /// Against a `HashMap` model: 20,000 names inserted, replaced and removed in a mixed order,
    /// each step checked, as the registry does it (each step a fork of the newest version), with
    /// old versions kept along the way that must keep their contents (the persistence) and
    /// branches collapsing as names go.
    #[test]
    fn agrees_with_a_hash_map_and_old_versions_keep_their_contents() {
        let names = 20_000 / SCALE as u64;
        let mut map: NameMap<u32> = NameMap::default();
        let mut model: FxHashMap<String, u32> = FxHashMap::default();
        // Versions kept along the way, each with its contents then.
        let mut kept: Vec<(NameMap<u32>, Contents)> = Vec::new();
        let mut state = 0x2545_f491_u64;
        for step in 0..60_000 / SCALE {
            let next = map.clone();
            let old = mem::replace(&mut map, next);
            if step % (10_000 / SCALE) == 0 {
                let its = contents(&old);
                kept.push((old, its));
            }
            let r = xorshift(&mut state);
            let name = format!("n{}.x", r % names);
            match r % 3 {
                0 => assert_eq!(map.remove(&name), model.remove(&name), "{step}: remove {name}"),
                _ => assert_eq!(map.insert(name.as_str().into(), step), model.insert(name.clone(), step)),
            }
            assert_eq!(map.get(&name), model.get(&name), "{step}: get {name}");
            assert_eq!(map.len(), model.len());
        }
        let mut want: Vec<(String, u32)> = model.iter().map(|(k, v)| (k.clone(), *v)).collect();
        want.sort();
        assert_eq!(contents(&map), want);
        for (old, its) in &kept {
            assert_eq!(&contents(old), its, "an old version changed");
        }
        for name in model.keys() {
            assert!(map.remove(name).is_some());
        }
        assert!(map.is_empty());
        assert!(
            map.branch(map.root).slots.is_empty(),
            "every branch went with its names"
        );
    }

    /// Many changes to one version before a fork (as one registry write with several names)
    /// change it in place, and a version changed after it was forked is copied first: the fork
    /// keeps its contents either way.
    #[test]
    fn changes_before_a_fork_are_in_place_and_a_forked_version_is_copied() {
        let mut map: NameMap<u32> = NameMap::default();
        map.insert("seed".into(), 0);
        let next = map.clone();
        let first = mem::replace(&mut map, next);
        for i in 0..2_000 / SCALE {
            map.insert(format!("a{i}").into(), i);
        }
        // SAFETY: a test's look at the garbage the second version left for the first, changed by
        // nothing else now.
        let replaced = unsafe { (*first.epoch.garbage.get()).nodes.len() };
        assert_eq!(
            replaced, 1,
            "the first version's root only: the other copies were the second's own"
        );
        drop(first);
        let fork = map.clone();
        let before = contents(&fork);
        map.insert("b".into(), 7);
        assert_eq!(map.generation, 0, "a new family");
        assert_eq!(contents(&fork), before, "the fork is untouched");
        assert_eq!(map.get("b"), Some(&7));
        assert_eq!(fork.get("b"), None);
        // A second fork of one version is a copy too.
        let second = fork.clone();
        let third = fork.clone();
        assert_eq!(contents(&second), before);
        assert_eq!(contents(&third), before);
    }

    /// Every value is dropped exactly once, however versions are forked, changed and dropped (in
    /// any order, on other threads): the values are clones of one `Arc` whose count must come
    /// back to one.
    #[test]
    fn every_value_is_dropped_once_whatever_order_versions_go_in() {
        let token = Arc::new(());
        let mut state = 0x9e37_79b9_u64;
        {
            let mut map: NameMap<Arc<()>> = NameMap::default();
            let mut kept: Vec<NameMap<Arc<()>>> = Vec::new();
            for step in 0..20_000 / SCALE {
                let next = map.clone();
                let old = mem::replace(&mut map, next);
                let r = xorshift(&mut state);
                if r % 7 == 0 {
                    kept.push(old);
                }
                if r % 11 == 0 && !kept.is_empty() {
                    let at = (r >> 8) as usize % kept.len();
                    drop(kept.swap_remove(at));
                }
                if r % 13 == 0 {
                    // A fork abandoned unchanged or after a change (as `Exclusions` are reset).
                    let mut abandoned = map.clone();
                    abandoned.insert(format!("gone{step}").into(), token.clone());
                }
                let name = format!("n{}", r % 3_000);
                match (r >> 4) % 3 {
                    0 => drop(map.remove(&name)),
                    _ => drop(map.insert(name.into(), token.clone())),
                }
            }
            let (mine, theirs): (Vec<_>, Vec<_>) = kept.into_iter().enumerate().partition(|(i, _)| i % 2 == 0);
            std::thread::scope(|s| {
                s.spawn(move || drop(theirs));
            });
            drop(mine);
            assert!(Arc::strong_count(&token) > 1);
        }
        assert_eq!(Arc::strong_count(&token), 1, "a value leaked or was never stored");
    }

    /// A reader that keeps the oldest version while thousands of forks come and go holds their
    /// garbage, all of it freed when it lets go (in a loop, not a recursion per epoch).
    #[test]
    fn an_old_version_holds_the_garbage_after_it_until_it_goes() {
        let token = Arc::new(());
        let mut map: NameMap<Arc<()>> = NameMap::default();
        map.insert("kept".into(), token.clone());
        let next = map.clone();
        let oldest = mem::replace(&mut map, next);
        for _ in 0..100_000 / SCALE {
            let mut next = map.clone();
            next.insert("kept".into(), token.clone());
            map = next;
        }
        assert_eq!(
            Arc::strong_count(&token),
            100_000 / SCALE as usize + 2,
            "every replaced leaf kept"
        );
        drop(oldest);
        // The newest version's leaf and the token: what each version replaced went with the
        // versions before it.
        assert_eq!(Arc::strong_count(&token), 2);
        drop(map);
        assert_eq!(Arc::strong_count(&token), 1);
    }

    /// A removed value is dropped as soon as the versions before the change are gone, while the
    /// version that removed it lives on (the registry drops a removed subscriber when the writer
    /// lets go of the snapshot it replaced).
    #[test]
    fn a_removed_value_goes_with_the_versions_before_the_removal() {
        let token = Arc::new(());
        let mut map: NameMap<Arc<()>> = NameMap::default();
        map.insert("gone".into(), token.clone());
        map.insert("kept".into(), token.clone());
        let next = map.clone();
        let before = mem::replace(&mut map, next);
        assert!(map.remove("gone").is_some_and(|value| Arc::ptr_eq(&value, &token)));
        assert_eq!(Arc::strong_count(&token), 3, "the version before still has it");
        drop(before);
        assert_eq!(Arc::strong_count(&token), 2, "dropped with the version before");
        drop(map);
        assert_eq!(Arc::strong_count(&token), 1);
    }

    /// A value whose drop panics: the panic reaches whoever drops the last version, and the other
    /// values of that garbage are dropped all the same.
    #[test]
    fn a_panicking_drop_of_a_value_drops_the_others_too() {
        #[derive(Clone)]
        struct Value(Arc<()>, bool);
        impl Drop for Value {
            fn drop(&mut self) {
                if self.1 && Arc::strong_count(&self.0) == 2 {
                    panic!("a value's drop panicked");
                }
            }
        }
        let token = Arc::new(());
        let mut map: NameMap<Value> = NameMap::default();
        for i in 0..40 {
            map.insert(format!("n{i}").into(), Value(token.clone(), false));
        }
        let bomb = Arc::new(());
        map.insert("bomb".into(), Value(bomb.clone(), true));
        let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(map)));
        assert!(dropped.is_err(), "the panic reaches the caller");
        assert_eq!(Arc::strong_count(&token), 1, "every other value was dropped");
        assert_eq!(Arc::strong_count(&bomb), 1);
    }

    /// A panicking value drop, while a change frees the leaf it replaced (nothing before the
    /// version is left): the copy is linked first, so the map stays whole and usable.
    #[test]
    fn a_panicking_drop_during_a_change_leaves_the_map_whole() {
        static ARMED: AtomicBool = AtomicBool::new(false);
        #[derive(Clone)]
        struct Bomb(#[allow(dead_code)] Arc<()>);
        impl Drop for Bomb {
            fn drop(&mut self) {
                if ARMED.swap(false, Ordering::SeqCst) {
                    panic!("a value's drop panicked");
                }
            }
        }
        let token = Arc::new(());
        let mut first: NameMap<Bomb> = NameMap::default();
        first.insert("a".into(), Bomb(token.clone()));
        let mut map = first.clone();
        drop(first);
        ARMED.store(true, Ordering::SeqCst);
        let changed = catch_unwind(AssertUnwindSafe(|| map.insert("a".into(), Bomb(token.clone()))));
        assert!(changed.is_err(), "the panic reaches the caller");
        assert!(map.get("a").is_some());
        assert_eq!(map.len(), 1);
        // The same in a remove of a leaf this version made (freed at the end of the change).
        ARMED.store(true, Ordering::SeqCst);
        let removed = catch_unwind(AssertUnwindSafe(|| map.remove("a")));
        assert!(removed.is_err());
        assert!(map.get("a").is_none());
        assert!(map.is_empty(), "counted out before the drop");
        drop(map);
        assert_eq!(Arc::strong_count(&token), 1);
    }

    /// A panicking value in an epoch reached by the drop's loop does not keep the epochs after it
    /// from being freed.
    #[test]
    fn a_panicking_drop_in_the_line_of_epochs_frees_the_epochs_after_it() {
        static ARMED: AtomicBool = AtomicBool::new(false);
        #[derive(Clone)]
        struct Value(#[allow(dead_code)] Arc<()>, bool);
        impl Drop for Value {
            fn drop(&mut self) {
                if self.1 && ARMED.swap(false, Ordering::SeqCst) {
                    panic!("a value's drop panicked");
                }
            }
        }
        let token = Arc::new(());
        let mut v0: NameMap<Value> = NameMap::default();
        v0.insert("bomb".into(), Value(token.clone(), true));
        v0.insert("x".into(), Value(token.clone(), false));
        let v1 = v0.clone();
        let mut v2 = v1.clone();
        v2.insert("bomb".into(), Value(token.clone(), false)); // the old leaf goes to E(1)
        let mut v3 = v2.clone();
        v3.insert("x".into(), Value(token.clone(), false)); // the old leaf goes to E(2)
        drop((v3, v2, v1));
        ARMED.store(true, Ordering::SeqCst);
        let dropped = catch_unwind(AssertUnwindSafe(|| drop(v0)));
        assert!(dropped.is_err(), "the panic reaches the caller");
        assert_eq!(
            Arc::strong_count(&token),
            1,
            "every value after the panicking one went too"
        );
    }

    /// Older versions dropped on other threads while readers look up and the newest version
    /// changes and forks (under Miri, which checks the accesses for data races).
    #[test]
    fn versions_dropped_on_other_threads_while_the_newest_changes() {
        let token = Arc::new(());
        for round in 0..if cfg!(miri) { 6 } else { 200 } {
            let mut v0: NameMap<Arc<()>> = NameMap::default();
            for i in 0..20 {
                v0.insert(format!("n{i}").into(), token.clone());
            }
            let v1 = v0.clone();
            let mut v2 = v1.clone();
            let copy = v0.clone(); // a second fork of one version: a copy
            std::thread::scope(|s| {
                s.spawn(move || drop(v0));
                s.spawn(move || {
                    assert!(v1.get("n3").is_some());
                    drop(v1)
                });
                s.spawn(|| assert!(copy.get("n5").is_some()));
                for i in 0..10 {
                    v2.insert(format!("n{i}").into(), token.clone());
                    v2.remove(&format!("n{}", 10 + (i + round) % 10));
                }
            });
            let v3 = v2.clone();
            std::thread::scope(|s| {
                s.spawn(move || drop(v2));
                s.spawn(move || drop(v3));
            });
            drop(copy);
        }
        assert_eq!(Arc::strong_count(&token), 1);
    }

    /// A change that frees nodes because the versions before it are gone is ordered after the
    /// reads of the thread that dropped the last of them (Miri's race detector checks it).
    #[test]
    fn a_free_after_the_last_older_version_went_elsewhere_is_ordered_after_its_reads() {
        let mut v0: NameMap<u32> = NameMap::default();
        v0.insert("a".into(), 1);
        let mut v1 = v0.clone();
        std::thread::scope(|s| {
            s.spawn(move || {
                assert_eq!(v0.get("a"), Some(&1));
                drop(v0);
            });
            while v1.older.upgrade().is_some() {
                std::thread::yield_now();
            }
            v1.insert("b".into(), 2); // frees the first version's root
        });
        assert_eq!(v1.get("a"), Some(&1));
    }

    /// Names of equal 64-bit hash (forced here through the hashed entry points) share a leaf:
    /// each is found, replaced and removed on its own.
    #[test]
    fn names_of_one_hash_share_a_leaf() {
        let mut map: NameMap<u32> = NameMap::default();
        let hash = 0xdead_beef_u64;
        assert_eq!(map.insert_hashed(hash, "a".into(), 1), None);
        assert_eq!(map.insert_hashed(hash, "b".into(), 2), None);
        assert_eq!(map.insert_hashed(hash ^ (1 << 62), "c".into(), 3), None);
        let old = map.clone();
        assert_eq!(map.insert_hashed(hash, "b".into(), 4), Some(2));
        assert_eq!(map.get_hashed("a", hash), Some(&1));
        assert_eq!(map.get_hashed("b", hash), Some(&4));
        assert_eq!(old.get_hashed("b", hash), Some(&2));
        assert_eq!(map.get_hashed("c", hash ^ (1 << 62)), Some(&3));
        assert_eq!(map.get_hashed("c", hash), None);
        let mut map = {
            let next = map.clone();
            drop(map);
            next
        };
        assert_eq!(map.remove_hashed(hash, "a"), Some(1));
        assert_eq!(map.remove_hashed(hash, "a"), None);
        assert_eq!(map.remove_hashed(hash, "b"), Some(4));
        assert_eq!(map.remove_hashed(hash ^ (1 << 62), "c"), Some(3));
        assert!(map.branch(map.root).slots.is_empty());
        assert_eq!(old.get_hashed("a", hash), Some(&1), "the old version keeps its leaf");
    }
}
