//! The `tidemark` command against the real server: activation, status, push (with back-off
//! on 429 and 503), key rotation, bundle pulls, credentials permissions and the offline grace.
#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use crate::common;

use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::time::Duration;

use chrono::{DateTime, Utc};
use clap::Parser as _;
use common::{sample_push, TestApp, TestLicense};
use tidemark_cli::cli::{exit, exit_status, run, Cli, Env};
use tidemark_store::{on_db, Backend};
use tidemark_wire::Tier;

pub(crate) struct Run {
    pub code: Result<u8, String>,
    /// The process's exit status: `code`, or the class of its error.
    pub status: u8,
    pub out: String,
}

pub(crate) fn env(
    app_url: &str,
    config: &Path,
    license_key: &str,
    extra: &[(&str, &str)],
    now: DateTime<Utc>,
) -> Env {
    let mut vars: HashMap<String, String> = HashMap::from([
        ("TIDEMARK_URL".into(), app_url.into()),
        ("XDG_CONFIG_HOME".into(), config.display().to_string()),
    ]);
    for (k, v) in extra {
        vars.insert(k.to_string(), v.to_string());
    }
    let key = license_key.to_owned();
    Env {
        vars,
        now,
        read_license_key: Box::new(move || Ok(format!("{key}\n"))),
        read_stdin: Box::new(|| Ok(String::new())),
        // Not a repository: a test says what git knows through the flags or the CI variables.
        run_git: Box::new(|_| None),
        max_jitter: Duration::from_millis(100),
        backoff_base: Duration::from_millis(100),
    }
}

pub(crate) async fn tidemark(env: &Env, args: &[&str]) -> Run {
    let cli = Cli::try_parse_from(std::iter::once("tidemark").chain(args.iter().copied())).unwrap();
    let mut out = Vec::new();
    let result = run(cli, env, &mut out).await;
    Run {
        status: match &result {
            Ok(code) => *code,
            Err(e) => exit_status(e),
        },
        code: result.map_err(|e| format!("{e:#}")),
        out: String::from_utf8(out).unwrap(),
    }
}

fn credentials_file(config: &Path) -> std::path::PathBuf {
    config.join("tidemark").join("credentials.json")
}

async fn activated(app: &TestApp, tier: Tier) -> (TestLicense, tempfile::TempDir) {
    let license = app.create_license(tier).await;
    let config = tempfile::tempdir().unwrap();
    let e = env(&app.base_url, config.path(), &license.key, &[], Utc::now());
    let r = tidemark(&e, &["activate", "--machine", "ci-main"]).await;
    assert_eq!(r.code, Ok(0), "{}", r.out);
    (license, config)
}

#[tokio::test]
async fn activate_status_and_push_with_regression_exit_code() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let (license, config) = activated(&app, Tier::Team).await;
    let creds = credentials_file(config.path());
    assert_eq!(
        std::fs::metadata(&creds).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let stored = std::fs::read_to_string(&creds).unwrap();
    assert!(stored.contains(&license.hash), "the hash is stored");
    assert!(
        !stored.contains(&license.key),
        "the license key itself is never stored"
    );
    assert!(stored.contains("svc_api_"));

    let e = env(&app.base_url, config.path(), "", &[], Utc::now());
    let r = tidemark(&e, &["status"]).await;
    assert_eq!(r.code, Ok(0));
    assert!(
        r.out.contains("licensed (team tier)") && r.out.contains("hosted_dashboard"),
        "{}",
        r.out
    );
    assert!(r.out.contains("Offline grace left: 6d 23h"), "{}", r.out);

    let file = config.path().join("scan.json");
    std::fs::write(
        &file,
        serde_json::to_vec(&sample_push("ignored", 80.0, "2026-11-22T10:00:00Z")).unwrap(),
    )
    .unwrap();
    let r = tidemark(&e, &["push", file.to_str().unwrap(), "--label", "payments"]).await;
    assert_eq!(r.code, Ok(0), "{}", r.out);
    assert!(
        r.out
            .contains(&format!("Pushed: {}/projects/prj_", app.base_url)),
        "{}",
        r.out
    );
    assert!(
        r.out.contains("scans/20261122-100000-payments"),
        "--label is used: {}",
        r.out
    );
    assert!(r.out.contains("Score delta: +0.00"), "{}", r.out);

    std::fs::write(
        &file,
        serde_json::to_vec(&sample_push("ignored", 72.5, "2026-11-23T10:00:00Z")).unwrap(),
    )
    .unwrap();
    let r = tidemark(
        &e,
        &[
            "push",
            file.to_str().unwrap(),
            "--label",
            "payments",
            "--fail-on-regression",
        ],
    )
    .await;
    assert_eq!(r.code, Ok(exit::VERDICT), "{}", r.out);
    assert!(r.out.contains("Score delta: -7.50"), "{}", r.out);
}

