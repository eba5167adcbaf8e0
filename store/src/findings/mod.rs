//! Tracked findings as stored (`tracked_findings`, `finding_triage_events`): the statements a
//! push adds to its transaction to follow its branch's findings, the reads of the finding
//! pages and `/v1`, and triage. The rules are `tidemark_domain::findings`.

use crate::{AccountId, FindingId, ProjectId, ScanId};
use std::collections::HashMap;
use std::fmt::Write as _;

use tidemark_domain::findings::{state_of, tracked_in_push, FindingsCursor};
use tidemark_domain::Millis;
use tidemark_wire::findings::{FindingState, TrackedFinding, Triage, TriageState};
use tidemark_wire::{Finding, Severity};

use crate::spans::{STORED_AS_SPANS, THINNED};
use crate::stmt::Stmt;
use crate::{on_db, Backend, Db, StoreError};

/// Rows per upsert: 4 parameters each (and the scan's 5), below SQLite's 32,766 (and
/// PostgreSQL's 65,535).
const ROWS_PER_STATEMENT: usize = 5_000;

/// What an upsert of a tracked finding does when the identity exists: it moves on to this
/// scan, reopened if it had been fixed. Every right-hand side reads the row as it was, on
/// both backends. Public so that the raw SQLite baseline (`bench/`) writes the same rows.
pub const TRACK_CONFLICT: &str = " ON CONFLICT (branch_id, rule_id, resource) DO UPDATE SET \
     severity = excluded.severity, last_seq = excluded.last_seq, \
     last_seen_at = excluded.last_seen_at, \
     reopened_count = tracked_findings.reopened_count \
         + CASE WHEN tracked_findings.fixed_seq IS NULL THEN 0 ELSE 1 END, \
     reopened_at = CASE WHEN tracked_findings.fixed_seq IS NULL \
         THEN tracked_findings.reopened_at ELSE excluded.last_seen_at END, \
     fixed_seq = NULL, fixed_at = NULL";

/// Where a push's scan went: what its tracking statements need.
pub(crate) struct TrackedScan<'a> {
    pub account_id: &'a AccountId,
    pub project_id: &'a str,
    pub line_id: &'a str,
    pub seq: i64,
    pub scanned_at: Millis,
    /// The line's latest scan before this one (storage position and time): where the
    /// findings this scan no longer has were last seen.
    pub previous: Option<(i64, Millis)>,
}

/// The line's open tracked findings as the push head read them: (rule id, resource) to
/// severity. A line's finding is named by the pair (the table's unique key with the line), so
/// what a push keeps of it holds no id that a reopened row would change.
pub(crate) type OpenTracked = HashMap<(String, String), String>;

/// A column of the push head: the open tracked findings of line `line` (an SQL expression),
/// (rule id, resource, severity; [`crate::packed`]), read only when `when` holds.
pub(crate) fn open_tracked_column(backend: Backend, when: &str, line: &str) -> String {
    let rows = crate::packed::packed_rows(backend, &["o.rule_id", "o.resource", "o.severity"]);
    format!(
        "CASE WHEN {when} THEN (SELECT {rows} FROM tracked_findings o \
         WHERE o.branch_id = {line} AND o.fixed_seq IS NULL) END"
    )
}

/// [`open_tracked_column`]'s value.
pub(crate) fn parse_open_tracked(packed: &str) -> Result<OpenTracked, StoreError> {
    let mut fields = crate::packed::Fields::new(packed, "open tracked findings");
    let mut open = OpenTracked::new();
    while !fields.is_done() {
        let key = (fields.text()?.to_owned(), fields.text()?.to_owned());
        open.insert(key, fields.text()?.to_owned());
    }
    Ok(open)
}

