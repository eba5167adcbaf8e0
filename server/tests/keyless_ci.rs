//! Keyless CI against a real local OpenID issuer on loopback (discovery, a rotating JWKS,
//! RS256 and ES256): trusted publishers added by an operator, the exchange, pushes with the
//! push token and the git context taken from the claims, provenance in the export, and every
//! refusal naming its claim, on both databases; a replayed token across two replicas on
//! PostgreSQL.
#![allow(clippy::unwrap_used)]

use reqwest::StatusCode;
use serde_json::{json, Value};
use tidemark_store::Backend;
use tidemark_wire::Tier;

use crate::common;
use common::ci_issuer::{self, CiIssuer, Shape, EC_1, RSA_1, RSA_2};
use common::{assert_error, sample_push, TestApp};

const AUDIENCE: &str = "https://tidemark.test";

const ENV: [(&str, &str); 3] = [
    ("TIDEMARK_OIDC_ALLOW_PRIVATE_ISSUERS", "1"),
    ("TIDEMARK_OIDC_AUDIENCE", AUDIENCE),
    ("TIDEMARK_SIGNIN_PER_MINUTE", "1000"),
];

async fn exchange(app: &TestApp, token: &str) -> reqwest::Response {
    app.client
        .post(app.url("/v1/auth/oidc/exchange"))
        .json(&json!({ "token": token }))
        .send()
        .await
        .unwrap()
}

async fn push_token(app: &TestApp, token: &str) -> Value {
    let res = exchange(app, token).await;
    let status = res.status();
    let body: Value = res.json().await.unwrap();
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body
}

