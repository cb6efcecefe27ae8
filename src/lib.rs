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
