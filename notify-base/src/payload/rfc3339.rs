//! The text of a wall-clock time: RFC 3339 UTC with nanoseconds, for every `SystemTime`, and
//! back.

use std::fmt;
use std::time::{Duration, SystemTime};

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

/// Reads the text [`Rfc3339`] writes, and any RFC 3339 UTC time: `YYYY-MM-DDTHH:MM:SS`, an
/// optional fraction of 1 to 9 digits, `Z` (`t` and `z` in lower case too); years outside
/// 0000–9999 in ISO 8601's expanded form (a sign and at least 5 digits). Before 1970 too, which
/// `humantime` (used before) refused. The error says which part is wrong.
#[cfg_attr(not(feature = "serde"), allow(dead_code))]
pub(crate) fn parse(text: &str) -> Result<SystemTime, &'static str> {
    let mut rest = text.as_bytes();
    let year = match rest.first() {
        Some(&sign @ (b'+' | b'-')) => {
            let digits = rest[1..].iter().take_while(|b| b.is_ascii_digit()).count();
            if !(5..=12).contains(&digits) {
                return Err("an expanded year has a sign and 5 to 12 digits");
            }
            let year = number(&rest[1..=digits]);
            rest = &rest[1 + digits..];
            if sign == b'-' {
                -year
            } else {
                year
            }
        }
        _ => take_number(&mut rest, 4).ok_or("the year is 4 digits")?,
    };
    let month = field(&mut rest, b'-', "the month is '-' and 2 digits")?;
    let day = field(&mut rest, b'-', "the day is '-' and 2 digits")?;
    match rest.first() {
        Some(b'T' | b't') => rest = &rest[1..],
        _ => return Err("the date and the time are separated by 'T'"),
    }
    let hour = take_number(&mut rest, 2).ok_or("the hour is 2 digits")?;
    let minute = field(&mut rest, b':', "the minutes are ':' and 2 digits")?;
    let second = field(&mut rest, b':', "the seconds are ':' and 2 digits")?;
    let mut nanos = 0;
    if let Some(b'.') = rest.first() {
        let digits = rest[1..].iter().take_while(|b| b.is_ascii_digit()).count();
        if !(1..=9).contains(&digits) {
            return Err("the fraction of a second is '.' and 1 to 9 digits");
        }
        nanos = number(&rest[1..=digits]) * 10_i128.pow(9 - digits as u32);
        rest = &rest[1 + digits..];
    }
    if !matches!(rest, [b'Z' | b'z']) {
        return Err("the time ends with 'Z' (UTC), and nothing after it");
    }
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return Err("no such date");
    }
    if hour > 23 || minute > 59 || second > 59 {
        return Err("no such time of day (a leap second is not a SystemTime)");
    }
    let secs = days_from_civil(year, month, day) * 86_400 + hour * 3_600 + minute * 60 + second;
    let time = if secs >= 0 {
        u64::try_from(secs)
            .ok()
            .and_then(|secs| SystemTime::UNIX_EPOCH.checked_add(Duration::new(secs, nanos as u32)))
    } else {
        u64::try_from(-secs).ok().and_then(|before| {
            SystemTime::UNIX_EPOCH
                .checked_sub(Duration::from_secs(before))?
                .checked_add(Duration::new(0, nanos as u32))
        })
    };
    time.ok_or("out of the range of this platform's SystemTime")
}

/// The number `len` ASCII digits at the front of `rest` make, consumed.
#[cfg_attr(not(feature = "serde"), allow(dead_code))]
fn take_number(rest: &mut &[u8], len: usize) -> Option<i128> {
    let digits = rest.get(..len)?;
    if !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    *rest = &rest[len..];
    Some(number(digits))
}

