//! [`Padded`]: a value alone on its cache line(s).

/// A value alone on its cache line(s), so counters written by different threads do not share one.
#[repr(align(128))]
#[derive(Debug, Default)]
pub(crate) struct Padded<T>(pub(crate) T);
