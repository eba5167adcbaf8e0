//! Changing a licence that keeps its key: suspension, expiry, tier, entitlement overrides and
//! the project cap, in one audited transaction that bumps its version (the admin API's ETag)
//! and refuses a change made against a version that is no longer current.

use tidemark_domain::audit::{Action, AuditContext};
pub use tidemark_domain::license::LicenseEdit;
use tidemark_domain::Millis;
use tidemark_wire::Feature;

use super::create::feature_list;
use super::{License, LicenseRow, LICENSE_COLUMNS};
use crate::audit::Change;
use crate::license_events::{raise, Raise};
use crate::stmt::Stmt;
use crate::tx::WriteTx;
use crate::{StoreError, Writer};
use tidemark_domain::license_events::LicenseEvent;

#[derive(Debug, Clone, PartialEq)]
pub enum UpdateOutcome {
    /// The licence as it now is (unchanged, and its version kept, when nothing differed).
    Updated(License),
    NotFound,
    /// The edit contradicts itself against the licence as it is (nothing changed): why.
    Invalid(String),
    /// The caller's version is not the current one: the licence as it now is.
    Stale(License),
}

/// "features +drift_detection −custom_frameworks", or nothing without overrides.
pub(crate) fn describe_overrides(added: &[Feature], removed: &[Feature]) -> Option<String> {
    let mut parts: Vec<String> = added.iter().map(|f| format!("+{}", f.as_str())).collect();
    parts.extend(removed.iter().map(|f| format!("-{}", f.as_str())));
    (!parts.is_empty()).then(|| format!("features {}", parts.join(" ")))
}

/// Tier, overrides and cap, as the audit log summarises them.
fn entitlements(l: &License) -> String {
    let mut text = format!("tier {}", l.tier.as_str());
    if let Some(o) = describe_overrides(&l.features_added, &l.features_removed) {
        text.push_str(&format!(", {o}"));
    }
    if let Some(n) = l.max_projects {
        text.push_str(&format!(", at most {n} projects"));
    }
    if let Some(n) = l.max_machines {
        text.push_str(&format!(", {n} seats"));
    }
    match l.seat_release_after_days {
        Some(0) => text.push_str(", seats never freed by time"),
        Some(days) => text.push_str(&format!(", seats freed after {days} days unseen")),
        None => {}
    }
    text
}

/// Applies `update` to licence `id`, when `if_version` (if given) is still its version.
pub async fn update_license(
    db: &Writer,
    id: &str,
    if_version: Option<i64>,
    update: &LicenseEdit,
    audit: &AuditContext,
) -> Result<UpdateOutcome, StoreError> {
    let mut tx = WriteTx::begin(db).await?;
    let found: Option<LicenseRow> = tx
        .fetch_optional(
            Stmt::new(format!(
                "SELECT {LICENSE_COLUMNS} FROM licenses l WHERE l.id = $1"
            ))
            .bind(id),
        )
        .await?;
    let Some(row) = found else {
        return Ok(UpdateOutcome::NotFound);
    };
    let before = License::try_from(row)?;
    if if_version.is_some_and(|v| v != before.version) {
        return Ok(UpdateOutcome::Stale(before));
    }
    if let Err(why) = update.check(&before) {
        return Ok(UpdateOutcome::Invalid(why));
    }
    let mut after = before.clone();
    if let Some(tier) = update.tier {
        after.tier = tier;
    }
    if let Some(at) = update.expires_at {
        after.expires_at = at;
    }
    if let Some(cap) = update.max_projects {
        after.max_projects = cap;
    }
    if let Some(seats) = update.max_machines {
        after.max_machines = seats;
    }
    if let Some(days) = update.seat_release_after_days {
        after.seat_release_after_days = days;
    }
    if let Some(added) = &update.features_added {
        after.features_added = added.clone();
    }
    if let Some(removed) = &update.features_removed {
        after.features_removed = removed.clone();
    }
    let mut reason = None;
    if let Some((suspend, why)) = &update.suspended {
        // A suspension keeps its first moment: suspending again changes nothing.
        after.suspended_at = match (suspend, before.suspended_at) {
            (true, Some(since)) => Some(since),
            (true, None) => Some(audit.at),
            (false, _) => None,
        };
        reason = why.clone();
    }
    if after == before {
        return Ok(UpdateOutcome::Updated(before));
    }
    after.version = before.version + 1;
    tx.execute(
        Stmt::new(
            "UPDATE licenses SET tier = $1, expires_at = $2, suspended_at = $3, \
             max_projects = $4, features_added = $5, features_removed = $6, version = $7, \
             max_machines = $8, seat_release_after_days = $9 WHERE id = $10",
        )
        .bind(after.tier.as_str())
        .bind(after.expires_at)
        .bind(after.suspended_at)
        .bind(after.max_projects.map(|n| n.min(i64::MAX as u64) as i64))
        .bind(feature_list(&after.features_added))
        .bind(feature_list(&after.features_removed))
        .bind(after.version)
        .bind(after.max_machines.map(|n| n.min(i64::MAX as u64) as i64))
        .bind(after.seat_release_after_days.map(i64::from))
        .bind(id),
    )
    .await?;
    for change in changes(&before, &after, reason.as_deref()) {
        tx.audit(audit, change).await?;
    }
    let mut raised = Raise::new(event_of(&before, &after), audit.at);
    if raised.event != LicenseEvent::Updated {
        raised.details.reason = reason.clone();
    }
    raise(&mut tx, id, raised).await?;
    tx.commit().await?;
    Ok(UpdateOutcome::Updated(after))
}

/// The event a change raises: a suspension or resumption says so (whatever else changed
/// with it); anything else is an update.
fn event_of(before: &License, after: &License) -> LicenseEvent {
    match (before.suspended_at, after.suspended_at) {
        (None, Some(_)) => LicenseEvent::Suspended,
        (Some(_), None) => LicenseEvent::Resumed,
        _ => LicenseEvent::Updated,
    }
}

/// One audit entry per kind of change: suspension, expiry, entitlements.
fn changes<'a>(before: &'a License, after: &License, reason: Option<&str>) -> Vec<Change<'a>> {
    let mut out = Vec::new();
    let because = reason.map(|r| format!(" ({r})")).unwrap_or_default();
    if before.suspended_at.is_some() != after.suspended_at.is_some() {
        let state = |suspended: bool| if suspended { "suspended" } else { "active" };
        out.push(Change {
            account_id: Some(&before.account_id),
            action: if after.suspended_at.is_some() {
                Action::LicenseSuspended
            } else {
                Action::LicenseResumed
            },
            target: before.id.clone(),
            before: Some(state(before.suspended_at.is_some()).to_owned()),
            after: Some(format!("{}{because}", state(after.suspended_at.is_some()))),
        });
    }
    if before.expires_at != after.expires_at {
        let expires = |at: Millis| format!("expires {}", tidemark_domain::to_rfc3339(at));
        out.push(Change {
            account_id: Some(&before.account_id),
            action: Action::LicenseExtended,
            target: before.id.clone(),
            before: Some(expires(before.expires_at)),
            after: Some(expires(after.expires_at)),
        });
    }
    let (was, now) = (entitlements(before), entitlements(after));
    if was != now {
        out.push(Change {
            account_id: Some(&before.account_id),
            action: Action::LicenseUpdated,
            target: before.id.clone(),
            before: Some(was),
            after: Some(now),
        });
    }
    out
}
