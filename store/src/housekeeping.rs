//! Housekeeping on both backends (issue 36): reading each line's scans as
//! `domain::housekeeping` judges them, thinning the scans it picks (their finding detail goes,
//! their rows stay), and removing the spans no remaining scan needs. Every write is a short
//! transaction of a bounded size, so pushes wait for it a few milliseconds at most.

use crate::{AccountId, ProjectId, ScanId};
use std::collections::HashSet;

use tidemark_domain::housekeeping::{Line, LineScan, Policy, Protected};
use tidemark_domain::Millis;

use crate::spans::{STORED_AS_SPANS, THINNED};
use crate::{on_db, on_db_write, BeginWrite as _, Db, StoreError, Writer};

/// Scans thinned per transaction at most.
pub const SCANS_PER_BATCH: usize = 200;
/// Spans removed per transaction at most.
pub const SPANS_PER_BATCH: i64 = 2_000;

/// A line as housekeeping sees it, with its account's own policy if it has one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HousekeptLine {
    pub line_id: String,
    pub project_id: ProjectId,
    pub account_id: AccountId,
    /// The project's label and the line's name, for the operator's dry run.
    pub project_label: String,
    pub line_name: Option<String>,
    pub pr_number: Option<i64>,
    pub line: Line,
    /// The account's policy as stored (JSON), if it has its own.
    pub account_policy: Option<String>,
}

#[derive(sqlx::FromRow)]
struct LineRow {
    id: String,
    project_id: ProjectId,
    account_id: AccountId,
    label: String,
    name: Option<String>,
    pr_number: Option<i64>,
    last_push_at: Option<i64>,
    created_at: i64,
    is_default: i64,
    housekeeping: Option<String>,
}

/// Every line with scans, by project.
pub async fn lines(db: &Db) -> Result<Vec<HousekeptLine>, StoreError> {
    let rows: Vec<LineRow> = on_db!(db, pool => {
        sqlx::query_as(
            "SELECT b.id, b.project_id, b.account_id, p.label, b.name, b.pr_number, \
             b.last_push_at, b.created_at, \
             CAST(CASE WHEN p.default_branch_id = b.id THEN 1 ELSE 0 END AS BIGINT) AS is_default, \
             a.housekeeping FROM branches b JOIN projects p ON p.id = b.project_id \
             JOIN accounts a ON a.id = b.account_id \
             WHERE b.head_seq IS NOT NULL ORDER BY b.project_id, b.id",
        )
        .fetch_all(pool)
        .await
    })?;
    Ok(rows
        .into_iter()
        .map(|r| HousekeptLine {
            line: Line {
                is_default: r.is_default == 1,
                is_pull_request: r.pr_number.is_some(),
                last_push_at: r.last_push_at.unwrap_or(r.created_at),
            },
            line_id: r.id,
            project_id: r.project_id,
            account_id: r.account_id,
            project_label: r.label,
            line_name: r.name,
            pr_number: r.pr_number,
            account_policy: r.housekeeping,
        })
        .collect())
}

/// The policy that applies to an account: its own, or the installation's.
pub fn policy_for(line: &HousekeptLine, installation: &Policy) -> Policy {
    line.account_policy
        .as_deref()
        .and_then(|json| serde_json::from_str(json).ok())
        .unwrap_or(*installation)
}

#[derive(sqlx::FromRow)]
struct ScanRow {
    seq: i64,
    scan_id: ScanId,
    scanned_at: i64,
    gate_status: Option<String>,
    findings_stored: Option<String>,
}

/// A line's scans; the scans compared against; the audit log's targets; triaged findings'
/// first and last sightings.
type LineFacts = (Vec<ScanRow>, Vec<i64>, Vec<String>, Vec<(i64, i64)>);

