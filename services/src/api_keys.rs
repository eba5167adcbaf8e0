//! API keys: Settings → API Keys (make a named one, rotate all, revoke one) and the operator.

use tidemark_domain::api_keys::KeyName;
use tidemark_domain::audit::AuditContext;
use tidemark_domain::ids;
use tidemark_domain::secrets::ApiKey;
use tidemark_domain::text::MachineName;
use tidemark_store::licenses::{self, KeyRow, NewApiKey};
use tidemark_store::machines::ActivationOutcome;
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

/// What an activation got: its key, or no seat.
pub enum Issued {
    Key(ApiKey),
    /// Every seat of the licence is held by another machine; nothing was written.
    SeatLimit {
        limit: u64,
    },
}

/// `/v1/license/activate`: a new key for one machine or CI secret, beside the account's
/// others, on the machine's seat (taken now, or the one it holds). The key is returned once;
/// only its hash is kept.
pub async fn issue(
    db: &Db,
    license: &tidemark_store::licenses::License,
    machine: &MachineName,
    fingerprint: Option<&tidemark_domain::signing::MachineFingerprint>,
) -> Result<Issued, ServiceError> {
    let account_id = &license.account_id;
    let (key, new) = new_key(account_id, machine.as_str(), tidemark_domain::now_millis());
    let machine_key = tidemark_domain::seats::machine_key(fingerprint, machine);
    let license_id = license.id.clone();
    let outcome = db
        .detached(move |db| async move {
            let activation = tidemark_store::machines::NewActivation {
                license_id: &license_id,
                machine_id: &ids::new_machine_id(),
                machine_key: &machine_key,
                key: &new,
            };
            tidemark_store::machines::activate(&db, &activation).await
        })
        .await?;
    match outcome {
        ActivationOutcome::Activated { reused, .. } => {
            tracing::info!(%account_id, reused_seat = reused, "API key issued");
            Ok(Issued::Key(key))
        }
        ActivationOutcome::SeatLimit { limit } => Ok(Issued::SeatLimit { limit }),
    }
}

/// Makes a named key beside the account's others (Settings → API keys → New key): it holds
/// no seat (a CI secret is not a machine) and works until revoked, rotated or `expires_at`.
/// The key is returned once; only its hash is kept.
pub async fn create_named(
    db: &Db,
    account_id: &AccountId,
    name: &KeyName,
    expires_at: Option<tidemark_domain::Millis>,
    audit: &AuditContext,
) -> Result<ApiKey, ServiceError> {
    let (key, new) = new_key(account_id, name.as_str(), audit.at);
    let audit = audit.clone();
    db.detached(|db| async move {
        tidemark_store::api_keys::create_named_key(&db, &new, expires_at, &audit).await
    })
    .await?;
    tracing::info!(%account_id, "named API key made");
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
