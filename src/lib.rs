//! Code shared by notify's examples and benchmarks (not published).

pub mod bookstore;
