//! [`SubscriptionId`]: what names one subscription of one notifier.

use crate::id_type::id_type;

id_type! {
    /// The id of one subscription: unique within its notifier, counting from 1 in subscription order
    /// ([`Subscription::id`](crate::Subscription::id), [`SubscriberFailure::subscription`](crate::SubscriberFailure::subscription),
    /// [`Notifier::listeners_for`](crate::Notifier::listeners_for)). Displays as `#<n>`;
    /// serializes as the bare number (feature `serde`).
    ///
    /// ```
    /// let notifier = notify_core::Notifier::new();
    /// let s = notifier.subscribe("query.sql", notify_core::Subscriber::event(|_: &notify_core::Event| {}));
    /// assert_eq!(s.id().get(), 1);
    /// assert_eq!(s.id().to_string(), "#1");
    /// ```
    pub struct SubscriptionId: hash;
    get: "The number (at least 1).";
}
