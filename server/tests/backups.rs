//! Backups of the embedded SQLite database (issue 15): taken online under push load, they hold
//! every push acknowledged before they began; `restore` refuses while a server serves the file.
#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use crate::common;

use std::collections::HashSet;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{sample_push, tidemark_server as server, TestApp};
use tidemark_store::Backend;
use tidemark_wire::Tier;

async fn command_on(app: &TestApp, args: &[&str]) -> (bool, String, String) {
    app.command(args, &[]).await
}

async fn scan_ids(path: &std::path::Path) -> HashSet<String> {
    let url = format!("sqlite://{}?mode=ro", path.display());
    let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
    let rows: Vec<(String,)> = sqlx::query_as("SELECT scan_id FROM scans")
        .fetch_all(&pool)
        .await
        .unwrap();
    pool.close().await;
    rows.into_iter().map(|(id,)| id).collect()
}

#[tokio::test]
async fn a_backup_under_push_load_holds_every_push_acknowledged_before_it_began() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let (_, key) = app.with_key(Tier::Team).await;
    let acknowledged = Arc::new(Mutex::new(Vec::<String>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let pushers: Vec<_> = (0..4)
        .map(|w| {
            let (client, url, key) = (
                app.client.clone(),
                app.url("/v1/dashboard/push"),
                key.clone(),
            );
            let (acknowledged, stop) = (acknowledged.clone(), stop.clone());
            tokio::spawn(async move {
                let mut n = 0i64;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    let at = chrono::DateTime::from_timestamp(1_790_000_000 + n * 4 + w, 0)
                        .unwrap()
                        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
                    let res = client
                        .post(&url)
                        .header("X-API-Key", &key)
                        .json(&sample_push("payments", (n % 100) as f64, &at))
                        .send()
                        .await
                        .unwrap();
                    assert!(res.status().is_success(), "{}", res.status());
                    let body: serde_json::Value = res.json().await.unwrap();
                    acknowledged
                        .lock()
                        .unwrap()
                        .push(body["scan_id"].as_str().unwrap().to_owned());
                }
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(700)).await;

    // The operator's command, as a process of its own, while the pushes go on.
    let before: HashSet<String> = acknowledged.lock().unwrap().iter().cloned().collect();
    let file = app.data_dir.path().join("backup-1.db");
    let (ok, out, err) =
        command_on(&app, &["backup", "--to", file.to_str().unwrap(), "--json"]).await;
    assert!(ok, "{err}");
    let during = acknowledged.lock().unwrap().len();
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, Ordering::Relaxed);
    for p in pushers {
        p.await.unwrap();
    }
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["integrity"], "ok");

    let in_backup = scan_ids(&file).await;
    assert!(before.len() >= 10, "a real load: {}", before.len());
    let missing: Vec<&String> = before.difference(&in_backup).collect();
    assert!(
        missing.is_empty(),
        "acknowledged before the backup began, missing: {missing:?}"
    );
    assert_eq!(report["scans"], in_backup.len());
    let total = acknowledged.lock().unwrap().len();
    assert!(
        total > during,
        "pushes went on after the backup: {during} then {total}"
    );
    eprintln!(
        "backup under load: {} pushes acknowledged before it began, {} in the copy, {} in all",
        before.len(),
        in_backup.len(),
        total
    );

    // Never over an existing file.
    let (ok, _, err) = command_on(&app, &["backup", "--to", file.to_str().unwrap()]).await;
    assert!(!ok && err.contains("never overwrites"), "{err}");
}

#[test]
fn restore_refuses_a_running_server_then_puts_the_backup_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_str().unwrap();
    let env = [("TIDEMARK_DATA_DIR", data)];
    let (ok, _, err) = server(
        &env,
        &[
            "license",
            "create",
            "--email",
            "kept@example.com",
            "--tier",
            "team",
        ],
    );
    assert!(ok, "{err}");
    let backup = dir.path().join("kept.db");
    let (ok, _, err) = server(&env, &["backup", "--to", backup.to_str().unwrap()]);
    assert!(ok, "{err}");
    // A change after the backup, which the restore will undo.
    let (ok, _, err) = server(
        &env,
        &[
            "license",
            "create",
            "--email",
            "later@example.com",
            "--tier",
            "team",
        ],
    );
    assert!(ok, "{err}");

    let port = common::free_port();
    let mut serving = Command::new(env!("CARGO_BIN_EXE_tidemark-server"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("TIDEMARK_DATA_DIR", data)
        .env("LEPTOS_SITE_ADDR", format!("127.0.0.1:{port}"))
        .env("RUST_LOG", "warn")
        .arg("serve")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "the server never listened"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let (ok, _, err) = server(&env, &["restore", "--from", backup.to_str().unwrap()]);
    assert!(!ok, "restored under a running server");
    assert!(
        err.contains("running server") && err.contains("stop it first"),
        "{err}"
    );
    // A second server on the same file is refused by the same lock.
    let (ok, _, err) = server(
        &[
            ("TIDEMARK_DATA_DIR", data),
            ("LEPTOS_SITE_ADDR", "127.0.0.1:0"),
        ],
        &["serve"],
    );
    assert!(!ok && err.contains("is serving"), "{err}");

    // SIGTERM, as an init system stops it.
    assert!(Command::new("kill")
        .args(["-TERM", &serving.id().to_string()])
        .status()
        .unwrap()
        .success());
    assert!(serving.wait().unwrap().success());
    let (ok, out, err) = server(
        &env,
        &["restore", "--from", backup.to_str().unwrap(), "--json"],
    );
    assert!(ok, "{err}");
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (report["integrity"].as_str(), report["accounts"].as_i64()),
        (Some("ok"), Some(1))
    );
    let (ok, out, _) = server(&env, &["license", "list", "--json"]);
    assert!(ok);
    assert!(
        !out.contains("later@example.com"),
        "the restore brought back the backup: {out}"
    );
    // What was replaced is kept beside it.
    let kept: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("tidemark.db.before-restore-"))
        .collect();
    assert!(!kept.is_empty(), "the replaced database is kept");

    // Something that is not a database is refused and changes nothing.
    let junk = dir.path().join("junk.db");
    std::fs::write(&junk, "not sqlite").unwrap();
    let (ok, _, err) = server(&env, &["restore", "--from", junk.to_str().unwrap()]);
    assert!(!ok && err.contains("junk.db"), "{err}");
    let (ok, out, _) = server(&env, &["license", "list", "--json"]);
    assert!(ok && out.contains("@example.com"), "{out}");
}