/// A CI job's set-up: a key activated with `--print-key` (for the CI secret store: printed
/// once, never written to disk), the environment that passes it as `TIDEMARK_API_KEY`, and a
/// scan file to push.
pub(crate) async fn with_ci_secret_key(
    app: &TestApp,
) -> (Env, tempfile::TempDir, String, std::path::PathBuf) {
    let license = app.create_license(Tier::Team).await;
    let config = tempfile::tempdir().unwrap();
    let e = env(&app.base_url, config.path(), &license.key, &[], Utc::now());
    let r = tidemark(&e, &["activate", "--machine", "ci", "--print-key"]).await;
    assert_eq!(r.code, Ok(0));
    let key = r.out.trim().to_owned();
    assert!(key.starts_with("svc_api_"), "{key}");
    assert!(!credentials_file(config.path()).exists());
    let e = env(
        &app.base_url,
        config.path(),
        "",
        &[("TIDEMARK_API_KEY", &key)],
        Utc::now(),
    );
    let file = config.path().join("scan.json");
    std::fs::write(
        &file,
        serde_json::to_vec(&sample_push("api", 50.0, "2026-11-22T10:00:00Z")).unwrap(),
    )
    .unwrap();
    (e, config, key, file)
}

#[tokio::test]
async fn a_rate_limited_push_waits_and_retries_with_a_ci_secret_key() {
    let app = TestApp::spawn_with(Backend::Sqlite, &[("TIDEMARK_WRITES_PER_MINUTE", "1")]).await;
    let (e, config, _key, file) = with_ci_secret_key(&app).await;
    assert_eq!(
        tidemark(&e, &["push", file.to_str().unwrap()]).await.code,
        Ok(0)
    );
    // Make the first write 58 s old, so the next slot opens in about two seconds.
    on_db!(&app.db, pool => {
        sqlx::query("UPDATE scans SET received_at = received_at - 58000").execute(pool).await.map(|_| ())
    })
    .unwrap();
    std::fs::write(
        &file,
        serde_json::to_vec(&sample_push("api", 55.0, "2026-11-22T11:00:00Z")).unwrap(),
    )
    .unwrap();
    let r = tidemark(&e, &["push", file.to_str().unwrap()]).await;
    assert_eq!(r.code, Ok(0), "{:?} {}", r.code, r.out);
    assert!(
        r.out.contains("Write rate exceeded; waiting") && r.out.contains("retry 1 of at most 40"),
        "{}",
        r.out
    );
    assert!(r.out.contains("Score delta: +5.00"), "{}", r.out);
    assert_eq!(app.count("scans").await, 2);
    assert!(
        !credentials_file(config.path()).exists(),
        "with TIDEMARK_API_KEY nothing is written to disk"
    );

    // Bounded: with no retries allowed the 429 is reported, not waited out.
    std::fs::write(
        &file,
        serde_json::to_vec(&sample_push("api", 56.0, "2026-11-22T12:00:00Z")).unwrap(),
    )
    .unwrap();
    let r = tidemark(&e, &["push", file.to_str().unwrap(), "--max-retries", "0"]).await;
    assert_eq!(r.status, exit::THROTTLED);
    let err = r.code.unwrap_err();
    assert!(err.contains("rate_limit_exceeded"), "{err}");
}

#[tokio::test]
async fn push_prints_the_gate_verdict_and_fail_on_gate_exits_3_with_the_reasons() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let (e, _config, _key, file) = with_ci_secret_key(&app).await;
    let r = tidemark(&e, &["push", file.to_str().unwrap()]).await;
    assert_eq!(r.code, Ok(0), "{}", r.out);
    assert!(r.out.contains("Quality gate: none"), "{}", r.out);
    let (project, account): (tidemark_wire::ids::ProjectId, tidemark_wire::ids::AccountId) =
        on_db!(&app.db, pool => {
            sqlx::query_as("SELECT id, account_id FROM projects").fetch_one(pool).await
        })
        .unwrap();
    let gate = tidemark_domain::gate::QualityGate::new(Some(60.0), None, None)
        .unwrap()
        .unwrap();
    assert!(tidemark_store::gates::set_project_gate(
        &app.db,
        &account,
        &project,
        Some(&gate),
        &tidemark_store::testing::audit()
    )
    .await
    .unwrap());

    let write = |score: f64, at: &str| {
        std::fs::write(
            &file,
            serde_json::to_vec(&sample_push("api", score, at)).unwrap(),
        )
        .unwrap()
    };
    // Without the flag a failed gate is reported, not an error.
    write(55.0, "2026-11-22T11:00:00Z");
    let r = tidemark(&e, &["push", file.to_str().unwrap()]).await;
    assert_eq!(r.code, Ok(0), "{}", r.out);
    assert!(
        r.out
            .contains("Quality gate: failed\n  - score 55 is below the gate's minimum of 60"),
        "{}",
        r.out
    );

    write(56.0, "2026-11-22T12:00:00Z");
    let r = tidemark(&e, &["push", file.to_str().unwrap(), "--fail-on-gate"]).await;
    assert_eq!(r.code, Ok(exit::VERDICT), "{}", r.out);
    assert!(
        r.out.contains("score 56 is below the gate's minimum of 60"),
        "{}",
        r.out
    );

    write(61.0, "2026-11-22T13:00:00Z");
    let r = tidemark(&e, &["push", file.to_str().unwrap(), "--fail-on-gate"]).await;
    assert_eq!(r.code, Ok(0), "{}", r.out);
    assert!(r.out.contains("Quality gate: passed"), "{}", r.out);
}

