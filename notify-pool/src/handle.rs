//! [`AsyncHandle`]: one async subscriber's mailbox (or fan-out member), for its counters.

use std::sync::Arc;

use crate::mailbox_id::MailboxId;
use crate::worker::Flavor;

/// One async subscriber's mailbox, for its counters. Cloning shares it.
///
/// ```
/// use notify_pool::{AsyncOptions, WorkerPool};
/// let pool = WorkerPool::builder().threads(1).build();
/// let (_subscriber, handle) = pool.mailbox(AsyncOptions::new(), |_: &notify_core::Event| {})?;
/// assert_eq!((handle.queued(), handle.dropped(), handle.is_closed()), (0, 0, false));
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone)]
pub struct AsyncHandle {
    /// The mailbox or fan-out group, through the method set both share.
    pub(crate) target: Arc<dyn Flavor>,
    /// Which member of the group (0 for a mailbox).
    pub(crate) member: usize,
}

impl AsyncHandle {
    pub(crate) fn new(target: Arc<dyn Flavor>, member: usize) -> AsyncHandle {
        AsyncHandle { target, member }
    }

    /// The mailbox id ([`MailboxId`]): unique within its pool (counting from 1), not the
    /// registry's [`SubscriptionId`](notify_core::subscriber::SubscriptionId); failure and slow-subscriber
    /// reports name it.
    ///
    /// ```
    /// let pool = notify_pool::WorkerPool::builder().threads(1).build();
    /// let (_, handle) = pool.mailbox(Default::default(), |_: &notify_core::Event| {})?;
    /// assert_eq!(handle.id().get(), 1);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn id(&self) -> MailboxId {
        self.target.id(self.member)
    }

    /// The label from [`AsyncOptions::named`](crate::AsyncOptions::named).
    ///
    /// ```
    /// let pool = notify_pool::WorkerPool::builder().threads(1).build();
    /// let (_, handle) = pool.mailbox(notify_pool::AsyncOptions::new().named("a"), |_: &notify_core::Event| {})?;
    /// assert_eq!(handle.label(), Some("a"));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn label(&self) -> Option<&str> {
        self.target.label()
    }

    /// Events this subscriber will never receive (an exact count): refused or evicted by its
    /// overflow policy, plus those queued when it was detached after a panic and those that reached
    /// it after it was closed.
    ///
    /// ```
    /// use notify_pool::{AsyncOptions, WorkerPool};
    /// use notify_core::{Event, Notifier, Payload};
    /// let pool = WorkerPool::builder().threads(1).build();
    /// let notifier = Notifier::new();
    /// let gate = std::sync::Arc::new(std::sync::Barrier::new(2));
    /// let g = gate.clone();
    /// let sub = pool.subscribe(&notifier, "run.job", AsyncOptions::new().capacity(1), move |_: &Event| { g.wait(); });
    /// notifier.instrument("run.job", Payload::new, |_| ()); // taken by the worker, which waits at the gate
    /// while pool.pending() == 1 && sub.queued() == 1 { std::thread::yield_now(); }
    /// notifier.instrument("run.job", Payload::new, |_| ()); // queued
    /// notifier.instrument("run.job", Payload::new, |_| ()); // dropped: the mailbox holds 1
    /// assert_eq!(sub.dropped(), 1);
    /// gate.wait();
    /// gate.wait();
    /// pool.flush();
    /// ```
    pub fn dropped(&self) -> u64 {
        self.target.dropped(self.member)
    }

    /// Events queued in the mailbox now (a count; those a worker already took are not counted).
    ///
    /// ```
    /// let pool = notify_pool::WorkerPool::builder().threads(1).build();
    /// let (_, handle) = pool.mailbox(Default::default(), |_: &notify_core::Event| {})?;
    /// assert_eq!(handle.queued(), 0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn queued(&self) -> usize {
        self.target.queued(self.member)
    }

    /// True when the mailbox refuses events: detached after a panic ([`AsyncFailurePolicy::Detach`](crate::AsyncFailurePolicy::Detach)), or
    /// unsubscribed.
    ///
    /// ```
    /// let pool = notify_pool::WorkerPool::builder().threads(1).build();
    /// let (_, handle) = pool.mailbox(Default::default(), |_: &notify_core::Event| {})?;
    /// assert!(!handle.is_closed());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn is_closed(&self) -> bool {
        self.target.is_closed(self.member)
    }

    /// Refuses events from now on; the queued ones are still delivered.
    ///
    /// ```
    /// let pool = notify_pool::WorkerPool::builder().threads(1).build();
    /// let (_, handle) = pool.mailbox(Default::default(), |_: &notify_core::Event| {})?;
    /// handle.close();
    /// assert!(handle.is_closed());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn close(&self) {
        self.target.close(self.member);
    }
}

impl std::fmt::Debug for AsyncHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncHandle")
            .field("id", &self.id())
            .field("label", &self.label())
            .field("queued", &self.queued())
            .field("dropped", &self.dropped())
            .finish()
    }
}
