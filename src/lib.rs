//! Code shared by notify's examples and benchmarks (not published).

#![warn(missing_docs)]

pub mod baseline;
pub mod bookstore;

/// The workspace README's code blocks (the tour, the subscriber types, redaction), compiled and run
/// as doctests so they stay true. They live here, not in notify-core, because the README is outside
/// notify-core's package.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// The guides in docs/ (their code blocks are doctests too, so they stay true).
#[cfg(doctest)]
pub mod docs {
    /// docs/making-events.md
    #[doc = include_str!("../docs/making-events.md")]
    pub struct MakingEvents;
    /// docs/subscribers.md
    #[doc = include_str!("../docs/subscribers.md")]
    pub struct Subscribers;
    /// docs/semantics.md
    #[doc = include_str!("../docs/semantics.md")]
    pub struct Semantics;
    /// docs/redaction.md
    #[doc = include_str!("../docs/redaction.md")]
    pub struct Redaction;
    /// docs/async.md
    #[doc = include_str!("../docs/async.md")]
    pub struct Async;
    /// docs/bridges.md
    #[doc = include_str!("../docs/bridges.md")]
    pub struct Bridges;
    /// docs/nats.md
    #[doc = include_str!("../docs/nats.md")]
    pub struct Nats;
    /// docs/context.md
    #[doc = include_str!("../docs/context.md")]
    pub struct Context;
    /// docs/trace-context.md
    #[doc = include_str!("../docs/trace-context.md")]
    pub struct TraceContext;
}