#[tokio::test]
async fn a_busy_server_is_waited_out_like_a_rate_limit() {
    // 16 MiB: one push of the largest size fills the replica's budget.
    let app = TestApp::spawn_with(Backend::Sqlite, &[("TIDEMARK_PUSH_BUDGET_MIB", "16")]).await;
    let (e, _config, key, file) = with_ci_secret_key(&app).await;

    // Another client's large push holds the budget for a second, then gives up.
    let stalled = common::stall_a_push(&app, &key, 16 * 1024 * 1024).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(1)).await;
        drop(stalled);
    });
    let r = tidemark(&e, &["push", file.to_str().unwrap()]).await;
    assert_eq!(r.code, Ok(0), "{:?} {}", r.code, r.out);
    assert!(
        r.out.contains("The server is busy; waiting") && r.out.contains("retry 1 of at most 40"),
        "{}",
        r.out
    );
    assert_eq!(app.count("scans").await, 1);

    // With no retries allowed, the 503 is reported with its code.
    let _held = common::stall_a_push(&app, &key, 16 * 1024 * 1024).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let r = tidemark(&e, &["push", file.to_str().unwrap(), "--max-retries", "0"]).await;
    assert_eq!(
        r.status,
        exit::THROTTLED,
        "busy after the retries is throttling too"
    );
    let err = r.code.unwrap_err();
    assert!(err.contains("server_busy"), "{err}");
}

#[tokio::test]
async fn rotated_and_malformed_keys_tell_the_user_to_activate_again() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let (license, config) = activated(&app, Tier::Team).await;
    let file = config.path().join("scan.json");
    std::fs::write(
        &file,
        serde_json::to_vec(&sample_push("api", 50.0, "2026-11-22T10:00:00Z")).unwrap(),
    )
    .unwrap();
    // Rotation in Settings: every key of the account is revoked at once.
    tidemark_services::api_keys::rotate(
        &app.db,
        &license.account_id,
        "rotated",
        &tidemark_store::testing::audit(),
    )
    .await
    .unwrap();
    let e = env(&app.base_url, config.path(), "", &[], Utc::now());
    let r = tidemark(&e, &["push", file.to_str().unwrap()]).await;
    assert_eq!(r.status, exit::AUTH);
    let err = r.code.unwrap_err();
    assert!(
        err.contains("invalid_api_key") && err.contains("activate"),
        "{err}"
    );

    let e = env(
        &app.base_url,
        config.path(),
        "",
        &[("TIDEMARK_API_KEY", "abc123")],
        Utc::now(),
    );
    let r = tidemark(&e, &["push", file.to_str().unwrap()]).await;
    assert_eq!(r.status, exit::AUTH);
    let err = r.code.unwrap_err();
    assert!(
        err.contains("malformed") && err.contains("activate"),
        "{err}"
    );
}

#[tokio::test]
async fn bundle_pull_verifies_the_checksum_and_keeps_the_old_copy_on_mismatch() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let (_, config) = activated(&app, Tier::Agency).await;
    let e = env(&app.base_url, config.path(), "", &[], Utc::now());
    let dir = config.path().join("bundles");
    let r = tidemark(&e, &["bundle", "pull", "--dir", dir.to_str().unwrap()]).await;
    assert_eq!(r.code, Ok(0));
    assert!(
        r.out.contains("No bundle has been published yet"),
        "{}",
        r.out
    );

    let published = tidemark_services::bundles::publish(
        &app.db,
        &app.base_url,
        "p.tar",
        b"profiles v1",
        &tidemark_store::testing::audit(),
    )
    .await
    .unwrap();
    let r = tidemark(&e, &["bundle", "pull", "--dir", dir.to_str().unwrap()]).await;
    assert_eq!(r.code, Ok(0), "{}", r.out);
    assert_eq!(
        std::fs::read(dir.join("profile-bundle")).unwrap(),
        b"profiles v1"
    );

    // The server now serves other bytes than the checksum it announces.
    let tampered = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, b"evil");
    on_db!(&app.db, pool => {
        sqlx::query("UPDATE bundles SET content = $1 WHERE id = $2")
            .bind(&tampered).bind(&published.bundle_id).execute(pool).await.map(|_| ())
    })
    .unwrap();
    let err = tidemark(&e, &["bundle", "pull", "--dir", dir.to_str().unwrap()])
        .await
        .code
        .unwrap_err();
    assert!(err.contains("does not match its checksum"), "{err}");
    assert_eq!(
        std::fs::read(dir.join("profile-bundle")).unwrap(),
        b"profiles v1",
        "old copy kept"
    );
}

