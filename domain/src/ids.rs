//! Public identifiers: a fixed prefix and a random suffix.

use rand::Rng as _;
pub use tidemark_wire::ids::{AccountId, FindingId, ProjectId, ScanId};

const BASE32_LOWER: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";

fn random_base32(len: usize) -> String {
    // The thread's CSPRNG (ChaCha, seeded from the OS): ids are made on the push path, and
    // one system call per character (OsRng) cost a push 0.5 ms where system calls are slow.
    let mut rng = rand::thread_rng();
    (0..len)
        .map(|_| BASE32_LOWER[rng.gen_range(0..32)] as char)
        .collect()
}

const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// `len` random base62 characters (5.95 bits each): the tail of secrets and tokens.
pub fn random_base62(len: usize) -> String {
    let mut rng = rand::rngs::OsRng;
    (0..len)
        .map(|_| BASE62[rng.gen_range(0..BASE62.len())] as char)
        .collect()
}

/// `prj_` + 20 lowercase base32 characters (100 random bits), stable for the project's life.
pub fn new_project_id() -> ProjectId {
    ProjectId::trusted(format!("prj_{}", random_base32(20)))
}

pub fn new_account_id() -> AccountId {
    AccountId::trusted(format!("acct_{}", random_base32(20)))
}

pub fn new_license_id() -> String {
    format!("lcn_{}", random_base32(20))
}

/// A single-use token a form carries (a console confirmation).
pub fn new_form_token() -> String {
    random_base32(26)
}

pub fn new_machine_id() -> String {
    format!("mch_{}", random_base32(20))
}

pub fn new_vendor_token_id() -> String {
    format!("vtk_{}", random_base32(20))
}

pub fn new_key_id() -> String {
    format!("key_{}", random_base32(20))
}

pub fn new_bundle_id() -> String {
    format!("bnd_{}", random_base32(20))
}

pub fn new_mail_id() -> String {
    format!("mail_{}", random_base32(20))
}

/// An SSO connection: one account's claim of one e-mail domain. SAML identities are bound to it.
pub fn new_sso_connection_id() -> String {
    format!("sso_{}", random_base32(20))
}

/// A line of a project's history: a branch or a pull request.
pub fn new_branch_id() -> String {
    format!("br_{}", random_base32(20))
}

pub fn new_publisher_id() -> String {
    format!("pub_{}", random_base32(20))
}

/// A keyless CI push token's row (the token itself is random and stored as a hash).
pub fn new_ci_token_id() -> String {
    format!("cit_{}", random_base32(20))
}

/// A verdict-signing key's id: `tmk-` + the key's generation-independent random part.
pub fn new_signing_kid() -> String {
    format!("tmk-{}", random_base32(16))
}

/// A verdict's `jti`.
pub fn new_verdict_id() -> String {
    format!("vrd_{}", random_base32(20))
}

pub fn new_webhook_id() -> String {
    format!("whk_{}", random_base32(20))
}

/// One webhook event; every delivery and redelivery of it carries this id.
///
/// The first 10 characters are the time in milliseconds and the last 10 are random (50 bits),
/// so new ids sort after old ones: each delivery row then lands at the end of its primary-key
/// index instead of on a random page (which cost the push transaction writes).
pub fn new_event_id() -> String {
    time_ordered_id("evt")
}

/// `aud_` + the same time-ordered form: audit events list newest first by id.
pub fn new_audit_id() -> String {
    time_ordered_id("aud")
}

/// `<prefix>_` + 10 base32 characters of the time in milliseconds + 10 random ones: ids made
/// later sort later (to the millisecond), so inserts append to the index.
fn time_ordered_id(prefix: &str) -> String {
    let ms = u64::try_from(crate::now_millis()).unwrap_or(0);
    format!("{prefix}_{}{}", sortable_time(ms), random_base32(10))
}

