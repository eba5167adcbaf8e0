//! The signing keys of the issuers trusted publishers name: found through OpenID Connect
//! discovery, cached by `kid`, fetched again for an unknown `kid` at most once a minute per
//! issuer (a rotation is seen at once; a flood of made-up `kid`s costs one fetch a minute).
//! Redirects are followed only within the issuer's host, the key set must be served from the
//! issuer's own origin, and (unless the operator allows it) only public addresses are reached.
//! Certificates are checked against the system's trust store (`SSL_CERT_FILE` and
//! `SSL_CERT_DIR` honoured), the bundled web roots and `TIDEMARK_OIDC_CA_FILE`; the standard
//! proxy variables (`HTTPS_PROXY`, `NO_PROXY`, …) are honoured, the proxy's own address
//! exempt from the public-address rule (it is the operator's, not a tenant's).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use jsonwebtoken::jwk::{Jwk, JwkSet, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use tidemark_domain::ci_identity::Issuer;

use crate::net::dns::DnsVerifier;

/// An unknown `kid` makes the key set be fetched again at most this often.
pub const REFETCH_EVERY: Duration = Duration::from_secs(60);
/// Keys known for longer than this are fetched again before use.
const MAX_AGE: Duration = Duration::from_secs(60 * 60);
/// Discovery documents and key sets are small; anything larger is refused unread.
const MAX_DOCUMENT_BYTES: usize = 256 * 1024;
const TIMEOUT: Duration = Duration::from_secs(5);

/// Why no key could be had.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The issuer publishes no key by that id (after fetching again, or within a minute of it).
    #[error("the issuer publishes no key with kid {0:?}")]
    UnknownKid(String),
    /// Not in the key set fetched less than [`REFETCH_EVERY`] ago, which may be too early for
    /// a key the issuer has just started using: it can be fetched again after `retry_in`.
    #[error("no key with kid {kid:?} in the key set fetched under a minute ago")]
    NotYetRefetched { kid: String, retry_in: Duration },
    /// The issuer's discovery document or key set could not be had or read.
    #[error("{0}")]
    Unreachable(String),
}

struct IssuerKeys {
    keys: HashMap<String, Jwk>,
    fetched_at: Instant,
    /// When an unknown `kid` last made the set be fetched again.
    refetched_at: Option<Instant>,
}

pub struct KeySets {
    client: reqwest::Client,
    /// One slot per issuer, each with a lock of its own: a slow or unreachable issuer holds
    /// up only the exchanges that name it.
    sets: std::sync::Mutex<HashMap<String, Arc<tokio::sync::Mutex<Option<IssuerKeys>>>>>,
}

impl KeySets {
    pub fn new(
        dns: DnsVerifier,
        allow_private: bool,
        extra_roots: Option<&[u8]>,
    ) -> anyhow::Result<Self> {
        let mut builder = reqwest::Client::builder();
        if let Some(pem) = extra_roots {
            for cert in reqwest::Certificate::from_pem_bundle(pem)
                .context("TIDEMARK_OIDC_CA_FILE holds no PEM certificate")?
            {
                builder = builder.add_root_certificate(cert);
            }
        }
        let client = builder
            .redirect(reqwest::redirect::Policy::custom(|attempt| {
                let first_host = attempt.previous().first().and_then(|u| u.host_str());
                if attempt.previous().len() >= 3 {
                    attempt.error("too many redirects")
                } else if first_host == attempt.url().host_str() {
                    attempt.follow()
                } else {
                    attempt.error("a redirect to another host")
                }
            }))
            .timeout(TIMEOUT)
            .connect_timeout(TIMEOUT)
            .user_agent(concat!("Tidemark-OIDC/", env!("CARGO_PKG_VERSION")))
            .dns_resolver(Arc::new(crate::net::guard::GuardedResolver {
                dns,
                allow_private,
                lifted_by: "TIDEMARK_OIDC_ALLOW_PRIVATE_ISSUERS",
                exempt: proxy_hosts(),
            }))
            .build()
            .context("could not build the OIDC key client")?;
        Ok(KeySets {
            client,
            sets: std::sync::Mutex::new(HashMap::new()),
        })
    }