#[tokio::test]
async fn loose_credentials_permissions_are_refused() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let (_, config) = activated(&app, Tier::Team).await;
    let creds = credentials_file(config.path());
    std::fs::set_permissions(&creds, std::fs::Permissions::from_mode(0o644)).unwrap();
    let e = env(&app.base_url, config.path(), "", &[], Utc::now());
    let err = tidemark(&e, &["status"]).await.code.unwrap_err();
    assert!(err.contains("chmod 600"), "{err}");
    assert_eq!(
        std::fs::metadata(&creds).unwrap().permissions().mode() & 0o777,
        0o644,
        "never relaxed or changed"
    );
}

#[tokio::test]
async fn an_unreachable_service_keeps_the_license_for_the_grace_period_only() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let (_, config) = activated(&app, Tier::Team).await;
    let closed = format!("http://127.0.0.1:{}", common::free_port());
    let later = |d: chrono::Duration| env(&closed, config.path(), "", &[], Utc::now() + d);

    let r = tidemark(&later(chrono::Duration::hours(23)), &["status"]).await;
    assert_eq!(r.code, Ok(0), "fresh cache: no call needed: {}", r.out);
    assert!(!r.out.contains("unreachable"), "{}", r.out);

    let r = tidemark(
        &later(chrono::Duration::days(6) + chrono::Duration::hours(23)),
        &["status"],
    )
    .await;
    assert_eq!(r.code, Ok(0), "{}", r.out);
    assert!(
        r.out
            .contains("service unreachable: using the cached validation"),
        "{}",
        r.out
    );

    let r = tidemark(
        &later(chrono::Duration::days(7) + chrono::Duration::minutes(1)),
        &["status"],
    )
    .await;
    assert_eq!(r.code, Ok(exit::AUTH), "{}", r.out);
    assert!(
        r.out.contains("unlicensed") && r.out.contains("7 days"),
        "{}",
        r.out
    );
}

#[tokio::test]
async fn a_definitive_refusal_downgrades_at_once() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let (license, config) = activated(&app, Tier::Team).await;
    app.set_suspended(&license, true).await;
    // The cache is 25 hours old, so the scanner asks, and the answer is final.
    let e = env(
        &app.base_url,
        config.path(),
        "",
        &[],
        Utc::now() + chrono::Duration::hours(25),
    );
    let r = tidemark(&e, &["status"]).await;
    assert_eq!(r.code, Ok(exit::AUTH), "{}", r.out);
    assert!(
        r.out.contains("unlicensed") && r.out.contains("not valid"),
        "{}",
        r.out
    );
}

