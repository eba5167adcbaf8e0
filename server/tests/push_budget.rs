//! The replica's budget of push body bytes in flight: past it (or past an account's half of
//! it) a push is refused at once with `503 server_busy` and `Retry-After`, before its body is
//! read, and nothing is stored; the budget comes back when a push ends, however it ends.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use crate::common;

use common::{assert_error, sample_push, stall_a_push, TestApp};
use reqwest::StatusCode;
use tidemark_store::Backend;
use tidemark_wire::Tier;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

const MIB: usize = 1024 * 1024;

#[tokio::test]
async fn pushes_past_the_budget_are_refused_before_their_body_is_read() {
    // 32 MiB: two pushes of the largest size, and one account may hold one of them.
    let app = TestApp::spawn_with(Backend::Sqlite, &[("TIDEMARK_PUSH_BUDGET_MIB", "32")]).await;
    let (_, a) = app.with_key(Tier::Team).await;
    let (_, b) = app.with_key(Tier::Team).await;
    let body = |label: &str| sample_push(label, 80.0, "2026-11-22T10:15:00Z");

    // Account a announces 16 MiB and sends it slowly: its half is taken.
    let slow_a = stall_a_push(&app, &a, 16 * MIB).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let res = app.push(&a, &body("api")).await;
    assert_eq!(res.headers()["retry-after"], "2");
    let message = assert_error(res, StatusCode::SERVICE_UNAVAILABLE, "server_busy").await;
    assert!(message.contains("This account"), "{message}");

    // Account b still has room...
    assert_eq!(
        app.push(&b, &body("api")).await.status(),
        StatusCode::CREATED
    );
    // ...until its own large push fills the replica's budget: now every push waits.
    let slow_b = stall_a_push(&app, &b, 16 * MIB).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let res = app.push(&b, &body("web")).await;
    let message = assert_error(res, StatusCode::SERVICE_UNAVAILABLE, "server_busy").await;
    assert!(message.contains("Retry after 2 seconds"), "{message}");
    // A large body refused before it is read is still answered, not cut off, for a client
    // that sends all of it before reading the answer (as most HTTP/1.1 clients do).
    let mut large = body("large");
    large["findings"] = serde_json::Value::Array(vec![large["findings"][0].clone(); 20_000]);
    let large = serde_json::to_vec(&large).unwrap();
    let mut raw = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    let head = format!(
        "POST /v1/dashboard/push HTTP/1.1\r\nHost: x\r\nX-API-Key: {b}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        large.len()
    );
    raw.write_all(head.as_bytes()).await.unwrap();
    raw.write_all(&large)
        .await
        .expect("the whole body is taken, not cut off");
    let mut answer = vec![0u8; 4096];
    let n = raw.read(&mut answer).await.unwrap();
    let answer = String::from_utf8_lossy(&answer[..n]);
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(answer.contains("server_busy"), "{answer}");
    assert_eq!(app.count("scans").await, 1, "refused pushes store nothing");

    // The budget comes back when the slow pushes end (here: their clients hang up).
    drop((slow_a, slow_b));
    let started = Instant::now();
    loop {
        let res = app.push(&a, &body("api")).await;
        if res.status() == StatusCode::CREATED {
            break;
        }
        assert_error(res, StatusCode::SERVICE_UNAVAILABLE, "server_busy").await;
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the budget never came back"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(app.count("scans").await, 2);
}
