//! Triage: a finding's triage history, and setting (or undoing) the triage of one or several
//! findings in one transaction, each change its own history entry and audit event.

use crate::{AccountId, FindingId, ProjectId};
use tidemark_domain::audit::{Action, AuditContext};
use tidemark_domain::findings::TriageChange;
use tidemark_wire::findings::TriageState;

use crate::audit::{record_in, Change};
use crate::{on_db, on_db_write, BeginWrite as _, Db, StoreError, Writer};

use super::*;

/// One triage change, as the finding's page lists it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct TriageEvent {
    pub at: i64,
    pub actor: String,
    /// `None`: undone.
    pub state: Option<String>,
    pub reason: Option<String>,
    pub expires_at: Option<i64>,
}

/// The finding's triage changes, oldest first.
pub async fn triage_history(
    db: &Db,
    finding_id: &FindingId,
) -> Result<Vec<TriageEvent>, StoreError> {
    let rows = on_db!(db, pool => {
        sqlx::query_as(
            "SELECT at, actor, state, reason, expires_at FROM finding_triage_events \
             WHERE finding_id = $1 ORDER BY at, state",
        )
        .bind(finding_id)
        .fetch_all(pool)
        .await
    })?;
    Ok(rows)
}

#[derive(Debug, Clone, PartialEq)]
pub enum TriageOutcome {
    Done(Box<TrackedRow>),
    /// No such finding in the account's project.
    NotFound,
}

/// Triages the finding (`Some`) or undoes its triage (`None`), with its history row and audit
/// event, in one transaction. Who may do which is the caller's rule
/// (`tidemark_domain::findings::may_triage`).
pub async fn set_triage(
    db: &Writer,
    account_id: &AccountId,
    project_id: &ProjectId,
    finding_id: &FindingId,
    change: Option<&TriageChange>,
    audit: &AuditContext,
) -> Result<TriageOutcome, StoreError> {
    let ids = [finding_id.to_owned()];
    let mut each =
        set_triage_many(db, account_id, project_id, &ids, change, audit, |_| true).await?;
    Ok(match each.pop().map(|(_, outcome)| outcome) {
        Some(TriageEach::Done(row) | TriageEach::Refused(row)) => TriageOutcome::Done(row),
        Some(TriageEach::NotFound) | None => TriageOutcome::NotFound,
    })
}

/// What a triage of several findings did to one of them.
#[derive(Debug, Clone, PartialEq)]
pub enum TriageEach {
    Done(Box<TrackedRow>),
    /// `may` refused it (a member replacing a triage that holds): left as it was.
    Refused(Box<TrackedRow>),
    /// No such finding in the account's project.
    NotFound,
}

/// Triages (`Some`) or untriages (`None`) each of `finding_ids` of the project that `may`
/// allows, in one transaction: each with its history row and its own audit event, as if
/// triaged one at a time. Ids repeated count once; the answer is in the order given. When
/// any of them is not the project's, nothing is changed.
pub async fn set_triage_many(
    db: &Writer,
    account_id: &AccountId,
    project_id: &ProjectId,
    finding_ids: &[FindingId],
    change: Option<&TriageChange>,
    audit: &AuditContext,
    may: impl Fn(&TrackedRow) -> bool + Send + Sync,
) -> Result<Vec<(FindingId, TriageEach)>, StoreError> {
    let actor = audit.actor.name();
    let found_sql = format!(
        "SELECT {TRACKED_COLUMNS} {TRACKED_FROM} \
         WHERE tf.id = $1 AND tf.project_id = $2 AND tf.account_id = $3"
    );
    let mut ids: Vec<&FindingId> = Vec::with_capacity(finding_ids.len());
    for id in finding_ids {
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    let state = change.map(|c| c.state.as_str());
    let reason = change.map(|c| c.reason.clone());
    let expires_at = change.and_then(|c| c.expires_at);
    let by = change.map(|_| actor.clone());
    let at = change.map(|_| audit.at);
    let outcome = on_db_write!(db, pool => {
        let mut tx = pool.begin_account_write(account_id).await?;
        let label: Option<(String,)> = sqlx::query_as("SELECT label FROM projects WHERE id = $1 AND account_id = $2")
            .bind(project_id)
            .bind(account_id)
            .fetch_optional(&mut *tx)
            .await?;
        let mut out = Vec::with_capacity(ids.len());
        for id in &ids {
            let row: Option<TrackedRow> = sqlx::query_as(&found_sql)
                .bind(*id)
                .bind(project_id)
                .bind(account_id)
                .fetch_optional(&mut *tx)
                .await?;
            let (Some(mut row), Some((label,))) = (row, label.as_ref()) else {
                out.push(((*id).clone(), TriageEach::NotFound));
                continue;
            };
            if !may(&row) {
                out.push(((*id).clone(), TriageEach::Refused(Box::new(row))));
                continue;
            }
            // Undoing what nobody set changes nothing, so it is no event (nor an audit row).
            if change.is_none() && row.triage_state.is_none() {
                out.push(((*id).clone(), TriageEach::Done(Box::new(row))));
                continue;
            }
            let before = summary(row.triage_state(), row.triage_reason.as_deref(), row.triage_expires_at);
            sqlx::query(
                "UPDATE tracked_findings SET triage_state = $1, triage_reason = $2, \
                 triage_expires_at = $3, triaged_by = $4, triaged_at = $5 WHERE id = $6",
            )
            .bind(state)
            .bind(reason.clone())
            .bind(expires_at)
            .bind(by.clone())
            .bind(at)
            .bind(*id)
            .execute(&mut *tx)
            .await?;
            sqlx::query(
                "INSERT INTO finding_triage_events (finding_id, account_id, at, actor, state, \
                 reason, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
            )
            .bind(*id)
            .bind(account_id)
            .bind(audit.at)
            .bind(&actor)
            .bind(state)
            .bind(reason.clone())
            .bind(expires_at)
            .execute(&mut *tx)
            .await?;
            let change_event = Change {
                account_id: Some(account_id),
                action: if change.is_some() { Action::FindingTriaged } else { Action::FindingTriageUndone },
                target: format!("{label}: {} on {}", row.rule_id, row.resource),
                before,
                after: summary(change.map(|c| c.state), reason.as_deref(), expires_at),
            };
            record_in!(&mut *tx, audit, change_event)?;
            row.triage_state = state.map(str::to_owned);
            row.triage_reason = reason.clone();
            row.triage_expires_at = expires_at;
            row.triaged_by = by.clone();
            row.triaged_at = at;
            out.push(((*id).clone(), TriageEach::Done(Box::new(row))));
        }
        // An unknown id makes the whole request wrong: nothing is changed (dropping the
        // transaction rolls it back).
        if out.iter().all(|(_, each)| !matches!(each, TriageEach::NotFound)) {
            tx.commit().await?;
        }
        Ok::<_, sqlx::Error>(out)
    })?;
    Ok(outcome)
}

/// A triage as the audit log shows it: "Won't fix until 2027-03-01: legacy bucket".
fn summary(
    state: Option<TriageState>,
    reason: Option<&str>,
    expires_at: Option<i64>,
) -> Option<String> {
    let state = state?;
    let until = expires_at
        .map(|at| format!(" until {}", &tidemark_domain::to_rfc3339(at)[..10]))
        .unwrap_or_default();
    Some(format!(
        "{}{until}: {}",
        state.label(),
        reason.unwrap_or("")
    ))
}
