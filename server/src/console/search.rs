//! `GET /console`: find a customer.

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde::Deserialize;
use tidemark_domain::console::SearchTerm;
use tidemark_domain::now_millis;

use app::console::search::{search_page, LicenseHit, Results};

use crate::state::AppState;

use super::render;
use super::staff::Staff;

/// Licences a search shows at most.
pub const SEARCH_LIMIT: i64 = 50;

#[derive(Debug, Deserialize)]
pub struct SearchQuery {
    q: Option<String>,
}

pub async fn show_search(
    State(state): State<AppState>,
    staff: Staff,
    Query(query): Query<SearchQuery>,
) -> Response {
    let text = query.q.unwrap_or_default();
    if text.trim().is_empty() {
        let body = search_page("", Results::None);
        return render::page(StatusCode::OK, "Find a customer", Some(&staff), body);
    }
    let term = match SearchTerm::parse(&text) {
        Ok(term) => term,
        Err(why) => {
            let body = search_page(&text, Results::Refused(why));
            return render::page(
                StatusCode::BAD_REQUEST,
                "Find a customer",
                Some(&staff),
                body,
            );
        }
    };
    // What the box shows back: a whole API key pasted by mistake is shown (and kept) only as
    // the prefix that was searched.
    let shown = match &term {
        SearchTerm::ApiKeyPrefix(prefix) => prefix.clone(),
        _ => text.trim().to_owned(),
    };
    let found =
        tidemark_services::console::search(&state.db, &term, SEARCH_LIMIT, &staff.audit).await;
    let (hits, more) = match found {
        Ok(found) => found,
        Err(err) => return super::service_error(err),
    };
    let now = now_millis();
    let hits = hits
        .into_iter()
        .map(|(license, how)| LicenseHit {
            state: license.state(now).as_str().to_owned(),
            expires: app::time::date(license.expires_at),
            tier: license.tier.as_str().to_owned(),
            email: license.email.clone(),
            account_id: license.account_id.to_string(),
            license_id: license.id,
            found_by: how.as_words().to_owned(),
        })
        .collect();
    let results = Results::Found {
        searched: term.describe(),
        hits,
        more,
    };
    render::page(
        StatusCode::OK,
        "Find a customer",
        Some(&staff),
        search_page(&shown, results),
    )
}
