//! A scripted OpenID Connect provider for the refusal tests: real discovery, a real JWKS and
//! RS256 signatures, real PKCE checking, and ID tokens that can be made wrong on purpose
//! (audience, issuer, expiry, nonce, algorithm, unverified e-mail). A well-behaved provider
//! cannot be asked to misbehave, so the happy path is also tested against npm's
//! `oidc-provider` in the browser tests.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Form, Query, State};
use axum::response::{IntoResponse, Redirect};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine as _;
use openidconnect::core::{
    CoreIdToken, CoreIdTokenClaims, CoreJsonWebKeySet, CoreJwsSigningAlgorithm,
    CoreRsaPrivateSigningKey,
};
use openidconnect::{
    AccessToken, Audience, EmptyAdditionalClaims, EndUserEmail, IssuerUrl, JsonWebKeyId, Nonce,
    PrivateSigningKey as _, StandardClaims, SubjectIdentifier,
};
use serde_json::json;
use sha2::{Digest as _, Sha256};

pub const CLIENT_ID: &str = "tidemark-test";
pub const CLIENT_SECRET: &str = "test-client-secret-value";
const KEY_PEM: &str = include_str!("../fixtures/oidc-test-signing-key.pem");

/// How the next ID token is made.
#[derive(Debug, Clone)]
pub struct Script {
    pub subject: String,
    pub email: Option<String>,
    pub email_verified: Option<bool>,
    pub audience: String,
    /// `None`: the provider's own issuer.
    pub issuer: Option<String>,
    /// Seconds from now; negative for an expired token.
    pub expires_in: i64,
    /// `None`: echo the nonce of the authorization request.
    pub nonce: Option<String>,
    /// `None`: echo the state.
    pub state: Option<String>,
    pub alg: Alg,
    /// Answer the token request with a redirect to an endpoint that would answer it.
    pub redirect_token_request: bool,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Alg {
    Rs256,
    /// Unsigned (`alg: none`).
    None,
    /// HMAC-SHA256 keyed with the client secret.
    Hs256,
}

impl Script {
    pub fn user(email: &str) -> Self {
        Script {
            subject: format!("sub-{email}"),
            email: Some(email.to_owned()),
            email_verified: Some(true),
            audience: CLIENT_ID.to_owned(),
            issuer: None,
            expires_in: 300,
            nonce: None,
            state: None,
            alg: Alg::Rs256,
            redirect_token_request: false,
        }
    }
}

#[derive(Default)]
struct Pending {
    nonce: String,
    challenge: String,
}

struct Inner {
    issuer: String,
    script: Mutex<Script>,
    codes: Mutex<HashMap<String, Pending>>,
    /// Access tokens given out, to the subject and e-mail they were given for.
    tokens: Mutex<HashMap<String, (String, Option<String>)>>,
    /// Each subject's groups, as `/userinfo` lists them now.
    groups: Mutex<HashMap<String, Vec<String>>>,
}

#[derive(Clone)]
pub struct ScriptedProvider {
    inner: Arc<Inner>,
    server: Arc<tokio::task::JoinHandle<()>>,
}

impl ScriptedProvider {
    /// Serves on `localhost` (a different site from the app on 127.0.0.1).
    pub async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let issuer = format!(
            "http://localhost:{}",
            listener.local_addr().expect("addr").port()
        );
        let inner = Arc::new(Inner {
            issuer,
            script: Mutex::new(Script::user("nobody@example.com")),
            codes: Mutex::new(HashMap::new()),
            tokens: Mutex::new(HashMap::new()),
            groups: Mutex::new(HashMap::new()),
        });
        let app = Router::new()
            .route("/.well-known/openid-configuration", get(discovery))
            .route("/jwks", get(jwks))
            .route("/authorize", get(authorize))
            .route("/token", post(token))
            .route("/token-elsewhere", post(token))
            .route("/userinfo", get(userinfo))
            .with_state(inner.clone());
        let server = tokio::spawn(async move {
            axum::serve(listener, app).await.expect("provider");
        });
        ScriptedProvider {
            inner,
            server: Arc::new(server),
        }
    }

    pub fn issuer(&self) -> &str {
        &self.inner.issuer
    }

