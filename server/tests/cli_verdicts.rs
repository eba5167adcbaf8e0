//! The `tidemark` command trusts signatures only: every edit of the cache the user owns, a
//! cache from another licence or machine, an unknown or retired key, a key set no trusted
//! key signed, a clock moved back, the end of the grace, offline licence files, and a
//! rotation picked up online. The clock is the command's injected one, and (for the real
//! binary) libfaketime's.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use base64::Engine as _;
use chrono::{Duration, Utc};
use serde_json::Value;
use tidemark_cli::cli::exit;
use tidemark_store::Backend;
use tidemark_wire::Tier;

use crate::cli_client::{env, tidemark};
use crate::common::{self, TestApp, TestLicense};

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::URL_SAFE_NO_PAD;
const MACHINE: (&str, &str) = ("TIDEMARK_MACHINE_FINGERPRINT", "sha256:this-machine");

fn credentials(config: &Path) -> PathBuf {
    config.join("tidemark").join("credentials.json")
}

fn read(config: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(credentials(config)).unwrap()).unwrap()
}

/// Rewrites the credentials file as a user with an editor would (its mode stays 0600).
fn write(config: &Path, creds: &Value) {
    std::fs::write(
        credentials(config),
        serde_json::to_string_pretty(creds).unwrap(),
    )
    .unwrap();
}

async fn activated(app: &TestApp, tier: Tier) -> (TestLicense, tempfile::TempDir) {
    let license = app.create_license(tier).await;
    let config = tempfile::tempdir().unwrap();
    let e = env(
        &app.base_url,
        config.path(),
        &license.key,
        &[MACHINE],
        Utc::now(),
    );
    let r = tidemark(&e, &["activate", "--machine", "laptop"]).await;
    assert_eq!(r.code, Ok(0), "{}", r.out);
    (license, config)
}

fn closed_url() -> String {
    format!("http://127.0.0.1:{}", common::free_port())
}

/// `status` with the service out of reach, `days` from now, on this machine.
async fn offline_status(config: &Path, after: Duration) -> (Result<u8, String>, String) {
    let e = env(&closed_url(), config, "", &[MACHINE], Utc::now() + after);
    let r = tidemark(&e, &["status"]).await;
    (r.code, r.out)
}

/// The verdict's payload re-encoded after `edit`, its signature kept.
fn forged_payload(jws: &str, edit: impl Fn(&mut Value)) -> String {
    let parts: Vec<&str> = jws.split('.').collect();
    let mut payload: Value = serde_json::from_slice(&B64.decode(parts[1]).unwrap()).unwrap();
    edit(&mut payload);
    format!(
        "{}.{}.{}",
        parts[0],
        B64.encode(payload.to_string()),
        parts[2]
    )
}

