//! `TestApp`: the real server on port 0 with a fresh database, in-process, plus fixtures made
//! the way operators and scanners make them (operator functions, `/v1` calls).
#![allow(dead_code)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use base64::Engine as _;
use reqwest::StatusCode;
use serde_json::{json, Value};
use server::config::Config;
use server::state::AppState;
use tidemark_domain::secrets::sha256_hex;
use tidemark_store::testing::{fresh_unmigrated, TestDb};
use tidemark_store::{Backend, Writer};
use tidemark_wire::Tier;

#[allow(unused_imports)]
pub use tidemark_store::testing::backends;

pub mod browser;
pub mod ci_issuer;
pub mod dns;
pub mod forge;
pub mod nginx;
pub mod oidc;
pub mod postgres;
pub mod receiver;
pub mod saml;
pub mod smtp;

const LOOPBACK_ANY_PORT: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 0);

pub struct TestApp {
    pub backend: Backend,
    pub addr: SocketAddr,
    pub base_url: String,
    pub client: reqwest::Client,
    /// A pool on the same database as the server's, for looking behind the API (and writing
    /// there directly: nothing cancels a test half-way).
    pub db: Writer,
    pub state: AppState,
    pub data_dir: Arc<tempfile::TempDir>,
    pub test_db: Arc<TestDb>,
    env: HashMap<String, String>,
    server: tokio::task::JoinHandle<()>,
    /// Asks the server to stop the way SIGTERM does: stop accepting, finish what is running.
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
}

/// A license made by the operator function, as a customer would hold it.
#[derive(Debug, Clone)]
pub struct TestLicense {
    pub key: String,
    /// What the scanner sends in `X-License-Key-Hash`.
    pub hash: String,
    pub license_id: String,
    pub account_id: tidemark_wire::ids::AccountId,
    pub email: String,
}

impl TestApp {
    pub async fn spawn(backend: Backend) -> Self {
        Self::spawn_with(backend, &[]).await
    }

    /// Spawns with extra environment settings (`name`, `value`).
    /// A server whose sign-in goes to a fresh scripted OpenID Connect provider, and that
    /// provider (tests script who signs in with it).
    pub async fn spawn_with_oidc(backend: Backend) -> (Self, oidc::ScriptedProvider) {
        let provider = oidc::ScriptedProvider::start().await;
        let env = provider.env();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        (Self::spawn_with(backend, &env).await, provider)
    }

    /// [`TestApp::spawn_with_oidc`] with extra environment settings.
    pub async fn spawn_with_oidc_and(
        backend: Backend,
        extra: &[(&str, &str)],
    ) -> (Self, oidc::ScriptedProvider) {
        let provider = oidc::ScriptedProvider::start().await;
        let mut env: Vec<(&str, String)> = provider
            .env()
            .into_iter()
            .map(|(k, v)| (k as &str, v))
            .collect();
        env.extend(extra.iter().map(|(k, v)| (*k, v.to_string())));
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        (Self::spawn_with(backend, &env).await, provider)
    }

    /// Another server on the same database and settings, as a second replica behind a load
    /// balancer (meaningful on PostgreSQL).
    pub async fn replica(&self) -> Self {
        Self::start(
            self.backend,
            self.test_db.clone(),
            self.data_dir.clone(),
            self.env.clone(),
            LOOPBACK_ANY_PORT,
        )
        .await
    }

    pub async fn spawn_with(backend: Backend, extra: &[(&str, &str)]) -> Self {
        let test_db = fresh_unmigrated(backend).await;
        Self::spawn_on(test_db, extra).await
    }

