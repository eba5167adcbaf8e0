//! Accounts, licenses and API keys.

use crate::stmt::Stmt;
use crate::tx::{audited_write, WriteTx};
use crate::webhooks::{enqueue_statement, EventRef};
use crate::AccountId;
use tidemark_domain::audit::{Action, AuditContext};
use tidemark_domain::secrets::{HashedApiKey, LookupHash};
use tidemark_domain::tier::parse_feature_list;
use tidemark_domain::webhook::Event;
use tidemark_domain::Millis;
use tidemark_wire::Tier;

use crate::audit::Change;
use crate::Writer;
use crate::{on_db, Db, StoreError};

pub use tidemark_domain::license::License;

mod changes;
mod create;
mod pages;
mod search;

pub use changes::{update_license, LicenseEdit, UpdateOutcome};
pub use create::{
    create_license, prune_idempotency_keys, CreateOutcome, IdempotencyClaim, NewLicense,
};
pub use pages::{page_licenses, LicenseFilter, LicenseStateFilter};
pub use search::{search_licenses, FoundBy};

/// A `licenses` row as selected with [`LICENSE_COLUMNS`].
#[derive(sqlx::FromRow)]
pub(crate) struct LicenseRow {
    id: String,
    account_id: AccountId,
    email: String,
    tier: String,
    expires_at: i64,
    suspended_at: Option<i64>,
    max_projects: Option<i64>,
    max_machines: Option<i64>,
    seat_release_after_days: Option<i64>,
    features_added: String,
    features_removed: String,
    created_at: i64,
    version: i64,
}

pub(crate) const LICENSE_COLUMNS: &str =
    "l.id, l.account_id, l.email, l.tier, l.expires_at, l.suspended_at, \
     l.max_projects, l.max_machines, l.seat_release_after_days, l.features_added, l.features_removed, l.created_at, \
     l.version";

impl TryFrom<LicenseRow> for License {
    type Error = StoreError;

    fn try_from(r: LicenseRow) -> Result<Self, StoreError> {
        Ok(License {
            id: r.id,
            account_id: r.account_id,
            email: r.email,
            tier: Tier::parse(&r.tier).ok_or(StoreError::Corrupt("licenses.tier"))?,
            expires_at: r.expires_at,
            suspended_at: r.suspended_at,
            max_projects: r.max_projects.map(|n| n.max(0) as u64),
            max_machines: r.max_machines.map(|n| n.max(0) as u64),
            seat_release_after_days: r
                .seat_release_after_days
                .map(|d| u32::try_from(d.max(0)).unwrap_or(u32::MAX)),
            features_added: parse_feature_list(&r.features_added),
            features_removed: parse_feature_list(&r.features_removed),
            created_at: r.created_at,
            version: r.version,
        })
    }
}

pub async fn find_license_by_lookup(
    db: &Db,
    lookup: &LookupHash,
) -> Result<Option<License>, StoreError> {
    let sql = format!("SELECT {LICENSE_COLUMNS} FROM licenses l WHERE l.lookup_hash = $1");
    let row: Option<LicenseRow> = on_db!(db, pool => {
        sqlx::query_as(&sql).bind(lookup.as_str()).fetch_optional(pool).await
    })?;
    row.map(License::try_from).transpose()
}

pub async fn find_license(db: &Db, id: &str) -> Result<Option<License>, StoreError> {
    let sql = format!("SELECT {LICENSE_COLUMNS} FROM licenses l WHERE l.id = $1");
    let row: Option<LicenseRow> = on_db!(db, pool => {
        sqlx::query_as(&sql).bind(id).fetch_optional(pool).await
    })?;
    row.map(License::try_from).transpose()
}

/// License `id` and its key as sealed under the master key (an idempotent retry of its
/// creation answers the key again).
pub async fn license_with_sealed_key(
    db: &Db,
    id: &str,
) -> Result<Option<(License, String)>, StoreError> {
    let sql = format!("SELECT {LICENSE_COLUMNS}, l.key_ciphertext FROM licenses l WHERE l.id = $1");
    #[derive(sqlx::FromRow)]
    struct Row {
        #[sqlx(flatten)]
        license: LicenseRow,
        key_ciphertext: String,
    }
    let row: Option<Row> = on_db!(db, pool => {
        sqlx::query_as(&sql).bind(id).fetch_optional(pool).await
    })?;
    row.map(|r| Ok((License::try_from(r.license)?, r.key_ciphertext)))
        .transpose()
}

