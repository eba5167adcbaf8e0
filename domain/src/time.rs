//! Time as Tidemark stores it (milliseconds since the Unix epoch) and the spans the rules
//! count in, written once.

/// Milliseconds since the Unix epoch: how every timestamp is stored.
pub type Millis = i64;

pub const SECOND_MS: Millis = 1_000;
pub const MINUTE_MS: Millis = 60 * SECOND_MS;
pub const HOUR_MS: Millis = 60 * MINUTE_MS;
pub const DAY_MS: Millis = 24 * HOUR_MS;
pub const WEEK_MS: Millis = 7 * DAY_MS;

pub fn to_rfc3339(ms: Millis) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

pub fn now_millis() -> Millis {
    chrono::Utc::now().timestamp_millis()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_are_what_they_say() {
        assert_eq!(DAY_MS, 86_400_000);
        assert_eq!(WEEK_MS, 604_800_000);
        assert_eq!(to_rfc3339(DAY_MS), "1970-01-02T00:00:00Z");
    }
}

/// An RFC 3339 time (`2027-03-01T00:00:00Z`, any offset) as milliseconds, between 1970 and
/// the year 9999; `field` names it in the refusal.
pub fn parse_rfc3339(field: &str, text: &str) -> Result<Millis, String> {
    chrono::DateTime::parse_from_rfc3339(text.trim())
        .ok()
        .map(|t| t.timestamp_millis())
        .filter(|ms| (0..253_402_300_800_000).contains(ms))
        .ok_or_else(|| {
            format!("{field} must be an RFC 3339 time such as 2027-03-01T00:00:00Z (1970 to 9999)")
        })
}

#[cfg(test)]
mod parse_tests {
    use super::*;

    #[test]
    fn rfc3339_times_within_range_are_read() {
        assert_eq!(parse_rfc3339("at", "1970-01-01T00:00:01Z"), Ok(1_000));
        assert_eq!(
            parse_rfc3339("at", " 2027-03-01T01:00:00+01:00 "),
            Ok(1_803_859_200_000)
        );
        for bad in ["", "2027-03-01", "1969-12-31T23:59:59Z", "tomorrow"] {
            let refused = parse_rfc3339("expires_at", bad).unwrap_err();
            assert!(
                refused.starts_with("expires_at must be"),
                "{bad}: {refused}"
            );
        }
    }
}
