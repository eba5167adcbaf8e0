//! The business at a glance, from the licences as they stand: how many were in force at each
//! month's start by tier, how many began and ended each month, and which end soon. Plain
//! functions over the licences' dates, so the console's figures are tested without a database.
//!
//! A licence is in force at `t` when it was made by then, expires after it and was not
//! suspended by then. Only a licence's current suspension is known (a suspension lifted since
//! leaves no date here), so a licence that was suspended and resumed counts as in force
//! throughout: the vendor events keep the exact history.

use chrono::{Datelike, TimeZone, Utc};
use tidemark_wire::Tier;

use crate::license::License;
use crate::Millis;

/// The dates that decide whether a licence is in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Term {
    pub tier: Tier,
    pub created_at: Millis,
    pub expires_at: Millis,
    pub suspended_at: Option<Millis>,
}

impl From<&License> for Term {
    fn from(l: &License) -> Self {
        Term {
            tier: l.tier,
            created_at: l.created_at,
            expires_at: l.expires_at,
            suspended_at: l.suspended_at,
        }
    }
}

impl Term {
    pub fn in_force_at(&self, t: Millis) -> bool {
        self.created_at <= t && self.expires_at > t && self.suspended_at.is_none_or(|s| s > t)
    }

    /// When it stopped being in force, if it has by `now`: the earlier of its expiry and its
    /// suspension.
    pub fn ended_by(&self, now: Millis) -> Option<Millis> {
        let end = match self.suspended_at {
            Some(s) => s.min(self.expires_at),
            None => self.expires_at,
        };
        (end <= now).then_some(end)
    }
}

fn tier_index(tier: Tier) -> usize {
    Tier::ALL.iter().position(|t| *t == tier).unwrap_or(0)
}

/// The first instant (UTC) of the month `back` months before the one `now` is in.
fn month_start(now: Millis, back: u32) -> Millis {
    let Some(at) = Utc.timestamp_millis_opt(now).single() else {
        return now;
    };
    let months = at.year() * 12 + at.month0() as i32 - back as i32;
    let (year, month0) = (months.div_euclid(12), months.rem_euclid(12) as u32);
    Utc.with_ymd_and_hms(year, month0 + 1, 1, 0, 0, 0)
        .single()
        .map_or(now, |t| t.timestamp_millis())
}

/// The starts of the last `n` months, oldest first, the current month's last.
pub fn month_starts(now: Millis, n: u32) -> Vec<Millis> {
    (0..n).rev().map(|back| month_start(now, back)).collect()
}

/// At each of `points`, how many licences were in force, per tier (in `Tier::ALL`'s order).
pub fn in_force_by_tier(terms: &[Term], points: &[Millis]) -> Vec<(Millis, [i64; 4])> {
    points
        .iter()
        .map(|t| {
            let mut counts = [0; 4];
            for term in terms.iter().filter(|term| term.in_force_at(*t)) {
                counts[tier_index(term.tier)] += 1;
            }
            (*t, counts)
        })
        .collect()
}

/// One month's comings and goings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MonthFlow {
    pub month: Millis,
    /// Licences made that month.
    pub began: i64,
    /// Licences that stopped being in force that month (expired or suspended), up to `now`.
    pub ended: i64,
}

/// For each month starting at `months` (oldest first; each runs to the next, the last to
/// `now`), the licences made and ended in it.
pub fn flow_by_month(terms: &[Term], months: &[Millis], now: Millis) -> Vec<MonthFlow> {
    months
        .iter()
        .enumerate()
        .map(|(i, start)| {
            let end = months.get(i + 1).copied().unwrap_or(now.saturating_add(1));
            let within = |t: Millis| *start <= t && t < end;
            MonthFlow {
                month: *start,
                began: terms.iter().filter(|t| within(t.created_at)).count() as i64,
                ended: terms
                    .iter()
                    .filter(|t| t.ended_by(now).is_some_and(within))
                    .count() as i64,
            }
        })
        .collect()
}

/// The licences in force now that expire within `within_ms`, soonest first.
pub fn expiring_soon(licences: &[License], now: Millis, within_ms: Millis) -> Vec<&License> {
    let mut soon: Vec<&License> = licences
        .iter()
        .filter(|l| Term::from(*l).in_force_at(now) && l.expires_at <= now + within_ms)
        .collect();
    soon.sort_by_key(|l| (l.expires_at, l.id.clone()));
    soon
}

/// Seats per tier among the licences in force: licences, seats held, and the seats their
/// limits allow (`None` once one licence of the tier has no limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TierSeats {
    pub tier: Tier,
    pub licences: i64,
    pub held: i64,
    pub limit: Option<i64>,
}

