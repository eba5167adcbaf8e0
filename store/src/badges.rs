//! Status badges: one live token per project, within its account.

use crate::{AccountId, ProjectId};
use tidemark_domain::audit::{Action, AuditContext};
use tidemark_domain::badge::{BadgeState, BadgeToken};

use crate::audit::Change;
use crate::gates::verdict_from_columns;
use crate::stmt::Stmt;
use crate::tx::audited_write;
use crate::Writer;
use crate::{on_db, Db, StoreError};

/// A project of the account and its badge token, if it has one.
#[derive(Debug, Clone, PartialEq)]
pub struct ProjectBadge {
    pub project_id: ProjectId,
    pub label: String,
    pub token: Option<BadgeToken>,
}

/// Every active project of the account, by label, with its badge token.
pub async fn account_badges(
    db: &Db,
    account_id: &AccountId,
) -> Result<Vec<ProjectBadge>, StoreError> {
    let rows: Vec<(ProjectId, String, Option<String>)> = on_db!(db, pool => {
        sqlx::query_as(
            "SELECT p.id, p.label, b.token FROM projects p \
             LEFT JOIN badges b ON b.project_id = p.id \
             WHERE p.account_id = $1 AND p.archived_at IS NULL ORDER BY p.label",
        )
        .bind(account_id)
        .fetch_all(pool)
        .await
    })?;
    Ok(rows
        .into_iter()
        .map(|(project_id, label, token)| ProjectBadge {
            project_id,
            label,
            token: token.map(BadgeToken::from_stored),
        })
        .collect())
}

/// Gives the project a new badge token; the previous one stops working at once. `false` when
/// the account has no such project.
pub async fn issue_badge(
    db: &Writer,
    account_id: &AccountId,
    project_id: &ProjectId,
    token: &BadgeToken,
    audit: &AuditContext,
) -> Result<bool, StoreError> {
    let lookup = Stmt::new(
        "SELECT p.label, (SELECT COUNT(*) FROM badges b WHERE b.project_id = p.id) \
         FROM projects p WHERE p.id = $1 AND p.account_id = $2",
    )
    .bind(project_id)
    .bind(account_id);
    audited_write(
        db,
        account_id,
        audit,
        lookup,
        |(label, had): (String, i64)| {
            let writes = vec![
                Stmt::new("DELETE FROM badges WHERE project_id = $1").bind(project_id),
                Stmt::new(
                    "INSERT INTO badges (token, project_id, account_id, created_at) \
                 VALUES ($1, $2, $3, $4)",
                )
                .bind(token.as_str())
                .bind(project_id)
                .bind(account_id)
                .bind(audit.at),
            ];
            // Never the token: the log must not be a way to read a badge link.
            let change = Change {
                account_id: Some(account_id),
                action: Action::BadgeIssued,
                target: label,
                before: Some(if had > 0 { "a badge link" } else { "no badge" }.to_owned()),
                after: Some("a new badge link".to_owned()),
            };
            (writes, change)
        },
    )
    .await
}

/// Revokes the project's badge token. `false` when there was none in this account.
pub async fn revoke_badge(
    db: &Writer,
    account_id: &AccountId,
    project_id: &ProjectId,
    audit: &AuditContext,
) -> Result<bool, StoreError> {
    let lookup = Stmt::new(
        "SELECT p.label FROM badges b JOIN projects p ON p.id = b.project_id \
         WHERE b.project_id = $1 AND b.account_id = $2",
    )
    .bind(project_id)
    .bind(account_id);
    audited_write(db, account_id, audit, lookup, |(label,): (String,)| {
        let delete = Stmt::new("DELETE FROM badges WHERE project_id = $1 AND account_id = $2")
            .bind(project_id)
            .bind(account_id);
        let change = Change {
            account_id: Some(account_id),
            action: Action::BadgeRevoked,
            target: label,
            before: Some("a badge link".to_owned()),
            after: Some("no badge".to_owned()),
        };
        (vec![delete], change)
    })
    .await
}

/// What the badge behind `token` shows, or `None` when no badge has that token: the project's
/// default branch, or with `branch` that branch's latest scan (no scans when the project has
/// no such branch).
pub async fn badge_state(
    db: &Db,
    token: &BadgeToken,
    branch: Option<&tidemark_domain::git::BranchName>,
) -> Result<Option<BadgeState>, StoreError> {
    let row: Option<(Option<f64>, Option<String>)> = match branch {
        None => on_db!(db, pool => {
            sqlx::query_as(
                "SELECT p.last_score, p.last_gate_status FROM badges b \
                 JOIN projects p ON p.id = b.project_id WHERE b.token = $1",
            )
            .bind(token.as_str())
            .fetch_optional(pool)
            .await
        })?,
        Some(branch) => on_db!(db, pool => {
            sqlx::query_as(
                "SELECT s.score, s.gate_status FROM badges b \
                 LEFT JOIN branches l ON l.project_id = b.project_id AND l.ref_key = $1 \
                 LEFT JOIN scans s ON s.project_id = l.project_id AND s.seq = l.head_seq \
                 WHERE b.token = $2",
            )
            .bind(tidemark_domain::git::branch_ref_key(branch))
            .bind(token.as_str())
            .fetch_optional(pool)
            .await
        })?,
    };
    Ok(row.map(|(score, gate)| match score {
        None => BadgeState::NoScans,
        Some(score) => BadgeState::Scored {
            score,
            gate: verdict_from_columns(gate.as_deref(), None).status,
        },
    }))
}