/// `publisher add` as an operator runs it; returns the new publisher's id.
async fn add_publisher(app: &TestApp, account: &str, args: &[&str]) -> String {
    let mut all = vec!["--json", "publisher", "add", "--account", account];
    all.extend_from_slice(args);
    let (ok, out, err) = app
        .command(&all, &[("TIDEMARK_OIDC_ALLOW_PRIVATE_ISSUERS", "1")])
        .await;
    assert!(ok, "publisher add: {err}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    doc["id"].as_str().unwrap().to_owned()
}

async fn push_with(app: &TestApp, token: &str, body: &Value) -> reqwest::Response {
    app.client
        .post(app.url("/v1/dashboard/push"))
        .bearer_auth(token)
        .json(body)
        .send()
        .await
        .unwrap()
}

tidemark_store::test_each_backend! {
    async fn a_github_job_pushes_with_no_stored_secret(backend) {
        let issuer = CiIssuer::start(Shape::GitHub).await;
        let app = TestApp::spawn_with(backend, &ENV).await;
        let (license, _key) = app.with_key(Tier::Team).await;
        let account = license.account_id.as_str();
        // No ids given: the first token pins them.
        let id = add_publisher(&app, account, &[
            "--provider", "github", "--issuer", &issuer.issuer,
            "--repository", "acme/api", "--workflow", "ci.yml",
        ]).await;

        let answer = push_token(&app, &ci_issuer::sign(&issuer.claims(AUDIENCE), RSA_1)).await;
        let token = answer["token"].as_str().unwrap();
        assert!(token.starts_with("tmk_ci_"), "{answer}");
        assert_eq!(answer["account_id"], account);
        assert_eq!(answer["identity"]["repository"], "acme/api");
        assert_eq!(answer["identity"]["repository_id"], "2002");
        assert_eq!(answer["identity"]["workflow"], ".github/workflows/ci.yml");
        let run_url = format!(
            "{}/acme/api/actions/runs/9000000001",
            issuer.issuer.trim_end_matches("/_services/token")
        );
        assert_eq!(answer["identity"]["run_url"], run_url.as_str());

        // The body names no branch or commit: both come from the verified claims.
        let res = push_with(&app, token, &sample_push("api", 81.0, "2026-11-25T10:00:00Z")).await;
        assert_eq!(res.status(), StatusCode::CREATED);
        let pushed: Value = res.json().await.unwrap();
        assert_eq!(pushed["branch"], "main", "{pushed}");
        // X-API-Key carries it as well, for the exports too.
        let history = app.client
            .get(app.url(&format!("/v1/projects/{}/history.csv", pushed["project_id"].as_str().unwrap())))
            .header("x-api-key", token)
            .send().await.unwrap();
        assert_eq!(history.status(), StatusCode::OK);
        let csv = history.text().await.unwrap();
        assert!(csv.contains(",Keyless CI · GitHub Actions acme/api · "), "{csv}");

        // The ids were pinned, and that is in the audit log with the addition.
        let (ok, out, _) = app.command(&["--json", "publisher", "list", "--account", account], &[]).await;
        assert!(ok);
        let list: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(list[0]["id"], id.as_str());
        assert_eq!(list[0]["owner_id"], "1001");
        assert_eq!(list[0]["repository_id"], "2002");
        let (_, audit, _) = app.command(&["audit", "list", "--account", account], &[]).await;
        assert!(audit.contains("publisher.added") && audit.contains("publisher.pinned"), "{audit}");

        // A repository deleted and created again under the same name has a new id.
        let mut recreated = issuer.claims(AUDIENCE);
        recreated["repository_id"] = json!("7777");
        let msg = assert_error(
            exchange(&app, &ci_issuer::sign(&recreated, RSA_1)).await,
            StatusCode::FORBIDDEN,
            "no_trusted_publisher",
        ).await;
        assert!(msg.contains("`repository_id`") && msg.contains("7777") && msg.contains("2002"), "{msg}");

        // Removing the publisher ends its push tokens at once.
        let (ok, _, err) = app.command(&["publisher", "remove", "--account", account, "--id", &id], &[]).await;
        assert!(ok, "{err}");
        let res = push_with(&app, token, &sample_push("api", 82.0, "2026-11-25T10:05:00Z")).await;
        assert_error(res, StatusCode::UNAUTHORIZED, "invalid_api_key").await;
        assert_eq!(app.metric("tidemark_oidc_exchanges_total{outcome=\"issued\",claim=\"\"}").await, Some(1.0));
    }
}

tidemark_store::test_each_backend! {
    async fn a_gitlab_job_is_matched_by_project_environment_and_ref(backend) {
        let issuer = CiIssuer::start(Shape::GitLab).await;
        let app = TestApp::spawn_with(backend, &ENV).await;
        let (license, _key) = app.with_key(Tier::Team).await;
        add_publisher(&app, &license.account_id, &[
            "--provider", "gitlab", "--issuer", &issuer.issuer, "--repository", "acme/api",
            "--owner-id", "72", "--repository-id", "20", "--environment", "production",
            "--ref-pattern", "refs/heads/main", "--project", "api",
        ]).await;
        let answer = push_token(&app, &ci_issuer::sign(&issuer.claims(AUDIENCE), EC_1)).await;
        assert_eq!(answer["projects"], json!(["api"]));
        assert_eq!(answer["identity"]["run_url"], format!("{}/acme/api/-/jobs/302", issuer.issuer).as_str());
        let token = answer["token"].as_str().unwrap();
        let res = push_with(&app, token, &sample_push("api", 70.0, "2026-11-25T11:00:00Z")).await;
        assert_eq!(res.status(), StatusCode::CREATED);
        // Another project is outside the publisher's scope.
        let msg = assert_error(
            push_with(&app, token, &sample_push("web", 70.0, "2026-11-25T11:00:00Z")).await,
            StatusCode::FORBIDDEN,
            "project_not_allowed",
        ).await;
        assert!(msg.contains("\"web\""), "{msg}");
        for (claim, value) in [
            ("environment", json!("staging")),
            ("ref_path", json!("refs/heads/feature")),
            ("ci_config_ref_uri", json!("gitlab.example/acme/api//other.yml@refs/heads/main")),
        ] {
            let mut claims = issuer.claims(AUDIENCE);
            claims[claim] = value.clone();
            let msg = assert_error(
                exchange(&app, &ci_issuer::sign(&claims, RSA_1)).await,
                StatusCode::FORBIDDEN,
                "no_trusted_publisher",
            ).await;
            assert!(msg.contains(&format!("`{claim}`")) && msg.contains(value.as_str().unwrap()), "{msg}");
        }
    }
}

#[tokio::test]
async fn every_refusal_names_its_claim_and_is_counted() {
    let issuer = CiIssuer::start(Shape::GitHub).await;
    let other = CiIssuer::start(Shape::GitLab).await;
    let app = TestApp::spawn_with(Backend::Sqlite, &ENV).await;
    let (license, _key) = app.with_key(Tier::Team).await;
    add_publisher(
        &app,
        &license.account_id,
        &[
            "--provider",
            "github",
            "--issuer",
            &issuer.issuer,
            "--repository",
            "acme/api",
            "--owner-id",
            "1001",
            "--repository-id",
            "2002",
            "--workflow",
            "ci.yml",
            "--environment",
            "release",
            "--ref-pattern",
            "refs/tags/v*",
        ],
    )
    .await;
    let good = || {
        let mut c = issuer.claims(AUDIENCE);
        c["environment"] = json!("release");
        c["ref"] = json!("refs/tags/v1.4.0");
        c["ref_type"] = json!("tag");
        c
    };
    let with = |key: &str, value: Value| {
        let mut c = good();
        c[key] = value;
        c
    };
    let now = chrono::Utc::now().timestamp();
    let invalid: Vec<(&str, String)> = vec![
        (
            "aud",
            ci_issuer::sign(&with("aud", json!("https://github.com/acme")), RSA_1),
        ),
        (
            "aud",
            ci_issuer::sign(&with("aud", json!([AUDIENCE, "https://other.test"])), RSA_1),
        ),
        (
            "exp",
            ci_issuer::sign(&with("exp", json!(now - 120)), RSA_1),
        ),
        (
            "nbf",
            ci_issuer::sign(&with("nbf", json!(now + 600)), RSA_1),
        ),
        ("alg", ci_issuer::unsigned(&good())),
        ("alg", ci_issuer::sign_hs256_with_public_key(&good())),
        ("kid", ci_issuer::sign_with_kid(&good(), "made-up", RSA_2)),
        ("signature", ci_issuer::sign_with_kid(&good(), RSA_1, RSA_2)),
        // Another issuer, which no account trusts (never contacted).
        ("iss", ci_issuer::sign(&other.claims(AUDIENCE), RSA_1)),
        ("token", "not-a-token".to_owned()),
    ];
    for (claim, token) in &invalid {
        let msg = assert_error(
            exchange(&app, token).await,
            StatusCode::UNAUTHORIZED,
            "invalid_oidc_token",
        )
        .await;
        assert!(msg.contains(&format!("`{claim}`")), "{claim}: {msg}");
    }
    assert_eq!(
        other.jwks_fetches(),
        0,
        "an untrusted issuer is never contacted"
    );
    let unmatched = [
        (
            "workflow_ref",
            json!("acme/api/.github/workflows/release.yml@refs/tags/v1.4.0"),
        ),
        ("environment", json!("staging")),
        ("ref", json!("refs/heads/main")),
        ("repository_owner_id", json!("1")),
    ];
    for (claim, value) in unmatched {
        let msg = assert_error(
            exchange(&app, &ci_issuer::sign(&with(claim, value.clone()), RSA_1)).await,
            StatusCode::FORBIDDEN,
            "no_trusted_publisher",
        )
        .await;
        assert!(
            msg.contains(&format!("`{claim}`")) && msg.contains(value.as_str().unwrap()),
            "{msg}"
        );
        // Never the token itself.
        assert!(!msg.contains("eyJ"), "{msg}");
    }
    // Single use: the same token twice.
    let once = ci_issuer::sign(&good(), RSA_1);
    let first = push_token(&app, &once).await;
    let msg = assert_error(
        exchange(&app, &once).await,
        StatusCode::UNAUTHORIZED,
        "invalid_oidc_token",
    )
    .await;
    assert!(msg.contains("`jti`") && msg.contains("already"), "{msg}");

    // A tag's token makes a push that names a branch contradict it.
    let token = first["token"].as_str().unwrap();
    let mut body = sample_push("api", 90.0, "2026-11-25T12:00:00Z");
    body["git"] = json!({"branch": "main"});
    let msg = assert_error(
        push_with(&app, token, &body).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_request",
    )
    .await;
    assert!(msg.contains("git.branch"), "{msg}");

    for claim in ["aud", "alg", "kid", "jti", "environment"] {
        let series =
            format!("tidemark_oidc_exchanges_total{{outcome=\"refused\",claim=\"{claim}\"}}");
        assert!(app.metric(&series).await.unwrap_or(0.0) >= 1.0, "{series}");
    }
}

#[tokio::test]
async fn another_accounts_publisher_and_projects_stay_apart() {
    let issuer = CiIssuer::start(Shape::GitHub).await;
    let app = TestApp::spawn_with(Backend::Sqlite, &ENV).await;
    let (a, key_a) = app.with_key(Tier::Team).await;
    let (b, _key_b) = app.with_key(Tier::Team).await;
    let a_push: Value = app
        .push_json(&key_a, &sample_push("api", 50.0, "2026-11-25T09:00:00Z"))
        .await;
    // Only B trusts the repository: its token pushes to B, and reads nothing of A's.
    add_publisher(
        &app,
        &b.account_id,
        &[
            "--provider",
            "github",
            "--issuer",
            &issuer.issuer,
            "--repository",
            "acme/api",
            "--workflow",
            "ci.yml",
        ],
    )
    .await;
    let answer = push_token(&app, &ci_issuer::sign(&issuer.claims(AUDIENCE), RSA_1)).await;
    assert_eq!(answer["account_id"], b.account_id.as_str());
    let token = answer["token"].as_str().unwrap();
    let res = app
        .client
        .get(app.url(&format!(
            "/v1/projects/{}/history.csv",
            a_push["project_id"].as_str().unwrap()
        )))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_error(res, StatusCode::NOT_FOUND, "not_found").await;
    // When A trusts it too, the job must say which account (nobody takes another's scans
    // by declaring their repository).
    add_publisher(
        &app,
        &a.account_id,
        &[
            "--provider",
            "github",
            "--issuer",
            &issuer.issuer,
            "--repository",
            "acme/api",
            "--workflow",
            "ci.yml",
        ],
    )
    .await;
    let msg = assert_error(
        exchange(&app, &ci_issuer::sign(&issuer.claims(AUDIENCE), RSA_1)).await,
        StatusCode::FORBIDDEN,
        "no_trusted_publisher",
    )
    .await;
    assert!(msg.contains("2 accounts"), "{msg}");
    let res = app.client
        .post(app.url("/v1/auth/oidc/exchange"))
        .json(&json!({"token": ci_issuer::sign(&issuer.claims(AUDIENCE), RSA_1), "account": a.account_id}))
        .send().await.unwrap();
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["account_id"], a.account_id.as_str(), "{body}");
}

