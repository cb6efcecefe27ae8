//! The thread-local stack of start instants, keyed by (log method, event id). See the module docs
//! of this crate.

use std::cell::RefCell;
use std::time::Instant;

/// Open entries kept per thread; beyond this the oldest is dropped.
const CAPACITY: usize = 64;

struct Start {
    key: usize,
    id: u64,
    at: Instant,
}

thread_local! {
    static STARTS: RefCell<Vec<Start>> = const { RefCell::new(Vec::new()) };
}

pub(super) fn push(key: usize, id: u64, at: Instant) {
    let _ = STARTS.try_with(|starts| {
        let mut starts = starts.borrow_mut();
        if starts.len() == CAPACITY {
            starts.remove(0);
        }
        starts.push(Start { key, id, at });
    });
}

/// Removes and returns the start of `(key, id)` pushed on this thread, if any (searching from
/// the top: nested events finish first).
pub(super) fn take(key: usize, id: u64) -> Option<Instant> {
    STARTS
        .try_with(|starts| {
            let mut starts = starts.borrow_mut();
            let i = starts.iter().rposition(|s| s.key == key && s.id == id)?;
            Some(starts.remove(i).at)
        })
        .ok()
        .flatten()
}

#[cfg(test)]
fn open() -> usize {
    STARTS.with(|starts| starts.borrow().len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_are_paired_by_key_and_id_and_bounded() {
        let base = open();
        let t = Instant::now();
        push(1, 10, t);
        push(2, 10, t);
        push(1, 11, t);
        assert_eq!(take(1, 10), Some(t));
        assert_eq!(take(1, 10), None);
        assert_eq!(take(1, 11), Some(t));
        assert_eq!(take(2, 10), Some(t));
        assert_eq!(open(), base);
        for id in 0..100 {
            push(3, id, t);
        }
        assert_eq!(open(), base + 64);
        assert_eq!(take(3, 0), None, "the oldest entries were dropped");
        assert_eq!(take(3, 99), Some(t));
        for id in 36..99 {
            assert_eq!(take(3, id), Some(t));
        }
        assert_eq!(open(), base);
    }
}