/// The lookup hash (`sha256(X-License-Key-Hash)`) of license `id`: what a verdict names it by.
pub async fn license_lookup_hash(db: &Db, id: &str) -> Result<Option<String>, StoreError> {
    let row: Option<(String,)> = on_db!(db, pool => {
        sqlx::query_as("SELECT lookup_hash FROM licenses WHERE id = $1")
            .bind(id)
            .fetch_optional(pool)
            .await
    })?;
    Ok(row.map(|(h,)| h))
}

pub async fn list_licenses(db: &Db) -> Result<Vec<License>, StoreError> {
    let sql = format!("SELECT {LICENSE_COLUMNS} FROM licenses l ORDER BY l.created_at, l.id");
    let rows: Vec<LicenseRow> = on_db!(db, pool => sqlx::query_as(&sql).fetch_all(pool).await)?;
    rows.into_iter().map(License::try_from).collect()
}

/// Licenses (with their encrypted keys) registered to an e-mail address, for resend.
pub async fn licenses_for_email(
    db: &Db,
    email: &str,
) -> Result<Vec<(License, String)>, StoreError> {
    let sql = format!(
        "SELECT {LICENSE_COLUMNS}, l.key_ciphertext FROM licenses l \
         WHERE LOWER(l.email) = $1 ORDER BY l.created_at"
    );
    #[derive(sqlx::FromRow)]
    struct Row {
        #[sqlx(flatten)]
        license: LicenseRow,
        key_ciphertext: String,
    }
    let rows: Vec<Row> = on_db!(db, pool => {
        sqlx::query_as(&sql).bind(email.to_lowercase()).fetch_all(pool).await
    })?;
    rows.into_iter()
        .map(|r| Ok((License::try_from(r.license)?, r.key_ciphertext)))
        .collect()
}

/// A new API key for an account.
#[derive(Debug, Clone)]
pub struct NewApiKey {
    pub id: String,
    pub account_id: AccountId,
    pub hash: HashedApiKey,
    pub prefix: String,
    pub machine: String,
    pub now: Millis,
}

/// Adds a key to the account (activation); other keys stay valid.
pub async fn insert_api_key(db: &Writer, key: &NewApiKey) -> Result<(), StoreError> {
    issue_api_key(db, key, None).await.map(|_| ())
}

/// Revokes every active key of an account and issues `replacement` in the same transaction:
/// from the commit on, no replica accepts an old key. Returns how many keys were revoked.
pub async fn rotate_api_keys(
    db: &Writer,
    replacement: &NewApiKey,
    audit: &AuditContext,
) -> Result<u64, StoreError> {
    issue_api_key(db, replacement, Some(audit)).await
}