/// The statements that follow a branch's findings through one appended scan, compared with
/// the branch's open tracked findings (`open`, read by the push head): a finding that is not
/// open yet is inserted, or reopened if it had been fixed; one still open is left alone
/// (unless its severity changed), so a scan like the last one writes nothing here; an open
/// one the scan no longer has is marked fixed by it, last seen in the line's previous scan.
/// An open finding's "last seen" is its line's latest scan. With `want_open`, also the line's
/// open tracked findings after them.
pub(crate) fn tracking_writes(
    scan: &TrackedScan<'_>,
    findings: &[Finding],
    open: &OpenTracked,
    want_open: bool,
) -> (Vec<Stmt>, Option<OpenTracked>) {
    let present = tracked_in_push(findings);
    let mut writes = Vec::new();
    let arriving: Vec<&&Finding> = present
        .iter()
        .filter(|f| !open.contains_key(&(f.rule_id.clone(), f.resource.clone())))
        .collect();
    for chunk in arriving.chunks(ROWS_PER_STATEMENT) {
        // The scan's values once, joined to each finding's four (every placeholder once, in
        // order, as `Stmt` needs).
        let mut sql = String::with_capacity(900 + chunk.len() * 24);
        sql.push_str(
            "INSERT INTO tracked_findings (id, account_id, project_id, branch_id, rule_id, \
             resource, severity, first_seq, first_seen_at, last_seq, last_seen_at) \
             SELECT v.column1, c.a, c.p, c.b, v.column2, v.column3, v.column4, c.s, c.t, c.s, c.t \
             FROM (SELECT $1 AS a, $2 AS p, $3 AS b, $4 AS s, $5 AS t) c CROSS JOIN (VALUES ",
        );
        let mut stmt = Stmt::new(String::new())
            .bind(scan.account_id)
            .bind(scan.project_id)
            .bind(scan.line_id)
            .bind(scan.seq)
            .bind(scan.scanned_at);
        for (i, f) in chunk.iter().enumerate() {
            let n = 6 + 4 * i;
            let _ = write!(
                sql,
                "{}(${n},${},${},${})",
                if i == 0 { "" } else { "," },
                n + 1,
                n + 2,
                n + 3
            );
            stmt = stmt
                .bind(tidemark_domain::ids::new_finding_id())
                .bind(f.rule_id.as_str())
                .bind(f.resource.as_str())
                .bind(f.severity.as_str());
        }
        // SQLite reads `ON CONFLICT` after a SELECT only past a WHERE clause.
        sql.push_str(") v WHERE 1 = 1");
        sql.push_str(TRACK_CONFLICT);
        stmt.sql = sql;
        writes.push(stmt);
    }
    for f in &present {
        if let Some(severity) = open.get(&(f.rule_id.clone(), f.resource.clone())) {
            if severity != f.severity.as_str() {
                writes.push(
                    Stmt::new(
                        "UPDATE tracked_findings SET severity = $1 \
                         WHERE branch_id = $2 AND rule_id = $3 AND resource = $4",
                    )
                    .bind(f.severity.as_str())
                    .bind(scan.line_id)
                    .bind(f.rule_id.as_str())
                    .bind(f.resource.as_str()),
                );
            }
        }
    }
    let seen: std::collections::HashSet<(&str, &str)> = present
        .iter()
        .map(|f| (f.rule_id.as_str(), f.resource.as_str()))
        .collect();
    let gone: Vec<(&str, &str)> = open
        .keys()
        .map(|(rule, resource)| (rule.as_str(), resource.as_str()))
        .filter(|pair| !seen.contains(pair))
        .collect();
    for chunk in gone.chunks(ROWS_PER_STATEMENT / 2) {
        let (last_seq, last_at) = scan.previous.unwrap_or((scan.seq, scan.scanned_at));
        let mut sql = String::from(
            "UPDATE tracked_findings SET fixed_seq = $1, fixed_at = $2, last_seq = $3, \
             last_seen_at = $4 WHERE branch_id = $5 AND (rule_id, resource) IN (",
        );
        let mut stmt = Stmt::new(String::new())
            .bind(scan.seq)
            .bind(scan.scanned_at)
            .bind(last_seq)
            .bind(last_at)
            .bind(scan.line_id);
        for (i, (rule, resource)) in chunk.iter().enumerate() {
            let n = 6 + 2 * i;
            let _ = write!(sql, "{}(${n},${})", if i == 0 { "" } else { "," }, n + 1);
            stmt = stmt.bind(*rule).bind(*resource);
        }
        sql.push(')');
        stmt.sql = sql;
        writes.push(stmt);
    }
    let open_after = want_open.then(|| {
        // What the push has is open, at the push's severity; nothing else is.
        present
            .iter()
            .map(|f| {
                (
                    (f.rule_id.clone(), f.resource.clone()),
                    f.severity.as_str().to_owned(),
                )
            })
            .collect()
    });
    (writes, open_after)
}

