//! What an identity provider sends to `/scim/v2`: a filter, a PATCH body, a User or Group
//! body. None of it may panic (or recurse the stack away), whatever the bytes; a filter that
//! parses evaluates against a user; a User body that reads renders back to the same record.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use tidemark_domain::scim::filter::{matches, parse_filter};
use tidemark_domain::scim::group::GroupRecord;
use tidemark_domain::scim::patch::{group_patch, user_patch};
use tidemark_domain::scim::user::UserRecord;
use tidemark_domain::scim::Meta;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let meta = Meta {
        base_url: "https://t.example/scim/v2".into(),
        created: 0,
        last_modified: 0,
        version: 1,
    };
    if let Ok(filter) = parse_filter(text) {
        let user = serde_json::json!({"userName": "a@b.io", "emails": [{"value": "a@b.io", "type": "work"}]});
        let _ = matches(&filter, &user);
    }
    let Ok(body) = serde_json::from_str::<Value>(text) else {
        return;
    };
    if let Ok(patch) = user_patch(&body) {
        let mut record = UserRecord::from_resource(&serde_json::json!({"userName": "a@b.io"}))
            .expect("a plain user");
        let _ = record.apply("scu_1", &patch.changes);
    }
    let _ = group_patch(&body);
    if let Ok(record) = UserRecord::from_resource(&body) {
        let back = UserRecord::from_resource(&record.to_resource("scu_1", &[], &meta))
            .expect("what is rendered reads back");
        assert_eq!(back, record);
    }
    let _ = GroupRecord::from_resource(&body);
});
