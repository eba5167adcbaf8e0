//! The `/v1` calls a scanner makes.

use std::time::Duration;

use rand::Rng as _;
use reqwest::StatusCode;
use serde::de::DeserializeOwned;
use tidemark_wire::{ActivateRequest, ActivateResponse, ErrorBody, PushResponse, ValidateResponse};

use crate::license::Outcome;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// No answer: connection refused, DNS failure, timeout, or a 5xx.
    #[error("the Tidemark service at {url} could not be reached ({reason}); check the address (--url or TIDEMARK_URL) and your network, then try again")]
    Unreachable { url: String, reason: String },
    /// The service answered with a documented error.
    #[error("{message} ({code})")]
    Api {
        status: u16,
        code: String,
        message: String,
        retry_after: Option<u64>,
    },
    #[error("unexpected answer from the service: {0}")]
    Protocol(String),
}

impl ClientError {
    pub fn code(&self) -> Option<&str> {
        match self {
            ClientError::Api { code, .. } => Some(code),
            _ => None,
        }
    }
}

/// Why a push waits before its next try.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// `429 rate_limit_exceeded`: the account's writes per minute are used up.
    RateLimited,
    /// `503 server_busy`: the server holds as many pushes as its memory allows.
    ServerBusy,
}

/// How a push backs off on `429` and `503`.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    pub max_retries: u32,
    /// Added at random to `Retry-After`, so parallel CI jobs do not retry in lockstep.
    pub max_jitter: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 5,
            max_jitter: Duration::from_secs(5),
        }
    }
}

#[derive(Clone)]
pub struct Client {
    base_url: String,
    http: reqwest::Client,
}

impl Client {
    pub fn new(base_url: &str) -> Result<Self, ClientError> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .connect_timeout(Duration::from_secs(10))
            .user_agent(concat!("tidemark-cli/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ClientError::Protocol(e.to_string()))?;
        Ok(Self {
            base_url: base_url.trim_end_matches('/').to_owned(),
            http,
        })
    }

    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    fn unreachable(&self, reason: impl Into<String>) -> ClientError {
        ClientError::Unreachable {
            url: self.base_url.clone(),
            reason: reason.into(),
        }
    }

    async fn answer<T: DeserializeOwned>(
        &self,
        res: Result<reqwest::Response, reqwest::Error>,
    ) -> Result<T, ClientError> {
        let res = res.map_err(|e| self.unreachable(describe(&e)))?;
        let status = res.status();
        // `503 server_busy` is the one documented server error (with Retry-After): the
        // service is there and says when to come back.
        if status.is_server_error() && status != StatusCode::SERVICE_UNAVAILABLE {
            return Err(self.unreachable(format!("HTTP {status}")));
        }
        let retry_after = res
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok());
        let bytes = res
            .bytes()
            .await
            .map_err(|e| self.unreachable(describe(&e)))?;
        if status.is_success() {
            return serde_json::from_slice(&bytes)
                .map_err(|e| ClientError::Protocol(e.to_string()));
        }
        match serde_json::from_slice::<ErrorBody>(&bytes) {
            // Any other 5xx, whatever its body (a proxy's, say), is an outage, not an answer.
            Ok(body) if status.is_server_error() && body.error != "server_busy" => {
                Err(self.unreachable(format!("HTTP {status}")))
            }
            Ok(body) => Err(ClientError::Api {
                status: status.as_u16(),
                code: body.error,
                message: body.message,
                retry_after,
            }),
            Err(_) if status.is_server_error() => Err(self.unreachable(format!("HTTP {status}"))),
            Err(_) => Err(ClientError::Protocol(format!(
                "HTTP {status} without an error body"
            ))),
        }
    }

    pub async fn validate(&self, license_key_hash: &str) -> Result<ValidateResponse, ClientError> {
        let res = self
            .http
            .post(format!("{}/v1/license/validate", self.base_url))
            .header("X-License-Key-Hash", license_key_hash)
            .send()
            .await;
        self.answer(res).await
    }

    /// Validation reduced to the license state machine's outcome.
    pub async fn validation_outcome(&self, license_key_hash: &str) -> Outcome {
        match self.validate(license_key_hash).await {
            Ok(result) => Outcome::Answered(result),
            Err(ClientError::Unreachable { reason, .. }) => Outcome::Unreachable(reason),
            Err(ClientError::Api { code, message, .. }) => {
                Outcome::Refused(format!("{message} ({code})"))
            }
            Err(ClientError::Protocol(p)) => Outcome::Unreachable(p),
        }
    }

    pub async fn activate(
        &self,
        license_key_hash: &str,
        machine: &str,
    ) -> Result<ActivateResponse, ClientError> {
        let res = self
            .http
            .post(format!("{}/v1/license/activate", self.base_url))
            .header("X-License-Key-Hash", license_key_hash)
            .json(&ActivateRequest {
                machine: machine.to_owned(),
            })
            .send()
            .await;
        self.answer(res).await
    }

    pub async fn push_once(&self, api_key: &str, body: &[u8]) -> Result<PushResponse, ClientError> {
        let res = self
            .http
            .post(format!("{}/v1/dashboard/push", self.base_url))
            .header("X-API-Key", api_key)
            .header("Content-Type", "application/json")
            .body(body.to_vec())
            .send()
            .await;
        self.answer(res).await
    }

    /// Pushes, waiting `Retry-After` plus jitter on each `429` or `503`, at most
    /// `policy.max_retries` times (a push sent again is answered like the first and costs
    /// nothing). `on_wait(why, attempt, delay)` is told before each wait.
    pub async fn push(
        &self,
        api_key: &str,
        body: &[u8],
        policy: RetryPolicy,
        mut on_wait: impl FnMut(Wait, u32, Duration),
    ) -> Result<PushResponse, ClientError> {
        let mut attempt = 0;
        loop {
            match self.push_once(api_key, body).await {
                Err(ClientError::Api {
                    status: status @ (429 | 503),
                    retry_after,
                    ..
                }) if attempt < policy.max_retries => {
                    let why = if status == 429 {
                        Wait::RateLimited
                    } else {
                        Wait::ServerBusy
                    };
                    attempt += 1;
                    let jitter_ms =
                        rand::thread_rng().gen_range(0..=policy.max_jitter.as_millis() as u64);
                    let delay = Duration::from_secs(retry_after.unwrap_or(1))
                        + Duration::from_millis(jitter_ms);
                    on_wait(why, attempt, delay);
                    tokio::time::sleep(delay).await;
                }
                other => return other,
            }
        }
    }

    /// Downloads a bundle (needs the license-key hash of a valid license).
    pub async fn download(
        &self,
        url: &str,
        license_key_hash: &str,
    ) -> Result<Vec<u8>, ClientError> {
        let res = self
            .http
            .get(url)
            .header("X-License-Key-Hash", license_key_hash)
            .send()
            .await
            .map_err(|e| self.unreachable(describe(&e)))?;
        let status = res.status();
        if status == StatusCode::OK {
            return res
                .bytes()
                .await
                .map(|b| b.to_vec())
                .map_err(|e| self.unreachable(describe(&e)));
        }
        self.answer::<serde_json::Value>(Ok(res)).await?;
        Err(ClientError::Protocol(format!("HTTP {status}")))
    }
}

fn describe(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        "timed out".into()
    } else if e.is_connect() {
        "connection failed".into()
    } else {
        e.to_string()
    }
}