#[tokio::test]
async fn rotated_keys_are_seen_and_unknown_kids_cost_one_fetch_a_minute() {
    let issuer = CiIssuer::start(Shape::GitHub).await;
    let app = TestApp::spawn_with(Backend::Sqlite, &ENV).await;
    let (license, _key) = app.with_key(Tier::Team).await;
    add_publisher(
        &app,
        &license.account_id,
        &[
            "--provider",
            "github",
            "--issuer",
            &issuer.issuer,
            "--repository",
            "acme/api",
            "--workflow",
            "ci.yml",
        ],
    )
    .await;
    push_token(&app, &ci_issuer::sign(&issuer.claims(AUDIENCE), RSA_1)).await;
    assert_eq!(issuer.jwks_fetches(), 1);
    // The issuer rotates to a new key: the first token signed with it makes one fetch.
    issuer.publish(&[RSA_2]);
    push_token(&app, &ci_issuer::sign(&issuer.claims(AUDIENCE), RSA_2)).await;
    assert_eq!(issuer.jwks_fetches(), 2);
    // Unknown kids within the minute cost nothing more, and are not a verdict on the token:
    // the set was fetched too recently to know a key the issuer has just started using, so
    // the answer is retryable, with when (issue 44).
    let mut retry_after = 0;
    for kid in ["x1", "x2", "x3", RSA_1] {
        let res = exchange(
            &app,
            &ci_issuer::sign_with_kid(&issuer.claims(AUDIENCE), kid, RSA_2),
        )
        .await;
        retry_after = res.headers()["retry-after"]
            .to_str()
            .unwrap()
            .parse::<u64>()
            .unwrap();
        assert!((1..=61).contains(&retry_after), "{retry_after}");
        let msg = assert_error(res, StatusCode::SERVICE_UNAVAILABLE, "issuer_unavailable").await;
        assert!(
            msg.contains(&format!("key {kid:?}")) && msg.contains("Retry after"),
            "{msg}"
        );
    }
    assert_eq!(issuer.jwks_fetches(), 2);
    // The issuer starts using a third key within that minute: the CI job's retry after
    // Retry-After gets its push token (one more fetch). A kid the issuer does not publish
    // when the set is fetched is refused for good (`401 kid`, tested above).
    issuer.publish(&[RSA_2, EC_1]);
    let with_new_key = ci_issuer::sign(&issuer.claims(AUDIENCE), EC_1);
    let res = exchange(&app, &with_new_key).await;
    assert_error(res, StatusCode::SERVICE_UNAVAILABLE, "issuer_unavailable").await;
    tokio::time::sleep(std::time::Duration::from_secs(retry_after)).await;
    push_token(&app, &with_new_key).await;
    assert_eq!(issuer.jwks_fetches(), 3);
}

