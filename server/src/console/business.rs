//! `GET /console/business`: the business at a glance, for every staff role; and each of its
//! tables as CSV (`/console/business/{slug}.csv`).

use axum::extract::{Path, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use app::console::business::{business_page, tables};

use crate::state::AppState;

use super::render;
use super::staff::Staff;

pub async fn show_business(State(state): State<AppState>, staff: Staff) -> Response {
    match tidemark_services::business::business(&state.db, &staff.audit).await {
        Ok(b) => render::page(
            StatusCode::OK,
            "The business",
            Some(&staff),
            business_page(b),
        ),
        Err(err) => super::service_error(err),
    }
}

pub async fn download_table(
    State(state): State<AppState>,
    staff: Staff,
    Path(file): Path<String>,
) -> Response {
    let Some(slug) = file.strip_suffix(".csv") else {
        return render::not_found();
    };
    let business = match tidemark_services::business::business(&state.db, &staff.audit).await {
        Ok(b) => b,
        Err(err) => return super::service_error(err),
    };
    let Some(table) = tables(&business).into_iter().find(|t| t.slug == slug) else {
        return render::not_found();
    };
    let body = tidemark_services::exports::table_csv(&table.heads, &table.rows);
    let mut res = (StatusCode::OK, body).into_response();
    let headers = res.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/csv; charset=utf-8"),
    );
    if let Ok(v) = HeaderValue::from_str(&format!(
        "attachment; filename=\"tidemark-{slug}-{}.csv\"",
        app::time::date(business.now)
    )) {
        headers.insert(header::CONTENT_DISPOSITION, v);
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    res
}
