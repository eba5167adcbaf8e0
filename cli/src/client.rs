//! The `/v1` calls a scanner makes.

use std::time::Duration;

use rand::Rng as _;
use reqwest::StatusCode;
use serde::de::DeserializeOwned;
use tidemark_wire::{ActivateRequest, ActivateResponse, ErrorBody, PushResponse, ValidateResponse};

use crate::license::Outcome;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// No answer: connection refused, DNS failure, timeout, or a proxy's 502/503/504.
    /// Worth waiting out.
    #[error("the Tidemark service at {url} could not be reached ({reason}); check the address (--url or TIDEMARK_URL) and your network, then try again")]
    Unreachable { url: String, reason: String },
    /// The service (or something in front of it) failed on its side without a documented
    /// answer: not a network problem, and not worth an immediate retry.
    #[error("the Tidemark service at {url} failed on its side (HTTP {status}); this is not a network problem: try again later, and tell its operator if it persists")]
    ServerFault { url: String, status: u16 },
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

/// The server errors the contract documents: each comes with a JSON body worth reading.
const DOCUMENTED_SERVER_ERRORS: [&str; 4] = [
    "internal_error",
    "server_busy",
    "database_unavailable",
    "storage_full",
];

impl ClientError {
    pub fn code(&self) -> Option<&str> {
        match self {
            ClientError::Api { code, .. } => Some(code),
            _ => None,
        }
    }

    /// Why and how long to wait before trying again, when waiting can help.
    fn wait(&self, policy: &RetryPolicy, attempt: u32) -> Option<(Wait, Duration)> {
        match self {
            ClientError::Api {
                status,
                code,
                retry_after,
                ..
            } => {
                let why = match (status, code.as_str()) {
                    (429, _) => Wait::RateLimited,
                    (_, "server_busy") => Wait::ServerBusy,
                    (_, "database_unavailable") => Wait::DatabaseUnavailable,
                    (_, "storage_full") => Wait::StorageFull,
                    _ => return None,
                };
                Some((why, Duration::from_secs(retry_after.unwrap_or(1))))
            }
            ClientError::Unreachable { reason, .. } if policy.retry_unanswered => {
                Some((Wait::Unreachable(reason.clone()), policy.backoff(attempt)))
            }
            _ => None,
        }
    }
}

/// Why a request waits before its next try.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wait {
    /// `429 rate_limit_exceeded`: the account's writes per minute are used up.
    RateLimited,
    /// `503 server_busy`: the server holds as many pushes as its memory allows.
    ServerBusy,
    /// `503 database_unavailable`: the service's database is restarting or failing over.
    DatabaseUnavailable,
    /// `507 storage_full`: the service's storage is full until its operator frees some.
    StorageFull,
    /// No answer (the reason: connection failed, timed out, HTTP 502…).
    Unreachable(String),
}

impl std::fmt::Display for Wait {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Wait::RateLimited => f.write_str("Write rate exceeded"),
            Wait::ServerBusy => f.write_str("The server is busy"),
            Wait::DatabaseUnavailable => {
                f.write_str("The service's database is unavailable (restarting or failing over)")
            }
            Wait::StorageFull => f.write_str("The service's storage is full"),
            Wait::Unreachable(why) => write!(f, "The service did not answer ({why})"),
        }
    }
}

/// How requests back off: `Retry-After` on `429` and on the documented `503`/`507`,
/// exponentially from `backoff_base` (doubling, at most [`MAX_BACKOFF`]) when the service does
/// not answer; at most `max_retries` times and `max_wait` of waiting in all.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    pub max_retries: u32,
    /// The waiting a request may do in all: long enough by default to ride out a managed
    /// database's failover (typically 60-120 s).
    pub max_wait: Duration,
    /// Added at random to every wait, so parallel CI jobs do not retry in lockstep.
    pub max_jitter: Duration,
    pub backoff_base: Duration,
    /// Whether no answer at all is waited out too. A push is; a validation is not (the
    /// scanner has its offline grace for that, and should not hang on a network that is
    /// down), nor an activation (a person is waiting).
    pub retry_unanswered: bool,
}

/// The longest wait between two tries when the service does not answer.
/// The pushed project's label, for the proxy to route a project's pushes to one replica.
pub const PROJECT_HEADER: &str = "X-Tidemark-Project";

