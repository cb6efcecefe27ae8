//! notify and [`tracing`] both ways, and [`log`] records into notify.
//!
//! | direction | type | what it does |
//! |---|---|---|
//! | notify -> tracing | [`TracingForwarder`] | a notify subscriber: each event a tracing span (or an event at finish), nested by the event's parent, entered while the event is current (async polls included) |
//! | tracing -> notify | [`NotifyLayer`] | a `tracing_subscriber::Layer`: closed spans and events as notify events, names mapped by [`EventNames`] |
//! | log -> notify | [`NotifyLogger`] | a `log::Log`: records as notify events, passed on to your logger |
//!
//! With both tracing directions installed nothing is delivered twice: spans the bridge makes carry
//! [`BRIDGE_FIELD`] and the layer skips them, and events the layer publishes are skipped by the
//! bridge.
//!
//! # notify -> tracing
//!
//! ```
//! use notify_core::{Notifier, Pattern, Payload};
//! use notify_tracing::TracingForwarder;
//!
//! // tracing_subscriber::fmt().init(); // or any tracing subscriber
//! let _subscription = TracingForwarder::new().subscribe(Notifier::global(), Pattern::all());
//! notify_core::instrument("query.sql", || Payload::new().with("table", "books"), |_| ());
//! ```
//!
//! # tracing -> notify
//!
//! ```
//! use notify_tracing::NotifyLayer;
//! use tracing_subscriber::prelude::*;
//!
//! let subscriber = tracing_subscriber::registry().with(NotifyLayer::new());
//! // tracing::subscriber::set_global_default(subscriber)?;
//! // Spans of `#[tracing::instrument] fn load()` in module my_app::db are now "load.my_app::db" events.
//! # drop(subscriber);
//! ```
//!
//! # log -> notify
//!
//! ```no_run
//! // Records of `log::warn!(target: "db", ...)` become "warn.db" events; env_logger still prints.
//! # struct Stderr;
//! # impl log::Log for Stderr {
//! #     fn enabled(&self, _: &log::Metadata<'_>) -> bool { true }
//! #     fn log(&self, r: &log::Record<'_>) { eprintln!("{}", r.args()) }
//! #     fn flush(&self) {}
//! # }
//! notify_tracing::NotifyLogger::new().forward_to(Stderr).install()?;
//! # Ok::<(), log::SetLoggerError>(())
//! ```

#![warn(missing_docs)]

mod dyn_sites;
mod fields;
mod layer;
mod logger;
mod names;
mod open;
mod reentry;
mod sites;
mod spans;
mod sync_spans;

pub use crate::layer::NotifyLayer;
pub use crate::logger::NotifyLogger;
pub use crate::names::EventNames;
pub use crate::spans::TracingForwarder;

/// The field every span and event made by [`TracingForwarder`] carries: the notify event id
/// (`u64`). [`NotifyLayer`] skips callsites that have it, so nothing goes round twice.
pub const BRIDGE_FIELD: &str = "notify.event_id";

/// This crate's README.md: its code blocks are compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
