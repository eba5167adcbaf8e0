//! `tidemark-server`: serves the dashboard (Leptos SSR + hydration), the `/v1` scanner API,
//! operations endpoints, and the operator subcommands.

pub mod admin;
pub mod allocator;
pub mod api;
pub mod auth;
pub mod billing;
pub mod config;
pub mod console;
pub mod http;
pub mod keyless;
pub mod net;
pub mod operator;
pub mod scim;
pub mod state;
pub mod telemetry;
pub mod web;
pub mod workers;

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use app::{shell, App};
use axum::extract::Request;
use axum::routing::{get, post};
use axum::Router;
use leptos::config::LeptosOptions;
use leptos::prelude::provide_context;
use leptos_axum::{generate_route_list, LeptosRoutes};
use tidemark_store::Db;
use tower::ServiceExt as _;
use tower_http::compression::{CompressionLayer, CompressionLevel};
use tower_http::timeout::RequestBodyTimeoutLayer;
use tower_http::trace::TraceLayer;

use crate::config::{Config, Environment, MasterKeySource};
use crate::http::metrics::Metrics;
use crate::http::request_id::RequestId;
use crate::http::security_headers;
use tidemark_services::crypto;

use crate::state::AppState;

/// What starting does to the database schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Schema {
    /// Apply pending migrations (`serve` and writing commands with `TIDEMARK_MIGRATE=auto`,
    /// and `migrate` itself).
    Migrate,
    /// Leave it; `/readyz` says 503 until it is current (`serve` with `never`).
    Leave,
    /// Leave it, and refuse to go on unless it is current (read-only commands always,
    /// writing commands with `never`): a command never works on a schema it does not know.
    RequireCurrent,
}

/// Connects to the database, treats the schema as `serve` does (`TIDEMARK_MIGRATE`), and
/// assembles the shared state.
pub async fn build_state(config: Config) -> anyhow::Result<AppState> {
    let schema = operator::cli::Command::Serve.schema(config.database.migrate);
    build_state_with(config, schema).await
}

