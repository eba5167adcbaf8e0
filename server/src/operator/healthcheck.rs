//! `tidemark-server healthcheck`: asks a running server's `/healthz` and exits 0 only on a
//! 2xx answer. It is the container image's `HEALTHCHECK` (an image built from scratch has no
//! curl or shell to ask with), so it reads no configuration but the listening address, opens
//! no database and needs no master key.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use anyhow::{bail, Context as _};

/// How long the probe waits in all: a container runtime's own timeout is usually 30 s, and a
/// server that takes longer than this to say it lives is not healthy.
const TIMEOUT: Duration = Duration::from_secs(5);

/// The address to probe for a server listening on `site_addr`: a wildcard listener is asked
/// on loopback, since a wildcard is not an address one can connect to.
pub fn probe_address(site_addr: SocketAddr) -> SocketAddr {
    let ip = match site_addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    SocketAddr::new(ip, site_addr.port())
}

/// The URL to probe: `--url` if given, else `/healthz` on `LEPTOS_SITE_ADDR` (the server's
/// own default when unset).
pub fn target(url: Option<&str>, site_addr: Option<&str>) -> anyhow::Result<String> {
    if let Some(url) = url {
        return Ok(url.to_owned());
    }
    let addr: SocketAddr = site_addr
        .unwrap_or("127.0.0.1:3000")
        .parse()
        .context("LEPTOS_SITE_ADDR is not an ip:port")?;
    Ok(format!("http://{}/healthz", probe_address(addr)))
}

/// Asks `url` once; `Ok` with what it answered on a 2xx status.
pub async fn probe(url: &str) -> anyhow::Result<String> {
    let client = reqwest::Client::builder()
        .timeout(TIMEOUT)
        .build()
        .context("could not build the HTTP client")?;
    let response = client
        .get(url)
        .send()
        .await
        .with_context(|| format!("{url} did not answer"))?;
    let status = response.status();
    if !status.is_success() {
        bail!("{url} answered {status}");
    }
    Ok(format!("{url}: {status}\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wildcard_listener_is_probed_on_loopback() {
        let probe = |addr: &str| target(None, Some(addr)).unwrap();
        assert_eq!(probe("0.0.0.0:3000"), "http://127.0.0.1:3000/healthz");
        assert_eq!(probe("[::]:8080"), "http://[::1]:8080/healthz");
        assert_eq!(probe("10.1.2.3:3000"), "http://10.1.2.3:3000/healthz");
        assert_eq!(target(None, None).unwrap(), "http://127.0.0.1:3000/healthz");
        assert_eq!(
            target(Some("http://x/healthz"), None).unwrap(),
            "http://x/healthz"
        );
        assert!(target(None, Some("localhost")).is_err());
    }
}
