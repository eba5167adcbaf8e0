//! The people of an account: Settings → Members and the operator's `member` commands.

use tidemark_domain::access::Role;
use tidemark_domain::audit::AuditContext;
use tidemark_domain::text::Email;
use tidemark_store::access;
pub use tidemark_store::access::Member;
use tidemark_store::Db;
use tidemark_wire::ids::AccountId;

use crate::ServiceError;

async fn require_account(db: &Db, account_id: &AccountId) -> Result<(), ServiceError> {
    let known = tidemark_store::licenses::find_license_for_account(db, account_id)
        .await?
        .is_some();
    if known {
        Ok(())
    } else {
        Err(ServiceError::Invalid(format!("no account {account_id}")))
    }
}

/// Adds `email` to the account with `role`.
pub async fn add(
    db: &Db,
    account_id: &AccountId,
    email: &Email,
    role: Role,
    audit: &AuditContext,
) -> Result<Member, ServiceError> {
    require_account(db, account_id).await?;
    let (account, email, audit) = (account_id.clone(), email.clone(), audit.clone());
    db.detached(|db| async move { access::add_member(&db, &account, &email, role, &audit).await })
        .await?
        .map_err(|refused| ServiceError::Conflict(refused.to_string()))
}

pub async fn list(db: &Db, account_id: &AccountId) -> Result<Vec<Member>, ServiceError> {
    require_account(db, account_id).await?;
    Ok(access::list_members(db, account_id).await?)
}

/// Gives the member `role`, or removes them (`None`), which ends their sessions here.
pub async fn change(
    db: &Db,
    account_id: &AccountId,
    email: &Email,
    role: Option<Role>,
    audit: &AuditContext,
) -> Result<(), ServiceError> {
    let (account, email, audit) = (account_id.clone(), email.clone(), audit.clone());
    let changed = db
        .detached(|db| async move {
            let Some(member) = access::find_member_by_email(&db, &account, &email).await? else {
                return Ok(None);
            };
            access::change_member(&db, &account, &member.user_id, role, &audit)
                .await
                .map(Some)
        })
        .await?;
    match changed {
        None => Err(ServiceError::NotFound),
        Some(Err(refused)) => Err(ServiceError::Conflict(refused.to_string())),
        Some(Ok(())) => Ok(()),
    }
}
