//! [`SubscriptionId`]: what names one subscription of one notifier.

use std::fmt;

#[cfg(feature = "serde")]
use serde::{Deserialize, Deserializer, Serialize, Serializer};

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
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SubscriptionId(pub(crate) u64);

impl SubscriptionId {
    /// The number (at least 1).
    pub fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for SubscriptionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

impl From<SubscriptionId> for u64 {
    fn from(id: SubscriptionId) -> u64 {
        id.0
    }
}

#[cfg(feature = "serde")]
impl Serialize for SubscriptionId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(self.0)
    }
}

#[cfg(feature = "serde")]
impl<'de> Deserialize<'de> for SubscriptionId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<SubscriptionId, D::Error> {
        u64::deserialize(deserializer).map(SubscriptionId)
    }
}
