//! What exporters share: the pieces that run between the events a subscription hands over and
//! the sink (OpenTelemetry, NATS, a log file).
//!
//! An exporter is an owned-event subscriber ([`OwnedEventSubscriber`](crate::OwnedEventSubscriber)):
//! the instrumenting thread only hands it the shared event (`Arc<Event>`), and a thread of the
//! exporter's own converts, encodes and sends.
//!
//! * [`Handoff`] — the bounded hand-off from the instrumenting threads to the exporter's thread:
//!   a wait-free queue per publishing thread, drained by the exporter's thread (also those of
//!   idle and exited threads), the [`Overflow`](crate::Overflow) policy per full queue, every
//!   drop counted.
//! * [`recycle`] / [`recycle_all`] — give an event the exporter is done with back to notify, so
//!   that a later event reuses its allocation: the owned event then costs the instrumenting
//!   thread no allocation (and the exporter's thread frees nothing); see [`recycle`].

mod handoff;
mod recycle;

pub use self::handoff::{Handoff, HandoffStats};
pub use self::recycle::*;
