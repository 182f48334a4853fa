//! How errors reach the client: every handler failure is a [`Failure`] whose statuses the
//! route declares ([`Statuses`]: only those it can answer appear in its spec), and [`JsonErrors`] turns whatever poem itself rejects (unknown route,
//! unparsable JSON, wrong content type, oversize body) into the same JSON body.

use std::marker::PhantomData;

use poem::{http::StatusCode, Endpoint, IntoResponse, Middleware, Request, Response, Result};
use poem_openapi::registry::{MetaMediaType, MetaResponse, MetaResponses, Registry};
use poem_openapi::types::Type;
use poem_openapi::ApiResponse;

use crate::error::{ApiError, Code, ErrorBody};

/// A set of error statuses a route can answer with, for its spec. Combine them in tuples:
/// `Handled<T, (Guarded, Body, Missing)>`.
pub trait Statuses: Send + Sync + 'static {
    fn list() -> Vec<u16>;
}

macro_rules! statuses {
    ($( $(#[$doc:meta])* $name:ident = [$($status:literal),*]; )*) => {
        $(
            $(#[$doc])*
            pub struct $name;
            impl Statuses for $name {
                fn list() -> Vec<u16> {
                    vec![$($status),*]
                }
            }
        )*
    };
}

statuses! {
    /// Every `/v1` route: a bad parameter (400), no valid key (401), a key for another project
    /// or scope (403), the key's rate limit (429), a store failure (500) or Neo4j down (503).
    Guarded = [400, 401, 403, 429, 500, 503];
    /// A route with a JSON body: too large (413) or not JSON (415); a bad body is 400.
    Body = [400, 413, 415];
    /// The addressed entity does not exist in the key's project.
    Missing = [404];
    /// The request conflicts with stored state.
    Conflicts = [409];
    /// The body refers to something unknown (`triggered_by`, a belief, another session).
    Unknown = [422];
    /// The write was accepted but not applied in time.
    TimedOut = [504];
    /// The capture spool is full or Neo4j is down.
    Unavailable = [503];
}

macro_rules! tuple_statuses {
    ($($t:ident),+) => {
        impl<$($t: Statuses),+> Statuses for ($($t,)+) {
            fn list() -> Vec<u16> {
                let mut all = Vec::new();
                $(all.extend($t::list());)+
                all.sort_unstable();
                all.dedup();
                all
            }
        }
    };
}
tuple_statuses!(A, B);
tuple_statuses!(A, B, C);
tuple_statuses!(A, B, C, D);
tuple_statuses!(A, B, C, D, E);
tuple_statuses!(A, B, C, D, E, F);

/// A handler's failure: an [`ApiError`] whose possible statuses `S` the spec lists.
pub struct Failure<S> {
    err: ApiError,
    statuses: PhantomData<S>,
}

impl<S: Statuses> From<ApiError> for Failure<S> {
    fn from(err: ApiError) -> Self {
        err.log("request failed");
        let status = err.status().as_u16();
        if !S::list().contains(&status) {
            // The spec does not promise this status for the route: a bug to fix in the route's
            // declaration; the answer itself is still the right one.
            tracing::error!(error.code = %err.code(), http.status = status, "status not declared in the route's spec");
        }
        Self {
            err,
            statuses: PhantomData,
        }
    }
}

impl<S: Statuses> From<crate::graph::StoreError> for Failure<S> {
    fn from(err: crate::graph::StoreError) -> Self {
        ApiError::from(err).into()
    }
}

impl<S> From<Failure<S>> for poem::Error {
    fn from(failure: Failure<S>) -> Self {
        poem::Error::from_response(error_response(&failure.err))
    }
}

impl<S: Send> IntoResponse for Failure<S> {
    fn into_response(self) -> Response {
        error_response(&self.err)
    }
}

impl<S: Statuses> ApiResponse for Failure<S> {
    fn meta() -> MetaResponses {
        MetaResponses {
            responses: S::list()
                .into_iter()
                .map(|status| MetaResponse {
                    description: describe(status),
                    status: Some(status),
                    status_range: None,
                    content: vec![MetaMediaType {
                        content_type: "application/json; charset=utf-8",
                        schema: ErrorBody::schema_ref(),
                    }],
                    headers: vec![],
                })
                .collect(),
        }
    }

    fn register(registry: &mut Registry) {
        ErrorBody::register(registry);
    }
}

/// What a status means on any route; the body's `code` says exactly what happened.
fn describe(status: u16) -> &'static str {
    match status {
        400 => "The request is malformed or a field breaks a rule; `field` names it.",
        401 => "Missing or invalid API key.",
        403 => "The key may not do this (another project, or too narrow a scope).",
        404 => "The entity does not exist in this project.",
        409 => "Conflicts with stored state.",
        413 => "The body is larger than the limit.",
        415 => "The body is not `application/json`.",
        422 => {
            "Well-formed, but refers to something unknown (`triggered_by`, a belief, a session)."
        }
        429 => "Too many requests for this key; see Retry-After.",
        500 => "Internal failure; the detail is in the server log.",
        503 => "Neo4j unreachable or the capture spool full; retry later.",
        504 => "The write did not complete in time; it is safe to retry.",
        _ => "An error.",
    }
}

/// A handler's answer: `T`, or an error whose statuses `S` the spec lists.
pub type Handled<T, S> = std::result::Result<T, Failure<S>>;

/// The JSON error response for `err`.
pub fn error_response(err: &ApiError) -> Response {
    body_response(err.status(), &err.body())
}

/// Renders `code` with `message` and `field` as the JSON error body, with the code's status.
pub fn json_error(code: Code, message: &str, field: Option<&str>) -> Response {
    let body = ErrorBody::new(code, message, field.map(str::to_string));
    body_response(code.status(), &body)
}

fn body_response(status: StatusCode, body: &ErrorBody) -> Response {
    Response::builder()
        .status(status)
        .content_type("application/json; charset=utf-8")
        .body(serde_json::to_vec(body).unwrap_or_default())
}

/// Middleware: errors raised by poem (routing, extraction, parsing) become JSON error bodies,
/// and request bodies past `max_body` are refused with 413 before any handler runs.
pub struct JsonErrors {
    pub max_body: usize,
    /// The methods each path serves, for a 405's `Allow` header.
    pub allow: std::sync::Arc<super::allow::AllowTable>,
}

impl<E: Endpoint> Middleware<E> for JsonErrors {
    type Output = JsonErrorsEndpoint<E>;
    fn transform(&self, ep: E) -> Self::Output {
        JsonErrorsEndpoint {
            inner: ep,
            max_body: self.max_body,
            allow: self.allow.clone(),
        }
    }
}

pub struct JsonErrorsEndpoint<E> {
    inner: E,
    max_body: usize,
    allow: std::sync::Arc<super::allow::AllowTable>,
}

impl<E: Endpoint> Endpoint for JsonErrorsEndpoint<E> {
    type Output = Response;

    async fn call(&self, mut req: Request) -> Result<Response> {
        let too_large = || {
            json_error(
                Code::PayloadTooLarge,
                &format!(
                    "the request body is larger than {} bytes; send less per request",
                    self.max_body
                ),
                None,
            )
        };
        let declared = req
            .headers()
            .get(poem::http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<usize>().ok());
        if declared.is_some_and(|n| n > self.max_body) {
            return Ok(too_large());
        }
        if declared != Some(0) && req.method() != poem::http::Method::GET {
            match req.take_body().into_bytes_limit(self.max_body).await {
                Ok(bytes) => req.set_body(bytes),
                Err(poem::error::ReadBodyError::PayloadTooLarge) => return Ok(too_large()),
                Err(_) => return Ok(error_response(&ApiError::new(Code::UnreadableBody))),
            }
        }
        let path = req.uri().path().to_string();
        let mut resp = match self.inner.call(req).await {
            Ok(out) => out.into_response(),
            Err(err) => render(err),
        };
        if resp.status() == StatusCode::METHOD_NOT_ALLOWED {
            if let Some(allow) = self
                .allow
                .allow(&path)
                .and_then(|a| poem::http::HeaderValue::from_str(&a).ok())
            {
                resp.headers_mut().insert(poem::http::header::ALLOW, allow);
            }
        }
        Ok(resp)
    }
}

fn render(err: poem::Error) -> Response {
    use poem_openapi::error::{ContentTypeError, ParseParamError, ParseRequestPayloadError};
    let message = err.to_string();
    if let Some(p) = err.downcast_ref::<ParseParamError>() {
        return json_error(
            Code::InvalidParameter,
            &format!("parameter `{}` is invalid: {}", p.name, p.reason),
            Some(p.name),
        );
    }
    if let Some(p) = err.downcast_ref::<ParseRequestPayloadError>() {
        // Bodies are decoded by `body::JsonBody`, which names the field itself; this is
        // what any other payload type reports.
        return json_error(
            Code::InvalidBody,
            &format!("the body does not fit the schema (see /docs): {}", p.reason),
            None,
        );
    }
    if err.is::<ContentTypeError>() {
        return error_response(&ApiError::new(Code::UnsupportedMediaType));
    }
    let status = err.status();
    let resp = err.into_response();
    let is_json = resp
        .headers()
        .get(poem::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if is_json {
        return resp;
    }
    let code = match status {
        StatusCode::NOT_FOUND => Code::RouteNotFound,
        StatusCode::METHOD_NOT_ALLOWED => Code::MethodNotAllowed,
        StatusCode::PAYLOAD_TOO_LARGE => {
            return json_error(Code::PayloadTooLarge, &message, None);
        }
        s if s.is_client_error() => {
            // Keep poem's own status; the code says only that the request was refused.
            let body = ErrorBody::new(Code::BadRequest, message, None);
            return body_response(s, &body);
        }
        _ => {
            tracing::error!(error = %message, "unhandled server error");
            Code::Internal
        }
    };
    error_response(&ApiError::new(code))
}
