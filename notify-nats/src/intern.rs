//! Interned text: the event names and payload keys an importer reads, kept once for the whole
//! process as `&'static str`, so that republishing an event copies and frees neither (an event of
//! 2 keys: 3 allocations and 3 frees fewer, and no reference count on its name).
//!
//! Names and keys are few in practice (the subjects and payload keys of the exporting services);
//! the text interned is never freed, so it is bounded: at most [`BUDGET`] bytes in all (each
//! text counted with [`OVERHEAD`] bytes for its table entry) and [`MAX_LEN`] bytes each. Beyond
//! that (a sender with names or keys of unbounded variety), [`intern`] says no and the text is
//! copied per event as it would be without interning. Payload values are never interned.

use std::collections::HashSet;

use parking_lot::Mutex;

/// The most bytes interned in all, entries counted with [`OVERHEAD`]: 256 KiB.
pub(crate) const BUDGET: usize = 256 * 1024;

/// The longest text interned, in bytes.
pub(crate) const MAX_LEN: usize = 128;

/// What each interned text is counted for beyond its bytes (its table entry and allocation).
pub(crate) const OVERHEAD: usize = 32;

struct Table {
    texts: Option<HashSet<&'static str>>,
    /// Bytes counted against the budget.
    used: usize,
}

impl Table {
    const fn new() -> Table {
        Table { texts: None, used: 0 }
    }

    /// [`intern`] with this table and `budget`.
    fn intern(&mut self, text: &str, budget: usize) -> Option<&'static str> {
        if text.len() > MAX_LEN {
            return None;
        }
        let texts = self.texts.get_or_insert_with(HashSet::new);
        if let Some(&interned) = texts.get(text) {
            return Some(interned);
        }
        let cost = text.len() + OVERHEAD;
        if self.used + cost > budget {
            return None;
        }
        self.used += cost;
        let interned: &'static str = Box::leak(Box::from(text));
        texts.insert(interned);
        Some(interned)
    }
}

static TABLE: Mutex<Table> = Mutex::new(Table::new());

/// `text` as a `&'static str` shared by every caller asking for the same text; `None` when it is
/// longer than [`MAX_LEN`] or the [`BUDGET`] is spent (the caller copies it then).
pub(crate) fn intern(text: &str) -> Option<&'static str> {
    TABLE.lock().intern(text, BUDGET)
}

/// The texts one decoder met, each with its interned form (`None`: not interned, copy it), so
/// that a batch of events of one name and the same keys asks the process-wide table once per
/// distinct text, not once per event. Holds at most [`Recent::CAPACITY`] texts; the oldest is
/// forgotten first.
pub(crate) struct Recent<'a> {
    texts: Vec<(&'a str, Option<&'static str>)>,
    next: usize,
}

impl<'a> Recent<'a> {
    /// Texts remembered.
    pub(crate) const CAPACITY: usize = 16;

    pub(crate) fn new() -> Recent<'a> {
        Recent {
            texts: Vec::new(),
            next: 0,
        }
    }

    /// `bytes` as text, and [`intern`] of it: the table is asked, and `bytes` checked to be
    /// UTF-8, only the first time this decoder meets these bytes (bytes equal to text met before
    /// are that text).
    ///
    /// # Errors
    ///
    /// `bytes` are not UTF-8.
    #[inline]
    pub(crate) fn get(&mut self, bytes: &'a [u8]) -> Result<(&'a str, Option<&'static str>), std::str::Utf8Error> {
        if let Some(&found) = self.texts.iter().find(|(seen, _)| seen.as_bytes() == bytes) {
            return Ok(found);
        }
        let text = std::str::from_utf8(bytes)?;
        let found = (text, intern(text));
        if self.texts.len() < Self::CAPACITY {
            self.texts.push(found);
        } else {
            self.texts[self.next] = found;
            self.next = (self.next + 1) % Self::CAPACITY;
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_text_is_interned_once_and_long_text_never() {
        let a = intern("intern.test.a").unwrap();
        let b = intern(&String::from("intern.test.a")).unwrap();
        assert!(std::ptr::eq(a, b));
        assert_eq!(a, "intern.test.a");
        assert_eq!(intern(&"x".repeat(MAX_LEN + 1)), None);
        assert_eq!(intern(&"y".repeat(MAX_LEN)).map(str::len), Some(MAX_LEN));
    }

    #[test]
    fn the_budget_bounds_what_is_interned() {
        // A table of its own (the process-wide one is shared with the other tests).
        let mut table = Table::new();
        let budget = 10 * (OVERHEAD + 8);
        let interned: Vec<Option<&str>> = (0..12).map(|i| table.intern(&format!("budget.{i}"), budget)).collect();
        // "budget.N" is 8 bytes: 10 fit.
        assert!(interned[..10].iter().all(Option::is_some), "{interned:?}");
        assert_eq!(interned[10..], [None, None]);
        assert_eq!(table.used, budget);
        // Text interned before the budget was spent is still found, and the same.
        assert!(std::ptr::eq(
            table.intern("budget.0", budget).unwrap(),
            interned[0].unwrap()
        ));
        assert_eq!(table.intern(&"w".repeat(MAX_LEN + 1), usize::MAX), None);
    }

    #[test]
    fn recent_asks_the_table_once_per_text_and_forgets_the_oldest() {
        let texts: Vec<String> = (0..Recent::CAPACITY + 2).map(|i| format!("recent.{i}")).collect();
        let mut recent = Recent::new();
        for text in &texts {
            assert_eq!(recent.get(text.as_bytes()), Ok((text.as_str(), intern(text))));
        }
        assert_eq!(recent.texts.len(), Recent::CAPACITY);
        // The first two were replaced by the last two.
        assert!(!recent.texts.iter().any(|(t, _)| *t == texts[0] || *t == texts[1]));
        assert_eq!(recent.get(texts[17].as_bytes()).unwrap().1, intern(&texts[17]));
        let long = "z".repeat(MAX_LEN + 1);
        assert_eq!(recent.get(long.as_bytes()), Ok((long.as_str(), None)));
        assert_eq!(recent.get(long.as_bytes()), Ok((long.as_str(), None)));
        // Bytes that are not UTF-8 are refused, each time.
        assert!(recent.get(b"bad \xff").is_err());
        assert!(recent.get(b"bad \xff").is_err());
    }
}
