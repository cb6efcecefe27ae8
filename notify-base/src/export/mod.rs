//! What exporters share: the stages that run on an exporter's own thread, between the events a
//! subscription hands over and the sink (OpenTelemetry, NATS, notify-web's trace store).
//!
//! An exporter is an owned-event subscriber ([`OwnedEventSubscriber`](crate::OwnedEventSubscriber)):
//! the instrumenting thread only hands it the shared event (`Arc<Event>`), and a thread of the
//! exporter's own does the rest. The stages here are plain data structures that such a thread
//! feeds; they know nothing of any sink, so every exporter crate can run them without depending
//! on another.
//!
//! * [`TailSampler`] — tail sampling in-process: hold each trace's events until its local root
//!   ends, then keep the trace whole (an error, a slow root, or a ratio of the rest) or drop it
//!   whole; bounded in traces, events per trace and wait, every drop counted by cause
//!   ([`TailStats`]). notify-opentelemetry (`Builder::tail_sampling`), notify-nats
//!   (`ExporterBuilder::tail_sampling`) and notify-web (`WebOptions::tail_sampling`) run one.
//!
//! Head sampling (decided when a trace starts, by its trace id) is [`Sampler`](crate::Sampler);
//! the two combine: tail sampling sees only what head sampling kept.

mod tail;

pub use self::tail::*;