/// In GitHub Actions: `push -` reads the body from standard input, and the step gets its
/// outputs and a summary; `logout` removes the credentials file.
#[tokio::test]
async fn push_from_stdin_writes_github_outputs_and_logout_forgets_the_machine() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let (license, config) = activated(&app, Tier::Team).await;
    let outputs = config.path().join("github_output");
    let summary = config.path().join("github_step_summary");
    std::fs::write(&outputs, "earlier=kept\n").unwrap();
    let mut e = env(
        &app.base_url,
        config.path(),
        &license.key,
        &[
            ("GITHUB_OUTPUT", outputs.to_str().unwrap()),
            ("GITHUB_STEP_SUMMARY", summary.to_str().unwrap()),
        ],
        Utc::now(),
    );
    let body = serde_json::to_string(&sample_push("api", 71.5, "2026-11-22T10:00:00Z")).unwrap();
    e.read_stdin = Box::new(move || Ok(body.clone()));
    let r = tidemark(&e, &["push", "-"]).await;
    assert_eq!(r.code, Ok(0), "{}", r.out);
    let url = r
        .out
        .lines()
        .find_map(|l| l.strip_prefix("Pushed: "))
        .unwrap()
        .to_owned();
    let scan_id = url.rsplit('/').next().unwrap().to_owned();
    assert_eq!(
        std::fs::read_to_string(&outputs).unwrap(),
        format!("earlier=kept\nscan_id={scan_id}\nscore=71.5\ndelta=0\ngate=none\ndashboard_url={url}\nbranch=\nnew_findings=\n"),
        "appended, one name=value per line"
    );
    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(md.contains(&format!("[{scan_id}]({url})")), "{md}");
    assert!(md.contains("| 71.5 | +0.00 | none |"), "{md}");

    // --json: standard output is one JSON object, the service's answer.
    let later = serde_json::to_string(&sample_push("api", 70.0, "2026-11-22T11:00:00Z")).unwrap();
    e.read_stdin = Box::new(move || Ok(later.clone()));
    let r = tidemark(&e, &["push", "-", "--json", "--fail-on-regression"]).await;
    assert_eq!(r.code, Ok(3), "{}", r.out);
    assert_eq!(r.out.lines().count(), 1, "{}", r.out);
    let answer: serde_json::Value = serde_json::from_str(&r.out).unwrap();
    assert_eq!(answer["score_delta"], -1.5);
    assert_eq!(answer["gate"]["status"], "none");
    assert!(answer["scan_id"]
        .as_str()
        .unwrap()
        .starts_with("20261122-110000"));
    let r = tidemark(&e, &["status", "--json"]).await;
    assert_eq!(r.code, Ok(0));
    let status: serde_json::Value = serde_json::from_str(&r.out).unwrap();
    assert_eq!(
        (status["licensed"].as_bool(), status["tier"].as_str()),
        (Some(true), Some("team")),
        "{status}"
    );
    assert_eq!(status["offline"], false);

    e.read_stdin = Box::new(|| Ok("not json".to_owned()));
    let r = tidemark(&e, &["push", "-"]).await;
    assert_eq!(r.status, exit::FAILURE);
    let err = r.code.unwrap_err();
    assert!(err.contains("standard input is not JSON"), "{err}");

    let creds = credentials_file(config.path());
    assert!(creds.exists());
    let r = tidemark(&e, &["logout"]).await;
    assert_eq!(r.code, Ok(0));
    assert!(!creds.exists(), "{}", r.out);
    assert!(
        r.out
            .contains("still works until an admin rotates or revokes it"),
        "{}",
        r.out
    );
    let r = tidemark(&e, &["logout"]).await;
    assert_eq!(r.code, Ok(0));
    assert!(r.out.contains("Not activated"), "{}", r.out);
    let r = tidemark(&e, &["status"]).await;
    assert_eq!(r.status, exit::AUTH, "not activated");
    let status = r.code.unwrap_err();
    assert!(status.contains("run `tidemark activate`"), "{status}");
}

/// Completions and the man page come from the same definition as the parser.
#[tokio::test]
async fn completions_and_the_man_page_cover_every_command() {
    let config = tempfile::tempdir().unwrap();
    let e = env("http://127.0.0.1:9", config.path(), "", &[], Utc::now());
    let bash = tidemark(&e, &["completions", "bash"]).await;
    assert_eq!(bash.code, Ok(0));
    for word in [
        "activate",
        "status",
        "push",
        "logout",
        "--fail-on-gate",
        "--json",
    ] {
        assert!(bash.out.contains(word), "bash completion lacks {word}");
    }
    let zsh = tidemark(&e, &["completions", "zsh"]).await;
    assert!(
        zsh.out.starts_with("#compdef tidemark"),
        "{}",
        &zsh.out[..40]
    );
    let man = tidemark(&e, &["man"]).await;
    assert_eq!(man.code, Ok(0));
    assert!(man.out.contains(".TH tidemark 1"), "{}", &man.out[..80]);
    for word in ["activate", "push", "logout", "bundle"] {
        assert!(man.out.contains(word), "the man page lacks {word}");
    }
    let bad = Cli::try_parse_from(["tidemark", "completions", "cmd.exe"]);
    assert!(bad.is_err(), "an unknown shell is refused by the parser");
}

