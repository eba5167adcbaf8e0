//! The account's posture across its projects, kept by the push (issue 70): one row per
//! framework and one per cloud account, summing every active project's latest default-branch
//! scan, so the projects page's compliance roll-up reads a few rows however many projects the
//! account holds.
//!
//! A push on a default line adds its scan's tallies and takes back the scan it follows (one
//! statement, its rows in key order so that concurrent pushes lock them in the same order).
//! What changes which scans count (archiving, unarchiving, another default branch, a posture
//! judged later by the backfill) sums the account again ([`rebuild`]), as the overview's
//! `account_days` are.

use tidemark_domain::posture::{worst_first, Rolled, Tally};

use crate::stmt::Stmt;
use crate::{on_db, AccountId, Db, ProjectId, StoreError};

/// Sums `$1`'s rows again from its active projects' default lines' latest scans.
pub(crate) const REBUILD_SQL: [&str; 4] = [
    "DELETE FROM account_posture_changes WHERE account_id = $1",
    "DELETE FROM account_posture WHERE account_id = $1",
    "INSERT INTO account_posture (account_id, kind, cloud, name, passed, failed, triaged, \
     not_evaluated, projects) \
     SELECT p.account_id, 'framework', '', sp.framework, SUM(sp.passed), SUM(sp.failed), \
     SUM(sp.triaged), SUM(sp.not_evaluated), COUNT(*) \
     FROM projects p JOIN branches b ON b.id = p.default_branch_id \
     JOIN scan_posture sp ON sp.project_id = p.id AND sp.scan_seq = b.head_seq \
     WHERE p.account_id = $1 AND p.archived_at IS NULL \
     GROUP BY p.account_id, sp.framework",
    "INSERT INTO account_posture (account_id, kind, cloud, name, passed, failed, triaged, \
     not_evaluated, projects) \
     SELECT p.account_id, 'cloud', s.cloud, s.cloud_account_id, \
     COALESCE(SUM(sp.passed), 0), COALESCE(SUM(sp.failed), 0), COALESCE(SUM(sp.triaged), 0), \
     COALESCE(SUM(sp.not_evaluated), 0), COUNT(DISTINCT p.id) \
     FROM projects p JOIN branches b ON b.id = p.default_branch_id \
     JOIN scans s ON s.project_id = p.id AND s.seq = b.head_seq \
     LEFT JOIN scan_posture sp ON sp.project_id = s.project_id AND sp.scan_seq = s.seq \
     WHERE p.account_id = $1 AND p.archived_at IS NULL \
     GROUP BY p.account_id, s.cloud, s.cloud_account_id",
];

/// Sums `$account`'s posture again on `$exec` (the transaction that changed which scans
/// count). A macro so that one text serves both backends' executors.
macro_rules! rebuild {
    ($exec:expr, $account:expr) => {{
        let account: &str = $account;
        let mut result = Ok(());
        for sql in $crate::posture::summary::REBUILD_SQL {
            if let Err(err) = sqlx::query(sql).bind(account).execute(&mut *$exec).await {
                result = Err(err);
                break;
            }
        }
        result
    }};
}
pub(crate) use rebuild;

/// [`rebuild!`] as statements, for a [`crate::tx::WriteTx`].
pub(crate) fn rebuild_statements(account_id: &AccountId) -> Vec<Stmt> {
    REBUILD_SQL
        .iter()
        .map(|sql| Stmt::new(*sql).bind(account_id.as_str()))
        .collect()
}

