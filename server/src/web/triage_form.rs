//! The finding page's triage form, a plain post (the page ships no WASM): set a triage or
//! undo it, then back to the finding with `?triage=<code>` saying what happened. Members
//! triage what nobody has set aside; changing or undoing a triage that holds is an admin's
//! (`tidemark_domain::findings::may_triage`).

use axum::extract::RawForm;
use axum::extract::{Path, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::{Extension, Form};
use serde::Deserialize;
use tidemark_domain::access::Role;
use tidemark_domain::findings::TriageChange;
use tidemark_services::triage::{TriageEach, Triager};
use tidemark_services::ServiceError;
use tidemark_store::findings::find_tracked;
use tidemark_wire::findings::TriageState;
use tidemark_wire::ids::{FindingId, ProjectId, ScanId};

use crate::state::AppState;

#[derive(Debug, Deserialize)]
pub struct TriageForm {
    #[serde(default)]
    action: String,
    #[serde(default)]
    state: String,
    #[serde(default)]
    reason: String,
    #[serde(default)]
    expires: String,
}

fn refuse(status: StatusCode, message: &str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        message.to_owned(),
    )
        .into_response()
}

fn unavailable(err: impl Into<crate::http::error::ApiError>) -> Response {
    let err: crate::http::error::ApiError = err.into();
    let mut res = refuse(
        err.status(),
        "The triage could not be saved right now; nothing was changed. Try again shortly.",
    );
    if let Some(secs) = err.retry_after_secs() {
        res.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    res
}

pub async fn triage_finding(
    State(state): State<AppState>,
    viewer: Option<Extension<app::auth::Viewer>>,
    Path((project_id, finding_id)): Path<(String, String)>,
    Form(form): Form<TriageForm>,
) -> Response {
    let Some(Extension(viewer)) = viewer else {
        return refuse(StatusCode::UNAUTHORIZED, "Sign in first.");
    };
    let not_found = || refuse(StatusCode::NOT_FOUND, "No such finding in this account.");
    let (Some(project_id), Some(finding_id)) =
        (ProjectId::parse(&project_id), FindingId::parse(&finding_id))
    else {
        return not_found();
    };
    let page = format!("/projects/{project_id}/findings/{finding_id}");
    let back = |code: &str| Redirect::to(&format!("{page}?triage={code}")).into_response();
    let account = viewer.account_id.clone();
    let row = match find_tracked(&state.db, &account, &project_id, &finding_id).await {
        Ok(Some(row)) => row,
        Ok(None) => return not_found(),
        Err(err) => return unavailable(err),
    };
    let now = tidemark_domain::now_millis();
    let undo = match form.action.as_str() {
        "undo" => true,
        "set" => false,
        _ => return refuse(StatusCode::UNPROCESSABLE_ENTITY, "Unknown change."),
    };
    let role = role_of(&viewer);
    // Said before the form's fields are read: what a member may not change, they learn first.
    if !Triager::Person(role).may(&row, now, undo) {
        return back("forbidden");
    }
    let change = if undo {
        None
    } else {
        let Some(triage_state) = TriageState::parse(&form.state) else {
            return back("state");
        };
        match TriageChange::parse(triage_state, &form.reason, Some(&form.expires), now) {
            Ok(change) => Some(change),
            Err(e) if e.field == "expires_at" => return back("expiry"),
            Err(_) => return back("reason"),
        }
    };
    let done = tidemark_services::triage::set_one(
        &state.db,
        &account,
        &project_id,
        &finding_id,
        change,
        Triager::Person(role),
        &viewer.audit(),
    )
    .await;
    match done {
        Ok(_) => back(if undo { "undone" } else { "saved" }),
        Err(ServiceError::NotFound) => not_found(),
        Err(ServiceError::Conflict(_)) => back("forbidden"),
        Err(ServiceError::Invalid(_)) => back("reason"),
        Err(err @ (ServiceError::Store(_) | ServiceError::Internal(_))) => unavailable(err),
    }
}

/// A bulk form's triage: its state and the checked change, or the code its page says
/// (`state`, `expiry`, `reason`).
fn bulk_change(
    field: &std::collections::HashMap<String, String>,
) -> Result<(TriageState, TriageChange), &'static str> {
    let text = |name: &str| field.get(name).map(String::as_str).unwrap_or("");
    let now = tidemark_domain::now_millis();
    let triage_state = TriageState::parse(text("state")).ok_or("state")?;
    match TriageChange::parse(triage_state, text("reason"), Some(text("expires")), now) {
        Ok(change) => Ok((triage_state, change)),
        Err(e) if e.field == "expires_at" => Err("expiry"),
        Err(_) => Err("reason"),
    }
}

