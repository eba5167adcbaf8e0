//! A real HTTP receiver for webhook tests: an axum server on loopback that records every
//! request and answers with the statuses a test scripts (204 once the script runs out).
//! `/redirect` answers 302 to `/target`, to show that redirects are not followed.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::IntoResponse;

/// In [`Receiver::answer_next`]: hold the request without answering.
pub const HOLD: u16 = 0;

#[derive(Debug, Clone)]
pub struct Received {
    /// When it arrived.
    pub at: std::time::Instant,
    pub path: String,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Received {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("a JSON body")
    }

    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
    }
}

#[derive(Default)]
struct Inner {
    received: Vec<Received>,
    script: VecDeque<u16>,
}

pub struct Receiver {
    /// `http://127.0.0.1:<port>`
    pub base: String,
    inner: Arc<Mutex<Inner>>,
    task: tokio::task::JoinHandle<()>,
}

impl Receiver {
    pub async fn start() -> Self {
        let inner = Arc::new(Mutex::new(Inner::default()));
        let state = inner.clone();
        let app = axum::Router::new().fallback(move |uri: Uri, headers: HeaderMap, body: Bytes| {
            let state = state.clone();
            async move {
                let status = {
                    let mut inner = state.lock().expect("receiver state");
                    inner.received.push(Received {
                        at: std::time::Instant::now(),
                        path: uri.path().to_owned(),
                        headers,
                        body,
                    });
                    if uri.path() == "/redirect" {
                        return (StatusCode::FOUND, [("location", "/target")]).into_response();
                    }
                    inner.script.pop_front().unwrap_or(204)
                };
                if status == HOLD {
                    // Never answered: the sender is cut off (or gives up) mid-send.
                    tokio::time::sleep(Duration::from_secs(120)).await;
                }
                StatusCode::from_u16(status)
                    .unwrap_or(StatusCode::NO_CONTENT)
                    .into_response()
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the receiver");
        let base = format!("http://{}", listener.local_addr().expect("address"));
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.expect("receiver");
        });
        Receiver { base, inner, task }
    }

    /// The next requests are answered with these statuses, in order.
    pub fn answer_next(&self, statuses: &[u16]) {
        self.inner
            .lock()
            .expect("receiver state")
            .script
            .extend(statuses);
    }

    pub fn received(&self) -> Vec<Received> {
        self.inner.lock().expect("receiver state").received.clone()
    }

    /// Waits (up to 20 s) until at least `n` requests came in; all of them.
    pub async fn wait_for(&self, n: usize) -> Vec<Received> {
        for _ in 0..200 {
            let got = self.received();
            if got.len() >= n {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!(
            "the receiver got {} requests, expected {n}",
            self.received().len()
        );
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}