#[tokio::test]
async fn an_issuer_that_does_not_answer_holds_up_only_its_own_exchanges() {
    let github = CiIssuer::start(Shape::GitHub).await;
    // An issuer that accepts connections and never answers (its fetch waits out the timeout).
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent_url = format!("http://{}", silent.local_addr().unwrap());
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((conn, _)) = silent.accept().await {
            open.push(conn);
        }
    });
    let app = TestApp::spawn_with(Backend::Sqlite, &ENV).await;
    let (license, _key) = app.with_key(Tier::Team).await;
    let account = license.account_id.as_str();
    add_publisher(
        &app,
        account,
        &[
            "--provider",
            "github",
            "--issuer",
            &github.issuer,
            "--repository",
            "acme/api",
            "--workflow",
            "ci.yml",
        ],
    )
    .await;
    add_publisher(
        &app,
        account,
        &[
            "--provider",
            "custom",
            "--issuer",
            &silent_url,
            "--subject",
            "job",
        ],
    )
    .await;
    let now = chrono::Utc::now().timestamp();
    let stuck_token = ci_issuer::sign(
        &json!({"iss": silent_url, "sub": "job", "aud": AUDIENCE, "iat": now, "nbf": now,
                "exp": now + 300, "jti": "stuck-1"}),
        RSA_1,
    );
    let stuck = {
        let (client, url) = (app.client.clone(), app.url("/v1/auth/oidc/exchange"));
        tokio::spawn(async move {
            client
                .post(url)
                .json(&json!({ "token": stuck_token }))
                .send()
                .await
        })
    };
    // While that exchange waits on its issuer, another issuer's job is served.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let answer = push_token(&app, &ci_issuer::sign(&github.claims(AUDIENCE), RSA_1)).await;
    assert!(answer["token"].as_str().unwrap().starts_with("tmk_ci_"));
    assert!(
        !stuck.is_finished(),
        "the silent issuer's exchange was still waiting"
    );
    let res = stuck.await.unwrap().unwrap();
    assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE);
    held.abort();
}

