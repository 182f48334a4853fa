//! Signing in with an API key and out again. The key is posted in a form (never in a URL),
//! checked exactly as the API checks a bearer key ([`crate::auth::Authenticator`]), and
//! exchanged for a sign-in cookie ([`super::guard::sign_in`]); it is not stored, echoed or
//! logged. Failed attempts count against the client's address ([`super::throttle`]).

use std::sync::Arc;

use maud::html;
use poem::http::{header, StatusCode};
use poem::web::{Data, Form};
use poem::{handler, IntoResponse, Request, Response};
use serde::Deserialize;

use super::guard::{self, Viewer};
use super::layout;
use super::Page;
use crate::state::AppState;

/// Longest key accepted in the form (a key is 87 characters).
const MAX_KEY_CHARS: usize = 200;

fn form_page(status: StatusCode, message: Option<&str>) -> Response {
    let body = html! {
        p { "Sign in with an API key of your project. A " b { "read" } " key shows everything; an "
            b { "admin" } " key may also approve and reject beliefs." }
        @if let Some(m) = message {
            p.error role="alert" { (m) }
        }
        form.signin method="post" action="/ui/signin" {
            label for="key" { "API key" }
            input #key type="password" name="key" required autocomplete="off"
                maxlength=(MAX_KEY_CHARS) spellcheck="false" autofocus;
            button type="submit" { "Sign in" }
        }
        p.hint { "No key yet? " code { "cairn keys create --project <project> --scope read" } }
    };
    (status, layout::bare("Sign in", body)).into_response()
}

/// `GET /ui/signin`.
#[handler]
pub fn show() -> Response {
    form_page(StatusCode::OK, None)
}

#[derive(Deserialize)]
pub struct SignInForm {
    key: String,
}

/// `POST /ui/signin`: checks the key, starts a sign-in, goes to the project.
#[handler]
pub async fn submit(
    req: &Request,
    state: Data<&Arc<AppState>>,
    Form(form): Form<SignInForm>,
) -> Page {
    if !guard::same_origin(req) {
        return Err(guard::Forbidden.into());
    }
    let addr = req.remote_addr().as_socket_addr().map(|a| a.ip());
    let throttle = &state.signin_throttle;
    if let Some(wait) = addr.and_then(|a| throttle.blocked(a)) {
        metrics::counter!("cairn_ui_signin_throttled_total").increment(1);
        let mut page = form_page(
            StatusCode::TOO_MANY_REQUESTS,
            Some(&format!(
                "Too many failed sign-ins from your address. Try again in {wait} s."
            )),
        );
        page.headers_mut().insert(
            header::RETRY_AFTER,
            header::HeaderValue::from_str(&wait.to_string()).expect("digits"),
        );
        return Ok(page);
    }
    let refuse = |message: &str| {
        if let Some(a) = addr {
            throttle.failed(a);
        }
        Ok(form_page(StatusCode::UNAUTHORIZED, Some(message)))
    };
    let key = form.key.trim();
    if key.is_empty() || key.chars().count() > MAX_KEY_CHARS {
        return refuse("That is not an API key.");
    }
    let principal = match state
        .auth
        .authenticate(Some(&format!("Bearer {key}")))
        .await
    {
        Ok(p) if p.project.is_some() => p,
        Ok(_) => return refuse("The web UI needs an API key of a project."),
        Err(err) if err.status() == StatusCode::UNAUTHORIZED => {
            return refuse("Unknown or revoked API key.")
        }
        Err(err) => return Err(super::failure(err)),
    };
    let cookie = guard::sign_in(&state, &principal, guard::over_tls(req))
        .await
        .map_err(super::failure)?;
    tracing::info!(
        key.id = principal.key_id.as_deref().unwrap_or(""),
        project = principal.project.as_deref().unwrap_or(""),
        "web ui sign-in"
    );
    Ok(Response::builder()
        .status(StatusCode::SEE_OTHER)
        .header(header::SET_COOKIE, cookie)
        .header(header::LOCATION, "/ui")
        .finish())
}

#[derive(Deserialize)]
pub struct ActionForm {
    pub csrf: String,
}

/// `POST /ui/signout`: ends the sign-in and clears the cookie.
#[handler]
pub async fn signout(
    req: &Request,
    state: Data<&Arc<AppState>>,
    viewer: Viewer,
    Form(form): Form<ActionForm>,
) -> Page {
    viewer.check_form(req, &form.csrf)?;
    guard::sign_out(&state, &viewer)
        .await
        .map_err(super::failure)?;
    Ok(Response::builder()
        .status(StatusCode::SEE_OTHER)
        .header(
            header::SET_COOKIE,
            guard::set_cookie("", 0, guard::over_tls(req)),
        )
        .header(header::LOCATION, "/ui/signin")
        .finish())
}
