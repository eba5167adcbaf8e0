//! Which address a request comes from, for per-IP limits.

use std::net::IpAddr;

use axum::http::HeaderMap;
use ipnet::IpNet;
use tidemark_domain::forwarded::{forwarded_for, x_forwarded_for};

/// The socket peer, unless the peer is a trusted proxy: then the right-most address the
/// proxies recorded that is not itself a trusted proxy. Addresses further left were written
/// by the client and prove nothing. The standard `Forwarded` header (RFC 7239) is read when
/// present, `X-Forwarded-For` otherwise.
pub fn client_ip(peer: IpAddr, headers: &HeaderMap, trusted: &[IpNet]) -> IpAddr {
    let is_trusted = |ip: &IpAddr| trusted.iter().any(|net| net.contains(ip));
    if !is_trusted(&peer) {
        return peer;
    }
    let values = |name: &str| {
        headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect::<Vec<_>>()
    };
    let forwarded = values("forwarded");
    let hops: Vec<IpAddr> = if forwarded.is_empty() {
        values("x-forwarded-for")
            .into_iter()
            .flat_map(x_forwarded_for)
            .collect()
    } else {
        forwarded.into_iter().flat_map(forwarded_for).collect()
    };
    hops.iter()
        .rev()
        .find(|ip| !is_trusted(ip))
        // Every hop trusted: the left-most is the closest thing to a client we know.
        .or(hops.first())
        .copied()
        .unwrap_or(peer)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(name: &str, value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            axum::http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            value.parse().unwrap(),
        );
        h
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn only_trusted_peers_may_name_the_client() {
        let trusted: Vec<IpNet> = vec!["10.0.0.0/8".parse().unwrap()];
        let proxy = ip("10.0.0.5");
        let outsider = ip("203.0.113.9");
        let xff = |v| headers("x-forwarded-for", v);
        // An untrusted peer's header is ignored.
        assert_eq!(client_ip(outsider, &xff("1.2.3.4"), &trusted), outsider);
        // Behind a trusted proxy: the right-most untrusted hop, not the spoofable left-most.
        assert_eq!(
            client_ip(proxy, &xff("6.6.6.6, 198.51.100.7, 10.0.0.9"), &trusted),
            ip("198.51.100.7")
        );
        assert_eq!(client_ip(proxy, &HeaderMap::new(), &trusted), proxy);
        assert_eq!(client_ip(proxy, &xff("10.1.1.1"), &trusted), ip("10.1.1.1"));
        assert_eq!(client_ip(proxy, &xff("garbage"), &trusted), proxy);
    }

    #[test]
    fn the_standard_forwarded_header_is_read_like_x_forwarded_for() {
        let trusted: Vec<IpNet> = vec!["10.0.0.0/8".parse().unwrap()];
        let proxy = ip("10.0.0.5");
        let fwd = |v| headers("forwarded", v);
        assert_eq!(
            client_ip(
                proxy,
                &fwd("for=6.6.6.6, for=198.51.100.7;proto=https;by=10.0.0.5, for=10.0.0.9"),
                &trusted
            ),
            ip("198.51.100.7")
        );
        assert_eq!(
            client_ip(proxy, &fwd(r#"For="[2001:db8:cafe::17]:4711""#), &trusted),
            ip("2001:db8:cafe::17")
        );
        assert_eq!(
            client_ip(proxy, &fwd("for=192.0.2.60:8080;proto=http"), &trusted),
            ip("192.0.2.60")
        );
        // No address in it: the peer.
        assert_eq!(
            client_ip(proxy, &fwd("for=unknown, for=_hidden"), &trusted),
            proxy
        );
        // An outsider's Forwarded is as worthless as its X-Forwarded-For.
        let outsider = ip("203.0.113.9");
        assert_eq!(client_ip(outsider, &fwd("for=1.2.3.4"), &trusted), outsider);
    }
}
