//! What the posture reads show (issue 47): a line's posture per framework now and over a range
//! (`/v1` and the project page share it), one framework's requirements with the findings behind
//! them (the framework page), and the account's rollup of every project's latest default-branch
//! scan (the projects page).

use std::collections::BTreeMap;

use tidemark_domain::frameworks::{ValidFramework, POSTURE_PREFIX};
use tidemark_domain::posture::{section_of, split_rule, Requirement, Tally};
use tidemark_domain::Millis;

use super::{current_posture, posture_history, PostureRow};
use crate::{on_db, AccountId, Db, ProjectId, ScanId, StoreError};

/// One framework on a line: its latest scan as it stands now, and each scan in the range as it
/// stood when pushed (oldest first).
#[derive(Debug, Clone, PartialEq)]
pub struct FrameworkLine {
    pub framework: String,
    pub tally: Tally,
    pub sections: Vec<(String, Tally)>,
    /// What drifted in the latest scan, as its push found it.
    pub drifted: Vec<String>,
    pub history: Vec<PostureRow>,
}

/// A line's posture: the latest scan judged now, per framework (or only `framework`).
#[derive(Debug, Clone, PartialEq)]
pub struct LinePosture {
    pub scan_id: ScanId,
    pub scanned_at: Millis,
    pub frameworks: Vec<FrameworkLine>,
}

/// Line `line_id`'s posture now and since `since`. `None` when the line has no scan whose
/// findings are kept (or is not the account's). The account's custom frameworks count when its
/// licence has `custom_frameworks`.
pub async fn line_posture(
    db: &Db,
    account_id: &AccountId,
    project_id: &ProjectId,
    line_id: &str,
    framework: Option<&str>,
    since: Option<Millis>,
    now: Millis,
) -> Result<Option<LinePosture>, StoreError> {
    let customs = crate::frameworks::in_force(db, account_id).await?;
    let Some(current) = current_posture(db, account_id, project_id, line_id, now, &customs).await?
    else {
        return Ok(None);
    };
    let rows = posture_history(db, account_id, project_id, line_id, framework, since).await?;
    let mut history: BTreeMap<String, Vec<PostureRow>> = BTreeMap::new();
    for row in rows {
        history.entry(row.framework.clone()).or_default().push(row);
    }
    let frameworks = current
        .frameworks
        .into_iter()
        .filter(|f| framework.is_none_or(|only| f.framework == only))
        .map(|f| {
            let history = history.remove(&f.framework).unwrap_or_default();
            let drifted = history
                .iter()
                .find(|r| r.scan_seq == current.scan_seq)
                .map(PostureRow::drifted)
                .unwrap_or_default();
            FrameworkLine {
                framework: f.framework,
                tally: f.tally,
                sections: f.sections,
                drifted,
                history,
            }
        })
        .collect();
    Ok(Some(LinePosture {
        scan_id: current.scan_id,
        scanned_at: current.scanned_at,
        frameworks,
    }))
}

/// An open finding of the line behind a requirement, as its life tracks it.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct OpenFinding {
    pub id: String,
    pub rule_id: String,
    pub resource: String,
    pub severity: String,
    pub first_seen_at: Millis,
    pub reopened_at: Option<Millis>,
    pub triage_state: Option<String>,
    pub triage_reason: Option<String>,
    pub triaged_by: Option<String>,
    pub triage_expires_at: Option<Millis>,
}

impl OpenFinding {
    /// When its current failing began: its return, or its first sight.
    pub fn failing_since(&self) -> Millis {
        self.reopened_at.unwrap_or(self.first_seen_at)
    }
}

/// One requirement of a framework in the line's latest scan, judged now.
#[derive(Debug, Clone, PartialEq)]
pub struct RequirementNow {
    /// The rule id (`cis-aws-2.0-1.4`) or, for a custom framework, the control id.
    pub id: String,
    /// The number within the framework (`1.4`), and its section (`1`).
    pub number: String,
    pub section: String,
    /// A custom control's title.
    pub title: Option<String>,
    pub status: Requirement,
    /// The line's open findings behind it (failing or set aside), oldest failing first.
    pub open: Vec<OpenFinding>,
}

impl RequirementNow {
    /// Since when it has failed: the oldest of its open findings' failing.
    pub fn failing_since(&self) -> Option<Millis> {
        self.open.iter().map(OpenFinding::failing_since).min()
    }
}

/// One framework in the line's latest scan: every requirement, judged now.
#[derive(Debug, Clone, PartialEq)]
pub struct FrameworkNow {
    pub scan_id: ScanId,
    pub scanned_at: Millis,
    pub title: Option<String>,
    pub requirements: Vec<RequirementNow>,
}

