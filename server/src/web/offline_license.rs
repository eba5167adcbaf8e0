//! Settings → Licence → "Download an offline licence file": the same signed file as
//! `tidemark-server license file`, for an admin of the account, as a download.

use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Form};
use serde::Deserialize;
use tidemark_domain::signing::MachineFingerprint;

use crate::http::error::ApiError;
use crate::state::AppState;

#[derive(Debug, Deserialize)]
pub struct OfflineFileForm {
    #[serde(default)]
    days: String,
    /// Empty: the file is bound to no machine.
    #[serde(default)]
    machine: String,
}

fn refuse(status: StatusCode, message: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        message,
    )
        .into_response()
}

/// A refusal the database caused (503 `database_unavailable`, 507 `storage_full`, or a 500),
/// in plain words with its `Retry-After`.
fn unavailable(err: ApiError) -> Response {
    let status = err.status();
    if status == StatusCode::INTERNAL_SERVER_ERROR {
        tracing::error!(error = %err, "offline licence file failed");
    }
    let mut res = refuse(
        status,
        "The service cannot issue the file right now. Try again shortly.".into(),
    );
    if let Some(secs) = err.retry_after_secs() {
        res.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    res
}

pub async fn download_offline_file(
    State(state): State<AppState>,
    viewer: Option<Extension<app::auth::Viewer>>,
    Form(form): Form<OfflineFileForm>,
) -> Response {
    let Some(Extension(viewer)) = viewer else {
        return refuse(StatusCode::UNAUTHORIZED, "Sign in first.".into());
    };
    if !viewer.is_admin {
        return refuse(
            StatusCode::FORBIDDEN,
            "Only an admin of this account can do that.".into(),
        );
    }
    let Ok(days) = form.days.trim().parse::<u32>() else {
        return refuse(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Days: a whole number from 1 to 400. Go back and try again.".into(),
        );
    };
    let machine = match form.machine.trim() {
        "" => None,
        text => match MachineFingerprint::parse(text) {
            Ok(m) => Some(m),
            Err(e) => {
                return refuse(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    format!("Machine fingerprint: {e}. Go back and try again."),
                )
            }
        },
    };
    let account_id = viewer.account_id.clone();
    let audit = viewer.audit();
    let signer = state.signer.clone();
    let base_url = state.config.http.base_url.clone();
    let made = state
        .db
        .detached(|db| async move {
            let license =
                tidemark_store::licenses::find_license_for_account(&db, &account_id).await?;
            Ok(match license {
                None => Err(anyhow::anyhow!("this account has no licence")),
                Some(l) => {
                    tidemark_services::licensing::offline_license_file(
                        &db, &signer, &base_url, &l.id, machine, days, &audit,
                    )
                    .await
                }
            })
        })
        .await;
    let file = match made {
        Ok(Ok(file)) => file,
        // The database away or full: said as the API says it, with Retry-After.
        Ok(Err(err)) if crate::telemetry::fault_in(&err).is_some() => {
            return unavailable(ApiError::internal(err))
        }
        Ok(Err(refusal)) => {
            return refuse(
                StatusCode::UNPROCESSABLE_ENTITY,
                format!("{refusal}. Go back and try again."),
            )
        }
        Err(err) => return unavailable(ApiError::from(err)),
    };
    let Ok(body) = serde_json::to_vec_pretty(&file) else {
        return refuse(
            StatusCode::INTERNAL_SERVER_ERROR,
            "Could not write the file.".into(),
        );
    };
    let mut res = body.into_response();
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    h.insert(
        header::CONTENT_DISPOSITION,
        HeaderValue::from_static("attachment; filename=\"tidemark-offline-licence.json\""),
    );
    res
}