fn role_of(viewer: &app::auth::Viewer) -> Role {
    if viewer.is_admin {
        Role::Admin
    } else {
        Role::Member
    }
}

/// Where the scan page's form goes back to, and what it says there: `triage` is one of the
/// finding page's codes, `count` how many were triaged and `skipped` how many a member could
/// not replace. Numbers and fixed codes only, so an address cannot put words on the page.
fn back_to_scan(
    project_id: &ProjectId,
    scan_id: &ScanId,
    view: &str,
    code: &str,
    counts: Option<(usize, usize, Option<TriageState>)>,
) -> Response {
    let view = if view == "new" { "new" } else { "all" };
    let counts = counts
        .map(|(done, skipped, state)| {
            let state = state.map(|s| format!("&state={}", s.as_str()));
            format!(
                "&count={done}&skipped={skipped}{}",
                state.unwrap_or_default()
            )
        })
        .unwrap_or_default();
    Redirect::to(&format!(
        "/projects/{project_id}/scans/{scan_id}?view={view}&triage={code}{counts}"
    ))
    .into_response()
}

/// The scan page's form: the findings ticked on the page (`finding`, repeated), triaged with
/// one state, reason and expiry. The same rules as one at a time: a member sets aside what
/// nobody has (a finding whose triage holds is skipped and counted), an admin replaces;
/// every finding has its own history entry and audit event.
pub async fn triage_findings(
    State(state): State<AppState>,
    viewer: Option<Extension<app::auth::Viewer>>,
    Path(project_id): Path<String>,
    RawForm(body): RawForm,
) -> Response {
    let Some(Extension(viewer)) = viewer else {
        return refuse(StatusCode::UNAUTHORIZED, "Sign in first.");
    };
    let not_found = || refuse(StatusCode::NOT_FOUND, "No such project in this account.");
    let Some(project_id) = ProjectId::parse(&project_id) else {
        return not_found();
    };
    let (mut ids, mut field) = (Vec::new(), std::collections::HashMap::new());
    for (key, value) in url::form_urlencoded::parse(&body) {
        match key.as_ref() {
            "finding" => ids.push(value.into_owned()),
            "state" | "reason" | "expires" | "scan_id" | "view" => {
                field.insert(key.into_owned(), value.into_owned());
            }
            _ => {}
        }
    }
    let text = |name: &str| field.get(name).map(String::as_str).unwrap_or("");
    let Some(scan_id) = ScanId::parse(text("scan_id")) else {
        return refuse(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Which scan's page is this?",
        );
    };
    let back = |code: &str, counts| back_to_scan(&project_id, &scan_id, text("view"), code, counts);
    if ids.is_empty() {
        return back("none", None);
    }
    let Ok(ids) = tidemark_domain::findings::triage_batch(&ids) else {
        return refuse(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Those are not findings of this page.",
        );
    };
    let (triage_state, change) = match bulk_change(&field) {
        Ok(parsed) => parsed,
        Err(code) => return back(code, None),
    };
    let role = role_of(&viewer);
    let done = tidemark_services::triage::set_many(
        &state.db,
        &viewer.account_id,
        &project_id,
        ids,
        Some(change),
        Triager::Person(role),
        &viewer.audit(),
    )
    .await;
    match done {
        Ok(each) if each.iter().any(|(_, e)| matches!(e, TriageEach::NotFound)) => refuse(
            StatusCode::NOT_FOUND,
            "No such finding in this project; nothing was changed.",
        ),
        Ok(each) => {
            let skipped = each
                .iter()
                .filter(|(_, e)| matches!(e, TriageEach::Refused(_)))
                .count();
            let code = if skipped == each.len() {
                "forbidden"
            } else {
                "saved"
            };
            let done = each.len() - skipped;
            back(
                code,
                Some((done, skipped, (done > 0).then_some(triage_state))),
            )
        }
        Err(err) => unavailable(err),
    }
}

