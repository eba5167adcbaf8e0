//! One requirement across the account: every resource its rule judged in each live project's
//! latest default-branch scan, with the open finding behind a failing one (its id, since
//! when, its triage). Read per project (one indexed look-up of the head scan's findings by
//! rule, one of the branch's open findings), for a page that asks about one rule.

use std::collections::HashMap;

use super::read::OpenFinding;
use crate::spans::{scan_findings, Texts};
use crate::{on_db, AccountId, Db, ProjectId, StoreError};

/// One resource a rule judged in a project's latest default-branch scan.
#[derive(Debug, Clone, PartialEq)]
pub struct RequirementResource {
    pub project_id: ProjectId,
    pub project_label: String,
    pub resource: String,
    /// As the scanner reported it: `FAIL`, `PASS`, `SKIP`, `WARN`, `ERROR`.
    pub status: String,
    pub severity: String,
    pub message: String,
    /// The tracked open finding when it fails (or failed and is set aside).
    pub open: Option<OpenFinding>,
}

#[derive(sqlx::FromRow)]
struct Head {
    project_id: ProjectId,
    label: String,
    branch_id: String,
    seq: i64,
}

#[derive(sqlx::FromRow)]
struct Judged {
    resource: String,
    status: String,
    severity: String,
    message: String,
}

/// The resources rule `rule_id` judged across the account's live projects (their latest
/// default-branch scans), in project order.
pub async fn requirement_across(
    db: &Db,
    account_id: &AccountId,
    rule_id: &str,
) -> Result<Vec<RequirementResource>, StoreError> {
    let heads: Vec<Head> = on_db!(db, pool => {
        sqlx::query_as(
            "SELECT p.id AS project_id, p.label, b.id AS branch_id, s.seq \
             FROM projects p JOIN branches b ON b.id = p.default_branch_id \
             JOIN scans s ON s.project_id = p.id AND s.seq = b.head_seq \
             WHERE p.account_id = $1 AND p.archived_at IS NULL ORDER BY p.label",
        )
        .bind(account_id)
        .fetch_all(pool)
        .await
    })?;
    let findings = format!(
        "SELECT f.resource, f.status, f.severity, f.message FROM {} f WHERE f.rule_id = $3 \
         ORDER BY f.resource",
        scan_findings("$1", "$2", Texts::Joined)
    );
    let mut out = Vec::new();
    for head in heads {
        let judged: Vec<Judged> = on_db!(db, pool => {
            sqlx::query_as(&findings)
                .bind(&head.project_id)
                .bind(head.seq)
                .bind(rule_id)
                .fetch_all(pool)
                .await
        })?;
        if judged.is_empty() {
            continue;
        }
        let open: Vec<OpenFinding> = on_db!(db, pool => {
            sqlx::query_as(
                "SELECT id, rule_id, resource, severity, first_seen_at, reopened_at, \
                 triage_state, triage_reason, triaged_by, triage_expires_at FROM tracked_findings \
                 WHERE branch_id = $1 AND rule_id = $2 AND fixed_seq IS NULL",
            )
            .bind(&head.branch_id)
            .bind(rule_id)
            .fetch_all(pool)
            .await
        })?;
        let mut open: HashMap<String, OpenFinding> =
            open.into_iter().map(|f| (f.resource.clone(), f)).collect();
        for j in judged {
            out.push(RequirementResource {
                project_id: head.project_id.clone(),
                project_label: head.label.clone(),
                open: open.remove(&j.resource),
                resource: j.resource,
                status: j.status,
                severity: j.severity,
                message: j.message,
            });
        }
    }
    Ok(out)
}
