//! `TestApp`: the real server on port 0 with a fresh database, in-process.
#![allow(dead_code)]

use std::collections::HashMap;
use std::net::SocketAddr;

use base64::Engine as _;
use server::config::Config;
use tidemark_store::testing::{fresh_unmigrated, TestDb};
use tidemark_store::{Backend, Db};

pub use tidemark_store::testing::backends;

pub struct TestApp {
    pub backend: Backend,
    pub addr: SocketAddr,
    pub base_url: String,
    pub client: reqwest::Client,
    /// A pool on the same database as the server's, for looking behind the API.
    pub db: Db,
    pub data_dir: tempfile::TempDir,
    _test_db: TestDb,
    server: tokio::task::JoinHandle<()>,
}

impl TestApp {
    pub async fn spawn(backend: Backend) -> Self {
        Self::spawn_with(backend, &[]).await
    }

    /// Spawns with extra environment settings (`name`, `value`).
    pub async fn spawn_with(backend: Backend, extra: &[(&str, &str)]) -> Self {
        let test_db = fresh_unmigrated(backend).await;
        let data_dir = tempfile::tempdir().expect("data dir");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind port 0");
        let addr = listener.local_addr().expect("local addr");
        let base_url = format!("http://{addr}");
        let master_key =
            base64::engine::general_purpose::STANDARD.encode(rand::random::<[u8; 32]>());

        let mut env: HashMap<String, String> = HashMap::from([
            ("DATABASE_URL".into(), test_db.url.clone()),
            (
                "TIDEMARK_DATA_DIR".into(),
                data_dir.path().display().to_string(),
            ),
            ("TIDEMARK_MASTER_KEY".into(), master_key),
            ("TIDEMARK_BASE_URL".into(), base_url.clone()),
            ("LEPTOS_SITE_ADDR".into(), addr.to_string()),
        ]);
        for (k, v) in extra {
            env.insert(k.to_string(), v.to_string());
        }
        let config = Config::from_lookup(|k| env.get(k).cloned()).expect("test config");
        let state = server::build_state(config).await.expect("build state");
        let server = tokio::spawn(async move {
            server::serve(state, listener).await.expect("serve");
        });

        TestApp {
            backend,
            addr,
            base_url,
            client: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .expect("client"),
            db: test_db.db.clone(),
            data_dir,
            _test_db: test_db,
            server,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base_url, path)
    }

    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.client.get(self.url(path)).send().await.expect("GET")
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        self.server.abort();
    }
}