#[tokio::test]
async fn no_edit_of_the_cache_makes_a_license_valid() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let (license, config) = activated(&app, Tier::Team).await;
    let original = read(config.path());
    assert!(original["validation"]["verdict"].is_string(), "{original}");
    assert!(original["trusted_keys"]["keys"][0]["kid"].is_string());
    // Untouched, it licenses offline within the grace.
    let (code, out) = offline_status(config.path(), Duration::days(2)).await;
    assert_eq!(code, Ok(0), "{out}");

    let jws = original["validation"]["verdict"]
        .as_str()
        .unwrap()
        .to_owned();
    let far = (Utc::now() + Duration::days(365)).timestamp();
    type Edit = Box<dyn Fn(&mut Value)>;
    let edits: Vec<(&str, Edit, &str)> = vec![
        (
            "exp",
            Box::new(move |p: &mut Value| p["exp"] = far.into()),
            "changed after it was signed",
        ),
        (
            "iat",
            Box::new(move |p: &mut Value| p["iat"] = (far - 86_400).into()),
            "changed after it was signed",
        ),
        (
            "valid",
            Box::new(|p: &mut Value| p["valid"] = true.into()),
            "changed after it was signed",
        ),
        (
            "tier",
            Box::new(|p: &mut Value| p["tier"] = "enterprise".into()),
            "changed after it was signed",
        ),
        (
            "machine",
            Box::new(|p: &mut Value| p["machine"] = "sha256:this-machine".into()),
            "changed after it was signed",
        ),
    ];
    for (field, edit, expected) in edits {
        let mut creds = original.clone();
        creds["validation"]["verdict"] = forged_payload(&jws, edit).into();
        write(config.path(), &creds);
        // Even within the grace, an edited verdict is refused.
        let (code, out) = offline_status(config.path(), Duration::days(2)).await;
        assert_eq!(code, Ok(exit::AUTH), "{field}: {out}");
        assert!(out.contains(expected), "{field}: {out}");
    }
    // The guard and the kind are no way round it either.
    let mut creds = original.clone();
    creds["validation"]["kind"] = "offline_file".into();
    write(config.path(), &creds);
    let (code, out) = offline_status(config.path(), Duration::days(8)).await;
    assert_eq!(code, Ok(exit::AUTH), "{out}");
    assert!(out.contains("not trustworthy"), "{out}");
    let mut creds = original.clone();
    creds["validation"]["newest_seen"] = "2020-01-01T00:00:00Z".into();
    write(config.path(), &creds);
    let (code, out) = offline_status(config.path(), Duration::days(8)).await;
    assert_eq!(code, Ok(exit::AUTH), "past the signed grace: {out}");
    // A key the user adds to the trusted list pins nothing: it signed no verdict here, and
    // the verdict names its own key.
    let mut creds = original.clone();
    creds["validation"]["verdict"] = Value::Null;
    write(config.path(), &creds);
    let (code, out) = offline_status(config.path(), Duration::hours(1)).await;
    assert_eq!(code, Ok(exit::AUTH), "no verdict, no licence: {out}");

    // A colleague's cache (another licence), and this cache on another machine.
    let (_, colleague) = activated(&app, Tier::Enterprise).await;
    let mut creds = original.clone();
    creds["validation"] = read(colleague.path())["validation"].clone();
    write(config.path(), &creds);
    let (code, out) = offline_status(config.path(), Duration::hours(1)).await;
    assert_eq!(code, Ok(exit::AUTH), "{out}");
    assert!(out.contains("another licence"), "{out}");
    write(config.path(), &original);
    let e = env(
        &closed_url(),
        config.path(),
        "",
        &[("TIDEMARK_MACHINE_FINGERPRINT", "sha256:other")],
        Utc::now(),
    );
    let r = tidemark(&e, &["status"]).await;
    assert_eq!(r.code, Ok(exit::AUTH), "{}", r.out);
    assert!(r.out.contains("another machine"), "{}", r.out);

    // Online, a tampered cache is simply replaced by a fresh verdict.
    let mut creds = original.clone();
    creds["validation"]["verdict"] =
        forged_payload(&jws, |p| p["tier"] = "enterprise".into()).into();
    write(config.path(), &creds);
    let e = env(
        &app.base_url,
        config.path(),
        &license.key,
        &[MACHINE],
        Utc::now(),
    );
    let r = tidemark(&e, &["status"]).await;
    assert_eq!(r.code, Ok(0), "{}", r.out);
    assert!(r.out.contains("team tier"), "{}", r.out);
}

#[tokio::test]
async fn a_clock_moved_back_and_the_end_of_the_grace_are_noticed() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let (_, config) = activated(&app, Tier::Team).await;
    let (code, out) = offline_status(config.path(), Duration::days(3)).await;
    assert_eq!(code, Ok(0), "{out}");
    assert!(
        out.contains("service unreachable: using the cached validation"),
        "{out}"
    );
    // Three days were seen; the clock set back to day one is not believed.
    let (code, out) = offline_status(config.path(), Duration::days(1)).await;
    assert_eq!(code, Ok(exit::AUTH), "{out}");
    assert!(out.contains("moved back"), "{out}");
    let (code, out) = offline_status(config.path(), Duration::days(7) + Duration::minutes(1)).await;
    assert_eq!(code, Ok(exit::AUTH), "{out}");
    assert!(out.contains("7 days"), "{out}");
}

