//! [`Overflow`]: what a bounded queue does with an event that arrives when it is full.

/// What a bounded queue of events does with an event that arrives when it is full: the one
/// overflow policy of notify's queues (a notify-pool mailbox, notify-nats' exporter queue), so
/// that each crate can take it without depending on the other.
///
/// Every event a policy drops is counted by the queue that dropped it (see each queue's
/// statistics); none is dropped silently.
///
/// ```
/// assert_eq!(notify_core::export::Overflow::default(), notify_core::export::Overflow::DropNewest);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Overflow {
    /// Refuse the new event and count it as dropped: the publisher never waits (default).
    #[default]
    DropNewest,
    /// Evict the oldest queued event (counted as dropped) and queue the new one.
    DropOldest,
    /// Block the publishing thread until the queue has room. A thread that must not wait (a
    /// worker of a notify pool, a queue's own consumer thread: it may be the only one that could
    /// make room) drops the new event instead, as [`Overflow::DropNewest`]; each queue's docs say
    /// which threads that is and what happens to a publisher blocked when the queue shuts down.
    Block,
}
