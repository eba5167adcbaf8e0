//! A tracked finding's page: the finding, its life on its branch and its triage. Triage
//! itself is a plain form post (`server::triage_form`): the page ships no WASM.

use leptos::prelude::*;

use crate::error::DashboardError;
use crate::model::FindingPageView;

#[server(endpoint = "finding")]
pub async fn load_finding(
    project_id: String,
    finding_id: String,
) -> Result<FindingPageView, DashboardError> {
    use super::ssr::*;
    use crate::life::life;
    use crate::model::LifeEntry;
    use crate::time::format_time;
    use tidemark_domain::access::Role;
    use tidemark_domain::findings::may_triage;

    let viewer = crate::auth::require_viewer()?;
    let project_id = parse_project_id(&project_id)?;
    let finding_id = parse_finding_id(&finding_id)?;
    let db = db();
    let account = &viewer.account_id;
    let tidemark_services::findings::FindingLife {
        project_label,
        row,
        seen,
        history,
    } = tidemark_services::findings::life(&db, account, &project_id, &finding_id, SCANS_READ)
        .await
        .or_else(crate::error::refused)?;
    let now = tidemark_domain::now_millis();
    let latest = seen.iter().find(|s| s.status.is_some());
    let role = if viewer.is_admin {
        Role::Admin
    } else {
        Role::Member
    };
    let holds = row.triage_holds(now);
    let when = format_time;
    Ok(FindingPageView {
        project_id,
        project_label,
        message: latest.and_then(|s| s.message.clone()).unwrap_or_default(),
        remediation: latest
            .and_then(|s| s.remediation.clone())
            .unwrap_or_default(),
        first_seen: when(row.first_seen_at),
        last_seen: when(row.last_seen_at),
        fixed: row.fixed_at.map(when),
        scans_read: seen.len() as i64,
        life: life(
            &changes_from(&seen),
            // The window reaches the scan that first saw it.
            seen.len() < SCANS_READ as usize,
            &triage_changes(history, now),
        )
        .into_iter()
        .map(|event| LifeEntry {
            at: format_time(event.at),
            last_at: event.last_at.map(format_time),
            event,
        })
        .collect(),
        can_triage: may_triage(role, holds, false),
        can_undo: row.triage_state.is_some() && may_triage(role, holds, true),
        finding: row.to_wire(now),
    })
}

/// How many of the branch's latest scans a finding's page reads its life from.
#[cfg(feature = "ssr")]
const SCANS_READ: i64 = 500;

/// The sightings (newest first, as read) oldest first.
#[cfg(feature = "ssr")]
fn changes_from(seen: &[tidemark_services::findings::Sighting]) -> Vec<crate::life::Seen> {
    seen.iter()
        .rev()
        .map(|s| crate::life::Seen {
            scan_id: s.scan_id.clone(),
            at: s.scanned_at,
            status: s.status.clone(),
            severity: s.severity.clone(),
            known: s.findings_kept,
        })
        .collect()
}

/// The finding's triage history as its life says it: each set ("set aside as won't fix by
/// X until …"), each undo, and each lapse (an expiry that passed before anything else
/// happened to the triage), in time order.
#[cfg(feature = "ssr")]
fn triage_changes(
    history: Vec<tidemark_services::findings::TriageEvent>,
    now: i64,
) -> Vec<crate::life::TriageChange> {
    use crate::life::{LifeKind, TriageChange};
    use tidemark_wire::findings::TriageState;
    let mut out = Vec::new();
    let next_at: Vec<Option<i64>> = (0..history.len())
        .map(|i| history.get(i + 1).map(|e| e.at))
        .collect();
    for (e, next) in history.into_iter().zip(next_at) {
        let Some(state) = e.state.as_deref().and_then(TriageState::parse) else {
            out.push(TriageChange {
                at: e.at,
                kind: LifeKind::TriageUndone,
                text: format!("Undone by {}: open again", e.actor),
                reason: e.reason,
            });
            continue;
        };
        let label = state.label().to_lowercase();
        let until = e
            .expires_at
            .map(|at| format!(" until {}", crate::time::date(at)))
            .unwrap_or_default();
        out.push(TriageChange {
            at: e.at,
            kind: LifeKind::Triaged,
            text: format!("Set aside as {label} by {}{until}", e.actor),
            reason: e.reason,
        });
        if let Some(at) = e
            .expires_at
            .filter(|at| *at <= now && next.is_none_or(|n| n > *at))
        {
            out.push(TriageChange {
                at,
                kind: LifeKind::TriageLapsed,
                text: format!("The {label} set by {} lapsed: open again", e.actor),
                reason: None,
            });
        }
    }
    out
}