/// The triage states that set a failing requirement aside in posture (counted as triaged):
/// accepted risk and false positive. "Won't fix" is a failure someone decided to live with,
/// so it stays failed.
pub(crate) const POSTURE_SET_ASIDE: &str = "'accepted_risk', 'false_positive'";

/// A column of the push head: the (rule id, resource) pairs of line `line` (an SQL
/// expression) whose triage holds at `now` (a placeholder), as JSON pairs like
/// `gates::open_set_column`'s, read only when `when` holds. The gate's "no new findings"
/// rule does not count them (any triage); posture counts apart only `set_aside` ones (see
/// [`POSTURE_SET_ASIDE`]).
pub(crate) fn triaged_set_column(
    backend: Backend,
    when: &str,
    line: &str,
    now: &str,
    states: Option<&str>,
) -> String {
    let pairs = match backend {
        Backend::Sqlite => "json_group_array(json_array(tf.rule_id, tf.resource))",
        Backend::Postgres => {
            "COALESCE(json_agg(json_build_array(tf.rule_id, tf.resource)), '[]'::json)::text"
        }
    };
    format!(
        "CASE WHEN {when} THEN (SELECT {pairs} FROM tracked_findings tf \
         WHERE tf.branch_id = {line} AND tf.triage_state IS NOT NULL \
         AND (tf.triage_expires_at IS NULL OR tf.triage_expires_at > {now}){}) END",
        states.map_or(String::new(), |s| format!(" AND tf.triage_state IN ({s})"))
    )
}

/// A tracked finding as stored, with its branch's name and the ids of the scans it names.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct TrackedRow {
    pub id: FindingId,
    pub project_id: ProjectId,
    pub branch_id: String,
    pub branch: Option<String>,
    pub rule_id: String,
    pub resource: String,
    pub severity: String,
    pub first_seq: i64,
    pub first_scan_id: ScanId,
    pub first_seen_at: i64,
    pub last_seq: i64,
    pub last_scan_id: ScanId,
    pub last_seen_at: i64,
    pub fixed_seq: Option<i64>,
    pub fixed_scan_id: Option<ScanId>,
    pub fixed_at: Option<i64>,
    pub reopened_count: i64,
    pub reopened_at: Option<i64>,
    pub triage_state: Option<String>,
    pub triage_reason: Option<String>,
    pub triage_expires_at: Option<i64>,
    pub triaged_by: Option<String>,
    pub triaged_at: Option<i64>,
}

impl TrackedRow {
    /// The key a listing goes on after this finding.
    pub fn cursor(&self) -> FindingsCursor {
        FindingsCursor {
            rank: FindingsCursor::rank_of(&self.severity),
            first_seen_at: self.first_seen_at,
            finding_id: self.id.clone(),
        }
    }
}

impl TrackedRow {
    pub fn severity(&self) -> Severity {
        Severity::parse(&self.severity).unwrap_or(Severity::Low)
    }

    pub fn triage_state(&self) -> Option<TriageState> {
        self.triage_state.as_deref().and_then(TriageState::parse)
    }

    pub fn state(&self, now: Millis) -> FindingState {
        let triage = self.triage_state().map(|_| self.triage_expires_at);
        state_of(self.fixed_seq.is_some(), triage, now)
    }

    /// Whether its triage holds at `now` (it has one, unexpired).
    pub fn triage_holds(&self, now: Millis) -> bool {
        self.triage_state.is_some()
            && tidemark_domain::findings::triage_holds(self.triage_expires_at, now)
    }