    /// A server on a database the test chose (a private PostgreSQL it stops and freezes, a
    /// SQLite file on a small disk), with its data directory beside a SQLite file.
    pub async fn spawn_on(test_db: TestDb, extra: &[(&str, &str)]) -> Self {
        let backend = test_db.db.backend();
        let test_db = Arc::new(test_db);
        let data_dir = Arc::new(tempfile::tempdir().expect("data dir"));
        let master_key =
            base64::engine::general_purpose::STANDARD.encode(rand::random::<[u8; 32]>());
        let mut env: HashMap<String, String> = HashMap::from([
            ("DATABASE_URL".into(), test_db.url.clone()),
            (
                "TIDEMARK_DATA_DIR".into(),
                data_dir.path().display().to_string(),
            ),
            ("TIDEMARK_MASTER_KEY".into(), master_key),
            // High enough not to get in the way; tests of the limit set their own.
            ("TIDEMARK_WRITES_PER_MINUTE".into(), "1000".into()),
            // Tests of state changes must see them at once; the cache has its own test.
            ("TIDEMARK_VALIDATION_CACHE_MS".into(), "0".into()),
        ]);
        for (k, v) in extra {
            env.insert(k.to_string(), v.to_string());
        }
        Self::start(backend, test_db, data_dir, env, LOOPBACK_ANY_PORT).await
    }

    /// Stops this server and starts a new one on the same database and data directory, as
    /// after a crash or a deploy. `extra` overrides settings for the new one.
    pub async fn restart(mut self, extra: &[(&str, &str)]) -> Self {
        self.server.abort();
        let _ = (&mut self.server).await;
        let mut env = self.env.clone();
        for (k, v) in extra {
            env.insert(k.to_string(), v.to_string());
        }
        Self::start(
            self.backend,
            self.test_db.clone(),
            self.data_dir.clone(),
            env,
            LOOPBACK_ANY_PORT,
        )
        .await
    }

    /// Stops serving (and this replica's workers) as a crash would; the database stays.
    pub async fn stop(&mut self) {
        self.server.abort();
        let _ = (&mut self.server).await;
    }

    /// A deploy of this replica: stops it as SIGTERM does (no new connections; requests
    /// already running finish and are answered), then starts the new one on the same
    /// address, where a proxy still sends traffic.
    pub async fn rolling_restart(mut self) -> Self {
        if let Some(stop) = self.shutdown.take() {
            let _ = stop.send(());
        }
        (&mut self.server)
            .await
            .expect("the server stopped cleanly");
        Self::start(
            self.backend,
            self.test_db.clone(),
            self.data_dir.clone(),
            self.env.clone(),
            self.addr,
        )
        .await
    }

    async fn start(
        backend: Backend,
        test_db: Arc<TestDb>,
        data_dir: Arc<tempfile::TempDir>,
        mut env: HashMap<String, String>,
        bind: SocketAddr,
    ) -> Self {
        let listener = tokio::net::TcpListener::bind(bind)
            .await
            .expect("bind the test server's port");
        let addr = listener.local_addr().expect("local addr");
        let base_url = format!("http://{addr}");
        // `TIDEMARK_TEST_LOG=<filter>` shows the servers' logs with a failing test's output.
        if let Ok(filter) = std::env::var("TIDEMARK_TEST_LOG") {
            let _ = tracing_subscriber::fmt()
                .with_test_writer()
                .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
                .try_init();
        }
        // What the test chose, for a restart (which listens on another port).
        let chosen = env.clone();
        // A test may name the public URL (as behind a TLS proxy); requests still go here.
        env.entry("TIDEMARK_BASE_URL".into())
            .or_insert_with(|| base_url.clone());
        env.insert("LEPTOS_SITE_ADDR".into(), addr.to_string());
        let config = Config::from_lookup(|k| env.get(k).cloned()).expect("test config");
        let state = server::build_state(config).await.expect("build state");
        let serving = state.clone();
        let (shutdown, stop) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(async move {
            let stopped = async move {
                let _ = stop.await;
            };
            server::serve_until(serving, listener, stopped)
                .await
                .expect("serve");
        });
        TestApp {
            backend,
            addr,
            base_url,
            client: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                // A request the server never answers fails its test, naming it, instead of
                // holding the whole run until CI's limit.
                .timeout(crate::common::REQUEST_LIMIT)
                .pool_idle_timeout(browser::POOL_IDLE)
                .build()
                .expect("client"),
            db: Writer::for_tests(test_db.db.db().clone()),
            state,
            data_dir,
            test_db,
            env: chosen,
            server,
            shutdown: Some(shutdown),
        }
    }

