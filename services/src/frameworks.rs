//! An account's custom frameworks: its own control sets mapped to rule ids of scanned
//! frameworks. Setting one judges the account's latest scans by it at once, so posture and
//! reports show it without waiting for the next push.

use tidemark_domain::audit::AuditContext;
use tidemark_domain::frameworks::{is_framework_id, ValidFramework};
use tidemark_domain::Millis;
pub use tidemark_store::frameworks::StoredFramework;
use tidemark_store::frameworks::{
    delete_framework, find_framework, judge_latest_scans, list_frameworks, set_framework,
};
use tidemark_store::Db;
use tidemark_wire::ids::AccountId;

use crate::ServiceError;

/// A framework as set: whether it is new, how many latest scans were judged by it, and the
/// stored framework.
pub struct FrameworkSet {
    pub created: bool,
    pub judged_scans: u64,
    pub stored: StoredFramework,
}

/// Sets (creates or replaces) the framework and judges the account's latest scans by it.
pub async fn set(
    db: &Db,
    account_id: &AccountId,
    framework: ValidFramework,
    audit: &AuditContext,
    now: Millis,
) -> Result<FrameworkSet, ServiceError> {
    let (account, audit) = (account_id.clone(), audit.clone());
    let (created, judged_scans, stored) = db
        .detached(move |db| async move {
            let created = set_framework(&db, &account, &framework, &audit).await?;
            let judged = judge_latest_scans(&db, &account, &framework, now).await?;
            let stored = find_framework(db.as_ref(), &account, framework.id()).await?;
            Ok::<_, tidemark_store::StoreError>((created, judged, stored))
        })
        .await?;
    Ok(FrameworkSet {
        created,
        judged_scans,
        stored: stored.ok_or(ServiceError::NotFound)?,
    })
}

pub async fn list(db: &Db, account_id: &AccountId) -> Result<Vec<StoredFramework>, ServiceError> {
    Ok(list_frameworks(db, account_id).await?)
}

/// The framework, or "not found" (an id no framework could have is not looked up).
pub async fn find(
    db: &Db,
    account_id: &AccountId,
    framework_id: &str,
) -> Result<StoredFramework, ServiceError> {
    if !is_framework_id(framework_id) {
        return Err(ServiceError::NotFound);
    }
    find_framework(db, account_id, framework_id)
        .await?
        .ok_or(ServiceError::NotFound)
}

/// Removes the framework; scans keep the posture they were judged with.
pub async fn remove(
    db: &Db,
    account_id: &AccountId,
    framework_id: &str,
    audit: &AuditContext,
) -> Result<(), ServiceError> {
    if !is_framework_id(framework_id) {
        return Err(ServiceError::NotFound);
    }
    let (account, id, audit) = (account_id.clone(), framework_id.to_owned(), audit.clone());
    let removed = db
        .detached(move |db| async move { delete_framework(&db, &account, &id, &audit).await })
        .await?;
    removed.then_some(()).ok_or(ServiceError::NotFound)
}