    /// As `/v1` and the dashboard show it at `now`.
    pub fn to_wire(&self, now: Millis) -> TrackedFinding {
        use tidemark_domain::to_rfc3339;
        TrackedFinding {
            id: self.id.to_string(),
            branch: self.branch.clone(),
            rule_id: self.rule_id.clone(),
            resource: self.resource.clone(),
            severity: self.severity(),
            state: self.state(now),
            first_seen_scan_id: self.first_scan_id.to_string(),
            first_seen_at: to_rfc3339(self.first_seen_at),
            last_seen_scan_id: self.last_scan_id.to_string(),
            last_seen_at: to_rfc3339(self.last_seen_at),
            fixed_scan_id: self.fixed_scan_id.as_ref().map(ToString::to_string),
            fixed_at: self.fixed_at.map(to_rfc3339),
            reopened_count: u64::try_from(self.reopened_count).unwrap_or(0),
            triage: self.triage_state().map(|state| Triage {
                state,
                reason: self.triage_reason.clone().unwrap_or_default(),
                expires_at: self.triage_expires_at.map(to_rfc3339),
                by: self.triaged_by.clone().unwrap_or_default(),
                at: self.triaged_at.map(to_rfc3339).unwrap_or_default(),
            }),
        }
    }
}

/// Where a finding was last seen: its line's latest scan while it is open, the scan before
/// its fix once fixed (a push does not rewrite the open rows it sees again).
macro_rules! last_seq {
    () => {
        "CASE WHEN tf.fixed_seq IS NULL THEN COALESCE(b.head_seq, tf.last_seq) ELSE tf.last_seq END"
    };
}

/// Each finding's scans are looked up one row at a time (`scans` by its key), never joined as
/// a set: given a page of findings, PostgreSQL hashed every scan of the account to join them
/// once the page was large (a thousand rows: 50-85 ms at 100 projects, growing with them).
macro_rules! tracked_columns {
    () => {
        concat!(
            "tf.id, tf.project_id, tf.branch_id, b.name AS branch, tf.rule_id, \
             tf.resource, tf.severity, tf.first_seq, \
             (SELECT fs.scan_id FROM scans fs WHERE fs.project_id = tf.project_id \
                AND fs.seq = tf.first_seq) AS first_scan_id, \
             tf.first_seen_at, ",
            last_seq!(),
            " AS last_seq, \
             (SELECT ls.scan_id FROM scans ls WHERE ls.project_id = tf.project_id \
                AND ls.seq = ",
            last_seq!(),
            ") AS last_scan_id, \
             (SELECT ls.scanned_at FROM scans ls WHERE ls.project_id = tf.project_id \
                AND ls.seq = ",
            last_seq!(),
            ") AS last_seen_at, \
             tf.fixed_seq, \
             (SELECT xs.scan_id FROM scans xs WHERE xs.project_id = tf.project_id \
                AND xs.seq = tf.fixed_seq) AS fixed_scan_id, \
             tf.fixed_at, tf.reopened_count, tf.reopened_at, \
             tf.triage_state, tf.triage_reason, tf.triage_expires_at, tf.triaged_by, tf.triaged_at"
        )
    };
}

const TRACKED_COLUMNS: &str = tracked_columns!();

/// The join every read of tracked findings makes: the line, for its name and head.
macro_rules! tracked_joins {
    () => {
        "JOIN branches b ON b.id = tf.branch_id"
    };
}

const TRACKED_FROM: &str = concat!("FROM tracked_findings tf ", tracked_joins!());

/// The state condition, on placeholders `$now` for the time (fixed texts only).
fn state_condition(state: FindingState, now: &str) -> String {
    let holds = format!(
        "tf.triage_state IS NOT NULL AND (tf.triage_expires_at IS NULL \
         OR tf.triage_expires_at > {now})"
    );
    match state {
        FindingState::Fixed => "tf.fixed_seq IS NOT NULL".into(),
        FindingState::Triaged => format!("tf.fixed_seq IS NULL AND {holds}"),
        FindingState::Open => format!("tf.fixed_seq IS NULL AND NOT ({holds})"),
    }
}

const SEVERITY_RANK: &str = "CASE tf.severity WHEN 'critical' THEN 0 WHEN 'high' THEN 1 \
     WHEN 'medium' THEN 2 ELSE 3 END";

/// One line (branch or pull request) of a project.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Line {
    pub id: String,
    pub name: Option<String>,
    pub pr_number: Option<i64>,
}

