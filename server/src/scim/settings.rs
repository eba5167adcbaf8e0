//! Settings → Provisioning's changes, as plain form posts (the section ships no WASM): a new
//! SCIM token (shown once, on the page that answers the post), revoking it, and marking a
//! provisioned group as the admins' one. Everything else comes back to the section with a
//! notice code in the query (never a secret).

use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Redirect, Response};
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
    let err = crate::api::ApiError::from(err);
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
            let token = ScimToken::generate();
            let (hash, prefix) = (token.hash(), token.display_prefix());
            let made = state
                .db
                .detached(|db| async move {
                    tidemark_store::scim::set_token(&db, &account, &hash, &prefix, &audit).await
                })
                .await;
            return match made {
                Ok(()) => new_token_page(&token),
                Err(e) => unavailable(e),
            };
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

/// The one time a token is shown: a page of its own, never stored or redirected with. Its
/// policy allows the site's stylesheet and nothing else.
fn new_token_page(token: &ScimToken) -> Response {
    let page = Html(format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>New SCIM token · Tidemark</title>\
         <link rel=\"stylesheet\" href=\"/pkg/tidemark.css\"></head><body><main>\
         <section class=\"card\" aria-labelledby=\"token-heading\">\
         <h1 id=\"token-heading\">Your new SCIM token</h1>\
         <div class=\"notice new-key\" role=\"alert\">\
         <p><strong>Shown once.</strong> Paste it into your identity provider's provisioning \
         settings (the secret token, or the Authorization header as <code>Bearer</code> and the \
         token) now; any previous token stopped working.</p>\
         <p><code data-testid=\"new-scim-token\">{}</code></p></div>\
         <p><a href=\"{SECTION}\">Back to Settings → Provisioning</a></p>\
         </section></main></body></html>",
        token.expose()
    ));
    (
        [(
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; \
             frame-ancestors 'none'; base-uri 'none'",
        )],
        page,
    )
        .into_response()
}
