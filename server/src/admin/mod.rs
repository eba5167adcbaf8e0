//! `/admin/v1`: the vendor's admin API, for its billing, CRM and support systems. Vendor
//! tokens with one role each (`tidemark_domain::vendor`), every change audited under the
//! token's name, its own OpenAPI document at `/admin/v1/openapi.json`. Handlers are thin:
//! they parse, check the role, call the use case the operator's commands call, and answer.

mod accounts;
mod caller;
mod catalogues;
mod events;
mod keys_and_bundles;
mod licenses;
mod machines;
mod tokens;

use std::sync::Arc;

use axum::extract::State;
use axum::routing::{any, get};
use axum::{Json, Router};
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::http::error::ApiError;
use crate::state::AppState;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Tidemark admin API",
        version = "1",
        description = "The vendor's API over licences: make, find and change them (tier, expiry, \
            entitlement overrides, project cap, suspension), resend them, and write offline \
            licence files; seats; licence events and the webhook endpoints that hear them; customers' accounts, the audit log, the rule bundle, the \
            verdict-signing keys; and the tokens it is called with. Authenticate with a vendor token \
            (Authorization: Bearer tmk_vendor_…), which carries one role: admin (everything), \
            sales (make licences, change what they carry), support (read, resend, suspend and \
            resume, extend by at most 30 days, offline files), billing (what a checkout \
            integration does: make, extend, change tier, suspend and resume) or read. A call its \
            role may not make is 403 insufficient_role, naming the roles that may. Every change \
            is in the audit log as vendor:<token name>. Each token may make 600 calls a rolling \
            minute (TIDEMARK_ADMIN_PER_MINUTE). Every error body is {\"error\", \"message\"}."
    ),
    modifiers(&SecuritySchemes),
    tags(
        (name = "licenses", description = "Licences"),
        (name = "accounts", description = "Customers' accounts: their licence and how much they use, never their data"),
        (name = "audit", description = "The audit log"),
        (name = "bundles", description = "The rule bundle scanners download (admin only)"),
        (name = "catalogues", description = "Framework catalogues: every requirement of a scanned framework, from Prowler's compliance JSON (publishing: admin only)"),
        (name = "signing keys", description = "The keys that sign licence verdicts"),
        (name = "tokens", description = "Vendor tokens (admin only)"),
        (name = "events", description = "Licence events, and the vendor's webhook endpoints that hear them (admin only)"),
    )
)]
struct AdminDoc;

struct SecuritySchemes;

impl utoipa::Modify for SecuritySchemes {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "vendor_token",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "A vendor token, tmk_vendor_ followed by base62 characters: made by \
                         `tidemark-server vendor-token create` or POST /admin/v1/tokens",
                    ))
                    .build(),
            ),
        );
    }
}

fn documented_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(AdminDoc::openapi())
        .routes(routes!(licenses::list_licenses, licenses::create_license))
        .routes(routes!(licenses::get_license, licenses::update_license))
        .routes(routes!(licenses::suspend_license))
        .routes(routes!(licenses::resume_license))
        .routes(routes!(licenses::resend_license))
        .routes(routes!(licenses::offline_file))
        .routes(routes!(machines::list_machines))
        .routes(routes!(machines::release_machine))
        .routes(routes!(tokens::list_tokens, tokens::create_token))
        .routes(routes!(tokens::revoke_token))
        .routes(routes!(accounts::list_accounts))
        .routes(routes!(accounts::get_account))
        .routes(routes!(accounts::list_audit))
        .routes(routes!(keys_and_bundles::publish_bundle))
        .routes(routes!(catalogues::list_catalogues))
        .routes(routes!(
            catalogues::get_catalogue,
            catalogues::publish_catalogue
        ))
        .routes(routes!(keys_and_bundles::list_signing_keys))
        .routes(routes!(keys_and_bundles::rotate_signing_key))
        .routes(routes!(events::list_events))
        .routes(routes!(events::list_webhooks, events::create_webhook))
        .routes(routes!(events::delete_webhook))
}

fn finish_document(mut doc: utoipa::openapi::OpenApi) -> utoipa::openapi::OpenApi {
    crate::http::openapi::add_outage_answers(&mut doc);
    doc
}

/// The admin API's OpenAPI document (for the snapshot test and tooling).
pub fn openapi() -> utoipa::openapi::OpenApi {
    finish_document(documented_routes().split_for_parts().1)
}

/// The admin API's routes, answered within `limit` like `/v1`'s.
pub fn router(limit: std::time::Duration) -> Router<AppState> {
    let (routes, doc) = documented_routes().split_for_parts();
    let doc = Arc::new(finish_document(doc));
    routes
        .route(
            "/admin/v1/openapi.json",
            get(|State(doc): State<Arc<utoipa::openapi::OpenApi>>| async move { Json(doc) })
                .with_state(doc),
        )
        .route("/admin/v1", any(|| async { ApiError::NoSuchEndpoint }))
        .route(
            "/admin/v1/{*rest}",
            any(|| async { ApiError::NoSuchEndpoint }),
        )
        .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed })
        .layer(axum::middleware::from_fn(caller::note_call))
        .layer(axum::middleware::from_fn_with_state(
            limit,
            crate::http::deadline::answer_within,
        ))
}