/// The project's line called `branch` (a branch name, or `pr:<number>`); `None`: its default
/// line. `Ok(None)` when the account has no such project or line.
pub async fn find_line(
    db: &Db,
    account_id: &AccountId,
    project_id: &ProjectId,
    branch: Option<&str>,
) -> Result<Option<Line>, StoreError> {
    let key = branch.map(|b| match b.strip_prefix("pr:") {
        Some(_) => b.to_owned(),
        None => format!("branch:{b}"),
    });
    let line: Option<Line> = on_db!(db, pool => {
        match &key {
            None => sqlx::query_as(
                "SELECT b.id, b.name, b.pr_number FROM projects p \
                 JOIN branches b ON b.id = p.default_branch_id \
                 WHERE p.id = $1 AND p.account_id = $2",
            )
            .bind(project_id)
            .bind(account_id)
            .fetch_optional(pool)
            .await,
            Some(key) => sqlx::query_as(
                "SELECT b.id, b.name, b.pr_number FROM branches b \
                 WHERE b.project_id = $1 AND b.account_id = $2 AND b.ref_key = $3",
            )
            .bind(project_id)
            .bind(account_id)
            .bind(key)
            .fetch_optional(pool)
            .await,
        }
    })?;
    Ok(line)
}

/// Which tracked findings of a line to list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrackedQuery {
    pub state: Option<FindingState>,
    pub severity: Option<Severity>,
    /// Only findings sorting after this key (the last one of the previous page).
    pub after: Option<FindingsCursor>,
    pub limit: i64,
}

/// A page of the line's tracked findings, most severe first, then oldest first (then by id):
/// the order [`FindingsCursor`] keys.
pub async fn list_tracked(
    db: &Db,
    line_id: &str,
    query: &TrackedQuery,
    now: Millis,
) -> Result<Vec<TrackedRow>, StoreError> {
    let state = query
        .state
        .map(|s| format!(" AND {}", state_condition(s, "$3")))
        .unwrap_or_else(|| " AND $3 = $3".into());
    // Row values compare in order (SQLite 3.15+, PostgreSQL): the next page starts right
    // after the previous one's last key, whatever changed before it.
    let after = if query.after.is_some() {
        format!(" AND ({SEVERITY_RANK}, tf.first_seen_at, tf.id) > ($5, $6, $7)")
    } else {
        String::new()
    };
    // The page's rows are chosen first: the scans each row looks up (`TRACKED_COLUMNS`) are
    // then looked up for the page's rows only, not for every row of the line before the sort.
    let sql = format!(
        "WITH tf AS MATERIALIZED (SELECT tf.* FROM tracked_findings tf \
         WHERE tf.branch_id = $1 AND ($2 IS NULL OR tf.severity = $2){state}{after} \
         ORDER BY {SEVERITY_RANK}, tf.first_seen_at, tf.id LIMIT $4) \
         SELECT {TRACKED_COLUMNS} FROM tf {joins} \
         ORDER BY {SEVERITY_RANK}, tf.first_seen_at, tf.id",
        joins = tracked_joins!()
    );
    let rows = on_db!(db, pool => {
        let mut q = sqlx::query_as(&sql)
            .bind(line_id)
            .bind(query.severity.map(Severity::as_str))
            .bind(now)
            .bind(query.limit);
        if let Some(after) = &query.after {
            q = q.bind(after.rank).bind(after.first_seen_at).bind(after.finding_id.as_str());
        }
        q.fetch_all(pool).await
    })?;
    Ok(rows)
}

/// How many of the line's tracked findings are in each state at `now`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StateCounts {
    pub open: i64,
    pub triaged: i64,
    pub fixed: i64,
}

pub async fn state_counts(db: &Db, line_id: &str, now: Millis) -> Result<StateCounts, StoreError> {
    let sql = format!(
        "SELECT COALESCE(SUM(CASE WHEN {} THEN 1 ELSE 0 END), 0), \
         COALESCE(SUM(CASE WHEN {} THEN 1 ELSE 0 END), 0), \
         COALESCE(SUM(CASE WHEN tf.fixed_seq IS NOT NULL THEN 1 ELSE 0 END), 0) \
         FROM tracked_findings tf WHERE tf.branch_id = $3",
        state_condition(FindingState::Open, "$1"),
        state_condition(FindingState::Triaged, "$2"),
    );
    let (open, triaged, fixed): (i64, i64, i64) = on_db!(db, pool => {
        sqlx::query_as(&sql).bind(now).bind(now).bind(line_id).fetch_one(pool).await
    })?;
    Ok(StateCounts {
        open,
        triaged,
        fixed,
    })
}

