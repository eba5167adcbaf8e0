//! Which address a request comes from, for per-IP limits.

use std::net::IpAddr;

use axum::http::HeaderMap;
use ipnet::IpNet;

/// The socket peer, unless the peer is a trusted proxy: then the right-most address of
/// `X-Forwarded-For` that is not itself a trusted proxy. Addresses further left were written
/// by the client and prove nothing.
pub fn client_ip(peer: IpAddr, headers: &HeaderMap, trusted: &[IpNet]) -> IpAddr {
    let is_trusted = |ip: &IpAddr| trusted.iter().any(|net| net.contains(ip));
    if !is_trusted(&peer) {
        return peer;
    }
    let forwarded: Vec<IpAddr> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    forwarded
        .iter()
        .rev()
        .find(|ip| !is_trusted(ip))
        // Every hop trusted: the left-most is the closest thing to a client we know.
        .or(forwarded.first())
        .copied()
        .unwrap_or(peer)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(xff: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert("x-forwarded-for", xff.parse().unwrap());
        h
    }

    #[test]
    fn only_trusted_peers_may_name_the_client() {
        let trusted: Vec<IpNet> = vec!["10.0.0.0/8".parse().unwrap()];
        let proxy: IpAddr = "10.0.0.5".parse().unwrap();
        let outsider: IpAddr = "203.0.113.9".parse().unwrap();
        // An untrusted peer's header is ignored.
        assert_eq!(client_ip(outsider, &headers("1.2.3.4"), &trusted), outsider);
        // Behind a trusted proxy: the right-most untrusted hop, not the spoofable left-most.
        assert_eq!(
            client_ip(proxy, &headers("6.6.6.6, 198.51.100.7, 10.0.0.9"), &trusted),
            "198.51.100.7".parse::<IpAddr>().unwrap()
        );
        assert_eq!(client_ip(proxy, &HeaderMap::new(), &trusted), proxy);
        assert_eq!(
            client_ip(proxy, &headers("10.1.1.1"), &trusted),
            "10.1.1.1".parse::<IpAddr>().unwrap()
        );
        assert_eq!(client_ip(proxy, &headers("garbage"), &trusted), proxy);
    }
}