/// `framework` (a scanned framework's id, or `custom:<id>`) in line `line_id`'s latest scan,
/// requirement by requirement with the open findings behind each. `None` when the line has no
/// judgeable scan or the scan has no such framework.
pub async fn framework_now(
    db: &Db,
    account_id: &AccountId,
    project_id: &ProjectId,
    line_id: &str,
    framework: &str,
    now: Millis,
) -> Result<Option<FrameworkNow>, StoreError> {
    let Some(head) = super::head_scan(db, account_id, project_id, line_id).await? else {
        return Ok(None);
    };
    let (judged_rules, scanned) = super::judged_now(db, project_id, line_id, &head, now).await?;
    let rules: BTreeMap<&str, Requirement> = judged_rules
        .iter()
        .map(|(rule, r)| (rule.as_str(), *r))
        .collect();
    let open = open_findings(db, line_id).await?;
    let mut by_rule: BTreeMap<&str, Vec<&OpenFinding>> = BTreeMap::new();
    for f in &open {
        by_rule.entry(f.rule_id.as_str()).or_default().push(f);
    }
    let gather = |rule_ids: &mut dyn Iterator<Item = &str>| -> Vec<OpenFinding> {
        let mut found: Vec<OpenFinding> = rule_ids
            .flat_map(|r| by_rule.get(r).into_iter().flatten())
            .map(|f| (*f).clone())
            .collect();
        found.sort_by_key(|f| (f.failing_since(), f.rule_id.clone(), f.resource.clone()));
        found
    };
    let (title, requirements) = if let Some(custom_id) = framework.strip_prefix(POSTURE_PREFIX) {
        let customs: Vec<ValidFramework> = crate::frameworks::in_force(db, account_id).await?;
        let Some(custom) = customs.into_iter().find(|c| c.id() == custom_id) else {
            return Ok(None);
        };
        let requirements = custom
            .judge_controls(&rules)
            .map(|(c, status)| {
                let open = if status == Requirement::Passed {
                    Vec::new()
                } else {
                    gather(&mut c.rules.iter().map(String::as_str))
                };
                RequirementNow {
                    id: c.id.clone(),
                    number: c.id.clone(),
                    section: section_of(&c.id).to_owned(),
                    title: Some(c.title.clone()),
                    status,
                    open,
                }
            })
            .collect();
        (Some(custom.document().title.clone()), requirements)
    } else {
        // As the push keeps it: a scan-named framework spelt like a custom one is not one.
        let scanned: Vec<String> = scanned
            .into_iter()
            .filter(|f| !f.starts_with(POSTURE_PREFIX))
            .collect();
        if !scanned.iter().any(|f| f == framework) {
            return Ok(None);
        }
        let requirements = rules
            .iter()
            .filter_map(|(rule, &status)| {
                let (i, number) = split_rule(rule, &scanned)?;
                (scanned[i] == framework).then(|| RequirementNow {
                    id: (*rule).to_owned(),
                    number: number.to_owned(),
                    section: section_of(number).to_owned(),
                    title: None,
                    status,
                    open: gather(&mut std::iter::once(*rule)),
                })
            })
            .collect();
        (None, requirements)
    };
    Ok(Some(FrameworkNow {
        scan_id: head.scan_id,
        scanned_at: head.scanned_at,
        title,
        requirements,
    }))
}

/// The line's open findings (what its latest push saw failing), with their triage.
async fn open_findings(db: &Db, line_id: &str) -> Result<Vec<OpenFinding>, StoreError> {
    let rows = on_db!(db, pool => {
        sqlx::query_as(
            "SELECT id, rule_id, resource, severity, first_seen_at, reopened_at, triage_state, \
             triage_reason, triaged_by, triage_expires_at FROM tracked_findings \
             WHERE branch_id = $1 AND fixed_seq IS NULL",
        )
        .bind(line_id)
        .fetch_all(pool)
        .await
    })?;
    Ok(rows)
}

/// One framework of one project's latest default-branch scan, as pushed.
#[derive(Debug, Clone, PartialEq)]
pub struct RollupRow {
    pub project_id: ProjectId,
    pub label: String,
    pub cloud: String,
    pub cloud_account_id: String,
    /// `None` for a project whose latest scan has no posture (it named no framework).
    pub framework: Option<String>,
    pub tally: Tally,
}

#[derive(sqlx::FromRow)]
struct RollupDbRow {
    project_id: ProjectId,
    label: String,
    cloud: String,
    cloud_account_id: String,
    framework: Option<String>,
    passed: Option<i64>,
    failed: Option<i64>,
    triaged: Option<i64>,
    not_evaluated: Option<i64>,
}

/// Every live project's latest default-branch scan, per framework, as its push (or the
/// backfill) judged it: one indexed row per project and framework, never findings. Project by
/// project: what the kept roll-up (`summary::account_posture`, which the projects page reads)
/// is checked against, and what a reader who needs each project's share reads.
pub async fn account_rollup(db: &Db, account_id: &AccountId) -> Result<Vec<RollupRow>, StoreError> {
    let rows: Vec<RollupDbRow> = on_db!(db, pool => {
        sqlx::query_as(
            "SELECT p.id AS project_id, p.label, s.cloud, s.cloud_account_id, sp.framework, \
             sp.passed, sp.failed, sp.triaged, sp.not_evaluated \
             FROM projects p \
             JOIN branches b ON b.id = p.default_branch_id \
             JOIN scans s ON s.project_id = p.id AND s.seq = b.head_seq \
             LEFT JOIN scan_posture sp ON sp.project_id = s.project_id AND sp.scan_seq = s.seq \
             WHERE p.account_id = $1 AND p.archived_at IS NULL \
             ORDER BY p.label, sp.framework",
        )
        .bind(account_id)
        .fetch_all(pool)
        .await
    })?;
    let n = |v: Option<i64>| u32::try_from(v.unwrap_or(0)).unwrap_or(0);
    Ok(rows
        .into_iter()
        .map(|r| RollupRow {
            tally: Tally {
                passed: n(r.passed),
                failed: n(r.failed),
                triaged: n(r.triaged),
                not_evaluated: n(r.not_evaluated),
            },
            project_id: r.project_id,
            label: r.label,
            cloud: r.cloud,
            cloud_account_id: r.cloud_account_id,
            framework: r.framework,
        })
        .collect())
}
