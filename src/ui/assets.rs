//! What the UI serves besides pages, embedded in the binary: the stylesheet.

use poem::http::header;
use poem::{handler, IntoResponse, Response};

const STYLESHEET: &str = include_str!("assets/cairn.css");

/// `GET /ui/assets/cairn.css`.
#[handler]
pub fn stylesheet() -> Response {
    STYLESHEET
        .with_content_type("text/css; charset=utf-8")
        .with_header(header::CACHE_CONTROL, "public, max-age=300")
        .into_response()
}
