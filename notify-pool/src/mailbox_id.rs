//! [`MailboxId`]: what names one async subscriber's mailbox in its pool.

use std::fmt;

/// The id of one async subscriber's mailbox ([`AsyncHandle::id`](crate::AsyncHandle::id),
/// [`AsyncFailure::mailbox`](crate::AsyncFailure::mailbox),
/// [`SlowSubscriber::mailbox`](crate::SlowSubscriber::mailbox)): unique within its
/// [`WorkerPool`](crate::WorkerPool), counting from 1 in subscription order.
///
/// It is not the notify-core [`SubscriptionId`](notify_core::subscriber::SubscriptionId) of the registry
/// subscription ([`AsyncSubscription::subscription`](crate::AsyncSubscription::subscription)):
/// subscription ids count per notifier and mailbox ids per pool, and the `n` members of a fan-out
/// group ([`FanoutSubscription`](crate::FanoutSubscription)) have `n` consecutive mailbox ids under
/// one subscription id. Displays as `#<n>`, as failure and slow-subscriber reports write it.
///
/// ```
/// let pool = notify_pool::WorkerPool::builder().threads(1).build();
/// let (_, handle) = pool.mailbox(Default::default(), |_: &notify_core::Event| {})?;
/// assert_eq!(handle.id().get(), 1);
/// assert_eq!(handle.id().to_string(), "#1");
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(transparent)]
pub struct MailboxId(pub(crate) u64);

impl MailboxId {
    /// The number (at least 1).
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for MailboxId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

impl From<MailboxId> for u64 {
    fn from(id: MailboxId) -> u64 {
        id.0
    }
}

#[cfg(test)]
mod tests {
    use super::MailboxId;

    #[test]
    fn displays_as_hash_number_and_orders_by_it() {
        assert_eq!(MailboxId(7).to_string(), "#7");
        assert_eq!(format!("{:?}", MailboxId(7)), "MailboxId(7)");
        assert!(MailboxId(9) < MailboxId(10));
        assert_eq!(u64::from(MailboxId(u64::MAX)), u64::MAX);
        assert_eq!(std::mem::size_of::<MailboxId>(), 8);
    }
}
