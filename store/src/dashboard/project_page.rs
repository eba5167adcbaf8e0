//! One page of the projects list, chosen by the database: the page costs what fifty projects
//! cost however many the account holds (issue 70), in the order
//! `tidemark_domain::project_order` states.

use tidemark_domain::project_order::{page_window, ProjectOrder, PER_PAGE};

use super::{fill_recent_scores, ProjectHeadRow, ProjectRow};
use crate::{on_db, AccountId, Backend, Db, StoreError};

/// A page of the account's projects and where it stands in the whole.
#[derive(Debug, Clone, PartialEq)]
pub struct ProjectPage {
    /// With their sparklines' points.
    pub rows: Vec<ProjectRow>,
    /// From 1.
    pub page: u32,
    pub pages: u32,
    /// Projects whose name matches the filter.
    pub matching: u64,
    pub total: u64,
    pub active: u64,
}

#[derive(sqlx::FromRow)]
struct Counts {
    total: i64,
    active: Option<i64>,
    matching: Option<i64>,
}

/// Page `page` of the account's projects in `order`, of those whose name contains `needle`
/// (`project_order::filter_needle`; empty: all), with their sparklines' points.
pub async fn project_page(
    db: &Db,
    account_id: &AccountId,
    order: ProjectOrder,
    needle: &str,
    page: u32,
) -> Result<ProjectPage, StoreError> {
    let counts = count_projects(db, account_id, needle).await?;
    let count = |n: Option<i64>| u64::try_from(n.unwrap_or(0)).unwrap_or(0);
    let matching = count(counts.matching);
    let (page, pages, offset) = page_window(matching, page);
    let mut rows = choose_rows(db, account_id, order, needle, offset).await?;
    fill_recent_scores(db, account_id, &mut rows, true).await?;
    Ok(ProjectPage {
        rows,
        page,
        pages,
        matching,
        total: count(Some(counts.total)),
        active: count(counts.active),
    })
}

/// The projects of the same page as [`project_page`], without sparklines or counts (what the
/// overview's glance adds to them): the first page needs no count to be found.
pub async fn project_page_rows(
    db: &Db,
    account_id: &AccountId,
    order: ProjectOrder,
    needle: &str,
    page: u32,
) -> Result<Vec<ProjectRow>, StoreError> {
    let offset = if page <= 1 {
        0
    } else {
        let counts = count_projects(db, account_id, needle).await?;
        let matching = u64::try_from(counts.matching.unwrap_or(0)).unwrap_or(0);
        page_window(matching, page).2
    };
    choose_rows(db, account_id, order, needle, offset).await
}

async fn count_projects(
    db: &Db,
    account_id: &AccountId,
    needle: &str,
) -> Result<Counts, StoreError> {
    let matches = matches_sql(db.backend());
    Ok(on_db!(db, pool => {
        sqlx::query_as(&format!(
            "SELECT COUNT(*) AS total, \
             SUM(CASE WHEN archived_at IS NULL THEN 1 ELSE 0 END) AS active, \
             SUM(CASE WHEN {matches} THEN 1 ELSE 0 END) AS matching \
             FROM projects p WHERE account_id = $1"
        ))
        .bind(account_id)
        .bind(needle)
        .fetch_one(pool)
        .await
    })?)
}

/// The page starting after `offset` projects. It is chosen from the project rows alone (their
/// order's columns); only its fifty rows are read whole and join their default line.
async fn choose_rows(
    db: &Db,
    account_id: &AccountId,
    order: ProjectOrder,
    needle: &str,
    offset: u64,
) -> Result<Vec<ProjectRow>, StoreError> {
    let backend = db.backend();
    let matches = matches_sql(backend);
    let order_by = order_sql(order, backend);
    let sql = format!(
        "WITH chosen AS (SELECT p.id FROM projects p WHERE p.account_id = $1 AND {matches} \
         ORDER BY {order_by} LIMIT {PER_PAGE} OFFSET $3) \
         SELECT p.id, p.label, p.created_at, p.archived_at, \
         COALESCE(d.scan_count, p.scan_count) AS scan_count, p.last_score, p.last_delta, \
         p.last_scan_id, p.last_gate_status, p.last_gate_reasons, p.last_scanned_at \
         FROM chosen c JOIN projects p ON p.id = c.id \
         LEFT JOIN branches d ON d.id = p.default_branch_id \
         ORDER BY {order_by}"
    );
    let offset = i64::try_from(offset).unwrap_or(i64::MAX);
    let heads: Vec<ProjectHeadRow> = on_db!(db, pool => {
        sqlx::query_as(&sql)
            .bind(account_id)
            .bind(needle)
            .bind(offset)
            .fetch_all(pool)
            .await
    })?;
    Ok(heads.into_iter().map(ProjectRow::from).collect())
}

/// A–Z lower-cased and nothing else: kept on the row by the push (computing it costs
/// PostgreSQL about 2 µs a project), else (a row an older release made) computed here the
/// same way on both databases (SQLite's `lower` without ICU lower-cases A–Z only;
/// PostgreSQL's follows the locale, so it is spelt out). Compared by bytes.
fn name_key_sql(backend: Backend) -> &'static str {
    match backend {
        Backend::Sqlite => "COALESCE(p.name_key, lower(p.label))",
        Backend::Postgres => {
            "COALESCE(p.name_key, translate(p.label, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', \
             'abcdefghijklmnopqrstuvwxyz')) COLLATE \"C\""
        }
    }
}

/// The label contains `$2`, compared as name keys (`$2` is one already).
fn matches_sql(backend: Backend) -> String {
    let key = name_key_sql(backend);
    match backend {
        Backend::Sqlite => format!("($2 = '' OR instr({key}, $2) > 0)"),
        Backend::Postgres => format!("($2 = '' OR strpos({key}, $2) > 0)"),
    }
}

/// `project_order::compare` in SQL: archived last, the order's key with projects without a
/// scan last, then the name key, then the label's bytes.
fn order_sql(order: ProjectOrder, backend: Backend) -> String {
    let primary = match order {
        ProjectOrder::Name => "",
        ProjectOrder::Score => "(p.last_score IS NULL), p.last_score, ",
        ProjectOrder::Change => "(p.last_delta IS NULL), p.last_delta, ",
        ProjectOrder::LastScan => "(p.last_scanned_at IS NULL), p.last_scanned_at / 60000 DESC, ",
    };
    let bytes = match backend {
        Backend::Sqlite => "p.label",
        Backend::Postgres => "p.label COLLATE \"C\"",
    };
    format!(
        "(p.archived_at IS NOT NULL), {primary}{}, {bytes}",
        name_key_sql(backend)
    )
}
