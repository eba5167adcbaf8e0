//! How the dashboard writes times: UTC, to the minute ("2026-11-22 06:43 UTC").

pub fn format_time(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
        .unwrap_or_default()
}

/// The day only ("2026-11-22"), in UTC.
pub fn date(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.format("%Y-%m-%d").to_string())
        .unwrap_or_default()
}

/// How long before `now` `ms` was, as people say it: "just now", "5 minutes ago", "3 hours
/// ago", "yesterday", "12 days ago", "4 months ago", "2 years ago".
pub fn ago(ms: i64, now: i64) -> String {
    let secs = (now - ms).max(0) / 1000;
    let plural = |n: i64, unit: &str| {
        if n == 1 {
            format!("1 {unit} ago")
        } else {
            format!("{n} {unit}s ago")
        }
    };
    match secs {
        0..60 => "just now".to_owned(),
        60..3_600 => plural(secs / 60, "minute"),
        3_600..86_400 => plural(secs / 3_600, "hour"),
        86_400..172_800 => "yesterday".to_owned(),
        172_800..5_184_000 => plural(secs / 86_400, "day"),
        5_184_000..63_072_000 => plural(secs / 2_592_000, "month"),
        _ => plural(secs / 31_536_000, "year"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_as_people_say_them() {
        let now = 1_800_000_000_000;
        let before = |secs: i64| ago(now - secs * 1000, now);
        assert_eq!(before(5), "just now");
        assert_eq!(before(60), "1 minute ago");
        assert_eq!(before(7_200), "2 hours ago");
        assert_eq!(before(90_000), "yesterday");
        assert_eq!(before(12 * 86_400), "12 days ago");
        assert_eq!(before(120 * 86_400), "4 months ago");
        assert_eq!(before(800 * 86_400), "2 years ago");
        // A clock a little behind the scanner's is "just now", not the future.
        assert_eq!(ago(now + 5_000, now), "just now");
    }
}