/// A line's scans oldest first, with what protects each (see `Protected`).
pub async fn line_scans(db: &Db, line: &HousekeptLine) -> Result<Vec<LineScan>, StoreError> {
    let (rows, compared, audited, triaged): LineFacts = on_db!(db, pool => {
        let rows = sqlx::query_as(
            "SELECT seq, scan_id, scanned_at, gate_status, findings_stored FROM scans \
             WHERE branch_id = $1 ORDER BY line_seq",
        )
        .bind(&line.line_id)
        .fetch_all(pool)
        .await?;
        // Scans of any line judged against one of this project's.
        let compared = sqlx::query_scalar(
            "SELECT DISTINCT base_seq FROM scans WHERE project_id = $1 AND base_seq IS NOT NULL",
        )
        .bind(&line.project_id)
        .fetch_all(pool)
        .await?;
        let audited = sqlx::query_scalar(
            "SELECT DISTINCT target FROM audit_events WHERE account_id = $1",
        )
        .bind(&line.account_id)
        .fetch_all(pool)
        .await?;
        // A triaged finding's first and last sightings on the line.
        let triaged = sqlx::query_as(
            "SELECT t.first_seq, t.last_seq FROM tracked_findings t WHERE t.branch_id = $1 \
             AND EXISTS (SELECT 1 FROM finding_triage_events e WHERE e.finding_id = t.id)",
        )
        .bind(&line.line_id)
        .fetch_all(pool)
        .await?;
        Ok::<_, sqlx::Error>((rows, compared, audited, triaged))
    })?;
    let compared: HashSet<i64> = compared.into_iter().collect();
    let audited: HashSet<String> = audited.into_iter().collect();
    let triaged: HashSet<i64> = triaged.into_iter().flat_map(|(a, b)| [a, b]).collect();
    Ok(rows
        .into_iter()
        .map(|r| LineScan {
            seq: r.seq,
            scanned_at: r.scanned_at,
            gate: r.gate_status,
            protected: Protected {
                compared_against: compared.contains(&r.seq),
                referred_to: audited.contains(r.scan_id.as_str()) || triaged.contains(&r.seq),
            },
            thinned: r.findings_stored.as_deref() == Some(THINNED),
        })
        .collect())
}

/// Thins the project's scans `seqs` (at most [`SCANS_PER_BATCH`]) in one transaction: each is
/// marked thinned; then the rows in `findings` of those stored before spans go, a step at a
/// time. Spans are left to [`collect_spans`]. Returns how many scans it thinned.
pub async fn thin_scans(
    db: &Writer,
    account_id: &AccountId,
    project_id: &ProjectId,
    seqs: &[i64],
) -> Result<u64, StoreError> {
    if seqs.is_empty() {
        return Ok(0);
    }
    let list = seqs
        .iter()
        .take(SCANS_PER_BATCH)
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(",");
    // The list is integers read from the database, never text from a request.
    let mark = format!(
        "UPDATE scans SET findings_stored = '{THINNED}' WHERE project_id = $1 AND seq IN ({list}) \
         AND (findings_stored IS NULL OR findings_stored <> '{THINNED}')"
    );
    let thinned = on_db_write!(db, pool => {
        let mut tx = pool.begin_project_write(account_id, project_id).await?;
        let thinned = sqlx::query(&mark).bind(project_id).execute(&mut *tx).await?.rows_affected();
        sqlx::query(crate::usage::FORGET).bind(project_id).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok::<_, sqlx::Error>(thinned)
    })?;
    for &seq in seqs.iter().take(SCANS_PER_BATCH) {
        crate::spans::moving::delete_rows(db, account_id, project_id, seq).await?;
    }
    Ok(thinned)
}