#[tokio::test]
async fn a_token_is_exchanged_once_across_two_replicas() {
    let Some(backend) = tidemark_store::testing::postgres_backend() else {
        return;
    };
    let issuer = CiIssuer::start(Shape::GitHub).await;
    let one = TestApp::spawn_with(backend, &ENV).await;
    let two = one.replica().await;
    let (license, _key) = one.with_key(Tier::Team).await;
    add_publisher(
        &one,
        &license.account_id,
        &[
            "--provider",
            "github",
            "--issuer",
            &issuer.issuer,
            "--repository",
            "acme/api",
            "--workflow",
            "ci.yml",
        ],
    )
    .await;
    for _ in 0..5 {
        let token = ci_issuer::sign(&issuer.claims(AUDIENCE), RSA_1);
        let (a, b) = tokio::join!(exchange(&one, &token), exchange(&two, &token));
        let mut statuses = [a.status(), b.status()];
        statuses.sort();
        assert_eq!(statuses, [StatusCode::CREATED, StatusCode::UNAUTHORIZED]);
    }
}

#[tokio::test]
async fn exchanges_are_limited_per_issuer_and_address() {
    let issuer = CiIssuer::start(Shape::GitHub).await;
    let app = TestApp::spawn_with(
        Backend::Sqlite,
        &[
            ("TIDEMARK_OIDC_ALLOW_PRIVATE_ISSUERS", "1"),
            ("TIDEMARK_OIDC_AUDIENCE", AUDIENCE),
            ("TIDEMARK_SIGNIN_PER_MINUTE", "3"),
        ],
    )
    .await;
    let mut statuses = Vec::new();
    for _ in 0..5 {
        statuses.push(
            exchange(&app, &ci_issuer::sign(&issuer.claims(AUDIENCE), RSA_1))
                .await
                .status(),
        );
    }
    assert_eq!(statuses[..3], [StatusCode::UNAUTHORIZED; 3], "{statuses:?}");
    let res = exchange(&app, &ci_issuer::sign(&issuer.claims(AUDIENCE), RSA_1)).await;
    assert!(res.headers().contains_key("retry-after"));
    assert_error(res, StatusCode::TOO_MANY_REQUESTS, "rate_limit_exceeded").await;
    assert!(
        app.metric("tidemark_rate_limited_total{limit=\"oidc\"}")
            .await
            .unwrap_or(0.0)
            >= 1.0
    );
}