/// Connects to the database, treats the schema as `schema` says, and assembles the state.
pub async fn build_state_with(config: Config, schema: Schema) -> anyhow::Result<AppState> {
    if let MasterKeySource::DevelopmentFile(path) = &config.keys.master_key_source {
        tracing::warn!(
            path = %path.display(),
            "TIDEMARK_MASTER_KEY is not set: using a development key kept in the data directory; \
             set TIDEMARK_MASTER_KEY in production"
        );
    }
    let db = Db::connect_with(
        config.database.url.expose(),
        config.database.pool_settings(),
    )
    .await
    .context("could not open the database named by DATABASE_URL")?;
    db.set_push_early_decisions(config.database.plan_pushes_early);
    match schema {
        Schema::Migrate => db.migrate().await.context("could not apply migrations")?,
        Schema::Leave => {
            if !db.is_ready().await.unwrap_or(false) {
                tracing::warn!(
                    "TIDEMARK_MIGRATE=never and the schema is not current: /readyz answers 503 \
                     until `tidemark-server migrate` has run"
                );
            }
        }
        Schema::RequireCurrent => {
            if !db
                .is_ready()
                .await
                .context("could not read the database's migrations")?
            {
                anyhow::bail!(
                    "the database schema is not current (migrations are pending); run \
                     `tidemark-server migrate` first (this command does not migrate: read-only \
                     commands never do, and writing ones not with TIDEMARK_MIGRATE=never)"
                );
            }
        }
    }
    tracing::info!(database = db.backend().as_str(), "database ready");

    let leptos_options = LeptosOptions::builder()
        .output_name("tidemark")
        .site_root(config.http.site_root.as_str())
        .site_pkg_dir("pkg")
        .site_addr(config.http.site_addr)
        .env(match config.environment {
            Environment::Production => leptos::config::Env::PROD,
            Environment::Development => leptos::config::Env::DEV,
        })
        .build();

    let oidc = match &config.signin.oidc {
        Some(oidc) => Some(Arc::new(auth::oidc::provider::OidcProvider::new(
            oidc.clone(),
            &config.http.base_url,
        )?)),
        None => None,
    };
    let dns = net::dns::DnsVerifier::new(config.signin.dns_resolver)
        .context("could not set up the DNS resolver for SSO domain verification")?;
    let keys = config.keys.keyring();
    let console = match &config.console {
        Some(console) => Some(console::provider::ConsoleAuth::new(
            console,
            &config.http.base_url,
            crypto::SecretBox::new(&keys, crypto::STAFF_TOKEN_PURPOSE),
        )?),
        None => None,
    };
    let ci_keys = Arc::new(keyless::KeySets::new(
        dns.clone(),
        config.keyless.allow_private_issuers,
        config.keyless.ca_pem.as_deref(),
    )?);
    let signer = Arc::new(crypto::signing::Signer::new(&keys, &config.http.base_url));
    let validator = Arc::new(tidemark_services::licensing::Validator::new(
        Duration::from_millis(config.limits.validation_cache_ms.into()),
        signer.clone(),
        config.http.base_url.clone(),
    ));
    let state = AppState {
        assets: http::assets::Assets::default(),
        signer,
        validator,
        ci_keys,
        dns,
        leptos_options,
        db,
        login_attempts: crypto::SecretBox::new(&keys, crypto::LOGIN_ATTEMPT_PURPOSE),
        oidc,
        console,
        license_keys: crypto::SecretBox::new(&keys, crypto::LICENSE_KEY_PURPOSE),
        webhook_secrets: crypto::SecretBox::new(&keys, crypto::WEBHOOK_PURPOSE),
        handovers: crypto::SecretBox::new(&keys, crypto::HANDOVER_PURPOSE),
        webhook_wakeup: Arc::new(tokio::sync::Notify::new()),
        push_budget: api::push_budget::PushBudget::new(
            u64::from(config.limits.push_budget_mib) * 1024 * 1024,
        ),
        config: Arc::new(config),
        metrics: Metrics::new(),
        mail_wakeup: Arc::new(tokio::sync::Notify::new()),
    };
    if state.config.dev_demo {
        let seeding = state.clone();
        state
            .db
            .detached(|db| async move { Ok(operator::demo::seed(&db, &seeding).await) })
            .await?
            .context("could not seed the demo account")?;
    }
    Ok(state)
}

/// The whole HTTP surface of one server.
pub fn router(state: AppState) -> Router {
    router_with(state, Router::new())
}

/// [`router`] with `extra` routes behind the same layers (tests use it for routes no real
/// server has, such as a handler that panics).
#[doc(hidden)]
pub fn router_with(state: AppState, extra: Router<AppState>) -> Router {
    let page_scripts = http::islands::PageScripts::load(
        &state.leptos_options.site_root,
        &state.leptos_options.site_pkg_dir,
        &state.leptos_options.output_name,
    );
    let dashboard = dashboard_router(&state);
    let mut app = Router::new()
        .route("/healthz", get(http::health::get_healthz))
        .route("/readyz", get(http::health::get_readyz))
        .route("/badge/{file}", get(web::badge::get_badge))
        // The verdict keys where key-set readers look first, as well as under /v1.
        .route(
            "/.well-known/tidemark-keys.json",
            get(api::keys::get_signing_keys),
        );
    if state.config.http.metrics_addr.is_none() {
        app = app.route("/metrics", get(http::scrape::get_metrics));
    }
    let app = app
        .merge(extra)
        .merge(security_headers::no_store(api::router(
            Duration::from_secs(state.config.http.api_timeout_seconds.into()),
        )))
        .merge(security_headers::no_store(admin::router(
            Duration::from_secs(state.config.http.api_timeout_seconds.into()),
        )))
        .merge(security_headers::no_store(scim::router()))
        .merge(security_headers::no_store(billing::router()))
        .merge(security_headers::no_store(dashboard));
    let app = match console::router(&state) {
        Some(console) => app.merge(console),
        None => app,
    };
    let app = app
        .with_state(state.clone())
        .fallback_service(fallback_service(&state))
        .layer(axum::middleware::from_fn_with_state(
            state.assets.clone(),
            http::assets::serve_assets,
        ))
        .layer(axum::middleware::from_fn_with_state(
            page_scripts,
            http::islands::add_island_scripts,
        ))
        .layer(axum::middleware::from_fn(http::metrics::note_matched_path));
    let app = app
        // Validations the cache can answer stop here, ahead of everything only the dashboard
        // or the router needs (the hottest request's cost is then mostly what every one pays).
        .layer(axum::middleware::from_fn_with_state(
            state.validator.clone(),
            api::license::answer_cached_validation,
        ));
    let hsts = state.config.environment == Environment::Production
        && state.config.http.base_url.starts_with("https://");
    // Pages and JSON go compressed as the client accepts: a project page is about 127 KB of
    // HTML, some 15 KB as Brotli. Quality 5 compresses it in about a millisecond; the site's
    // files under /pkg already carry their build-time variants (Content-Encoding set), which
    // this layer leaves alone.
    let app = security_headers::apply(app, hsts)
        .layer(CompressionLayer::new().quality(CompressionLevel::Precise(5)))
        .layer(RequestBodyTimeoutLayer::new(Duration::from_secs(
            state.config.http.body_timeout_seconds.into(),
        )));

    outermost_layers(app, &state)
}