/// Where the inbox's form goes back to: the inbox address it was sent from (nothing else),
/// and what happened there, in fixed codes and numbers.
fn back_to_inbox(back: &str, code: &str, counts: Option<(usize, usize)>) -> Response {
    let page = if back.starts_with("/findings") && !back.starts_with("//") && !back.contains('\\') {
        back
    } else {
        "/findings"
    };
    let sep = if page.contains('?') { '&' } else { '?' };
    let counts = counts
        .map(|(done, skipped)| format!("&count={done}&skipped={skipped}"))
        .unwrap_or_default();
    // `triaged`, not `triage`: the inbox filters by `triage`.
    Redirect::to(&format!("{page}{sep}triaged={code}{counts}")).into_response()
}

/// The inbox's sticky bar: the findings ticked (`finding`, repeated; any of the account's
/// projects) set aside with one state, reason and expiry, each by the rules of one at a time
/// (a member sets aside what nobody has; a triage that holds is skipped and counted), with
/// its own history entry and audit event.
pub async fn triage_inbox(
    State(state): State<AppState>,
    viewer: Option<Extension<app::auth::Viewer>>,
    RawForm(body): RawForm,
) -> Response {
    let Some(Extension(viewer)) = viewer else {
        return refuse(StatusCode::UNAUTHORIZED, "Sign in first.");
    };
    let (mut ids, mut field) = (Vec::new(), std::collections::HashMap::new());
    for (key, value) in url::form_urlencoded::parse(&body) {
        match key.as_ref() {
            "finding" => ids.push(value.into_owned()),
            "state" | "reason" | "expires" | "back" => {
                field.insert(key.into_owned(), value.into_owned());
            }
            _ => {}
        }
    }
    let text = |name: &str| field.get(name).map(String::as_str).unwrap_or("");
    let back = |code: &str, counts| back_to_inbox(text("back"), code, counts);
    if ids.is_empty() {
        return back("none", None);
    }
    let Ok(ids) = tidemark_domain::findings::triage_batch(&ids) else {
        return refuse(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Those are not findings of this account (at most 100 at once).",
        );
    };
    let change = match bulk_change(&field) {
        Ok((_, change)) => change,
        Err(code) => return back(code, None),
    };
    let owners =
        match tidemark_services::findings::projects_of(&state.db, &viewer.account_id, &ids).await {
            Ok(owners) => owners,
            Err(err) => return unavailable(err),
        };
    if owners.len() != ids.len() {
        return refuse(
            StatusCode::NOT_FOUND,
            "No such finding in this account; nothing was changed.",
        );
    }
    let mut by_project: std::collections::BTreeMap<ProjectId, Vec<FindingId>> =
        std::collections::BTreeMap::new();
    for (finding, project) in owners {
        by_project.entry(project).or_default().push(finding);
    }
    let role = role_of(&viewer);
    let (mut done, mut skipped) = (0, 0);
    for (project_id, ids) in by_project {
        let each = tidemark_services::triage::set_many(
            &state.db,
            &viewer.account_id,
            &project_id,
            ids,
            Some(change.clone()),
            Triager::Person(role),
            &viewer.audit(),
        )
        .await;
        match each {
            Ok(each) => {
                let refused = each
                    .iter()
                    .filter(|(_, e)| matches!(e, TriageEach::Refused(_)))
                    .count();
                skipped += refused;
                done += each.len() - refused;
            }
            Err(err) => return unavailable(err),
        }
    }
    let code = if done == 0 { "forbidden" } else { "saved" };
    back(code, Some((done, skipped)))
}