/// Adds `key`; with a rotation's audit context, revokes the others first (and records it).
async fn issue_api_key(
    db: &Writer,
    key: &NewApiKey,
    rotation: Option<&AuditContext>,
) -> Result<u64, StoreError> {
    let mut tx = WriteTx::begin(db).await?;
    let mut revoked = 0;
    if let Some(audit) = rotation {
        revoked = tx
            .execute(
                Stmt::new(
                    "UPDATE api_keys SET revoked_at = $1 WHERE account_id = $2 \
                     AND revoked_at IS NULL",
                )
                .bind(key.now)
                .bind(&key.account_id),
            )
            .await?;
        // Subscribed endpoints hear of it, in the same transaction as the rotation.
        let event_id = tidemark_domain::ids::new_event_id();
        let event = EventRef {
            event_id: &event_id,
            event: Event::KeysRotated,
            account_id: &key.account_id,
            scan: None,
            now: key.now,
            raised: true,
        };
        if let Some(stmt) = enqueue_statement(std::slice::from_ref(&event)) {
            tx.execute(stmt).await?;
        }
        let change = Change {
            account_id: Some(&key.account_id),
            action: Action::KeysRotated,
            target: "API keys".to_owned(),
            before: Some(format!("{revoked} active")),
            after: Some(format!("1 active: {}… ({})", key.prefix, key.machine)),
        };
        tx.audit(audit, change).await?;
    }
    tx.execute(
        Stmt::new(
            "INSERT INTO api_keys (id, account_id, key_hash, prefix, machine, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(&key.id)
        .bind(&key.account_id)
        .bind(key.hash.as_str())
        .bind(&key.prefix)
        .bind(&key.machine)
        .bind(key.now),
    )
    .await?;
    tx.commit().await?;
    Ok(revoked)
}

/// The account and license behind an active API key.
#[derive(Debug, Clone)]
pub struct KeyOwner {
    /// The API key's id, or the CI push token's.
    pub key_id: String,
    pub last_used_at: Option<Millis>,
    /// When a named key stops working (`None`: never, and for CI push tokens, whose lookup
    /// already leaves out the expired).
    pub expires_at: Option<Millis>,
    pub license: License,
    pub via: Via,
}

/// What authenticated a call.
#[derive(Debug, Clone, PartialEq)]
pub enum Via {
    ApiKey {
        prefix: String,
        machine: String,
    },
    /// A keyless CI push token: the projects it may push (`None`: all), the identity it was
    /// issued to, and the git context that identity's token vouched for.
    Ci {
        projects: Option<Vec<String>>,
        identity: Box<tidemark_wire::CiIdentity>,
        trusted_git: Box<tidemark_domain::ci_identity::TrustedGit>,
    },
}

impl KeyOwner {
    /// Whether this credential may use only some of the account's projects (a keyless CI
    /// token whose publisher names them).
    pub fn limited_to_projects(&self) -> bool {
        matches!(
            self.via,
            Via::Ci {
                projects: Some(_),
                ..
            }
        )
    }

    /// Whether this credential may push to or read the project labelled `label`.
    pub fn may_use_project(&self, label: &str) -> bool {
        match &self.via {
            Via::ApiKey { .. } => true,
            Via::Ci { projects, .. } => projects
                .as_ref()
                .is_none_or(|p| p.iter().any(|l| l == label)),
        }
    }

    /// How a scan pushed with this credential records it.
    pub fn pushed_by(&self) -> tidemark_wire::PushedBy {
        match &self.via {
            Via::ApiKey { prefix, machine } => tidemark_wire::PushedBy::ApiKey {
                key_prefix: prefix.clone(),
                machine: machine.clone(),
            },
            Via::Ci { identity, .. } => tidemark_wire::PushedBy::Ci((**identity).clone()),
        }
    }
}

/// An account's writes (scans received) after the start of the write budget's window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Writes {
    pub in_window: u32,
    /// When the oldest of them was received.
    pub oldest: Option<Millis>,
}

/// The columns `writes` and `oldest_write`: the writes of licence `l`'s account received
/// after the parameter `$n` (`scans_account_received` answers both).
pub(crate) fn writes_columns(n: u8) -> String {
    format!(
        "(SELECT COUNT(*) FROM scans w WHERE w.account_id = l.account_id AND w.received_at > ${n}) \
         AS writes, \
         (SELECT MIN(w.received_at) FROM scans w WHERE w.account_id = l.account_id \
         AND w.received_at > ${n}) AS oldest_write"
    )
}

#[derive(sqlx::FromRow)]
pub(crate) struct WritesRow {
    writes: i64,
    oldest_write: Option<i64>,
}

impl From<WritesRow> for Writes {
    fn from(r: WritesRow) -> Self {
        Self {
            in_window: u32::try_from(r.writes).unwrap_or(u32::MAX),
            oldest: r.oldest_write,
        }
    }
}

