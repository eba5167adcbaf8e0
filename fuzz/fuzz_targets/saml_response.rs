//! A `SAMLResponse` form field up to the signature check: our pre-parse policy (base64, UTF-8,
//! no DOCTYPE, no other declared encoding, one assertion), then samael's XML reader.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tidemark_domain::saml::{assertion_count, decode_post_binding, has_doctype};

fuzz_target!(|data: &[u8]| {
    let Ok(field) = std::str::from_utf8(data) else {
        return;
    };
    // Raw XML too, not only base64 of it: the fuzzer reaches the reader far more often.
    for xml in [decode_post_binding(field).ok(), Some(field.to_owned())]
        .into_iter()
        .flatten()
    {
        if has_doctype(&xml) {
            continue;
        }
        let _ = assertion_count(&xml);
        let _ = xml.parse::<samael::schema::Response>();
        let _ = xml.parse::<samael::metadata::EntityDescriptor>();
    }
});
