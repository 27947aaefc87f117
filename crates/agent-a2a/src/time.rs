//! RFC 3339 timestamps (UTC, milliseconds), as A2A's `timestamp` fields hold them.

use chrono::{DateTime, SecondsFormat, Utc};

/// Now, e.g. `2026-12-01T20:14:37.123Z`.
#[must_use]
pub fn now_rfc3339() -> String {
    Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Milliseconds since the epoch as RFC 3339 UTC (the epoch itself for an instant chrono cannot
/// represent, hundreds of thousands of years away).
#[must_use]
pub fn rfc3339_of_ms(ms: i64) -> String {
    DateTime::from_timestamp_millis(ms)
        .unwrap_or_default()
        .to_rfc3339_opts(SecondsFormat::Millis, true)
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
