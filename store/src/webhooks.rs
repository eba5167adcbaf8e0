//! Webhook endpoints and the durable outbox of their deliveries.
//!
//! A delivery row is written in the transaction that raised its event (a push, a key
//! rotation), one per subscribed endpoint, so an event is never lost nor sent for something
//! that did not commit. Senders on every replica claim due rows with a conditional update:
//! one replica sends a given delivery at a time, and a sender that dies mid-send leaves the
//! row due again when its lease ends.

use crate::{AccountId, ProjectId};
use tidemark_domain::audit::{Action, AuditContext};
use tidemark_domain::webhook::{subscribed_pattern, Event, EventSet, PayloadFormat};
use tidemark_domain::Millis;

use crate::audit::Change;
use crate::queue::{Claimable, Queue};
use crate::scan_facts::{ScanFactsRow, SCAN_FACTS_COLUMNS, SCAN_FACTS_JOIN};
use crate::stmt::Stmt;
use crate::tx::{audited_write, WriteTx};
use crate::Writer;
use crate::{on_db, on_db_write, Db, StoreError};

/// Deliveries the log keeps once finished (delivered or given up).
pub const FINISHED_KEEP_MS: Millis = 30 * tidemark_domain::time::DAY_MS;

/// An endpoint as Settings lists it (no URL or secret in usable form).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Webhook {
    pub id: String,
    /// `None`: every project of the account.
    pub project_id: Option<ProjectId>,
    pub project_label: Option<String>,
    pub url_display: String,
    pub format: PayloadFormat,
    pub events: EventSet,
    pub created_at: Millis,
    pub secret_rotated_at: Option<Millis>,
}

