//! A use case's file as an HTTP response: its type, its name (saved or shown inline), and
//! the page's own Content-Security-Policy when it has one.

use axum::body::Body;
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use tidemark_services::exports::{File, FileBody};

pub fn serve(file: File) -> Response {
    let kind = if file.inline { "inline" } else { "attachment" };
    let disposition = format!("{kind}; filename=\"{}\"", file.filename);
    let body = match file.body {
        FileBody::Bytes(bytes) => Body::from(bytes),
        FileBody::Stream(chunks) => Body::from_stream(chunks),
    };
    let mut res = body.into_response();
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(file.content_type),
    );
    if let Ok(v) = HeaderValue::from_str(&disposition) {
        h.insert(header::CONTENT_DISPOSITION, v);
    }
    if let Some(v) = file.policy.and_then(|p| HeaderValue::from_str(&p).ok()) {
        h.insert(header::CONTENT_SECURITY_POLICY, v);
    }
    res
}