/// `@actions/core`'s `getIDToken` (GitHub's own client) against the fake job token endpoint.
/// Off the async runtime, so the issuer (on it) can answer.
async fn actions_core_token(issuer: &CiIssuer, audience: &str) -> String {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../end2end/peers/actions-id-token.mjs"
    );
    let (url, audience) = (issuer.request_url(), audience.to_owned());
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new("node")
            .arg(script)
            .arg(audience)
            .env("ACTIONS_ID_TOKEN_REQUEST_URL", url)
            .env("ACTIONS_ID_TOKEN_REQUEST_TOKEN", ci_issuer::REQUEST_TOKEN)
            .output()
            .expect("node end2end/peers/actions-id-token.mjs (run scripts/setup.sh for the npm packages)")
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // getIDToken first asks the runner to mask the token (`::add-mask::…`), as in a real job.
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.lines().any(|l| l.starts_with("::add-mask::")),
        "{text}"
    );
    text.lines().last().unwrap().to_owned()
}

#[tokio::test]
async fn the_cli_pushes_keyless_from_github_actions_and_gitlab_ci() {
    use crate::cli_client::{env, tidemark};
    let github = CiIssuer::start(Shape::GitHub).await;
    let gitlab = CiIssuer::start(Shape::GitLab).await;
    github.set_job_claims(github.claims("replaced by the audience asked for"));
    // The fake endpoint answers GitHub's own client, and mints for the audience it asks.
    let token = actions_core_token(&github, AUDIENCE).await;
    let payload = token.split('.').nth(1).unwrap();
    let claims: Value = serde_json::from_slice(
        &base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, payload)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(claims["aud"], AUDIENCE);

    let app = TestApp::spawn_with(Backend::Sqlite, &ENV).await;
    let (license, _key) = app.with_key(Tier::Team).await;
    add_publisher(
        &app,
        &license.account_id,
        &[
            "--provider",
            "github",
            "--issuer",
            &github.issuer,
            "--repository",
            "acme/api",
            "--workflow",
            "ci.yml",
        ],
    )
    .await;
    add_publisher(
        &app,
        &license.account_id,
        &[
            "--provider",
            "gitlab",
            "--issuer",
            &gitlab.issuer,
            "--repository",
            "acme/api",
            "--project",
            "api",
        ],
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("scan.json");
    std::fs::write(
        &file,
        sample_push("api", 77.0, "2026-11-25T13:00:00Z").to_string(),
    )
    .unwrap();
    let file = file.display().to_string();
    let temp = dir.path().display().to_string();
    let now = chrono::Utc::now();

    // GitHub Actions with `id-token: write`: no key anywhere.
    let request_url = github.request_url();
    let actions = [
        ("GITHUB_ACTIONS", "true"),
        ("ACTIONS_ID_TOKEN_REQUEST_URL", request_url.as_str()),
        ("ACTIONS_ID_TOKEN_REQUEST_TOKEN", ci_issuer::REQUEST_TOKEN),
        ("TIDEMARK_OIDC_AUDIENCE", AUDIENCE),
        ("RUNNER_TEMP", temp.as_str()),
    ];
    let gh = env(&app.base_url, dir.path(), "", &actions, now);
    let who = tidemark(&gh, &["whoami"]).await;
    assert_eq!(who.status, 0, "{:?} {}", who.code, who.out);
    assert!(
        who.out
            .contains("github acme/api, .github/workflows/ci.yml, refs/heads/main"),
        "{}",
        who.out
    );
    let pushed = tidemark(&gh, &["push", &file]).await;
    assert_eq!(pushed.status, 0, "{:?} {}", pushed.code, pushed.out);
    assert!(
        pushed.out.contains("Keyless CI: github acme/api") && pushed.out.contains("Pushed:"),
        "{}",
        pushed.out
    );
    // whoami and push in one job: one exchange.
    assert_eq!(
        app.metric("tidemark_oidc_exchanges_total{outcome=\"issued\",claim=\"\"}")
            .await,
        Some(1.0)
    );

    // Without `id-token: write` the job is told what to add (and about forks).
    let bare = env(
        &app.base_url,
        dir.path(),
        "",
        &[("GITHUB_ACTIONS", "true")],
        now,
    );
    let refused = tidemark(&bare, &["push", &file]).await;
    assert_eq!(refused.status, 2);
    let why = refused.code.unwrap_err();
    assert!(
        why.contains("id-token: write") && why.contains("fork"),
        "{why}"
    );

    // GitLab CI: the `id_tokens:` entry TIDEMARK_ID_TOKEN.
    let job_token = ci_issuer::sign(&gitlab.claims(AUDIENCE), RSA_1);
    let lab_vars = [
        ("GITLAB_CI", "true"),
        ("TIDEMARK_ID_TOKEN", job_token.as_str()),
        ("CI_COMMIT_SHA", "a3f1c9e0b7d24c8e9f1a2b3c4d5e6f708192a3b4"),
        ("CI_COMMIT_BRANCH", "main"),
        ("TMPDIR", temp.as_str()),
    ];
    let lab = env(&app.base_url, dir.path(), "", &lab_vars, now);
    let who = tidemark(&lab, &["whoami"]).await;
    assert!(
        who.out.contains("gitlab acme/api") && who.out.contains("project api"),
        "{:?} {}",
        who.code,
        who.out
    );
    let pushed = tidemark(&lab, &["push", &file, "--json"]).await;
    assert_eq!(pushed.status, 0, "{:?} {}", pushed.code, pushed.out);
    let answer: Value = serde_json::from_str(&pushed.out).unwrap();
    assert_eq!(answer["branch"], "main");
}

/// Issue 44: a self-hosted issuer on a private CA (GitHub Enterprise Server, self-managed
/// GitLab), served over https by nginx with a throwaway CA's certificate: without that CA the
/// exchange says why (retryably); with `TIDEMARK_OIDC_CA_FILE` naming it, the job gets its
/// push token.
#[tokio::test]
async fn a_self_hosted_issuer_on_a_private_ca_is_trusted_with_its_ca_file() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let nginx = crate::common::nginx::Nginx::start(&[listener.local_addr().unwrap()]).await;
    let issuer = CiIssuer::start_on(Shape::GitHub, listener, &nginx.https_url).await;
    assert!(
        issuer.issuer.starts_with("https://localhost:"),
        "{}",
        issuer.issuer
    );
    let ca = nginx.ca_pem.to_str().unwrap().to_owned();
    for trusted in [false, true] {
        let mut settings = ENV.to_vec();
        if trusted {
            settings.push(("TIDEMARK_OIDC_CA_FILE", ca.as_str()));
        }
        let app = TestApp::spawn_with(Backend::Sqlite, &settings).await;
        let (license, _key) = app.with_key(Tier::Team).await;
        let publisher = [
            "--provider",
            "github",
            "--issuer",
            &issuer.issuer,
            "--repository",
            "acme/api",
            "--workflow",
            "ci.yml",
        ];
        add_publisher(&app, &license.account_id, &publisher).await;
        let token = ci_issuer::sign(&issuer.claims(AUDIENCE), RSA_1);
        if trusted {
            let answer = push_token(&app, &token).await;
            assert!(
                answer["token"].as_str().unwrap().starts_with("tmk_ci_"),
                "{answer}"
            );
        } else {
            let res = exchange(&app, &token).await;
            assert!(res.headers().contains_key("retry-after"));
            let msg =
                assert_error(res, StatusCode::SERVICE_UNAVAILABLE, "issuer_unavailable").await;
            assert!(msg.to_lowercase().contains("certificate"), "{msg}");
        }
    }
    assert_eq!(
        issuer.jwks_fetches(),
        1,
        "only the trusting server got the keys"
    );
}