    pub fn script(&self, script: Script) {
        *self.inner.script.lock().expect("script") = script;
    }

    /// Puts `subject` in `groups` (replacing those it was in), as `/userinfo` answers from now.
    pub fn set_groups(&self, subject: &str, groups: &[&str]) {
        let groups = groups.iter().map(|g| (*g).to_owned()).collect();
        self.inner
            .groups
            .lock()
            .expect("groups")
            .insert(subject.to_owned(), groups);
    }

    /// Every access token given out stops working (the person signed out at the provider).
    pub fn revoke_tokens(&self) {
        self.inner.tokens.lock().expect("tokens").clear();
    }

    /// How many `/userinfo` answers the provider could give now (tokens alive).
    pub fn live_tokens(&self) -> usize {
        self.inner.tokens.lock().expect("tokens").len()
    }

    /// Server settings that make this provider the console's, with `roles` as the map.
    pub fn console_env(&self, roles: &str) -> Vec<(&'static str, String)> {
        vec![
            ("TIDEMARK_CONSOLE_OIDC_ISSUER", self.issuer().to_owned()),
            ("TIDEMARK_CONSOLE_OIDC_CLIENT_ID", CLIENT_ID.to_owned()),
            (
                "TIDEMARK_CONSOLE_OIDC_CLIENT_SECRET",
                CLIENT_SECRET.to_owned(),
            ),
            ("TIDEMARK_CONSOLE_ROLES", roles.to_owned()),
        ]
    }

    /// Server settings that point the app at this provider.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("TIDEMARK_OIDC_ISSUER", self.issuer().to_owned()),
            ("TIDEMARK_OIDC_CLIENT_ID", CLIENT_ID.to_owned()),
            ("TIDEMARK_OIDC_CLIENT_SECRET", CLIENT_SECRET.to_owned()),
        ]
    }
}

impl Drop for ScriptedProvider {
    fn drop(&mut self) {
        if Arc::strong_count(&self.server) == 1 {
            self.server.abort();
        }
    }
}

fn signing_key() -> CoreRsaPrivateSigningKey {
    CoreRsaPrivateSigningKey::from_pem(KEY_PEM, Some(JsonWebKeyId::new("test-key".into())))
        .expect("test key")
}

