//! Where the server listens, the addresses it is reached at, the proxies it believes and how
//! long a client may take.

use std::net::SocketAddr;

use super::{ConfigError, Vars};

#[derive(Debug, Clone)]
pub struct HttpConfig {
    pub site_addr: SocketAddr,
    pub base_url: String,
    pub dashboard_url: String,
    /// Directory of the compiled site (`/pkg`, favicon, …).
    pub site_root: String,
    /// Peers whose `X-Forwarded-For` is believed.
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// Where `/metrics` is served instead of the main address (`TIDEMARK_METRICS_ADDR`), so it
    /// need not be public; unset: on the main address.
    pub metrics_addr: Option<SocketAddr>,
    /// How long a client may take to send a request's headers, and how long a kept-alive
    /// connection may sit idle before its next request (`TIDEMARK_HEADER_TIMEOUT_SECONDS`).
    pub header_timeout_seconds: u32,
    /// How long a request body may pause between two chunks
    /// (`TIDEMARK_BODY_TIMEOUT_SECONDS`).
    pub body_timeout_seconds: u32,
    /// The longest a `/v1` request may take in all (`TIDEMARK_API_TIMEOUT_SECONDS`).
    pub api_timeout_seconds: u32,
}

impl HttpConfig {
    pub fn read(vars: &Vars) -> Result<Self, ConfigError> {
        let site_addr: SocketAddr = vars
            .get("LEPTOS_SITE_ADDR")
            .unwrap_or_else(|| "127.0.0.1:3000".into())
            .parse()
            .map_err(|e: std::net::AddrParseError| {
                ConfigError::invalid("LEPTOS_SITE_ADDR", e.to_string())
            })?;
        let base_url = vars
            .url("TIDEMARK_BASE_URL")?
            .unwrap_or_else(|| format!("http://{site_addr}"));
        let dashboard_url = vars
            .url("TIDEMARK_DASHBOARD_URL")?
            .unwrap_or_else(|| base_url.clone());
        let trusted_proxies = match vars.get("TIDEMARK_TRUSTED_PROXIES") {
            None => Vec::new(),
            Some(list) => list
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(parse_cidr)
                .collect::<Result<_, _>>()?,
        };
        Ok(Self {
            site_addr,
            base_url,
            dashboard_url,
            site_root: vars
                .get("LEPTOS_SITE_ROOT")
                .unwrap_or_else(|| "target/site".into()),
            trusted_proxies,
            metrics_addr: vars.socket_addr("TIDEMARK_METRICS_ADDR", "127.0.0.1:9090")?,
            header_timeout_seconds: vars.seconds_at_most(
                "TIDEMARK_HEADER_TIMEOUT_SECONDS",
                30,
                30,
                " (a longer wait only helps slow-header attacks)",
            )?,
            body_timeout_seconds: vars.number("TIDEMARK_BODY_TIMEOUT_SECONDS", 30)?,
            api_timeout_seconds: vars.number("TIDEMARK_API_TIMEOUT_SECONDS", 60)?,
        })
    }

    pub fn summary(&self) -> String {
        let metrics = self
            .metrics_addr
            .map_or_else(|| "on the main address".to_owned(), |a| format!("on {a}"));
        format!(
            "listens on {}, API at {}, dashboard at {}, {} trusted proxies, /metrics {metrics}, \
             headers within {} s, /v1 requests within {} s",
            self.site_addr,
            self.base_url,
            self.dashboard_url,
            self.trusted_proxies.len(),
            self.header_timeout_seconds,
            self.api_timeout_seconds
        )
    }
}

/// A CIDR (`10.0.0.0/8`) or a single address (`10.1.2.3`).
fn parse_cidr(text: &str) -> Result<ipnet::IpNet, ConfigError> {
    text.parse::<ipnet::IpNet>()
        .or_else(|_| text.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
        .map_err(|_| {
            ConfigError::invalid(
                "TIDEMARK_TRUSTED_PROXIES",
                format!("{text:?} is not an IP address or CIDR"),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::super::tests::config;

    #[test]
    fn the_addresses_default_to_the_listening_one() {
        let dir = tempfile::tempdir().unwrap();
        let c = config(&[("TIDEMARK_DATA_DIR", dir.path().to_str().unwrap())]).unwrap();
        assert_eq!(c.http.base_url, "http://127.0.0.1:3000");
        assert_eq!(c.http.dashboard_url, c.http.base_url);
        assert!(c.http.trusted_proxies.is_empty());
        let with_slash = config(&[
            ("TIDEMARK_DATA_DIR", dir.path().to_str().unwrap()),
            ("TIDEMARK_BASE_URL", "https://tidemark.example/"),
        ])
        .unwrap();
        assert_eq!(with_slash.http.dashboard_url, "https://tidemark.example");
        assert!(with_slash
            .http
            .summary()
            .contains("API at https://tidemark.example,"));
    }

    #[test]
    fn trusted_proxies_take_cidrs_and_addresses() {
        let dir = tempfile::tempdir().unwrap();
        let c = config(&[
            ("TIDEMARK_DATA_DIR", dir.path().to_str().unwrap()),
            ("TIDEMARK_TRUSTED_PROXIES", "10.0.0.0/8, 192.168.1.7,::1"),
        ])
        .unwrap();
        let proxies = &c.http.trusted_proxies;
        assert_eq!(proxies.len(), 3);
        assert!(proxies[0].contains(&"10.2.3.4".parse::<std::net::IpAddr>().unwrap()));
    }
}
