//! Status badges: an unguessable, revocable token per project, meant to be published.

use tidemark_domain::audit::AuditContext;
use tidemark_domain::badge::BadgeToken;
pub use tidemark_store::badges::ProjectBadge;
use tidemark_store::Db;
use tidemark_wire::ids::{AccountId, ProjectId};

use crate::ServiceError;

/// Every active project with its badge token, if it has one.
pub async fn list(db: &Db, account_id: &AccountId) -> Result<Vec<ProjectBadge>, ServiceError> {
    Ok(tidemark_store::badges::account_badges(db, account_id).await?)
}

/// A new token for the project's badge; the old one stops working.
pub async fn issue(
    db: &Db,
    account_id: &AccountId,
    project_id: &ProjectId,
    audit: &AuditContext,
) -> Result<(), ServiceError> {
    let token = BadgeToken::generate();
    let (account, project, audit) = (account_id.clone(), project_id.clone(), audit.clone());
    let issued = db
        .detached(|db| async move {
            tidemark_store::badges::issue_badge(&db, &account, &project, &token, &audit).await
        })
        .await?;
    issued.then_some(()).ok_or(ServiceError::NotFound)
}

pub async fn revoke(
    db: &Db,
    account_id: &AccountId,
    project_id: &ProjectId,
    audit: &AuditContext,
) -> Result<(), ServiceError> {
    let (account, project, audit) = (account_id.clone(), project_id.clone(), audit.clone());
    let revoked = db
        .detached(|db| async move {
            tidemark_store::badges::revoke_badge(&db, &account, &project, &audit).await
        })
        .await?;
    revoked.then_some(()).ok_or(ServiceError::NotFound)
}
