//! What each project's data takes in the database (issue 36): Settings and `project list
//! --json` show it. An estimate from what the rows hold (their texts' lengths and a fixed
//! cost per row for numbers, keys and the row's own overhead), the same on both backends, so
//! that projects compare with each other; the database's own size is in `/metrics`.

use crate::{on_db, Db, StoreError};
use crate::{AccountId, ProjectId};

/// Bytes a row costs beyond its texts, by table: what a page of that table holds per row,
/// measured on SQLite (numbers, keys, headers and the indexes' share).
const SCAN_ROW: i64 = 420;
const SPAN_ROW: i64 = 110;
const TEXT_ROW: i64 = 60;
const FINDING_ROW: i64 = 60;
const TRACKED_ROW: i64 = 200;

/// One project's share.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ProjectBytes {
    pub project_id: ProjectId,
    pub label: String,
    pub scans: i64,
    /// Scans whose findings housekeeping removed (their rows stay).
    pub scans_thinned: i64,
    pub bytes: i64,
}

/// Every project of the account, largest first.
pub async fn project_bytes(
    db: &Db,
    account_id: &AccountId,
) -> Result<Vec<ProjectBytes>, StoreError> {
    let sql = format!(
        "SELECT p.id, p.label, \
         (SELECT COUNT(*) FROM scans s WHERE s.project_id = p.id) AS scans, \
         (SELECT COUNT(*) FROM scans s WHERE s.project_id = p.id \
            AND s.findings_stored = 'thinned') AS scans_thinned, \
         CAST((SELECT COUNT(*) FROM scans s WHERE s.project_id = p.id) * {SCAN_ROW} \
         + COALESCE((SELECT SUM(LENGTH(sp.rule_id) + LENGTH(sp.resource) + LENGTH(sp.status) \
              + LENGTH(sp.severity) + LENGTH(sp.text_hash) + 2 * LENGTH(sp.branch_id) + {SPAN_ROW}) \
            FROM finding_spans sp JOIN branches b ON b.id = sp.branch_id \
            WHERE b.project_id = p.id), 0) \
         + COALESCE((SELECT SUM(LENGTH(t.message) + LENGTH(t.remediation) + LENGTH(t.hash) \
              + LENGTH(t.project_id) + {TEXT_ROW}) FROM finding_texts t WHERE t.project_id = p.id), 0) \
         + COALESCE((SELECT SUM(LENGTH(f.rule_id) + LENGTH(f.resource) + LENGTH(f.status) \
              + LENGTH(f.severity) + LENGTH(f.message) + LENGTH(f.remediation) \
              + LENGTH(f.project_id) + {FINDING_ROW}) FROM findings f WHERE f.project_id = p.id), 0) \
         + COALESCE((SELECT SUM(LENGTH(tf.rule_id) + LENGTH(tf.resource) + {TRACKED_ROW}) \
            FROM tracked_findings tf WHERE tf.project_id = p.id), 0) AS BIGINT) AS bytes \
         FROM projects p WHERE p.account_id = $1 ORDER BY bytes DESC, p.label"
    );
    type Row = (ProjectId, String, i64, i64, i64);
    let rows: Vec<Row> = on_db!(db, pool => {
        sqlx::query_as(&sql).bind(account_id).fetch_all(pool).await
    })?;
    Ok(rows
        .into_iter()
        .map(
            |(project_id, label, scans, scans_thinned, bytes)| ProjectBytes {
                project_id,
                label,
                scans,
                scans_thinned,
                bytes,
            },
        )
        .collect())
}