/// `separator` then 2 digits, consumed.
#[cfg_attr(not(feature = "serde"), allow(dead_code))]
fn field(rest: &mut &[u8], separator: u8, error: &'static str) -> Result<i128, &'static str> {
    match rest.split_first() {
        Some((&first, after)) if first == separator => {
            *rest = after;
            take_number(rest, 2).ok_or(error)
        }
        _ => Err(error),
    }
}

/// The value of ASCII digits (at most 12, so no overflow).
#[cfg_attr(not(feature = "serde"), allow(dead_code))]
fn number(digits: &[u8]) -> i128 {
    digits.iter().fold(0, |n, d| n * 10 + i128::from(d - b'0'))
}

#[cfg_attr(not(feature = "serde"), allow(dead_code))]
fn days_in_month(year: i128, month: i128) -> i128 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// The day number (0 = 1970-01-01) of a proleptic Gregorian date: the inverse of
/// [`civil_from_days`], after Howard Hinnant's `days_from_civil`.
#[cfg_attr(not(feature = "serde"), allow(dead_code))]
fn days_from_civil(year: i128, month: i128, day: i128) -> i128 {
    let year = year - i128::from(month <= 2);
    let era = year.div_euclid(400);
    let yoe = year.rem_euclid(400); // [0, 399]
    let mp = (month + 9) % 12; // March = 0
    let doy = (153 * mp + 2) / 5 + day - 1; // [0, 365]
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy; // [0, 146096]
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
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

    #[test]
    fn every_written_time_reads_back_exactly() {
        let epoch = SystemTime::UNIX_EPOCH;
        let mut times = vec![epoch, epoch - Duration::new(0, 1), epoch + Duration::new(0, 1)];
        for secs in [
            1_u64,
            59,
            86_399,
            86_400,
            951_782_400,
            1_700_000_000,
            253_402_300_799,
            253_402_300_800,
        ] {
            for nanos in [0, 1, 123_456_789, 999_999_999] {
                times.push(epoch + Duration::new(secs, nanos));
                times.push(epoch - Duration::new(secs, nanos));
            }
        }
        // 1960 (the reviewer's case), year 0, year -1, year 11476.
        times.push(epoch - Duration::from_secs(10 * 365 * 86_400));
        times.push(epoch - Duration::new(62_167_219_200, 0));
        times.push(epoch - Duration::new(62_167_219_201, 5));
        times.push(epoch + Duration::new(300_000_000_000, 7));
        for t in times {
            let written = text(t);
            assert_eq!(parse(&written), Ok(t), "{written}");
        }
    }

    #[test]
    fn every_day_of_four_centuries_reads_back() {
        // 1600-03-01 .. 2000-03-01 crosses every leap-year rule, before and after 1970.
        let start = -135_081_i128; // days from 1970-01-01 to 1600-03-01
        for day in start..start + 146_097 {
            let t = if day >= 0 {
                SystemTime::UNIX_EPOCH + Duration::from_secs(day as u64 * 86_400)
            } else {
                SystemTime::UNIX_EPOCH - Duration::from_secs((-day) as u64 * 86_400)
            };
            assert_eq!(parse(&text(t)), Ok(t));
        }
    }

    #[test]
    fn other_rfc_3339_forms_and_bad_text() {
        let epoch = SystemTime::UNIX_EPOCH;
        assert_eq!(parse("1970-01-01t00:00:01z"), Ok(epoch + Duration::from_secs(1)));
        assert_eq!(parse("1970-01-01T00:00:00.5Z"), Ok(epoch + Duration::from_millis(500)));
        assert_eq!(parse("1969-12-31T23:59:59.25Z"), Ok(epoch - Duration::from_millis(750)));
        for (bad, error) in [
            ("", "the year is 4 digits"),
            ("70-01-01T00:00:00Z", "the year is 4 digits"),
            (
                "+1970-01-01T00:00:00Z",
                "an expanded year has a sign and 5 to 12 digits",
            ),
            ("1970/01/01T00:00:00Z", "the month is '-' and 2 digits"),
            ("1970-01-01 00:00:00Z", "the date and the time are separated by 'T'"),
            (
                "1970-01-01T00:00:00",
                "the time ends with 'Z' (UTC), and nothing after it",
            ),
            (
                "1970-01-01T00:00:00+00:00",
                "the time ends with 'Z' (UTC), and nothing after it",
            ),
            (
                "1970-01-01T00:00:00.Z",
                "the fraction of a second is '.' and 1 to 9 digits",
            ),
            (
                "1970-01-01T00:00:00.1234567890Z",
                "the fraction of a second is '.' and 1 to 9 digits",
            ),
            ("1970-02-29T00:00:00Z", "no such date"),
            ("1970-13-01T00:00:00Z", "no such date"),
            (
                "1970-01-01T24:00:00Z",
                "no such time of day (a leap second is not a SystemTime)",
            ),
            (
                "1970-01-01T23:59:60Z",
                "no such time of day (a leap second is not a SystemTime)",
            ),
            (
                "+999999999999-01-01T00:00:00Z",
                "out of the range of this platform's SystemTime",
            ),
        ] {
            assert_eq!(parse(bad), Err(error), "{bad:?}");
        }
        assert_eq!(
            parse("2000-02-29T00:00:00Z"),
            Ok(epoch + Duration::from_secs(951_782_400))
        );
    }
}
