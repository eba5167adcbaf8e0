//! A secret made by a plain form (Rotate Key's new API key, a webhook endpoint's signing
//! secret, a SCIM token) is shown once, on a page a reload cannot repeat: post/redirect/get.
//! The form carries a one-time token (`once`); its action's secret is sealed under the master
//! key and kept under a hash of that token (`tidemark_store::handovers`), and the form is
//! answered `303 See Other` to its page with `shown=<token>`. That page takes the secret
//! (deleting it) and renders it, answered `no-store`; loading it again says it was shown once.
//! The same form sent twice finds its handover claimed and is sent to the same page: it acts
//! once. The secret never travels in a URL or a cookie, and the database holds it sealed,
//! for minutes at most. A script's call (JSON asked for) and every refusal pass through.

use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use axum::Extension;
use leptos::server_fn::ServerFn as _;
use tidemark_domain::handover::{self, HANDOVER_TTL_MS};
use tidemark_store::handovers::{self, Claim, Owner, Taken};

use app::api::settings::{CreateKey, RotateKeys};
use app::api::webhooks::{CreateWebhook, RotateWebhookSecret};
use app::auth::Viewer;
use app::model::{ShownOnce, WebhookSecretShown};

use crate::state::AppState;

/// A form's body is a few fields.
const MAX_FORM: usize = 64 * 1024;
/// The server functions' answers are a short JSON value.
const MAX_ANSWER: usize = 16 * 1024;
/// How long a page waits for a form's action still under way (a repeated form's redirect
/// can arrive before the first sending's action ends).
const PENDING_WAIT: Duration = Duration::from_secs(5);

/// The kinds of secret handed over, as the store names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Secret {
    ApiKey,
    NamedApiKey,
    WebhookSecret,
    ScimToken,
}

impl Secret {
    fn of_endpoint(path: &str) -> Option<Secret> {
        if path == RotateKeys::PATH {
            Some(Secret::ApiKey)
        } else if path == CreateKey::PATH {
            Some(Secret::NamedApiKey)
        } else if path == CreateWebhook::PATH || path == RotateWebhookSecret::PATH {
            Some(Secret::WebhookSecret)
        } else {
            None
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Secret::ApiKey => "api_key",
            Secret::NamedApiKey => "named_api_key",
            Secret::WebhookSecret => "webhook_secret",
            Secret::ScimToken => "scim_token",
        }
    }

    fn parse(kind: &str) -> Option<Secret> {
        [
            Secret::ApiKey,
            Secret::NamedApiKey,
            Secret::WebhookSecret,
            Secret::ScimToken,
        ]
        .into_iter()
        .find(|s| s.as_str() == kind)
    }

    /// The secret in the JSON its maker answered with.
    fn read(self, answer: &[u8]) -> Option<ShownOnce> {
        match self {
            Secret::ApiKey => serde_json::from_slice::<String>(answer)
                .ok()
                .map(ShownOnce::ApiKey),
            Secret::NamedApiKey => serde_json::from_slice::<String>(answer)
                .ok()
                .map(ShownOnce::NamedApiKey),
            Secret::WebhookSecret => serde_json::from_slice::<WebhookSecretShown>(answer)
                .ok()
                .map(ShownOnce::WebhookSecret),
            Secret::ScimToken => serde_json::from_slice::<String>(answer)
                .ok()
                .map(ShownOnce::ScimToken),
        }
    }
}

/// The page a plain form was sent from (its path and query, without an earlier form's
/// outcome), when `req` is such a form: a POST that asks for HTML and names its page.
pub fn form_page(req: &Request) -> Option<String> {
    if req.method() != Method::POST {
        return None;
    }
    let wants_html = req
        .headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("text/html"));
    let referer = req
        .headers()
        .get(header::REFERER)?
        .to_str()
        .ok()?
        .parse::<axum::http::Uri>()
        .ok()?;
    if !wants_html || !referer.path().starts_with('/') {
        return None;
    }
    let query = tidemark_domain::form_seal::without_outcome(referer.query().unwrap_or(""));
    let query: Vec<&str> = query
        .into_iter()
        .filter(|p| p.split('=').next() != Some(handover::SHOWN_PARAM))
        .collect();
    Some(if query.is_empty() {
        referer.path().to_owned()
    } else {
        format!("{}?{}", referer.path(), query.join("&"))
    })
}

/// The claim could not be made (the database did not answer): nothing was changed.
pub fn unavailable() -> Response {
    let mut res = (
        StatusCode::SERVICE_UNAVAILABLE,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        "The change could not be made right now; nothing was changed. Try again shortly.",
    )
        .into_response();
    res.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
    res
}