/// A default line's new latest scan `seq` (its posture rows and scan row written before this
/// statement), following `previous` (`None`: the line's first): the account's rows move by
/// the difference. With `change_of` (PostgreSQL) the difference is inserted as that scan's
/// own rows of `account_posture_changes`, which no other push touches; without (SQLite) it is
/// added to the kept rows.
pub(crate) fn push_statement(
    account_id: &AccountId,
    project_id: &ProjectId,
    previous: Option<i64>,
    seq: i64,
    change_of: Option<&str>,
) -> Stmt {
    // The change's key, when it has one, is `$4`, and the project's placeholders follow it.
    let (into, key, add, p) = match change_of {
        None => ("account_posture (account_id,", "", ADD_TO_KEPT, 4),
        Some(_) => (
            "account_posture_changes (account_id, scan_ref,",
            "$4, ",
            "",
            5,
        ),
    };
    let q = p + 1;
    // `WHERE TRUE` before `ON CONFLICT`: SQLite would read the `ON` as the join's otherwise.
    let stmt = Stmt::new(format!(
        "WITH sg AS (SELECT CAST($1 AS BIGINT) AS seq, -1 AS sign \
                     UNION ALL SELECT CAST($2 AS BIGINT), 1) \
         INSERT INTO {into} kind, cloud, name, passed, failed, triaged, not_evaluated, \
         projects) \
         SELECT $3, {key}kind, cloud, name, SUM(passed), SUM(failed), SUM(triaged), \
         SUM(not_evaluated), SUM(projects) FROM ( \
           SELECT 'framework' AS kind, '' AS cloud, sp.framework AS name, \
           sg.sign * sp.passed AS passed, sg.sign * sp.failed AS failed, \
           sg.sign * sp.triaged AS triaged, sg.sign * sp.not_evaluated AS not_evaluated, \
           sg.sign AS projects \
           FROM sg JOIN scan_posture sp ON sp.project_id = ${p} AND sp.scan_seq = sg.seq \
           UNION ALL \
           SELECT 'cloud', s.cloud, s.cloud_account_id, \
           sg.sign * COALESCE(SUM(sp.passed), 0), sg.sign * COALESCE(SUM(sp.failed), 0), \
           sg.sign * COALESCE(SUM(sp.triaged), 0), sg.sign * COALESCE(SUM(sp.not_evaluated), 0), \
           sg.sign \
           FROM sg JOIN scans s ON s.project_id = ${q} AND s.seq = sg.seq \
           LEFT JOIN scan_posture sp ON sp.project_id = s.project_id AND sp.scan_seq = s.seq \
           GROUP BY sg.seq, sg.sign, s.cloud, s.cloud_account_id) d \
         WHERE TRUE GROUP BY kind, cloud, name ORDER BY kind, cloud, name {add}"
    ));
    let stmt = stmt
        .bind(previous.unwrap_or(-1))
        .bind(seq)
        .bind(account_id.as_str());
    let stmt = match change_of {
        Some(scan_ref) => stmt.bind(scan_ref),
        None => stmt,
    };
    stmt.bind(project_id).bind(project_id)
}

const ADD_TO_KEPT: &str = "ON CONFLICT (account_id, kind, cloud, name) DO UPDATE SET \
     passed = account_posture.passed + excluded.passed, \
     failed = account_posture.failed + excluded.failed, \
     triaged = account_posture.triaged + excluded.triaged, \
     not_evaluated = account_posture.not_evaluated + excluded.not_evaluated, \
     projects = account_posture.projects + excluded.projects";

/// The account's posture, each part worst first: per framework, and per cloud account
/// (`(cloud, account id)`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AccountPosture {
    pub frameworks: Vec<Rolled<String>>,
    pub cloud_accounts: Vec<Rolled<(String, String)>>,
}

#[derive(sqlx::FromRow)]
struct SummaryRow {
    kind: String,
    cloud: String,
    name: String,
    passed: i64,
    failed: i64,
    triaged: i64,
    not_evaluated: i64,
    projects: i64,
}

/// The account's kept posture: a row per framework and cloud account, never a row per project.
pub async fn account_posture(
    db: &Db,
    account_id: &AccountId,
) -> Result<AccountPosture, StoreError> {
    let rows: Vec<SummaryRow> = on_db!(db, pool => {
        // The kept rows and the changes not folded into them yet.
        sqlx::query_as(
            "SELECT kind, cloud, name, CAST(SUM(passed) AS BIGINT) AS passed, \
             CAST(SUM(failed) AS BIGINT) AS failed, CAST(SUM(triaged) AS BIGINT) AS triaged, \
             CAST(SUM(not_evaluated) AS BIGINT) AS not_evaluated, \
             CAST(SUM(projects) AS BIGINT) AS projects FROM ( \
             SELECT kind, cloud, name, passed, failed, triaged, not_evaluated, projects \
             FROM account_posture WHERE account_id = $1 UNION ALL \
             SELECT kind, cloud, name, passed, failed, triaged, not_evaluated, projects \
             FROM account_posture_changes WHERE account_id = $2) kept \
             GROUP BY kind, cloud, name HAVING SUM(projects) > 0 ORDER BY kind, cloud, name",
        )
        .bind(account_id)
        .bind(account_id)
        .fetch_all(pool)
        .await
    })?;
    let n = |v: i64| u32::try_from(v).unwrap_or(0);
    let mut out = AccountPosture::default();
    for r in rows {
        let tally = Tally {
            passed: n(r.passed),
            failed: n(r.failed),
            triaged: n(r.triaged),
            not_evaluated: n(r.not_evaluated),
        };
        let projects = usize::try_from(r.projects).unwrap_or(0);
        if r.kind == "framework" {
            out.frameworks.push(Rolled {
                key: r.name,
                tally,
                projects,
            });
        } else {
            out.cloud_accounts.push(Rolled {
                key: (r.cloud, r.name),
                tally,
                projects,
            });
        }
    }
    // By key first (the databases' text orders differ), then worst first, as `roll_up`.
    out.frameworks.sort_by(|a, b| a.key.cmp(&b.key));
    out.cloud_accounts.sort_by(|a, b| a.key.cmp(&b.key));
    worst_first(&mut out.frameworks);
    worst_first(&mut out.cloud_accounts);
    Ok(out)
}