/// `ms` as 10 characters of the same 32 as BASE32_LOWER, taken in ASCII order so that a later
/// time is a greater string (in BASE32_LOWER's order "…y" < "…2" would break it).
fn sortable_time(mut ms: u64) -> String {
    const ASCENDING: &[u8; 32] = b"234567abcdefghijklmnopqrstuvwxyz";
    let mut time = [0u8; 10];
    for c in time.iter_mut().rev() {
        *c = ASCENDING[(ms & 31) as usize];
        ms >>= 5;
    }
    time.iter().map(|&b| b as char).collect()
}

pub fn is_webhook_id(s: &str) -> bool {
    s.strip_prefix("whk_")
        .is_some_and(|r| r.len() == 20 && r.bytes().all(|b| BASE32_LOWER.contains(&b)))
}

pub fn is_publisher_id(s: &str) -> bool {
    s.strip_prefix("pub_")
        .is_some_and(|r| r.len() == 20 && r.bytes().all(|b| BASE32_LOWER.contains(&b)))
}

pub fn is_event_id(s: &str) -> bool {
    s.strip_prefix("evt_")
        .is_some_and(|r| r.len() == 20 && r.bytes().all(|b| BASE32_LOWER.contains(&b)))
}

/// A provisioned person's SCIM id (not their user id: that one is never shown to an IdP).
pub fn new_scim_user_id() -> String {
    format!("scu_{}", random_base32(20))
}

pub fn new_scim_group_id() -> String {
    format!("scg_{}", random_base32(20))
}

/// A tracked finding: the same id in every scan of its branch that has it.
pub fn new_finding_id() -> FindingId {
    FindingId::trusted(format!("fnd_{}", random_base32(20)))
}

/// A line's state token (`branches.live_token`): names one version of what the line's latest
/// scan has, so it must never repeat; 100 random bits.
pub fn new_state_token() -> String {
    random_base32(20)
}

pub fn new_user_id() -> String {
    format!("usr_{}", random_base32(20))
}

/// 32 random bytes, URL-safe base64: for one-time values a browser carries (login cookie,
/// OIDC `state`/`nonce`).
pub fn new_opaque_token() -> String {
    use base64::Engine as _;
    let mut bytes = [0u8; 32];
    rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// One licence event (`evt_…`), the same on each delivery of it.
pub fn new_license_event_id() -> String {
    format!("evt_{}", random_base32(20))
}

/// A vendor webhook endpoint.
pub fn new_vendor_webhook_id() -> String {
    format!("vwh_{}", random_base32(20))
}

pub fn is_vendor_webhook_id(s: &str) -> bool {
    s.strip_prefix("vwh_")
        .is_some_and(|r| r.len() == 20 && r.bytes().all(|b| BASE32_LOWER.contains(&b)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_ids_have_the_contract_shape_and_differ() {
        let a = new_project_id();
        let b = new_project_id();
        assert!(ProjectId::has_shape(&a), "{a}");
        assert_eq!(a.len(), 24);
        assert_ne!(a, b);
        assert!(!ProjectId::has_shape("prj_ABCDEFGHIJKLMNOPQRST"));
        assert!(!ProjectId::has_shape("prj_short"));
    }

    #[test]
    fn time_ordered_ids_sort_as_strings_the_way_their_times_do() {
        // Across every change of a character, including letter to digit ('z' then '2' in
        // BASE32_LOWER's order).
        for ms in [0_u64, 24, 25, 26, 31, 32, 1_023, 1_795_000_000_000] {
            assert!(sortable_time(ms) < sortable_time(ms + 1), "{ms}");
        }
        assert_eq!(sortable_time(0), "2222222222");
    }

    #[test]
    fn event_ids_have_their_shape_and_sort_by_time() {
        let a = new_event_id();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = new_event_id();
        assert!(is_event_id(&a) && is_event_id(&b), "{a} {b}");
        assert!(a < b, "{a} {b}");
        assert_ne!(new_event_id(), new_event_id());
    }

    #[test]
    fn scan_id_shapes() {
        assert!(ScanId::has_shape("20261122-101530-payments-api-prod-2"));
        for bad in ["", "a\u{0}", "A", "x/y", &"a".repeat(97)] {
            assert!(!ScanId::has_shape(bad), "{bad:?}");
        }
    }
}
