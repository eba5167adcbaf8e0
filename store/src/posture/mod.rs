//! Compliance posture kept by the push (issue 47): one `scan_posture` row per scan and
//! framework it named, judged by `tidemark_domain::posture`, so a year of a line's posture is
//! read from these rows and never from findings.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt::Write as _;

use tidemark_domain::frameworks::{ValidFramework, POSTURE_PREFIX};
use tidemark_domain::posture::{
    drifted, posture, requirements, split_rule, FrameworkPosture, Judged, Requirement, Tally,
};
use tidemark_domain::Millis;
use tidemark_wire::{Finding, FindingStatus};

use crate::spans::LiveSpan;
use crate::stmt::Stmt;
use crate::{on_db, AccountId, Db, ProjectId, ScanId, StoreError};

pub mod backfill;
pub(crate) mod push;
pub mod read;
pub mod requirement;
pub mod summary;

/// The scan a posture is written for.
pub(crate) struct PostureScan<'a> {
    pub project_id: &'a ProjectId,
    pub seq: i64,
    pub line_id: &'a str,
    pub scanned_at: Millis,
}

/// The requirements of the line's latest scan before this one, from its spans (a triage does
/// not change whether a requirement passed, which is all drift asks of the previous scan).
pub(crate) fn previous_requirements(previous: &[LiveSpan]) -> BTreeMap<&str, Requirement> {
    requirements(previous.iter().filter_map(|span| {
        let (_, key) = span.key();
        Some(Judged {
            rule_id: key.rule_id,
            status: FindingStatus::parse(key.status)?,
            triaged: false,
        })
    }))
}

/// A pushed scan's posture, one row per framework it named and per custom framework of the
/// account: its tallies, its sections and its drift against the line's previous scan
/// (`previous`: its spans). `set_aside` holds the line's findings whose triage (accepted risk
/// or false positive) holds now. The push path judges the scan before it queues
/// ([`push::PushPosture`]) and comes here only when the line has findings set aside.
pub(crate) fn push_rows(
    frameworks: &[String],
    findings: &[Finding],
    set_aside: Option<&HashSet<(String, String)>>,
    previous: &[LiveSpan],
    customs: &[ValidFramework],
) -> Vec<PostureRowOut> {
    let now = judge_pushed(findings, set_aside);
    let previous = previous_requirements(previous);
    let mut rows = framework_rows(frameworks, &now, &previous);
    rows.extend(custom_rows(customs, &now, &previous));
    rows
}

/// Each rule's requirement in a pushed scan's `findings`, an open finding triaged when it is
/// among `set_aside`.
pub(crate) fn judge_pushed<'a>(
    findings: &'a [Finding],
    set_aside: Option<&HashSet<(String, String)>>,
) -> BTreeMap<&'a str, Requirement> {
    let set_aside = set_aside.filter(|t| !t.is_empty());
    requirements(findings.iter().map(|f| Judged {
        rule_id: &f.rule_id,
        status: f.status,
        triaged: f.status.is_open()
            && set_aside.is_some_and(|t| t.contains(&(f.rule_id.clone(), f.resource.clone()))),
    }))
}

/// What drifted, as the scan keeps it: `[{"framework", "requirements"}]`, or `None` when
/// nothing did.
pub(crate) fn drifted_json(rows: &[PostureRowOut]) -> Option<String> {
    let drifted: Vec<tidemark_wire::DriftedRequirements> = rows
        .iter()
        .filter(|row| !row.drifted.is_empty())
        .map(|row| tidemark_wire::DriftedRequirements {
            framework: row.posture.framework.clone(),
            requirements: row.drifted.clone(),
        })
        .collect();
    (!drifted.is_empty())
        .then(|| serde_json::to_string(&drifted).ok())
        .flatten()
}

/// One framework's row of a scan, as it will be stored.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PostureRowOut {
    pub posture: FrameworkPosture,
    /// The requirements that passed in the line's previous scan and fail in this one.
    pub drifted: Vec<String>,
    /// The sections as stored, when written out before the row is (off the writer's path).
    sections: Option<String>,
}

