//! [`TransactionId`]: what names the thread that started an event (AS::N's instrumenter id).

use crate::id_type::id_type;

id_type! {
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
    /// use notify_core::context::{transaction_id, TransactionId};
    /// let here = transaction_id();
    /// assert_eq!(here, transaction_id(), "stable on one thread");
    /// assert_ne!(here, std::thread::spawn(transaction_id).join().unwrap(), "one per thread");
    /// assert_eq!(TransactionId::new(3).to_string(), "3");
    /// ```
    pub struct TransactionId: decimal;
    new: "The transaction id with this number, e.g. one read from another process or given to [`Notifier::publish`](crate::Notifier::publish).";
    get: "The number (at least 1 for a thread of this process).";
}
