//! How long things are kept: ages as operators write them (`90d`), and which lines of a
//! project's history a prune removes.

use crate::Millis;

/// The default age after which `tidemark-server prune` removes a branch or pull request that
/// has seen no push: long enough for a paused pull request, short enough that merged ones go.
pub const DEFAULT_BRANCH_AGE: &str = "90d";

/// A duration written as a whole number and a unit: `h` (hours), `d` (days) or `w` (weeks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Age(Millis);

impl Age {
    pub fn parse(text: &str) -> Result<Age, String> {
        let text = text.trim();
        let refuse = || {
            format!("{text:?} is not an age: write a whole number and h, d or w, e.g. 90d or 12w")
        };
        let unit = text.chars().last().ok_or_else(refuse)?;
        let per: Millis = match unit {
            'h' => HOUR,
            'd' => DAY,
            'w' => crate::time::WEEK_MS,
            _ => return Err(refuse()),
        };
        let n: Millis = text[..text.len() - 1].parse().map_err(|_| refuse())?;
        if n < 1 {
            return Err(format!("{text:?}: an age must be at least 1{unit}"));
        }
        n.checked_mul(per).map(Age).ok_or_else(refuse)
    }

    pub fn millis(self) -> Millis {
        self.0
    }

    /// An age kept as milliseconds, to be written back the way an operator writes one.
    pub fn from_millis(millis: Millis) -> Age {
        Age(millis)
    }

    /// In words, in the unit it was most likely written in: whole days as days ("a day",
    /// "30 days"), anything else as hours ("12 hours", "36 hours"), never rounded to "0 days".
    pub fn in_words(self) -> String {
        let (n, one, many) = self.unit();
        match n {
            1 => one.to_owned(),
            n => format!("{n} {many}"),
        }
    }

    /// The instant `self` before `now`.
    pub fn before(self, now: Millis) -> Millis {
        now.saturating_sub(self.0)
    }

    fn unit(self) -> (Millis, &'static str, &'static str) {
        if self.0 % DAY == 0 {
            (self.0 / DAY, "a day", "days")
        } else {
            (self.0.div_euclid(HOUR).max(1), "an hour", "hours")
        }
    }
}

use crate::time::{DAY_MS as DAY, HOUR_MS as HOUR};

/// As an operator writes it (`36h`, `30d`): what [`Age::parse`] reads back to the same age.
impl std::fmt::Display for Age {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (n, _, many) = self.unit();
        write!(f, "{n}{}", &many[..1])
    }
}

/// Whether a line may be pruned at `cutoff`: never the project's default branch, and only
/// when its last push (or, with none, its creation) is older than the cutoff.
pub fn prunable(
    is_default: bool,
    last_push_at: Option<Millis>,
    created_at: Millis,
    cutoff: Millis,
) -> bool {
    !is_default && last_push_at.unwrap_or(created_at) < cutoff
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_parse_in_hours_days_and_weeks() {
        assert_eq!(Age::parse("90d").unwrap().millis(), 90 * 86_400_000);
        assert_eq!(Age::parse(" 2w ").unwrap().millis(), 14 * 86_400_000);
        assert_eq!(Age::parse("36h").unwrap().millis(), 36 * 3_600_000);
        assert_eq!(
            Age::parse(DEFAULT_BRANCH_AGE)
                .unwrap()
                .before(100 * 86_400_000),
            10 * 86_400_000
        );
        for bad in [
            "",
            "d",
            "90",
            "90m",
            "-1d",
            "0d",
            "1.5d",
            "99999999999999999d",
            "9e9d",
        ] {
            assert!(Age::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn ages_are_written_back_in_the_unit_they_were_given_in() {
        for (given, words) in [
            ("12h", "12 hours"),
            ("36h", "36 hours"),
            ("1h", "an hour"),
            ("24h", "a day"),
            ("1d", "a day"),
            ("30d", "30 days"),
            ("2w", "14 days"),
        ] {
            let age = Age::parse(given).unwrap();
            assert_eq!(age.in_words(), words, "{given}");
            assert_eq!(Age::parse(&age.to_string()), Ok(age), "{given} as {age}");
        }
        assert_eq!(Age::parse("36h").unwrap().to_string(), "36h");
        assert_eq!(Age::parse("2w").unwrap().to_string(), "14d");
    }

    #[test]
    fn only_quiet_lines_other_than_the_default_are_pruned() {
        assert!(prunable(false, Some(5), 1, 10));
        assert!(
            !prunable(false, Some(10), 1, 10),
            "pushed at the cutoff: kept"
        );
        assert!(
            !prunable(true, Some(5), 1, 10),
            "the default branch always stays"
        );
        assert!(
            prunable(false, None, 5, 10),
            "never pushed: by its creation"
        );
    }
}
