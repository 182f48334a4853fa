//! How errors reach the client: every handler failure is an [`ApiFailure`] (documented in the
//! spec per status), and [`JsonErrors`] turns whatever poem itself rejects (unknown route,
//! unparsable JSON, wrong content type, oversize body) into the same JSON body.

use poem::{http::StatusCode, Endpoint, IntoResponse, Middleware, Request, Response, Result};
use poem_openapi::{payload::Json, ApiResponse};

use crate::error::{ApiError, ErrorBody, ErrorDetail};

/// The error responses of every route; the body is always `{"error": {code, message, field?}}`.
#[derive(ApiResponse, Debug)]
pub enum ApiFailure {
    /// The request is malformed or a field breaks a rule; `field` names it.
    #[oai(status = 400)]
    BadRequest(Json<ErrorBody>),
    /// Missing or invalid API key.
    #[oai(status = 401)]
    Unauthorized(Json<ErrorBody>),
    /// The key may not do this.
    #[oai(status = 403)]
    Forbidden(Json<ErrorBody>),
    /// The entity does not exist in this project.
    #[oai(status = 404)]
    NotFound(Json<ErrorBody>),
    /// Conflicts with stored state (an id already used elsewhere).
    #[oai(status = 409)]
    Conflict(Json<ErrorBody>),
    /// The body is larger than the limit.
    #[oai(status = 413)]
    PayloadTooLarge(Json<ErrorBody>),
    /// The body is not `application/json`.
    #[oai(status = 415)]
    UnsupportedMediaType(Json<ErrorBody>),
    /// Well-formed, but refers to something unknown (`triggered_by`, a belief).
    #[oai(status = 422)]
    Unprocessable(Json<ErrorBody>),
    /// Too many requests; see Retry-After.
    #[oai(status = 429)]
    TooManyRequests(Json<ErrorBody>),
    /// Internal failure; detail is in the server log.
    #[oai(status = 500)]
    Internal(Json<ErrorBody>),
    /// Neo4j unreachable or the spool full; retry later.
    #[oai(status = 503)]
    Unavailable(Json<ErrorBody>),
    /// The write did not complete in time; it is safe to retry.
    #[oai(status = 504)]
    Timeout(Json<ErrorBody>),
}

impl From<ApiError> for ApiFailure {
    fn from(err: ApiError) -> Self {
        match &err {
            ApiError::Internal(detail) => tracing::error!(error.detail = %detail, "request failed"),
            ApiError::Unavailable(detail) => {
                tracing::warn!(error.detail = %detail, "neo4j unavailable")
            }
            _ => {}
        }
        let body = Json(err.body());
        match err.status().as_u16() {
            400 => Self::BadRequest(body),
            401 => Self::Unauthorized(body),
            403 => Self::Forbidden(body),
            404 => Self::NotFound(body),
            409 => Self::Conflict(body),
            413 => Self::PayloadTooLarge(body),
            415 => Self::UnsupportedMediaType(body),
            422 => Self::Unprocessable(body),
            429 => Self::TooManyRequests(body),
            503 => Self::Unavailable(body),
            504 => Self::Timeout(body),
            _ => Self::Internal(body),
        }
    }
}

impl From<crate::graph::StoreError> for ApiFailure {
    fn from(err: crate::graph::StoreError) -> Self {
        ApiError::from(err).into()
    }
}

pub type Handled<T> = std::result::Result<T, ApiFailure>;

/// Renders `code`/`message`/`field` with a status as the JSON error body.
pub fn json_error(status: StatusCode, code: &str, message: &str, field: Option<&str>) -> Response {
    let body = ErrorBody {
        error: ErrorDetail {
            code: code.into(),
            message: message.into(),
            field: field.map(str::to_string),
        },
    };
    Response::builder()
        .status(status)
        .content_type("application/json")
        .body(serde_json::to_vec(&body).unwrap_or_default())
}

/// Middleware: errors raised by poem (routing, extraction, parsing) become JSON error bodies,
/// and request bodies past `max_body` are refused with 413 before any handler runs.
pub struct JsonErrors {
    pub max_body: usize,
}

impl<E: Endpoint> Middleware<E> for JsonErrors {
    type Output = JsonErrorsEndpoint<E>;
    fn transform(&self, ep: E) -> Self::Output {
        JsonErrorsEndpoint {
            inner: ep,
            max_body: self.max_body,
        }
    }
}

pub struct JsonErrorsEndpoint<E> {
    inner: E,
    max_body: usize,
}

impl<E: Endpoint> Endpoint for JsonErrorsEndpoint<E> {
    type Output = Response;

    async fn call(&self, mut req: Request) -> Result<Response> {
        let too_large = || {
            json_error(
                StatusCode::PAYLOAD_TOO_LARGE,
                "payload_too_large",
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
                Err(_) => {
                    return Ok(json_error(
                        StatusCode::BAD_REQUEST,
                        "unreadable_body",
                        "the request body could not be read",
                        None,
                    ))
                }
            }
        }
        match self.inner.call(req).await {
            Ok(out) => Ok(out.into_response()),
            Err(err) => Ok(render(err)),
        }
    }
}

fn render(err: poem::Error) -> Response {
    use poem_openapi::error::{ContentTypeError, ParseParamError, ParseRequestPayloadError};
    let message = err.to_string();
    if let Some(p) = err.downcast_ref::<ParseParamError>() {
        return json_error(
            StatusCode::BAD_REQUEST,
            "invalid_parameter",
            &format!("parameter `{}` is invalid: {}", p.name, p.reason),
            Some(p.name),
        );
    }
    if let Some(p) = err.downcast_ref::<ParseRequestPayloadError>() {
        // Bodies are decoded by `body::JsonBody`, which names the field itself; this is
        // what any other payload type reports.
        return json_error(
            StatusCode::BAD_REQUEST,
            "invalid_body",
            &format!("the body does not fit the schema (see /docs): {}", p.reason),
            None,
        );
    }
    if err.is::<ContentTypeError>() {
        return json_error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "send the body as application/json",
            None,
        );
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
    let (code, text) = match status {
        StatusCode::NOT_FOUND => (
            "route_not_found",
            "no such route; see /docs for the API".to_string(),
        ),
        StatusCode::METHOD_NOT_ALLOWED => (
            "method_not_allowed",
            "this route does not accept that method".to_string(),
        ),
        StatusCode::PAYLOAD_TOO_LARGE => ("payload_too_large", message),
        s if s.is_client_error() => ("bad_request", message),
        _ => {
            tracing::error!(error = %message, "unhandled server error");
            (
                "internal_error",
                "internal error; the server log has the detail".to_string(),
            )
        }
    };
    json_error(status, code, &text, None)
}
