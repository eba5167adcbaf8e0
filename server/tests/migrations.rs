//! Migrations as an operator meets them with the real binary, on both databases: the service
//! starting and an operator's command (the Debian package's documented next step) started
//! together, or a few milliseconds apart, migrate once and both work; a stop asked for while migrations wait or run exits
//! cleanly, applying nothing.
#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use tidemark_store::testing::fresh_unmigrated;

use crate::common;

/// `tidemark-server serve` on `url` with its own data directory and master key.
fn serve(url: &str, data: &std::path::Path, key: &str, port: u16, log: &std::path::Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_tidemark-server"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("DATABASE_URL", url)
        .env("TIDEMARK_DATA_DIR", data)
        .env("TIDEMARK_MASTER_KEY", key)
        .env("LEPTOS_SITE_ADDR", format!("127.0.0.1:{port}"))
        .env("RUST_LOG", "info")
        .arg("serve")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap()
}

fn sigterm(child: &Child) {
    assert!(Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap()
        .success());
}

/// The child's exit, waited for at most `limit`.
fn exit_within(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

tidemark_store::test_each_backend! {
    async fn the_service_and_an_operator_command_started_together_both_work(backend) {
        // Started together and a little apart: migrations take about 0.1 s, so the windows
        // where one process reads "not applied" while the other applies are all tried.
        for (round, offset_ms) in [0, 0, 10, 25, 50, 100, 200].into_iter().enumerate() {
            let t = fresh_unmigrated(backend).await;
            let data = tempfile::tempdir().unwrap();
            let key = base64::engine::general_purpose::STANDARD.encode(rand::random::<[u8; 32]>());
            let port = common::free_port();
            let log = data.path().join("serve.log");
            let mut server = serve(&t.url, data.path(), &key, port, &log);
            tokio::time::sleep(Duration::from_millis(offset_ms)).await;
            let (url, dir, master) = (t.url.clone(), data.path().to_owned(), key.clone());
            let (ok, _, err) = tokio::task::spawn_blocking(move || {
                common::tidemark_server(
                    &[
                        ("DATABASE_URL", url.as_str()),
                        ("TIDEMARK_DATA_DIR", dir.to_str().unwrap()),
                        ("TIDEMARK_MASTER_KEY", master.as_str()),
                    ],
                    &["license", "create", "--email", "ops@example.com", "--tier", "team"],
                )
            })
            .await
            .unwrap();
            assert!(ok, "{backend:?} round {round}: license create failed: {err}");
            // The service is up and ready on the schema the two applied once.
            let deadline = Instant::now() + Duration::from_secs(30);
            loop {
                assert!(server.try_wait().unwrap().is_none(), "{backend:?} round {round}: the server died: {}",
                    std::fs::read_to_string(&log).unwrap_or_default());
                let ready = reqwest::get(format!("http://127.0.0.1:{port}/readyz")).await;
                if ready.is_ok_and(|r| r.status() == 200) {
                    break;
                }
                assert!(Instant::now() < deadline, "{backend:?} round {round}: never ready");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            assert!(t.db.is_ready().await.unwrap(), "{backend:?}: every migration applied");
            sigterm(&server);
            assert!(exit_within(&mut server, Duration::from_secs(20)).success());
        }
    }
}

/// A stop asked for while `serve` waits for another process's migrations (the lock held by
/// this test) exits 0 at once, having applied nothing; once the lock is free, a start
/// migrates.
#[tokio::test]
async fn sigterm_while_migrations_wait_or_run_exits_cleanly_and_applies_nothing() {
    let t = fresh_unmigrated(tidemark_store::Backend::Sqlite).await;
    let file = t.url.strip_prefix("sqlite://").unwrap().to_owned();
    let lock_path = format!("{file}.migrate-lock");
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .unwrap();
    lock.lock().unwrap();
    let data = tempfile::tempdir().unwrap();
    let key = base64::engine::general_purpose::STANDARD.encode(rand::random::<[u8; 32]>());
    let log = data.path().join("serve.log");
    let mut server = serve(&t.url, data.path(), &key, common::free_port(), &log);
    // It waits for the lock, and says so.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !std::fs::read_to_string(&log)
        .unwrap_or_default()
        .contains("another process is applying migrations")
    {
        assert!(
            server.try_wait().unwrap().is_none(),
            "{}",
            std::fs::read_to_string(&log).unwrap()
        );
        assert!(Instant::now() < deadline, "never said it waits");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    sigterm(&server);
    let status = exit_within(&mut server, Duration::from_secs(10));
    assert!(
        status.success(),
        "{status:?}: {}",
        std::fs::read_to_string(&log).unwrap()
    );
    assert!(!t.db.pending_migrations().await.unwrap().is_empty());
    assert!(!t.db.is_ready().await.unwrap(), "nothing applied");
    drop(lock);
    t.db.migrate().await.unwrap();
    assert!(t.db.is_ready().await.unwrap());
}
