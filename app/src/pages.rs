use leptos::prelude::*;

/// Which way of pushing a scan the landing page shows.
#[derive(Clone, Copy, PartialEq, Eq)]
enum PushVia {
    Curl,
    GithubActions,
    GitlabCi,
}

impl PushVia {
    const ALL: [PushVia; 3] = [PushVia::Curl, PushVia::GithubActions, PushVia::GitlabCi];

    fn label(self) -> &'static str {
        match self {
            PushVia::Curl => "curl",
            PushVia::GithubActions => "GitHub Actions",
            PushVia::GitlabCi => "GitLab CI",
        }
    }

    fn id(self) -> &'static str {
        match self {
            PushVia::Curl => "curl",
            PushVia::GithubActions => "github",
            PushVia::GitlabCi => "gitlab",
        }
    }

    fn snippet(self) -> &'static str {
        match self {
            PushVia::Curl => {
                "curl -sS -X POST \"$TIDEMARK_URL/v1/dashboard/push\" \\\n  \
                 -H 'Content-Type: application/json' \\\n  \
                 -H \"X-API-Key: $TIDEMARK_API_KEY\" \\\n  \
                 --data @scan-results.json"
            }
            PushVia::GithubActions => {
                "- name: Push compliance scan\n  \
                 env:\n    \
                 TIDEMARK_API_KEY: ${{ secrets.TIDEMARK_API_KEY }}\n  \
                 run: tidemark push scan-results.json --label \"${{ github.repository }}\""
            }
            PushVia::GitlabCi => {
                "push-scan:\n  \
                 script:\n    \
                 - tidemark push scan-results.json --label \"$CI_PROJECT_PATH\"\n  \
                 # TIDEMARK_API_KEY comes from Settings > CI/CD > Variables (masked)"
            }
        }
    }
}

/// `/`: the landing island under its own title (set here, outside the island, so the title
/// costs the WASM bundle nothing).
#[component]
pub fn LandingPage() -> impl IntoView {
    view! {
        <leptos_meta::Title text="Tidemark · compliance scores, tracked over time"/>
        <Landing/>
    }
}

#[cfg_attr(feature = "hydrate", island(lazy))]
#[cfg_attr(not(feature = "hydrate"), island)]
pub fn Landing() -> impl IntoView {
    let (via, set_via) = signal(PushVia::Curl);
    view! {
        <section class="hero">
            <h1>"Compliance scores, tracked over time."</h1>
            <p class="lede">
                "Tidemark keeps the history of every scan your scanner and CI jobs push, "
                "shows each project's score trend, and tells you the moment a change regresses it."
            </p>
        </section>
        <section class="card" aria-labelledby="push-heading">
            <h2 id="push-heading">"Push your first scan"</h2>
            <div class="tabs" role="tablist" aria-label="How to push">
                {PushVia::ALL
                    .into_iter()
                    .map(|option| {
                        view! {
                            <button
                                role="tab"
                                id=format!("tab-{}", option.id())
                                aria-selected=move || (via.get() == option).to_string()
                                class:active=move || via.get() == option
                                on:click=move |_| set_via.set(option)
                            >
                                {option.label()}
                            </button>
                        }
                    })
                    .collect_view()}
            </div>
            <pre class="snippet" role="tabpanel" tabindex="0" data-testid="push-snippet">
                <code>{move || via.get().snippet()}</code>
            </pre>
        </section>
    }
}

#[component]
pub fn NotFound() -> impl IntoView {
    #[cfg(feature = "ssr")]
    {
        if let Some(resp) = use_context::<leptos_axum::ResponseOptions>() {
            resp.set_status(http::StatusCode::NOT_FOUND);
        }
    }
    view! {
        <leptos_meta::Title text="Page not found · Tidemark"/>
        <section class="card">
            <h1>"Page not found"</h1>
            <p>
                "There is nothing at this address. " <a href="/">"Back to the start page"</a>
            </p>
        </section>
    }
}
