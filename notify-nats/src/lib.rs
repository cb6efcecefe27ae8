//! # notify-nats
//!
//! Events across processes through [NATS](https://nats.io): an [`Exporter`] subscribed to a
//! notifier batches finished events onto subjects `<prefix>.<event name>`, and an [`Importer`] in
//! another process subscribes to a subject pattern and republishes each event, with its original
//! name, times, ids, outcome and payload, into a local [`Notifier`](notify_core::Notifier), so the
//! subscribers there (log, metrics, the pool) see remote events as local ones.
//!
//! * **Core NATS** (default): at most once. Every event handed to the exporter is counted exactly
//!   once as exported, dropped (by cause), pending or held by tail sampling:
//!   `published == exported + dropped + pending + held`.
//! * **JetStream** ([`JetStream`], `nats-server -js`): at least once, made exactly once by message
//!   ids and the importer's duplicate check; a server killed and restarted loses nothing.
//!
//! The exporter sits on the export collector ([`notify_export::Collector`]: the hand-off,
//! batching, tail sampling, drop accounting and reports, flush, shutdown) with a [`NatsSink`],
//! whose client runs on a current-thread tokio runtime the collector's thread drives (or on the
//! application's runtime): instrumented code stays synchronous and only enqueues. See the
//! README's "Across processes: NATS" section.

#![warn(missing_docs)]

mod confirm;
mod connect;
mod counts;
mod exporter;
mod imported;
mod importer;
mod intern;
mod jetstream;
mod sink;
mod subject;
mod wire;

pub use crate::connect::{ConnectError, ConnectErrorKind, NatsOptions};
pub use crate::exporter::{Dropped, Exporter, ExporterBuilder, ExporterStats, FlushTimeout, ShutdownReport};
pub use crate::importer::{ImportError, Importer, ImporterBuilder, ImporterStats};
pub use crate::jetstream::JetStream;
pub use crate::sink::{NatsSink, ENCODING_HEADER, TRACEPARENT_HEADER, VERSION_HEADER};
pub use crate::subject::subject_for;
pub use crate::wire::{decode_batch, encode_batch, DecodeError, Encoding, WIRE_VERSION};
pub use notify_core::export::Overflow;

/// This crate's README.md: its code blocks are compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