async fn discovery(State(inner): State<Arc<Inner>>) -> impl IntoResponse {
    let iss = &inner.issuer;
    Json(json!({
        "issuer": iss,
        "authorization_endpoint": format!("{iss}/authorize"),
        "token_endpoint": format!("{iss}/token"),
        "jwks_uri": format!("{iss}/jwks"),
        "userinfo_endpoint": format!("{iss}/userinfo"),
        "response_types_supported": ["code"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"],
        "code_challenge_methods_supported": ["S256"],
    }))
}

async fn jwks() -> impl IntoResponse {
    Json(CoreJsonWebKeySet::new(vec![
        signing_key().as_verification_key()
    ]))
}

async fn authorize(
    State(inner): State<Arc<Inner>>,
    Query(q): Query<HashMap<String, String>>,
) -> impl IntoResponse {
    assert_eq!(
        q.get("code_challenge_method").map(String::as_str),
        Some("S256"),
        "PKCE S256"
    );
    assert_eq!(q.get("client_id").map(String::as_str), Some(CLIENT_ID));
    let code = format!("code-{}", rand::random::<u64>());
    inner.codes.lock().expect("codes").insert(
        code.clone(),
        Pending {
            nonce: q.get("nonce").cloned().unwrap_or_default(),
            challenge: q.get("code_challenge").cloned().unwrap_or_default(),
        },
    );
    let script = inner.script.lock().expect("script").clone();
    let state = script
        .state
        .unwrap_or_else(|| q.get("state").cloned().unwrap_or_default());
    let redirect = q.get("redirect_uri").cloned().unwrap_or_default();
    Redirect::to(&format!("{redirect}?code={code}&state={state}"))
}

async fn token(
    State(inner): State<Arc<Inner>>,
    uri: axum::http::Uri,
    Form(form): Form<HashMap<String, String>>,
) -> axum::response::Response {
    let redirect = inner.script.lock().expect("script").redirect_token_request;
    if redirect && uri.path() == "/token" {
        // 307 keeps the method and body: a client that follows it would hand the code and
        // client secret to wherever it points.
        return (
            axum::http::StatusCode::TEMPORARY_REDIRECT,
            [(
                axum::http::header::LOCATION,
                format!("{}/token-elsewhere", inner.issuer),
            )],
        )
            .into_response();
    }
    let code = form.get("code").cloned().unwrap_or_default();
    let Some(pending) = inner.codes.lock().expect("codes").remove(&code) else {
        return (
            axum::http::StatusCode::BAD_REQUEST,
            Json(json!({"error": "invalid_grant"})),
        )
            .into_response();
    };
    // A real provider checks the PKCE verifier; so does this one.
    let verifier = form.get("code_verifier").cloned().unwrap_or_default();
    let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(Sha256::digest(verifier.as_bytes()));
    if challenge != pending.challenge {
        return (
            axum::http::StatusCode::BAD_REQUEST,
            Json(json!({"error": "invalid_grant"})),
        )
            .into_response();
    }
    let script = inner.script.lock().expect("script").clone();
    let now = chrono::Utc::now();
    let mut standard = StandardClaims::new(SubjectIdentifier::new(script.subject.clone()));
    if let Some(email) = &script.email {
        standard = standard.set_email(Some(EndUserEmail::new(email.clone())));
    }
    standard = standard.set_email_verified(script.email_verified);
    let claims = CoreIdTokenClaims::new(
        IssuerUrl::new(
            script
                .issuer
                .clone()
                .unwrap_or_else(|| inner.issuer.clone()),
        )
        .expect("iss"),
        vec![Audience::new(script.audience.clone())],
        now + chrono::Duration::seconds(script.expires_in),
        now - chrono::Duration::seconds(5),
        standard,
        EmptyAdditionalClaims {},
    )
    .set_nonce(Some(Nonce::new(
        script.nonce.clone().unwrap_or(pending.nonce),
    )));
    let access = AccessToken::new(format!("at-{}", rand::random::<u64>()));
    inner.tokens.lock().expect("tokens").insert(
        access.secret().clone(),
        (script.subject.clone(), script.email.clone()),
    );
    let id_token = match script.alg {
        Alg::Rs256 => CoreIdToken::new(
            claims,
            &signing_key(),
            CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha256,
            Some(&access),
            None,
        )
        .expect("sign")
        .to_string(),
        Alg::None | Alg::Hs256 => {
            let b64 = |v: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v);
            let alg = if script.alg == Alg::None {
                "none"
            } else {
                "HS256"
            };
            let header = b64(json!({"alg": alg, "typ": "JWT"}).to_string().as_bytes());
            let body = b64(serde_json::to_string(&claims).expect("claims").as_bytes());
            let signing_input = format!("{header}.{body}");
            let signature = if script.alg == Alg::None {
                String::new()
            } else {
                use hmac::Mac as _;
                let mut mac =
                    hmac::Hmac::<Sha256>::new_from_slice(CLIENT_SECRET.as_bytes()).expect("hmac");
                mac.update(signing_input.as_bytes());
                b64(&mac.finalize().into_bytes())
            };
            format!("{signing_input}.{signature}")
        }
    };
    Json(json!({
        "access_token": access.secret(),
        "token_type": "Bearer",
        "expires_in": 300,
        "id_token": id_token,
    }))
    .into_response()
}

/// `GET /userinfo`: who a live access token belongs to, with their groups now.
async fn userinfo(
    State(inner): State<Arc<Inner>>,
    headers: axum::http::HeaderMap,
) -> axum::response::Response {
    let token = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default();
    let Some((subject, email)) = inner.tokens.lock().expect("tokens").get(token).cloned() else {
        return (
            axum::http::StatusCode::UNAUTHORIZED,
            [("www-authenticate", "Bearer error=\"invalid_token\"")],
        )
            .into_response();
    };
    let groups = inner
        .groups
        .lock()
        .expect("groups")
        .get(&subject)
        .cloned()
        .unwrap_or_default();
    Json(json!({"sub": subject, "email": email, "email_verified": true, "groups": groups}))
        .into_response()
}
