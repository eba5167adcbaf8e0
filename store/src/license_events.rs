//! Licence events and the vendor's webhook endpoints.
//!
//! An event is written in the transaction that made it happen (a licence made or changed, a
//! seat taken or freed), numbered in its licence's order, with one delivery per subscribed
//! endpoint: nothing is lost and nothing is told that did not commit. Only the earliest
//! unfinished delivery of a licence to an endpoint is claimable, so each endpoint hears a
//! licence's events in order; senders on every replica claim them as the account webhooks'
//! sender does.

use tidemark_domain::audit::{Action, AuditContext};
use tidemark_domain::license_events::{self as events, Details, LicenseEvent};
use tidemark_domain::Millis;

use crate::audit::Change;
use crate::licenses::{License, LicenseRow, LICENSE_COLUMNS};
use crate::queue::{Claimable, Queue};
use crate::stmt::Stmt;
use crate::tx::{read_all, WriteTx};
use crate::{Db, StoreError, Writer};

/// Finished deliveries kept for the endpoint's counts.
pub const FINISHED_KEEP_MS: Millis = 30 * tidemark_domain::time::DAY_MS;

/// An event to raise about a licence.
#[derive(Debug, Clone)]
pub struct Raise {
    pub event: LicenseEvent,
    pub details: Details,
    pub at: Millis,
}

impl Raise {
    pub fn new(event: LicenseEvent, at: Millis) -> Self {
        Raise {
            event,
            details: Details::default(),
            at,
        }
    }
}

/// Records the event in `tx` and queues its deliveries; `false` when it is once-only and was
/// raised before (nothing written). The licence's row stays locked until `tx` ends, so its
/// events are numbered in commit order.
pub(crate) async fn raise(
    tx: &mut WriteTx,
    license_id: &str,
    r: Raise,
) -> Result<bool, StoreError> {
    let (seq,): (i64,) = tx
        .fetch_one(
            Stmt::new(
                "UPDATE licenses SET event_seq = event_seq + 1 WHERE id = $1 RETURNING event_seq",
            )
            .bind(license_id),
        )
        .await?;
    let row: LicenseRow = tx
        .fetch_one(
            Stmt::new(format!(
                "SELECT {LICENSE_COLUMNS} FROM licenses l WHERE l.id = $1"
            ))
            .bind(license_id),
        )
        .await?;
    let license = License::try_from(row)?;
    let once = events::once_key(r.event, license.expires_at, r.details.days_left, r.at);
    if let Some(key) = &once {
        let seen: Option<(String,)> = tx
            .fetch_optional(
                Stmt::new("SELECT id FROM license_events WHERE license_id = $1 AND once_key = $2")
                    .bind(license_id)
                    .bind(key),
            )
            .await?;
        if seen.is_some() {
            return Ok(false);
        }
    }
    let id = tidemark_domain::ids::new_license_event_id();
    let body = events::body(&id, r.event, seq, &license, r.details, r.at);
    tx.execute(
        Stmt::new(
            "INSERT INTO license_events (id, license_id, seq, event, created_at, body, once_key) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(&id)
        .bind(license_id)
        .bind(seq)
        .bind(r.event.as_str())
        .bind(r.at)
        .bind(body)
        .bind(once),
    )
    .await?;
    // Pending at once when nothing of the licence waits for the endpoint; else behind it.
    tx.execute(
        Stmt::new(format!(
            "INSERT INTO vendor_deliveries (event_id, webhook_id, license_id, seq, state, \
             created_at, window_start, next_attempt_at) \
             SELECT $1, w.id, $2, $3, CASE WHEN EXISTS (SELECT 1 FROM vendor_deliveries d \
               WHERE d.webhook_id = w.id AND d.license_id = $4 \
               AND d.state IN ('queued', 'pending')) THEN 'queued' ELSE 'pending' END, \
             $5, $6, $7 FROM vendor_webhooks w WHERE w.events LIKE '{}'",
            r.event.subscribed_pattern()
        ))
        .bind(&id)
        .bind(license_id)
        .bind(seq)
        .bind(license_id)
        .bind(r.at)
        .bind(r.at)
        .bind(r.at),
    )
    .await?;
    Ok(true)
}

/// Raises `r` about `license_id` in a transaction of its own (the calendar's events, and a
/// refused activation's, which writes nothing else); `false` when it was raised before.
pub async fn raise_alone(db: &Writer, license_id: &str, r: Raise) -> Result<bool, StoreError> {
    let mut tx = WriteTx::begin(db).await?;
    let raised = raise(&mut tx, license_id, r).await?;
    tx.commit().await?;
    Ok(raised)
}

/// Licences whose expiry falls in `(from, to]`: the calendar's candidates.
pub async fn expiring_between(
    db: &Db,
    from: Millis,
    to: Millis,
) -> Result<Vec<(String, Millis)>, StoreError> {
    read_all(
        db,
        Stmt::new(
            "SELECT id, expires_at FROM licenses WHERE expires_at > $1 AND expires_at <= $2 \
             ORDER BY expires_at, id",
        )
        .bind(from)
        .bind(to),
    )
    .await
}

/// Which events a page holds.
#[derive(Debug, Clone, Default)]
pub struct EventFilter {
    pub license_id: Option<String>,
    pub event: Option<LicenseEvent>,
}

/// A stored event: its body is what endpoints receive.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct StoredEvent {
    pub id: String,
    pub created_at: Millis,
    pub body: String,
}

