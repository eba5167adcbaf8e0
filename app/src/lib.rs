//! The Tidemark dashboard: Leptos components and routes, rendered on the server (`ssr`) and
//! hydrated in the browser (`hydrate`). Never built with both features at once.

use leptos::prelude::*;
use leptos_meta::{provide_meta_context, MetaTags, Stylesheet, Title};
use leptos_router::{
    components::{Route, Router, Routes},
    ParamSegment, SsrMode, StaticSegment,
};

pub mod api;
pub mod auth;
#[cfg(feature = "ssr")]
pub mod chart;
#[cfg(feature = "ssr")]
pub mod console;
pub mod error;
pub mod life;
pub mod links;
pub mod model;
#[cfg(feature = "ssr")]
pub mod page_policy;
mod pages;
mod signin;
#[cfg(feature = "ssr")]
pub mod time;
mod views;

/// Server settings the dashboard shows (provided to the Leptos context by the server).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DashboardConfig {
    /// Where scanners push (`$TIDEMARK_BASE_URL`).
    pub base_url: String,
    /// Where people read the dashboard (`$TIDEMARK_DASHBOARD_URL`).
    pub dashboard_url: String,
    /// Webhooks may go to private addresses (`$TIDEMARK_WEBHOOK_ALLOW_PRIVATE`).
    pub webhook_allow_private: bool,
    /// The audience CI jobs request for keyless pushes (`$TIDEMARK_OIDC_AUDIENCE`).
    pub oidc_audience: String,
    /// Days a seat may go unseen before it is freed (`$TIDEMARK_SEAT_RELEASE_AFTER_DAYS`).
    pub seat_release_after_days: u32,
    /// Trusted publishers may name http:// and private issuers
    /// (`$TIDEMARK_OIDC_ALLOW_PRIVATE_ISSUERS`).
    pub oidc_allow_private_issuers: bool,
}

/// The HTML document around the app; only rendered on the server.
pub fn shell(options: LeptosOptions) -> impl IntoView {
    #[cfg(feature = "ssr")]
    page_policy::apply();
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                <meta name="color-scheme" content="light dark"/>
                <link rel="icon" href="/favicon.ico"/>
                // The page's own script (filters, the chart's keys, local times), with this
                // response's nonce like every other script of the page.
                <script src="/dashboard.js" defer nonce=leptos::nonce::use_nonce()></script>
                <AutoReload options/>
                <IslandsOnly/>
                <MetaTags/>
            </head>
            <body>
                <App/>
            </body>
        </html>
    }
}

/// Islands mode, without Leptos's `HydrationScripts`: the server adds to each page only the
/// scripts and WASM chunks of the islands it holds (`server::http::islands`), so a page
/// without islands loads no WASM. What `HydrationScripts` also did must still happen here:
/// outside islands nothing hydrates, so nothing else is rendered with hydration markers.
#[component]
fn IslandsOnly() -> impl IntoView {
    if let Some(context) = leptos::reactive::owner::Owner::current_shared_context() {
        context.set_is_hydrating(false);
    }
}

#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    view! {
        <Stylesheet id="leptos" href="/pkg/tidemark.css"/>
        <Title text="Tidemark"/>
        <Router>
            // The first Tab stop of every page: past the header, straight to the content.
            <a class="skip-link" href="#main">"Skip to content"</a>
            <header class="topbar">
                <a class="brand" href="/">
                    <span class="brand-mark" aria-hidden="true">"≋"</span>
                    " Tidemark"
                </a>
                <signin::AccountMenu/>
            </header>
            <main id="main" tabindex="-1">
                <Routes fallback=pages::NotFound>
                    <Route path=StaticSegment("") view=pages::LandingPage/>
                    <Route path=StaticSegment("signin") view=signin::SignIn/>
                    // Pages that can refuse (not found, admins only) render whole before they
                    // answer, so the status they set reaches the response.
                    <Route path=StaticSegment("projects") view=views::projects::ProjectsPage ssr=SsrMode::Async/>
                    <Route
                        path=(StaticSegment("projects"), ParamSegment("project_id"))
                        view=views::project::ProjectPage
                        ssr=SsrMode::Async
                    />
                    <Route
                        path=(
                            StaticSegment("projects"),
                            ParamSegment("project_id"),
                            StaticSegment("scans"),
                            ParamSegment("scan_id"),
                        )
                        view=views::scan::ScanPage
                        ssr=SsrMode::Async
                    />
                    <Route
                        path=(
                            StaticSegment("projects"),
                            ParamSegment("project_id"),
                            StaticSegment("frameworks"),
                            ParamSegment("framework"),
                        )
                        view=views::posture::FrameworkPage
                        ssr=SsrMode::Async
                    />
                    <Route
                        path=(
                            StaticSegment("projects"),
                            ParamSegment("project_id"),
                            StaticSegment("findings"),
                            ParamSegment("finding_id"),
                        )
                        view=views::finding::FindingPage
                        ssr=SsrMode::Async
                    />
                    <Route path=StaticSegment("findings") view=views::inbox::InboxPage ssr=SsrMode::Async/>
                    <Route
                        path=(StaticSegment("requirements"), ParamSegment("rule_id"))
                        view=views::requirement::RequirementAcrossPage
                        ssr=SsrMode::Async
                    />
                    <Route path=StaticSegment("settings") view=views::settings::SettingsPage ssr=SsrMode::Async/>
                    <Route
                        path=(StaticSegment("settings"), ParamSegment("section"))
                        view=views::settings::SettingsSectionPage
                        ssr=SsrMode::Async
                    />
                </Routes>
            </main>
        </Router>
    }
}
