//! Payment providers' webhooks that make and keep licences. Stripe's is built in
//! (`POST /billing/stripe/events`); another provider drives the admin API instead
//! (docs/vendor-api.md has the recipe).

pub mod stripe;

use axum::routing::post;
use axum::Router;

use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new().route("/billing/stripe/events", post(stripe::receive_event))
}