/// A new endpoint, its URL and secret already sealed by the caller.
#[derive(Debug, Clone)]
pub struct NewWebhook {
    pub id: String,
    pub account_id: AccountId,
    pub project_id: Option<ProjectId>,
    pub url_sealed: String,
    pub url_display: String,
    pub format: PayloadFormat,
    pub events: EventSet,
    pub secret_sealed: String,
    pub now: Millis,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreateOutcome {
    Created,
    /// The project is not the account's.
    NoSuchProject,
    /// The account already has [`tidemark_domain::webhook::MAX_ENDPOINTS`].
    TooMany,
}

pub async fn create_webhook(
    db: &Writer,
    hook: &NewWebhook,
    audit: &AuditContext,
) -> Result<CreateOutcome, StoreError> {
    let mut tx = WriteTx::begin_account(db, &hook.account_id).await?;
    if let Some(project_id) = &hook.project_id {
        let found: Option<(String,)> = tx
            .fetch_optional(
                Stmt::new("SELECT id FROM projects WHERE id = $1 AND account_id = $2")
                    .bind(project_id)
                    .bind(&hook.account_id),
            )
            .await?;
        if found.is_none() {
            return Ok(CreateOutcome::NoSuchProject);
        }
    }
    let (count,): (i64,) = tx
        .fetch_one(
            Stmt::new("SELECT COUNT(*) FROM webhooks WHERE account_id = $1").bind(&hook.account_id),
        )
        .await?;
    if count >= tidemark_domain::webhook::MAX_ENDPOINTS as i64 {
        return Ok(CreateOutcome::TooMany);
    }
    tx.execute(
        Stmt::new(
            "INSERT INTO webhooks (id, account_id, project_id, url_sealed, url_display, format, \
             events, secret_sealed, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        )
        .bind(&hook.id)
        .bind(&hook.account_id)
        .bind(&hook.project_id)
        .bind(&hook.url_sealed)
        .bind(&hook.url_display)
        .bind(hook.format.as_str())
        .bind(hook.events.to_stored())
        .bind(&hook.secret_sealed)
        .bind(hook.now),
    )
    .await?;
    let events: Vec<&str> = hook.events.events().iter().map(|e| e.as_str()).collect();
    let scope = hook
        .project_id
        .as_deref()
        .map_or("all projects".to_owned(), |p| format!("project {p}"));
    let change = Change {
        account_id: Some(&hook.account_id),
        action: Action::WebhookCreated,
        target: hook.url_display.clone(),
        before: None,
        after: Some(format!(
            "{}; {scope}; format {}",
            events.join(", "),
            hook.format.as_str()
        )),
    };
    tx.audit(audit, change).await?;
    tx.commit().await?;
    Ok(CreateOutcome::Created)
}

/// The account's endpoints, oldest first.
pub async fn list_webhooks(db: &Db, account_id: &AccountId) -> Result<Vec<Webhook>, StoreError> {
    type Row = (
        String,
        Option<ProjectId>,
        Option<String>,
        String,
        String,
        String,
        i64,
        Option<i64>,
    );
    let rows: Vec<Row> = on_db!(db, pool => {
        sqlx::query_as(
            "SELECT w.id, w.project_id, p.label, w.url_display, w.format, w.events, \
             w.created_at, w.secret_rotated_at FROM webhooks w \
             LEFT JOIN projects p ON p.id = w.project_id \
             WHERE w.account_id = $1 ORDER BY w.created_at, w.id",
        )
        .bind(account_id)
        .fetch_all(pool)
        .await
    })?;
    rows.into_iter()
        .map(
            |(id, project_id, project_label, url_display, format, events, created_at, rotated)| {
                Ok(Webhook {
                    id,
                    project_id,
                    project_label,
                    url_display,
                    format: PayloadFormat::parse(&format)
                        .map_err(|_| StoreError::Corrupt("webhook format"))?,
                    events: EventSet::from_stored(&events),
                    created_at,
                    secret_rotated_at: rotated,
                })
            },
        )
        .collect()
}

/// What the audit log calls an endpoint: the display form of its URL (no path or query).
const URL_DISPLAY_OF: &str = "SELECT url_display FROM webhooks WHERE id = $1 AND account_id = $2";

/// Removes the endpoint and its deliveries. `false` when the account has no such endpoint.
pub async fn delete_webhook(
    db: &Writer,
    account_id: &AccountId,
    id: &str,
    audit: &AuditContext,
) -> Result<bool, StoreError> {
    let lookup = Stmt::new(URL_DISPLAY_OF).bind(id).bind(account_id);
    audited_write(db, account_id, audit, lookup, |(url_display,): (String,)| {
        let writes = [
            "DELETE FROM webhook_deliveries WHERE webhook_id = $1 AND account_id = $2",
            "DELETE FROM webhooks WHERE id = $1 AND account_id = $2",
        ]
        .map(|sql| Stmt::new(sql).bind(id).bind(account_id));
        let change = Change {
            account_id: Some(account_id),
            action: Action::WebhookDeleted,
            target: url_display,
            before: Some("an endpoint".to_owned()),
            after: None,
        };
        (writes.into(), change)
    })
    .await
}

/// Replaces the endpoint's signing secret; deliveries from now on are signed with it.
pub async fn replace_secret(
    db: &Writer,
    account_id: &AccountId,
    id: &str,
    secret_sealed: &str,
    audit: &AuditContext,
) -> Result<bool, StoreError> {
    let lookup = Stmt::new(URL_DISPLAY_OF).bind(id).bind(account_id);
    audited_write(db, account_id, audit, lookup, |(url_display,): (String,)| {
        let update = Stmt::new(
            "UPDATE webhooks SET secret_sealed = $1, secret_rotated_at = $2 \
             WHERE id = $3 AND account_id = $4",
        )
        .bind(secret_sealed)
        .bind(audit.at)
        .bind(id)
        .bind(account_id);
        let change = Change {
            account_id: Some(account_id),
            action: Action::WebhookSecretRotated,
            target: url_display,
            before: None,
            after: Some("a new signing secret".to_owned()),
        };
        (vec![update], change)
    })
    .await
}

/// One event to fan out to the account's subscribed endpoints.
#[derive(Debug, Clone)]
pub struct EventRef<'a> {
    pub event_id: &'a str,
    pub event: Event,
    pub account_id: &'a AccountId,
    /// For scan events: the project and the scan's position in it.
    pub scan: Option<(&'a str, i64)>,
    pub now: Millis,
    /// Whether the event happened. A push passes every scan event, raised or not, so that
    /// its statement has one shape: the SQLite writer caches whole push groups as prepared
    /// statements, and a shape per combination of events would keep missing that cache.
    pub raised: bool,
}

/// One statement that queues a delivery of each raised event to every endpoint subscribed to
/// it: the account's, for all projects or for the event's. It inserts nothing when none is,
/// so it is safe (if wasted) to run for an account without endpoints.
pub(crate) fn enqueue_statement(events: &[EventRef<'_>]) -> Option<Stmt> {
    if !events.iter().any(|e| e.raised) {
        return None;
    }
    let mut sql = String::from(
        "INSERT INTO webhook_deliveries (event_id, webhook_id, account_id, event, project_id, \
         scan_seq, created_at, window_start, next_attempt_at) ",
    );
    let mut stmt = Stmt::new(String::new());
    let mut n = 0;
    let mut next = || {
        n += 1;
        format!("${n}")
    };
    for (i, e) in events.iter().enumerate() {
        if i > 0 {
            sql.push_str(" UNION ALL ");
        }
        let (project_id, seq) = match e.scan {
            Some((p, s)) => (Some(p.to_owned()), Some(s)),
            None => (None, None),
        };
        // Placeholders in textual order, each once (see `stmt::Stmt`).
        sql.push_str(&format!(
            "SELECT {}, w.id, {}, {}, {}, {}, {}, {}, {} FROM webhooks w \
             WHERE w.account_id = {} AND w.events LIKE '{}' AND {} = 1",
            next(),
            next(),
            next(),
            next(),
            next(),
            next(),
            next(),
            next(),
            next(),
            // A literal, not a parameter: SQLite prepares a statement again each time a
            // bound LIKE pattern changes (for its LIKE optimisation), which cost a push
            // 0.1 ms per event on the one writer. Event names are fixed ASCII words.
            subscribed_pattern(e.event),
            next()
        ));
        stmt = stmt
            .bind(e.event_id)
            .bind(e.account_id)
            .bind(e.event.as_str())
            .bind(project_id.clone())
            .bind(seq.map_or(crate::stmt::Arg::NoInt, crate::stmt::Arg::Int))
            .bind(e.now)
            .bind(e.now)
            .bind(e.now)
            .bind(e.account_id)
            .bind(i64::from(e.raised));
        if let Some(project_id) = project_id {
            sql.push_str(&format!(
                " AND (w.project_id IS NULL OR w.project_id = {})",
                next()
            ));
            stmt = stmt.bind(project_id);
        }
    }
    stmt.sql = sql;
    Some(stmt)
}

/// Queues the test event for one endpoint of the account. `false` when it has no such one.
pub async fn enqueue_test_event(
    db: &Writer,
    account_id: &AccountId,
    webhook_id: &str,
    event_id: &str,
    now: Millis,
) -> Result<bool, StoreError> {
    let n = on_db_write!(db, pool => {
        sqlx::query(
            "INSERT INTO webhook_deliveries (event_id, webhook_id, account_id, event, \
             created_at, window_start, next_attempt_at) \
             SELECT $1, w.id, w.account_id, $2, $3, $4, $5 FROM webhooks w \
             WHERE w.id = $6 AND w.account_id = $7",
        )
        .bind(event_id)
        .bind(Event::Test.as_str())
        .bind(now)
        .bind(now)
        .bind(now)
        .bind(webhook_id)
        .bind(account_id)
        .execute(pool)
        .await
        .map(|r| r.rows_affected())
    })?;
    Ok(n == 1)
}

/// Sends the delivery again now, with a fresh day of retries. `false` when the account has
/// no such delivery.
pub async fn redeliver(
    db: &Writer,
    account_id: &AccountId,
    event_id: &str,
    webhook_id: &str,
    now: Millis,
) -> Result<bool, StoreError> {
    let n = on_db_write!(db, pool => {
        sqlx::query(
            "UPDATE webhook_deliveries SET state = 'pending', next_attempt_at = $1, \
             window_start = $2 WHERE event_id = $3 AND webhook_id = $4 AND account_id = $5",
        )
        .bind(now)
        .bind(now)
        .bind(event_id)
        .bind(webhook_id)
        .bind(account_id)
        .execute(pool)
        .await
        .map(|r| r.rows_affected())
    })?;
    Ok(n == 1)
}

/// A claimed delivery and what its body is made of.
#[derive(Debug, Clone, PartialEq)]
pub struct DueDelivery {
    pub event_id: String,
    pub webhook_id: String,
    pub account_id: AccountId,
    pub event: Event,
    pub created_at: Millis,
    pub window_start: Millis,
    /// Attempts including this one.
    pub attempts: i64,
    pub url_sealed: String,
    pub secret_sealed: String,
    pub format: PayloadFormat,
    pub scan: Option<ScanFacts>,
}

use crate::scan_facts::ScanFacts;

#[derive(sqlx::FromRow)]
struct DueRow {
    event_id: String,
    webhook_id: String,
    account_id: AccountId,
    event: String,
    created_at: i64,
    window_start: i64,
    attempts: i64,
    next_attempt_at: i64,
    url_sealed: String,
    secret_sealed: String,
    format: String,
    project_id: Option<ProjectId>,
    #[sqlx(flatten)]
    scan: ScanFactsRow,
}

/// The webhook deliveries as a [`Queue`].
const DELIVERIES: Queue = Queue {
    table: "webhook_deliveries",
    pending: "{t}state = 'pending'",
    key: &["event_id", "webhook_id"],
    finished_before: "state <> 'pending' AND created_at < $1",
};

impl Claimable for DueRow {
    fn key(&self) -> Vec<String> {
        vec![self.event_id.clone(), self.webhook_id.clone()]
    }
    fn due_at(&self) -> Millis {
        self.next_attempt_at
    }
}

/// Claims up to `max` due deliveries for `lease_ms`: each is this replica's to send until
/// then (see the module's note).
pub async fn claim_due(
    db: &Writer,
    now: Millis,
    lease_ms: Millis,
    max: i64,
) -> Result<Vec<DueDelivery>, StoreError> {
    let select = format!(
        "SELECT o.event_id, o.webhook_id, o.account_id, o.event, o.created_at, \
         o.window_start, o.attempts, o.next_attempt_at, w.url_sealed, w.secret_sealed, \
         w.format, o.project_id, {SCAN_FACTS_COLUMNS} \
         FROM webhook_deliveries o JOIN webhooks w ON w.id = o.webhook_id {SCAN_FACTS_JOIN}"
    );
    let claimed: Vec<DueRow> = DELIVERIES.claim(db, &select, now, lease_ms, max).await?;
    claimed.into_iter().map(due_from_row).collect()
}

fn due_from_row(r: DueRow) -> Result<DueDelivery, StoreError> {
    let event = Event::parse(&r.event).ok_or(StoreError::Corrupt("webhook event"))?;
    let scan = r.scan.into_facts(r.project_id);
    Ok(DueDelivery {
        event_id: r.event_id,
        webhook_id: r.webhook_id,
        account_id: r.account_id,
        event,
        created_at: r.created_at,
        window_start: r.window_start,
        attempts: r.attempts + 1,
        url_sealed: r.url_sealed,
        secret_sealed: r.secret_sealed,
        format: PayloadFormat::parse(&r.format)
            .map_err(|_| StoreError::Corrupt("webhook format"))?,
        scan,
    })
}

/// What one attempt came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    pub at: Millis,
    /// The receiver's HTTP status, when it answered.
    pub status: Option<u16>,
    pub latency_ms: Millis,
    /// Why it failed (no answer, or a status that is not 2xx), in words.
    pub error: Option<String>,
    /// When to try again; `None` after a success, or to give up.
    pub retry_at: Option<Millis>,
}

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
    on_db_write!(db, pool => {
        sqlx::query(
            "UPDATE webhook_deliveries SET state = $1, next_attempt_at = $2, last_attempt_at = $3, \
             last_status = $4, last_latency_ms = $5, last_error = $6 \
             WHERE event_id = $7 AND webhook_id = $8",
        )
        .bind(state)
        .bind(attempt.retry_at.unwrap_or(i64::MAX))
        .bind(attempt.at)
        .bind(attempt.status.map(i64::from))
        .bind(attempt.latency_ms)
        .bind(&attempt.error)
        .bind(&delivery.event_id)
        .bind(&delivery.webhook_id)
        .execute(pool)
        .await
        .map(|_| ())
    })?;
    Ok(())
}

/// One line of the delivery log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryLogRow {
    pub event_id: String,
    pub webhook_id: String,
    pub url_display: String,
    pub event: String,
    pub created_at: Millis,
    /// `pending`, `delivered` or `failed`.
    pub state: String,
    pub attempts: i64,
    pub last_attempt_at: Option<Millis>,
    pub last_status: Option<i64>,
    pub last_latency_ms: Option<i64>,
    pub last_error: Option<String>,
    /// When a pending delivery is tried next.
    pub next_attempt_at: Option<Millis>,
}