impl PostureRowOut {
    fn new(posture: FrameworkPosture, drifted: Vec<String>) -> Self {
        PostureRowOut {
            posture,
            drifted,
            sections: None,
        }
    }

    /// The same row with its sections written out now.
    fn with_sections_written(mut self) -> Self {
        self.sections = Some(sections_json(&self.posture));
        self
    }
}

/// The rows of the frameworks a scan named (but none named like a custom framework's
/// posture), from its requirements `now` and the line's previous scan's `previous` (empty:
/// no drift).
pub(crate) fn framework_rows(
    frameworks: &[String],
    now: &BTreeMap<&str, Requirement>,
    previous: &BTreeMap<&str, Requirement>,
) -> Vec<PostureRowOut> {
    let frameworks: Vec<String> = frameworks
        .iter()
        .filter(|f| !f.starts_with(POSTURE_PREFIX))
        .cloned()
        .collect();
    let mut drift: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for rule in drifted(previous, now) {
        if let Some((i, _)) = split_rule(rule, &frameworks) {
            drift
                .entry(frameworks[i].as_str())
                .or_default()
                .push(rule.to_owned());
        }
    }
    posture(&frameworks, now)
        .into_iter()
        .map(|f| {
            let drifted = drift.remove(f.framework.as_str()).unwrap_or_default();
            PostureRowOut::new(f, drifted)
        })
        .collect()
}

/// The rows of the account's custom frameworks: each control judged from the rules mapped
/// to it, drift by control.
pub(crate) fn custom_rows(
    customs: &[ValidFramework],
    now: &BTreeMap<&str, Requirement>,
    previous: &BTreeMap<&str, Requirement>,
) -> Vec<PostureRowOut> {
    customs
        .iter()
        .filter_map(|custom| {
            let controls_now = custom.judge(now);
            let controls_before = custom.judge(previous);
            let now: BTreeMap<&str, Requirement> =
                controls_now.iter().map(|(k, v)| (k.as_str(), *v)).collect();
            let before: BTreeMap<&str, Requirement> = if previous.is_empty() {
                BTreeMap::new()
            } else {
                controls_before
                    .iter()
                    .map(|(k, v)| (k.as_str(), *v))
                    .collect()
            };
            let drifted = drifted(&before, &now)
                .into_iter()
                .map(str::to_owned)
                .collect();
            let posture = posture(&[custom.posture_name()], &now).pop()?;
            Some(PostureRowOut::new(posture, drifted))
        })
        .collect()
}

/// One `scan_posture` row per framework in `rows`; `None` when there are none.
pub(crate) fn insert_statement(scan: &PostureScan<'_>, rows: &[PostureRowOut]) -> Option<Stmt> {
    if rows.is_empty() {
        return None;
    }
    let mut sql = String::from(
        "INSERT INTO scan_posture (project_id, scan_seq, branch_id, scanned_at, framework, \
         passed, failed, triaged, not_evaluated, sections, drifted) VALUES ",
    );
    let mut stmt = Stmt::new(String::new());
    for (i, row) in rows.iter().enumerate() {
        let framework = &row.posture;
        let n = 1 + 11 * i;
        let placeholders: Vec<String> = (n..n + 11).map(|k| format!("${k}")).collect();
        let _ = write!(
            sql,
            "{}({})",
            if i == 0 { "" } else { "," },
            placeholders.join(",")
        );
        stmt = stmt
            .bind(scan.project_id)
            .bind(scan.seq)
            .bind(scan.line_id)
            .bind(scan.scanned_at)
            .bind(framework.framework.as_str())
            .bind(i64::from(framework.tally.passed))
            .bind(i64::from(framework.tally.failed))
            .bind(i64::from(framework.tally.triaged))
            .bind(i64::from(framework.tally.not_evaluated))
            .bind(
                row.sections
                    .clone()
                    .unwrap_or_else(|| sections_json(framework)),
            )
            .bind(serde_json::to_string(&row.drifted).unwrap_or_else(|_| "[]".to_owned()));
    }
    stmt.sql = sql;
    Some(stmt)
}

