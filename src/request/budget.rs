//! Token budgets. One range wherever a budget is asked for — context, handover, a hook's
//! answer, the knowledge report: [`TokenBudget::MIN`] to [`TokenBudget::MAX`] tokens. What
//! is rendered into a budget never exceeds it. Each use's default is named here; a hook may
//! also ask for 0, which turns that answer off.

use crate::domain::budget::{MAX_BUDGET_TOKENS, MIN_BUDGET_TOKENS};
use crate::error::{ApiError, ApiResult, Code};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct TokenBudget(usize);

impl TokenBudget {
    pub const MIN: usize = MIN_BUDGET_TOKENS;
    pub const MAX: usize = MAX_BUDGET_TOKENS;
    /// The wake-up handover (`GET /v1/handover`, the MCP tool `get_handover`).
    pub const HANDOVER: Self = Self(1_500);
    /// What a Claude Code hook answers SessionStart and PreToolUse with.
    pub const SESSION_START: Self = Self(1_500);
    /// The memory recalled for a prompt at UserPromptSubmit.
    pub const PROMPT: Self = Self(600);
    /// The knowledge report on some files (`GET /v1/knowledge`, `cairn ci`, `get_knowledge`).
    pub const KNOWLEDGE: Self = Self(2_000);

    /// Checks a budget; the error names `field`.
    pub fn parse(field: &str, value: i64) -> ApiResult<Self> {
        if (Self::MIN as i64..=Self::MAX as i64).contains(&value) {
            Ok(Self(value as usize))
        } else {
            Err(ApiError::invalid(
                Code::InvalidBudget,
                field,
                format!("`{field}` is between {} and {}", Self::MIN, Self::MAX),
            ))
        }
    }

    /// `default` when absent.
    pub fn parse_or(field: &str, value: Option<i64>, default: Self) -> ApiResult<Self> {
        value.map_or(Ok(default), |v| Self::parse(field, v))
    }

    /// A hook's budget: `default` when absent, `None` (answer nothing) for 0.
    pub fn parse_switch(field: &str, value: Option<i64>, default: Self) -> ApiResult<Option<Self>> {
        match value {
            Some(0) => Ok(None),
            v => Self::parse_or(field, v, default).map(Some),
        }
    }

    /// The same rule for a command-line flag (`clap`'s `value_parser`).
    pub fn from_flag(raw: &str) -> Result<Self, String> {
        let n = super::whole_number(raw)?;
        Self::parse("budget", n).map_err(|e| e.public_message().to_string())
    }

    pub fn get(self) -> usize {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_range_for_every_budget() {
        assert_eq!(TokenBudget::parse("b", 16).unwrap().get(), 16);
        assert_eq!(TokenBudget::parse("b", 1_000_000).unwrap().get(), 1_000_000);
        for bad in [15, 0, -1, 1_000_001] {
            let err = TokenBudget::parse("budget_tokens", bad).unwrap_err();
            assert_eq!(err.code(), Code::InvalidBudget);
            assert_eq!(err.field(), Some("budget_tokens"));
        }
        assert_eq!(
            TokenBudget::parse_or("b", None, TokenBudget::HANDOVER).unwrap(),
            TokenBudget::HANDOVER
        );
        assert_eq!(
            TokenBudget::parse_switch("b", Some(0), TokenBudget::PROMPT).unwrap(),
            None
        );
        assert!(TokenBudget::parse_switch("b", Some(8), TokenBudget::PROMPT).is_err());
        assert_eq!(TokenBudget::from_flag(" 300 ").unwrap().get(), 300);
        assert!(TokenBudget::from_flag("3k").is_err());
        assert!(TokenBudget::from_flag("3")
            .unwrap_err()
            .contains("between 16"));
    }
}
