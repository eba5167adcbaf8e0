//! Trusted publishers: the CI identities that may push for an account without a stored key.

use tidemark_domain::audit::AuditContext;
use tidemark_domain::ci_identity::PublisherSpec;
use tidemark_domain::{ids, now_millis};
pub use tidemark_store::publishers::Publisher;
use tidemark_store::publishers::{AddOutcome, MAX_PUBLISHERS};
use tidemark_store::Db;
use tidemark_wire::ids::AccountId;

use crate::ServiceError;

pub async fn list(db: &Db, account_id: &AccountId) -> Result<Vec<Publisher>, ServiceError> {
    Ok(tidemark_store::publishers::list_publishers(db, account_id).await?)
}

pub async fn add(
    db: &Db,
    account_id: &AccountId,
    spec: PublisherSpec,
    audit: &AuditContext,
) -> Result<(), ServiceError> {
    let (account, audit) = (account_id.clone(), audit.clone());
    let (id, now) = (ids::new_publisher_id(), now_millis());
    let added = db
        .detached(|db| async move {
            tidemark_store::publishers::add_publisher(&db, &account, &id, &spec, now, &audit).await
        })
        .await?;
    match added {
        AddOutcome::Added => Ok(()),
        AddOutcome::TooMany => Err(ServiceError::Conflict(format!(
            "An account can have {MAX_PUBLISHERS} trusted publishers; remove one first."
        ))),
    }
}

pub async fn remove(
    db: &Db,
    account_id: &AccountId,
    publisher_id: &str,
    audit: &AuditContext,
) -> Result<(), ServiceError> {
    if !ids::is_publisher_id(publisher_id) {
        return Err(ServiceError::NotFound);
    }
    let (account, id, audit) = (account_id.clone(), publisher_id.to_owned(), audit.clone());
    let removed = db
        .detached(|db| async move {
            tidemark_store::publishers::remove_publisher(&db, &account, &id, &audit).await
        })
        .await?;
    removed.then_some(()).ok_or(ServiceError::NotFound)
}
