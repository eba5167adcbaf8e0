//! tower-sessions records kept in the database (SQLite or PostgreSQL), so every replica sees
//! every session.
//!
//! Ids are stored only as a SHA-256 hash. `save` only ever updates, so a request that was
//! still in flight when its session logged out cannot bring the record back.

use std::time::Duration;

use sha2::{Digest as _, Sha256};
use tidemark_domain::access::SessionPolicy;
use tidemark_domain::{now_millis, Millis};
use tidemark_store::sessions::{self, SessionOwner, SessionTable};
use tidemark_store::Db;
use tower_sessions::session::{Id, Record};
use tower_sessions::session_store::{self, SessionStore};

/// Session data keys.
pub const USER_ID: &str = "user_id";
pub const ACCOUNT_ID: &str = "account_id";
pub const SIGNED_IN_VIA: &str = "via";

#[derive(Debug, Clone)]
pub struct DbSessionStore {
    db: Db,
    policy: SessionPolicy,
    table: SessionTable,
}

impl DbSessionStore {
    /// The dashboard's sessions.
    pub fn new(db: Db, policy: SessionPolicy) -> Self {
        let table = SessionTable::Customers;
        Self { db, policy, table }
    }

    /// The console's sessions: another table, so a customer's session id is no staff session.
    pub fn for_staff(db: Db, policy: SessionPolicy) -> Self {
        let table = SessionTable::Staff;
        Self { db, policy, table }
    }

    /// How far a stored expiry may lag behind activity before a read rewrites it: a sliding
    /// session costs one write a minute at most, not one per request.
    fn slack_ms(&self) -> Millis {
        (self.policy.idle_ms / 10).min(60_000)
    }
}

/// The stored key for a session id.
pub fn id_hash(id: &Id) -> String {
    hex::encode(Sha256::digest(id.0.to_le_bytes()))
}

fn owned_owner(record: &Record) -> (Option<String>, Option<String>) {
    let field = |key: &str| {
        record
            .data
            .get(key)
            .and_then(|v| v.as_str())
            .map(str::to_owned)
    };
    (field(USER_ID), field(ACCOUNT_ID))
}

fn backend(err: impl std::fmt::Display) -> session_store::Error {
    session_store::Error::Backend(err.to_string())
}

#[async_trait::async_trait]
impl SessionStore for DbSessionStore {
    async fn create(&self, record: &mut Record) -> session_store::Result<()> {
        let data = serde_json::to_string(&record.data)
            .map_err(|e| session_store::Error::Encode(e.to_string()))?;
        let (user, account) = owned_owner(record);
        let now = now_millis();
        let (policy, table) = (self.policy, self.table);
        loop {
            let (hash, data, user, account) = (
                id_hash(&record.id),
                data.clone(),
                user.clone(),
                account.clone(),
            );
            let created = self
                .db
                .detached(|db| async move {
                    sessions::create_in(
                        &db,
                        table,
                        &hash,
                        SessionOwner {
                            user_id: user.as_deref(),
                            account_id: account.as_deref(),
                        },
                        &data,
                        (now, now + policy.idle_ms, now + policy.absolute_ms),
                    )
                    .await
                })
                .await
                .map_err(backend)?;
            if created {
                return Ok(());
            }
            // A 128-bit collision: pick another id.
            record.id = Id::default();
        }
    }

    async fn save(&self, record: &Record) -> session_store::Result<()> {
        let data = serde_json::to_string(&record.data)
            .map_err(|e| session_store::Error::Encode(e.to_string()))?;
        let (user, account) = owned_owner(record);
        let hash = id_hash(&record.id);
        let expires_at = now_millis() + self.policy.idle_ms;
        let (slack, table) = (self.slack_ms(), self.table);
        self.db
            .detached(|db| async move {
                sessions::save_in(
                    &db,
                    table,
                    &hash,
                    SessionOwner {
                        user_id: user.as_deref(),
                        account_id: account.as_deref(),
                    },
                    &data,
                    expires_at,
                    slack,
                )
                .await
            })
            .await
            .map_err(backend)
    }

    async fn load(&self, session_id: &Id) -> session_store::Result<Option<Record>> {
        let Some(row) = sessions::load_in(&self.db, self.table, &id_hash(session_id), now_millis())
            .await
            .map_err(backend)?
        else {
            return Ok(None);
        };
        let data = serde_json::from_str(&row.data)
            .map_err(|e| session_store::Error::Decode(e.to_string()))?;
        let expiry_date = time::OffsetDateTime::UNIX_EPOCH
            + Duration::from_millis(u64::try_from(row.expires_at).unwrap_or(0));
        Ok(Some(Record {
            id: *session_id,
            data,
            expiry_date,
        }))
    }

    async fn delete(&self, session_id: &Id) -> session_store::Result<()> {
        let (hash, table) = (id_hash(session_id), self.table);
        self.db
            .detached(|db| async move { sessions::delete_in(&db, table, &hash).await })
            .await
            .map_err(backend)
    }
}
