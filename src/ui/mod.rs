//! The team's web UI at `/ui`: server-rendered HTML, no script. Every page is a maud template,
//! so every stored value is escaped by construction; plots are inline SVG drawn on the server
//! ([`plot`]); the one stylesheet is embedded in the binary ([`assets`]).
//!
//! Sign-in ([`signin`]) exchanges a project's API key, checked as the API checks it, for an
//! opaque session id in a cookie (failed attempts limited per client address: [`throttle`]); the sign-in lives in Neo4j ([`guard`]), so any replica
//! serves it, and dies when it expires, on sign-out, or when its key is revoked. Pages see
//! only the signed-in key's project and read through the same functions the API handlers
//! call (`recall`, `knowledge`, `graph`); actions are POST forms with a CSRF token and an
//! origin check. Every response carries a strict Content-Security-Policy and framing,
//! sniffing, referrer and caching headers ([`headers`]).
//!
//! One file per page: [`project`], [`session`], [`decisions`], [`beliefs`], [`mod@file`],
//! [`runs`], [`search`]; [`layout`] is the frame and the shared bits of markup.

pub mod assets;
pub mod beliefs;
pub mod decisions;
pub mod file;
pub mod guard;
pub mod headers;
pub mod layout;
pub mod plot;
pub mod project;
pub mod runs;
pub mod search;
pub mod session;
pub mod signin;
pub mod throttle;

use std::sync::Arc;

use poem::{get, post, Endpoint, EndpointExt, IntoResponse, Response, Route};

use crate::error::ApiError;
use crate::state::AppState;

/// What a page handler returns: the page, or an error already rendered as one.
pub type Page = poem::Result<Response>;

/// An error as an HTML page with its status (server failures logged once, here).
pub fn failure(err: ApiError) -> poem::Error {
    err.log("web ui request failed");
    let status = err.status();
    let page = layout::error_page(status, err.public_message());
    poem::Error::from_response((status, page).into_response())
}

/// The `/ui` route tree (nested at `/ui`), its headers on every response.
pub fn routes(state: Arc<AppState>) -> impl Endpoint {
    Route::new()
        .at("/", get(project::page))
        .at("/signin", get(signin::show).post(signin::submit))
        .at("/signout", post(signin::signout))
        .at("/sessions/:id", get(session::page))
        .at("/decisions", get(decisions::page))
        .at("/beliefs", get(beliefs::list))
        .at("/beliefs/:id", get(beliefs::page))
        .at("/beliefs/:id/review", post(beliefs::review))
        .at("/file", get(file::page))
        .at("/runs", get(runs::page))
        .at("/search", get(search::page))
        .at("/assets/cairn.css", get(assets::stylesheet))
        .data(state)
        .catch_all_error(|err: poem::Error| async move {
            if err.is_from_response() {
                return err.into_response();
            }
            let status = err.status();
            let message = if status.is_server_error() {
                "Something went wrong on the server."
            } else if status == poem::http::StatusCode::NOT_FOUND {
                "There is no such page."
            } else {
                "This request cannot be answered."
            };
            (status, layout::error_page(status, message)).into_response()
        })
        .after(|out| async move { Ok(headers::secure(out.unwrap_or_else(|e| e.into_response()))) })
}
