//! `Forwarded` and `X-Forwarded-For` values as a client may send them: any text gives a list
//! of addresses, each of which appears in the text, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tidemark_domain::forwarded::{forwarded_for, x_forwarded_for};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let elements = text.split(',').count();
    let forwarded = forwarded_for(text);
    assert!(forwarded.len() <= elements);
    let xff = x_forwarded_for(text);
    assert!(xff.len() <= elements);
    for ip in forwarded.iter().chain(&xff) {
        // Every address came from the text (compare numerically: `::ffff:1.2.3.4` and
        // upper-case hex print differently from how they were written).
        let found = text
            .split([',', ';', '=', '"', ' ', '[', ']'])
            .filter_map(|part| part.trim().parse::<std::net::IpAddr>().ok().or_else(|| {
                part.trim().parse::<std::net::SocketAddr>().ok().map(|s| s.ip())
            }))
            .any(|seen| seen == *ip);
        assert!(found, "{ip} is not in {text:?}");
    }
});
