//! Session cookies across a master-key rotation. The cookie holds the session id encrypted
//! under a key derived from the master key; after a rotation, a cookie the previous key
//! encrypted is decrypted with it and handed on encrypted under the current key, so the
//! session goes on and its response sets the cookie anew (sessions are always saved). Once
//! `TIDEMARK_MASTER_KEY_PREVIOUS` is removed, cookies not seen since the rotation no longer
//! open: those browsers sign in again.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;
use tower_sessions::cookie::{Cookie, CookieJar, Key};

use super::SESSION_COOKIE;
use crate::config::MasterKey;
use crate::crypto;

/// The cookie keys of the current and the previous master key.
#[derive(Clone)]
pub struct CookieKeys {
    current: Key,
    previous: Key,
}

impl CookieKeys {
    /// `None` when there is no previous key (then there is nothing to translate).
    pub fn new(current: &MasterKey, previous: Option<&MasterKey>) -> Option<Arc<Self>> {
        Some(Arc::new(Self {
            current: cookie_key(current),
            previous: cookie_key(previous?),
        }))
    }

    /// The session cookie's value re-encrypted under the current key, if the previous key
    /// (and not the current one) encrypted it.
    fn translate(&self, value: &str) -> Option<String> {
        let mut jar = CookieJar::new();
        jar.add_original(Cookie::new(SESSION_COOKIE, value.to_owned()));
        if jar.private(&self.current).get(SESSION_COOKIE).is_some() {
            return None;
        }
        let plain = jar.private(&self.previous).get(SESSION_COOKIE)?;
        let mut fresh = CookieJar::new();
        fresh
            .private_mut(&self.current)
            .add(Cookie::new(SESSION_COOKIE, plain.value().to_owned()));
        fresh.get(SESSION_COOKIE).map(|c| c.value().to_owned())
    }

    /// The request's `Cookie` headers, with the session cookie translated; `None` when
    /// nothing needs to change.
    fn rewrite(&self, headers: &axum::http::HeaderMap) -> Option<HeaderValue> {
        let mut changed = false;
        let mut pairs = Vec::new();
        for value in headers.get_all(header::COOKIE) {
            let Ok(text) = value.to_str() else {
                return None;
            };
            for pair in text.split(';').map(str::trim).filter(|p| !p.is_empty()) {
                match pair.split_once('=') {
                    Some((name, value)) if name == SESSION_COOKIE => {
                        if let Some(translated) = self.translate(value) {
                            changed = true;
                            pairs.push(format!("{SESSION_COOKIE}={translated}"));
                            continue;
                        }
                        pairs.push(pair.to_owned());
                    }
                    _ => pairs.push(pair.to_owned()),
                }
            }
        }
        if !changed {
            return None;
        }
        HeaderValue::from_str(&pairs.join("; ")).ok()
    }
}

pub fn cookie_key(master: &MasterKey) -> Key {
    let key: [u8; 64] = crypto::derive_key(master, crypto::SESSION_COOKIE_PURPOSE);
    Key::from(&key)
}

/// Runs before the session layer while a previous master key is configured.
pub async fn translate_session_cookie(
    State(keys): State<Arc<CookieKeys>>,
    mut req: Request,
    next: Next,
) -> Response {
    if let Some(rewritten) = keys.rewrite(req.headers()) {
        req.headers_mut().remove(header::COOKIE);
        req.headers_mut().insert(header::COOKIE, rewritten);
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encrypted_under(master: &MasterKey, session_id: &str) -> String {
        let mut jar = CookieJar::new();
        jar.private_mut(&cookie_key(master))
            .add(Cookie::new(SESSION_COOKIE, session_id.to_owned()));
        jar.get(SESSION_COOKIE).unwrap().value().to_owned()
    }

    fn decrypt(master: &MasterKey, value: &str) -> Option<String> {
        let mut jar = CookieJar::new();
        jar.add_original(Cookie::new(SESSION_COOKIE, value.to_owned()));
        jar.private(&cookie_key(master))
            .get(SESSION_COOKIE)
            .map(|c| c.value().to_owned())
    }

    #[test]
    fn a_cookie_of_the_previous_key_is_handed_on_under_the_current_one() {
        let (old, new) = (MasterKey::generate(), MasterKey::generate());
        let keys = CookieKeys::new(&new, Some(&old)).unwrap();
        let old_cookie = encrypted_under(&old, "session-123");
        let mut headers = axum::http::HeaderMap::new();
        headers.insert(
            header::COOKIE,
            HeaderValue::from_str(&format!("theme=dark; {SESSION_COOKIE}={old_cookie}")).unwrap(),
        );
        let rewritten = keys.rewrite(&headers).expect("translated");
        let text = rewritten.to_str().unwrap();
        assert!(text.starts_with("theme=dark; "), "{text}");
        let value = text.split_once(&format!("{SESSION_COOKIE}=")).unwrap().1;
        assert_eq!(decrypt(&new, value).as_deref(), Some("session-123"));
        assert_eq!(decrypt(&old, value), None);

        // Already current, foreign or absent: left alone.
        for cookie in [
            format!("{SESSION_COOKIE}={}", encrypted_under(&new, "s")),
            format!(
                "{SESSION_COOKIE}={}",
                encrypted_under(&MasterKey::generate(), "s")
            ),
            "theme=dark".to_owned(),
        ] {
            let mut headers = axum::http::HeaderMap::new();
            headers.insert(header::COOKIE, HeaderValue::from_str(&cookie).unwrap());
            assert_eq!(keys.rewrite(&headers), None, "{cookie}");
        }
        assert!(CookieKeys::new(&new, None).is_none());
    }
}
