//! Dates on pages: seconds since the epoch as a civil date and time in UTC, computed here so
//! that no date crate is needed.
//!
//! Its own file so that the instance and history pages share it without importing the module
//! root.

/// A date and time (UTC) from seconds since the epoch.
pub fn time(seconds: f64) -> String {
    let secs = seconds as i64;
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn times_are_civil_utc() {
        assert_eq!(super::time(0.0), "1970-01-01 00:00:00 UTC");
        assert_eq!(super::time(1_700_000_000.0), "2023-11-14 22:13:20 UTC");
    }
}
