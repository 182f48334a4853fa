//! The one error table: every failure a client can see is a [`Code`], and a code carries its
//! HTTP status, its stable wire string and a default message that says what to do about it.
//! Driver and internal errors become an opaque 500 (or a 503 when Neo4j is unreachable) whose
//! detail goes to the log, once, where it is rendered ([`ApiError::log`]).

use std::borrow::Cow;

use poem::http::StatusCode;
use serde::Serialize;

/// Declares the error codes: `Variant = STATUS, "wire_code", "default message";`.
macro_rules! error_codes {
    ($( $(#[$doc:meta])* $variant:ident = $status:ident, $code:literal, $message:literal; )*) => {
        /// Every error code a client can see. The wire string and the status never change.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Code {
            $( $(#[$doc])* $variant, )*
        }

        impl Code {
            /// Every code, in table order.
            pub const ALL: &'static [Code] = &[$(Code::$variant),*];

            /// The stable snake_case string clients match on.
            pub const fn as_str(self) -> &'static str {
                match self { $(Code::$variant => $code,)* }
            }

            /// The HTTP status this code is answered with.
            pub const fn status(self) -> StatusCode {
                match self { $(Code::$variant => StatusCode::$status,)* }
            }

            /// What is shown when the failure has no more specific message.
            pub const fn default_message(self) -> &'static str {
                match self { $(Code::$variant => $message,)* }
            }
        }
    };
}

error_codes! {
    // The body as a whole.
    MalformedJson = BAD_REQUEST, "malformed_json", "the body is not valid JSON";
    InvalidBody = BAD_REQUEST, "invalid_body", "the JSON body does not fit the schema (see /docs)";
    UnreadableBody = BAD_REQUEST, "unreadable_body", "the request body could not be read";
    /// A client error poem itself raised that no other code describes.
    BadRequest = BAD_REQUEST, "bad_request", "the request is not valid";
    InvalidParameter = BAD_REQUEST, "invalid_parameter", "a parameter is invalid";
    PayloadTooLarge = PAYLOAD_TOO_LARGE, "payload_too_large", "the request body is too large; send less per request";
    UnsupportedMediaType = UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type", "send the body as application/json";
    // A field that breaks a rule.
    MissingField = BAD_REQUEST, "missing_field", "a required field is missing or empty";
    FieldTooLarge = BAD_REQUEST, "field_too_large", "a field is larger than its limit; shorten it";
    OutOfRange = BAD_REQUEST, "out_of_range", "a number is out of its range";
    EmptyBatch = BAD_REQUEST, "empty_batch", "send at least one operation";
    TooManyOperations = BAD_REQUEST, "too_many_operations", "too many operations in one batch";
    InvalidAllocation = BAD_REQUEST, "invalid_allocation", "the budget allocation is invalid";
    InvalidBeliefRef = BAD_REQUEST, "invalid_belief_ref", "the belief reference is invalid";
    InvalidBookmark = BAD_REQUEST, "invalid_bookmark", "`X-Cairn-Bookmark` holds bookmarks this server did not issue; send back the header's value as it was answered";
    InvalidBudget = BAD_REQUEST, "invalid_budget", "the token budget is out of range";
    InvalidContext = BAD_REQUEST, "invalid_context", "`context` is invalid";
    InvalidEffect = BAD_REQUEST, "invalid_effect", "effect must be `supports` or `contradicts`";
    InvalidEncoding = BAD_REQUEST, "invalid_encoding", "unknown token encoding";
    InvalidEvent = BAD_REQUEST, "invalid_event", "the hook event is invalid";
    InvalidFormat = BAD_REQUEST, "invalid_format", "unknown format";
    InvalidId = BAD_REQUEST, "invalid_id", "ids may not contain control characters";
    InvalidLimit = BAD_REQUEST, "invalid_limit", "the limit is out of range";
    InvalidMaxOperations = BAD_REQUEST, "invalid_max_operations", "`max_operations` is out of range";
    InvalidMaxSessions = BAD_REQUEST, "invalid_max_sessions", "`max_sessions` is out of range";
    InvalidMemoryKind = BAD_REQUEST, "invalid_memory_kind", "unknown memory kind";
    InvalidPath = BAD_REQUEST, "invalid_path", "paths may not contain control characters";
    InvalidProject = BAD_REQUEST, "invalid_project", "a project id may contain only letters, digits, '.', '_' and '-'";
    InvalidRole = BAD_REQUEST, "invalid_role", "role must be `user` or `assistant`";
    InvalidSince = BAD_REQUEST, "invalid_since", "`since` is not a duration like 24h";
    InvalidStatus = BAD_REQUEST, "invalid_status", "unknown status";
    InvalidTimestamp = BAD_REQUEST, "invalid_timestamp", "timestamps are RFC 3339, e.g. 2026-01-31T12:00:00Z";
    InvalidTodoStatus = BAD_REQUEST, "invalid_todo_status", "unknown todo status";
    InvalidTokenLimit = BAD_REQUEST, "invalid_token_limit", "the token limit is out of range";
    InvalidTypes = BAD_REQUEST, "invalid_types", "unknown operation type in `types`";
    // References to things that do not exist.
    UnknownBelief = UNPROCESSABLE_ENTITY, "unknown_belief", "no such belief in this project";
    UnknownSession = UNPROCESSABLE_ENTITY, "unknown_session", "no such session in this project";
    UnknownTriggeredBy = UNPROCESSABLE_ENTITY, "unknown_triggered_by", "`triggered_by` names no operation of this session";
    UnknownOperationType = UNPROCESSABLE_ENTITY, "unknown_operation_type", "unknown operation type";
    // Who may do what.
    Unauthorized = UNAUTHORIZED, "unauthorized", "a valid API key is required: `Authorization: Bearer <key>`";
    Forbidden = FORBIDDEN, "forbidden", "this key may not access that project";
    InsufficientScope = FORBIDDEN, "insufficient_scope", "this key's scope does not allow that";
    RateLimited = TOO_MANY_REQUESTS, "rate_limited", "too many requests for this key; retry later";
    // Things that are not there.
    SessionNotFound = NOT_FOUND, "session_not_found", "session not found in this project";
    DecisionNotFound = NOT_FOUND, "decision_not_found", "decision not found in this project";
    BeliefNotFound = NOT_FOUND, "belief_not_found", "belief not found in this project";
    ExtractionRunNotFound = NOT_FOUND, "extraction_run_not_found", "extraction run not found in this project";
    RouteNotFound = NOT_FOUND, "route_not_found", "no such route; see /docs for the API";
    MethodNotAllowed = METHOD_NOT_ALLOWED, "method_not_allowed", "this route does not accept that method";
    // Stored state says no.
    SessionIdTaken = CONFLICT, "session_id_taken", "this session id is already used; choose another id";
    ExtractionRunning = CONFLICT, "extraction_running", "an extraction run is already running for this project";
    InvalidTransition = CONFLICT, "invalid_transition", "the entity is not in a state that allows this";
    // The server.
    SpoolFull = SERVICE_UNAVAILABLE, "spool_full", "the capture spool is full because Neo4j has been unreachable for a while; nothing was accepted: retry later, and check /readyz and the Neo4j server";
    Neo4jUnavailable = SERVICE_UNAVAILABLE, "neo4j_unavailable", "Neo4j is not reachable right now; retry later and check /readyz";
    Timeout = GATEWAY_TIMEOUT, "timeout", "the request did not finish in time; it is safe to retry";
    Internal = INTERNAL_SERVER_ERROR, "internal_error", "internal error; the server log has the detail";
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A client-visible error: a code, the message shown, the field at fault, and (for server
/// failures) the detail that only the log sees.
#[derive(Debug, thiserror::Error)]
#[error("{code}: {}", detail.as_deref().unwrap_or(message))]
pub struct ApiError {
    code: Code,
    message: Cow<'static, str>,
    field: Option<String>,
    detail: Option<String>,
}

/// The wire shape of every 4xx/5xx body: `{"error": {"code", "message", "field"?, "request_id"?}}`.
#[derive(Debug, Serialize, poem_openapi::Object)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Debug, Serialize, poem_openapi::Object)]
pub struct ErrorDetail {
    /// Stable snake_case code; match on this, not on the message.
    pub code: String,
    /// What went wrong and what to do about it.
    pub message: String,
    /// The request field at fault, as a JSON path (`operations[3].type`).
    #[oai(skip_serializing_if_is_none)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// The request's id (`X-Request-Id`), to find it in the server log.
    #[oai(skip_serializing_if_is_none)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
}

impl ErrorBody {
    /// The body for `code` with `message` and `field`, tagged with the current request's id.
    pub fn new(code: Code, message: impl Into<String>, field: Option<String>) -> Self {
        Self {
            error: ErrorDetail {
                code: code.as_str().to_string(),
                message: message.into(),
                field,
                request_id: crate::telemetry::current_request_id(),
            },
        }
    }
}

/// Codes compare with their wire strings, so tests read as the client sees them.
impl PartialEq<&str> for Code {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl From<Code> for ApiError {
    fn from(code: Code) -> Self {
        Self::new(code)
    }
}

impl ApiError {
    /// `code` with its default message.
    pub fn new(code: Code) -> Self {
        Self {
            code,
            message: Cow::Borrowed(code.default_message()),
            field: None,
            detail: None,
        }
    }

    /// Replaces the message shown to the client.
    pub fn with_message(mut self, message: impl Into<Cow<'static, str>>) -> Self {
        self.message = message.into();
        self
    }

    /// Names the request field at fault.
    pub fn on(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }

    /// A field that breaks the rule `code` names, with what to do about it.
    pub fn invalid(code: Code, field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(code).on(field).with_message(message.into())
    }

    pub fn missing(field: impl Into<String>) -> Self {
        let field = field.into();
        let message = format!("`{field}` is required and must not be empty");
        Self::invalid(Code::MissingField, field, message)
    }

    pub fn too_long(field: impl Into<String>, max: usize, unit: &str) -> Self {
        let field = field.into();
        let message = format!("`{field}` is larger than the limit of {max} {unit}; shorten it");
        Self::invalid(Code::FieldTooLarge, field, message)
    }

    /// `code` names the kind of thing that is missing; `field` the id that named it.
    pub fn not_found(code: Code, field: impl Into<String>) -> Self {
        Self::new(code).on(field)
    }

    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(Code::Unauthorized).with_message(message.into())
    }

    pub fn forbidden() -> Self {
        Self::new(Code::Forbidden)
    }

    /// Anything unexpected: logged with detail, shown opaquely.
    pub fn internal(err: impl std::fmt::Display) -> Self {
        Self {
            detail: Some(err.to_string()),
            ..Self::new(Code::Internal)
        }
    }

    /// Neo4j did not answer in time or refused the connection.
    pub fn unavailable(err: impl std::fmt::Display) -> Self {
        Self {
            detail: Some(err.to_string()),
            ..Self::new(Code::Neo4jUnavailable)
        }
    }

    /// The write was accepted but not applied before the deadline.
    pub fn timeout(what: &str) -> Self {
        Self::new(Code::Timeout).with_message(format!(
            "{what} did not finish in time; it is safe to retry"
        ))
    }

    pub fn code(&self) -> Code {
        self.code
    }

    pub fn status(&self) -> StatusCode {
        self.code.status()
    }

    /// The message shown to the client. Internal detail never leaves the server.
    pub fn public_message(&self) -> &str {
        &self.message
    }

    pub fn field(&self) -> Option<&str> {
        self.field.as_deref()
    }

    /// Logs a server failure's detail (once, where the error is rendered); client errors are
    /// not logged.
    pub fn log(&self, context: &'static str) {
        let detail = self.detail.as_deref().unwrap_or(&self.message);
        match self.code {
            Code::Internal => {
                tracing::error!(error.code = %self.code, error.detail = %detail, "{context}")
            }
            Code::Neo4jUnavailable => {
                tracing::warn!(error.code = %self.code, error.detail = %detail, "neo4j unavailable")
            }
            _ => {}
        }
    }

    pub fn body(&self) -> ErrorBody {
        ErrorBody::new(self.code, self.message.as_ref(), self.field.clone())
    }
}

pub type ApiResult<T> = Result<T, ApiError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_codes_are_unique_snake_case() {
        let mut seen = std::collections::HashSet::new();
        for code in Code::ALL {
            let s = code.as_str();
            assert!(seen.insert(s), "{s} twice");
            assert!(s
                .chars()
                .all(|c| c.is_ascii_lowercase() || c == '_' || c.is_ascii_digit()));
            assert!(code.status().is_client_error() || code.status().is_server_error());
        }
    }

    #[test]
    fn statuses_follow_the_table() {
        assert_eq!(Code::MalformedJson.status(), StatusCode::BAD_REQUEST);
        assert_eq!(
            Code::UnknownBelief.status(),
            StatusCode::UNPROCESSABLE_ENTITY
        );
        assert_eq!(Code::InsufficientScope.status(), StatusCode::FORBIDDEN);
        assert_eq!(
            Code::PayloadTooLarge.status(),
            StatusCode::PAYLOAD_TOO_LARGE
        );
        assert_eq!(Code::SpoolFull.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(Code::Timeout.status(), StatusCode::GATEWAY_TIMEOUT);
    }

    #[test]
    fn internal_detail_stays_in_the_log() {
        let err = ApiError::internal("bolt: connection reset at 10.0.0.3");
        let body = serde_json::to_value(err.body()).unwrap();
        assert_eq!(body["error"]["code"], "internal_error");
        assert!(!body.to_string().contains("10.0.0.3"));
        assert!(err.to_string().contains("10.0.0.3"));
    }
}