/// Around the dashboard's routes, inside the session and the viewer: forms that make a
/// secret are answered by a redirect, and the page named by one takes its secret.
pub async fn hand_over_secrets(
    State(state): State<AppState>,
    viewer: Option<Extension<Viewer>>,
    req: Request,
    next: Next,
) -> Response {
    let Some(Extension(viewer)) = viewer else {
        return next.run(req).await;
    };
    if req.method() == Method::GET {
        let token = req
            .uri()
            .query()
            .and_then(handover::shown_in)
            .map(str::to_owned);
        return match token {
            Some(token) => show(&state, &viewer, &token, req, next).await,
            None => next.run(req).await,
        };
    }
    match Secret::of_endpoint(req.uri().path()).zip(form_page(&req)) {
        Some((secret, page)) => make(&state, &viewer, secret, &page, req, next).await,
        None => next.run(req).await,
    }
}

/// What a form sent beside its own fields: its one-time token, and the rest of the body.
fn split_token(body: &[u8]) -> (Option<String>, Vec<u8>) {
    let mut token = None;
    let mut rest = url::form_urlencoded::Serializer::new(String::new());
    for (name, value) in url::form_urlencoded::parse(body) {
        if name == handover::FORM_FIELD {
            token = handover::parse_token(&value).map(str::to_owned);
        } else {
            rest.append_pair(&name, &value);
        }
    }
    (token, rest.finish().into_bytes())
}

/// Claims the form's handover; runs its action the first time only.
async fn make(
    state: &AppState,
    viewer: &Viewer,
    secret: Secret,
    page: &str,
    req: Request,
    next: Next,
) -> Response {
    let (parts, body) = req.into_parts();
    let Ok(body) = axum::body::to_bytes(body, MAX_FORM).await else {
        return StatusCode::PAYLOAD_TOO_LARGE.into_response();
    };
    // A form without a token (an old page) still gets a page a reload cannot repeat.
    let (token, rest) = split_token(&body);
    let token = token.unwrap_or_else(handover::new_token);
    let location = handover::page_showing(page, &token);
    let id = handover::handover_id(&token);
    match begin(state, viewer, &id, secret).await {
        Ok(Claim::New) => {}
        Ok(Claim::Repeat) => return see_other(&location),
        Err(()) => return unavailable(),
    }
    let mut req = Request::from_parts(parts, Body::from(rest));
    req.headers_mut().remove(header::CONTENT_LENGTH);
    let answer = next.run(req).await;
    let made = answer.status() == StatusCode::FOUND
        && !answer
            .headers()
            .contains_key(leptos::server_fn::error::SERVER_FN_ERROR_HEADER);
    if !made {
        end(state, &id, None).await;
        return answer;
    }
    let (answer_parts, body) = answer.into_parts();
    let answer_body = axum::body::to_bytes(body, MAX_ANSWER).await.ok();
    let Some(answer_body) = answer_body.filter(|b| secret.read(b).is_some()) else {
        tracing::error!("a secret made by a form could not be read back to show it");
        end(state, &id, None).await;
        return made_but_not_shown();
    };
    if !end(state, &id, Some(state.handovers.seal(&answer_body))).await {
        return made_but_not_shown();
    }
    let mut res = see_other(&location);
    // A session the form's answer renewed still reaches the browser.
    for cookie in answer_parts.headers.get_all(header::SET_COOKIE) {
        res.headers_mut().append(header::SET_COOKIE, cookie.clone());
    }
    res
}

/// Claims the handover `id` for `viewer` (`Err` while the database cannot answer).
pub async fn begin(
    state: &AppState,
    viewer: &Viewer,
    id: &str,
    secret: Secret,
) -> Result<Claim, ()> {
    let (id, account, user) = (
        id.to_owned(),
        viewer.account_id.clone(),
        viewer.user_id.clone(),
    );
    let now = tidemark_domain::now_millis();
    state
        .db
        .detached(|db| async move {
            let owner = owner_of(&account, &user);
            handovers::claim(&db, &id, owner, secret.as_str(), now, HANDOVER_TTL_MS).await
        })
        .await
        .map_err(|e| tracing::warn!(error = %e, "could not claim a form's handover"))
}

/// Made, but its secret could not be kept for its page: the answer says so rather than
/// sending the member to a page that would say it was shown.
pub fn made_but_not_shown() -> Response {
    (
        StatusCode::INTERNAL_SERVER_ERROR,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        "The change was made, but its new secret could not be shown. Make another.",
    )
        .into_response()
}

