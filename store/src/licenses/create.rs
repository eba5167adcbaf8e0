//! Making a licence: its account, its first admin and the licence in one transaction, and,
//! when the caller sent an idempotency key, that key in the same transaction, so a retried
//! call finds the licence the first one made and never makes a second.

use tidemark_domain::audit::{Action, AuditContext};
use tidemark_domain::secrets::LookupHash;
use tidemark_domain::Millis;
use tidemark_wire::{Feature, Tier};

use crate::audit::Change;
use crate::stmt::Stmt;
use crate::tx::WriteTx;
use crate::{AccountId, StoreError, Writer};
use tidemark_domain::license_events::LicenseEvent;

/// What an operator (or the vendor's API) gives to create a license.
#[derive(Debug, Clone)]
pub struct NewLicense {
    pub account_id: AccountId,
    pub license_id: String,
    pub email: String,
    pub tier: Tier,
    pub lookup: LookupHash,
    /// The raw key, already encrypted under the master key.
    pub key_ciphertext: String,
    pub expires_at: Millis,
    pub max_projects: Option<u64>,
    /// Seats; `None`: unlimited.
    pub max_machines: Option<u64>,
    pub features_added: Vec<Feature>,
    pub features_removed: Vec<Feature>,
    pub now: Millis,
}

/// An idempotency key as a caller sent it: whose, which, and the hash of the body it came
/// with.
#[derive(Debug, Clone)]
pub struct IdempotencyClaim {
    pub token_id: String,
    pub key: String,
    pub request_sha256: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CreateOutcome {
    Created,
    /// The key was used before: by the licence it made, and the body it came with.
    Earlier {
        license_id: String,
        request_sha256: String,
    },
}

/// Feature flags as stored: comma-separated names.
pub(crate) fn feature_list(features: &[Feature]) -> String {
    features
        .iter()
        .map(|f| f.as_str())
        .collect::<Vec<_>>()
        .join(",")
}

/// Creates the account and its license in one transaction (nothing, when `claim`'s key was
/// used before).
pub async fn create_license(
    db: &Writer,
    new: &NewLicense,
    claim: Option<&IdempotencyClaim>,
    audit: &AuditContext,
) -> Result<CreateOutcome, StoreError> {
    let mut tx = WriteTx::begin(db).await?;
    if let Some(claim) = claim {
        // A concurrent call with the same key waits here (PostgreSQL) or before the
        // transaction (SQLite's one writer) until the first commits, then finds its row.
        let inserted = tx
            .execute(
                Stmt::new(
                    "INSERT INTO admin_idempotency (token_id, idem_key, request_sha256, \
                     license_id, created_at) VALUES ($1, $2, $3, $4, $5) \
                     ON CONFLICT (token_id, idem_key) DO NOTHING",
                )
                .bind(&claim.token_id)
                .bind(&claim.key)
                .bind(&claim.request_sha256)
                .bind(&new.license_id)
                .bind(new.now),
            )
            .await?;
        if inserted == 0 {
            let (license_id, request_sha256): (String, String) = tx
                .fetch_one(
                    Stmt::new(
                        "SELECT license_id, request_sha256 FROM admin_idempotency \
                         WHERE token_id = $1 AND idem_key = $2",
                    )
                    .bind(&claim.token_id)
                    .bind(&claim.key),
                )
                .await?;
            return Ok(CreateOutcome::Earlier {
                license_id,
                request_sha256,
            });
        }
    }
    tx.execute(
        Stmt::new("INSERT INTO accounts (id, created_at) VALUES ($1, $2)")
            .bind(&new.account_id)
            .bind(new.now),
    )
    .await?;
    tx.execute(
        Stmt::new(
            "INSERT INTO licenses (id, account_id, email, tier, lookup_hash, key_ciphertext, \
             expires_at, max_projects, features_added, features_removed, created_at, \
             max_machines) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
        )
        .bind(&new.license_id)
        .bind(&new.account_id)
        .bind(&new.email)
        .bind(new.tier.as_str())
        .bind(new.lookup.as_str())
        .bind(&new.key_ciphertext)
        .bind(new.expires_at)
        .bind(new.max_projects.map(|n| n.min(i64::MAX as u64) as i64))
        .bind(feature_list(&new.features_added))
        .bind(feature_list(&new.features_removed))
        .bind(new.now)
        .bind(new.max_machines.map(|n| n.min(i64::MAX as u64) as i64)),
    )
    .await?;
    // The license's e-mail is the account's first admin.
    let email = new.email.to_lowercase();
    tx.execute(
        Stmt::new(crate::access::ENSURE_USER_SQL)
            .bind(tidemark_domain::ids::new_user_id())
            .bind(email.clone())
            .bind(new.now),
    )
    .await?;
    tx.execute(
        Stmt::new(crate::access::ADD_MEMBER_SQL)
            .bind(&new.account_id)
            .bind("admin")
            .bind(new.now)
            .bind(email.clone()),
    )
    .await?;
    let overrides = super::changes::describe_overrides(&new.features_added, &new.features_removed);
    let change = Change {
        account_id: Some(&new.account_id),
        action: Action::LicenseCreated,
        target: new.license_id.clone(),
        before: None,
        after: Some(format!(
            "{} for {email}, expires {}{}{}",
            new.tier.as_str(),
            tidemark_domain::to_rfc3339(new.expires_at),
            new.max_projects
                .map(|n| format!(", at most {n} projects"))
                .unwrap_or_default()
                + &new
                    .max_machines
                    .map(|n| format!(", {n} seats"))
                    .unwrap_or_default(),
            overrides.map(|o| format!(", {o}")).unwrap_or_default(),
        )),
    };
    tx.audit(audit, change).await?;
    let created = crate::license_events::Raise::new(LicenseEvent::Created, new.now);
    crate::license_events::raise(&mut tx, &new.license_id, created).await?;
    tx.commit().await?;
    Ok(CreateOutcome::Created)
}

/// Forgets idempotency keys made before `before` (a retry comes within minutes; a day is
/// plenty).
pub async fn prune_idempotency_keys(db: &Writer, before: Millis) -> Result<u64, StoreError> {
    let mut tx = WriteTx::begin(db).await?;
    let n = tx
        .execute(Stmt::new("DELETE FROM admin_idempotency WHERE created_at < $1").bind(before))
        .await?;
    tx.commit().await?;
    Ok(n)
}
