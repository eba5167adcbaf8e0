//! The `tidemark` binary's exit statuses, by class, as a CI step sees them (the classes that
//! need no server; the others are pinned in the server's `cli_client` tests).
#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use std::path::Path;
use std::process::Command;

/// Runs the binary with nothing from this process's environment; nothing listens on port 9.
fn tidemark(config: &Path, env: &[(&str, &str)], args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tidemark"))
        .args(args)
        .env_clear()
        .env("XDG_CONFIG_HOME", config)
        .env("TIDEMARK_URL", "http://127.0.0.1:9")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn each_class_has_its_status() {
    let config = tempfile::tempdir().unwrap();
    let dir = config.path();
    // A wrong command line is 64, not clap's 2 (which means "authentication" here).
    let (code, err) = tidemark(dir, &[], &["push"]);
    assert_eq!(code, 64, "{err}");
    assert!(err.contains("<FILE>"), "{err}");
    assert_eq!(tidemark(dir, &[], &["--help"]).0, 0);

    // Not activated: authentication or license.
    let (code, err) = tidemark(dir, &[], &["status"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("tidemark activate"), "{err}");

    // A body that is not JSON is any other failure, found before any call.
    let key = [("TIDEMARK_API_KEY", "svc_api_x")];
    let body = dir.join("scan.json");
    std::fs::write(&body, "{").unwrap();
    let body = body.to_str().unwrap();
    let (code, err) = tidemark(dir, &key, &["push", body]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("is not JSON"), "{err}");

    // Nobody answers: network, once the retries (none here) are used up.
    std::fs::write(body, r#"{"project_label":"api","score":50}"#).unwrap();
    let (code, err) = tidemark(dir, &key, &["push", "--max-retries", "0", body]);
    assert_eq!(code, 4, "{err}");
    assert!(err.contains("could not be reached"), "{err}");
}