/// An HTTP proxy on loopback that only tunnels (`CONNECT`), as a corporate proxy does for
/// https, and remembers where to.
struct ConnectProxy {
    url: String,
    tunnels: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for ConnectProxy {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl ConnectProxy {
    async fn start() -> Self {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let tunnels = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = tunnels.clone();
        let server = tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let seen = seen.clone();
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut byte = [0u8; 1];
                    while !head.ends_with(b"\r\n\r\n") && head.len() < 8192 {
                        if client.read_exact(&mut byte).await.is_err() {
                            return;
                        }
                        head.push(byte[0]);
                    }
                    let head = String::from_utf8_lossy(&head).into_owned();
                    let Some(target) = head
                        .strip_prefix("CONNECT ")
                        .and_then(|rest| rest.split(' ').next())
                        .map(str::to_owned)
                    else {
                        let _ = client
                            .write_all(b"HTTP/1.1 405 Method Not Allowed\r\n\r\n")
                            .await;
                        return;
                    };
                    seen.lock().unwrap().push(target.clone());
                    let Ok(mut upstream) = tokio::net::TcpStream::connect(&target).await else {
                        let _ = client.write_all(b"HTTP/1.1 502 Bad Gateway\r\n\r\n").await;
                        return;
                    };
                    let _ = client
                        .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                        .await;
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
                });
            }
        });
        ConnectProxy {
            url,
            tunnels,
            server,
        }
    }
}