pub const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// The default waiting budget: a failover of up to two minutes plus the answer's own time.
pub const DEFAULT_MAX_WAIT: Duration = Duration::from_secs(180);

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 40,
            max_wait: DEFAULT_MAX_WAIT,
            max_jitter: Duration::from_secs(5),
            backoff_base: Duration::from_secs(1),
            retry_unanswered: true,
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

    /// Runs `call` until it succeeds, fails in a way waiting cannot help, or the retries or
    /// the waiting budget run out. `on_wait(why, attempt, delay)` is told before each wait.
    pub async fn run<T, Fut>(
        &self,
        mut call: impl FnMut() -> Fut,
        mut on_wait: impl FnMut(&Wait, u32, Duration),
    ) -> Result<T, ClientError>
    where
        Fut: std::future::Future<Output = Result<T, ClientError>>,
    {
        let mut attempt = 0;
        let mut waited = Duration::ZERO;
        loop {
            let result = call().await;
            let Err(err) = &result else { return result };
            let Some((why, delay)) = err.wait(self, attempt + 1) else {
                return result;
            };
            let delay = delay + self.jitter();
            if attempt >= self.max_retries || waited + delay > self.max_wait {
                return result;
            }
            attempt += 1;
            waited += delay;
            on_wait(&why, attempt, delay);
            tokio::time::sleep(delay).await;
        }
    }
}

