//! Debian's nginx in front of test servers, started by `scripts/test-nginx.sh` with the
//! documented site file (`deploy/nginx/tidemark.conf`) and a certificate from a throwaway CA,
//! the way an operator deploys Tidemark behind TLS (the browser tests use the same script).

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

impl Nginx {
    /// Starts nginx (`scripts/test-nginx.sh`: the documented site file, a fresh CA) proxying
    /// to `upstreams` (replicas; they need not be up yet) and waits until it accepts
    /// connections.
    pub async fn start(upstreams: &[SocketAddr]) -> Self {
        let dir = tempfile::tempdir().expect("nginx dir");
        let https_port = super::free_port();
        let http_port = super::free_port();
        let child = Command::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../scripts/test-nginx.sh"
        ))
        .arg(dir.path())
        .arg(https_port.to_string())
        .arg(http_port.to_string())
        .args(upstreams.iter().map(|a| a.to_string()))
        .stdin(Stdio::null())
        .spawn()
        .expect("run scripts/test-nginx.sh (Debian's nginx and openssl; make setup installs them)");
        let nginx = Nginx {
            https_url: format!("https://localhost:{https_port}"),
            http_port,
            ca_pem: dir.path().join("certs").join("ca.pem"),
            dir,
            child,
        };
        for _ in 0..200 {
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