/// Up to `limit` events before `before` (time and id), newest first.
pub async fn page_events(
    db: &Db,
    filter: &EventFilter,
    before: Option<(Millis, &str)>,
    limit: i64,
) -> Result<Vec<StoredEvent>, StoreError> {
    let mut sql = String::from("SELECT id, created_at, body FROM license_events WHERE 1 = 1");
    let mut args: Vec<crate::stmt::Arg> = Vec::new();
    let mut next = |arg: crate::stmt::Arg| {
        args.push(arg);
        args.len()
    };
    if let Some(license) = &filter.license_id {
        sql.push_str(&format!(
            " AND license_id = ${}",
            next(license.as_str().into())
        ));
    }
    if let Some(event) = filter.event {
        sql.push_str(&format!(" AND event = ${}", next(event.as_str().into())));
    }
    if let Some((at, id)) = before {
        let (a, a2, i) = (next(at.into()), next(at.into()), next(id.into()));
        sql.push_str(&format!(
            " AND (created_at < ${a} OR (created_at = ${a2} AND id < ${i}))"
        ));
    }
    sql.push_str(&format!(
        " ORDER BY created_at DESC, id DESC LIMIT ${}",
        next(limit.into())
    ));
    let mut stmt = Stmt::new(sql);
    for arg in args {
        stmt = stmt.bind(arg);
    }
    read_all(db, stmt).await
}

/// An endpoint as listed (never its URL or secret in usable form).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VendorWebhookRow {
    pub id: String,
    pub url_display: String,
    pub events: Vec<LicenseEvent>,
    pub created_at: Millis,
    pub pending: i64,
    pub failed: i64,
}

/// A new endpoint, its URL and secret sealed by the caller.
pub struct NewVendorWebhook<'a> {
    pub id: &'a str,
    pub url_sealed: &'a str,
    pub url_display: &'a str,
    pub events: &'a [LicenseEvent],
    pub secret_sealed: &'a str,
}

