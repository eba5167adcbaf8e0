//! The post-sign-in return path: whatever comes in, the browser is sent to a path on this
//! site. The answer is resolved against our origin the way a browser would (WHATWG URL).
#![no_main]

use libfuzzer_sys::fuzz_target;
use tidemark_domain::access::safe_return_path;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let path = safe_return_path(Some(text));
    assert!(path == "/" || path == text, "{text:?} became {path:?}");
    let base = url::Url::parse("https://tidemark.example/projects").expect("base");
    let target = base.join(&path).expect("a returned path always resolves");
    assert_eq!(target.origin(), base.origin(), "{path:?} leaves the site");
    assert!(path.bytes().all(|b| b.is_ascii_graphic()));
});
