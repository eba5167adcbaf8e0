//! A push body: any bytes either parse into a valid push or are refused with a field error,
//! never a panic; and a valid push, written out again, is the same push (same replay hash).
#![no_main]

use libfuzzer_sys::fuzz_target;
use tidemark_domain::push::ValidPush;

fuzz_target!(|data: &[u8]| {
    let Ok(push) = ValidPush::parse(data) else {
        return;
    };
    let again = serde_json::to_vec(push.request()).expect("a valid push serialises");
    let reparsed = ValidPush::parse(&again).expect("a valid push, written out, is valid");
    assert_eq!(reparsed.body_hash(), push.body_hash());
    assert_eq!(reparsed.scan_id_base(), push.scan_id_base());
});