/// Stores the endpoint; `false` when the vendor has [`events::MAX_VENDOR_ENDPOINTS`] already.
pub async fn create_webhook(
    db: &Writer,
    new: &NewVendorWebhook<'_>,
    audit: &AuditContext,
) -> Result<bool, StoreError> {
    let mut tx = WriteTx::begin(db).await?;
    let (count,): (i64,) = tx
        .fetch_one(Stmt::new("SELECT COUNT(*) FROM vendor_webhooks"))
        .await?;
    if count >= events::MAX_VENDOR_ENDPOINTS as i64 {
        return Ok(false);
    }
    tx.execute(
        Stmt::new(
            "INSERT INTO vendor_webhooks (id, url_sealed, url_display, events, secret_sealed, \
             created_at) VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(new.id)
        .bind(new.url_sealed)
        .bind(new.url_display)
        .bind(events::to_stored(new.events))
        .bind(new.secret_sealed)
        .bind(audit.at),
    )
    .await?;
    let names: Vec<&str> = new.events.iter().map(|e| e.as_str()).collect();
    let change = Change {
        account_id: None,
        action: Action::VendorWebhookCreated,
        target: new.url_display.to_owned(),
        before: None,
        after: Some(names.join(", ")),
    };
    tx.audit(audit, change).await?;
    tx.commit().await?;
    Ok(true)
}

/// The vendor's endpoints, oldest first, with their unfinished and given-up deliveries.
pub async fn list_webhooks(db: &Db) -> Result<Vec<VendorWebhookRow>, StoreError> {
    let rows: Vec<(String, String, String, i64, i64, i64)> = read_all(
        db,
        Stmt::new(
            "SELECT w.id, w.url_display, w.events, w.created_at, \
             (SELECT COUNT(*) FROM vendor_deliveries d WHERE d.webhook_id = w.id \
              AND d.state IN ('queued', 'pending')), \
             (SELECT COUNT(*) FROM vendor_deliveries d WHERE d.webhook_id = w.id \
              AND d.state = 'failed') \
             FROM vendor_webhooks w ORDER BY w.created_at, w.id",
        ),
    )
    .await?;
    Ok(rows
        .into_iter()
        .map(
            |(id, url_display, stored, created_at, pending, failed)| VendorWebhookRow {
                id,
                url_display,
                events: events::from_stored(&stored),
                created_at,
                pending,
                failed,
            },
        )
        .collect())
}

/// Removes the endpoint and its deliveries; `false` when there is no such endpoint.
pub async fn delete_webhook(
    db: &Writer,
    id: &str,
    audit: &AuditContext,
) -> Result<bool, StoreError> {
    let mut tx = WriteTx::begin(db).await?;
    let found: Option<(String,)> = tx
        .fetch_optional(Stmt::new("SELECT url_display FROM vendor_webhooks WHERE id = $1").bind(id))
        .await?;
    let Some((url_display,)) = found else {
        return Ok(false);
    };
    tx.execute(Stmt::new("DELETE FROM vendor_deliveries WHERE webhook_id = $1").bind(id))
        .await?;
    tx.execute(Stmt::new("DELETE FROM vendor_webhooks WHERE id = $1").bind(id))
        .await?;
    let change = Change {
        account_id: None,
        action: Action::VendorWebhookDeleted,
        target: url_display,
        before: Some("an endpoint".to_owned()),
        after: None,
    };
    tx.audit(audit, change).await?;
    tx.commit().await?;
    Ok(true)
}

/// A claimed delivery: the stored body, and where and how to send it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DueDelivery {
    pub event_id: String,
    pub webhook_id: String,
    pub event: String,
    pub body: String,
    pub window_start: Millis,
    /// Attempts including this one.
    pub attempts: i64,
    pub url_sealed: String,
    pub secret_sealed: String,
}

#[derive(sqlx::FromRow)]
struct DueRow {
    event_id: String,
    webhook_id: String,
    event: String,
    body: String,
    window_start: i64,
    attempts: i64,
    next_attempt_at: i64,
    url_sealed: String,
    secret_sealed: String,
}

impl Claimable for DueRow {
    fn key(&self) -> Vec<String> {
        vec![self.event_id.clone(), self.webhook_id.clone()]
    }
    fn due_at(&self) -> Millis {
        self.next_attempt_at
    }
}

const DELIVERIES: Queue = Queue {
    table: "vendor_deliveries",
    pending: "{t}state = 'pending'",
    key: &["event_id", "webhook_id"],
    finished_before: "state IN ('delivered', 'failed') AND created_at < $1",
};

