//! Code shared by notify's examples and benchmarks (not published).

#![warn(missing_docs)]

pub mod baseline;
pub mod bookstore;
