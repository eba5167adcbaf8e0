//! A local CI token issuer on loopback, shaped like GitHub Actions' (Enterprise Server form,
//! `http://127.0.0.1:PORT/_services/token`) or GitLab's (the instance URL): real discovery, a
//! real JWKS that can be rotated mid-test, RS256 and ES256 signatures, tokens with the claims
//! GitHub and GitLab document, and a fake of GitHub's job token endpoint
//! (`ACTIONS_ID_TOKEN_REQUEST_URL`) that mints one per request for the audience asked.

#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};
use base64::Engine as _;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{json, Value};

pub const RSA_1: &str = "rsa-1";
pub const RSA_2: &str = "rsa-2";
pub const EC_1: &str = "ec-1";
/// The bearer token the fake job token endpoint expects (`ACTIONS_ID_TOKEN_REQUEST_TOKEN`).
pub const REQUEST_TOKEN: &str = "test-actions-request-token";

const SHA: &str = "a3f1c9e0b7d24c8e9f1a2b3c4d5e6f708192a3b4";

fn fixture(name: &str) -> String {
    let path = format!(
        "{}/tests/fixtures/ci_issuer/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    GitHub,
    GitLab,
}

struct Shared {
    issuer: String,
    published: Mutex<Vec<&'static str>>,
    jwks_fetches: AtomicUsize,
    /// Claims the fake job token endpoint puts in each token it mints (beside `aud`).
    job_claims: Mutex<Value>,
}

pub struct CiIssuer {
    pub issuer: String,
    pub shape: Shape,
    shared: Arc<Shared>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for CiIssuer {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl CiIssuer {
    pub async fn start(shape: Shape) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        Self::start_on(shape, listener, &base).await
    }

    /// Serves on `listener`, known to its tokens and discovery as `base` (a TLS proxy in
    /// front of it, say).
    pub async fn start_on(shape: Shape, listener: tokio::net::TcpListener, base: &str) -> Self {
        let prefix = match shape {
            Shape::GitHub => "/_services/token",
            Shape::GitLab => "",
        };
        let issuer = format!("{base}{prefix}");
        let shared = Arc::new(Shared {
            issuer: issuer.clone(),
            published: Mutex::new(vec![RSA_1, EC_1]),
            jwks_fetches: AtomicUsize::new(0),
            job_claims: Mutex::new(Value::Null),
        });
        let app = Router::new()
            .route(
                &format!("{prefix}/.well-known/openid-configuration"),
                get(discovery),
            )
            .route(&format!("{prefix}/.well-known/jwks"), get(jwks))
            .route("/_apis/token", get(job_token))
            .with_state(shared.clone());
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        CiIssuer {
            issuer,
            shape,
            shared,
            server,
        }
    }

    /// Publishes exactly these keys from now on (a rotation).
    pub fn publish(&self, kids: &[&'static str]) {
        *self.shared.published.lock().unwrap() = kids.to_vec();
    }

    pub fn jwks_fetches(&self) -> usize {
        self.shared.jwks_fetches.load(Ordering::SeqCst)
    }

    /// GitHub Actions' claims for a push to `main` of `acme/api` (owner id 1001, repository
    /// id 2002) by workflow `ci.yml`, or GitLab's for project `acme/api` (namespace 72,
    /// project 20) on `main` in environment `production`.
    pub fn claims(&self, audience: &str) -> Value {
        let now = chrono::Utc::now().timestamp();
        let jti = uuid::Uuid::new_v4().to_string();
        match self.shape {
            Shape::GitHub => json!({
                "jti": jti,
                "sub": "repo:acme/api:ref:refs/heads/main",
                "aud": audience,
                "ref": "refs/heads/main",
                "sha": SHA,
                "repository": "acme/api",
                "repository_owner": "acme",
                "repository_owner_id": "1001",
                "repository_id": "2002",
                "repository_visibility": "private",
                "run_id": "9000000001",
                "run_number": "12",
                "run_attempt": "1",
                "runner_environment": "github-hosted",
                "actor": "octocat",
                "actor_id": "583231",
                "workflow": "CI",
                "workflow_ref": "acme/api/.github/workflows/ci.yml@refs/heads/main",
                "workflow_sha": SHA,
                "job_workflow_ref": "acme/api/.github/workflows/ci.yml@refs/heads/main",
                "event_name": "push",
                "ref_type": "branch",
                "ref_protected": "true",
                "iss": self.issuer,
                "nbf": now - 5,
                "exp": now + 300,
                "iat": now - 5
            }),
            Shape::GitLab => json!({
                "namespace_id": "72",
                "namespace_path": "acme",
                "project_id": "20",
                "project_path": "acme/api",
                "user_id": "1",
                "user_login": "sam",
                "user_email": "sam@acme.example",
                "pipeline_id": "574",
                "pipeline_source": "push",
                "job_id": "302",
                "ref": "main",
                "ref_type": "branch",
                "ref_path": "refs/heads/main",
                "ref_protected": "true",
                "environment": "production",
                "environment_protected": "true",
                "deployment_tier": "production",
                "runner_id": 1,
                "runner_environment": "self-hosted",
                "sha": SHA,
                "project_visibility": "private",
                "ci_config_ref_uri": "gitlab.example/acme/api//.gitlab-ci.yml@refs/heads/main",
                "ci_config_sha": SHA,
                "jti": jti,
                "iss": self.issuer,
                "iat": now - 5,
                "nbf": now - 10,
                "exp": now + 3600,
                "sub": "project_path:acme/api:ref_type:branch:ref:main",
                "aud": audience
            }),
        }
    }

    /// What the fake job token endpoint mints (beside the audience asked for); `Null` for
    /// [`CiIssuer::claims`].
    pub fn set_job_claims(&self, claims: Value) {
        *self.shared.job_claims.lock().unwrap() = claims;
    }

    /// `ACTIONS_ID_TOKEN_REQUEST_URL` for the fake job token endpoint.
    pub fn request_url(&self) -> String {
        let origin = self.issuer.trim_end_matches("/_services/token");
        format!("{origin}/_apis/token?api-version=2.0")
    }
}

/// Signs `claims` with key `kid` (RS256 for the RSA keys, ES256 for the EC one).
pub fn sign(claims: &Value, kid: &str) -> String {
    let (alg, key) = if kid.starts_with("ec") {
        (
            Algorithm::ES256,
            EncodingKey::from_ec_pem(fixture(&format!("{kid}.pem")).as_bytes()).unwrap(),
        )
    } else {
        (
            Algorithm::RS256,
            EncodingKey::from_rsa_pem(fixture(&format!("{kid}.pem")).as_bytes()).unwrap(),
        )
    };
    let mut header = Header::new(alg);
    header.kid = Some(kid.to_owned());
    jsonwebtoken::encode(&header, claims, &key).unwrap()
}

/// Signed with a key the issuer does not publish, under a `kid` it does not know.
pub fn sign_with_kid(claims: &Value, kid: &str, key_of: &str) -> String {
    let key = EncodingKey::from_rsa_pem(fixture(&format!("{key_of}.pem")).as_bytes()).unwrap();
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some(kid.to_owned());
    jsonwebtoken::encode(&header, claims, &key).unwrap()
}

/// The classic confusion attack: HS256 keyed with the issuer's RSA public key (PEM bytes).
pub fn sign_hs256_with_public_key(claims: &Value) -> String {
    let key = EncodingKey::from_secret(fixture("rsa-1.pub.pem").as_bytes());
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some(RSA_1.to_owned());
    jsonwebtoken::encode(&header, claims, &key).unwrap()
}

/// An unsigned token (`alg: none`).
pub fn unsigned(claims: &Value) -> String {
    let b64 = |v: &Value| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(serde_json::to_vec(v).unwrap())
    };
    format!(
        "{}.{}.",
        b64(&json!({"alg": "none", "kid": RSA_1})),
        b64(claims)
    )
}

async fn discovery(State(s): State<Arc<Shared>>) -> impl IntoResponse {
    Json(json!({
        "issuer": s.issuer,
        "jwks_uri": format!("{}/.well-known/jwks", s.issuer),
        "subject_types_supported": ["public", "pairwise"],
        "response_types_supported": ["id_token"],
        "claims_supported": ["sub", "aud", "exp", "iat", "iss", "jti", "nbf", "ref", "sha"],
        "id_token_signing_alg_values_supported": ["RS256"],
        "scopes_supported": ["openid"]
    }))
}

async fn jwks(State(s): State<Arc<Shared>>) -> impl IntoResponse {
    s.jwks_fetches.fetch_add(1, Ordering::SeqCst);
    let keys: Vec<Value> = s
        .published
        .lock()
        .unwrap()
        .iter()
        .map(|kid| serde_json::from_str(&fixture(&format!("{kid}.jwk.json"))).unwrap())
        .collect();
    Json(json!({ "keys": keys }))
}

#[derive(serde::Deserialize)]
struct TokenQuery {
    audience: Option<String>,
}

/// GitHub's job token endpoint: `GET $ACTIONS_ID_TOKEN_REQUEST_URL&audience=…` with
/// `Authorization: Bearer $ACTIONS_ID_TOKEN_REQUEST_TOKEN`, answering `{"value": "<jwt>"}`.
async fn job_token(
    State(s): State<Arc<Shared>>,
    Query(q): Query<TokenQuery>,
    headers: HeaderMap,
) -> axum::response::Response {
    let authorized = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == format!("Bearer {REQUEST_TOKEN}"));
    if !authorized {
        return (StatusCode::UNAUTHORIZED, "bad request token").into_response();
    }
    let mut claims = s.job_claims.lock().unwrap().clone();
    if let Some(aud) = q.audience {
        claims["aud"] = json!(aud);
    }
    claims["jti"] = json!(uuid::Uuid::new_v4().to_string());
    Json(json!({ "count": 1, "value": sign(&claims, RSA_1) })).into_response()
}
