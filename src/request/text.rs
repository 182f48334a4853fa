//! Free text that steers the read path: a search query (required, at most
//! [`Query::MAX_CHARS`]) and a context's task (optional, at most [`Task::MAX_CHARS`]); and
//! the token encoding a context is counted in.

use crate::config::Encoding;
use crate::domain::validate;
use crate::error::{ApiError, ApiResult, Code};

/// What a search looks for: trimmed, non-blank. Lucene syntax in it has no effect.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Query(String);

impl Query {
    pub const MAX_CHARS: usize = crate::recall::rank::MAX_QUERY_CHARS;

    pub fn parse(field: &str, raw: &str) -> ApiResult<Self> {
        validate::text(field, raw, Self::MAX_CHARS).map(Self)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The task a context is assembled for: trimmed; blank counts as absent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Task(String);

impl Task {
    pub const MAX_CHARS: usize = crate::recall::context::MAX_TASK_CHARS;

    pub fn parse_opt(field: &str, raw: Option<&str>) -> ApiResult<Option<Self>> {
        Ok(validate::opt_text(field, raw, Self::MAX_CHARS)?.map(Self))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// `o200k_base` or `cl100k_base`; `default` (the server's tokenizer) when absent or blank.
pub fn encoding(field: &str, raw: Option<&str>, default: Encoding) -> ApiResult<Encoding> {
    match raw.map(str::trim) {
        None | Some("") => Ok(default),
        Some("o200k_base") => Ok(Encoding::O200kBase),
        Some("cl100k_base") => Ok(Encoding::Cl100kBase),
        Some(_) => Err(ApiError::invalid(
            Code::InvalidEncoding,
            field,
            format!("`{field}` is `o200k_base` or `cl100k_base`"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_tasks_and_encodings() {
        assert_eq!(
            Query::parse("query", " tokens ").unwrap().as_str(),
            "tokens"
        );
        assert_eq!(
            Query::parse("query", "  ").unwrap_err().code(),
            Code::MissingField
        );
        let long = "x".repeat(Query::MAX_CHARS + 1);
        assert_eq!(
            Query::parse("query", &long).unwrap_err().field(),
            Some("query")
        );
        assert_eq!(Task::parse_opt("task", Some(" ")).unwrap(), None);
        assert_eq!(
            encoding("encoding", Some("cl100k_base"), Encoding::O200kBase).unwrap(),
            Encoding::Cl100kBase
        );
        assert_eq!(
            encoding("encoding", Some("p50k"), Encoding::O200kBase)
                .unwrap_err()
                .code(),
            Code::InvalidEncoding
        );
    }
}