/// A verdict for `license` signed by `kid`'s private half (opened from the database, as
/// someone holding the key would) with the payload `claims`.
async fn sign_as(app: &TestApp, kid: &str, claims: &Value) -> String {
    use ring::signature::Ed25519KeyPair;
    let keys = tidemark_store::signing_keys::list_keys(&app.db)
        .await
        .unwrap();
    let key = keys.iter().find(|k| k.window.kid == kid).unwrap();
    let pkcs8 = app
        .state
        .signer
        .secrets()
        .open(&key.private_sealed)
        .unwrap();
    let pair = Ed25519KeyPair::from_pkcs8(&pkcs8).unwrap();
    let header = serde_json::json!({"alg": "EdDSA", "typ": "tidemark-verdict+jwt", "kid": kid});
    let input = format!(
        "{}.{}",
        B64.encode(header.to_string()),
        B64.encode(claims.to_string())
    );
    let sig = pair.sign(input.as_bytes());
    format!("{input}.{}", B64.encode(sig.as_ref()))
}

fn payload(jws: &str) -> Value {
    serde_json::from_slice(&B64.decode(jws.split('.').nth(1).unwrap()).unwrap()).unwrap()
}

#[tokio::test]
async fn a_rotation_is_picked_up_online_and_retired_or_unknown_keys_sign_nothing() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let (license, config) = activated(&app, Tier::Team).await;
    let first_jws = read(config.path())["validation"]["verdict"]
        .as_str()
        .unwrap()
        .to_owned();
    let first = tidemark_cli::verdict::jws_kid(&first_jws).unwrap();

    let (ok, out, err) = app
        .command(&["--json", "signing-key", "rotate", "--overlap", "0"], &[])
        .await;
    assert!(ok, "{err}");
    let second = serde_json::from_str::<Value>(&out).unwrap()["added"]
        .as_str()
        .unwrap()
        .to_owned();
    app.state.signer.invalidate();

    // The old verdict still licenses offline; the next validation online learns the new key
    // (the old key vouches for it) and caches a verdict it signed.
    let (code, out) = offline_status(config.path(), Duration::hours(1)).await;
    assert_eq!(code, Ok(0), "{out}");
    let e = env(
        &app.base_url,
        config.path(),
        &license.key,
        &[MACHINE],
        Utc::now() + Duration::hours(25),
    );
    let r = tidemark(&e, &["status", "--json"]).await;
    assert_eq!(r.code, Ok(0), "{}", r.out);
    let status: Value = serde_json::from_str(r.out.trim()).unwrap();
    assert_eq!(status["signed_by"], second.as_str());
    let creds = read(config.path());
    let trusted: Vec<&str> = creds["trusted_keys"]["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["kid"].as_str().unwrap())
        .collect();
    assert_eq!(trusted, [first.as_str(), second.as_str()]);

    // The retired key's signature made after it stopped signing is refused, though the key
    // itself is real.
    let mut claims = payload(creds["validation"]["verdict"].as_str().unwrap());
    claims["iat"] = (Utc::now().timestamp() + 3600).into();
    let late = sign_as(&app, &first, &claims).await;
    let mut forged = creds.clone();
    forged["validation"]["verdict"] = late.into();
    write(config.path(), &forged);
    let (code, out) = offline_status(config.path(), Duration::hours(2)).await;
    assert_eq!(code, Ok(exit::AUTH), "{out}");
    assert!(out.contains("outside the time that key signs"), "{out}");

    // A verdict signed by another service's key: unknown here.
    let other = TestApp::spawn(Backend::Sqlite).await;
    let other_license = other.create_license(Tier::Enterprise).await;
    let res = other
        .client
        .post(other.url("/v1/license/validate"))
        .header("X-License-Key-Hash", &other_license.hash)
        .send()
        .await
        .unwrap();
    let foreign_key = tidemark_cli::verdict::jws_kid(
        res.json::<Value>().await.unwrap()["verdict"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    let foreign = sign_as(
        &other,
        &foreign_key,
        &payload(creds["validation"]["verdict"].as_str().unwrap()),
    )
    .await;
    let mut forged = creds.clone();
    forged["validation"]["verdict"] = foreign.into();
    write(config.path(), &forged);
    let (code, out) = offline_status(config.path(), Duration::hours(2)).await;
    assert_eq!(code, Ok(exit::AUTH), "{out}");
    assert!(out.contains("does not trust"), "{out}");

    // And that service's offline licence file: its key set is signed by no key trusted here.
    write(config.path(), &creds);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("foreign.json");
    let (ok, _, err) = other
        .command(
            &[
                "license",
                "file",
                "--license",
                &other_license.license_id,
                "--days",
                "30",
                "--out",
                file.to_str().unwrap(),
            ],
            &[],
        )
        .await;
    assert!(ok, "{err}");
    let e = env(
        &closed_url(),
        config.path(),
        &other_license.key,
        &[MACHINE],
        Utc::now(),
    );
    let r = tidemark(&e, &["activate", "--offline", file.to_str().unwrap()]).await;
    assert_ne!(r.code, Ok(0), "{}", r.out);
    assert!(
        format!("{:?}", r.code).contains("not vouched for"),
        "{:?}",
        r.code
    );
}

#[tokio::test]
async fn an_air_gapped_machine_runs_from_an_offline_license_file_until_it_expires() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let license = app.create_license(Tier::Enterprise).await;
    let dir = tempfile::tempdir().unwrap();
    let file = offline_file(&app, &license, dir.path(), "30").await;

    let config = tempfile::tempdir().unwrap();
    // Installed with no service anywhere.
    let install = |now, machine: (&'static str, &'static str), key: String| {
        let (config, file) = (config.path().to_owned(), file.clone());
        async move {
            let e = env(&closed_url(), &config, &key, &[machine], now);
            tidemark(&e, &["activate", "--offline", file.to_str().unwrap()]).await
        }
    };
    // Another licence's key, or another machine: refused.
    let stranger = app.create_license(Tier::Team).await;
    let r = install(Utc::now(), MACHINE, stranger.key.clone()).await;
    assert!(
        format!("{:?}", r.code).contains("another licence"),
        "{:?}",
        r.code
    );
    let r = install(
        Utc::now(),
        ("TIDEMARK_MACHINE_FINGERPRINT", "sha256:elsewhere"),
        license.key.clone(),
    )
    .await;
    assert!(
        format!("{:?}", r.code).contains("another machine"),
        "{:?}",
        r.code
    );

    let r = install(Utc::now(), MACHINE, license.key.clone()).await;
    assert_eq!(r.code, Ok(0), "{}", r.out);
    assert!(r.out.contains("Trusting signing key"), "{}", r.out);
    let (code, out) = offline_status(config.path(), Duration::days(29)).await;
    assert_eq!(code, Ok(0), "{out}");
    assert!(out.contains("Offline licence file: valid until"), "{out}");
    let (code, out) =
        offline_status(config.path(), Duration::days(30) + Duration::minutes(1)).await;
    assert_eq!(code, Ok(exit::AUTH), "{out}");
    assert!(out.contains("offline licence file expired"), "{out}");
    // An edited file is refused at install.
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let jws = doc["verdict"].as_str().unwrap().to_owned();
    doc["verdict"] = forged_payload(&jws, |p| {
        p["exp"] = (Utc::now().timestamp() + 400 * 86_400).into()
    })
    .into();
    std::fs::write(&file, doc.to_string()).unwrap();
    let r = install(Utc::now(), MACHINE, license.key.clone()).await;
    assert!(
        format!("{:?}", r.code).contains("changed after it was signed"),
        "{:?}",
        r.code
    );
}

const LIBFAKETIME: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";

/// Runs the real `tidemark` binary with `args` for the machine whose configuration is in
/// `config`, against `url`, its clock moved by libfaketime (`FAKETIME`, e.g. `+3d`): the exit
/// status and everything it printed.
async fn run_binary(
    bin: &Path,
    config: &Path,
    url: &str,
    args: &[&str],
    faketime: &str,
) -> (Option<i32>, String) {
    let mut command = std::process::Command::new(bin);
    command
        .args(args)
        .env_clear()
        .env("XDG_CONFIG_HOME", config)
        .env("TIDEMARK_URL", url)
        .env(MACHINE.0, MACHINE.1)
        .env("LD_PRELOAD", LIBFAKETIME)
        .env("FAKETIME", faketime)
        .env("FAKETIME_DONT_FAKE_MONOTONIC", "1");
    let out = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code(), text)
}

