//! The vendor's console (`/console`): the vendor's own staff sign in through their own
//! identity provider and find customers, look after licences and see the business. A second
//! signed-in surface beside the customers' dashboard, sharing nothing with it but the
//! stylesheet: its own provider, its own `__Host-` cookie and session table, shorter
//! lifetimes, roles from the provider's groups asked on every request. Staff see licences,
//! seats, counts and activity, never a customer's findings, scans or reports.

pub mod actions;
pub mod business;
pub mod license;
pub mod provider;
pub mod render;
pub mod search;
pub mod signin;
pub mod staff;

use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use tower_sessions::cookie::SameSite;
use tower_sessions::{Expiry, SessionManagerLayer};

use tidemark_domain::console::STAFF_SESSION;
use tidemark_services::ServiceError;

use crate::auth::cookie_keys::cookie_key;
use crate::auth::session_store::DbSessionStore;
use crate::state::AppState;

/// The console's session cookie: never the dashboard's, so neither opens the other.
pub const CONSOLE_COOKIE: &str = "__Host-tidemark_console";

/// The console's routes with their layers; `None` when no staff provider is configured
/// (every `/console` address is then the site's ordinary 404).
pub fn router(state: &AppState) -> Option<Router<AppState>> {
    state.console.as_ref()?;
    let store = DbSessionStore::for_staff(state.db.clone(), STAFF_SESSION);
    let sessions = SessionManagerLayer::new(store)
        .with_name(CONSOLE_COOKIE)
        .with_http_only(true)
        .with_secure(true)
        .with_same_site(SameSite::Strict)
        .with_path("/")
        .with_always_save(true)
        .with_expiry(Expiry::OnInactivity(time::Duration::milliseconds(
            STAFF_SESSION.idle_ms,
        )))
        .with_private(cookie_key(&state.config.keys.master_key));
    let router = Router::new()
        .route("/console", get(search::show_search))
        .route("/console/business", get(business::show_business))
        .route("/console/business/{file}", get(business::download_table))
        .route("/console/licenses/{id}", get(license::show_license))
        .route(
            "/console/licenses/{id}/actions/{kind}",
            post(actions::act_on_license),
        )
        .route(
            "/console/sign-in",
            get(signin::show_sign_in).post(signin::start_sign_in),
        )
        .route(signin::CALLBACK_PATH, get(signin::callback))
        .route("/console/sign-out", post(signin::sign_out))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            staff::require_same_origin,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            staff::resolve_staff,
        ))
        .layer(sessions);
    Some(router)
}

/// A use case's failure as a console page.
pub fn service_error(err: ServiceError) -> Response {
    match err {
        ServiceError::NotFound => render::not_found(),
        ServiceError::Invalid(text) | ServiceError::Conflict(text) => {
            let body = app::console::message("Not done", &text, Some(("/console", "Back")));
            render::page(axum::http::StatusCode::BAD_REQUEST, "Not done", None, body)
        }
        other => {
            tidemark_services::log_unavailable(&other);
            render::unavailable()
        }
    }
}
