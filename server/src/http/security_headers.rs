//! Security headers on every response.
//!
//! Pages bring their own Content-Security-Policy with the response's script nonce
//! (`app::page_policy`); every other response (JSON, the sign-in hand-off page, static files)
//! gets a policy that allows nothing at all. The rest is the same everywhere.

use axum::http::header::{
    CACHE_CONTROL, CONTENT_SECURITY_POLICY, REFERRER_POLICY, STRICT_TRANSPORT_SECURITY,
    X_CONTENT_TYPE_OPTIONS, X_FRAME_OPTIONS,
};
use axum::http::{HeaderName, HeaderValue};
use axum::Router;
use tower_http::set_header::SetResponseHeaderLayer;

/// For anything that is not a page: no scripts, no styles, no framing.
pub const NOTHING_ALLOWED: &str = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'";

/// Powerful browser features the dashboard never uses, switched off.
pub const PERMISSIONS: &str =
    "camera=(), microphone=(), geolocation=(), payment=(), usb=(), interest-cohort=()";

/// One year; only sent when the base URL is https and the server runs in production, so a
/// development setup on plain http never pins a browser to https.
pub const HSTS: &str = "max-age=31536000";

/// Adds the headers every response carries.
pub fn apply<S: Clone + Send + Sync + 'static>(router: Router<S>, hsts: bool) -> Router<S> {
    let fixed = |name: HeaderName, value: &'static str| {
        SetResponseHeaderLayer::overriding(name, HeaderValue::from_static(value))
    };
    let router = router
        .layer(SetResponseHeaderLayer::if_not_present(
            CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(NOTHING_ALLOWED),
        ))
        .layer(fixed(X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .layer(fixed(X_FRAME_OPTIONS, "DENY"))
        .layer(fixed(REFERRER_POLICY, "same-origin"))
        .layer(fixed(
            HeaderName::from_static("permissions-policy"),
            PERMISSIONS,
        ))
        .layer(fixed(
            HeaderName::from_static("cross-origin-opener-policy"),
            "same-origin",
        ));
    if hsts {
        router.layer(fixed(STRICT_TRANSPORT_SECURITY, HSTS))
    } else {
        router
    }
}

/// `Cache-Control: no-store` unless the handler chose otherwise: for answers that carry a
/// secret or an account's data (the `/v1` API, pages, server functions, sign-in), which no
/// shared or browser cache should keep.
pub fn no_store<S: Clone + Send + Sync + 'static>(router: Router<S>) -> Router<S> {
    router.layer(SetResponseHeaderLayer::if_not_present(
        CACHE_CONTROL,
        HeaderValue::from_static("no-store"),
    ))
}
