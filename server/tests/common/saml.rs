//! The samlify SAML IdP (`end2end/idp/saml.mjs`, Node) as a child process on its own port,
//! served as `localhost` while the app is on `127.0.0.1`.

use std::process::{Child, Command, Stdio};

pub struct SamlIdp {
    child: Child,
    pub base: String,
    client: reqwest::Client,
}

impl SamlIdp {
    pub async fn start(app_base_url: &str) -> Self {
        Self::start_as(app_base_url, None).await
    }

    /// An IdP that declares `entity_id` (any string it likes) instead of its metadata URL.
    pub async fn start_as(app_base_url: &str, entity_id: Option<&str>) -> Self {
        let port = super::free_port();
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../end2end/idp/saml.mjs");
        let mut command = Command::new("node");
        command.arg(script);
        if let Some(id) = entity_id {
            command.args(["--entity-id", id]);
        }
        let child = command
            .args(["--port", &port.to_string()])
            .args(["--sp-entity-id", &format!("{app_base_url}/saml/metadata")])
            .args(["--acs-url", &format!("{app_base_url}/saml/acs")])
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("node end2end/idp/saml.mjs (run scripts/setup.sh for the npm packages)");
        let idp = SamlIdp {
            child,
            base: format!("http://localhost:{port}"),
            client: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                // A request the server never answers fails its test, naming it, instead of
                // holding the whole run until CI's limit.
                .timeout(crate::common::REQUEST_LIMIT)
                .build()
                .expect("client"),
        };
        for _ in 0..100 {
            if let Ok(res) = idp
                .client
                .get(format!("{}/metadata", idp.base))
                .send()
                .await
            {
                if res.status().is_success() {
                    return idp;
                }
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        panic!("the SAML IdP did not start");
    }

    pub async fn metadata(&self) -> String {
        self.client
            .get(format!("{}/metadata", self.base))
            .send()
            .await
            .expect("metadata")
            .text()
            .await
            .expect("metadata text")
    }

    /// The AuthnRequest id the IdP's sign-in page received at `sso_url`.
    pub async fn request_id(&self, sso_url: &str) -> String {
        let page = self
            .client
            .get(sso_url)
            .send()
            .await
            .expect("sso")
            .text()
            .await
            .expect("page");
        let start = page.find("name=\"rid\" value=\"").expect("rid field") + 18;
        page[start..].split('"').next().expect("rid").to_owned()
    }

    /// A base64 SAMLResponse (see `makeResponse` in saml.mjs for the variants).
    pub async fn forge(&self, spec: serde_json::Value) -> String {
        let res: serde_json::Value = self
            .client
            .post(format!("{}/forge", self.base))
            .json(&spec)
            .send()
            .await
            .expect("forge")
            .json()
            .await
            .expect("forge JSON");
        res["SAMLResponse"]
            .as_str()
            .expect("SAMLResponse")
            .to_owned()
    }
}

impl Drop for SamlIdp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
