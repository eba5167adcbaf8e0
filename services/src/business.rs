//! The business at a glance, for the vendor's console: licences in force by tier over the
//! last year, made and ended per month, the ones expiring in the next 30 days, validations
//! and active machines per day, the clients in the field and seat use per tier. Figures from
//! the licences as they stand and the per-day counts the replicas keep; the rules are
//! `tidemark_domain::business`'s.

use std::collections::HashMap;

use tidemark_domain::audit::AuditContext;
use tidemark_domain::business::{self, MonthFlow, Term, TierSeats};
use tidemark_domain::client_version::day_of;
use tidemark_domain::license::License;
use tidemark_domain::time::DAY_MS;
use tidemark_domain::Millis;
use tidemark_store::Db;

use crate::ServiceError;

/// Months charted: this one and the eleven before.
pub const MONTHS: u32 = 12;
/// Days charted, today's last.
pub const DAYS: i64 = 90;
/// "Expiring soon".
pub const EXPIRING_WITHIN_DAYS: i64 = 30;
/// A machine is "in the field" if seen within this many days.
pub const FIELD_DAYS: i64 = 30;

/// One day of the whole business.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BusinessDay {
    pub day: Millis,
    pub validations: i64,
    pub pushes: i64,
    pub machines: i64,
}

#[derive(Debug, Clone)]
pub struct Business {
    pub now: Millis,
    /// At each month's start, and now (the last): licences in force per tier.
    pub in_force: Vec<(Millis, [i64; 4])>,
    pub flow: Vec<MonthFlow>,
    pub expiring: Vec<License>,
    /// Every one of the last [`DAYS`] days, oldest first.
    pub days: Vec<BusinessDay>,
    /// Clients of the machines holding a seat seen in the last [`FIELD_DAYS`] days, most common
    /// first ("not said" for machines that never named one).
    pub clients: Vec<(String, i64)>,
    pub seats: Vec<TierSeats>,
}

/// The figures as of `audit.at` (and the look in the audit log, as every console read).
pub async fn business(db: &Db, audit: &AuditContext) -> Result<Business, ServiceError> {
    let now = audit.at;
    let licences = tidemark_store::licenses::list_licenses(db).await?;
    let terms: Vec<Term> = licences.iter().map(Term::from).collect();
    let mut points = business::month_starts(now, MONTHS);
    points.push(now);
    let in_force = business::in_force_by_tier(&terms, &points);
    let flow = business::flow_by_month(&terms, &business::month_starts(now, MONTHS), now);
    let expiring = business::expiring_soon(&licences, now, EXPIRING_WITHIN_DAYS * DAY_MS)
        .into_iter()
        .cloned()
        .collect();

    let first = day_of(now) - (DAYS - 1) * DAY_MS;
    let uses: HashMap<Millis, (i64, i64)> = tidemark_store::activity::use_by_day(db, first)
        .await?
        .into_iter()
        .map(|(day, v, p)| (day, (v, p)))
        .collect();
    let machines: HashMap<Millis, i64> = tidemark_store::activity::machines_by_day(db, first)
        .await?
        .into_iter()
        .collect();
    let days = (0..DAYS)
        .map(|i| {
            let day = first + i * DAY_MS;
            let (validations, pushes) = uses.get(&day).copied().unwrap_or((0, 0));
            BusinessDay {
                day,
                validations,
                pushes,
                machines: machines.get(&day).copied().unwrap_or(0),
            }
        })
        .collect();

    let clients = tidemark_store::activity::client_versions(db, now - FIELD_DAYS * DAY_MS)
        .await?
        .into_iter()
        .map(|(client, n)| (client.unwrap_or_else(|| "not said".to_owned()), n))
        .collect();
    let held: HashMap<String, i64> = tidemark_store::activity::seats_held(db)
        .await?
        .into_iter()
        .collect();
    let seats = business::seats_by_tier(&licences, now, |id| held.get(id).copied().unwrap_or(0));
    crate::console::note_read(db, audit, "business".to_owned()).await?;
    Ok(Business {
        now,
        in_force,
        flow,
        expiring,
        days,
        clients,
        seats,
    })
}
