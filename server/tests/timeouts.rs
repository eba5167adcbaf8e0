//! Connection and request timeouts, seen from a raw socket: slow headers, idle keep-alive,
//! a stalled body and the overall `/v1` limit.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use crate::common;

use common::{stall_a_push, TestApp};
use tidemark_store::Backend;
use tidemark_wire::Tier;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

/// Reads until the server closes the connection (or `within` passes: then `None`), returning
/// what arrived and when the connection closed.
async fn read_until_closed(stream: &mut TcpStream, within: Duration) -> Option<(String, Duration)> {
    let started = Instant::now();
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let left = within.checked_sub(started.elapsed())?;
        match tokio::time::timeout(left, stream.read(&mut buf)).await {
            Err(_) => return None,
            Ok(Ok(0)) | Ok(Err(_)) => {
                return Some((
                    String::from_utf8_lossy(&seen).into_owned(),
                    started.elapsed(),
                ))
            }
            Ok(Ok(n)) => seen.extend_from_slice(&buf[..n]),
        }
    }
}

#[tokio::test]
async fn half_sent_headers_and_idle_connections_are_closed() {
    let app =
        TestApp::spawn_with(Backend::Sqlite, &[("TIDEMARK_HEADER_TIMEOUT_SECONDS", "1")]).await;

    // Half the headers, then silence.
    let mut slow = TcpStream::connect(app.addr).await.unwrap();
    slow.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        .await
        .unwrap();
    let (_, after) = read_until_closed(&mut slow, Duration::from_secs(10))
        .await
        .expect("a client that never finishes its headers is disconnected");
    assert!(after < Duration::from_secs(5), "closed after {after:?}");

    // Connected, never a byte.
    let mut silent = TcpStream::connect(app.addr).await.unwrap();
    assert!(read_until_closed(&mut silent, Duration::from_secs(10))
        .await
        .is_some());

    // One request answered, then the kept-alive connection idles until it is closed.
    let mut idle = TcpStream::connect(app.addr).await.unwrap();
    idle.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let (answer, after) = read_until_closed(&mut idle, Duration::from_secs(10))
        .await
        .expect("an idle kept-alive connection is closed");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(after < Duration::from_secs(5), "closed after {after:?}");
}

/// A push whose body stalls, on a server with `setting` at 1 second: the 408 answer (after
/// checking it is one, within a few seconds) and the server, to look at afterwards.
async fn stall_a_push_with(setting: &str) -> (String, TestApp) {
    let app = TestApp::spawn_with(Backend::Sqlite, &[(setting, "1")]).await;
    let (_, key) = app.with_key(Tier::Team).await;
    let mut stream = stall_a_push(&app, &key, 1000).await;
    let (answer, after) = read_until_closed(&mut stream, Duration::from_secs(10))
        .await
        .expect("answered and closed");
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("\"error\":\"request_timeout\""), "{answer}");
    assert!(after < Duration::from_secs(5), "after {after:?}");
    (answer, app)
}

#[tokio::test]
async fn a_stalled_body_is_answered_408() {
    let (answer, app) = stall_a_push_with("TIDEMARK_BODY_TIMEOUT_SECONDS").await;
    assert!(answer.contains("stopped arriving"), "{answer}");
    assert_eq!(app.count("scans").await, 0);
}

#[tokio::test]
async fn no_api_request_outlasts_the_api_limit() {
    let (answer, _) = stall_a_push_with("TIDEMARK_API_TIMEOUT_SECONDS").await;
    assert!(answer.contains("longer than 1 seconds"), "{answer}");
}