/// The account's latest deliveries, newest first.
pub async fn delivery_log(
    db: &Db,
    account_id: &AccountId,
    limit: i64,
) -> Result<Vec<DeliveryLogRow>, StoreError> {
    type Row = (
        String,
        String,
        String,
        String,
        i64,
        String,
        i64,
        Option<i64>,
        Option<i64>,
        Option<i64>,
        Option<String>,
        i64,
    );
    let rows: Vec<Row> = on_db!(db, pool => {
        sqlx::query_as(
            "SELECT d.event_id, d.webhook_id, w.url_display, d.event, d.created_at, d.state, \
             d.attempts, d.last_attempt_at, d.last_status, d.last_latency_ms, d.last_error, \
             d.next_attempt_at \
             FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id \
             WHERE d.account_id = $1 ORDER BY d.created_at DESC, d.event_id DESC LIMIT $2",
        )
        .bind(account_id)
        .bind(limit)
        .fetch_all(pool)
        .await
    })?;
    Ok(rows
        .into_iter()
        .map(|r| DeliveryLogRow {
            event_id: r.0,
            webhook_id: r.1,
            url_display: r.2,
            event: r.3,
            created_at: r.4,
            next_attempt_at: (r.5 == "pending").then_some(r.11),
            state: r.5,
            attempts: r.6,
            last_attempt_at: r.7,
            last_status: r.8,
            last_latency_ms: r.9,
            last_error: r.10,
        })
        .collect())
}

/// When the next pending delivery is due, if any is.
pub async fn next_due_at(db: &Db) -> Result<Option<Millis>, StoreError> {
    DELIVERIES.next_due_at(db).await
}

/// Deliveries not finished yet (for operators, metrics and tests).
pub async fn pending_count(db: &Db) -> Result<i64, StoreError> {
    DELIVERIES.pending_count(db).await
}

/// Forgets finished deliveries older than `before`; pending ones are kept.
pub async fn prune_finished(db: &Writer, before: Millis) -> Result<u64, StoreError> {
    DELIVERIES.prune(db, before).await
}