/// The account behind a live API key, and its writes since `window_start`, in one read: a
/// push needs both before it reads its body, and each read is a round trip to a database
/// thread. A `window_start` past every write (`Millis::MAX`) reads no budget.
pub async fn find_key_owner_and_writes(
    db: &Db,
    hash: &HashedApiKey,
    window_start: Millis,
) -> Result<Option<(KeyOwner, Writes)>, StoreError> {
    let sql = format!(
        "SELECT k.id AS key_id, k.last_used_at, k.expires_at AS key_expires_at, k.prefix, k.machine, \
         {LICENSE_COLUMNS}, {} \
         FROM api_keys k JOIN licenses l ON l.account_id = k.account_id \
         WHERE k.key_hash = $1 AND k.revoked_at IS NULL",
        writes_columns(2)
    );
    #[derive(sqlx::FromRow)]
    struct Row {
        key_id: String,
        last_used_at: Option<i64>,
        key_expires_at: Option<i64>,
        prefix: String,
        machine: String,
        #[sqlx(flatten)]
        license: LicenseRow,
        #[sqlx(flatten)]
        writes: WritesRow,
    }
    let row: Option<Row> = on_db!(db, pool => {
        sqlx::query_as(&sql)
            .bind(hash.as_str())
            .bind(window_start)
            .fetch_optional(pool)
            .await
    })?;
    row.map(|r| {
        let owner = KeyOwner {
            key_id: r.key_id,
            last_used_at: r.last_used_at,
            expires_at: r.key_expires_at,
            license: License::try_from(r.license)?,
            via: Via::ApiKey {
                prefix: r.prefix,
                machine: r.machine,
            },
        };
        Ok((owner, r.writes.into()))
    })
    .transpose()
}

/// The license of an account (one per account).
pub async fn find_license_for_account(
    db: &Db,
    account_id: &AccountId,
) -> Result<Option<License>, StoreError> {
    let sql = format!("SELECT {LICENSE_COLUMNS} FROM licenses l WHERE l.account_id = $1");
    let row: Option<LicenseRow> = on_db!(db, pool => {
        sqlx::query_as(&sql).bind(account_id).fetch_optional(pool).await
    })?;
    row.map(License::try_from).transpose()
}

/// An active API key as Settings lists it: never the key itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRow {
    pub id: String,
    pub prefix: String,
    pub machine: String,
    pub created_at: Millis,
    pub last_used_at: Option<Millis>,
    /// A named key's expiry (it is listed after it, marked expired, until revoked).
    pub expires_at: Option<Millis>,
}

pub async fn list_api_keys(db: &Db, account_id: &AccountId) -> Result<Vec<KeyRow>, StoreError> {
    type Row = (String, String, String, i64, Option<i64>, Option<i64>);
    let rows: Vec<Row> = on_db!(db, pool => {
        sqlx::query_as(
            "SELECT id, prefix, machine, created_at, last_used_at, expires_at FROM api_keys \
             WHERE account_id = $1 AND revoked_at IS NULL ORDER BY created_at DESC, id",
        )
        .bind(account_id)
        .fetch_all(pool)
        .await
    })?;
    Ok(rows
        .into_iter()
        .map(
            |(id, prefix, machine, created_at, last_used_at, expires_at)| KeyRow {
                id,
                prefix,
                machine,
                created_at,
                last_used_at,
                expires_at,
            },
        )
        .collect())
}

/// Revokes one active key of the account; `false` if there was none by that id.
pub async fn revoke_api_key(
    db: &Writer,
    account_id: &AccountId,
    key_id: &str,
    audit: &AuditContext,
) -> Result<bool, StoreError> {
    let lookup = Stmt::new(
        "SELECT prefix, machine FROM api_keys WHERE id = $1 AND account_id = $2 \
         AND revoked_at IS NULL",
    )
    .bind(key_id)
    .bind(account_id);
    audited_write(
        db,
        account_id,
        audit,
        lookup,
        |(prefix, machine): (String, String)| {
            let revoke =
                Stmt::new("UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND account_id = $3")
                    .bind(audit.at)
                    .bind(key_id)
                    .bind(account_id);
            let change = Change {
                account_id: Some(account_id),
                action: Action::KeyRevoked,
                target: format!("{prefix}… ({machine})"),
                before: Some("active".to_owned()),
                after: Some("revoked".to_owned()),
            };
            (vec![revoke], change)
        },
    )
    .await
}
