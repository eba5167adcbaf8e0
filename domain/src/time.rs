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