/// Issue 44: the issuer's keys are fetched through the proxy the standard variables name
/// (`HTTPS_PROXY`), as an operator behind a corporate proxy configures the server's process,
/// on a private CA the system's trust store holds (here through `SSL_CERT_FILE`, which the
/// system store honours).
#[tokio::test]
async fn the_issuers_keys_are_fetched_through_the_operators_proxy_on_the_system_trust_store() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let nginx = crate::common::nginx::Nginx::start(&[listener.local_addr().unwrap()]).await;
    let issuer = CiIssuer::start_on(Shape::GitHub, listener, &nginx.https_url).await;
    let proxy = ConnectProxy::start().await;
    let dir = tempfile::tempdir().unwrap();
    let (data, ca) = (dir.path().to_str().unwrap(), nginx.ca_pem.to_str().unwrap());
    let env = [
        ("TIDEMARK_DATA_DIR", data),
        ("TIDEMARK_OIDC_ALLOW_PRIVATE_ISSUERS", "1"),
        ("TIDEMARK_OIDC_AUDIENCE", AUDIENCE),
        ("SSL_CERT_FILE", ca),
    ];
    let license = [
        "--json",
        "license",
        "create",
        "--email",
        "ci@acme.example",
        "--tier",
        "team",
    ];
    let (ok, out, err) = crate::common::tidemark_server(&env, &license);
    assert!(ok, "{err}");
    let created: Value = serde_json::from_str(out.trim()).unwrap();
    let account = created["account_id"].as_str().unwrap();
    let publisher = [
        "--json",
        "publisher",
        "add",
        "--account",
        account,
        "--provider",
        "github",
        "--issuer",
        &issuer.issuer,
        "--repository",
        "acme/api",
        "--workflow",
        "ci.yml",
    ];
    let (ok, _, err) = crate::common::tidemark_server(&env, &publisher);
    assert!(ok, "{err}");

    let port = crate::common::free_port();
    let mut serving = std::process::Command::new(env!("CARGO_BIN_EXE_tidemark-server"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .envs(env)
        .env("LEPTOS_SITE_ADDR", format!("127.0.0.1:{port}"))
        .env("HTTPS_PROXY", &proxy.url)
        .arg("serve")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let up = crate::common::wait_for_async(std::time::Duration::from_secs(30), || async {
        let res = client.get(format!("{base}/healthz")).send().await.ok()?;
        (res.status() == StatusCode::OK).then_some(())
    })
    .await;
    let res = match up {
        Some(()) => Some(
            client
                .post(format!("{base}/v1/auth/oidc/exchange"))
                .json(&json!({ "token": ci_issuer::sign(&issuer.claims(AUDIENCE), RSA_1) }))
                .send()
                .await
                .unwrap(),
        ),
        None => None,
    };
    let _ = serving.kill();
    let _ = serving.wait();
    let res = res.expect("the server answered");
    let status = res.status();
    let body: Value = res.json().await.unwrap();
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let port = nginx.https_url.rsplit(':').next().unwrap().to_owned();
    assert_eq!(
        proxy.tunnels.lock().unwrap().clone(),
        vec![format!("localhost:{port}")],
        "the key set came through the proxy"
    );
}
