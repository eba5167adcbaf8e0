//! Seats: which machine an activation is, and what a full licence tells the client.

use crate::signing::MachineFingerprint;
use crate::text::MachineName;

/// One machine: its fingerprint when the activation sent `X-Machine-Fingerprint`, else the
/// machine name it gave. Re-activating the same machine finds its seat.
pub fn machine_key(fingerprint: Option<&MachineFingerprint>, name: &MachineName) -> String {
    match fingerprint {
        Some(fp) => format!("fp:{}", fp.as_str()),
        None => format!("name:{}", name.as_str()),
    }
}

/// The seat an offline licence file holds: its machine's, when the file is bound to one,
/// else one of its own (`offline:<machine id>`, one per unbound file).
pub fn offline_machine_key(fingerprint: Option<&MachineFingerprint>, machine_id: &str) -> String {
    match fingerprint {
        Some(fp) => format!("fp:{}", fp.as_str()),
        None => format!("offline:{machine_id}"),
    }
}

/// Seats a new licence of each tier gets when its maker names none (`team=3,agency=10`);
/// a tier not named is unlimited.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SeatDefaults(Vec<(tidemark_wire::Tier, u64)>);

impl SeatDefaults {
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut pairs = Vec::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (tier, seats) = part
                .split_once('=')
                .ok_or_else(|| format!("{part:?} is not <tier>=<seats>"))?;
            let tier = tidemark_wire::Tier::parse(tier.trim()).ok_or_else(|| {
                format!("{:?} is no tier (team, agency, enterprise)", tier.trim())
            })?;
            let seats: u64 = seats
                .trim()
                .parse()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| {
                    format!("{:?} is not a number of seats (1 or more)", seats.trim())
                })?;
            pairs.push((tier, seats));
        }
        Ok(SeatDefaults(pairs))
    }

    /// The seats a new licence of `tier` gets unless its maker says.
    pub fn for_tier(&self, tier: tidemark_wire::Tier) -> Option<u64> {
        self.0.iter().find(|(t, _)| *t == tier).map(|(_, n)| *n)
    }

    pub fn describe(&self) -> String {
        if self.0.is_empty() {
            return "unlimited seats by default".to_owned();
        }
        let parts: Vec<String> = self
            .0
            .iter()
            .map(|(t, n)| format!("{}={n}", t.as_str()))
            .collect();
        format!("default seats {}", parts.join(","))
    }
}

/// Every seat is taken: what an offline file asked for too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeatsFull(pub u64);

impl std::fmt::Display for SeatsFull {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&seat_limit_message(self.0))
    }
}

impl std::error::Error for SeatsFull {}

/// The `seat_limit_reached` message: the limit, and how to free a seat.
pub fn seat_limit_message(limit: u64) -> String {
    let seats = if limit == 1 { "seat is" } else { "seats are" };
    format!(
        "This license's {limit} {seats} all held by other machines. A machine that already \
         holds a seat activates again without a new one; to move the license to this machine, \
         ask the vendor's support to release a seat (its API keys stop working) or to raise the \
         limit."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_machine_is_its_fingerprint_else_its_name() {
        let name = MachineName::parse("ci-runner-3").unwrap();
        let fp = MachineFingerprint::parse("sha256:abc").unwrap();
        assert_eq!(machine_key(Some(&fp), &name), "fp:sha256:abc");
        assert_eq!(machine_key(None, &name), "name:ci-runner-3");
        assert!(seat_limit_message(1).contains("1 seat is all held"));
        assert!(seat_limit_message(3).contains("3 seats are all held"));
        assert_eq!(offline_machine_key(Some(&fp), "mch_1"), "fp:sha256:abc");
        assert_eq!(offline_machine_key(None, "mch_1"), "offline:mch_1");
        let defaults = SeatDefaults::parse("team=3, agency=10").unwrap();
        assert_eq!(defaults.for_tier(tidemark_wire::Tier::Team), Some(3));
        assert_eq!(defaults.for_tier(tidemark_wire::Tier::Enterprise), None);
        assert!(SeatDefaults::parse("team=0")
            .unwrap_err()
            .contains("1 or more"));
        assert!(SeatDefaults::parse("gold=3").unwrap_err().contains("gold"));
    }
}
