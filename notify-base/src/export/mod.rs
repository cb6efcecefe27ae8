//! What exporters share: the pieces that run between the events a subscription hands over and
//! the sink (OpenTelemetry, NATS, notify-web's trace store, a log file).
//!
//! An exporter is an owned-event subscriber ([`OwnedEventSubscriber`](crate::OwnedEventSubscriber)):
//! the instrumenting thread only hands it the shared event (`Arc<Event>`), and a thread of the
//! exporter's own converts, encodes and sends. The pieces here know nothing of any sink, so every
//! exporter crate can use them without depending on another.
//!
//! * [`Handoff`] — the bounded hand-off from the instrumenting threads to the exporter's thread:
//!   a wait-free queue per live publishing thread and one shared queue of what exited threads
//!   left, drained by the exporter's thread, the [`Overflow`](crate::Overflow) policy per full
//!   queue, every drop counted.
//! * [`recycle`] / [`recycle_all`] — give an event the exporter is done with back to notify, so
//!   that a later event reuses its allocation: the owned event then costs the instrumenting
//!   thread no allocation (and the exporter's thread frees nothing); see [`recycle`].
//! * [`TailSampler`] — tail sampling in-process, on the exporter's thread: hold each trace's
//!   events until its local root ends, then keep the trace whole (an error, a slow root, or a
//!   ratio of the rest) or drop it whole; bounded in traces, events per trace and wait, every drop
//!   counted by cause ([`TailStats`]). notify-opentelemetry (`Builder::tail_sampling`),
//!   notify-nats (`ExporterBuilder::tail_sampling`) and notify-web (`WebOptions::tail_sampling`)
//!   run one. Head sampling (decided when a trace starts, by its trace id) is
//!   [`Sampler`](crate::Sampler); tail sampling sees only what head sampling kept.
//! * [`DropReporter`] — reports each burst of drops through the failure hook of a notifier the
//!   exporter is subscribed to, where subscriber panics are reported too.

mod drop_report;
mod handoff;
mod recycle;
mod tail;

pub use self::drop_report::DropReporter;
pub use self::handoff::{Handoff, HandoffStats};
pub use self::recycle::*;
pub use self::tail::*;
