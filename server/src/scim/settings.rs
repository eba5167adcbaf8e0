//! Settings → Provisioning's changes, as plain form posts (the section ships no WASM): a new
//! SCIM token (shown once, on the section its answer redirects to: `http::shown_once`),
//! revoking it, and marking a provisioned group as the admins' one. Everything else comes back
//! to the section with a notice code in the query (never a secret).

use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::{Extension, Form};
use serde::Deserialize;
use tidemark_domain::secrets::ScimToken;
use tidemark_store::scim::Refusal;

use crate::state::AppState;
use app::model::ProvisioningAction;

const SECTION: &str = "/settings/provisioning";

#[derive(Debug, Deserialize)]
pub struct ChangeForm {
    #[serde(default)]
    action: String,
    #[serde(default)]
    group_id: String,
    /// The form's one-time token (`tidemark_domain::handover`).
    #[serde(default)]
    once: String,
}

fn refuse(status: StatusCode, message: &str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        message.to_owned(),
    )
        .into_response()
}

fn back(notice: &str) -> Response {
    Redirect::to(&format!("{SECTION}?{notice}")).into_response()
}

fn unavailable(err: tidemark_store::StoreError) -> Response {
    let err = crate::http::error::ApiError::from(err);
    let mut res = refuse(
        err.status(),
        "The change could not be made right now; nothing was changed. Try again shortly.",
    );
    if let Some(secs) = err.retry_after_secs() {
        res.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    res
}

pub async fn change_provisioning(
    State(state): State<AppState>,
    viewer: Option<Extension<app::auth::Viewer>>,
    Form(form): Form<ChangeForm>,
) -> Response {
    let Some(Extension(viewer)) = viewer else {
        return refuse(StatusCode::UNAUTHORIZED, "Sign in first.");
    };
    if !viewer.is_admin {
        return refuse(
            StatusCode::FORBIDDEN,
            "Only an admin of this account can do that.",
        );
    }
    let Some(action) = ProvisioningAction::parse(&form.action) else {
        return refuse(StatusCode::UNPROCESSABLE_ENTITY, "Unknown change.");
    };
    let (account, audit) = (viewer.account_id.clone(), viewer.audit());
    let admin = match action {
        ProvisioningAction::CreateToken => {
            return create_token(&state, &viewer, &form.once).await;
        }
        ProvisioningAction::RevokeToken => {
            let revoked = state
                .db
                .detached(|db| async move {
                    tidemark_store::scim::revoke_token(&db, &account, &audit).await
                })
                .await;
            return match revoked {
                Ok(true) => back("done=revoked"),
                Ok(false) => back("refused=not_found"),
                Err(e) => unavailable(e),
            };
        }
        ProvisioningAction::GiveAdmin => true,
        ProvisioningAction::StopAdmin => false,
    };
    let group = form.group_id;
    let marked = state
        .db
        .detached(|db| async move {
            tidemark_store::scim::set_group_admin(&db, &account, &group, admin, &audit).await
        })
        .await;
    match marked {
        Ok(Ok(())) => back("done=saved"),
        Ok(Err(Refusal::LastAdmin(_))) => back("refused=last_admin"),
        Ok(Err(_)) => back("refused=not_found"),
        Err(e) => unavailable(e),
    }
}

/// A new token, made once however often its form is sent, and handed to the section the
/// answer redirects to (post/redirect/get): a reload of that page shows it no more.
async fn create_token(state: &AppState, viewer: &app::auth::Viewer, once: &str) -> Response {
    use crate::http::shown_once::{begin, end, made_but_not_shown, see_other, Secret};
    use tidemark_domain::handover;
    let token = handover::parse_token(once)
        .map(str::to_owned)
        .unwrap_or_else(handover::new_token);
    let location = handover::page_showing(SECTION, &token);
    let id = handover::handover_id(&token);
    match begin(state, viewer, &id, Secret::ScimToken).await {
        Ok(tidemark_store::handovers::Claim::New) => {}
        Ok(tidemark_store::handovers::Claim::Repeat) => return see_other(&location),
        Err(()) => return crate::http::shown_once::unavailable(),
    }
    let scim = ScimToken::generate();
    let (hash, prefix) = (scim.hash(), scim.display_prefix());
    let (account, audit) = (viewer.account_id.clone(), viewer.audit());
    let made = state
        .db
        .detached(|db| async move {
            tidemark_store::scim::set_token(&db, &account, &hash, &prefix, &audit).await
        })
        .await;
    match made {
        Ok(()) => {
            let answer = serde_json::to_vec(scim.expose()).unwrap_or_default();
            if end(state, &id, Some(state.handovers.seal(&answer))).await {
                see_other(&location)
            } else {
                made_but_not_shown()
            }
        }
        Err(e) => {
            end(state, &id, None).await;
            unavailable(e)
        }
    }
}
