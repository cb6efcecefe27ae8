//! The tracing level of each bridged span's event name, so its line is written and filtered at
//! the level the library gave it (`debug_span!` -> `DEBUG`), not at the `INFO` of every other
//! event.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

/// Event name -> level, filled by the tracing bridge as it names each span callsite (once per
/// callsite, before the callsite's first event), read for each line.
#[derive(Clone, Default)]
pub(crate) struct SpanLevels(Arc<Inner>);

#[derive(Default)]
struct Inner {
    /// Nothing recorded yet: lines skip the lock (a build without the bridge, or before any span).
    any: AtomicBool,
    levels: RwLock<HashMap<String, log::Level>>,
}

impl SpanLevels {
    /// Records that spans named `name` have `level`. When callsites of one name differ in level
    /// (`debug_span!("query")` and `warn_span!("query")` in one module), the most severe is
    /// kept: a published span's line then always passes `RUST_LOG` (the bridge only publishes
    /// spans the same filter keeps), at the cost of a label more severe than some of them.
    #[cfg_attr(not(feature = "tracing"), allow(dead_code))]
    pub(crate) fn record(&self, name: &str, level: log::Level) {
        let mut levels = self.0.levels.write().unwrap_or_else(|e| e.into_inner());
        levels
            .entry(name.to_owned())
            .and_modify(|known| *known = (*known).min(level))
            .or_insert(level);
        self.0.any.store(true, Ordering::Release);
    }

    /// The level of spans named `name`, when the bridge named such a span.
    #[inline]
    pub(crate) fn get(&self, name: &str) -> Option<log::Level> {
        if !self.0.any.load(Ordering::Acquire) {
            return None;
        }
        let levels = self.0.levels.read().unwrap_or_else(|e| e.into_inner());
        levels.get(name).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn i47_3_the_most_severe_level_of_a_name_is_kept() {
        let levels = SpanLevels::default();
        assert_eq!(levels.get("query.db"), None);
        levels.record("query.db", log::Level::Debug);
        assert_eq!(levels.get("query.db"), Some(log::Level::Debug));
        levels.record("query.db", log::Level::Warn);
        levels.record("query.db", log::Level::Trace);
        assert_eq!(levels.get("query.db"), Some(log::Level::Warn));
        assert_eq!(levels.get("other.db"), None);
    }
}
