//! API keys: Settings → API Keys (rotate all, revoke one) and the operator.

use tidemark_domain::audit::AuditContext;
use tidemark_domain::ids;
use tidemark_domain::secrets::ApiKey;
use tidemark_domain::text::MachineName;
use tidemark_store::licenses::{self, KeyRow, NewApiKey};
use tidemark_store::Db;
use tidemark_wire::ids::AccountId;

use crate::ServiceError;

/// A rotation's result: the one new key (shown once) and how many keys it replaced.
#[derive(Debug)]
pub struct Rotated {
    pub key: ApiKey,
    pub revoked: u64,
}

/// A fresh key for `machine` and the row that keeps only its hash.
fn new_key(
    account_id: &AccountId,
    machine: &str,
    now: tidemark_domain::Millis,
) -> (ApiKey, NewApiKey) {
    let key = ApiKey::generate();
    let row = NewApiKey {
        id: ids::new_key_id(),
        account_id: account_id.to_owned(),
        hash: key.hash(),
        prefix: key.display_prefix(),
        machine: machine.to_owned(),
        now,
    };
    (key, row)
}

/// Revokes every active key of the account and issues one new key, in one transaction that
/// a caller going away does not cut short.
pub async fn rotate(
    db: &Db,
    account_id: &AccountId,
    machine: &str,
    audit: &AuditContext,
) -> Result<Rotated, ServiceError> {
    let (key, new) = new_key(account_id, machine, audit.at);
    let audit = audit.clone();
    let revoked = db
        .detached(|db| async move { licenses::rotate_api_keys(&db, &new, &audit).await })
        .await?;
    tracing::info!(%account_id, revoked, "API keys rotated");
    Ok(Rotated { key, revoked })
}

/// `/v1/license/activate`: a new key for one machine or CI secret, beside the account's
/// others. The key is returned once; only its hash is kept.
pub async fn issue(
    db: &Db,
    account_id: &AccountId,
    machine: &MachineName,
) -> Result<ApiKey, ServiceError> {
    let (key, new) = new_key(account_id, machine.as_str(), tidemark_domain::now_millis());
    db.detached(|db| async move { licenses::insert_api_key(&db, &new).await })
        .await?;
    tracing::info!(%account_id, "API key issued");
    Ok(key)
}

/// Revokes one active key of the account.
pub async fn revoke(
    db: &Db,
    account_id: &AccountId,
    key_id: &str,
    audit: &AuditContext,
) -> Result<(), ServiceError> {
    let (account, key_id, audit) = (account_id.clone(), key_id.to_owned(), audit.clone());
    let revoked = db
        .detached(
            |db| async move { licenses::revoke_api_key(&db, &account, &key_id, &audit).await },
        )
        .await?;
    revoked.then_some(()).ok_or(ServiceError::NotFound)
}

/// The account's active keys, newest first (prefixes only: a key is shown once).
pub async fn list(db: &Db, account_id: &AccountId) -> Result<Vec<KeyRow>, ServiceError> {
    Ok(licenses::list_api_keys(db, account_id).await?)
}
