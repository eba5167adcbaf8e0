//! The `/v1` scanner API. Every response under `/v1`, including unknown routes and wrong
//! methods, is JSON; every error is one [`ApiError`] variant rendered as `{error, message}`.
//! The OpenAPI document is generated from the same handler annotations that route requests.

mod bundles;
mod exports;
mod extract;
mod findings;
mod frameworks;
mod inbox;
pub mod keys;
pub mod license;
mod oidc_exchange;
mod posture;
mod push;
pub mod push_budget;
mod report;

use std::sync::Arc;

use axum::extract::State;
use axum::routing::{any, get};
use axum::{Json, Router};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityScheme};
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::http::error::ApiError;

use crate::state::AppState;

/// The 401 every API-key endpoint documents (its OpenAPI description, written once).
pub(crate) const API_KEY_REFUSED: &str =
    "`missing_api_key`, `malformed_api_key` or `invalid_api_key`";

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Tidemark scanner API",
        version = "1",
        description = "License validation, activation and resend, scan pushes, findings and their triage, quality gates, compliance posture, and exports \
            (findings as SARIF 2.1.0 or CSV, history as CSV) for the Tidemark compliance scanner. Every error body is {\"error\", \"message\"}; every \
            response carries X-Request-Id. /v1 only grows: new optional response fields and new \
            endpoints, never a removed or retyped field. Webhooks: Tidemark POSTs a \
            WebhookEvent (see components) to each endpoint an admin adds in Settings, with the \
            header Tidemark-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of \"<t>.<body>\" \
            under the endpoint's secret>; the same event id on every retry and redelivery."
    ),
    components(schemas(
        tidemark_wire::PushedBy,
        tidemark_wire::WebhookEvent,
        tidemark_wire::WebhookProject,
        tidemark_wire::WebhookScan
    )),
    modifiers(&SecuritySchemes),
    tags(
        (name = "license", description = "Licenses and activation"),
        (name = "dashboard", description = "Pushing scan results"),
        (name = "keyless", description = "Keyless CI: a CI job's OpenID Connect token exchanged for a short-lived push token"),
        (name = "exports", description = "A scan's findings (SARIF 2.1.0, CSV) and a project's history (CSV)"),
        (name = "findings", description = "Findings followed across scans, per branch, and their triage"),
        (name = "gates", description = "A project's quality gate, to keep beside the workflow that pushes"),
        (name = "posture", description = "Compliance posture per framework: requirements passed, failed, triaged and not evaluated, now and over time"),
        (name = "frameworks", description = "Custom frameworks: an account's own controls, each mapped to rule ids of scanned frameworks, judged like a scanned framework"),
    )
)]
struct ApiDoc;

struct SecuritySchemes;

impl utoipa::Modify for SecuritySchemes {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "api_key",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "X-API-Key",
                "An API key from activation: svc_api_ followed by base62 characters",
            ))),
        );
        components.add_security_scheme(
            "ci_push_token",
            SecurityScheme::Http(
                utoipa::openapi::security::HttpBuilder::new()
                    .scheme(utoipa::openapi::security::HttpAuthScheme::Bearer)
                    .description(Some(
                        "A keyless CI push token (tmk_ci_…) from /v1/auth/oidc/exchange; \
                         also accepted as X-API-Key. An API key may be sent this way too.",
                    ))
                    .build(),
            ),
        );
        components.add_security_scheme(
            "license_key_hash",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "X-License-Key-Hash",
                "Lowercase hex SHA-256 of the raw license key (64 characters); the key itself is never sent",
            ))),
        );
    }
}

/// Every endpoint reads or writes the database, so every one may answer that it is away:
/// `503 database_unavailable` or `507 storage_full`, each with `Retry-After`. Said once here
/// rather than on each handler (applied once the routes have added their paths).
/// Every documented endpoint: routing and documentation come from the same list.
fn documented_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(license::validate_license))
        .routes(routes!(license::activate_license))
        .routes(routes!(license::resend_license))
        .routes(routes!(keys::get_signing_keys))
        .routes(routes!(push::push_scan))
        .routes(routes!(oidc_exchange::exchange_oidc_token))
        .routes(routes!(bundles::download_bundle))
        .routes(routes!(exports::get_findings_sarif))
        .routes(routes!(exports::get_findings_csv))
        .routes(routes!(exports::get_history_csv))
        .routes(routes!(inbox::list_account_findings))
        .routes(routes!(findings::list_findings))
        .routes(routes!(findings::get_finding))
        .routes(routes!(findings::put_triage, findings::delete_triage))
        .routes(routes!(findings::triage_many))
        .routes(routes!(findings::get_gate, findings::put_gate))
        .routes(routes!(posture::get_posture))
        .routes(routes!(report::get_scan_report))
        .routes(routes!(frameworks::list_custom_frameworks))
        .routes(routes!(
            frameworks::put_framework,
            frameworks::get_framework,
            frameworks::remove_framework
        ))
}

/// The `/v1` routes, the OpenAPI document at `/v1/openapi.json`, and JSON answers for
/// unknown paths and wrong methods. No request may take longer than `limit` in all: a push
/// stopped there still completes its write if it had begun (`Db::detached`), so a retry is
/// answered as a replay.
pub fn router(limit: std::time::Duration) -> Router<AppState> {
    let (routes, doc) = documented_routes().split_for_parts();
    let doc = Arc::new(finish_document(doc));
    routes
        .route(
            "/v1/openapi.json",
            get(|State(doc): State<Arc<utoipa::openapi::OpenApi>>| async move { Json(doc) })
                .with_state(doc.clone()),
        )
        .route("/v1", any(|| async { ApiError::NoSuchEndpoint }))
        .route("/v1/{*rest}", any(|| async { ApiError::NoSuchEndpoint }))
        .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed })
        .layer(axum::middleware::from_fn_with_state(
            limit,
            crate::http::deadline::answer_within,
        ))
}

/// The OpenAPI document (for the snapshot test and tooling).
pub fn openapi() -> utoipa::openapi::OpenApi {
    finish_document(documented_routes().split_for_parts().1)
}

fn finish_document(mut doc: utoipa::openapi::OpenApi) -> utoipa::openapi::OpenApi {
    crate::http::openapi::add_outage_answers(&mut doc);
    doc
}
