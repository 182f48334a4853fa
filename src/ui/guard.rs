//! Who is looking: the sign-in behind the request's cookie. The cookie holds a random id
//! (256 bits); only its SHA-256 is stored, with the project, the key, a CSRF token and an
//! expiry ([`crate::graph::ui_sessions`]). Each request reads the sign-in and its key back,
//! so an expired sign-in or a revoked key is refused at once, on any replica.
//!
//! Actions (POST) must carry the sign-in's CSRF token and come from this origin
//! ([`Viewer::check_form`]): the cookie is `SameSite=Strict` too, so a cross-site form never
//! carries it, but neither defence is relied on alone.

use std::sync::Arc;

use poem::http::{header, StatusCode};
use poem::{FromRequest, Request, RequestBody, Response};
use rand::RngCore;
use sha2::{Digest, Sha256};

use crate::auth::{Principal, Scope};
use crate::graph::{now_ms, ui_sessions};
use crate::state::AppState;

/// The cookie's name.
pub const COOKIE: &str = "cairn_ui";

/// A signed-in viewer: one project, the key's scope now.
#[derive(Clone, Debug)]
pub struct Viewer {
    pub project: String,
    pub key_id: String,
    pub scope: Scope,
    /// The token every form of this sign-in carries.
    pub csrf: String,
    /// Digest of the cookie's id (to sign out).
    pub(crate) hash: String,
}

impl Viewer {
    /// The viewer as the API's key checks know it (same project, scope and actor).
    pub fn principal(&self) -> Principal {
        Principal {
            project: Some(self.project.clone()),
            scope: self.scope,
            key_id: Some(self.key_id.clone()),
        }
    }

    pub fn is_admin(&self) -> bool {
        self.scope >= Scope::Admin
    }

    /// Refuses a form that does not carry this sign-in's CSRF token or comes from another
    /// origin (403 page).
    pub fn check_form(&self, req: &Request, token: &str) -> Result<(), Forbidden> {
        if !same_origin(req)
            || !crate::auth::constant_time_eq(token.as_bytes(), self.csrf.as_bytes())
        {
            return Err(Forbidden);
        }
        Ok(())
    }
}

/// A refused action: the form did not come from this sign-in's page (the 403 page is
/// `layout`'s).
#[derive(Debug)]
pub struct Forbidden;

/// True unless the browser says the request came from another site. `Sec-Fetch-Site`, which
/// a page cannot forge, decides when sent (it must be `same-origin`); otherwise `Origin`, when
/// sent, must be this host.
pub fn same_origin(req: &Request) -> bool {
    let text = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok());
    if let Some(site) = text("sec-fetch-site") {
        return site == "same-origin";
    }
    match text(header::ORIGIN.as_str()) {
        None => true,
        Some(origin) => {
            let host = text(header::HOST.as_str()).unwrap_or_default();
            !host.is_empty()
                && (origin == format!("http://{host}") || origin == format!("https://{host}"))
        }
    }
}

/// True when the request reached us over TLS, or a proxy in front says it did.
pub fn over_tls(req: &Request) -> bool {
    req.scheme() == &poem::http::uri::Scheme::HTTPS
        || req
            .headers()
            .get("x-forwarded-proto")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("https"))
}

/// The cookie's value in `req`, if any.
fn cookie(req: &Request) -> Option<String> {
    req.headers()
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value.trim().to_string())
}

fn digest(id: &str) -> String {
    hex::encode(Sha256::digest(id.as_bytes()))
}

fn random_hex() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    hex::encode(bytes)
}

/// Starts a sign-in for `principal` (a checked key of one project); the `Set-Cookie` value.
pub async fn sign_in(
    state: &AppState,
    principal: &Principal,
    tls: bool,
) -> Result<String, crate::error::ApiError> {
    let (Some(project), Some(key_id)) = (&principal.project, &principal.key_id) else {
        return Err(crate::error::ApiError::unauthorized(
            "the web UI needs an API key of a project",
        ));
    };
    let id = random_hex();
    let ttl_secs = state.settings.ui_session_hours.max(1) * 3600;
    ui_sessions::create(
        &state.store,
        &ui_sessions::NewUiSession {
            hash: &digest(&id),
            project,
            key_id,
            csrf: &random_hex(),
            expires_at: now_ms() + (ttl_secs as i64) * 1000,
        },
    )
    .await?;
    Ok(set_cookie(&id, ttl_secs, tls))
}

/// The `Set-Cookie` value carrying `id` for `max_age` seconds (0 clears it).
pub fn set_cookie(id: &str, max_age: u64, tls: bool) -> String {
    let secure = if tls { "; Secure" } else { "" };
    format!("{COOKIE}={id}; Path=/ui; HttpOnly; SameSite=Strict; Max-Age={max_age}{secure}")
}

/// Ends the viewer's sign-in.
pub async fn sign_out(state: &AppState, viewer: &Viewer) -> Result<(), crate::error::ApiError> {
    Ok(ui_sessions::delete(&state.store, &viewer.hash).await?)
}

/// Where a request without a live sign-in goes.
fn to_sign_in() -> poem::Error {
    let resp = Response::builder()
        .status(StatusCode::SEE_OTHER)
        .header(header::LOCATION, "/ui/signin")
        .finish();
    poem::Error::from_response(resp)
}

impl<'a> FromRequest<'a> for Viewer {
    async fn from_request(req: &'a Request, _body: &mut RequestBody) -> poem::Result<Self> {
        let state = req
            .data::<Arc<AppState>>()
            .ok_or_else(|| poem::Error::from_status(StatusCode::INTERNAL_SERVER_ERROR))?;
        let Some(id) = cookie(req).filter(|id| id.len() == 64) else {
            return Err(to_sign_in());
        };
        let hash = digest(&id);
        let found = ui_sessions::get(&state.store, &hash)
            .await
            .map_err(|e| super::failure(e.into()))?;
        let Some(s) = found else {
            return Err(to_sign_in());
        };
        let scope = Scope::parse(&s.scope).ok_or_else(|| {
            super::failure(crate::error::ApiError::internal(
                "stored key has an unknown scope",
            ))
        })?;
        crate::api::trace::record_project(&s.project);
        Ok(Viewer {
            project: s.project,
            key_id: s.key_id,
            scope,
            csrf: s.csrf,
            hash,
        })
    }
}
