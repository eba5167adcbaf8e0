//! The `/v1` calls a scanner makes.

use std::time::Duration;

use rand::Rng as _;
use reqwest::StatusCode;
use serde::de::DeserializeOwned;
use tidemark_wire::{ActivateRequest, ActivateResponse, ErrorBody, PushResponse, ValidateResponse};

use crate::license::Outcome;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// No answer: connection refused, DNS failure, timeout, or a 5xx. `transient` when
    /// trying again may help (connection failures, timeouts, 502, 503 and 504), not for a 500.
    #[error("the Tidemark service at {url} could not be reached ({reason}); check the address (--url or TIDEMARK_URL) and your network, then try again")]
    Unreachable {
        url: String,
        reason: String,
        transient: bool,
    },
    /// The TLS handshake failed on the server's certificate: never retried, since the same
    /// certificate comes back.
    #[error("the TLS certificate of {url} is not trusted ({reason}); if the server uses an internal certificate authority, pass its certificate with --ca-cert FILE or TIDEMARK_CA_CERT")]
    Untrusted { url: String, reason: String },
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wait {
    /// `429 rate_limit_exceeded`: the account's writes per minute are used up.
    RateLimited,
    /// `503 server_busy`: the server holds as many pushes as its memory allows.
    ServerBusy,
    /// No answer (the reason: connection failed, timed out, HTTP 502…).
    Unreachable(String),
}

/// How a push backs off: `Retry-After` on `429` and `503 server_busy`, exponentially from
/// `backoff_base` (doubling, at most [`MAX_BACKOFF`]) when the service does not answer.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    pub max_retries: u32,
    /// Added at random to every wait, so parallel CI jobs do not retry in lockstep.
    pub max_jitter: Duration,
    pub backoff_base: Duration,
}

/// The longest wait between two tries when the service does not answer.
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 5,
            max_jitter: Duration::from_secs(5),
            backoff_base: Duration::from_secs(1),
        }
    }
}

impl RetryPolicy {
    /// The wait before retry number `attempt` (from 1) when the service did not answer.
    pub fn backoff(&self, attempt: u32) -> Duration {
        let doubled = self
            .backoff_base
            .saturating_mul(1u32 << attempt.saturating_sub(1).min(16));
        doubled.min(MAX_BACKOFF)
    }

    fn jitter(&self) -> Duration {
        Duration::from_millis(rand::thread_rng().gen_range(0..=self.max_jitter.as_millis() as u64))
    }
}

#[derive(Clone)]
pub struct Client {
    base_url: String,
    http: reqwest::Client,
}

