//! [`TransactionId`]: what names the thread that started an event (AS::N's instrumenter id).

use std::fmt;
use std::num::ParseIntError;
use std::str::FromStr;

#[cfg(feature = "serde")]
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The transaction id of a thread: AS::N's instrumenter id, what timed and monotonic subscribers
/// receive and [`Event::transaction_id`](crate::Event::transaction_id),
/// [`Instrumenter::id`](crate::Instrumenter::id) and [`transaction_id`](crate::transaction_id)
/// return.
///
/// One per thread, unique in this process and stable for the thread's lifetime: a thread gets the
/// next number of one process-wide counter (from 1) the first time it asks, so the numbers say in
/// which order threads first instrumented, and are never reused. It is *not* a request id: under an
/// async runtime one worker thread runs many requests; the [`TraceId`](crate::TraceId) groups the
/// events of one request. Ids of events made elsewhere ([`Event::with_ids`](crate::Event::with_ids),
/// [`Notifier::publish`](crate::Notifier::publish)) are whatever the caller gives.
///
/// Displays as the decimal number (`3`), the number serde writes (feature `serde`: the bare
/// number, so an event's JSON form is `"transaction_id": 3`; far below 2^53, where JavaScript reads
/// JSON numbers exactly).
///
/// ```
/// use notify_core::{transaction_id, TransactionId};
/// let here = transaction_id();
/// assert_eq!(here, transaction_id(), "stable on one thread");
/// assert_ne!(here, std::thread::spawn(transaction_id).join().unwrap(), "one per thread");
/// assert_eq!(TransactionId::new(3).to_string(), "3");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(transparent)]
pub struct TransactionId(pub(crate) u64);

impl TransactionId {
    /// The transaction id with this number, e.g. one read from another process or given to
    /// [`Notifier::publish`](crate::Notifier::publish).
    pub const fn new(id: u64) -> TransactionId {
        TransactionId(id)
    }

    /// The number (at least 1 for a thread of this process).
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for TransactionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

/// Parses the [`Display`](fmt::Display) form, a decimal number (`"3"`), e.g. from a URL or a
/// log line.
///
/// ```
/// let id: notify_core::TransactionId = "3".parse()?;
/// assert_eq!(id, notify_core::TransactionId::new(3));
/// assert!("#3".parse::<notify_core::TransactionId>().is_err());
/// # Ok::<(), std::num::ParseIntError>(())
/// ```
impl FromStr for TransactionId {
    type Err = ParseIntError;

    fn from_str(text: &str) -> Result<TransactionId, ParseIntError> {
        text.parse().map(TransactionId)
    }
}

impl From<u64> for TransactionId {
    fn from(id: u64) -> TransactionId {
        TransactionId(id)
    }
}

impl From<TransactionId> for u64 {
    fn from(id: TransactionId) -> u64 {
        id.0
    }
}

#[cfg(feature = "serde")]
impl Serialize for TransactionId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(self.0)
    }
}

#[cfg(feature = "serde")]
impl<'de> Deserialize<'de> for TransactionId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<TransactionId, D::Error> {
        u64::deserialize(deserializer).map(TransactionId)
    }
}

#[cfg(test)]
mod tests {
    use super::TransactionId;

    #[test]
    fn displays_as_the_decimal_number_and_orders_by_it() {
        assert_eq!(TransactionId::new(3).to_string(), "3");
        assert_eq!(format!("{:<3}|", TransactionId::new(3)), "3  |");
        assert_eq!(format!("{:?}", TransactionId::new(3)), "TransactionId(3)");
        assert!(TransactionId::new(9) < TransactionId::new(10));
        assert_eq!(u64::from(TransactionId::from(u64::MAX)), u64::MAX);
        assert_eq!(std::mem::size_of::<TransactionId>(), 8);
    }

    #[test]
    fn parses_what_it_displays() {
        for n in [0, 1, 3, u64::MAX] {
            assert_eq!(
                TransactionId::new(n).to_string().parse::<TransactionId>(),
                Ok(TransactionId::new(n))
            );
        }
        assert!("".parse::<TransactionId>().is_err());
        assert!("-1".parse::<TransactionId>().is_err());
        assert!(
            "18446744073709551616".parse::<TransactionId>().is_err(),
            "2^64 does not fit"
        );
    }

    #[cfg(feature = "serde")]
    #[test]
    fn serializes_as_the_bare_number() {
        assert_eq!(serde_json::to_string(&TransactionId::new(3)).unwrap(), "3");
        assert_eq!(
            serde_json::from_str::<TransactionId>("3").unwrap(),
            TransactionId::new(3)
        );
        let max = TransactionId::new(u64::MAX);
        assert_eq!(
            serde_json::from_str::<TransactionId>(&serde_json::to_string(&max).unwrap()).unwrap(),
            max
        );
        assert!(serde_json::from_str::<TransactionId>("null").is_err());
    }
}