    /// A setting this server was started with.
    pub fn setting(&self, name: &str) -> Option<&str> {
        self.env.get(name).map(String::as_str)
    }

    /// `tidemark-server ARGS` as an operator on this server's host would run it: its
    /// database, data directory and master key(s), plus `extra`. Off the async runtime, so
    /// the server keeps serving meanwhile.
    pub async fn command(&self, args: &[&str], extra: &[(&str, &str)]) -> (bool, String, String) {
        let mut env: Vec<(String, String)> = vec![
            ("DATABASE_URL".into(), self.test_db.url.clone()),
            (
                "TIDEMARK_DATA_DIR".into(),
                self.data_dir.path().display().to_string(),
            ),
        ];
        for name in ["TIDEMARK_MASTER_KEY", "TIDEMARK_MASTER_KEY_PREVIOUS"] {
            if let Some(value) = self.setting(name) {
                env.push((name.into(), value.into()));
            }
        }
        env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        tokio::task::spawn_blocking(move || {
            let env: Vec<(&str, &str)> =
                env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            tidemark_server(&env, &args)
        })
        .await
        .expect("the command ran")
    }

    /// [`TestApp::command`] started and left running: the caller waits for it or kills it.
    pub fn command_child(&self, args: &[&str], extra: &[(&str, &str)]) -> std::process::Child {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_tidemark-server"));
        command
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("RUST_LOG", "warn")
            .env("DATABASE_URL", &self.test_db.url)
            .env("TIDEMARK_DATA_DIR", self.data_dir.path())
            .envs(extra.iter().copied())
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        for name in ["TIDEMARK_MASTER_KEY", "TIDEMARK_MASTER_KEY_PREVIOUS"] {
            if let Some(value) = self.setting(name) {
                command.env(name, value);
            }
        }
        command.spawn().expect("start tidemark-server")
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base_url, path)
    }

    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.client.get(self.url(path)).send().await.expect("GET")
    }

    /// `GET path` with an API key (or a CI push token) in `X-API-Key`.
    pub async fn get_with_key(&self, key: &str, path: &str) -> reqwest::Response {
        self.client
            .get(self.url(path))
            .header("X-API-Key", key)
            .send()
            .await
            .expect("GET")
    }

    /// One series' value in a fresh `/metrics` scrape (`name{labels}` exactly as exposed).
    pub async fn metric(&self, series: &str) -> Option<f64> {
        metric_value(
            &self.get("/metrics").await.text().await.expect("metrics"),
            series,
        )
    }

    /// A browser signed in with OpenID Connect as `email` (the provider is told to answer
    /// for that address).
    pub async fn signed_in(
        &self,
        provider: &oidc::ScriptedProvider,
        email: &str,
    ) -> browser::Browser {
        provider.script(oidc::Script::user(email));
        let mut browser = browser::Browser::new(&self.base_url);
        let done = browser.sign_in_with_oidc(email).await;
        assert_eq!(
            done.status(),
            StatusCode::OK,
            "sign-in as {email}: {}",
            browser::location(&done)
        );
        browser
    }

    /// Adds `email` to the account with `role`, as an admin would in Settings.
    pub async fn add_member(
        &self,
        account_id: &tidemark_wire::ids::AccountId,
        email: &str,
        role: tidemark_domain::access::Role,
    ) {
        tidemark_store::access::add_member(
            &self.db,
            account_id,
            &tidemark_domain::text::Email::parse(email).expect("test address"),
            role,
            &tidemark_store::testing::audit(),
        )
        .await
        .expect("add member")
        .expect("not a member yet");
    }

    /// A license of `tier`, created as an operator would.
    pub async fn create_license(&self, tier: Tier) -> TestLicense {
        self.create_license_with(tier, None, None).await
    }

    pub async fn create_license_with(
        &self,
        tier: Tier,
        expires_at: Option<i64>,
        max_projects: Option<u64>,
    ) -> TestLicense {
        let email = format!("owner-{}@example.com", rand::random::<u32>());
        let request = tidemark_services::licensing::LicenseRequest {
            email: tidemark_domain::text::Email::parse(&email).expect("a valid e-mail address"),
            tier,
            expires_at,
            max_projects,
            max_machines: None,
            features_added: Vec::new(),
            features_removed: Vec::new(),
        };
        let created = tidemark_services::licensing::create(
            &self.db,
            &self.state.license_keys,
            request,
            &tidemark_store::testing::audit(),
        )
        .await
        .expect("create license");
        TestLicense {
            hash: sha256_hex(created.license_key.as_bytes()),
            key: created.license_key,
            license_id: created.license_id,
            account_id: created.account_id,
            email,
        }
    }

    /// Suspends (or reinstates) `license` as an operator would.
    pub async fn set_suspended(&self, license: &TestLicense, suspended: bool) {
        tidemark_services::licensing::change(
            &self.db,
            &license.license_id,
            tidemark_services::licensing::LicenseChange::Suspended(suspended),
            &tidemark_store::testing::audit(),
        )
        .await
        .expect("set the licence's suspension");
    }

    pub async fn activate(&self, license: &TestLicense, machine: &str) -> String {
        let res = self
            .client
            .post(self.url("/v1/license/activate"))
            .header("X-License-Key-Hash", &license.hash)
            .json(&json!({ "machine": machine }))
            .send()
            .await
            .expect("activate");
        assert_eq!(res.status(), StatusCode::CREATED, "activation");
        let body: Value = res.json().await.expect("activation body");
        body["api_key"].as_str().expect("api_key").to_owned()
    }

    /// A license of `tier` and one activated API key for it.
    pub async fn with_key(&self, tier: Tier) -> (TestLicense, String) {
        let license = self.create_license(tier).await;
        let key = self.activate(&license, "test-machine").await;
        (license, key)
    }

    pub async fn push(&self, api_key: &str, body: &Value) -> reqwest::Response {
        self.client
            .post(self.url("/v1/dashboard/push"))
            .header("X-API-Key", api_key)
            .json(body)
            .send()
            .await
            .expect("push")
    }

    /// Pushes and returns the response body as JSON, whatever the status.
    pub async fn push_json(&self, api_key: &str, body: &Value) -> Value {
        self.push(api_key, body)
            .await
            .json()
            .await
            .expect("JSON body")
    }

    /// Rows in a table (for "nothing was stored" checks).
    pub async fn count(&self, table: &str) -> i64 {
        let sql = format!("SELECT COUNT(*) FROM {table}");
        let (n,): (i64,) = tidemark_store::on_db!(&self.db, pool => {
            sqlx::query_as(&sql).fetch_one(pool).await
        })
        .expect("count");
        n
    }

    /// Rows in a table that meet `condition` (SQL both databases read alike).
    pub async fn count_where(&self, table: &str, condition: &str) -> i64 {
        self.count(&format!("{table} WHERE {condition}")).await
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// One series' value in a `/metrics` text (`name{labels}` exactly as exposed).
pub fn metric_value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
}