/// Fills the handover `id` with the sealed secret, or lets the claim go when nothing was made.
/// Whether it was kept.
pub async fn end(state: &AppState, id: &str, sealed: Option<String>) -> bool {
    let id = id.to_owned();
    let done = state
        .db
        .detached(|db| async move {
            match sealed {
                Some(sealed) => handovers::fill(&db, &id, &sealed).await,
                None => handovers::release(&db, &id).await,
            }
        })
        .await;
    if let Err(e) = &done {
        tracing::warn!(error = %e, "could not keep a form's secret for its page");
    }
    done.is_ok()
}

pub fn see_other(location: &str) -> Response {
    Redirect::to(location).into_response()
}

/// The page named by a redirect: its secret this once, then never again.
async fn show(
    state: &AppState,
    viewer: &Viewer,
    token: &str,
    mut req: Request,
    next: Next,
) -> Response {
    let id = handover::handover_id(token);
    let deadline = tokio::time::Instant::now() + PENDING_WAIT;
    let shown = loop {
        let (id, account, user) = (
            id.clone(),
            viewer.account_id.clone(),
            viewer.user_id.clone(),
        );
        let now = tidemark_domain::now_millis();
        let taken = state
            .db
            .detached(|db| async move {
                handovers::take(&db, &id, owner_of(&account, &user), now).await
            })
            .await;
        match taken {
            Ok(Taken::Secret { kind, sealed }) => {
                break Secret::parse(&kind)
                    .zip(state.handovers.open(&sealed).ok())
                    .and_then(|(secret, answer)| secret.read(&answer))
                    .unwrap_or(ShownOnce::Gone);
            }
            Ok(Taken::Pending) if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Ok(_) => break ShownOnce::Gone,
            Err(e) => {
                tracing::warn!(error = %e, "could not read a form's secret for its page");
                return unavailable();
            }
        }
    };
    req.extensions_mut().insert(shown);
    let mut res = next.run(req).await;
    res.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    res
}

fn owner_of<'a>(account_id: &'a tidemark_store::AccountId, user_id: &'a str) -> Owner<'a> {
    Owner {
        account_id,
        user_id,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(referer: &str, accept: &str) -> Request {
        Request::builder()
            .method(Method::POST)
            .uri(RotateKeys::PATH)
            .header(header::REFERER, referer)
            .header(header::ACCEPT, accept)
            .body(Body::empty())
            .unwrap()
    }

    #[test]
    fn only_a_plain_form_names_its_page_and_earlier_outcomes_are_dropped() {
        let page = |r: &str| form_page(&form(r, "text/html,*/*"));
        assert_eq!(
            page("http://h/settings/keys").as_deref(),
            Some("/settings/keys")
        );
        assert_eq!(
            page(
                "https://h/settings/keys?x=1&done=revoke_key&__path=%2Fapi%2Fa&__err=AAA&__sig=00&shown=abc"
            )
            .as_deref(),
            Some("/settings/keys?x=1")
        );
        assert_eq!(form_page(&form("http://h/settings/keys", "*/*")), None);
        assert_eq!(page("not a url"), None);
    }

    #[test]
    fn secrets_are_read_from_the_answers_they_come_in() {
        assert_eq!(
            Secret::ApiKey.read(br#""svc_api_x""#),
            Some(ShownOnce::ApiKey("svc_api_x".into()))
        );
        assert_eq!(Secret::ApiKey.read(b"{}"), None);
        let hook = br#"{"webhook_id":"whk_1","secret":"whsec_2"}"#;
        assert!(matches!(
            Secret::WebhookSecret.read(hook),
            Some(ShownOnce::WebhookSecret(WebhookSecretShown { ref secret, .. })) if secret == "whsec_2"
        ));
        for s in [
            Secret::ApiKey,
            Secret::NamedApiKey,
            Secret::WebhookSecret,
            Secret::ScimToken,
        ] {
            assert_eq!(Secret::parse(s.as_str()), Some(s));
        }
    }

    #[test]
    fn the_token_is_taken_out_of_the_form_and_the_rest_kept() {
        let token = handover::new_token();
        let (found, rest) =
            split_token(format!("url=https%3A%2F%2Fa&once={token}&events=x").as_bytes());
        assert_eq!(found.as_deref(), Some(token.as_str()));
        assert_eq!(rest, b"url=https%3A%2F%2Fa&events=x");
        let (found, rest) = split_token(b"once=bad&a=1");
        assert_eq!((found, rest), (None, b"a=1".to_vec()));
    }
}
