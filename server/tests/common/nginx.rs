//! Debian's nginx in front of test servers, configured with the documented site file
//! (`deploy/nginx/tidemark.conf`) and a certificate from a throwaway CA
//! (`scripts/test-cert.sh`), the way an operator deploys Tidemark behind TLS.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub struct Nginx {
    /// `https://localhost:<port>`: the name the certificate is for.
    pub https_url: String,
    /// The plain-HTTP port that redirects to https.
    pub http_port: u16,
    /// The CA certificate that signed the server's (what a client must trust).
    pub ca_pem: PathBuf,
    dir: tempfile::TempDir,
    child: Child,
}

const SITE: &str = include_str!("../../../deploy/nginx/tidemark.conf");

/// `text` with `from` replaced, insisting that it was there: a changed site file must fail
/// here, not quietly run the tests against something else.
fn substitute(text: &str, from: &str, to: &str) -> String {
    assert!(
        text.contains(from),
        "deploy/nginx/tidemark.conf no longer contains {from:?}"
    );
    text.replace(from, to)
}

fn nginx_binary() -> &'static str {
    if std::path::Path::new("/usr/sbin/nginx").exists() {
        "/usr/sbin/nginx"
    } else {
        "nginx"
    }
}

impl Nginx {
    /// Starts nginx proxying to `upstreams` (replicas; they need not be up yet) and waits
    /// until it accepts connections.
    pub async fn start(upstreams: &[SocketAddr]) -> Self {
        let dir = tempfile::tempdir().expect("nginx dir");
        let certs = dir.path().join("certs");
        let made = Command::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../scripts/test-cert.sh"
        ))
        .arg(&certs)
        .status()
        .expect("run scripts/test-cert.sh (needs openssl)");
        assert!(made.success(), "scripts/test-cert.sh failed");
        let https_port = super::free_port();
        let http_port = super::free_port();
        let servers: String = upstreams
            .iter()
            .map(|a| format!("server {a} max_fails=1 fail_timeout=5s;\n    "))
            .collect();
        let mut site = substitute(
            SITE,
            "server 127.0.0.1:3000 max_fails=1 fail_timeout=5s;\n    ",
            &servers,
        );
        site = substitute(
            &site,
            "listen 80;",
            &format!("listen 127.0.0.1:{http_port};"),
        );
        site = substitute(
            &site,
            "listen 443 ssl http2;",
            &format!("listen 127.0.0.1:{https_port} ssl http2;"),
        );
        site = substitute(
            &site,
            "/etc/ssl/tidemark/fullchain.pem",
            &certs.join("server.pem").display().to_string(),
        );
        site = substitute(
            &site,
            "/etc/ssl/tidemark/privkey.pem",
            &certs.join("server.key").display().to_string(),
        );
        let site_path = dir.path().join("tidemark.conf");
        std::fs::write(&site_path, site).expect("write site");
        let d = dir.path().display();
        // One process (no master): killing it stops nginx, and a test's nginx never outlives it.
        let main = format!(
            "daemon off;\nmaster_process off;\npid {d}/nginx.pid;\nerror_log {d}/error.log warn;\n\
             events {{ worker_connections 512; }}\n\
             http {{\n  access_log off;\n  client_body_temp_path {d}/body;\n  proxy_temp_path {d}/proxy;\n\
             \x20 fastcgi_temp_path {d}/fastcgi;\n  uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n\
             \x20 include {};\n}}\n",
            site_path.display()
        );
        let conf = dir.path().join("nginx.conf");
        std::fs::write(&conf, main).expect("write nginx.conf");
        let child = Command::new(nginx_binary())
            .arg("-p")
            .arg(dir.path())
            .arg("-e")
            .arg(dir.path().join("error.log"))
            .arg("-c")
            .arg(&conf)
            .stdin(Stdio::null())
            .spawn()
            .expect("start nginx (Debian package nginx; make setup installs it)");
        let nginx = Nginx {
            https_url: format!("https://localhost:{https_port}"),
            http_port,
            ca_pem: certs.join("ca.pem"),
            dir,
            child,
        };
        for _ in 0..100 {
            if tokio::net::TcpStream::connect(("127.0.0.1", https_port))
                .await
                .is_ok()
            {
                return nginx;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("nginx did not start: {}", nginx.error_log());
    }

    pub fn error_log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("error.log")).unwrap_or_default()
    }

    /// A client that trusts the test CA (and nothing is redirected).
    pub fn client(&self) -> reqwest::Client {
        let pem = std::fs::read(&self.ca_pem).expect("read CA");
        reqwest::Client::builder()
            .add_root_certificate(reqwest::Certificate::from_pem(&pem).expect("CA pem"))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("client")
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Forwards TCP connections until dropped.
pub struct Forwarder(tokio::task::JoinHandle<()>);

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Forwards TCP connections from `127.0.0.1:port` to `to`: a replica that comes up on an
/// address the proxy already knows.
pub async fn forward(port: u16, to: SocketAddr) -> Forwarder {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .expect("bind forwarder");
    Forwarder(tokio::spawn(async move {
        while let Ok((mut inbound, _)) = listener.accept().await {
            tokio::spawn(async move {
                if let Ok(mut outbound) = tokio::net::TcpStream::connect(to).await {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                }
            });
        }
    }))
}
