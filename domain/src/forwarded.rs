//! The client addresses proxies record: RFC 7239 `Forwarded` and `X-Forwarded-For`. Which of
//! them to believe (only what trusted proxies wrote) is the server's `client_ip`; this is
//! only the reading, which takes any text a client sends.

use std::net::{IpAddr, SocketAddr};

/// The `for=` addresses of one `Forwarded` header value, in order (RFC 7239: elements
/// separated by commas, pairs by semicolons; `unknown` and obfuscated `_names` carry no
/// address and are skipped).
pub fn forwarded_for(value: &str) -> Vec<IpAddr> {
    value
        .split(',')
        .filter_map(|element| {
            element.split(';').find_map(|pair| {
                let (name, node) = pair.split_once('=')?;
                name.trim()
                    .eq_ignore_ascii_case("for")
                    .then(|| parse_node(node.trim().trim_matches('"')))
                    .flatten()
            })
        })
        .collect()
}

/// `192.0.2.1`, `192.0.2.1:4711`, `2001:db8::1`, `[2001:db8::1]` or `[2001:db8::1]:4711`.
/// No zone index (`[fe80::1%eth0]:80`): RFC 7239's grammar has none, though Rust's socket
/// address parser would take one and drop it (found by fuzzing).
fn parse_node(node: &str) -> Option<IpAddr> {
    if node.contains('%') {
        return None;
    }
    node.parse::<IpAddr>()
        .ok()
        .or_else(|| node.parse::<SocketAddr>().ok().map(|s| s.ip()))
        .or_else(|| {
            node.strip_prefix('[')
                .and_then(|rest| rest.strip_suffix(']'))
                .and_then(|inner| inner.parse().ok())
        })
}

/// The addresses of one `X-Forwarded-For` value, in order; entries that are not addresses are
/// skipped.
pub fn x_forwarded_for(value: &str) -> Vec<IpAddr> {
    value
        .split(',')
        .filter_map(|s| parse_node(s.trim()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ips(list: &[&str]) -> Vec<IpAddr> {
        list.iter().map(|s| s.parse().unwrap()).collect()
    }

    #[test]
    fn forwarded_names_its_for_nodes_in_order() {
        assert_eq!(
            forwarded_for(r#"for=192.0.2.60:8080;proto=http, For="[2001:db8:cafe::17]:4711""#),
            ips(&["192.0.2.60", "2001:db8:cafe::17"])
        );
        assert_eq!(
            forwarded_for("for=unknown, for=_hidden, by=10.0.0.1"),
            ips(&[])
        );
        assert_eq!(forwarded_for("for=;;,=,for=\"\""), ips(&[]));
        assert_eq!(
            forwarded_for(r#"for="[1:db3::%0]:2", for=[fe80::1%25eth0]"#),
            ips(&[])
        );
    }

    #[test]
    fn x_forwarded_for_skips_what_is_not_an_address() {
        assert_eq!(
            x_forwarded_for(" 6.6.6.6 ,garbage, [2001:db8::1]:80,,10.0.0.9"),
            ips(&["6.6.6.6", "2001:db8::1", "10.0.0.9"])
        );
    }
}
