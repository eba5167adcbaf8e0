//! `X-License-Key-Hash`: accepted exactly when it is 64 hex characters, stored lower-case.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tidemark_domain::secrets::LicenseKeyHash;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let expected = text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit());
    match LicenseKeyHash::parse(text) {
        Ok(hash) => {
            assert!(expected, "accepted {text:?}");
            assert_eq!(hash.expose(), text.to_ascii_lowercase());
            assert_eq!(hash.lookup().as_str().len(), 64);
        }
        Err(_) => assert!(!expected, "refused {text:?}"),
    }
});
