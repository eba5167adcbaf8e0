//! Console pages as responses: the document `app::console` draws, its status, and a policy
//! that lets it load only our stylesheet (no script runs in the console).

use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use leptos::prelude::AnyView;

use app::console::{self, StaffBar};

use super::staff::Staff;

/// No script, no frame, no other origin: the console is HTML and one stylesheet.
/// `form-action` is left open, as on the dashboard's pages: the sign-in form's answer
/// redirects to the staff's provider, and browsers apply `form-action` to that redirect too.
pub const CONSOLE_POLICY: &str = "default-src 'none'; style-src 'self'; img-src 'self' data:; \
     frame-ancestors 'none'; base-uri 'none'";

/// Why a sign-in did not end in the console.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    Expired,
    ProviderRefused,
    ProviderUnreachable,
    TokenInvalid,
    NoUserinfo,
    NoGroup,
}

impl Refusal {
    fn words(self) -> &'static str {
        match self {
            Refusal::Expired => "That sign-in expired or was already used. Sign in again.",
            Refusal::ProviderRefused => "The staff identity provider did not sign you in.",
            Refusal::ProviderUnreachable => {
                "The staff identity provider cannot be reached. Try again in a minute."
            }
            Refusal::TokenInvalid => "The identity provider's answer could not be verified.",
            Refusal::NoUserinfo => {
                "The identity provider does not say which groups you are in, so the console \
                 cannot give you a role."
            }
            Refusal::NoGroup => {
                "You are in no group that opens the console. Ask a console admin to add you \
                 to one at the identity provider."
            }
        }
    }

    fn status(self) -> StatusCode {
        match self {
            Refusal::ProviderUnreachable => StatusCode::SERVICE_UNAVAILABLE,
            Refusal::NoGroup => StatusCode::FORBIDDEN,
            _ => StatusCode::BAD_REQUEST,
        }
    }
}

pub fn bar(staff: &Staff) -> StaffBar {
    StaffBar {
        email: staff.email.clone(),
        roles: staff.roles.in_words(),
    }
}

/// A console document with `status`.
pub fn page(status: StatusCode, title: &str, staff: Option<&Staff>, body: AnyView) -> Response {
    let bar = staff.map(bar);
    let html = console::document(title, bar.as_ref(), body);
    let mut response = (status, Html(html)).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONSOLE_POLICY),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

pub fn sign_in_page(next: &str, refusal: Option<Refusal>) -> Response {
    let status = refusal.map_or(StatusCode::OK, Refusal::status);
    let body = console::sign_in(next, refusal.map(Refusal::words));
    page(status, "Sign in", None, body)
}

pub fn not_found() -> Response {
    let body = console::message(
        "Not found",
        "There is no such page in the console.",
        Some(("/console", "Back to the search")),
    );
    page(StatusCode::NOT_FOUND, "Not found", None, body)
}

pub fn unavailable() -> Response {
    service_unavailable(
        "The console is unavailable",
        "Its database cannot be reached just now. Try again in a minute.",
    )
}

pub fn provider_unreachable() -> Response {
    service_unavailable(
        "Cannot check your access",
        "The staff identity provider cannot be reached, and the console asks it on every \
         request who you are. Try again in a minute.",
    )
}

/// A 503 page that says when to ask again, as the rest of the server's 503s do.
fn service_unavailable(heading: &str, text: &str) -> Response {
    let body = console::message(heading, text, None);
    let mut response = page(StatusCode::SERVICE_UNAVAILABLE, "Unavailable", None, body);
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
    response
}

/// A session whose groups or token no longer open the console (it has just been ended).
pub fn access_ended(method: &Method) -> Response {
    let body = console::message(
        "Your console access has ended",
        "The identity provider no longer puts you in a group that opens the console, or your \
         sign-in there has ended.",
        Some(("/console/sign-in", "Sign in again")),
    );
    let status = if method == Method::GET {
        StatusCode::FORBIDDEN
    } else {
        StatusCode::UNAUTHORIZED
    };
    page(status, "Access ended", None, body)
}

/// A change sent without a console session.
pub fn sign_in_needed() -> Response {
    let body = console::message(
        "Sign in first",
        "This needs a staff member signed in to the console.",
        Some(("/console/sign-in", "Sign in")),
    );
    page(StatusCode::UNAUTHORIZED, "Sign in", None, body)
}

/// A role the action needs and the person lacks.
pub fn forbidden(staff: &Staff, needed: &str) -> Response {
    let body = console::message(
        "Not for your role",
        &format!(
            "This needs the {needed} role; you have {}.",
            staff.roles.in_words()
        ),
        Some(("/console", "Back to the search")),
    );
    page(
        StatusCode::FORBIDDEN,
        "Not for your role",
        Some(staff),
        body,
    )
}
