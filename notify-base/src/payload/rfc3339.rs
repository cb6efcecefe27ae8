//! The text of a wall-clock time: RFC 3339 UTC with nanoseconds, for every `SystemTime`.

use std::fmt;
use std::time::SystemTime;

/// Writes a time as `YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ` (RFC 3339, UTC, nanoseconds), before 1970
/// too. Years outside 0000–9999, which RFC 3339 cannot write, get ISO 8601's expanded form
/// (`+10000-01-01T…`, `-0001-12-31T…`), so no time makes `Display` fail or panic.
pub(crate) struct Rfc3339(pub(crate) SystemTime);

impl fmt::Display for Rfc3339 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (secs, nanos) = unix_parts(self.0);
        let days = secs.div_euclid(86_400);
        let of_day = secs.rem_euclid(86_400);
        let (year, month, day) = civil_from_days(days);
        if (0..=9999).contains(&year) {
            write!(f, "{year:04}")?;
        } else {
            write!(f, "{year:+06}")?;
        }
        write!(
            f,
            "-{month:02}-{day:02}T{:02}:{:02}:{:02}.{nanos:09}Z",
            of_day / 3600,
            of_day / 60 % 60,
            of_day % 60
        )
    }
}

/// Whole seconds since the Unix epoch (negative before it; as i128, so that no `SystemTime`
/// overflows) and nanoseconds forward from there.
fn unix_parts(time: SystemTime) -> (i128, u32) {
    match time.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(after) => (i128::from(after.as_secs()), after.subsec_nanos()),
        Err(before) => {
            let before = before.duration();
            let secs = i128::from(before.as_secs());
            match before.subsec_nanos() {
                0 => (-secs, 0),
                nanos => (-secs - 1, 1_000_000_000 - nanos),
            }
        }
    }
}

/// The proleptic Gregorian (year, month, day) of a day number (0 = 1970-01-01), after Howard
/// Hinnant's `civil_from_days`.
fn civil_from_days(days: i128) -> (i128, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // [0, 146096]
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // [0, 11]
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32; // [1, 31]
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32; // [1, 12]
    let year = yoe + era * 400 + i128::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn text(time: SystemTime) -> String {
        Rfc3339(time).to_string()
    }

    #[test]
    fn times_after_1970_as_rfc_3339() {
        let epoch = SystemTime::UNIX_EPOCH;
        assert_eq!(text(epoch), "1970-01-01T00:00:00.000000000Z");
        assert_eq!(
            text(epoch + Duration::new(1_700_000_000, 5)),
            "2023-11-14T22:13:20.000000005Z"
        );
        assert_eq!(
            text(epoch + Duration::new(951_782_400, 0)),
            "2000-02-29T00:00:00.000000000Z"
        );
        assert_eq!(
            text(epoch + Duration::new(253_402_300_799, 999_999_999)),
            "9999-12-31T23:59:59.999999999Z"
        );
    }

    #[test]
    fn times_before_1970_and_after_9999_never_fail() {
        let epoch = SystemTime::UNIX_EPOCH;
        assert_eq!(text(epoch - Duration::new(0, 1)), "1969-12-31T23:59:59.999999999Z");
        assert_eq!(text(epoch - Duration::new(86_400, 0)), "1969-12-31T00:00:00.000000000Z");
        assert_eq!(
            text(epoch - Duration::new(62_167_219_200, 0)),
            "0000-01-01T00:00:00.000000000Z"
        );
        assert_eq!(
            text(epoch - Duration::new(62_167_219_201, 0)),
            "-00001-12-31T23:59:59.000000000Z"
        );
        assert_eq!(
            text(epoch + Duration::new(253_402_300_800, 0)),
            "+10000-01-01T00:00:00.000000000Z"
        );
        // The extremes of this platform's SystemTime format without panicking.
        let _ = text(epoch + Duration::new(i64::MAX as u64, 999_999_999));
        let _ = text(epoch - Duration::new(i64::MAX as u64, 0));
    }

    #[test]
    fn agrees_with_humantime_where_it_is_defined() {
        let epoch = SystemTime::UNIX_EPOCH;
        for secs in [0_u64, 59, 86_399, 1_000_000_007, 4_102_444_800, 253_402_300_799] {
            for nanos in [0, 1, 999_999_999] {
                let t = epoch + Duration::new(secs, nanos);
                assert_eq!(text(t), humantime::format_rfc3339_nanos(t).to_string());
            }
        }
    }
}
