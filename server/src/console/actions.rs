//! `POST /console/licenses/{id}/actions/{kind}`: a staff member's action on a licence. The
//! first post answers a confirmation page naming exactly what will change; only its Confirm
//! (carrying a single-use token kept in the staff session) changes anything, and only if the
//! licence is still the version the person confirmed. Success goes back to the licence page
//! by a redirect, so a reload repeats nothing. Each change is audited by the use case under the
//! person's name.

use axum::extract::rejection::FormRejection;
use axum::extract::{Path, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use tidemark_domain::console::StaffRoles;
use tidemark_domain::license::License;
use tidemark_domain::license_actions::{ActionKind, LicenseAction};
use tidemark_domain::now_millis;
use tidemark_services::licensing::{self, Edited};
use tidemark_services::ServiceError;
use tower_sessions::Session;

use app::console::actions::{confirm_page, Confirmation};

use crate::state::AppState;

use super::render;
use super::staff::Staff;

/// Session key of the confirmations shown and not yet used.
const PENDING: &str = "confirmations";
/// A person has a handful of tabs open at most; older confirmations lapse.
const PENDING_KEPT: usize = 8;

/// What a confirmation token stands for: this action kind on this licence at this version.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, PartialEq)]
struct Pending {
    token: String,
    license_id: String,
    kind: String,
    version: i64,
}

fn licence_path(id: &str) -> String {
    format!("/console/licenses/{id}")
}

fn not_done(status: StatusCode, staff: &Staff, id: &str, text: &str) -> Response {
    let back = licence_path(id);
    let body = app::console::message("Not done", text, Some((&back, "Back to the licence")));
    render::page(status, "Not done", Some(staff), body)
}

pub async fn act_on_license(
    State(state): State<AppState>,
    staff: Staff,
    session: Session,
    Path((id, kind)): Path<(String, String)>,
    form: Result<Form<Vec<(String, String)>>, FormRejection>,
) -> Response {
    let Some(kind) = ActionKind::parse(&kind) else {
        return render::not_found();
    };
    if !staff.roles.may(kind.permission()) {
        return render::forbidden(&staff, &StaffRoles::who_may(kind.permission()));
    }
    let Ok(Form(form)) = form else {
        return not_done(
            StatusCode::BAD_REQUEST,
            &staff,
            &id,
            "The form could not be read; open the licence page and try again.",
        );
    };
    let action = match LicenseAction::parse(kind, &form) {
        Ok(action) => action,
        Err(why) => return not_done(StatusCode::UNPROCESSABLE_ENTITY, &staff, &id, &why),
    };
    let license = match licensing::find(&state.db, &id).await {
        Ok(license) => license,
        Err(err) => return super::service_error(err),
    };
    let now = now_millis();
    if let Some(why) = action.refusal(&license, now) {
        return not_done(StatusCode::CONFLICT, &staff, &id, &why);
    }
    if let Some(missing) = staff.roles.missing(&action.needed(&license, now)) {
        return render::forbidden(&staff, &StaffRoles::who_may(missing));
    }
    let token = form
        .iter()
        .find(|(k, _)| k == "confirm")
        .map(|(_, v)| v.clone());
    match token {
        None => ask_to_confirm(&session, &staff, &license, action, now).await,
        Some(token) => {
            let Some(version) = take_pending(&session, &token, &id, kind).await else {
                return not_done(
                    StatusCode::CONFLICT,
                    &staff,
                    &id,
                    "This confirmation was used already or has lapsed: nothing was changed. \
                     Look at the licence as it is now, and ask again if it still needs it.",
                );
            };
            perform(&state, &staff, &license, version, action).await
        }
    }
}

async fn ask_to_confirm(
    session: &Session,
    staff: &Staff,
    license: &License,
    action: LicenseAction,
    now: i64,
) -> Response {
    let token = tidemark_domain::ids::new_form_token();
    let mut pending: Vec<Pending> = session
        .get(PENDING)
        .await
        .ok()
        .flatten()
        .unwrap_or_default();
    pending.push(Pending {
        token: token.clone(),
        license_id: license.id.clone(),
        kind: action.kind().as_str().to_owned(),
        version: license.version,
    });
    let excess = pending.len().saturating_sub(PENDING_KEPT);
    pending.drain(..excess);
    if let Err(err) = session.insert(PENDING, pending).await {
        tidemark_store::fault::log_fault(tidemark_store::Fault::Unavailable, &err);
        return render::unavailable();
    }
    let kind = action.kind();
    let body = confirm_page(Confirmation {
        license_id: license.id.clone(),
        kind,
        sentence: action.describe(license, now),
        fields: action.fields(),
        token,
    });
    render::page(StatusCode::OK, kind.label(), Some(staff), body)
}

/// The licence version a confirmation was shown for, once: the token is spent by reading it.
async fn take_pending(session: &Session, token: &str, id: &str, kind: ActionKind) -> Option<i64> {
    let mut pending: Vec<Pending> = session.get(PENDING).await.ok().flatten()?;
    let at = pending
        .iter()
        .position(|p| p.token == token && p.license_id == id && p.kind == kind.as_str())?;
    let spent = pending.remove(at);
    session.insert(PENDING, pending).await.ok()?;
    Some(spent.version)
}

async fn perform(
    state: &AppState,
    staff: &Staff,
    license: &License,
    version: i64,
    action: LicenseAction,
) -> Response {
    let id = license.id.as_str();
    let kind = action.kind();
    let done =
        Redirect::to(&format!("{}?done={}", licence_path(id), kind.as_str())).into_response();
    if let Some(edit) = action.edit(license, now_millis()) {
        return match licensing::edit_license(&state.db, id, Some(version), edit, &staff.audit).await
        {
            Ok(Edited::Done(_)) => done,
            Ok(Edited::Stale(_)) => not_done(
                StatusCode::CONFLICT,
                staff,
                id,
                "The licence changed after you looked at it: nothing was changed. Look at it \
                 again and ask again if it still needs it.",
            ),
            Err(err) => failed(staff, id, err),
        };
    }
    match action {
        LicenseAction::Resend => match licensing::resend(&state.db, id, &staff.audit).await {
            Ok(()) => {
                state.mail_wakeup.notify_one();
                done
            }
            Err(err) => failed(staff, id, err),
        },
        LicenseAction::ReleaseSeat { machine_id } => {
            match tidemark_services::seats::release(&state.db, id, &machine_id, &staff.audit).await
            {
                Ok(()) => done,
                Err(ServiceError::NotFound) => not_done(
                    StatusCode::CONFLICT,
                    staff,
                    id,
                    "That machine holds no seat of this licence (any more): nothing was changed.",
                ),
                Err(err) => failed(staff, id, err),
            }
        }
        LicenseAction::OfflineFile { days, machine } => {
            offline_file(state, staff, id, days, machine).await
        }
        // Every other action is an edit, made above.
        _ => render::not_found(),
    }
}

fn failed(staff: &Staff, id: &str, err: ServiceError) -> Response {
    match err {
        ServiceError::Invalid(text) | ServiceError::Conflict(text) => {
            not_done(StatusCode::CONFLICT, staff, id, &text)
        }
        other => super::service_error(other),
    }
}

/// Signs the file and answers it as a download (the page stays on the confirmation; its
/// token is spent, so a second click makes no second file).
async fn offline_file(
    state: &AppState,
    staff: &Staff,
    id: &str,
    days: u32,
    machine: Option<tidemark_domain::signing::MachineFingerprint>,
) -> Response {
    let made = licensing::issue_offline_file(
        &state.db,
        state.signer.clone(),
        state.config.http.base_url.clone(),
        id.to_owned(),
        machine,
        days,
        staff.audit.clone(),
    )
    .await;
    let file = match made {
        Ok(Ok(file)) => file,
        Ok(Err(err)) => match crate::telemetry::fault_in(&err) {
            None => return not_done(StatusCode::CONFLICT, staff, id, &format!("{err:#}")),
            Some(fault) => {
                tidemark_store::fault::log_fault(fault, &format!("{err:#}"));
                return render::unavailable();
            }
        },
        Err(err) => return super::service_error(err),
    };
    let Ok(body) = serde_json::to_vec_pretty(&file) else {
        return render::unavailable();
    };
    let mut res = (StatusCode::OK, body).into_response();
    let headers = res.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let Ok(v) = HeaderValue::from_str(&format!(
        "attachment; filename=\"tidemark-offline-{id}.json\""
    )) {
        headers.insert(header::CONTENT_DISPOSITION, v);
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    res
}
