//! The durable mail outbox. Requests only enqueue; a background sender delivers, retrying
//! with back-off. Rows hold no secret: a message is composed at delivery time.

use crate::{AccountId, ProjectId};
use tidemark_domain::Millis;

use crate::queue::{Claimable, Queue};
use crate::scan_facts::{ScanFacts, ScanFactsRow, SCAN_FACTS_COLUMNS, SCAN_FACTS_JOIN};
use crate::Writer;
use crate::{on_db, on_db_write, Db, StoreError};

/// After this many failed attempts a message is given up (kept, with its last error).
pub const MAX_ATTEMPTS: i64 = 12;

/// What became of a message the sender finished with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finished {
    Delivered,
    /// Nothing to send (no license for the address).
    NoLicense,
    /// Dropped: the recipient already had its share of mail this hour.
    Capped,
    /// What the message was about no longer exists.
    Obsolete,
}

impl Finished {
    pub fn as_str(self) -> &'static str {
        match self {
            Finished::Delivered => "delivered",
            Finished::NoLicense => "no_license",
            Finished::Capped => "capped",
            Finished::Obsolete => "obsolete",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct OutboxMail {
    pub id: String,
    pub kind: String,
    pub recipient: String,
    /// Attempts including the current one.
    pub attempts: i64,
    /// The account an alert or key-expiry warning is about.
    pub account_id: Option<AccountId>,
    /// For an alert: the pushed scan it is about (`None` for other kinds, or when the
    /// project is gone).
    pub scan: Option<ScanFacts>,
}

#[derive(sqlx::FromRow)]
struct DueMailRow {
    id: String,
    kind: String,
    recipient: String,
    attempts: i64,
    next_attempt_at: i64,
    account_id: Option<AccountId>,
    project_id: Option<ProjectId>,
    #[sqlx(flatten)]
    scan: ScanFactsRow,
}

pub async fn enqueue_mail(
    db: &Writer,
    id: &str,
    kind: &str,
    recipient: &str,
    now: Millis,
) -> Result<(), StoreError> {
    on_db_write!(db, pool => {
        sqlx::query(
            "INSERT INTO mail_outbox (id, kind, recipient, created_at, next_attempt_at) \
             VALUES ($1, $2, $3, $4, $4)",
        )
        .bind(id)
        .bind(kind)
        .bind(recipient)
        .bind(now)
        .execute(pool)
        .await
        .map(|_| ())
    })?;
    Ok(())
}

/// [`enqueue_mail`] on the vendor's word: the mail and its audit entry in one transaction.
pub async fn enqueue_mail_audited(
    db: &Writer,
    id: &str,
    kind: &str,
    recipient: &str,
    account_id: &crate::AccountId,
    target: &str,
    audit: &tidemark_domain::audit::AuditContext,
) -> Result<(), StoreError> {
    use crate::stmt::Stmt;
    let mut tx = crate::tx::WriteTx::begin(db).await?;
    tx.execute(
        Stmt::new(
            "INSERT INTO mail_outbox (id, kind, recipient, created_at, next_attempt_at) \
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(id)
        .bind(kind)
        .bind(recipient)
        .bind(audit.at)
        .bind(audit.at),
    )
    .await?;
    let change = crate::audit::Change {
        account_id: Some(account_id),
        action: tidemark_domain::audit::Action::LicenseResent,
        target: target.to_owned(),
        before: None,
        after: Some(format!("mailed to {recipient}")),
    };
    tx.audit(audit, change).await?;
    tx.commit().await?;
    Ok(())
}

/// The mail outbox as a [`Queue`].
const MAIL: Queue = Queue {
    table: "mail_outbox",
    pending: "{t}sent_at IS NULL",
    key: &["id"],
    finished_before: "sent_at IS NOT NULL AND sent_at < $1",
};

impl Claimable for DueMailRow {
    fn key(&self) -> Vec<String> {
        vec![self.id.clone()]
    }
    fn due_at(&self) -> Millis {
        self.next_attempt_at
    }
}

/// Claims up to `max` due messages for `lease_ms` (see [`Queue::claim`]).
pub async fn claim_due_mail(
    db: &Writer,
    now: Millis,
    lease_ms: Millis,
    max: i64,
) -> Result<Vec<OutboxMail>, StoreError> {
    let select = format!(
        "SELECT o.id, o.kind, o.recipient, o.attempts, o.next_attempt_at, o.account_id, \
         o.project_id, \
         {SCAN_FACTS_COLUMNS} FROM mail_outbox o {SCAN_FACTS_JOIN}"
    );
    let claimed: Vec<DueMailRow> = MAIL.claim(db, &select, now, lease_ms, max).await?;
    Ok(claimed
        .into_iter()
        .map(|row| OutboxMail {
            attempts: row.attempts + 1,
            scan: row.scan.into_facts(row.project_id),
            account_id: row.account_id,
            id: row.id,
            kind: row.kind,
            recipient: row.recipient,
        })
        .collect())
}

pub async fn mark_sent(
    db: &Writer,
    id: &str,
    now: Millis,
    finished: Finished,
) -> Result<(), StoreError> {
    on_db_write!(db, pool => {
        sqlx::query(
            "UPDATE mail_outbox SET sent_at = $1, last_error = NULL, outcome = $2 WHERE id = $3",
        )
            .bind(now)
            .bind(finished.as_str())
            .bind(id)
            .execute(pool)
            .await
            .map(|_| ())
    })?;
    Ok(())
}

/// Records a failed attempt; the message is due again at `retry_at`, or never once it has
/// used [`MAX_ATTEMPTS`].
pub async fn mark_failed(
    db: &Writer,
    mail: &OutboxMail,
    error: &str,
    retry_at: Millis,
) -> Result<(), StoreError> {
    let next = if mail.attempts >= MAX_ATTEMPTS {
        i64::MAX
    } else {
        retry_at
    };
    on_db_write!(db, pool => {
        sqlx::query("UPDATE mail_outbox SET last_error = $1, next_attempt_at = $2 WHERE id = $3")
            .bind(error)
            .bind(next)
            .bind(&mail.id)
            .execute(pool)
            .await
            .map(|_| ())
    })?;
    Ok(())
}

/// Messages of `kind` delivered to `recipient` since `since` (for the per-recipient caps:
/// alerts never use up a recipient's license resends, nor the other way round).
pub async fn delivered_since(
    db: &Db,
    recipient: &str,
    kind: &str,
    since: Millis,
) -> Result<i64, StoreError> {
    let (n,): (i64,) = on_db!(db, pool => {
        sqlx::query_as(
            "SELECT COUNT(*) FROM mail_outbox \
             WHERE recipient = $1 AND sent_at > $2 AND outcome = 'delivered' AND kind = $3",
        )
        .bind(recipient)
        .bind(since)
        .bind(kind)
        .fetch_one(pool)
        .await
    })?;
    Ok(n)
}

/// Messages not yet delivered (for operators and tests).
pub async fn pending_count(db: &Db) -> Result<i64, StoreError> {
    MAIL.pending_count(db).await
}

/// Forgets messages delivered before `before`; undelivered ones are kept whatever their age.
pub async fn prune_sent(db: &Writer, before: Millis) -> Result<u64, StoreError> {
    MAIL.prune(db, before).await
}