impl Client {
    /// A client that trusts the platform's certificate store and Mozilla's roots, plus the
    /// certificates in `ca_pem` (a PEM bundle: a self-hosted server's internal CA).
    pub fn new(base_url: &str, ca_pem: Option<&[u8]>) -> Result<Self, ClientError> {
        let mut builder = reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .connect_timeout(Duration::from_secs(10))
            .user_agent(concat!("tidemark-cli/", env!("CARGO_PKG_VERSION")));
        if let Some(pem) = ca_pem {
            let certs = reqwest::Certificate::from_pem_bundle(pem)
                .map_err(|e| ClientError::Protocol(format!("the CA certificate file: {e}")))?;
            if certs.is_empty() {
                return Err(ClientError::Protocol(
                    "the CA certificate file holds no PEM certificate".into(),
                ));
            }
            for cert in certs {
                builder = builder.add_root_certificate(cert);
            }
        }
        let http = builder
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

    fn unreachable(&self, reason: impl Into<String>, transient: bool) -> ClientError {
        ClientError::Unreachable {
            url: self.base_url.clone(),
            reason: reason.into(),
            transient,
        }
    }

    /// A request that got no answer: untrusted certificate, or unreachable (worth another
    /// try: connection failures and timeouts are).
    fn failed(&self, e: &reqwest::Error) -> ClientError {
        if let Some(reason) = certificate_problem(e) {
            return ClientError::Untrusted {
                url: self.base_url.clone(),
                reason,
            };
        }
        self.unreachable(describe(e), true)
    }

    fn server_error(&self, status: StatusCode) -> ClientError {
        let transient = matches!(status.as_u16(), 502..=504);
        self.unreachable(format!("HTTP {status}"), transient)
    }

    async fn answer<T: DeserializeOwned>(
        &self,
        res: Result<reqwest::Response, reqwest::Error>,
    ) -> Result<T, ClientError> {
        let res = res.map_err(|e| self.failed(&e))?;
        let status = res.status();
        // `503 server_busy` is the one documented server error (with Retry-After): the
        // service is there and says when to come back.
        if status.is_server_error() && status != StatusCode::SERVICE_UNAVAILABLE {
            return Err(self.server_error(status));
        }
        let retry_after = res
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok());
        let bytes = res.bytes().await.map_err(|e| self.failed(&e))?;
        if status.is_success() {
            return serde_json::from_slice(&bytes)
                .map_err(|e| ClientError::Protocol(e.to_string()));
        }
        match serde_json::from_slice::<ErrorBody>(&bytes) {
            // Any other 5xx, whatever its body (a proxy's, say), is an outage, not an answer.
            Ok(body) if status.is_server_error() && body.error != "server_busy" => {
                Err(self.server_error(status))
            }
            Ok(body) => Err(ClientError::Api {
                status: status.as_u16(),
                code: body.error,
                message: body.message,
                retry_after,
            }),
            Err(_) if status.is_server_error() => Err(self.server_error(status)),
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
            // A certificate that stopped being trusted is no verdict on the license either.
            Err(
                ClientError::Unreachable { reason, .. } | ClientError::Untrusted { reason, .. },
            ) => Outcome::Unreachable(reason),
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

    /// Pushes, retrying at most `policy.max_retries` times: after `Retry-After` plus jitter on
    /// `429` and `503 server_busy`, and with exponential back-off when the service did not
    /// answer (connection failure, timeout, 502, 503, 504). A push sent again is answered like
    /// the first and costs nothing, so retrying is always safe. `on_wait(why, attempt, delay)`
    /// is told before each wait.
    pub async fn push(
        &self,
        api_key: &str,
        body: &[u8],
        policy: RetryPolicy,
        mut on_wait: impl FnMut(&Wait, u32, Duration),
    ) -> Result<PushResponse, ClientError> {
        let mut attempt = 0;
        loop {
            let result = self.push_once(api_key, body).await;
            if attempt >= policy.max_retries {
                return result;
            }
            let (why, delay) = match &result {
                Err(ClientError::Api {
                    status: status @ (429 | 503),
                    retry_after,
                    ..
                }) => {
                    let why = if *status == 429 {
                        Wait::RateLimited
                    } else {
                        Wait::ServerBusy
                    };
                    (why, Duration::from_secs(retry_after.unwrap_or(1)))
                }
                Err(ClientError::Unreachable {
                    reason,
                    transient: true,
                    ..
                }) => (
                    Wait::Unreachable(reason.clone()),
                    policy.backoff(attempt + 1),
                ),
                _ => return result,
            };
            attempt += 1;
            let delay = delay + policy.jitter();
            on_wait(&why, attempt, delay);
            tokio::time::sleep(delay).await;
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
            .map_err(|e| self.failed(&e))?;
        let status = res.status();
        if status == StatusCode::OK {
            return res
                .bytes()
                .await
                .map(|b| b.to_vec())
                .map_err(|e| self.failed(&e));
        }
        self.answer::<serde_json::Value>(Ok(res)).await?;
        Err(ClientError::Protocol(format!("HTTP {status}")))
    }
}

/// The certificate error somewhere in a failed request's causes, if that is why it failed.
/// rustls reports it inside (nested) `io::Error`s, whose `source()` skips the wrapped error,
/// so an `io::Error`'s payload is followed instead of its source.
fn certificate_problem(e: &reqwest::Error) -> Option<String> {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cause {
        if let Some(
            tls @ (rustls::Error::InvalidCertificate(_) | rustls::Error::NoCertificatesPresented),
        ) = err.downcast_ref::<rustls::Error>()
        {
            return Some(tls.to_string());
        }
        cause = match err.downcast_ref::<std::io::Error>() {
            Some(io) => io
                .get_ref()
                .map(|inner| inner as &(dyn std::error::Error + 'static)),
            None => err.source(),
        };
    }
    None
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