/// A push body as the scanner sends it.
pub fn sample_push(label: &str, score: f64, scanned_at: &str) -> Value {
    json!({
        "project_label": label,
        "cloud": "gcp",
        "cloud_account_id": "acme-prod-123",
        "frameworks": ["cis-gcp-2.0", "soc2"],
        "score": score,
        "passed": 140,
        "failed": 2,
        "severity_counts": {"critical": 0, "high": 1, "medium": 1, "low": 0},
        "findings": [
            {
                "rule_id": "cis-gcp-2.0-4.1",
                "resource": "google_compute_instance.web",
                "status": "FAIL",
                "severity": "high",
                "message": "Instance uses the default service account",
                "remediation": "Attach a dedicated service account with least privilege"
            },
            {
                "rule_id": "soc2-cc6.1",
                "resource": "google_storage_bucket.logs",
                "status": "FAIL",
                "severity": "medium",
                "message": "Bucket is not versioned",
                "remediation": "Enable object versioning"
            }
        ],
        "state_source": "ci",
        "scanned_at": scanned_at
    })
}

/// Asserts the contract's error shape and returns the message.
pub async fn assert_error(res: reqwest::Response, status: StatusCode, code: &str) -> String {
    let got = res.status();
    let content_type = res
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let text = res.text().await.expect("body");
    assert_eq!(got, status, "status for {code}: {text}");
    assert!(
        content_type.starts_with("application/json"),
        "content type {content_type}"
    );
    let body: Value = serde_json::from_str(&text).expect("JSON error body");
    assert_eq!(body["error"], code, "{text}");
    let keys: Vec<&String> = body.as_object().expect("object").keys().collect();
    assert_eq!(keys, ["error", "message"], "exactly error and message");
    let message = body["message"].as_str().expect("message").to_owned();
    assert!(!message.is_empty());
    message
}

