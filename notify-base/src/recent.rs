//! A per-thread cache of recent exact-name lookups: which listener set a name has in a snapshot.
//!
//! Finding a name in the snapshot's trie of exact names walks a branch per level, each a bitmap
//! test and a population count (in software: a default x86-64 build has no `popcnt`), 50 to 70
//! instructions for a name of the benchmark's notifier. Code instruments the same few names over
//! and over, so each thread remembers its last lookups, a slot per name hash: the snapshot's
//! serial ([`Serial`](crate::registry::Serial)), the hash and the listener set found. A hit costs a slot load, two compares and the
//! name's compare.
//!
//! An entry is only ever used with the very snapshot it was found in, which the caller holds
//! (pinned) while it uses the answer: serials are unique in the process, and a snapshot's exact
//! names never change once it is published. So an entry needs no invalidation: a change makes a
//! new snapshot, whose serial no entry has, and the stale entries are overwritten as they are hit.

use std::cell::Cell;
use std::ptr;

use crate::name_map::same_name;
use crate::registry::{Resolved, Snapshot};

/// Slots per thread (a power of two): 32 × 24 bytes.
const SLOTS: usize = 32;

#[derive(Clone, Copy)]
struct Slot {
    /// 0: empty (serials start at 1).
    serial: u64,
    hash: u64,
    resolved: *const Resolved,
}

const EMPTY: Slot = Slot {
    serial: 0,
    hash: 0,
    resolved: ptr::null(),
};

thread_local! {
    /// Plain `Cell`s, no destructor: each access is a load or a store.
    static RECENT: [Cell<Slot>; SLOTS] = const { [const { Cell::new(EMPTY) }; SLOTS] };
}

/// The slot of a name hash: bits the trie's first level does not use, so names that share a
/// first-level branch still spread over the slots.
#[inline(always)]
fn slot_of(hash: u64) -> usize {
    (hash >> 40) as usize % SLOTS
}

/// The listener set of `name` (whose name hash is `hash`) in `snapshot`, when this thread found it
/// there before; `None` when it did not (a miss says nothing about the name: look it up).
#[inline(always)]
pub(crate) fn get<'s>(snapshot: &'s Snapshot, name: &str, hash: u64) -> Option<&'s Resolved> {
    if cfg!(loom) {
        return None;
    }
    let slot = RECENT.try_with(|recent| recent[slot_of(hash)].get()).ok()?;
    if slot.serial != snapshot.serial.get() || slot.hash != hash {
        return None;
    }
    // SAFETY: the slot was filled by `put` with a listener set of the snapshot whose serial is
    // `slot.serial`. Serials are unique in the process, so that snapshot is `snapshot`, which the
    // caller borrows for `'s`; its exact names are an immutable map of `Arc<Resolved>` once
    // published, so the set lives at least as long as the snapshot and nothing mutates it.
    let resolved = unsafe { &*slot.resolved };
    same_name(resolved.name_str(), name).then_some(resolved)
}

/// Remembers that `resolved`, found in `snapshot`'s exact names for the name whose hash is `hash`,
/// is that name's listener set there.
///
/// # Safety
///
/// `resolved` is owned by `snapshot`'s exact names (see [`get`]), so it lives as long as
/// `snapshot`.
#[inline(always)]
pub(crate) unsafe fn put(snapshot: &Snapshot, hash: u64, resolved: &Resolved) {
    if cfg!(loom) {
        return;
    }
    let _ = RECENT.try_with(|recent| {
        recent[slot_of(hash)].set(Slot {
            serial: snapshot.serial.get(),
            hash,
            resolved,
        })
    });
}
