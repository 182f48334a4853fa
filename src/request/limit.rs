//! How many items a list answers with: at least 1, at most the list's maximum, its default
//! when the request does not say. One rule per list, whichever door asks; a number out of
//! range is refused (`invalid_limit`), never quietly clamped.

use crate::error::{ApiError, ApiResult, Code};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limit {
    pub default: usize,
    pub max: usize,
}

impl Limit {
    /// Sessions found by a session search.
    pub const SESSIONS: Self = Self {
        default: 10,
        max: 50,
    };
    /// Turns found by a turn search.
    pub const TURNS: Self = Self {
        default: 10,
        max: 50,
    };
    /// Beliefs listed.
    pub const BELIEFS: Self = Self {
        default: 200,
        max: 1_000,
    };
    /// Decisions listed for a subject or a project.
    pub const DECISIONS: Self = Self {
        default: 100,
        max: 1_000,
    };

    /// The limit asked for, checked; the error names `field`.
    pub fn parse(self, field: &str, value: Option<i64>) -> ApiResult<usize> {
        match value {
            None => Ok(self.default),
            Some(n) if (1..=self.max as i64).contains(&n) => Ok(n as usize),
            Some(_) => Err(ApiError::invalid(
                Code::InvalidLimit,
                field,
                format!("`{field}` is between 1 and {}", self.max),
            )),
        }
    }
}

impl Limit {
    /// The same rule for a command-line flag.
    pub fn from_flag(self, raw: &str) -> Result<usize, String> {
        let n = super::whole_number(raw)?;
        self.parse("limit", Some(n))
            .map_err(|e| e.public_message().to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_default_and_refuse_what_is_out_of_range() {
        assert_eq!(Limit::SESSIONS.parse("limit", None).unwrap(), 10);
        assert_eq!(Limit::BELIEFS.parse("limit", Some(1_000)).unwrap(), 1_000);
        for bad in [0, -3, 51] {
            let err = Limit::TURNS.parse("limit", Some(bad)).unwrap_err();
            assert_eq!(err.code(), Code::InvalidLimit);
            assert_eq!(err.field(), Some("limit"));
        }
        assert_eq!(Limit::TURNS.from_flag("7"), Ok(7));
        assert!(Limit::TURNS
            .from_flag("70")
            .unwrap_err()
            .contains("between 1 and 50"));
    }
}