/// The custom frameworks a push's head read (`[doc, …]`), skipping any no longer valid.
pub(crate) fn parse_customs(documents: Option<&str>) -> Vec<ValidFramework> {
    let Some(documents) = documents else {
        return Vec::new();
    };
    let parsed: Vec<serde_json::Value> = serde_json::from_str(documents).unwrap_or_default();
    parsed
        .into_iter()
        .filter_map(|doc| ValidFramework::from_stored(&doc.to_string()))
        .collect()
}

/// `{"1": [passed, failed, triaged, not_evaluated], …}`.
fn sections_json(framework: &FrameworkPosture) -> String {
    let sections: BTreeMap<&str, [u32; 4]> = framework
        .sections
        .iter()
        .map(|(s, t)| (s.as_str(), [t.passed, t.failed, t.triaged, t.not_evaluated]))
        .collect();
    serde_json::to_string(&sections).unwrap_or_else(|_| "{}".to_owned())
}

/// One framework's posture in one scan, as stored.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct PostureRow {
    pub scan_seq: i64,
    pub scan_id: ScanId,
    pub scanned_at: Millis,
    pub framework: String,
    passed: i64,
    failed: i64,
    triaged: i64,
    not_evaluated: i64,
    sections: String,
    drifted: String,
}

fn count(n: i64) -> u32 {
    u32::try_from(n).unwrap_or(0)
}

impl PostureRow {
    pub fn tally(&self) -> Tally {
        Tally {
            passed: count(self.passed),
            failed: count(self.failed),
            triaged: count(self.triaged),
            not_evaluated: count(self.not_evaluated),
        }
    }

    /// Per section, in section order.
    pub fn sections(&self) -> Vec<(String, Tally)> {
        let parsed: BTreeMap<String, [u32; 4]> =
            serde_json::from_str(&self.sections).unwrap_or_default();
        parsed
            .into_iter()
            .map(|(s, [passed, failed, triaged, not_evaluated])| {
                (
                    s,
                    Tally {
                        passed,
                        failed,
                        triaged,
                        not_evaluated,
                    },
                )
            })
            .collect()
    }

    /// The requirements that passed in the line's previous scan and failed in this one.
    pub fn drifted(&self) -> Vec<String> {
        serde_json::from_str(&self.drifted).unwrap_or_default()
    }
}

/// A line's posture, oldest first: every framework (or only `framework`) of every scan since
/// `since`. Nothing for another account's project.
pub async fn posture_history(
    db: &Db,
    account_id: &AccountId,
    project_id: &ProjectId,
    line_id: &str,
    framework: Option<&str>,
    since: Option<Millis>,
) -> Result<Vec<PostureRow>, StoreError> {
    let rows = on_db!(db, pool => {
        sqlx::query_as(
            // Through the line's scans (`scans_line`) and the posture's primary key.
            "SELECT sp.scan_seq, s.scan_id, sp.scanned_at, sp.framework, sp.passed, sp.failed, \
             sp.triaged, sp.not_evaluated, sp.sections, sp.drifted \
             FROM scans s \
             JOIN projects p ON p.id = s.project_id \
             JOIN scan_posture sp ON sp.project_id = s.project_id AND sp.scan_seq = s.seq \
             WHERE p.account_id = $1 AND s.project_id = $2 AND s.branch_id = $3 \
             AND ($4 = '' OR sp.framework = $4) AND s.scanned_at >= $5 \
             ORDER BY s.scanned_at, s.seq, sp.framework",
        )
        .bind(account_id)
        .bind(project_id)
        .bind(line_id)
        .bind(framework.unwrap_or(""))
        .bind(since.unwrap_or(i64::MIN))
        .fetch_all(pool)
        .await
    })?;
    Ok(rows)
}

