//! What the large-account benches share: the server in-process on a data directory (SQLite,
//! or the PostgreSQL `DATABASE_URL` names), an OpenID provider, a browser signed in as the
//! account's owner, the bench's account (made on the first run, found after) and a fresh API
//! key for this run's `/v1` requests.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use tidemark_store::{AccountId, Writer};

use crate::{browser, oidc};

pub const EMAIL: &str = "scale@example.com";

pub struct Harness {
    pub state: server::state::AppState,
    pub writer: Writer,
    pub base: String,
    pub browser: browser::Browser,
    pub account: AccountId,
    pub api_key: String,
    /// `sqlite` or `postgres`.
    pub backend: &'static str,
    /// The server's environment, for the operator commands a bench runs beside it.
    pub env: HashMap<String, String>,
    _provider: oidc::ScriptedProvider,
}

impl Harness {
    /// The server on `dir` (and `DATABASE_URL` when set), serving on a free port, with
    /// housekeeping off (a bench times its passes itself) and no write limit.
    pub async fn start(dir: &Path) -> Harness {
        let provider = oidc::ScriptedProvider::start().await;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let mut env: HashMap<String, String> = provider
            .env()
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
        env.insert("TIDEMARK_DATA_DIR".into(), dir.display().to_string());
        env.insert("TIDEMARK_BASE_URL".into(), base.clone());
        env.insert("LEPTOS_SITE_ADDR".into(), base[7..].to_owned());
        env.insert("RUST_LOG".into(), "warn".into());
        env.insert("TIDEMARK_WRITES_PER_MINUTE".into(), "100000000".into());
        // The bench runs each pass itself, timed (the worker's would hold the lease meanwhile).
        env.insert("TIDEMARK_HOUSEKEEPING".into(), "off".into());
        if let Ok(url) = std::env::var("DATABASE_URL") {
            env.insert("DATABASE_URL".into(), url);
        }
        let backend = if env.contains_key("DATABASE_URL") {
            "postgres"
        } else {
            "sqlite"
        };
        let config = server::config::Config::from_lookup(|k| env.get(k).cloned()).unwrap();
        let state = server::build_state(config).await.unwrap();
        let writer = Writer::for_tests(state.db.clone());
        let (account, api_key) = the_account(&state, &writer).await;
        let serving = state.clone();
        tokio::spawn(async move { server::serve(serving, listener).await.unwrap() });

        provider.script(oidc::Script::user(EMAIL));
        let mut browser = browser::Browser::new(&base);
        assert_eq!(browser.sign_in_with_oidc(EMAIL).await.status(), 200);
        Harness {
            state,
            writer,
            base,
            browser,
            account,
            api_key,
            backend,
            env,
            _provider: provider,
        }
    }

    /// Reads `url` `runs` times after one untimed warm-up, with `api_key` or as the signed-in
    /// browser; every answer must be 200.
    pub async fn time_page(
        &mut self,
        url: &str,
        api_key: Option<&str>,
        name: &str,
        runs: usize,
    ) -> Vec<Duration> {
        let api = reqwest::Client::new();
        let mut times = Vec::with_capacity(runs);
        for run in 0..=runs {
            let started = Instant::now();
            let res = match api_key {
                Some(key) => api.get(url).header("X-API-Key", key).send().await.unwrap(),
                None => self.browser.get(url).await,
            };
            assert_eq!(res.status(), 200, "{name}: {url}");
            let _ = res.bytes().await.unwrap();
            if run > 0 {
                times.push(started.elapsed());
            }
        }
        times
    }
}

/// The sizes the first argument lists (`10,100,1000` when none).
pub fn sizes() -> Vec<usize> {
    std::env::args()
        .nth(1)
        .unwrap_or_else(|| "10,100,1000".into())
        .split(',')
        .map(|n| {
            n.trim()
                .parse()
                .expect("sizes: a comma-separated list of N")
        })
        .collect()
}

/// Where the account lives: `SCALE_DATA_DIR` (kept between runs: SQLite's file, and the clock
/// the history was written by, so a run stopped half-way carries on), else `temp`.
pub fn data_dir(temp: &tempfile::TempDir) -> std::path::PathBuf {
    let dir = std::env::var_os("SCALE_DATA_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| temp.path().to_owned());
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `{"p50": ms, "p95": ms, "p99": ms}` of `times`.
pub fn percentiles(mut times: Vec<Duration>) -> serde_json::Value {
    times.sort();
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize].as_secs_f64() * 1e3;
    serde_json::json!({"p50": at(0.5), "p95": at(0.95), "p99": at(0.99)})
}

/// The bench's account (made on the first run) and an API key of its own for this run's
/// `/v1` requests; the store-level pushes name the key [`tidemark_store::testing::push_key_id`].
async fn the_account(state: &server::state::AppState, writer: &Writer) -> (AccountId, String) {
    let known = tidemark_store::licenses::licenses_for_email(&state.db, EMAIL)
        .await
        .unwrap();
    let account = match known.first() {
        Some((license, _)) => license.account_id.clone(),
        None => {
            tidemark_services::licensing::create(
                writer,
                &state.license_keys,
                tidemark_services::licensing::LicenseRequest {
                    email: tidemark_domain::text::Email::parse(EMAIL).unwrap(),
                    tier: tidemark_wire::Tier::Enterprise,
                    expires_at: None,
                    max_projects: None,
                    max_machines: None,
                    features_added: Vec::new(),
                    features_removed: Vec::new(),
                },
                &tidemark_store::testing::audit(),
            )
            .await
            .unwrap()
            .account_id
        }
    };
    let key = |id: String, secret: &tidemark_domain::secrets::ApiKey| {
        tidemark_store::licenses::NewApiKey {
            id,
            account_id: account.clone(),
            hash: secret.hash(),
            prefix: secret.display_prefix(),
            machine: "scale-bench".into(),
            now: tidemark_domain::now_millis(),
        }
    };
    if known.is_empty() {
        let secret = tidemark_domain::secrets::ApiKey::generate();
        let id = tidemark_store::testing::push_key_id(&account);
        tidemark_store::licenses::insert_api_key(writer, &key(id, &secret))
            .await
            .unwrap();
    }
    let secret = tidemark_domain::secrets::ApiKey::generate();
    let id = format!("key_scale_{}", tidemark_domain::now_millis());
    tidemark_store::licenses::insert_api_key(writer, &key(id, &secret))
        .await
        .unwrap();
    (account, secret.expose().to_owned())
}
