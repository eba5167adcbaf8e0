//! A licence's seats: the machines it is activated on, and freeing one (its API keys are
//! revoked at once).

use tidemark_domain::audit::AuditContext;
pub use tidemark_store::machines::MachineRow;
use tidemark_store::machines::Released;
use tidemark_store::Db;

use crate::ServiceError;

/// The licence's machines, seats held first; "not found" for no such licence.
pub async fn list(db: &Db, license_id: &str) -> Result<Vec<MachineRow>, ServiceError> {
    crate::licensing::find(db, license_id).await?;
    Ok(tidemark_store::machines::list(db, license_id).await?)
}

/// [`release`] for the customer's admin: a seat of the account's own licence, else "not
/// found" (another account's machine id finds nothing).
pub async fn release_for_account(
    db: &Db,
    account_id: &tidemark_wire::ids::AccountId,
    machine_id: &str,
    audit: &AuditContext,
) -> Result<(), ServiceError> {
    let license = tidemark_store::licenses::find_license_for_account(db, account_id)
        .await?
        .ok_or(ServiceError::NotFound)?;
    release(db, &license.id, machine_id, audit).await
}

/// Frees the machine's seat and revokes its keys; "not found" unless the licence holds that
/// live seat.
pub async fn release(
    db: &Db,
    license_id: &str,
    machine_id: &str,
    audit: &AuditContext,
) -> Result<(), ServiceError> {
    let (license_id, machine_id, audit) =
        (license_id.to_owned(), machine_id.to_owned(), audit.clone());
    let released = db
        .detached(move |db| async move {
            tidemark_store::machines::release(&db, &license_id, &machine_id, &audit).await
        })
        .await?;
    match released {
        Released::Released => Ok(()),
        Released::NotFound => Err(ServiceError::NotFound),
        Released::HeldOffline { until } => Err(ServiceError::Conflict(format!(
            "An offline licence file holds this seat until {}: a file cannot be revoked, so its \
             seat frees itself when the file expires.",
            tidemark_domain::to_rfc3339(until)
        ))),
    }
}
