//! Quality gates as stored: a project's conditions (three nullable columns of `projects`) and
//! each scan's verdict (`scans.gate_status`, `scans.gate_reasons`). The rules themselves are
//! `tidemark_domain::gate`.

use crate::{AccountId, ProjectId};
use std::collections::HashSet;

use tidemark_domain::audit::{Action, AuditContext};
use tidemark_domain::gate::QualityGate;
use tidemark_wire::{GateResult, GateStatus, Severity};

use crate::audit::{record_in, Change};
use crate::Writer;
use crate::{on_db, on_db_write, Backend, BeginWrite as _, Db, StoreError};

/// A verdict as its two columns: NULL status when there was no gate.
pub(crate) fn verdict_columns(verdict: &GateResult) -> (Option<String>, Option<String>) {
    match verdict.status {
        GateStatus::None => (None, None),
        status => (
            Some(status.as_str().to_owned()),
            Some(serde_json::to_string(&verdict.reasons).unwrap_or_else(|_| "[]".into())),
        ),
    }
}

/// The verdict stored in `status` and `reasons` (a scan pushed before gates existed, or
/// without one, reads as `none`).
pub(crate) fn verdict_from_columns(status: Option<&str>, reasons: Option<&str>) -> GateResult {
    match status.and_then(GateStatus::parse) {
        None | Some(GateStatus::None) => GateResult::none(),
        Some(status) => GateResult {
            status,
            reasons: reasons
                .and_then(|r| serde_json::from_str(r).ok())
                .unwrap_or_default(),
        },
    }
}

/// The gate stored in a project's three columns. They are written only from a
/// [`QualityGate`], so anything else reads as no gate rather than failing pushes.
pub(crate) fn gate_from_columns(
    min_score: Option<f64>,
    max_drop: Option<f64>,
    new_severity: Option<&str>,
) -> Option<QualityGate> {
    QualityGate::new(min_score, max_drop, new_severity.and_then(Severity::parse))
        .ok()
        .flatten()
}

/// A column of the push head: the open findings (rule id, resource) of the project's scan at
/// storage position `seq` (an SQL expression) as a JSON array of pairs, read only when `when`
/// holds (NULL otherwise). Part of the head statement, so the read costs no extra call to the
/// database: on SQLite, one call per push, one row per finding, cost 12-20 % of push
/// throughput (docs/benchmarks.md). The one text that differs between the backends.
pub(crate) fn open_set_column(backend: Backend, when: &str, seq: &str) -> String {
    let scan = crate::spans::scan_findings("p.id", seq, crate::spans::Texts::None);
    match backend {
        Backend::Sqlite => format!(
            "CASE WHEN {when} THEN \
             (SELECT json_group_array(json_array(f.rule_id, f.resource)) FROM {scan} f \
              WHERE f.status IN ('FAIL', 'WARN', 'ERROR')) END"
        ),
        Backend::Postgres => format!(
            "CASE WHEN {when} THEN \
             (SELECT COALESCE(json_agg(json_build_array(f.rule_id, f.resource)), '[]'::json)::text \
              FROM {scan} f WHERE f.status IN ('FAIL', 'WARN', 'ERROR')) END"
        ),
    }
}

/// [`open_set_column`]'s value as the set the gate compares a push with.
pub(crate) fn parse_open_set(json: &str) -> Result<HashSet<(String, String)>, StoreError> {
    let pairs: Vec<(String, String)> =
        serde_json::from_str(json).map_err(|_| StoreError::Corrupt("previous open findings"))?;
    Ok(pairs.into_iter().collect())
}

#[derive(sqlx::FromRow)]
struct GateRow {
    gate_min_score: Option<f64>,
    gate_max_drop: Option<f64>,
    gate_new_severity: Option<String>,
}

#[derive(sqlx::FromRow)]
struct LabelledGateRow {
    label: String,
    #[sqlx(flatten)]
    gate: GateRow,
}

/// The project's gate (`Ok(None)` when it has none); `Err(NotFound)` semantics are the
/// caller's: another account's project reads as `Ok(None)` too, so callers check the project
/// first.
pub async fn project_gate(
    db: &Db,
    account_id: &AccountId,
    project_id: &ProjectId,
) -> Result<Option<QualityGate>, StoreError> {
    let row: Option<GateRow> = on_db!(db, pool => {
        sqlx::query_as(
            "SELECT gate_min_score, gate_max_drop, gate_new_severity FROM projects \
             WHERE id = $1 AND account_id = $2",
        )
        .bind(project_id)
        .bind(account_id)
        .fetch_optional(pool)
        .await
    })?;
    Ok(row.and_then(|r| {
        gate_from_columns(
            r.gate_min_score,
            r.gate_max_drop,
            r.gate_new_severity.as_deref(),
        )
    }))
}

/// Sets (or with `None`, removes) the project's gate, and records it in the audit log.
/// Returns `false` when the account has no such project. Scans already pushed keep their
/// verdicts; the next push is judged by this.
pub async fn set_project_gate(
    db: &Writer,
    account_id: &AccountId,
    project_id: &ProjectId,
    gate: Option<&QualityGate>,
    audit: &AuditContext,
) -> Result<bool, StoreError> {
    let summary = |g: Option<&QualityGate>| g.map(QualityGate::summary);
    let done = on_db_write!(db, pool => {
        let mut tx = pool.begin_account_write(account_id).await?;
        let row: Option<LabelledGateRow> = sqlx::query_as(
            "SELECT label, gate_min_score, gate_max_drop, gate_new_severity FROM projects \
             WHERE id = $1 AND account_id = $2",
        )
        .bind(project_id)
        .bind(account_id)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(LabelledGateRow { label, gate: g }) = row else {
            return Ok(false);
        };
        let before = gate_from_columns(g.gate_min_score, g.gate_max_drop, g.gate_new_severity.as_deref());
        sqlx::query(
            "UPDATE projects SET gate_min_score = $1, gate_max_drop = $2, gate_new_severity = $3 \
             WHERE id = $4 AND account_id = $5",
        )
        .bind(gate.and_then(QualityGate::min_score))
        .bind(gate.and_then(QualityGate::max_drop))
        .bind(gate.and_then(QualityGate::new_findings_at).map(Severity::as_str))
        .bind(project_id)
        .bind(account_id)
        .execute(&mut *tx)
        .await?;
        let change = Change {
            account_id: Some(account_id),
            action: if gate.is_some() { Action::GateSet } else { Action::GateRemoved },
            target: label,
            before: summary(before.as_ref()),
            after: summary(gate),
        };
        record_in!(&mut *tx, audit, change)?;
        tx.commit().await?;
        Ok::<bool, sqlx::Error>(true)
    })?;
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_verdict_survives_its_columns() {
        for verdict in [
            GateResult::none(),
            GateResult {
                status: GateStatus::Passed,
                reasons: vec![],
            },
            GateResult {
                status: GateStatus::Failed,
                reasons: vec!["score 1 is below the gate's minimum of 2".into()],
            },
        ] {
            let (status, reasons) = verdict_columns(&verdict);
            assert_eq!(
                verdict_from_columns(status.as_deref(), reasons.as_deref()),
                verdict
            );
        }
    }
}