/// A line's latest scan, judged with triage as it stands now.
#[derive(Debug, Clone, PartialEq)]
pub struct CurrentPosture {
    pub scan_seq: i64,
    pub scan_id: ScanId,
    pub scanned_at: Millis,
    pub frameworks: Vec<FrameworkPosture>,
}

#[derive(sqlx::FromRow)]
pub(crate) struct HeadScan {
    seq: i64,
    pub scan_id: ScanId,
    pub scanned_at: Millis,
    frameworks: String,
}

/// Line `line_id`'s latest scan while its findings are kept (`None`: no scan, another
/// account's line, or thinned: its stored posture stands for it).
pub(crate) async fn head_scan(
    db: &Db,
    account_id: &AccountId,
    project_id: &ProjectId,
    line_id: &str,
) -> Result<Option<HeadScan>, StoreError> {
    let head = on_db!(db, pool => {
        sqlx::query_as(
            "SELECT s.seq, s.scan_id, s.scanned_at, s.frameworks FROM branches b \
             JOIN projects p ON p.id = b.project_id \
             JOIN scans s ON s.project_id = b.project_id AND s.seq = b.head_seq \
             WHERE b.id = $1 AND b.project_id = $2 AND p.account_id = $3 \
             AND (s.findings_stored IS NULL OR s.findings_stored <> $4)",
        )
        .bind(line_id)
        .bind(project_id)
        .bind(account_id)
        .bind(crate::spans::THINNED)
        .fetch_optional(pool)
        .await
    })?;
    Ok(head)
}

/// The head scan's requirements with the triage that holds at `now`, and the frameworks it
/// named.
pub(crate) async fn judged_now(
    db: &Db,
    project_id: &ProjectId,
    line_id: &str,
    head: &HeadScan,
    now: Millis,
) -> Result<(BTreeMap<String, Requirement>, Vec<String>), StoreError> {
    let set_aside = set_aside_now(db, line_id, now).await?;
    let set_aside_rules: BTreeSet<&str> = set_aside.iter().map(|(rule, _)| rule.as_str()).collect();
    let findings = scan_rule_statuses(db, project_id, head.seq, &set_aside_rules).await?;
    let frameworks: Vec<String> = serde_json::from_str(&head.frameworks).unwrap_or_default();
    let judged = judge(&findings, |rule, resource| {
        set_aside.contains(&(rule.to_owned(), resource.to_owned()))
    })
    .into_iter()
    .map(|(rule, r)| (rule.to_owned(), r))
    .collect();
    Ok((judged, frameworks))
}

/// The posture of line `line_id`'s latest scan at `now`: its findings (the scan's own rows or
/// spans) with the triage that holds now, so setting a finding aside, or its triage lapsing,
/// shows without a new push. `None` when the line has no scan (or is not the account's), and
/// for a scan whose findings housekeeping removed (its stored posture stands for it).
pub async fn current_posture(
    db: &Db,
    account_id: &AccountId,
    project_id: &ProjectId,
    line_id: &str,
    now: Millis,
    customs: &[ValidFramework],
) -> Result<Option<CurrentPosture>, StoreError> {
    let Some(head) = head_scan(db, account_id, project_id, line_id).await? else {
        return Ok(None);
    };
    let (judged, frameworks) = judged_now(db, project_id, line_id, &head, now).await?;
    let judged: BTreeMap<&str, Requirement> =
        judged.iter().map(|(rule, r)| (rule.as_str(), *r)).collect();
    let frameworks: Vec<FrameworkPosture> = framework_rows(&frameworks, &judged, &BTreeMap::new())
        .into_iter()
        .chain(custom_rows(customs, &judged, &BTreeMap::new()))
        .map(|row| row.posture)
        .collect();
    Ok(Some(CurrentPosture {
        scan_seq: head.seq,
        scan_id: head.scan_id,
        scanned_at: head.scanned_at,
        frameworks,
    }))
}