/// The dashboard's routes, listed once per process. Listing them renders the app with
/// resource loading switched off, and leptos keeps that switch in one process-wide flag
/// (`leptos_server`'s `IS_SUPPRESSING_RESOURCE_LOAD`): a second listing while another server
/// in the same process renders a page (tests, benchmarks and a restart in place run several)
/// would leave that page's resources unloaded and its response hanging for ever.
fn app_routes() -> Vec<leptos_axum::AxumRouteListing> {
    static ROUTES: std::sync::OnceLock<Vec<leptos_axum::AxumRouteListing>> =
        std::sync::OnceLock::new();
    ROUTES.get_or_init(|| generate_route_list(App)).clone()
}

/// Everything a browser signs in to, with the layers only it has: sessions, the viewer,
/// same-origin checks, the server functions' context.
fn dashboard_router(state: &AppState) -> Router<AppState> {
    let routes = app_routes();
    let leptos_state = state.clone();
    let db = state.db.clone();
    let housekeeping = state.config.housekeeping.policy;
    let dashboard_config = app::DashboardConfig {
        base_url: state.config.http.base_url.clone(),
        dashboard_url: state.config.http.dashboard_url.clone(),
        webhook_allow_private: state.config.webhooks.allow_private,
        oidc_audience: state.config.keyless.audience.clone(),
        seat_release_after_days: state.config.limits.seat_release_after_days,
        oidc_allow_private_issuers: state.config.keyless.allow_private_issuers,
    };
    let services = tidemark_services::Services::new(
        state.db.clone(),
        &state.config.keys.keyring(),
        state.webhook_wakeup.clone(),
        Arc::new(state.dns.clone()),
        Arc::new(auth::saml::SamlMetadata),
    );
    let form_seal = crypto::form_seal_keys(&state.config.keys.keyring());
    let form_seal_for_pages = form_seal.clone();

    // Everything a browser signs in to: pages, server functions, the sign-in flows. Only
    // these routes see sessions; `/v1` authenticates with API keys and never with cookies.
    let dashboard = Router::new()
        .route("/auth/signin", post(auth::start_sign_in))
        .route("/auth/oidc/callback", get(auth::oidc::callback))
        .route("/auth/logout", post(auth::logout))
        .route("/auth/switch", post(auth::switch_account))
        .route(
            "/projects/{project_id}/scans/{scan_id}/findings.sarif",
            get(web::downloads::findings_sarif),
        )
        .route(
            "/projects/{project_id}/scans/{scan_id}/findings.csv",
            get(web::downloads::findings_csv),
        )
        .route(
            "/projects/{project_id}/history.csv",
            get(web::downloads::history_csv),
        )
        .route(
            "/projects/{project_id}/scans/{scan_id}/report.html",
            get(web::downloads::report_html),
        )
        .route(
            "/projects/{project_id}/scans/{scan_id}/report.csv",
            get(web::downloads::report_csv),
        )
        .route(
            "/projects/{project_id}/scans/{scan_id}/report.json",
            get(web::downloads::report_json),
        )
        .route(
            "/settings/license/offline-file",
            post(web::offline_license::download_offline_file),
        )
        // Its address before the UI said "license" everywhere, for a page open across an upgrade.
        .route(
            "/settings/licence/offline-file",
            post(web::offline_license::download_offline_file),
        )
        .route(
            "/settings/provisioning/change",
            post(scim::settings::change_provisioning),
        )
        .route(
            "/projects/{project_id}/findings/{finding_id}/triage",
            post(web::triage_form::triage_finding),
        )
        .route(
            "/projects/{project_id}/findings/triage",
            post(web::triage_form::triage_findings),
        )
        .route("/findings/triage", post(web::triage_form::triage_inbox))
        .route("/findings.csv", get(web::downloads::inbox_csv))
        .route("/saml/metadata", get(auth::saml::metadata))
        .route(
            "/saml/acs",
            post(auth::saml::acs).layer(axum::extract::DefaultBodyLimit::max(
                auth::saml::MAX_ACS_BODY,
            )),
        )
        .leptos_routes_with_context(
            state,
            routes,
            move || {
                provide_context(leptos_state.clone());
                provide_context(db.clone());
                provide_context(dashboard_config.clone());
                provide_context(app::api::storage::Housekeeping(housekeeping));
                provide_context(services.clone());
                provide_context(form_seal_for_pages.clone());
            },
            {
                let options = state.leptos_options.clone();
                move || shell(options.clone())
            },
        )
        .layer(axum::middleware::from_fn_with_state(
            form_seal,
            http::server_fn_status::apply_error_status,
        ))
        // Inside the viewer: a secret a form made is handed to its member's page only.
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            http::shown_once::hand_over_secrets,
        ))
        .layer(axum::middleware::from_fn(auth::require_viewer_for_pages));
    signed_in_layers(dashboard, state)
}

