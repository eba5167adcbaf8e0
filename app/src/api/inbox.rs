//! The findings inbox (`/findings`): the account's tracked findings across its projects,
//! filtered and paged as `GET /v1/findings` is, and each member's saved views.

use leptos::prelude::*;

use crate::error::DashboardError;
use crate::model::{InboxFilter, InboxView};

#[server(endpoint = "inbox")]
pub async fn load_inbox(
    filter: InboxFilter,
    #[server(default)] cursor: Option<String>,
) -> Result<InboxView, DashboardError> {
    use super::ssr::*;
    use crate::model::{InboxRowView, SavedViewLink};
    let viewer = crate::auth::require_viewer()?;
    let db = db();
    let now = tidemark_domain::now_millis();
    let projects: Vec<(String, String)> =
        tidemark_services::projects::heads(&db, &viewer.account_id)
            .await
            .or_else(crate::error::refused)?
            .into_iter()
            .filter(|p| p.archived_at.is_none())
            .map(|p| (p.id.to_string(), p.label))
            .collect();
    let query = ssr::inbox_query(&filter, cursor.as_deref(), &projects, now)?;
    let (rows, next_cursor) =
        tidemark_services::findings::inbox(&db, &viewer.account_id, &query, now)
            .await
            .or_else(crate::error::refused)?;
    let saved = tidemark_services::findings::saved_views(&db, &viewer.account_id, &viewer.user_id)
        .await
        .or_else(crate::error::refused)?;
    Ok(InboxView {
        rows: rows
            .into_iter()
            .map(|r| {
                let f = &r.finding;
                InboxRowView {
                    finding_id: f.id.to_string(),
                    project_id: f.project_id.to_string(),
                    project_label: r.project_label.clone(),
                    branch: f.branch.clone(),
                    rule_id: f.rule_id.clone(),
                    resource: f.resource.clone(),
                    severity: f.severity.clone(),
                    state: f.state(now).as_str().to_owned(),
                    age: crate::time::ago(f.first_seen_at, now),
                    first_seen: crate::time::format_time(f.first_seen_at),
                    triage: ssr::triage_words(f, now),
                }
            })
            .collect(),
        next_cursor,
        paged: cursor.is_some(),
        filter,
        projects,
        saved: saved
            .into_iter()
            .map(|v| SavedViewLink {
                id: v.id,
                name: v.name,
                query: v.query,
            })
            .collect(),
        is_admin: viewer.is_admin,
    })
}

/// Saves the inbox's filters under a name, for the signed-in member.
#[server(endpoint = "save_view")]
pub async fn save_view(
    name: String,
    #[server(default)] query: String,
) -> Result<(), DashboardError> {
    use super::ssr::*;
    let viewer = crate::auth::require_viewer()?;
    tidemark_services::findings::save_view(
        &db(),
        &viewer.account_id,
        &viewer.user_id,
        &name,
        &query,
        tidemark_domain::now_millis(),
    )
    .await
    .inspect(|_| back_to_form("save_view"))
    .or_else(crate::error::refused)
}

/// Removes one of the signed-in member's saved views.
#[server(endpoint = "delete_view")]
pub async fn delete_view(view_id: String) -> Result<(), DashboardError> {
    use super::ssr::*;
    let viewer = crate::auth::require_viewer()?;
    tidemark_services::findings::delete_view(&db(), &viewer.account_id, &viewer.user_id, &view_id)
        .await
        .inspect(|_| back_to_form("delete_view"))
        .or_else(crate::error::refused)
}

/// The inbox's filters as the store reads them (the server's CSV download reads the same).
#[cfg(feature = "ssr")]
pub use ssr::inbox_query;

#[cfg(feature = "ssr")]
mod ssr {
    use tidemark_domain::findings::FindingsCursor;
    use tidemark_domain::time::DAY_MS;
    use tidemark_services::findings::{InboxQuery, Lines, TrackedRow, TriageFilter};
    use tidemark_wire::findings::{FindingState, TriageState};
    use tidemark_wire::Severity;

    use crate::error::DashboardError;
    use crate::model::{InboxFilter, INBOX_PAGE_SIZE};

    fn invalid(text: impl Into<String>) -> DashboardError {
        DashboardError::Invalid(text.into())
    }

    fn text(field: &str, value: &str, max: usize) -> Result<Option<String>, DashboardError> {
        if value.is_empty() {
            return Ok(None);
        }
        tidemark_domain::input::bounded_text(field, value, max).map_err(|e| invalid(e.message))?;
        Ok(Some(value.to_owned()))
    }

    /// The filters as the store reads them, refused in words (as `GET /v1/findings` refuses
    /// them) when a value is not one.
    pub fn inbox_query(
        f: &InboxFilter,
        cursor: Option<&str>,
        projects: &[(String, String)],
        now: i64,
    ) -> Result<InboxQuery, DashboardError> {
        let project = match text("project", &f.project, 255)? {
            None => None,
            Some(p) => {
                let id = projects
                    .iter()
                    .find(|(id, label)| *id == p || *label == p)
                    .map(|(id, _)| id.clone())
                    .ok_or_else(|| invalid(format!("No live project {p:?} in this account.")))?;
                tidemark_wire::ids::ProjectId::parse(&id)
            }
        };
        let lines = match text("branch", &f.branch, 255)? {
            None => Lines::Default,
            Some(b) if b == "*" => Lines::All,
            Some(b) => Lines::Named(b),
        };
        let severity = match f.severity.as_str() {
            "" => None,
            s => Some(
                Severity::parse(s)
                    .ok_or_else(|| invalid("severity is critical, high, medium or low"))?,
            ),
        };
        let state = match f.state.as_str() {
            "" => None,
            s => Some(
                FindingState::parse(s).ok_or_else(|| invalid("state is open, triaged or fixed"))?,
            ),
        };
        let triage = match f.triage.as_str() {
            "" => None,
            "none" => Some(TriageFilter::None),
            "lapsed" => Some(TriageFilter::Lapsed),
            s => Some(TriageFilter::State(TriageState::parse(s).ok_or_else(
                || invalid("triage is none, accepted_risk, false_positive, wont_fix or lapsed"),
            )?)),
        };
        let seen_before = match f.older_than_days.as_str() {
            "" => None,
            d => match d.parse::<i64>() {
                Ok(d) if (1..=3_650).contains(&d) => Some(now - d * DAY_MS),
                _ => {
                    return Err(invalid(
                        "older_than_days is a number of days from 1 to 3650",
                    ))
                }
            },
        };
        let after = match cursor {
            None | Some("") => None,
            Some(c) => Some(
                FindingsCursor::parse(c)
                    .ok_or_else(|| invalid("This page's address is not one the inbox made."))?,
            ),
        };
        Ok(InboxQuery {
            project,
            lines,
            framework: text("framework", &f.framework, 200)?,
            rule_id: text("rule_id", &f.rule_id, 255)?,
            cloud_account: text("cloud_account", &f.cloud_account, 255)?,
            severity,
            state,
            triage,
            seen_before,
            after,
            limit: INBOX_PAGE_SIZE,
        })
    }

    pub fn triage_words(f: &TrackedRow, now: i64) -> Option<String> {
        Some(crate::api::ssr::triage_sentence(
            f.triage_state.as_deref()?,
            f.triaged_by.as_deref(),
            f.triage_expires_at,
            f.triage_reason.as_deref(),
            now,
        ))
    }
}