/// The line's findings set aside (accepted risk, false positive) by a triage that holds at
/// `now`.
pub(crate) async fn set_aside_now(
    db: &Db,
    line_id: &str,
    now: Millis,
) -> Result<HashSet<(String, String)>, StoreError> {
    let rows: Vec<(String, String)> = on_db!(db, pool => {
        sqlx::query_as(&format!(
            "SELECT rule_id, resource FROM tracked_findings WHERE branch_id = $1 \
             AND triage_state IS NOT NULL AND triage_state IN ({}) \
             AND (triage_expires_at IS NULL OR triage_expires_at > $2)",
            crate::findings::POSTURE_SET_ASIDE
        ))
        .bind(line_id)
        .bind(now)
        .fetch_all(pool)
        .await
    })?;
    Ok(rows.into_iter().collect())
}

/// A scan's findings as posture reads them: rule, resource, status.
#[derive(sqlx::FromRow)]
pub(crate) struct StatusRow {
    rule_id: String,
    resource: String,
    status: String,
}

/// The findings of the project's scan at `seq` (its spans or its rows; none once thinned).
pub(crate) async fn scan_statuses(
    db: &Db,
    project_id: &ProjectId,
    seq: i64,
) -> Result<Vec<StatusRow>, StoreError> {
    let sql = format!(
        "SELECT rule_id, resource, status FROM {} f",
        crate::spans::scan_findings("$1", "$2", crate::spans::Texts::None)
    );
    let rows = on_db!(db, pool => {
        sqlx::query_as(&sql).bind(project_id).bind(seq).fetch_all(pool).await
    })?;
    Ok(rows)
}

/// With more rules than this having a finding set aside (each a bound parameter), the scan
/// is judged from every finding's row instead.
const RULES_BY_RESOURCE: usize = 500;

/// [`scan_statuses`] reduced to what judging needs: one row per rule and status, except that
/// the rules in `by_resource` (those with a finding set aside) keep a row per resource.
/// [`requirements`] asks only, per rule, whether some finding has a status and whether it is
/// set aside, so the rows collapsed judge the same; and a 50,000-finding scan hands over a few
/// hundred rows from the database instead of 50,000 (about 3 µs each through sqlx: the project
/// page's posture card took about 100 ms of a 194 ms page).
pub(crate) async fn scan_rule_statuses(
    db: &Db,
    project_id: &ProjectId,
    seq: i64,
    by_resource: &BTreeSet<&str>,
) -> Result<Vec<StatusRow>, StoreError> {
    if by_resource.len() > RULES_BY_RESOURCE {
        return scan_statuses(db, project_id, seq).await;
    }
    let resource = if by_resource.is_empty() {
        "CAST('' AS TEXT)".to_owned()
    } else {
        let list: Vec<String> = (3..3 + by_resource.len())
            .map(|i| format!("${i}"))
            .collect();
        format!(
            "CASE WHEN rule_id IN ({}) THEN resource ELSE '' END",
            list.join(", ")
        )
    };
    let sql = format!(
        "SELECT rule_id, {resource} AS resource, status FROM {} f GROUP BY 1, 2, 3",
        crate::spans::scan_findings("$1", "$2", crate::spans::Texts::None)
    );
    let rows = on_db!(db, pool => {
        let mut q = sqlx::query_as(&sql).bind(project_id).bind(seq);
        for rule in by_resource {
            q = q.bind(*rule);
        }
        q.fetch_all(pool).await
    })?;
    Ok(rows)
}

/// Requirements of `findings`, an open finding triaged when `set_aside(rule, resource)`.
pub(crate) fn judge(
    findings: &[StatusRow],
    set_aside: impl Fn(&str, &str) -> bool,
) -> BTreeMap<&str, Requirement> {
    requirements(findings.iter().filter_map(|f| {
        let status = FindingStatus::parse(&f.status)?;
        Some(Judged {
            rule_id: &f.rule_id,
            status,
            triaged: status.is_open() && set_aside(&f.rule_id, &f.resource),
        })
    }))
}