#[derive(Clone)]
pub struct Client {
    base_url: String,
    http: reqwest::Client,
    /// How validation and activation ride out an unavailable service (pushes take theirs
    /// from the command line).
    retry: RetryPolicy,
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
            retry: RetryPolicy {
                retry_unanswered: false,
                ..RetryPolicy::default()
            },
        })
    }

    /// This client with `policy` for validation and activation (which never wait out a
    /// service that does not answer at all, whatever the policy says).
    pub fn with_retry(mut self, policy: RetryPolicy) -> Self {
        self.retry = RetryPolicy {
            retry_unanswered: false,
            ..policy
        };
        self
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

    /// A request that got no answer: untrusted certificate, or unreachable (worth another
    /// try: connection failures and timeouts are).
    fn failed(&self, e: &reqwest::Error) -> ClientError {
        if let Some(reason) = certificate_problem(e) {
            return ClientError::Untrusted {
                url: self.base_url.clone(),
                reason,
            };
        }
        self.unreachable(describe(e))
    }

    /// A server error without a documented body: a proxy that could not reach the service
    /// (502, 503, 504) is an outage worth waiting out; anything else failed on its side.
    fn server_error(&self, status: StatusCode) -> ClientError {
        if matches!(status.as_u16(), 502..=504) {
            self.unreachable(format!("HTTP {status}"))
        } else {
            ClientError::ServerFault {
                url: self.base_url.clone(),
                status: status.as_u16(),
            }
        }
    }

    async fn answer<T: DeserializeOwned>(
        &self,
        res: Result<reqwest::Response, reqwest::Error>,
    ) -> Result<T, ClientError> {
        let res = res.map_err(|e| self.failed(&e))?;
        let status = res.status();
        let retry_after = res
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok());
        let bytes = res.bytes().await.map_err(|e| self.failed(&e))?;
        if status.is_success() {
            // `204 No Content` reads as JSON null (what `()` and `Option` take).
            let body: &[u8] = if bytes.is_empty() { b"null" } else { &bytes };
            return serde_json::from_slice(body).map_err(|e| ClientError::Protocol(e.to_string()));
        }
        match serde_json::from_slice::<ErrorBody>(&bytes) {
            // The documented server errors say what happened (and when to come back); any
            // other 5xx body (a proxy's, say) is not an answer from the service.
            Ok(body)
                if status.is_server_error()
                    && !DOCUMENTED_SERVER_ERRORS.contains(&body.error.as_str()) =>
            {
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

    /// Validates, riding out an unavailable service as [`Client::with_retry`] says (each
    /// wait is said on standard error).
    pub async fn validate(
        &self,
        license_key_hash: &str,
        machine: &str,
    ) -> Result<ValidateResponse, ClientError> {
        self.retry
            .run(
                || async {
                    let res = self
                        .http
                        .post(format!("{}/v1/license/validate", self.base_url))
                        .header("X-License-Key-Hash", license_key_hash)
                        .header("X-Machine-Fingerprint", machine)
                        .send()
                        .await;
                    self.answer(res).await
                },
                say_wait,
            )
            .await
    }

    /// The published verdict-signing keys.
    pub async fn keys(&self) -> Result<tidemark_wire::verdict::KeySet, ClientError> {
        self.retry
            .run(
                || async {
                    let res = self
                        .http
                        .get(format!("{}/v1/keys", self.base_url))
                        .send()
                        .await;
                    self.answer(res).await
                },
                say_wait,
            )
            .await
    }

    /// Validation reduced to the license state machine's outcome: the answer's verdict
    /// verified with `trusted` (which learns keys the service now signs with, as far as
    /// trusted keys vouch for them) and checked against this licence and machine.
    pub async fn validation_outcome(
        &self,
        license_key_hash: &str,
        machine: &str,
        trusted: &mut crate::verdict::TrustedKeys,
    ) -> Outcome {
        match self.validate(license_key_hash, machine).await {
            Ok(result) => {
                self.verified(result.verdict, license_key_hash, machine, trusted)
                    .await
            }
            // A certificate that stopped being trusted is no verdict on the license either.
            Err(
                ClientError::Unreachable { reason, .. } | ClientError::Untrusted { reason, .. },
            ) => Outcome::Unreachable(reason),
            // Still unavailable after the retries: no verdict on the license either.
            Err(err @ ClientError::Api { status: 500.., .. })
            | Err(err @ ClientError::ServerFault { .. }) => Outcome::Unreachable(err.to_string()),
            Err(ClientError::Api { code, message, .. }) => {
                Outcome::Refused(format!("{message} ({code})"))
            }
            Err(ClientError::Protocol(p)) => Outcome::Unreachable(p),
        }
    }

    /// A verdict from an answer, checked; the key set is read again first, so windows and
    /// successors are current.
    pub async fn verified(
        &self,
        jws: Option<String>,
        license_key_hash: &str,
        machine: &str,
        trusted: &mut crate::verdict::TrustedKeys,
    ) -> Outcome {
        use crate::license::{Kind, Verdict};
        let Some(jws) = jws else {
            return Outcome::Unreachable(
                "the service answered without a signed verdict (a server older than signed \
                 verdicts, or something in between removed it)"
                    .into(),
            );
        };
        match self.keys().await {
            Ok(set) => {
                if let Err(e) = trusted.learn(&set) {
                    return Outcome::Unreachable(format!("the service's key set: {e}"));
                }
            }
            Err(e) => return Outcome::Unreachable(format!("the service's key set: {e}")),
        }
        let expect = crate::verdict::Expect::for_license(license_key_hash, machine);
        match trusted.verify(&jws, Kind::Validation.typ()) {
            Ok(claims) => match expect.check(&claims) {
                Ok(()) => Outcome::Answered(Box::new(Verdict {
                    claims,
                    jws,
                    kind: Kind::Validation,
                })),
                Err(e) => Outcome::Unreachable(e),
            },
            Err(e) => Outcome::Unreachable(format!("the service's answer: {e}")),
        }
    }

    pub async fn activate(
        &self,
        license_key_hash: &str,
        machine: &str,
        fingerprint: &str,
    ) -> Result<ActivateResponse, ClientError> {
        // Safe to repeat: an activation that was answered too late only leaves an unused key.
        self.retry
            .run(
                || async {
                    let res = self
                        .http
                        .post(format!("{}/v1/license/activate", self.base_url))
                        .header("X-License-Key-Hash", license_key_hash)
                        .header("X-Machine-Fingerprint", fingerprint)
                        .json(&ActivateRequest {
                            machine: machine.to_owned(),
                        })
                        .send()
                        .await;
                    self.answer(res).await
                },
                say_wait,
            )
            .await
    }

    /// Exchanges a CI job's OpenID Connect token for a push token (keyless CI). A token is
    /// single-use, so only refusals that did not use it (`429`, `503`) are retried.
    pub async fn exchange_oidc(
        &self,
        job_token: &str,
        account: Option<&str>,
    ) -> Result<tidemark_wire::OidcExchangeResponse, ClientError> {
        let request = tidemark_wire::OidcExchangeRequest {
            token: job_token.to_owned(),
            account: account.map(str::to_owned),
        };
        self.retry
            .run(
                || async {
                    let res = self
                        .http
                        .post(format!("{}/v1/auth/oidc/exchange", self.base_url))
                        .json(&request)
                        .send()
                        .await;
                    self.answer(res).await
                },
                say_wait,
            )
            .await
    }

    /// Asks GitHub Actions for the job's OpenID Connect token with `audience`
    /// (`ACTIONS_ID_TOKEN_REQUEST_URL` and `_TOKEN`, as `@actions/core`'s `getIDToken` does).
    pub async fn github_job_token(
        &self,
        request_url: &str,
        request_token: &str,
        audience: &str,
    ) -> Result<String, ClientError> {
        #[derive(serde::Deserialize)]
        struct Answer {
            value: String,
        }
        let mut url = reqwest::Url::parse(request_url)
            .map_err(|e| ClientError::Protocol(format!("ACTIONS_ID_TOKEN_REQUEST_URL: {e}")))?;
        url.query_pairs_mut().append_pair("audience", audience);
        let res = self
            .http
            .get(url)
            .bearer_auth(request_token)
            .header("Accept", "application/json; api-version=2.0")
            .send()
            .await
            .map_err(|e| self.failed(&e))?;
        let status = res.status();
        if !status.is_success() {
            return Err(ClientError::Protocol(format!(
                "GitHub's job token endpoint answered {status}: is `permissions: id-token: \
                 write` set for the job?"
            )));
        }
        let answer: Answer = res
            .json()
            .await
            .map_err(|e| ClientError::Protocol(format!("GitHub's job token endpoint: {e}")))?;
        Ok(answer.value)
    }

    /// Sends one push. `project` (the body's label) goes along as `X-Tidemark-Project` too,
    /// which the documented proxy routes by, so that a project's pushes reach the replica that
    /// keeps its line's state (`deploy/nginx/tidemark.conf`); the server reads only the body.
    pub async fn push_once(
        &self,
        api_key: &str,
        body: &[u8],
        project: Option<&str>,
    ) -> Result<PushResponse, ClientError> {
        let mut req = self
            .http
            .post(format!("{}/v1/dashboard/push", self.base_url))
            .header("X-API-Key", api_key)
            .header("Content-Type", "application/json");
        if let Some(value) = project.and_then(|p| reqwest::header::HeaderValue::from_str(p).ok()) {
            req = req.header(PROJECT_HEADER, value);
        }
        let res = req.body(body.to_vec()).send().await;
        self.answer(res).await
    }

    /// Pushes, retrying as `policy` says: after `Retry-After` (plus jitter) on `429`,
    /// `503 server_busy`, `503 database_unavailable` and `507 storage_full`, and with
    /// exponential back-off when the service did not answer. A push sent again is answered
    /// like the first and costs nothing, so retrying is always safe. `on_wait(why, attempt,
    /// delay)` is told before each wait.
    pub async fn push(
        &self,
        api_key: &str,
        body: &[u8],
        project: Option<&str>,
        policy: RetryPolicy,
        on_wait: impl FnMut(&Wait, u32, Duration),
    ) -> Result<PushResponse, ClientError> {
        policy
            .run(|| self.push_once(api_key, body, project), on_wait)
            .await
    }

    /// A `/v1` call with the API key (or a CI push token) and an optional JSON body, riding
    /// out an unavailable service like validation does: reads and these idempotent changes
    /// (a PUT or DELETE sent twice leaves the same state) are safe to repeat.
    pub async fn call<T: DeserializeOwned>(
        &self,
        method: reqwest::Method,
        path: &str,
        api_key: &str,
        body: Option<&serde_json::Value>,
    ) -> Result<T, ClientError> {
        self.retry
            .run(
                || async {
                    let mut req = self
                        .http
                        .request(method.clone(), format!("{}{path}", self.base_url))
                        .header("X-API-Key", api_key);
                    if let Some(body) = body {
                        req = req.json(body);
                    }
                    self.answer(req.send().await).await
                },
                say_wait,
            )
            .await
    }

    /// Sends `body` as it is (a document in `content_type`), with the API key.
    pub async fn send_document<T: DeserializeOwned>(
        &self,
        method: reqwest::Method,
        path: &str,
        api_key: &str,
        body: &[u8],
        content_type: &str,
    ) -> Result<T, ClientError> {
        self.retry
            .run(
                || async {
                    let req = self
                        .http
                        .request(method.clone(), format!("{}{path}", self.base_url))
                        .header("X-API-Key", api_key)
                        .header("Content-Type", content_type)
                        .body(body.to_vec());
                    self.answer(req.send().await).await
                },
                say_wait,
            )
            .await
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

/// Says on standard error what a validation or activation waits for (never failing: the
/// wait matters more than the line).
fn say_wait(why: &Wait, attempt: u32, delay: Duration) {
    use std::io::Write as _;
    let _ = writeln!(
        std::io::stderr(),
        "{why}; waiting {:.1} s before retry {attempt}.",
        delay.as_secs_f64()
    );
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