/// `held(licence id)`: the seats that licence holds now.
pub fn seats_by_tier(
    licences: &[License],
    now: Millis,
    held: impl Fn(&str) -> i64,
) -> Vec<TierSeats> {
    Tier::ALL
        .into_iter()
        .map(|tier| {
            let of_tier: Vec<&License> = licences
                .iter()
                .filter(|l| l.tier == tier && Term::from(*l).in_force_at(now))
                .collect();
            let limit = of_tier.iter().try_fold(0i64, |sum, l| {
                l.max_machines
                    .map(|m| sum.saturating_add(i64::try_from(m).unwrap_or(i64::MAX)))
            });
            TierSeats {
                tier,
                licences: of_tier.len() as i64,
                held: of_tier.iter().map(|l| held(&l.id)).sum(),
                limit,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::DAY_MS;

    fn at(y: i32, m: u32, d: u32) -> Millis {
        Utc.with_ymd_and_hms(y, m, d, 0, 0, 0)
            .single()
            .expect("a date")
            .timestamp_millis()
    }

    fn term(tier: Tier, created: Millis, expires: Millis, suspended: Option<Millis>) -> Term {
        Term {
            tier,
            created_at: created,
            expires_at: expires,
            suspended_at: suspended,
        }
    }

    #[test]
    fn months_start_on_the_first_across_a_year_end() {
        let now = at(2027, 2, 15) + 5_000;
        assert_eq!(
            month_starts(now, 4),
            vec![
                at(2026, 11, 1),
                at(2026, 12, 1),
                at(2027, 1, 1),
                at(2027, 2, 1)
            ]
        );
    }

    #[test]
    fn in_force_counts_what_was_made_not_yet_expired_nor_suspended() {
        let terms = [
            term(Tier::Team, at(2026, 1, 10), at(2027, 1, 10), None),
            // Made later: not yet in force on 1 March.
            term(Tier::Team, at(2026, 3, 5), at(2027, 3, 5), None),
            // Suspended in April.
            term(
                Tier::Agency,
                at(2026, 1, 1),
                at(2027, 1, 1),
                Some(at(2026, 4, 20)),
            ),
            // Expired in February.
            term(
                Tier::Enterprise,
                at(2025, 2, 1),
                at(2026, 2, 1) + DAY_MS,
                None,
            ),
        ];
        let counts = in_force_by_tier(&terms, &[at(2026, 2, 1), at(2026, 3, 1), at(2026, 5, 1)]);
        assert_eq!(counts[0].1, [0, 1, 1, 1]);
        assert_eq!(counts[1].1, [0, 1, 1, 0]);
        assert_eq!(counts[2].1, [0, 2, 0, 0]);
    }

    #[test]
    fn each_month_counts_what_began_and_ended_in_it_once() {
        let now = at(2026, 5, 10);
        let months = month_starts(now, 3); // March, April, May
        let terms = [
            term(Tier::Team, at(2026, 3, 5), at(2027, 3, 5), None),
            term(Tier::Team, at(2026, 4, 2), at(2027, 4, 2), None),
            // Suspended and then expired: ended once, at the suspension.
            term(
                Tier::Agency,
                at(2025, 1, 1),
                at(2026, 4, 25),
                Some(at(2026, 3, 20)),
            ),
            // Expires later this month: not ended yet.
            term(Tier::Team, at(2025, 5, 20), at(2026, 5, 20), None),
            term(Tier::Team, at(2025, 5, 1), at(2026, 5, 2), None),
        ];
        let flow = flow_by_month(&terms, &months, now);
        assert_eq!(
            flow.iter().map(|f| (f.began, f.ended)).collect::<Vec<_>>(),
            vec![(1, 1), (1, 0), (0, 1)]
        );
    }

    fn license(id: &str, tier: Tier, expires_at: Millis, max_machines: Option<u64>) -> License {
        License {
            id: id.into(),
            account_id: crate::ids::AccountId::trusted("acct_1"),
            email: "ops@example.com".into(),
            tier,
            expires_at,
            suspended_at: None,
            max_projects: None,
            max_machines,
            seat_release_after_days: None,
            features_added: Vec::new(),
            features_removed: Vec::new(),
            created_at: at(2025, 1, 1),
            version: 1,
        }
    }

    #[test]
    fn expiring_soon_is_in_force_and_within_the_window_soonest_first() {
        let now = at(2026, 6, 1);
        let licences = [
            license("lcn_late", Tier::Team, now + 20 * DAY_MS, None),
            license("lcn_soon", Tier::Team, now + 2 * DAY_MS, None),
            license("lcn_far", Tier::Team, now + 40 * DAY_MS, None),
            license("lcn_gone", Tier::Team, now - DAY_MS, None),
        ];
        let ids: Vec<&str> = expiring_soon(&licences, now, 30 * DAY_MS)
            .iter()
            .map(|l| l.id.as_str())
            .collect();
        assert_eq!(ids, vec!["lcn_soon", "lcn_late"]);
    }

    #[test]
    fn seats_per_tier_add_limits_until_one_is_unlimited() {
        let now = at(2026, 6, 1);
        let later = at(2027, 6, 1);
        let a = license("lcn_a", Tier::Team, later, Some(3));
        let b = license("lcn_b", Tier::Team, later, Some(5));
        let c = license("lcn_c", Tier::Agency, later, None);
        let held = |id: &str| if id == "lcn_a" { 2 } else { 1 };
        let seats = seats_by_tier(&[a, b, c], now, held);
        assert_eq!(seats[1].licences, 2);
        assert_eq!(seats[1].held, 3);
        assert_eq!(seats[1].limit, Some(8));
        assert_eq!(seats[2].limit, None);
        assert_eq!(seats[0].licences, 0);
    }
}