/// Push headers announcing `content_length` bytes, then the first bytes of a body that never
/// completes: the request stays in the server until the client hangs up or a timeout ends it.
pub async fn stall_a_push(
    app: &TestApp,
    key: &str,
    content_length: usize,
) -> tokio::net::TcpStream {
    use tokio::io::AsyncWriteExt as _;
    let mut stream = tokio::net::TcpStream::connect(app.addr)
        .await
        .expect("connect to the server");
    let head = format!(
        "POST /v1/dashboard/push HTTP/1.1\r\nHost: x\r\nX-API-Key: {key}\r\n\
         Content-Type: application/json\r\nContent-Length: {content_length}\r\n\r\n\
         {{\"project_label\""
    );
    stream
        .write_all(head.as_bytes())
        .await
        .expect("send the head of a push");
    stream
}

/// A loopback port nothing listens on (yet).
/// Runs the real `tidemark-server` binary with nothing from this process's environment but
/// `PATH`, quiet logs and `env`: (succeeded, stdout, stderr).
pub fn tidemark_server(env: &[(&str, &str)], args: &[&str]) -> (bool, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tidemark-server"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("RUST_LOG", "warn")
        .envs(env.iter().copied())
        .args(args)
        .output()
        .expect("run tidemark-server");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

pub use browser::REQUEST_LIMIT;

/// A loopback port for a peer or server the test starts itself.
///
/// Not `bind(0)`: a port the kernel picked and the test released can be picked again by
/// another test's `bind(0)` before the peer binds it (it happened in `make test`). These
/// ports lie below the kernel's ephemeral range, which `bind(0)` draws from, and each is
/// handed out once per process, so no other test can take one in between.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let ephemeral_low: u32 = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|r| r.split_whitespace().next()?.parse().ok())
        .unwrap_or(32_768);
    let (low, high) = (10_000, ephemeral_low.max(12_000));
    // Test binaries run one after another, but a second `make test` may run beside this one.
    let offset = std::process::id() * 97;
    for _ in low..high {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = low + (offset + n) % (high - low);
        let Ok(port) = u16::try_from(port) else {
            continue;
        };
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free loopback port below {high}");
}

/// Polls `probe` every 200 ms until it gives a value or `limit` has passed.
pub async fn wait_for_async<T, Fut>(
    limit: std::time::Duration,
    mut probe: impl FnMut() -> Fut,
) -> Option<T>
where
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = std::time::Instant::now() + limit;
    loop {
        if let Some(v) = probe().await {
            return Some(v);
        }
        if std::time::Instant::now() > deadline {
            return None;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}
