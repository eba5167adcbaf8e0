//! A secret a plain form makes is handed to the page the form redirects to, once
//! (post/redirect/get): the form carries a one-time token, the redirect names it, and the
//! store keeps the secret under a hash of it until that page takes it. The same token sent
//! twice (a double click, a resent request) is the same handover, so the form acts once.

use sha2::{Digest as _, Sha256};

/// Characters of a form's token: base62, about 131 bits.
const TOKEN_LEN: usize = 22;

/// How long a made secret waits for its page.
pub const HANDOVER_TTL_MS: i64 = 10 * 60 * 1000;

/// The query parameter of the page that shows the handed-over secret.
pub const SHOWN_PARAM: &str = "shown";

/// The form field carrying the token.
pub const FORM_FIELD: &str = "once";

/// A form's one-time token, as the page that renders the form writes it.
pub fn new_token() -> String {
    crate::ids::random_base62(TOKEN_LEN)
}

/// `raw` if it is a token this server could have made.
pub fn parse_token(raw: &str) -> Option<&str> {
    (raw.len() == TOKEN_LEN && raw.bytes().all(|b| b.is_ascii_alphanumeric())).then_some(raw)
}

/// What the store keys a handover by: the token's SHA-256, so a dump cannot name a page.
pub fn handover_id(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// `page` (a path with its query) with `shown=<token>` in place of any earlier one.
pub fn page_showing(page: &str, token: &str) -> String {
    let (path, query) = page.split_once('?').unwrap_or((page, ""));
    let mut pairs: Vec<&str> = query
        .split('&')
        .filter(|p| !p.is_empty() && p.split('=').next() != Some(SHOWN_PARAM))
        .collect();
    let shown = format!("{SHOWN_PARAM}={token}");
    pairs.push(&shown);
    format!("{path}?{}", pairs.join("&"))
}

/// The token a page's `query` names, if it names a well-formed one.
pub fn shown_in(query: &str) -> Option<&str> {
    query
        .split('&')
        .find_map(|p| p.strip_prefix(SHOWN_PARAM)?.strip_prefix('='))
        .and_then(parse_token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_made_parsed_and_named_in_the_page_address() {
        let token = new_token();
        assert_eq!(parse_token(&token), Some(token.as_str()));
        assert_ne!(new_token(), token);
        assert_eq!(parse_token("short"), None);
        assert_eq!(parse_token(&format!("{}-", &token[..21])), None);
        assert_eq!(handover_id(&token).len(), 64);
        let page = page_showing("/settings/keys?x=1&shown=old", &token);
        assert_eq!(page, format!("/settings/keys?x=1&shown={token}"));
        assert_eq!(
            shown_in(page.split_once('?').unwrap().1),
            Some(token.as_str())
        );
        assert_eq!(
            page_showing("/settings/keys", &token),
            format!("/settings/keys?shown={token}")
        );
        assert_eq!(shown_in("shown=../../x"), None);
        assert_eq!(shown_in("x=1"), None);
    }
}
