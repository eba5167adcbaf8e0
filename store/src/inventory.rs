//! What the operator commands list: accounts, projects, scans and API keys, read-only.

use crate::{AccountId, ProjectId, ScanId};
use tidemark_domain::Millis;

use crate::{on_db, Db, StoreError};

/// An account with its license and how much it holds.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct AccountRow {
    pub id: AccountId,
    pub created_at: Millis,
    pub license_id: Option<String>,
    pub email: Option<String>,
    pub tier: Option<String>,
    pub members: i64,
    pub projects: i64,
    pub active_keys: i64,
    pub scans: i64,
}

pub async fn list_accounts(db: &Db) -> Result<Vec<AccountRow>, StoreError> {
    page_accounts(db, None, i64::MAX).await
}

/// An account with its licence and counts. Counts as subqueries, so each is an index lookup
/// per account rather than a join that multiplies rows.
const ACCOUNT_SELECT: &str = "SELECT a.id, a.created_at, l.id AS license_id, l.email, l.tier, \
    (SELECT COUNT(*) FROM members m WHERE m.account_id = a.id) AS members, \
    (SELECT COUNT(*) FROM projects p WHERE p.account_id = a.id) AS projects, \
    (SELECT COUNT(*) FROM api_keys k WHERE k.account_id = a.id AND k.revoked_at IS NULL) \
        AS active_keys, \
    (SELECT CAST(COALESCE(SUM(p.scan_count), 0) AS BIGINT) FROM projects p \
        WHERE p.account_id = a.id) AS scans \
    FROM accounts a LEFT JOIN licenses l ON l.account_id = a.id";

/// Up to `limit` accounts after `after` (an account's created time and id), oldest first.
pub async fn page_accounts(
    db: &Db,
    after: Option<(Millis, &AccountId)>,
    limit: i64,
) -> Result<Vec<AccountRow>, StoreError> {
    let sql = format!(
        "{ACCOUNT_SELECT} WHERE a.created_at > $1 OR (a.created_at = $2 AND a.id > $3) \
         ORDER BY a.created_at, a.id LIMIT $4"
    );
    let (at, id) = after.map_or((i64::MIN, ""), |(at, id)| (at, id.as_str()));
    Ok(on_db!(db, pool => {
        sqlx::query_as(&sql).bind(at).bind(at).bind(id).bind(limit).fetch_all(pool).await
    })?)
}

/// One account as the vendor sees it; `None` if there is no such account.
pub async fn find_account(db: &Db, id: &AccountId) -> Result<Option<AccountRow>, StoreError> {
    let sql = format!("{ACCOUNT_SELECT} WHERE a.id = $1");
    Ok(on_db!(db, pool => sqlx::query_as(&sql).bind(id).fetch_optional(pool).await)?)
}

/// A project as the operator lists it.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct ProjectRow {
    pub id: ProjectId,
    pub label: String,
    pub created_at: Millis,
    pub archived_at: Option<Millis>,
    pub scan_count: i64,
    pub last_score: Option<f64>,
    pub last_scan_id: Option<ScanId>,
}

pub async fn account_exists(db: &Db, account_id: &AccountId) -> Result<bool, StoreError> {
    let found: Option<(i32,)> = on_db!(db, pool => {
        sqlx::query_as("SELECT 1 FROM accounts WHERE id = $1")
            .bind(account_id)
            .fetch_optional(pool)
            .await
    })?;
    Ok(found.is_some())
}

/// The account's projects, by label; `None` if there is no such account.
pub async fn list_projects(
    db: &Db,
    account_id: &AccountId,
) -> Result<Option<Vec<ProjectRow>>, StoreError> {
    if !account_exists(db, account_id).await? {
        return Ok(None);
    }
    let rows = on_db!(db, pool => {
        sqlx::query_as(
            "SELECT id, label, created_at, archived_at, scan_count, last_score, last_scan_id \
             FROM projects WHERE account_id = $1 ORDER BY label",
        )
        .bind(account_id)
        .fetch_all(pool)
        .await
    })?;
    Ok(Some(rows))
}

/// A scan as the operator lists it (no findings).
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct ScanRow {
    pub scan_id: ScanId,
    pub seq: i64,
    pub scanned_at: Millis,
    pub received_at: Millis,
    pub score: f64,
    pub score_delta: f64,
    pub passed: i64,
    pub failed: i64,
    pub finding_count: i64,
}

/// The project's newest `limit` scans, newest first, and its account; `None` if there is no
/// such project.
pub async fn list_scans(
    db: &Db,
    project_id: &ProjectId,
    limit: i64,
) -> Result<Option<(AccountId, Vec<ScanRow>)>, StoreError> {
    let found: Option<(AccountId,)> = on_db!(db, pool => {
        sqlx::query_as("SELECT account_id FROM projects WHERE id = $1")
            .bind(project_id)
            .fetch_optional(pool)
            .await
    })?;
    let Some((account_id,)) = found else {
        return Ok(None);
    };
    let rows = on_db!(db, pool => {
        sqlx::query_as(
            "SELECT scan_id, seq, scanned_at, received_at, score, score_delta, passed, failed, \
             finding_count FROM scans WHERE project_id = $1 ORDER BY seq DESC LIMIT $2",
        )
        .bind(project_id)
        .bind(limit)
        .fetch_all(pool)
        .await
    })?;
    Ok(Some((account_id, rows)))
}

/// The account an API key belongs to, by the key's id.
pub async fn api_key_account(db: &Db, key_id: &str) -> Result<Option<AccountId>, StoreError> {
    let found: Option<(AccountId,)> = on_db!(db, pool => {
        sqlx::query_as("SELECT account_id FROM api_keys WHERE id = $1")
            .bind(key_id)
            .fetch_optional(pool)
            .await
    })?;
    Ok(found.map(|(account,)| account))
}