/// Behind TLS with a certificate from the company's own CA: untrusted (exit 4, no retries,
/// the hint names --ca-cert) until the CA is given by flag or by TIDEMARK_CA_CERT.
#[tokio::test]
async fn behind_an_internal_ca_the_ca_certificate_is_needed_and_enough() {
    let app = TestApp::spawn_with(
        Backend::Sqlite,
        &[("TIDEMARK_TRUSTED_PROXIES", "127.0.0.1")],
    )
    .await;
    let nginx = common::nginx::Nginx::start(&[app.addr]).await;
    let (e, _config, _key, file) = with_ci_secret_key(&app).await;
    let file = file.to_str().unwrap();
    let url = nginx.https_url.as_str();
    let ca = nginx.ca_pem.to_str().unwrap();

    let r = tidemark(&e, &["push", file, "--url", url]).await;
    assert_eq!(r.status, exit::NETWORK, "{:?}", r.code);
    let err = r.code.unwrap_err();
    assert!(
        err.contains("is not trusted") && err.contains("--ca-cert"),
        "{err}"
    );
    assert!(
        !r.out.contains("waiting"),
        "a certificate is not retried: {}",
        r.out
    );
    assert_eq!(app.count("scans").await, 0);

    let r = tidemark(&e, &["push", file, "--url", url, "--ca-cert", ca]).await;
    assert_eq!(r.code, Ok(exit::OK), "{}", r.out);
    assert!(r.out.contains("Pushed: "), "{}", r.out);
    assert_eq!(app.count("scans").await, 1);

    let mut with_env = env(&app.base_url, _config.path(), "", &[], Utc::now());
    with_env.vars = e.vars.clone();
    with_env.vars.insert("TIDEMARK_CA_CERT".into(), ca.into());
    with_env.vars.insert("TIDEMARK_URL".into(), url.into());
    let r = tidemark(&with_env, &["push", file]).await;
    assert_eq!(r.code, Ok(exit::OK), "{}", r.out);
    assert!(
        r.out.contains("Score delta: +0.00"),
        "the same push, replayed: {}",
        r.out
    );

    // A file that is not a certificate is a local mistake, named as such.
    let bogus = _config.path().join("not-a-ca.pem");
    std::fs::write(&bogus, "hello").unwrap();
    let r = tidemark(
        &e,
        &[
            "push",
            file,
            "--url",
            url,
            "--ca-cert",
            bogus.to_str().unwrap(),
        ],
    )
    .await;
    assert_eq!(r.status, exit::FAILURE);
    let err = r.code.unwrap_err();
    assert!(
        err.contains("not-a-ca.pem") && err.contains("no PEM certificate"),
        "{err}"
    );
}

/// A replica that is down behind the proxy (502 from nginx) or a service that refuses
/// connections is retried with back-off; a push that gets through counts once; when the
/// retries run out the exit status says "network".
#[tokio::test]
async fn a_push_is_retried_with_back_off_until_the_service_answers() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let upstream = common::free_port();
    let nginx =
        common::nginx::Nginx::start(&[std::net::SocketAddr::from(([127, 0, 0, 1], upstream))])
            .await;
    let (e, _config, _key, file) = with_ci_secret_key(&app).await;
    let file = file.to_str().unwrap();
    let ca = nginx.ca_pem.to_str().unwrap();

    // The replica comes up after a while (backoff base 100 ms: 100, 200, 400, 800 ms…).
    let to = app.addr;
    let late = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(600)).await;
        common::nginx::forward(upstream, to).await
    });
    let r = tidemark(
        &e,
        &["push", file, "--url", &nginx.https_url, "--ca-cert", ca],
    )
    .await;
    assert_eq!(r.code, Ok(exit::OK), "{}", r.out);
    assert!(
        r.out
            .contains("The service did not answer (HTTP 502 Bad Gateway); waiting")
            && r.out.contains("retry 1 of at most 40"),
        "{}",
        r.out
    );
    assert_eq!(app.count("scans").await, 1);
    drop(late.await.unwrap());

    // Nothing listens at all: two retries, then exit 4.
    let closed = format!("http://127.0.0.1:{}", common::free_port());
    let r = tidemark(&e, &["push", file, "--url", &closed, "--max-retries", "2"]).await;
    assert_eq!(r.status, exit::NETWORK, "{:?}", r.code);
    assert!(
        r.out
            .contains("The service did not answer (connection failed)")
            && r.out.contains("retry 2 of at most 2")
            && !r.out.contains("retry 3"),
        "{}",
        r.out
    );
    assert!(r.code.unwrap_err().contains("could not be reached"));
}

/// A push body with FAIL findings on `resources` (rule `r-1` each).
fn findings_push(score: f64, at: &str, resources: &[&str]) -> serde_json::Value {
    let mut body = sample_push("api", score, at);
    body["findings"] = resources
        .iter()
        .map(|r| {
            serde_json::json!({"rule_id": "r-1", "resource": r, "status": "FAIL", "severity": "high",
                               "message": "m", "remediation": "r"})
        })
        .collect();
    body
}