/// One tracked finding of the account's project.
pub async fn find_tracked(
    db: &Db,
    account_id: &AccountId,
    project_id: &ProjectId,
    finding_id: &FindingId,
) -> Result<Option<TrackedRow>, StoreError> {
    let sql = format!(
        "SELECT {TRACKED_COLUMNS} {TRACKED_FROM} \
         WHERE tf.id = $1 AND tf.project_id = $2 AND tf.account_id = $3"
    );
    let row = on_db!(db, pool => {
        sqlx::query_as(&sql)
            .bind(finding_id)
            .bind(project_id)
            .bind(account_id)
            .fetch_optional(pool)
            .await
    })?;
    Ok(row)
}

/// The tracked findings of `line_id` among `keys` (rule id, resource): how a scan's page
/// tags its rows with their age and triage. At most 200 keys are looked up.
pub async fn tracked_for_keys(
    db: &Db,
    line_id: &str,
    keys: &[(&str, &str)],
) -> Result<HashMap<(String, String), TrackedRow>, StoreError> {
    let keys = &keys[..keys.len().min(200)];
    if keys.is_empty() {
        return Ok(HashMap::new());
    }
    let mut sql = format!("SELECT {TRACKED_COLUMNS} {TRACKED_FROM} WHERE tf.branch_id = $1 AND (");
    for i in 0..keys.len() {
        let n = 2 + 2 * i;
        let _ = write!(
            sql,
            "{}(tf.rule_id = ${n} AND tf.resource = ${})",
            if i == 0 { "" } else { " OR " },
            n + 1
        );
    }
    sql.push(')');
    let rows: Vec<TrackedRow> = on_db!(db, pool => {
        let mut q = sqlx::query_as(&sql).bind(line_id);
        for (rule, resource) in keys {
            q = q.bind(*rule).bind(*resource);
        }
        q.fetch_all(pool).await
    })?;
    Ok(rows
        .into_iter()
        .map(|r| ((r.rule_id.clone(), r.resource.clone()), r))
        .collect())
}

/// The line's findings whose triage holds at `now`, by (rule id, resource): what an export
/// marks as suppressed.
pub async fn triaged_on_line(
    db: &Db,
    line_id: &str,
    now: Millis,
) -> Result<HashMap<(String, String), TrackedRow>, StoreError> {
    let sql = format!(
        "SELECT {TRACKED_COLUMNS} {TRACKED_FROM} WHERE tf.branch_id = $1 \
         AND tf.triage_state IS NOT NULL \
         AND (tf.triage_expires_at IS NULL OR tf.triage_expires_at > $2)"
    );
    let rows: Vec<TrackedRow> = on_db!(db, pool => {
        sqlx::query_as(&sql).bind(line_id).bind(now).fetch_all(pool).await
    })?;
    Ok(rows
        .into_iter()
        .map(|r| ((r.rule_id.clone(), r.resource.clone()), r))
        .collect())
}

/// One scan of a finding's branch, and what the finding was in it.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct Sighting {
    pub scan_id: ScanId,
    pub scanned_at: i64,
    pub score: f64,
    /// The finding's status in that scan (`FAIL`, `PASS`, …); `None`: not in it.
    pub status: Option<String>,
    pub severity: Option<String>,
    pub message: Option<String>,
    pub remediation: Option<String>,
    /// Whether the scan's findings are still stored: housekeeping removes old scans'
    /// findings, and then `status` is `None` because nobody knows it any more.
    pub findings_kept: bool,
}

