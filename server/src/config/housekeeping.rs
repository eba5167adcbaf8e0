//! How long scans keep their findings, and how often one replica thins them.

use tidemark_domain::housekeeping::Policy;
use tidemark_domain::time::DAY_MS;

use super::{ConfigError, Vars};

#[derive(Debug, Clone)]
pub struct HousekeepingConfig {
    /// The installation's housekeeping policy (`TIDEMARK_HOUSEKEEPING`: `name=age` pairs over
    /// the defaults, e.g. `keep_all=2d,monthly_after=104w`, see `domain::housekeeping`), or
    /// `None` when housekeeping is off (`TIDEMARK_HOUSEKEEPING=off`).
    pub policy: Option<Policy>,
    /// Minutes between housekeeping passes (`TIDEMARK_HOUSEKEEPING_INTERVAL_MINUTES`,
    /// default 60); one replica at a time runs them.
    pub interval_minutes: u32,
}

/// `name=age` pairs (comma-separated) over the default housekeeping policy, checked once
/// after every pair is applied.
pub fn parse_housekeeping(pairs: &str) -> Result<Policy, String> {
    Policy::default().with_pairs(pairs)
}

impl HousekeepingConfig {
    pub fn read(vars: &Vars) -> Result<Self, ConfigError> {
        let name = "TIDEMARK_HOUSEKEEPING";
        let policy = match vars.get(name).as_deref().map(str::trim) {
            Some("off") => None,
            None | Some("") => Some(Policy::default()),
            Some(pairs) => {
                Some(parse_housekeeping(pairs).map_err(|r| ConfigError::invalid(name, r))?)
            }
        };
        let interval_minutes = vars.number("TIDEMARK_HOUSEKEEPING_INTERVAL_MINUTES", 60)?;
        Ok(Self {
            policy,
            interval_minutes,
        })
    }

    pub fn summary(&self) -> String {
        match &self.policy {
            None => "off".to_owned(),
            Some(p) => format!(
                "every {} min: all findings kept {} d, then weekly after {} d, monthly after {} d",
                self.interval_minutes,
                p.keep_all / DAY_MS,
                p.weekly_after / DAY_MS,
                p.monthly_after / DAY_MS
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::config;

    /// Issue 44: `keep_all=45d,weekly_after=90d` is a valid policy; checked pair by pair over
    /// the defaults (weekly_after 30d) it stopped the server at start.
    #[test]
    fn a_housekeeping_policy_is_checked_whole_whatever_the_order_of_its_pairs() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().to_str().unwrap();
        for pairs in [
            "keep_all=45d,weekly_after=90d",
            "weekly_after=90d, keep_all=45d",
        ] {
            let c = config(&[
                ("TIDEMARK_DATA_DIR", data),
                ("TIDEMARK_HOUSEKEEPING", pairs),
            ]);
            let policy = c.unwrap().housekeeping.policy.unwrap();
            assert_eq!(
                (policy.keep_all, policy.weekly_after),
                (45 * 86_400_000, 90 * 86_400_000),
                "{pairs}"
            );
        }
        let refused = config(&[
            ("TIDEMARK_DATA_DIR", data),
            ("TIDEMARK_HOUSEKEEPING", "weekly_after=90d,keep_all=100d"),
        ])
        .err()
        .unwrap();
        assert_eq!(
            refused.to_string(),
            "TIDEMARK_HOUSEKEEPING is not valid: keep_all (100d) must not be longer than \
             weekly_after (90d)"
        );
        let off = config(&[
            ("TIDEMARK_DATA_DIR", data),
            ("TIDEMARK_HOUSEKEEPING", "off"),
        ]);
        assert_eq!(off.unwrap().housekeeping.summary(), "off");
    }
}
