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
            &triage_changes(history),
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

#[cfg(feature = "ssr")]
fn triage_changes(
    history: Vec<tidemark_services::findings::TriageEvent>,
) -> Vec<crate::life::TriageChange> {
    use tidemark_wire::findings::TriageState;
    history
        .into_iter()
        .map(|e| {
            let state = e.state.as_deref().and_then(TriageState::parse);
            crate::life::TriageChange {
                at: e.at,
                actor: e.actor,
                what: match (state, e.expires_at) {
                    (Some(s), Some(until)) => {
                        format!("{} until {}", s.label(), crate::time::date(until))
                    }
                    (Some(s), None) => s.label().to_owned(),
                    (None, _) => "Triage undone".to_owned(),
                },
                reason: e.reason,
            }
        })
        .collect()
}
