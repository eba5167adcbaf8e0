//! A real DNS server on loopback (`end2end/peers/dns.mjs`, npm dns2, UDP and TCP) that the app
//! resolves SSO verification records through (`TIDEMARK_DNS_RESOLVER`). Records live in a
//! JSON file the server re-reads at every query: publishing one is rewriting the file.

use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};

pub struct DnsServer {
    child: Child,
    /// `127.0.0.1:port`, for `TIDEMARK_DNS_RESOLVER`.
    pub addr: String,
    records: std::path::PathBuf,
    zone: BTreeMap<String, serde_json::Value>,
    _dir: tempfile::TempDir,
}

impl DnsServer {
    pub async fn start() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let records = dir.path().join("records.json");
        std::fs::write(&records, "{}").expect("records file");
        let port = free_udp_and_tcp_port();
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../end2end/peers/dns.mjs");
        let child = Command::new("node")
            .arg(script)
            .args(["--port", &port.to_string()])
            .arg("--records")
            .arg(&records)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("node end2end/peers/dns.mjs (run scripts/setup.sh for the npm packages)");
        let server = DnsServer {
            child,
            addr: format!("127.0.0.1:{port}"),
            records,
            zone: BTreeMap::new(),
            _dir: dir,
        };
        // Ready when it answers over TCP.
        for _ in 0..100 {
            if std::net::TcpStream::connect(&server.addr).is_ok() {
                return server;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        panic!("the DNS server did not start");
    }

    /// Serves these TXT values at `name` (an empty list: the name exists, without TXT).
    pub fn publish(&mut self, name: &str, values: &[&str]) {
        self.zone.insert(name.to_owned(), serde_json::json!(values));
        self.write();
    }

    /// Answers `name`'s A queries with these IPv4 addresses.
    pub fn publish_a(&mut self, name: &str, addresses: &[&str]) {
        self.zone
            .insert(name.to_owned(), serde_json::json!({ "A": addresses }));
        self.write();
    }

    /// Answers SERVFAIL for `name`.
    pub fn fail(&mut self, name: &str) {
        self.zone
            .insert(name.to_owned(), serde_json::json!("SERVFAIL"));
        self.write();
    }

    /// `name` no longer exists (NXDOMAIN).
    pub fn unpublish(&mut self, name: &str) {
        self.zone.remove(name);
        self.write();
    }

    fn write(&self) {
        let tmp = self.records.with_extension("tmp");
        std::fs::write(&tmp, serde_json::to_vec(&self.zone).expect("json")).expect("write");
        std::fs::rename(&tmp, &self.records).expect("publish records");
    }
}

/// A port free for both UDP and TCP on 127.0.0.1 (and, kept closed, one nobody answers on).
pub fn free_udp_and_tcp_port() -> u16 {
    loop {
        let port = super::free_port();
        if std::net::UdpSocket::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

impl Drop for DnsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
