//! A secret made by a plain form (Rotate Key's new API key, a webhook endpoint's signing
//! secret) is shown once, on the page that answers that form: the Settings section the form
//! came from, rendered with the secret on it. Settings pages load no WASM, so the server
//! function cannot hand the secret to a script; and it must never travel in a URL, a cookie
//! or the database. So this layer, around the dashboard's routes, sees the server function
//! answer a plain form (leptos sends it back to its page with the value as the body), and
//! instead renders that page through the same routes with the secret in the request's
//! extensions (`app::model::ShownOnce`), answered `no-store`. A script's call (JSON asked for)
//! and every refusal pass through untouched.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::Response;
use http_body_util::BodyExt as _;
use leptos::server_fn::ServerFn as _;

use app::api::settings::RotateKeys;
use app::api::webhooks::{CreateWebhook, RotateWebhookSecret};
use app::model::{ShownOnce, WebhookSecretShown};

/// The server functions' answers are a short JSON value.
const MAX_ANSWER: usize = 16 * 1024;

/// Headers of the form's request that the page's rendering needs as well (who is asking, in
/// which language and encoding); the form's own body headers are not among them.
const CARRIED: [header::HeaderName; 5] = [
    header::HOST,
    header::COOKIE,
    header::ACCEPT,
    header::ACCEPT_LANGUAGE,
    header::USER_AGENT,
];

#[derive(Clone, Copy)]
enum Secret {
    ApiKey,
    WebhookSecret,
}

impl Secret {
    fn of_endpoint(path: &str) -> Option<Secret> {
        if path == RotateKeys::PATH {
            Some(Secret::ApiKey)
        } else if path == CreateWebhook::PATH || path == RotateWebhookSecret::PATH {
            Some(Secret::WebhookSecret)
        } else {
            None
        }
    }

    fn read(self, answer: &[u8]) -> Option<ShownOnce> {
        match self {
            Secret::ApiKey => serde_json::from_slice::<String>(answer)
                .ok()
                .map(ShownOnce::ApiKey),
            Secret::WebhookSecret => serde_json::from_slice::<WebhookSecretShown>(answer)
                .ok()
                .map(ShownOnce::WebhookSecret),
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
    Some(if query.is_empty() {
        referer.path().to_owned()
    } else {
        format!("{}?{}", referer.path(), query.join("&"))
    })
}

#[derive(Clone, Copy, Default)]
pub struct ShowSecretsOnceLayer;

impl<S> tower::Layer<S> for ShowSecretsOnceLayer {
    type Service = ShowSecretsOnce<S>;

    fn layer(&self, inner: S) -> Self::Service {
        ShowSecretsOnce { inner }
    }
}

#[derive(Clone)]
pub struct ShowSecretsOnce<S> {
    inner: S,
}

impl<S> tower::Service<Request> for ShowSecretsOnce<S>
where
    S: tower::Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        // The clone that was polled ready serves this request; the fresh one waits for the next.
        let fresh = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, fresh);
        let target = Secret::of_endpoint(req.uri().path()).zip(form_page(&req));
        let Some((secret, page)) = target else {
            return Box::pin(inner.call(req));
        };
        Box::pin(async move {
            let mut carried = axum::http::HeaderMap::new();
            for name in CARRIED {
                for value in req.headers().get_all(&name) {
                    carried.append(name.clone(), value.clone());
                }
            }
            let answer = inner.clone().call(req).await?;
            let made = answer.status() == StatusCode::FOUND
                && !answer
                    .headers()
                    .contains_key(leptos::server_fn::error::SERVER_FN_ERROR_HEADER);
            if !made {
                return Ok(answer);
            }
            let (parts, body) = answer.into_parts();
            let shown = match http_body_util::Limited::new(body, MAX_ANSWER)
                .collect()
                .await
            {
                Ok(collected) => secret.read(&collected.to_bytes()),
                Err(_) => None,
            };
            let Some(shown) = shown else {
                // Made, but its value unreadable: the page says so rather than hiding it.
                tracing::error!("a secret made by a form could not be read back to show it");
                return Ok(Response::builder()
                    .status(StatusCode::INTERNAL_SERVER_ERROR)
                    .header(header::CONTENT_TYPE, "text/plain; charset=utf-8")
                    .body(Body::from(
                        "The change was made, but its new secret could not be shown. Make another.",
                    ))
                    .unwrap_or_default());
            };
            let mut get = Request::new(Body::empty());
            *get.uri_mut() = match page.parse() {
                Ok(uri) => uri,
                Err(_) => return Ok(Response::from_parts(parts, Body::empty())),
            };
            *get.headers_mut() = carried;
            get.extensions_mut().insert(shown);
            let mut rendered = inner.call(get).await?;
            // Counted as the form's route, not the page's (`metrics::note_matched_path`).
            if let Some(route) = parts.extensions.get::<axum::extract::MatchedPath>() {
                rendered.extensions_mut().insert(route.clone());
            }
            // A session the form's answer renewed still reaches the browser.
            for cookie in parts.headers.get_all(header::SET_COOKIE) {
                rendered
                    .headers_mut()
                    .append(header::SET_COOKIE, cookie.clone());
            }
            rendered
                .headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            Ok(rendered)
        })
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
                "https://h/settings/keys?x=1&done=revoke_key&__path=%2Fapi%2Fa&__err=AAA&__sig=00"
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
    }
}