/// What every route a browser signs in to has around it: the session, the viewer it names,
/// and the same-origin check of changes.
fn signed_in_layers(router: Router<AppState>, state: &AppState) -> Router<AppState> {
    let router = router
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            auth::resolve_viewer,
        ))
        .layer(auth::session_layer(state));
    // During a master-key rotation, cookies the previous key encrypted still open.
    let router = match auth::cookie_keys::CookieKeys::new(
        &state.config.keys.master_key,
        state.config.keys.master_key_previous.as_ref(),
    ) {
        Some(keys) => router.layer(axum::middleware::from_fn_with_state(
            keys,
            auth::cookie_keys::translate_session_cookie,
        )),
        None => router,
    };
    router.layer(axum::middleware::from_fn_with_state(
        state.clone(),
        auth::require_same_origin,
    ))
}

/// What answers an address no route has: a file of the site (served as it is, with no
/// session read), or else the "Page not found" page, rendered for its viewer (a signed-in
/// member sees their own header there, not a "Sign in" link).
fn fallback_service(state: &AppState) -> Router {
    let db = state.db.clone();
    let not_found = signed_in_layers(
        Router::new().fallback(leptos_axum::file_and_error_handler_with_context::<
            AppState,
            _,
        >(move || provide_context(db.clone()), shell)),
        state,
    )
    .with_state(state.clone());
    let files = Router::new()
        .fallback(leptos_axum::file_and_error_handler::<AppState, _>(shell))
        .with_state(state.clone());
    let site_root = std::path::PathBuf::from(state.leptos_options.site_root.as_ref());
    Router::new().fallback(move |req: Request| {
        let (files, not_found) = (files.clone(), not_found.clone());
        let is_file = http::assets::is_site_file(&site_root, req.uri().path());
        async move {
            let answer = if is_file {
                files.oneshot(req).await
            } else {
                not_found.oneshot(req).await
            };
            answer.unwrap_or_else(|never| match never {})
        }
    })
}

