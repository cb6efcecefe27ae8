//! What subscribing returns: [`AsyncSubscription`] (one async subscriber) and
//! [`FanoutSubscription`] (a fan-out group).

use std::sync::Arc;

use notify_core::{NotifyError, Subscription};

use crate::group::Group;
use crate::AsyncHandle;

/// An async subscriber subscribed on a notifier: its registry [`Subscription`] and its mailbox
/// ([`AsyncHandle`]). Dropping it does not unsubscribe (as for every subscription).
///
/// ```
/// use notify_pool::{AsyncOptions, WorkerPool};
/// let pool = WorkerPool::builder().threads(1).build();
/// let notifier = notify_core::Notifier::new();
/// let sub = pool.subscribe(&notifier, "run.job", AsyncOptions::new(), |_: &notify_core::Event| {});
/// assert_eq!(sub.subscription().id().get(), 1);
/// assert_eq!(sub.dropped(), 0);
/// ```
#[derive(Clone, Debug)]
pub struct AsyncSubscription {
    pub(crate) handle: AsyncHandle,
    pub(crate) subscription: Subscription,
}

impl AsyncSubscription {
    /// The mailbox.
    ///
    /// ```
    /// # let pool = notify_pool::WorkerPool::builder().threads(1).build();
    /// # let notifier = notify_core::Notifier::new();
    /// let sub = pool.subscribe(&notifier, "run.job", Default::default(), |_: &notify_core::Event| {});
    /// assert_eq!(sub.handle().queued(), 0);
    /// ```
    pub fn handle(&self) -> &AsyncHandle {
        &self.handle
    }

    /// The registry subscription.
    ///
    /// ```
    /// # let pool = notify_pool::WorkerPool::builder().threads(1).build();
    /// # let notifier = notify_core::Notifier::new();
    /// let sub = pool.subscribe(&notifier, "run.job", Default::default(), |_: &notify_core::Event| {});
    /// assert_eq!(notifier.listeners_for("run.job"), vec![(sub.subscription().id(), notify_core::subscriber::SubscriberKind::Owned)]);
    /// ```
    pub fn subscription(&self) -> &Subscription {
        &self.subscription
    }

    /// [`AsyncHandle::dropped`].
    ///
    /// ```
    /// # let pool = notify_pool::WorkerPool::builder().threads(1).build();
    /// # let notifier = notify_core::Notifier::new();
    /// let sub = pool.subscribe(&notifier, "run.job", Default::default(), |_: &notify_core::Event| {});
    /// assert_eq!(sub.dropped(), 0);
    /// ```
    pub fn dropped(&self) -> u64 {
        self.handle.dropped()
    }

    /// [`AsyncHandle::queued`].
    ///
    /// ```
    /// # let pool = notify_pool::WorkerPool::builder().threads(1).build();
    /// # let notifier = notify_core::Notifier::new();
    /// let sub = pool.subscribe(&notifier, "run.job", Default::default(), |_: &notify_core::Event| {});
    /// assert_eq!(sub.queued(), 0);
    /// ```
    pub fn queued(&self) -> usize {
        self.handle.queued()
    }

    /// [`AsyncHandle::is_closed`].
    ///
    /// ```
    /// # let pool = notify_pool::WorkerPool::builder().threads(1).build();
    /// # let notifier = notify_core::Notifier::new();
    /// let sub = pool.subscribe(&notifier, "run.job", Default::default(), |_: &notify_core::Event| {});
    /// assert!(!sub.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        self.handle.is_closed()
    }

    /// Removes the subscription from its notifier and closes the mailbox; events already queued
    /// are still delivered.
    ///
    /// # Errors
    /// [`NotifyError::NotFound`] when the subscription was already removed.
    ///
    /// ```
    /// # let pool = notify_pool::WorkerPool::builder().threads(1).build();
    /// # let notifier = notify_core::Notifier::new();
    /// let sub = pool.subscribe(&notifier, "run.job", Default::default(), |_: &notify_core::Event| {});
    /// sub.unsubscribe()?;
    /// assert!(!notifier.listening("run.job"));
    /// assert!(sub.unsubscribe().is_err());
    /// # Ok::<(), notify_core::NotifyError>(())
    /// ```
    pub fn unsubscribe(&self) -> Result<(), NotifyError> {
        self.handle.close();
        self.subscription.unsubscribe()
    }
}

/// Many async subscribers behind one registry subscription ([`WorkerPool::subscribe_fanout`](crate::WorkerPool::subscribe_fanout)).
///
/// ```
/// use notify_pool::{AsyncOptions, WorkerPool};
/// let pool = WorkerPool::builder().threads(1).build();
/// let notifier = notify_core::Notifier::new();
/// let fanout = pool.subscribe_fanout(&notifier, "run.job", AsyncOptions::new(), (0..3).map(|_| |_: &notify_core::Event| {}));
/// assert_eq!(fanout.members().len(), 3);
/// fanout.unsubscribe()?;
/// # Ok::<(), notify_core::NotifyError>(())
/// ```
pub struct FanoutSubscription {
    pub(crate) subscription: Subscription,
    pub(crate) members: Vec<AsyncHandle>,
    pub(crate) group: Arc<Group>,
}

impl std::fmt::Debug for FanoutSubscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FanoutSubscription")
            .field("subscription", &self.subscription)
            .field("members", &self.members.len())
            .finish()
    }
}

impl FanoutSubscription {
    /// The members' mailboxes, in the order given.
    ///
    /// ```
    /// # let pool = notify_pool::WorkerPool::builder().threads(1).build();
    /// # let notifier = notify_core::Notifier::new();
    /// let fanout = pool.subscribe_fanout(&notifier, "run.job", Default::default(), [|_: &notify_core::Event| {}]);
    /// assert_eq!(fanout.members()[0].dropped(), 0);
    /// ```
    pub fn members(&self) -> &[AsyncHandle] {
        &self.members
    }

    /// The one registry subscription.
    ///
    /// ```
    /// # let pool = notify_pool::WorkerPool::builder().threads(1).build();
    /// # let notifier = notify_core::Notifier::new();
    /// let fanout = pool.subscribe_fanout(&notifier, "run.job", Default::default(), [|_: &notify_core::Event| {}]);
    /// assert_eq!(fanout.subscription().id().get(), 1);
    /// ```
    pub fn subscription(&self) -> &Subscription {
        &self.subscription
    }

    /// Removes the registry subscription and closes every member; queued events are still
    /// delivered.
    ///
    /// # Errors
    /// [`NotifyError::NotFound`] when it was already removed.
    ///
    /// ```
    /// # let pool = notify_pool::WorkerPool::builder().threads(1).build();
    /// # let notifier = notify_core::Notifier::new();
    /// let fanout = pool.subscribe_fanout(&notifier, "run.job", Default::default(), [|_: &notify_core::Event| {}]);
    /// fanout.unsubscribe()?;
    /// assert!(fanout.members()[0].is_closed());
    /// # Ok::<(), notify_core::NotifyError>(())
    /// ```
    pub fn unsubscribe(&self) -> Result<(), NotifyError> {
        self.group.close(0..self.group.members.len());
        self.subscription.unsubscribe()
    }
}
