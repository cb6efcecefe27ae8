//! Serde support (feature `serde`): [`Payload`](crate::Payload), [`Value`](crate::Value),
//! [`Key`](crate::Key), [`Outcome`](crate::Outcome) and [`Event`](crate::Event) serialize and
//! deserialize; the forms are documented on each type.
//!
//! Times of day are RFC 3339 UTC strings with nanoseconds (`"2024-05-01T12:00:00.123456789Z"`):
//! JavaScript (and so `jq`, browsers, most JSON tooling) reads every JSON number as an IEEE double,
//! exact only up to 2^53, and nanoseconds since 1970 are above 2^62; the string keeps every
//! nanosecond, `Date.parse` reads it (to the millisecond) and it sorts as text. Durations are
//! whole nanoseconds as numbers: exact in JavaScript up to 2^53 ns (104 days).

mod event;
mod payload;
mod time;
