//! The console's first page: one search box over e-mail, licence id, account id, API-key
//! prefix and machine fingerprint, and what it found as a table.

use leptos::prelude::*;

/// One licence found, as the results table shows it.
#[derive(Debug, Clone)]
pub struct LicenseHit {
    pub license_id: String,
    pub email: String,
    pub tier: String,
    /// "active", "expired" or "suspended"
    pub state: String,
    /// `YYYY-MM-DD`, UTC
    pub expires: String,
    pub account_id: String,
    /// "member e-mail", "API key", …
    pub found_by: String,
}

/// What the page holds below the box.
#[derive(Debug, Clone)]
pub enum Results {
    /// Nothing searched yet.
    None,
    /// The search could not be understood: why.
    Refused(String),
    /// `searched` describes the term ("addresses at acme.example").
    Found {
        searched: String,
        hits: Vec<LicenseHit>,
        more: bool,
    },
}

pub fn search_page(query: &str, results: Results) -> AnyView {
    let query = query.to_owned();
    let below = match results {
        Results::None => view! {
            <p class="muted">
                "Search by an e-mail address (or @domain), a licence id (lcn_…), an account id "
                "(acct_…), an API key's first characters (svc_api_…) or a machine fingerprint."
            </p>
        }
        .into_any(),
        Results::Refused(why) => view! { <p class="notice" role="alert">{why}</p> }.into_any(),
        Results::Found { searched, hits, .. } if hits.is_empty() => {
            view! { <p role="status">"No licence found for "{searched}"."</p> }.into_any()
        }
        Results::Found {
            searched,
            hits,
            more,
        } => {
            let count = hits.len();
            view! {
                <p role="status">
                    {count}{if count == 1 { " licence" } else { " licences" }}" for "{searched}
                    {more.then_some(" (the first ones: narrow the search to see the rest)")}
                </p>
                <div class="table-wrap">
                    <table class="data">
                        <caption class="visually-hidden">"Licences found"</caption>
                        <thead>
                            <tr>
                                <th scope="col">"Licence"</th>
                                <th scope="col">"E-mail"</th>
                                <th scope="col">"Tier"</th>
                                <th scope="col">"State"</th>
                                <th scope="col">"Expires"</th>
                                <th scope="col">"Account"</th>
                                <th scope="col">"Found by"</th>
                            </tr>
                        </thead>
                        <tbody>
                            {hits
                                .into_iter()
                                .map(|h| {
                                    let href = format!("/console/licenses/{}", h.license_id);
                                    view! {
                                        <tr>
                                            <td data-label="Licence"><a href=href>{h.license_id}</a></td>
                                            <td data-label="E-mail">{h.email}</td>
                                            <td data-label="Tier">{h.tier}</td>
                                            <td data-label="State">{h.state}</td>
                                            <td data-label="Expires">{h.expires}</td>
                                            <td data-label="Account"><code>{h.account_id}</code></td>
                                            <td data-label="Found by">{h.found_by}</td>
                                        </tr>
                                    }
                                })
                                .collect_view()}
                        </tbody>
                    </table>
                </div>
            }
            .into_any()
        }
    };
    view! {
        <section class="card">
            <h1>"Find a customer"</h1>
            <form method="get" action="/console" role="search" class="row-form">
                <label for="q">"E-mail, licence, account, API key or machine"</label>
                <input id="q" name="q" type="search" value=query maxlength="320" autocomplete="off"/>
                <button type="submit">"Search"</button>
            </form>
            {below}
        </section>
    }
    .into_any()
}
