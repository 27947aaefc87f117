//! RFC 3339 timestamps (UTC, milliseconds), as A2A's `timestamp` fields hold them.

use std::time::{SystemTime, UNIX_EPOCH};

/// Now, e.g. `2026-12-01T20:14:37.123Z`.
#[must_use]
pub fn now_rfc3339() -> String {
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or_default();
    rfc3339_of_ms(ms)
}

/// Milliseconds since the epoch as RFC 3339 UTC.
#[must_use]
pub fn rfc3339_of_ms(ms: i64) -> String {
    let seconds = ms.div_euclid(1000);
    let millis = ms.rem_euclid(1000);
    let days = seconds.div_euclid(86_400);
    let in_day = seconds.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        in_day / 3600,
        in_day % 3600 / 60,
        in_day % 60
    )
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_instants() {
        assert_eq!(rfc3339_of_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339_of_ms(951_782_400_001), "2000-02-29T00:00:00.001Z");
        assert_eq!(rfc3339_of_ms(1_796_156_077_123), "2026-12-01T20:14:37.123Z");
    }
}
