//! [`SinkCounts`]: what the NATS sink counts beyond the export collector's counters.

use std::sync::atomic::AtomicU64;

/// What the sink counts beyond the collector's counters (read by
/// [`Exporter::stats`](crate::Exporter::stats)).
#[derive(Debug, Default)]
pub(crate) struct SinkCounts {
    /// Events dropped because they alone encode larger than the largest message.
    pub(crate) too_large: AtomicU64,
    /// Events that could not be encoded.
    pub(crate) encode: AtomicU64,
    /// Messages confirmed.
    pub(crate) messages: AtomicU64,
    /// [`ExporterStats::not_reexported`](crate::ExporterStats::not_reexported).
    pub(crate) not_reexported: AtomicU64,
}