/// The finding's branch's scans since it was first seen, newest first (at most `limit`).
pub async fn sightings(db: &Db, row: &TrackedRow, limit: i64) -> Result<Vec<Sighting>, StoreError> {
    // The finding's first row in each scan (a scanner may list it twice), found once per scan
    // and then read by its key: among the branch's spans covering the scan, or among the
    // scan's rows in `findings` for a scan stored before spans.
    //
    // The finding's own spans are read once (`fs`: a few rows, one per change of its status or
    // text) and each scan looks among them: looking among all the branch's spans ending after
    // each scan made a year-old line's page read millions of rows (470 ms at issue 48's
    // scale benchmark).
    let sql = format!(
        "WITH fs AS MATERIALIZED (SELECT position, from_seq, to_seq, status, severity, text_hash \
           FROM finding_spans WHERE branch_id = $3 AND rule_id = $1 AND resource = $2) \
         SELECT x.scan_id, x.scanned_at, x.score, COALESCE(sp.status, f.status) AS status, \
         COALESCE(sp.severity, f.severity) AS severity, \
         COALESCE(tx.message, f.message) AS message, \
         COALESCE(tx.remediation, f.remediation) AS remediation, x.findings_kept \
         FROM (SELECT s.project_id, s.seq, s.line_seq, s.scan_id, s.scanned_at, s.score, \
           (s.findings_stored IS NULL OR s.findings_stored <> '{THINNED}') AS findings_kept, \
           CASE WHEN s.findings_stored IS NULL THEN (SELECT MIN(g.ordinal) FROM findings g \
             WHERE g.project_id = s.project_id AND g.scan_seq = s.seq \
             AND g.rule_id = $1 AND g.resource = $2) END AS ord, \
           CASE WHEN s.findings_stored = '{STORED_AS_SPANS}' THEN (SELECT MIN(v.position) \
             FROM fs v WHERE v.to_seq > s.seq AND v.from_seq <= s.seq) END AS pos \
           FROM scans s WHERE s.branch_id = $3 AND s.seq >= $4 \
           ORDER BY s.line_seq DESC LIMIT $5) x \
         LEFT JOIN findings f ON f.project_id = x.project_id AND f.scan_seq = x.seq \
           AND f.ordinal = x.ord \
         LEFT JOIN fs sp ON sp.position = x.pos AND sp.to_seq > x.seq AND sp.from_seq <= x.seq \
         LEFT JOIN finding_texts tx ON tx.project_id = x.project_id AND tx.hash = sp.text_hash \
         ORDER BY x.line_seq DESC"
    );
    let rows = on_db!(db, pool => {
        sqlx::query_as(&sql)
            .bind(&row.rule_id)
            .bind(&row.resource)
            .bind(&row.branch_id)
            .bind(row.first_seq)
            .bind(limit)
            .fetch_all(pool)
            .await
    })?;
    Ok(rows)
}

pub mod inbox;
mod triage;
pub use triage::*;

/// The open findings (not fixed, no triage holding) of each of `projects`' default branch,
/// by severity: `project id -> [critical, high, medium, low]`. The projects page asks for the
/// page's projects only: the cost is theirs, however many the account holds.
pub async fn open_counts_by_project(
    db: &Db,
    account_id: &AccountId,
    projects: &[ProjectId],
    now: Millis,
) -> Result<HashMap<ProjectId, [i64; 4]>, StoreError> {
    if projects.is_empty() {
        return Ok(HashMap::new());
    }
    let list: Vec<String> = (0..projects.len()).map(|i| format!("${}", i + 3)).collect();
    let sql = format!(
        // p.id, not tf.project_id (the same row's): `tracked_findings_open` then answers alone.
        "SELECT p.id, tf.severity, COUNT(*) FROM projects p \
         JOIN tracked_findings tf ON tf.branch_id = p.default_branch_id \
         WHERE p.account_id = $1 AND p.id IN ({}) AND {} GROUP BY p.id, tf.severity",
        list.join(", "),
        state_condition(FindingState::Open, "$2")
    );
    let rows: Vec<(ProjectId, String, i64)> = on_db!(db, pool => {
        let mut query = sqlx::query_as(&sql).bind(account_id).bind(now);
        for id in projects {
            query = query.bind(id);
        }
        query.fetch_all(pool).await
    })?;
    let mut counts: HashMap<ProjectId, [i64; 4]> = HashMap::new();
    for (project, severity, n) in rows {
        let i = Severity::ALL
            .iter()
            .position(|s| s.as_str() == severity)
            .unwrap_or(3);
        counts.entry(project).or_default()[i] += n;
    }
    Ok(counts)
}

/// An open finding of a project's default branch, with the project's label.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct AccountFinding {
    pub label: String,
    #[sqlx(flatten)]
    pub row: TrackedRow,
}

