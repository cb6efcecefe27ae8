//! The JSON form of wall-clock times: RFC 3339 UTC strings with nanoseconds.

use std::fmt;
use std::time::SystemTime;

use serde::de::{self, Visitor};
use serde::{Deserializer, Serializer};

/// Writes `time` as `"YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ"`.
pub(crate) fn serialize<S: Serializer>(time: SystemTime, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(&crate::payload::Rfc3339(time))
}

/// Reads an RFC 3339 UTC time (`Z`; fraction optional, up to nanoseconds; any year
/// [`Rfc3339`](crate::payload::Rfc3339) writes, before 1970 and past 9999 included).
pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<SystemTime, D::Error> {
    d.deserialize_str(TimeVisitor)
}

/// Parses one RFC 3339 UTC time, with an error naming the text.
pub(crate) fn parse<E: de::Error>(text: &str) -> Result<SystemTime, E> {
    crate::payload::parse_rfc3339(text).map_err(|e| {
        E::custom(format_args!(
            "invalid RFC 3339 UTC time \"{}\": {e}",
            crate::escape::Excerpt::new(text)
        ))
    })
}

struct TimeVisitor;

impl Visitor<'_> for TimeVisitor {
    type Value = SystemTime;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an RFC 3339 UTC time such as \"2024-05-01T12:00:00.123456789Z\"")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<SystemTime, E> {
        parse(text)
    }
}