/// An offline licence file for `license`, bound to this machine, as the operator writes it.
async fn offline_file(app: &TestApp, license: &TestLicense, dir: &Path, days: &str) -> PathBuf {
    let file = dir.join("licence.json");
    let args = [
        "license",
        "file",
        "--license",
        &license.license_id,
        "--machine",
        MACHINE.1,
        "--days",
        days,
        "--out",
        file.to_str().unwrap(),
    ];
    let (ok, _, err) = app.command(&args, &[]).await;
    assert!(ok, "{err}");
    file
}

/// The real binary, its clock moved by libfaketime.
#[tokio::test]
async fn the_binary_reads_the_clock_libfaketime_moves() {
    assert!(
        Path::new(LIBFAKETIME).exists(),
        "libfaketime is missing: run scripts/setup.sh"
    );
    let bin = std::env::current_exe()
        .unwrap()
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("tidemark");
    assert!(
        bin.exists(),
        "{} is not built: cargo test -p tidemark-cli builds it",
        bin.display()
    );
    let app = TestApp::spawn(Backend::Sqlite).await;
    let (_, config) = activated(&app, Tier::Team).await;
    let closed = closed_url();
    let status =
        |faketime: &'static str| run_binary(&bin, config.path(), &closed, &["status"], faketime);
    let (code, out) = status("+3d").await;
    assert_eq!(code, Some(0), "{out}");
    let (code, out) = status("+1d").await;
    assert_eq!(code, Some(i32::from(exit::AUTH)), "{out}");
    assert!(out.contains("moved back"), "{out}");
    let (code, out) = status("+8d").await;
    assert_eq!(code, Some(i32::from(exit::AUTH)), "{out}");
    assert!(out.contains("7 days"), "{out}");

    // An offline licence file, installed by the binary and used until it expires.
    let license = app.create_license(Tier::Enterprise).await;
    let dir = tempfile::tempdir().unwrap();
    let file = offline_file(&app, &license, dir.path(), "10").await;
    let air_gapped = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("key");
    std::fs::write(&key_file, &license.key).unwrap();
    let run = |args: &'static [&'static str], faketime: &'static str| {
        run_binary(&bin, air_gapped.path(), &closed, args, faketime)
    };
    let install = [
        "activate",
        "--offline",
        file.to_str().unwrap(),
        "--license-key-file",
        key_file.to_str().unwrap(),
    ];
    let (code, out) = run_binary(&bin, air_gapped.path(), &closed, &install, "+0d").await;
    assert_eq!(code, Some(0), "{out}");
    let (code, out) = run(&["status"], "+9d").await;
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("Offline licence file: valid until"), "{out}");
    let (code, out) = run(&["status"], "+11d").await;
    assert_eq!(code, Some(i32::from(exit::AUTH)), "{out}");
    assert!(out.contains("offline licence file expired"), "{out}");
}
