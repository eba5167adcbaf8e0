//! Compliance posture as it is read: a line's frameworks now and over a range (`/v1` and the
//! project page read it the same way), a framework's requirements now, and the account's
//! roll-up. Written by the push; judged by `domain::posture`.

use std::collections::BTreeMap;

use tidemark_domain::time::DAY_MS;
use tidemark_domain::Millis;
use tidemark_store::posture::read;
pub use tidemark_store::posture::read::{FrameworkLine, FrameworkNow, LinePosture, OpenFinding};
pub use tidemark_store::posture::summary::AccountPosture;
use tidemark_store::Db;
use tidemark_wire::ids::{AccountId, ProjectId};
use tidemark_wire::Feature;

use crate::ServiceError;

/// The start of a range of `days` ending `now`; `None` (all time) stays `None`.
pub fn since(days: Option<i64>, now: Millis) -> Option<Millis> {
    days.map(|d| now - d * DAY_MS)
}

/// The line's posture: each framework of its latest scan judged `now`, with its history over
/// the `days` before (`None`: all of it), or only `framework`'s. `None` before any scan.
pub async fn line_posture(
    db: &Db,
    account_id: &AccountId,
    project_id: &ProjectId,
    line_id: &str,
    framework: Option<&str>,
    days: Option<i64>,
    now: Millis,
) -> Result<Option<LinePosture>, ServiceError> {
    let since = since(days, now);
    Ok(read::line_posture(db, account_id, project_id, line_id, framework, since, now).await?)
}

/// A framework's requirements on the line's latest scan, judged `now`, and what that scan's
/// push found drifted (its stored row, not a second judging of its findings).
pub struct FrameworkDetail {
    pub now: FrameworkNow,
    pub drifted: Vec<String>,
    /// The framework's published catalogue (a scanned framework's, when the vendor published
    /// one): every requirement, evaluated or not.
    pub catalogue: Option<tidemark_domain::catalogue::Catalogue>,
}

pub async fn framework_detail(
    db: &Db,
    account_id: &AccountId,
    project_id: &ProjectId,
    line_id: &str,
    framework: &str,
    now: Millis,
) -> Result<FrameworkDetail, ServiceError> {
    let detail = read::framework_now(db, account_id, project_id, line_id, framework, now)
        .await?
        .ok_or(ServiceError::NotFound)?;
    let stored = tidemark_store::posture::posture_history(
        db,
        account_id,
        project_id,
        line_id,
        Some(framework),
        Some(detail.scanned_at),
    )
    .await?;
    let drifted = stored
        .iter()
        .find(|r| r.scan_id == detail.scan_id)
        .map(|r| r.drifted())
        .unwrap_or_default();
    let catalogue = match detail.title {
        // A custom framework is its own whole catalogue.
        Some(_) => None,
        None => crate::catalogues::find(db, framework).await?,
    };
    Ok(FrameworkDetail {
        now: detail,
        drifted,
        catalogue,
    })
}

/// The account's posture across its projects' latest default-branch scans, per framework and
/// per cloud account, worst first: kept by the push, a few rows however many projects.
pub async fn account_posture(
    db: &Db,
    account_id: &AccountId,
) -> Result<AccountPosture, ServiceError> {
    Ok(tidemark_store::posture::summary::account_posture(db, account_id).await?)
}

/// Custom frameworks' titles by their posture name (`custom:<id>`).
pub async fn framework_names(
    db: &Db,
    account_id: &AccountId,
) -> Result<BTreeMap<String, String>, ServiceError> {
    Ok(tidemark_store::frameworks::in_force(db, account_id)
        .await?
        .into_iter()
        .map(|c| (c.posture_name(), format!("{} (custom)", c.document().title)))
        .collect())
}

/// Whether the account's license grants `feature` (drift detection shows only where it does).
pub async fn has_feature(
    db: &Db,
    account_id: &AccountId,
    feature: Feature,
) -> Result<bool, ServiceError> {
    let license = tidemark_store::licenses::find_license_for_account(db, account_id).await?;
    Ok(license.is_some_and(|l| l.features().contains(&feature)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_starts_its_days_before_now_and_all_time_has_no_start() {
        let now = 1_800_000_000_000;
        assert_eq!(since(Some(7), now), Some(now - 7 * 86_400_000));
        assert_eq!(since(Some(365), now), Some(now - 365 * 86_400_000));
        assert_eq!(since(None, now), None);
    }
}
