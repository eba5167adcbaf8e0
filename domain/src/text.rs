//! Text values with rules of their own: e-mail addresses, machine names.

use crate::input::{bounded_text, FieldError};

/// An e-mail address that parsed (RFC 5322 `addr-spec`). Compared case-insensitively.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Email(String);

impl Email {
    pub fn parse(raw: &str) -> Result<Email, FieldError> {
        let raw = raw.trim();
        let invalid = || FieldError::new("email", "email must be a valid e-mail address".into());
        if raw.len() > 254 || raw.chars().any(|c| c.is_control() || c.is_whitespace()) {
            return Err(invalid());
        }
        let parsed: email_address::EmailAddress = raw.parse().map_err(|_| invalid())?;
        // A bare local part or a single-label domain is not deliverable in practice.
        if !parsed.domain().contains('.') || parsed.display_part() != "" {
            return Err(invalid());
        }
        Ok(Email(raw.to_lowercase()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn domain(&self) -> &str {
        self.0.rsplit_once('@').map(|(_, d)| d).unwrap_or("")
    }
}

/// The name of a machine or CI secret an API key is issued for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MachineName(String);

impl MachineName {
    pub fn parse(raw: &str) -> Result<MachineName, FieldError> {
        bounded_text("machine", raw, 128)?;
        Ok(MachineName(raw.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails_parse_or_are_refused_by_name() {
        assert_eq!(
            Email::parse(" Alice@Example.COM ").unwrap().as_str(),
            "alice@example.com"
        );
        assert_eq!(Email::parse("a@b.example").unwrap().domain(), "b.example");
        for bad in [
            "",
            "alice",
            "alice@",
            "@example.com",
            "a b@example.com",
            "alice@localhost",
            "Alice <a@b.com>",
        ] {
            let err = Email::parse(bad).unwrap_err();
            assert_eq!(err.field, "email", "{bad}");
        }
    }

    #[test]
    fn machine_names_are_bounded() {
        assert!(MachineName::parse("ci-main").is_ok());
        assert!(MachineName::parse("").is_err());
        assert!(MachineName::parse(&"m".repeat(129)).is_err());
        assert!(MachineName::parse("a\u{7}b").is_err());
    }
}

/// A size as people read it: `512 B`, `21.6 KiB`, `3.4 MiB`, `1.2 GiB` (powers of 1,024).
pub fn bytes(n: i64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n.abs() < 1024 {
        return format!("{n} B");
    }
    let mut size = n as f64 / 1024.0;
    let mut unit = 0;
    while size.abs() >= 1024.0 && unit < UNITS.len() - 1 {
        size /= 1024.0;
        unit += 1;
    }
    format!("{size:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod bytes_tests {
    #[test]
    fn sizes_read_in_binary_units() {
        assert_eq!(super::bytes(512), "512 B");
        assert_eq!(super::bytes(22_118), "21.6 KiB");
        assert_eq!(super::bytes(3 * 1024 * 1024 + 400_000), "3.4 MiB");
        assert_eq!(super::bytes(1_288_490_189), "1.2 GiB");
    }
}

/// A difference of two scores as text with the decimals the scores have: `71.3 - 74.1` is
/// `-2.8`, not the float's `-2.799999999999997`. Scores are sent with a few decimals at most,
/// so six are kept and the shortest text of the rounded value is written.
pub fn score_delta(delta: f64) -> String {
    let rounded = (delta * 1e6).round() / 1e6;
    if rounded == 0.0 {
        // Never "-0".
        return "0".to_owned();
    }
    rounded.to_string()
}

#[cfg(test)]
mod score_delta_tests {
    #[test]
    fn a_delta_has_the_decimals_of_its_scores() {
        assert_eq!(super::score_delta(71.3 - 74.1), "-2.8");
        assert_eq!(super::score_delta(88.25 - 80.0), "8.25");
        assert_eq!(super::score_delta(0.1 + 0.2), "0.3");
        assert_eq!(super::score_delta(70.0 - 70.0), "0");
        assert_eq!(super::score_delta(-0.0), "0");
        assert_eq!(super::score_delta(-100.0), "-100");
    }
}
