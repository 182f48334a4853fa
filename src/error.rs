//! The one error table: every failure a client can see has a stable code, an HTTP status and a
//! message that says what to do about it. Driver and internal errors become an opaque 500 (or a
//! 503 when Neo4j is unreachable) whose detail goes to the log, once, where it is rendered.

use poem::http::StatusCode;
use serde::Serialize;

/// A client-visible error. Construct with the helpers below so codes stay stable.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The request is well-formed JSON but a field breaks a rule.
    #[error("{message}")]
    Invalid {
        code: &'static str,
        message: String,
        field: Option<String>,
    },
    /// A referenced entity does not exist (or belongs to another project, which we do not reveal).
    #[error("{what} not found")]
    NotFound {
        what: &'static str,
        field: Option<String>,
    },
    /// The request conflicts with stored state.
    #[error("{message}")]
    Conflict {
        code: &'static str,
        message: String,
        field: Option<String>,
    },
    /// No valid API key.
    #[error("unauthorized: {0}")]
    Unauthorized(String),
    /// The key may not touch this project. Same answer whether or not the project exists.
    #[error("forbidden")]
    Forbidden,
    /// The local spool is at its size limit; nothing was accepted.
    #[error("the capture spool is full")]
    SpoolFull,
    /// Neo4j did not answer in time or refused the connection.
    #[error("neo4j unavailable: {0}")]
    Unavailable(String),
    /// The write was accepted but not applied before the deadline.
    #[error("timed out waiting for {0}")]
    Timeout(&'static str),
    /// Anything else: logged with detail, shown opaquely.
    #[error("internal error: {0}")]
    Internal(String),
}

/// The wire shape of every 4xx/5xx body: `{"error": {"code", "message", "field"?}}`.
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
}

impl ApiError {
    pub fn invalid(
        code: &'static str,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self::Invalid {
            code,
            message: message.into(),
            field: Some(field.into()),
        }
    }

    pub fn missing(field: impl Into<String>) -> Self {
        let field = field.into();
        Self::Invalid {
            code: "missing_field",
            message: format!("`{field}` is required and must not be empty"),
            field: Some(field),
        }
    }

    pub fn too_long(field: impl Into<String>, max: usize, unit: &str) -> Self {
        let field = field.into();
        Self::Invalid {
            code: "field_too_large",
            message: format!("`{field}` is larger than the limit of {max} {unit}; shorten it"),
            field: Some(field),
        }
    }

    pub fn not_found(what: &'static str, field: impl Into<String>) -> Self {
        Self::NotFound {
            what,
            field: Some(field.into()),
        }
    }

    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::Unauthorized(message.into())
    }

    pub fn forbidden() -> Self {
        Self::Forbidden
    }

    pub fn internal(err: impl std::fmt::Display) -> Self {
        Self::Internal(err.to_string())
    }

    pub fn status(&self) -> StatusCode {
        match self {
            Self::Invalid { code, .. } if *code == "malformed_json" => StatusCode::BAD_REQUEST,
            Self::Invalid { code, .. } if *code == "payload_too_large" => {
                StatusCode::PAYLOAD_TOO_LARGE
            }
            Self::Invalid { code, .. } if code.starts_with("unknown_") => {
                StatusCode::UNPROCESSABLE_ENTITY
            }
            Self::Invalid { code, .. } if *code == "insufficient_scope" => StatusCode::FORBIDDEN,
            Self::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            Self::Forbidden => StatusCode::FORBIDDEN,
            Self::Invalid { .. } => StatusCode::BAD_REQUEST,
            Self::NotFound { .. } => StatusCode::NOT_FOUND,
            Self::Conflict { .. } => StatusCode::CONFLICT,
            Self::SpoolFull | Self::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            Self::Timeout(_) => StatusCode::GATEWAY_TIMEOUT,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            Self::Invalid { code, .. } | Self::Conflict { code, .. } => code,
            Self::NotFound { what, .. } => match *what {
                "session" => "session_not_found",
                "decision" => "decision_not_found",
                "belief" => "belief_not_found",
                "extraction run" => "extraction_run_not_found",
                "route" => "route_not_found",
                _ => "not_found",
            },
            Self::Unauthorized(_) => "unauthorized",
            Self::Forbidden => "forbidden",
            Self::SpoolFull => "spool_full",
            Self::Unavailable(_) => "neo4j_unavailable",
            Self::Timeout(_) => "timeout",
            Self::Internal(_) => "internal_error",
        }
    }

    /// The message shown to the client. Internal detail never leaves the server.
    pub fn public_message(&self) -> String {
        match self {
            Self::Invalid { message, .. } | Self::Conflict { message, .. } => message.clone(),
            Self::NotFound { what, .. } => format!("{what} not found in this project"),
            Self::Unauthorized(message) => message.clone(),
            Self::Forbidden => "this key may not access that project".into(),
            Self::SpoolFull => {
                "the capture spool is full because Neo4j has been unreachable for a while; \
                 nothing was accepted: retry later, and check /readyz and the Neo4j server"
                    .into()
            }
            Self::Unavailable(_) => {
                "Neo4j is not reachable right now; retry later and check /readyz".into()
            }
            Self::Timeout(what) => format!("{what} did not finish in time; it is safe to retry"),
            Self::Internal(_) => "internal error; the server log has the detail".into(),
        }
    }

    pub fn field(&self) -> Option<&str> {
        match self {
            Self::Invalid { field, .. }
            | Self::NotFound { field, .. }
            | Self::Conflict { field, .. } => field.as_deref(),
            _ => None,
        }
    }

    pub fn body(&self) -> ErrorBody {
        ErrorBody {
            error: ErrorDetail {
                code: self.code().to_string(),
                message: self.public_message(),
                field: self.field().map(str::to_string),
            },
        }
    }
}

pub type ApiResult<T> = Result<T, ApiError>;
