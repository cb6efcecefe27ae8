//! Which threads must never wait on a full exporter queue: [`forbid_blocking`].
//!
//! The exporter's queues are [`notify_core::export::Handoff`]'s (one per publishing thread); what
//! is left here is the rule for the exporter's and importer's own threads.

use notify_core::export::Handoff;

/// Marks the current thread as one that must never block on a full queue: with
/// [`Overflow::Block`](notify_core::export::Overflow::Block), an event it publishes onto a full
/// queue is dropped and counted ([`Dropped::overflow`](crate::Dropped::overflow)) instead (the
/// exporter's queues may be drained only by the thread that would wait, or by one waiting for
/// it). The exporter's and importer's threads call it first.
pub(crate) fn forbid_blocking() {
    Handoff::never_block_this_thread();
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Instant;

    use notify_core::export::{Handoff, Overflow};
    use notify_core::Event;

    use super::*;

    #[test]
    fn block_degrades_to_drop_newest_on_a_thread_that_must_not_block() {
        let handoff = Handoff::new(1, Overflow::Block);
        let now = Instant::now();
        let event = Arc::new(Event::new("a.b", now, now, Default::default()));
        let pushed = std::thread::scope(|s| {
            s.spawn(|| {
                forbid_blocking();
                [handoff.push(&event), handoff.push(&event), handoff.push(&event)]
            })
            .join()
            .unwrap()
        });
        assert_eq!(pushed, [true, false, false]);
        let stats = handoff.stats();
        assert_eq!((stats.queued, stats.dropped_full, stats.dropped_closed), (1, 2, 0));
    }
}
