//! The service's verdict-signing keys: their public halves and schedule in the clear, their
//! private halves sealed (the store never opens them; the server does).

use crate::AccountId;
use tidemark_domain::audit::{Action, AuditContext};
use tidemark_domain::signing::{KeyStage, KeyWindow, Schedule};
use tidemark_domain::Millis;

use crate::audit::{record_in, Change};
use crate::{on_db, on_db_write, BeginWrite as _, Db, StoreError, Writer};

/// A stored signing key.
#[derive(Clone, PartialEq, Eq)]
pub struct StoredKey {
    pub window: KeyWindow,
    /// base64url of the 32-byte Ed25519 public key.
    pub public_key: String,
    pub private_sealed: String,
}

impl std::fmt::Debug for StoredKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredKey")
            .field("window", &self.window)
            .field("public_key", &self.public_key)
            .field("private_sealed", &"<sealed>")
            .finish()
    }
}

#[derive(sqlx::FromRow)]
struct KeyRow {
    kid: String,
    generation: i64,
    public_key: String,
    private_sealed: String,
    published_at: i64,
    signs_from: i64,
    longest_exp: i64,
}

impl From<KeyRow> for StoredKey {
    fn from(r: KeyRow) -> Self {
        StoredKey {
            window: KeyWindow {
                kid: r.kid,
                generation: r.generation,
                published_at: r.published_at,
                signs_from: r.signs_from,
                longest_exp: r.longest_exp,
            },
            public_key: r.public_key,
            private_sealed: r.private_sealed,
        }
    }
}

/// Every stored key, oldest first.
pub async fn list_keys(db: &Db) -> Result<Vec<StoredKey>, StoreError> {
    let rows: Vec<KeyRow> = on_db!(db, pool => {
        sqlx::query_as(
            "SELECT kid, generation, public_key, private_sealed, published_at, signs_from, \
             longest_exp FROM signing_keys ORDER BY generation",
        )
        .fetch_all(pool)
        .await
    })?;
    Ok(rows.into_iter().map(StoredKey::from).collect())
}

/// The succession statements, oldest first (the first key has none).
pub async fn list_chain(db: &Db) -> Result<Vec<String>, StoreError> {
    let rows: Vec<(String,)> = on_db!(db, pool => {
        sqlx::query_as(
            "SELECT statement FROM signing_key_chain WHERE statement IS NOT NULL \
             ORDER BY generation",
        )
        .fetch_all(pool)
        .await
    })?;
    Ok(rows.into_iter().map(|(s,)| s).collect())
}

/// The schedule of `keys`.
pub fn schedule(keys: &[StoredKey]) -> Schedule {
    Schedule::new(keys.iter().map(|k| k.window.clone()).collect())
}

/// Adds `key` unless a key of its generation exists already (another replica, or another
/// rotation, was first), recording it in the audit log. Whether it was added.
///
/// `introduction` is the predecessor's signed statement naming it (none for the first key);
/// it joins the chain, which outlives the key.
pub async fn add_key(
    db: &Writer,
    key: &StoredKey,
    introduction: Option<&str>,
    audit: &AuditContext,
) -> Result<bool, StoreError> {
    let added = on_db_write!(db, pool => {
        let mut tx = pool.begin_write().await?;
        let added = sqlx::query(
            "INSERT INTO signing_keys (kid, generation, public_key, private_sealed, \
             published_at, signs_from, longest_exp) VALUES ($1, $2, $3, $4, $5, $6, $7) \
             ON CONFLICT DO NOTHING",
        )
        .bind(&key.window.kid)
        .bind(key.window.generation)
        .bind(&key.public_key)
        .bind(&key.private_sealed)
        .bind(key.window.published_at)
        .bind(key.window.signs_from)
        .bind(key.window.longest_exp)
        .execute(&mut *tx)
        .await?
        .rows_affected()
            == 1;
        if added {
            sqlx::query(
                "INSERT INTO signing_key_chain (generation, kid, public_key, statement) \
                 VALUES ($1, $2, $3, $4)",
            )
            .bind(key.window.generation)
            .bind(&key.window.kid)
            .bind(&key.public_key)
            .bind(introduction)
            .execute(&mut *tx)
            .await?;
            let change = Change {
                account_id: None,
                action: Action::SigningKeyCreated,
                target: key.window.kid.clone(),
                before: None,
                after: Some(format!(
                    "generation {}, signs from {}",
                    key.window.generation,
                    tidemark_domain::to_rfc3339(key.window.signs_from)
                )),
            };
            record_in!(&mut *tx, audit, change)?;
        }
        tx.commit().await?;
        added
    });
    Ok(added)
}

/// Records an offline licence file signed by `kid` valid until `exp` (so the key stays
/// published at least that long), in the account's audit log.
pub async fn record_offline_file(
    db: &Writer,
    kid: &str,
    exp: Millis,
    account_id: &AccountId,
    jti: &str,
    audit: &AuditContext,
) -> Result<(), StoreError> {
    on_db_write!(db, pool => {
        let mut tx = pool.begin_write().await?;
        sqlx::query(
            "UPDATE signing_keys SET longest_exp = $1 WHERE kid = $2 AND longest_exp < $1",
        )
        .bind(exp)
        .bind(kid)
        .execute(&mut *tx)
        .await?;
        let change = Change {
            account_id: Some(account_id),
            action: Action::OfflineLicenseIssued,
            target: jti.to_owned(),
            before: None,
            after: Some(format!(
                "valid until {}, signed by {kid}",
                tidemark_domain::to_rfc3339(exp)
            )),
        };
        record_in!(&mut *tx, audit, change)?;
        tx.commit().await?;
    });
    Ok(())
}

/// Deletes the keys the schedule retires at `now`, private halves with them, each recorded
/// in the audit log. Their kids.
pub async fn delete_retired(
    db: &Writer,
    now: Millis,
    audit: &AuditContext,
) -> Result<Vec<String>, StoreError> {
    let keys = list_keys(db).await?;
    let schedule = schedule(&keys);
    let retired: Vec<String> = schedule
        .keys()
        .iter()
        .filter(|k| schedule.stage(k, now) == KeyStage::Retired)
        .map(|k| k.kid.clone())
        .collect();
    for kid in &retired {
        on_db_write!(db, pool => {
            let mut tx = pool.begin_write().await?;
            let deleted = sqlx::query("DELETE FROM signing_keys WHERE kid = $1")
                .bind(kid)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            if deleted == 1 {
                let change = Change {
                    account_id: None,
                    action: Action::SigningKeyRetired,
                    target: kid.clone(),
                    before: None,
                    after: Some("private key destroyed; no longer published".to_owned()),
                };
                record_in!(&mut *tx, audit, change)?;
            }
            tx.commit().await?;
        });
    }
    Ok(retired)
}
