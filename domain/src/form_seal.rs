//! A refused form's error goes back to its page in the address: server_fn's redirect for a
//! form sent without script adds `__path` (the server function) and `__err` (its error), and
//! the page shows that error. Anyone can write such an address, so the server seals the pair
//! (`__sig`, an HMAC under a key only it holds) and the page shows an error only under a
//! valid seal: a crafted link cannot put words on Tidemark's page.

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// Bytes of the tag kept (128 bits: far beyond guessing, short in an address).
const TAG_BYTES: usize = 16;

fn mac(key: &[u8], path: &str, err: &str) -> Option<Hmac<Sha256>> {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).ok()?;
    mac.update(path.as_bytes());
    mac.update(&[0]);
    mac.update(err.as_bytes());
    Some(mac)
}

/// The seal of `err` as the answer of the server function at `path`.
pub fn seal(key: &[u8], path: &str, err: &str) -> String {
    mac(key, path, err).map_or_else(String::new, |mac| {
        hex::encode(&mac.finalize().into_bytes()[..TAG_BYTES])
    })
}

/// Whether `sig` is the seal of `err` for `path` under `key` (compared in constant time).
pub fn is_sealed(key: &[u8], path: &str, err: &str, sig: &str) -> bool {
    let Ok(tag) = hex::decode(sig) else {
        return false;
    };
    tag.len() == TAG_BYTES
        && mac(key, path, err).is_some_and(|mac| mac.verify_truncated_left(&tag).is_ok())
}

/// The pairs of a page's raw `query` that are not an earlier form's outcome (`done`, or a
/// refusal's `__path`, `__err` and `__sig`): what the page is, without what it last said.
pub fn without_outcome(query: &str) -> Vec<&str> {
    query
        .split('&')
        .filter(|p| {
            let key = p.split('=').next().unwrap_or("");
            !p.is_empty() && !matches!(key, "done" | "__path" | "__err" | "__sig")
        })
        .collect()
}

/// `location` (a redirect server_fn wrote for a refused form) with the seal of its
/// `__path`/`__err` pair appended; `None` when it carries no such pair. server_fn appends the
/// pair to the page's address as it was, so an earlier outcome there (a saved `done`, an
/// earlier refusal) is dropped: the last pair is this answer's.
pub fn seal_location(key: &[u8], location: &str) -> Option<String> {
    let mut url = url::Url::parse(location).ok()?;
    let (mut path, mut err, mut kept) = (None, None, Vec::new());
    for (name, value) in url.query_pairs() {
        match name.as_ref() {
            "__path" => path = Some(value.into_owned()),
            "__err" => err = Some(value.into_owned()),
            "__sig" | "done" => {}
            _ => kept.push((name.into_owned(), value.into_owned())),
        }
    }
    let (path, err) = (path?, err?);
    let sig = seal(key, &path, &err);
    url.query_pairs_mut()
        .clear()
        .extend_pairs(kept)
        .append_pair("__path", &path)
        .append_pair("__err", &err)
        .append_pair("__sig", &sig);
    Some(url.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &[u8] = b"0123456789abcdef0123456789abcdef";

    #[test]
    fn a_seal_holds_for_its_pair_only() {
        let sig = seal(KEY, "/api/a", "boom");
        assert_eq!(sig.len(), 2 * TAG_BYTES);
        assert!(is_sealed(KEY, "/api/a", "boom", &sig));
        assert!(!is_sealed(KEY, "/api/a", "boom!", &sig));
        assert!(!is_sealed(KEY, "/api/b", "boom", &sig));
        assert!(!is_sealed(b"another key", "/api/a", "boom", &sig));
        // A shortened tag is refused, not compared as far as it goes.
        assert!(!is_sealed(KEY, "/api/a", "boom", &sig[..2]));
        assert!(!is_sealed(KEY, "/api/a", "boom", ""));
        assert!(!is_sealed(KEY, "/api/a", "boom", "not hex"));
    }

    #[test]
    fn a_redirect_is_sealed_over_its_decoded_pair() {
        let location = "http://h/projects/p?range=all&__path=%2Fapi%2Fset&__err=QUJD";
        let sealed = seal_location(KEY, location).unwrap();
        let sig = sealed.rsplit("__sig=").next().unwrap();
        assert!(sealed.starts_with(location));
        assert!(is_sealed(KEY, "/api/set", "QUJD", sig));
        // Refused again from the page that said why: one pair, this answer's, sealed.
        let again = format!("http://h/p?done=x&range=all&__path=%2Fapi%2Fold&__err=T0xE&__sig={sig}&__path=%2Fapi%2Fset&__err=TkVX");
        let sealed = seal_location(KEY, &again).unwrap();
        let sig = sealed.rsplit("__sig=").next().unwrap();
        assert!(
            sealed.starts_with("http://h/p?range=all&__path=%2Fapi%2Fset&__err=TkVX&__sig="),
            "{sealed}"
        );
        assert!(is_sealed(KEY, "/api/set", "TkVX", sig));
        assert_eq!(seal_location(KEY, "http://h/projects/p?range=all"), None);
        assert_eq!(seal_location(KEY, "/relative"), None);
    }
}
