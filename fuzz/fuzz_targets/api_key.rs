//! `X-API-Key`: whatever is accepted is the prefix plus 1–64 base62 characters, kept as sent,
//! and shows no more than its display prefix.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tidemark_domain::secrets::{ApiKey, API_KEY_DISPLAY_LEN, API_KEY_PREFIX};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(key) = ApiKey::parse(Some(text)) {
        let rest = text.strip_prefix(API_KEY_PREFIX).expect("the prefix");
        assert!((1..=64).contains(&rest.len()));
        assert!(rest.bytes().all(|b| b.is_ascii_alphanumeric()));
        assert_eq!(key.expose(), text);
        assert_eq!(key.hash().as_str().len(), 64);
        assert!(key.display_prefix().len() <= API_KEY_DISPLAY_LEN);
        assert!(text.starts_with(&key.display_prefix()));
    }
});