    /// The key `kid` of `issuer`, for `alg`.
    pub async fn key(
        &self,
        issuer: &Issuer,
        kid: &str,
        alg: Algorithm,
    ) -> Result<DecodingKey, KeyError> {
        // One fetch per issuer at a time: concurrent exchanges after a rotation wait for the
        // same fetch rather than each starting one.
        let slot = {
            let mut sets = self
                .sets
                .lock()
                .map_err(|_| KeyError::Unreachable("the key cache is unusable".into()))?;
            sets.entry(issuer.as_str().to_owned()).or_default().clone()
        };
        let mut slot = slot.lock().await;
        let cached = slot.as_ref();
        let fresh = cached.is_some_and(|k| k.fetched_at.elapsed() < MAX_AGE);
        if let Some(jwk) = cached.filter(|_| fresh).and_then(|k| k.keys.get(kid)) {
            return decoding_key(jwk, alg, kid);
        }
        let refetched_at = cached.and_then(|k| k.refetched_at);
        let wait = refetched_at.and_then(|at| REFETCH_EVERY.checked_sub(at.elapsed()));
        if let (true, Some(retry_in)) = (fresh, wait.filter(|w| !w.is_zero())) {
            // Unknown as of the last fetch, which may predate the issuer's new key: retryable,
            // not a verdict on the token.
            return Err(KeyError::NotYetRefetched {
                kid: kid.to_owned(),
                retry_in,
            });
        }
        let keys = self.fetch(issuer).await?;
        let now = Instant::now();
        let entry = IssuerKeys {
            keys,
            fetched_at: now,
            // A fetch for an unknown kid (not the first, nor one for age) starts the minute.
            refetched_at: if fresh { Some(now) } else { refetched_at },
        };
        let found = entry.keys.get(kid).map(|jwk| decoding_key(jwk, alg, kid));
        *slot = Some(entry);
        found.unwrap_or_else(|| Err(KeyError::UnknownKid(kid.to_owned())))
    }

    async fn fetch(&self, issuer: &Issuer) -> Result<HashMap<String, Jwk>, KeyError> {
        #[derive(serde::Deserialize)]
        struct Discovery {
            issuer: String,
            jwks_uri: String,
        }
        let discovery: Discovery = self.get_json(&issuer.discovery_url()).await?;
        if discovery.issuer.trim_end_matches('/') != issuer.as_str() {
            return Err(KeyError::Unreachable(format!(
                "the discovery document of {} names another issuer, {:?}",
                issuer.as_str(),
                discovery.issuer
            )));
        }
        let same_origin = match (
            reqwest::Url::parse(issuer.as_str()),
            reqwest::Url::parse(&discovery.jwks_uri),
        ) {
            (Ok(a), Ok(b)) => a.origin() == b.origin(),
            _ => false,
        };
        if !same_origin {
            return Err(KeyError::Unreachable(format!(
                "the key set of {} is not served from its own origin ({:?})",
                issuer.as_str(),
                discovery.jwks_uri
            )));
        }
        let set: JwkSet = self.get_json(&discovery.jwks_uri).await?;
        Ok(set
            .keys
            .into_iter()
            .filter(|k| k.common.public_key_use != Some(PublicKeyUse::Encryption))
            .filter_map(|k| Some((k.common.key_id.clone()?, k)))
            .collect())
    }

    async fn get_json<T: serde::de::DeserializeOwned>(&self, url: &str) -> Result<T, KeyError> {
        let unreachable = |why: String| KeyError::Unreachable(format!("{url}: {why}"));
        let mut res = self
            .client
            .get(url)
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| unreachable(without_url(&e)))?;
        if !res.status().is_success() {
            return Err(unreachable(format!("answered {}", res.status())));
        }
        let mut body = Vec::new();
        while let Some(chunk) = res
            .chunk()
            .await
            .map_err(|e| unreachable(without_url(&e)))?
        {
            body.extend_from_slice(&chunk);
            if body.len() > MAX_DOCUMENT_BYTES {
                return Err(unreachable("the document is larger than 256 KiB".into()));
            }
        }
        serde_json::from_slice(&body)
            .map_err(|e| unreachable(format!("not the expected JSON: {e}")))
    }
}

/// The hosts of the proxies the standard variables name: reqwest connects to them, and so
/// resolves them, for any issuer they carry.
fn proxy_hosts() -> Vec<String> {
    [
        "HTTPS_PROXY",
        "https_proxy",
        "HTTP_PROXY",
        "http_proxy",
        "ALL_PROXY",
        "all_proxy",
    ]
    .iter()
    .filter_map(|name| std::env::var(name).ok())
    .filter_map(|url| reqwest::Url::parse(url.trim()).ok())
    .filter_map(|url| url.host_str().map(str::to_owned))
    .collect()
}

/// reqwest's error text without the URL (the caller names it once).
fn without_url(err: &reqwest::Error) -> String {
    let mut text = err.to_string();
    if let Some(url) = err.url() {
        text = text.replace(&format!(" for url ({url})"), "");
    }
    let mut source = std::error::Error::source(err);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

fn decoding_key(jwk: &Jwk, alg: Algorithm, kid: &str) -> Result<DecodingKey, KeyError> {
    use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve};
    let fits = match (&jwk.algorithm, alg) {
        (AlgorithmParameters::RSA(_), Algorithm::RS256) => true,
        (AlgorithmParameters::EllipticCurve(ec), Algorithm::ES256) => {
            ec.curve == EllipticCurve::P256
        }
        _ => false,
    };
    let declared = jwk.common.key_algorithm.map(|a| format!("{a:?}"));
    if !fits || declared.is_some_and(|d| d != format!("{alg:?}")) {
        return Err(KeyError::UnknownKid(format!(
            "{kid} (the key is not an {alg:?} key)"
        )));
    }
    DecodingKey::from_jwk(jwk).map_err(|_| KeyError::UnknownKid(kid.to_owned()))
}