/// GitHub Actions: the CLI fills `git` from the runner's variables and event payload; with
/// `--comment` it makes one pull-request comment, updates it on the next push, and sets a
/// commit status on the head commit each time. Every request is checked against GitHub's
/// published OpenAPI description (the forge peer answers 422 to anything else).
#[tokio::test]
async fn github_pull_requests_get_one_comment_updated_and_a_status() {
    let forge = common::forge::Forge::start().await;
    let app = TestApp::spawn(Backend::Sqlite).await;
    let (_, config) = activated(&app, Tier::Team).await;
    let dir = config.path();
    let head_sha = "1111111111111111111111111111111111111111";
    let event = dir.join("event.json");
    std::fs::write(
        &event,
        serde_json::json!({"number": 12, "pull_request": {"number": 12, "title": "Open the bucket",
            "html_url": "https://github.com/acme/api/pull/12", "head": {"sha": head_sha}},
            "repository": {"default_branch": "main"}})
        .to_string(),
    )
    .unwrap();
    let api = format!("{}/github", forge.base);
    let summary = dir.join("summary.md");
    let common_vars = [
        ("GITHUB_STEP_SUMMARY", summary.to_str().unwrap()),
        ("GITHUB_ACTIONS", "true"),
        ("GITHUB_REPOSITORY", "acme/api"),
        ("GITHUB_SERVER_URL", "https://github.com"),
        ("GITHUB_API_URL", api.as_str()),
        ("GITHUB_TOKEN", forge.token.as_str()),
        ("GITHUB_EVENT_PATH", event.to_str().unwrap()),
    ];
    let with = |extra: &[(&'static str, &'static str)]| {
        let mut vars: Vec<(&str, &str)> = common_vars.to_vec();
        vars.extend_from_slice(extra);
        env(&app.base_url, dir, "", &vars, Utc::now())
    };
    let file = dir.join("scan.json");
    let push_file = |body: serde_json::Value| {
        std::fs::write(&file, serde_json::to_vec(&body).unwrap()).unwrap();
        file.to_str().unwrap().to_owned()
    };

    // main's push: a status on its commit, no comment (there is no pull request).
    let on_main = with(&[
        ("GITHUB_REF_NAME", "main"),
        ("GITHUB_REF_TYPE", "branch"),
        ("GITHUB_SHA", "2222222222222222222222222222222222222222"),
    ]);
    let path = push_file(findings_push(90.0, "2026-11-22T10:00:00Z", &["bucket.a"]));
    let r = tidemark(&on_main, &["push", &path, "--comment"]).await;
    assert_eq!(r.code, Ok(0), "{}", r.out);
    assert!(
        r.out.contains("Branch main (from GitHub Actions)"),
        "{}",
        r.out
    );
    assert!(
        r.out.contains("Commit status: success on 2222222"),
        "{}",
        r.out
    );
    let (project, account): (tidemark_wire::ids::ProjectId, tidemark_wire::ids::AccountId) =
        on_db!(&app.db, pool => {
            sqlx::query_as("SELECT id, account_id FROM projects").fetch_one(pool).await
        })
        .unwrap();
    let gate =
        tidemark_domain::gate::QualityGate::new(None, None, Some(tidemark_wire::Severity::Low))
            .unwrap()
            .unwrap();
    tidemark_store::gates::set_project_gate(
        &app.db,
        &account,
        &project,
        Some(&gate),
        &tidemark_store::testing::audit(),
    )
    .await
    .unwrap();

    let in_pr = with(&[
        ("GITHUB_EVENT_NAME", "pull_request"),
        ("GITHUB_REF", "refs/pull/12/merge"),
        ("GITHUB_REF_NAME", "12/merge"),
        ("GITHUB_HEAD_REF", "open-bucket"),
        ("GITHUB_BASE_REF", "main"),
        ("GITHUB_SHA", "3333333333333333333333333333333333333333"),
    ]);
    // Only main's finding: passes, one comment.
    let path = push_file(findings_push(89.0, "2026-11-22T11:00:00Z", &["bucket.a"]));
    let r = tidemark(&in_pr, &["push", &path, "--comment", "--fail-on-gate"]).await;
    assert_eq!(r.code, Ok(0), "{}", r.out);
    assert!(
        r.out
            .contains("Pull request #12 into main (from GitHub Actions)"),
        "{}",
        r.out
    );
    assert!(
        r.out
            .contains("Against main: 0 new findings and 0 fixed compared with main"),
        "{}",
        r.out
    );
    assert!(
        r.out.contains(
            "Pull request comment created: https://github.com/acme/api/pull/12#issuecomment-"
        ),
        "{}",
        r.out
    );
    // A new finding: the same comment, updated; a failing status; exit status 3.
    let path = push_file(findings_push(
        88.0,
        "2026-11-22T12:00:00Z",
        &["bucket.a", "bucket.open"],
    ));
    let r = tidemark(&in_pr, &["push", &path, "--comment", "--fail-on-gate"]).await;
    assert_eq!(r.status, exit::VERDICT, "{}", r.out);
    assert!(r.out.contains("Pull request comment updated"), "{}", r.out);

    let state = forge.state().await;
    assert_eq!(
        state["failures"],
        serde_json::json!([]),
        "every request matched GitHub's description"
    );
    let comments = state["comments"].as_array().unwrap();
    assert_eq!(comments.len(), 1, "one comment, however many pushes");
    assert_eq!(
        (
            comments[0]["issue"].as_u64(),
            comments[0]["updates"].as_u64()
        ),
        (Some(12), Some(1))
    );
    let body = comments[0]["body"].as_str().unwrap();
    assert!(
        body.starts_with(&format!("<!-- tidemark:report project={project} -->")),
        "{body}"
    );
    assert!(
        body.contains("❌ quality gate failed") && body.contains("| 88 | -2.00 | 1 | 0 |"),
        "{body}"
    );
    let statuses: Vec<(String, String, String)> = state["statuses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["sha"].as_str().unwrap().to_owned(),
                s["state"].as_str().unwrap().to_owned(),
                s["context"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        statuses,
        [
            (
                "2222222222222222222222222222222222222222".to_owned(),
                "success".to_owned(),
                "tidemark/api".to_owned()
            ),
            (
                head_sha.to_owned(),
                "success".to_owned(),
                "tidemark/api".to_owned()
            ),
            (
                head_sha.to_owned(),
                "failure".to_owned(),
                "tidemark/api".to_owned()
            ),
        ],
        "statuses on main's commit, then on the pull request's head (not the merge commit)"
    );
    assert_eq!(
        state["statuses"][2]["description"],
        "Gate failed · 1 new finding vs main"
    );
    // The job summary states the verdict against the base.
    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(
        md.contains("**Against `main`:** 1 new finding and 0 fixed compared with main"),
        "{md}"
    );
}

/// GitLab CI: a merge request's pipeline, a project access token; one note, updated, and a
/// commit status, checked against GitLab's notes and statuses API.
#[tokio::test]
async fn gitlab_merge_requests_get_one_note_updated_and_a_status() {
    let forge = common::forge::Forge::start().await;
    let app = TestApp::spawn(Backend::Sqlite).await;
    let (_, config) = activated(&app, Tier::Team).await;
    let dir = config.path();
    let api = format!("{}/gitlab/api/v4", forge.base);
    let vars = [
        ("GITLAB_CI", "true"),
        ("CI_API_V4_URL", api.as_str()),
        ("CI_PROJECT_ID", "acme/api"),
        ("CI_PROJECT_URL", "https://gitlab.example.com/acme/api"),
        ("CI_DEFAULT_BRANCH", "main"),
        ("CI_MERGE_REQUEST_IID", "7"),
        ("CI_MERGE_REQUEST_TARGET_BRANCH_NAME", "main"),
        ("CI_MERGE_REQUEST_SOURCE_BRANCH_NAME", "narrow-iam"),
        ("CI_MERGE_REQUEST_TITLE", "Narrow IAM"),
        ("CI_COMMIT_SHA", "4444444444444444444444444444444444444444"),
        ("CI_JOB_TOKEN", "not-this-one"),
        ("TIDEMARK_GITLAB_TOKEN", forge.token.as_str()),
    ];
    let e = env(&app.base_url, dir, "", &vars, Utc::now());
    let file = dir.join("scan.json");
    for (i, resources) in [&["a"][..], &["a", "b"][..]].iter().enumerate() {
        let at = format!("2026-11-22T1{i}:00:00Z");
        std::fs::write(
            &file,
            serde_json::to_vec(&findings_push(80.0, &at, resources)).unwrap(),
        )
        .unwrap();
        let r = tidemark(&e, &["push", file.to_str().unwrap(), "--comment"]).await;
        assert_eq!(r.code, Ok(0), "{}", r.out);
        assert!(
            r.out.contains("Pull request #7 into main (from GitLab CI)"),
            "{}",
            r.out
        );
        assert!(
            r.out.contains("main had no scan yet") || r.out.contains("main has no scan yet"),
            "{}",
            r.out
        );
    }
    let state = forge.state().await;
    assert_eq!(
        state["failures"],
        serde_json::json!([]),
        "every request matched the GitLab API"
    );
    let notes = state["comments"].as_array().unwrap();
    assert_eq!(notes.len(), 1);
    assert_eq!(
        (
            notes[0]["repo"].as_str(),
            notes[0]["issue"].as_u64(),
            notes[0]["updates"].as_u64()
        ),
        (Some("acme/api"), Some(7), Some(1))
    );
    assert!(notes[0]["body"]
        .as_str()
        .unwrap()
        .contains("`main` has no scan yet"));
    let states: Vec<&str> = state["statuses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["state"].as_str().unwrap())
        .collect();
    assert_eq!(states, ["success", "success"]);
    assert_eq!(state["statuses"][0]["name"], "tidemark/api");
    let requests = state["requests"].as_array().unwrap();
    assert!(
        requests
            .iter()
            .any(|r| r["path"] == "/gitlab/api/v4/projects/acme%2Fapi/merge_requests/7/notes"),
        "the project path is URL-encoded"
    );
}