/// Makes the next delivery of each licence and endpoint claimable once the one before it
/// has finished. Run before each claim: a raise that committed while the one before it was
/// finishing may have found it still unfinished and queued behind it.
async fn promote(db: &Writer) -> Result<u64, StoreError> {
    let mut tx = WriteTx::begin(db).await?;
    let n = tx
        .execute(Stmt::new(
            "UPDATE vendor_deliveries SET state = 'pending' WHERE state = 'queued' \
             AND NOT EXISTS (SELECT 1 FROM vendor_deliveries p \
               WHERE p.webhook_id = vendor_deliveries.webhook_id \
               AND p.license_id = vendor_deliveries.license_id AND p.state = 'pending') \
             AND seq = (SELECT MIN(q.seq) FROM vendor_deliveries q \
               WHERE q.webhook_id = vendor_deliveries.webhook_id \
               AND q.license_id = vendor_deliveries.license_id AND q.state = 'queued')",
        ))
        .await?;
    tx.commit().await?;
    Ok(n)
}

/// Claims up to `max` due deliveries for `lease_ms` (each the first unfinished of its
/// licence and endpoint).
pub async fn claim_due(
    db: &Writer,
    now: Millis,
    lease_ms: Millis,
    max: i64,
) -> Result<Vec<DueDelivery>, StoreError> {
    promote(db).await?;
    let select = "SELECT o.event_id, o.webhook_id, e.event, e.body, o.window_start, o.attempts, \
                  o.next_attempt_at, w.url_sealed, w.secret_sealed \
                  FROM vendor_deliveries o JOIN vendor_webhooks w ON w.id = o.webhook_id \
                  JOIN license_events e ON e.id = o.event_id";
    let claimed: Vec<DueRow> = DELIVERIES.claim(db, select, now, lease_ms, max).await?;
    Ok(claimed
        .into_iter()
        .map(|r| DueDelivery {
            event_id: r.event_id,
            webhook_id: r.webhook_id,
            event: r.event,
            body: r.body,
            window_start: r.window_start,
            attempts: r.attempts + 1,
            url_sealed: r.url_sealed,
            secret_sealed: r.secret_sealed,
        })
        .collect())
}

pub use crate::webhooks::Attempt;

/// Records what the attempt came to. A delivery that finished (delivered or given up) lets
/// the licence's next one go.
pub async fn record_attempt(
    db: &Writer,
    delivery: &DueDelivery,
    attempt: &Attempt,
) -> Result<(), StoreError> {
    let state = match (&attempt.error, attempt.retry_at) {
        (None, _) => "delivered",
        (Some(_), Some(_)) => "pending",
        (Some(_), None) => "failed",
    };
    let mut tx = WriteTx::begin(db).await?;
    tx.execute(
        Stmt::new(
            "UPDATE vendor_deliveries SET state = $1, next_attempt_at = $2, \
             last_attempt_at = $3, last_status = $4, last_latency_ms = $5, last_error = $6 \
             WHERE event_id = $7 AND webhook_id = $8",
        )
        .bind(state)
        .bind(attempt.retry_at.unwrap_or(i64::MAX))
        .bind(attempt.at)
        .bind(attempt.status.map(i64::from))
        .bind(attempt.latency_ms)
        .bind(attempt.error.clone())
        .bind(&delivery.event_id)
        .bind(&delivery.webhook_id),
    )
    .await?;
    tx.commit().await?;
    if state != "pending" {
        promote(db).await?;
    }
    Ok(())
}

pub async fn next_due_at(db: &Db) -> Result<Option<Millis>, StoreError> {
    DELIVERIES.next_due_at(db).await
}

/// Deliveries not finished yet, waiting their turn or due.
pub async fn unfinished_count(db: &Db) -> Result<i64, StoreError> {
    let (n,): (i64,) = crate::tx::read_one(
        db,
        Stmt::new("SELECT COUNT(*) FROM vendor_deliveries WHERE state IN ('queued', 'pending')"),
    )
    .await?;
    Ok(n)
}

pub async fn prune_finished(db: &Writer, before: Millis) -> Result<u64, StoreError> {
    DELIVERIES.prune(db, before).await
}