/// The account's oldest open findings of `severity` on active projects' default branches,
/// oldest first (at most `limit`).
pub async fn oldest_open(
    db: &Db,
    account_id: &AccountId,
    severity: Severity,
    now: Millis,
    limit: i64,
) -> Result<Vec<AccountFinding>, StoreError> {
    // Oldest first through `tracked_findings_oldest_open` (the account's unfixed findings by
    // severity and age), keeping those of active projects' default lines, until `limit`: the
    // oldest rows are default lines' (other lines begin later), so the walk stops early
    // whatever the number of projects (CROSS JOIN: SQLite keeps that order). The joins to
    // the scans come after the limit.
    let sql = format!(
        "WITH oldest AS ( \
           SELECT tf.id, p.label FROM tracked_findings tf CROSS JOIN projects p \
           WHERE p.id = tf.project_id AND p.default_branch_id = tf.branch_id \
           AND tf.account_id = $1 AND tf.severity = $2 AND p.archived_at IS NULL AND {} \
           ORDER BY tf.first_seen_at, tf.id LIMIT $4) \
         SELECT oldest.label, {TRACKED_COLUMNS} FROM oldest \
         JOIN tracked_findings tf ON tf.id = oldest.id {} \
         ORDER BY tf.first_seen_at, tf.id",
        state_condition(FindingState::Open, "$3"),
        tracked_joins!()
    );
    let rows = on_db!(db, pool => {
        sqlx::query_as(&sql)
            .bind(account_id)
            .bind(severity.as_str())
            .bind(now)
            .bind(limit)
            .fetch_all(pool)
            .await
    })?;
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tidemark_wire::FindingStatus;

    fn finding(rule: &str, severity: Severity) -> Finding {
        Finding {
            rule_id: rule.into(),
            resource: "r".into(),
            status: FindingStatus::Fail,
            severity,
            message: String::new(),
            remediation: String::new(),
        }
    }

    fn open(rules: &[(&str, &str)]) -> OpenTracked {
        rules
            .iter()
            .map(|(rule, severity)| (((*rule).to_owned(), "r".to_owned()), (*severity).to_owned()))
            .collect()
    }

    static ACCOUNT: std::sync::LazyLock<AccountId> =
        std::sync::LazyLock::new(|| AccountId::trusted("a"));
    static PROJECT: std::sync::LazyLock<ProjectId> =
        std::sync::LazyLock::new(|| ProjectId::trusted("p"));

    fn scan() -> TrackedScan<'static> {
        TrackedScan {
            account_id: &ACCOUNT,
            project_id: &PROJECT,
            line_id: "b",
            seq: 3,
            scanned_at: 3_000,
            previous: Some((2, 2_000)),
        }
    }

    #[test]
    fn a_scan_like_the_last_writes_nothing() {
        let findings = [finding("x", Severity::High), finding("y", Severity::Low)];
        let (writes, _) = tracking_writes(
            &scan(),
            &findings,
            &open(&[("x", "high"), ("y", "low")]),
            false,
        );
        assert!(writes.is_empty(), "{writes:?}");
    }

    #[test]
    fn only_what_changed_is_written() {
        // x is new, y changed severity, z is gone.
        let findings = [
            finding("x", Severity::High),
            finding("y", Severity::Critical),
        ];
        let (writes, _) = tracking_writes(
            &scan(),
            &findings,
            &open(&[("y", "low"), ("z", "low")]),
            false,
        );
        assert_eq!(writes.len(), 3, "{writes:?}");
        assert!(writes[0].sql.starts_with("INSERT INTO tracked_findings"));
        assert_eq!(
            writes[0].args.len(),
            5 + 4,
            "the scan's values once, four per finding"
        );
        assert!(writes[1]
            .sql
            .starts_with("UPDATE tracked_findings SET severity"));
        assert!(writes[2].sql.contains("fixed_seq = $1"));
        assert_eq!(
            writes[2].args[2..4],
            [crate::stmt::Arg::Int(2), crate::stmt::Arg::Int(2_000)],
            "last seen in the previous scan"
        );
        assert_eq!(
            writes[2].args[4..],
            [
                crate::stmt::Arg::Text("b".into()),
                crate::stmt::Arg::Text("z".into()),
                crate::stmt::Arg::Text("r".into())
            ],
            "named by the line and the pair"
        );
        // Every statement numbers its placeholders once, in order (the SQLite writer binds by position).
        for w in &writes {
            let _ = crate::stmt::positional(&w.sql);
        }
    }
}
