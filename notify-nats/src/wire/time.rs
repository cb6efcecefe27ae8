//! A time on the wire: whole seconds since the Unix epoch and nanoseconds forward.

use std::time::{Duration, SystemTime};

/// `time` as whole seconds since the Unix epoch (negative before it) and nanoseconds forward.
pub(super) fn time_parts(time: SystemTime) -> (i64, u32) {
    match time.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(after) => (i64::try_from(after.as_secs()).unwrap_or(i64::MAX), after.subsec_nanos()),
        Err(before) => {
            let before = before.duration();
            let secs = i64::try_from(before.as_secs()).unwrap_or(i64::MAX);
            match before.subsec_nanos() {
                0 => (-secs, 0),
                nanos => (-secs - 1, 1_000_000_000 - nanos),
            }
        }
    }
}

/// The time `secs` seconds and `nanos` nanoseconds after the Unix epoch, if this platform's
/// `SystemTime` holds it.
pub(super) fn time_from_parts(secs: i64, nanos: u32) -> Option<SystemTime> {
    let epoch = SystemTime::UNIX_EPOCH;
    let nanos = Duration::from_nanos(u64::from(nanos));
    if secs >= 0 {
        epoch
            .checked_add(Duration::from_secs(secs.unsigned_abs()))?
            .checked_add(nanos)
    } else {
        epoch
            .checked_sub(Duration::from_secs(secs.unsigned_abs()))?
            .checked_add(nanos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_split_into_seconds_and_forward_nanoseconds() {
        let epoch = SystemTime::UNIX_EPOCH;
        for (time, parts) in [
            (epoch, (0, 0)),
            (epoch + Duration::new(1, 5), (1, 5)),
            (epoch - Duration::new(1, 0), (-1, 0)),
            (epoch - Duration::new(1, 5), (-2, 999_999_995)),
        ] {
            assert_eq!(time_parts(time), parts);
            assert_eq!(time_from_parts(parts.0, parts.1), Some(time));
        }
    }
}