/// The layers around everything, outermost last.
fn outermost_layers(app: Router, state: &AppState) -> Router {
    // Outermost last: the request id exists before the access-log span opens, the metrics
    // layer sees the final status, a panic anywhere inside is answered, and every database
    // call inside is bounded.
    app.layer(axum::middleware::from_fn_with_state(
        state.config.database.statement_timeout(),
        http::deadline::bound_database_calls,
    ))
    .layer(axum::middleware::from_fn(http::panics::answer_panics))
    .layer(axum::middleware::from_fn_with_state(
        state.metrics.clone(),
        http::metrics::track_requests,
    ))
    .layer(TraceLayer::new_for_http().make_span_with(|req: &Request| {
        let request_id = req
            .extensions()
            .get::<RequestId>()
            .map(|id| id.0.as_str())
            .unwrap_or("-");
        // The path only: a query string could carry something private.
        tracing::info_span!(
            "request",
            method = %req.method(),
            path = %req.uri().path(),
            request_id,
        )
    }))
    .layer(axum::middleware::from_fn(
        http::request_id::assign_request_id,
    ))
}

/// Serves until SIGINT or SIGTERM, then lets in-flight requests finish.
pub async fn serve(state: AppState, listener: tokio::net::TcpListener) -> anyhow::Result<()> {
    serve_until(state, listener, shutdown_signal()).await
}

/// [`serve`] until `shutdown` completes (the binary passes [`shutdown_signal`], made before
/// it bound the port).
pub async fn serve_until(
    state: AppState,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()>,
) -> anyhow::Result<()> {
    let addr = listener.local_addr()?;
    tracing::info!(%addr, "listening");
    state.assets.start_loading(&state.config.http.site_root);
    // Stopped when this future ends or is dropped (a test aborting its server), so no
    // replica's workers outlive it.
    let _workers = workers::start(&state)?;
    let header_timeout = Duration::from_secs(state.config.http.header_timeout_seconds.into());
    // `/metrics` on an address of its own when one is configured (for example loopback or a
    // private network only), with the same connection timeouts.
    let metrics = match state.config.http.metrics_addr {
        None => None,
        Some(metrics_addr) => {
            let listener = tokio::net::TcpListener::bind(metrics_addr)
                .await
                .with_context(|| {
                    format!("could not listen on TIDEMARK_METRICS_ADDR {metrics_addr}")
                })?;
            tracing::info!(addr = %listener.local_addr()?, "serving /metrics");
            let router = Router::new()
                .route("/metrics", get(http::scrape::get_metrics))
                .with_state(state.clone());
            Some(AbortOnDrop(tokio::spawn(http::listener::serve(
                listener,
                router,
                header_timeout,
                std::future::pending(),
            ))))
        }
    };
    http::listener::serve(listener, router(state), header_timeout, shutdown).await;
    drop(metrics);
    tracing::info!("shut down cleanly");
    Ok(())
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// SIGINT or SIGTERM. The handlers are installed when this is called, not when the future is
/// first polled: call it before the listener exists, so that a signal sent as soon as the port
/// answers never meets the default action (which would kill the process uncleanly).
pub fn shutdown_signal() -> impl std::future::Future<Output = ()> + Send + 'static {
    use tokio::signal::unix::{signal, SignalKind};
    let terminate = signal(SignalKind::terminate());
    let interrupt = signal(SignalKind::interrupt());
    async move {
        let wait = |installed: std::io::Result<tokio::signal::unix::Signal>| async move {
            match installed {
                Ok(mut sig) => {
                    sig.recv().await;
                }
                Err(_) => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            () = wait(terminate) => {},
            () = wait(interrupt) => {},
        }
        tracing::info!("shutdown signal received; finishing in-flight requests");
    }
}