/// Removes up to [`SPANS_PER_BATCH`] spans of the line that no scan stored as spans still
/// needs (every scan they covered is thinned), in one transaction. Returns how many went:
/// fewer than the batch means none is left.
pub async fn collect_spans(
    db: &Writer,
    account_id: &AccountId,
    line: &HousekeptLine,
) -> Result<u64, StoreError> {
    let sql = format!(
        "DELETE FROM finding_spans WHERE branch_id = $1 AND (to_seq, position) IN \
         (SELECT sp.to_seq, sp.position FROM finding_spans sp WHERE sp.branch_id = $2 \
          AND NOT EXISTS (SELECT 1 FROM scans s WHERE s.project_id = $3 AND s.seq >= sp.from_seq \
            AND s.seq < sp.to_seq AND s.branch_id = $4 AND s.findings_stored = '{STORED_AS_SPANS}') \
          LIMIT $5)"
    );
    let removed = on_db_write!(db, pool => {
        let mut tx = pool.begin_project_write(account_id, &line.project_id).await?;
        let removed = sqlx::query(&sql)
            .bind(&line.line_id)
            .bind(&line.line_id)
            .bind(&line.project_id)
            .bind(&line.line_id)
            .bind(SPANS_PER_BATCH)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        if removed > 0 {
            sqlx::query(crate::usage::FORGET).bind(&line.project_id).execute(&mut *tx).await?;
            // Only spans no kept scan covers go, never live ones; a replica's kept state of
            // the line is dropped all the same.
            sqlx::query(crate::pushes::line_state::FORGET)
                .bind(&line.line_id)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok::<_, sqlx::Error>(removed)
    })?;
    Ok(removed)
}

/// An account's own housekeeping policy: `None` when there is no such account, `Some(None)`
/// when it has none (the installation's applies).
pub async fn account_policy(
    db: &Db,
    account_id: &AccountId,
) -> Result<Option<Option<Policy>>, StoreError> {
    let row: Option<Option<String>> = on_db!(db, pool => {
        sqlx::query_scalar("SELECT housekeeping FROM accounts WHERE id = $1")
            .bind(account_id)
            .fetch_optional(pool)
            .await
    })?;
    Ok(row.map(|json| json.and_then(|j| serde_json::from_str(&j).ok())))
}

/// Gives an account its own housekeeping policy (`None`: the installation's again), in the
/// audit log. `false`: no such account.
pub async fn set_account_policy(
    db: &Writer,
    account_id: &AccountId,
    policy: Option<&Policy>,
    audit: &tidemark_domain::audit::AuditContext,
) -> Result<bool, StoreError> {
    use crate::audit::{record_in, Change};
    use tidemark_domain::audit::Action;
    let json = policy.map(|p| serde_json::to_string(p).unwrap_or_default());
    let done = on_db_write!(db, pool => async {
        let mut tx = pool.begin_account_write(account_id).await?;
        let before: Option<Option<String>> =
            sqlx::query_scalar("SELECT housekeeping FROM accounts WHERE id = $1")
                .bind(account_id)
                .fetch_optional(&mut *tx)
                .await?;
        let Some(before) = before else {
            return Ok(false);
        };
        sqlx::query("UPDATE accounts SET housekeeping = $1 WHERE id = $2")
            .bind(json.clone())
            .bind(account_id)
            .execute(&mut *tx)
            .await?;
        // The audit log shows ages as operators write them (`keep_all=45d,…`), not stored
        // milliseconds.
        let installation = || "the installation's".to_owned();
        let written = |stored: &str| {
            serde_json::from_str::<Policy>(stored).map_or_else(|_| stored.to_owned(), |p| p.to_pairs())
        };
        let change = Change {
            account_id: Some(account_id),
            action: Action::HousekeepingPolicySet,
            target: account_id.to_string(),
            before: Some(before.as_deref().map_or_else(installation, written)),
            after: Some(policy.map_or_else(installation, Policy::to_pairs)),
        };
        record_in!(&mut *tx, audit, change)?;
        tx.commit().await?;
        Ok::<bool, sqlx::Error>(true)
    }
    .await)?;
    Ok(done)
}

/// Whether the project's scan at `seq` has lost its finding detail.
pub async fn is_thinned(db: &Db, project_id: &ProjectId, seq: i64) -> Result<bool, StoreError> {
    let stored: Option<Option<String>> = on_db!(db, pool => {
        sqlx::query_scalar("SELECT findings_stored FROM scans WHERE project_id = $1 AND seq = $2")
            .bind(project_id)
            .bind(seq)
            .fetch_optional(pool)
            .await
    })?;
    Ok(stored.flatten().as_deref() == Some(THINNED))
}

/// The scans a pass over `line` would thin now, and whether the line has thinned scans
/// already (whose spans may still be there).
pub async fn plan_line(
    db: &Db,
    line: &HousekeptLine,
    now: Millis,
    installation: &Policy,
) -> Result<(Vec<i64>, bool), StoreError> {
    let scans = line_scans(db, line).await?;
    let policy = policy_for(line, installation);
    let thin = tidemark_domain::housekeeping::to_thin(line.line, &scans, now, &policy);
    Ok((thin, scans.iter().any(|s| s.thinned)))
}

/// What a pass would thin at `now`: each line that has scans to thin or thinned scans whose
/// spans may still be there, with the scans (the loop that thins them, holding its lease and
/// pacing itself, is the server's housekeeping worker).
pub async fn plan_all(
    db: &Db,
    now: Millis,
    installation: &Policy,
) -> Result<Vec<(HousekeptLine, Vec<i64>)>, StoreError> {
    let mut planned = Vec::new();
    for line in lines(db).await? {
        let (seqs, _) = plan_line(db, &line, now, installation).await?;
        planned.push((line, seqs));
    }
    Ok(planned)
}
