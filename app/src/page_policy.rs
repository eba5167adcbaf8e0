//! The Content-Security-Policy of every page, with this response's nonce.
//!
//! Leptos puts a fresh nonce on each inline script it writes (the hydration bootstrap and
//! streamed resources), so scripts need neither `'unsafe-inline'` nor hashes that change with
//! every Leptos release. The other security headers are the server's (`server::http`).

use leptos::prelude::*;

/// The policy for a page whose inline scripts carry `nonce`. Styles come only from the
/// stylesheet (no inline `style` attributes anywhere in the app); charts are inline SVG.
/// `form-action` is left open on purpose: signing in posts a form whose answer redirects to
/// the identity provider, and browsers apply `form-action` to that redirect too.
pub fn for_nonce(nonce: &str) -> String {
    format!(
        "default-src 'self'; script-src 'self' 'nonce-{nonce}' 'wasm-unsafe-eval'; \
         style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; \
         object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
    )
}

/// Sets the page's policy on the response being rendered (server only; a no-op without a
/// nonce, which Leptos's server integration always provides).
pub fn apply() {
    let (Some(nonce), Some(response)) = (
        leptos::nonce::use_nonce(),
        use_context::<leptos_axum::ResponseOptions>(),
    ) else {
        return;
    };
    if let Ok(value) = http::HeaderValue::from_str(&for_nonce(&nonce)) {
        response.insert_header(http::header::CONTENT_SECURITY_POLICY, value);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn scripts_need_the_nonce_and_nothing_inline_is_allowed() {
        let policy = super::for_nonce("abc");
        assert!(policy.contains("script-src 'self' 'nonce-abc' 'wasm-unsafe-eval';"));
        assert!(!policy.contains("unsafe-inline"));
        assert!(policy.contains("frame-ancestors 'none'"));
    }
}
