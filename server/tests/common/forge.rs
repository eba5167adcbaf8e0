//! GitHub's and GitLab's REST APIs as the CLI's pull-request decoration meets them
//! (`end2end/peers/forge.mjs`): every request is checked against the forges' OpenAPI
//! descriptions before it is answered, and what was commented and set can be read back.

use std::process::{Child, Command, Stdio};

use serde_json::Value;

pub struct Forge {
    child: Child,
    pub base: String,
    pub token: String,
}

impl Forge {
    pub async fn start() -> Self {
        let port = super::free_port();
        let token = format!("forge-token-{port}");
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../end2end/peers/forge.mjs");
        let child = Command::new("node")
            .arg(script)
            .args(["--port", &port.to_string(), "--token", &token])
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("node end2end/peers/forge.mjs (run scripts/setup.sh for the npm packages)");
        let forge = Forge {
            child,
            base: format!("http://127.0.0.1:{port}"),
            token,
        };
        // GitHub's description is large: ready when the state answers.
        for _ in 0..300 {
            if reqwest::get(format!("{}/__state", forge.base))
                .await
                .is_ok()
            {
                return forge;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        panic!("the forge peer did not start");
    }

    /// `{ comments, statuses, failures, requests }`.
    pub async fn state(&self) -> Value {
        reqwest::get(format!("{}/__state", self.base))
            .await
            .expect("forge state")
            .json()
            .await
            .expect("forge state JSON")
    }
}

impl Drop for Forge {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
