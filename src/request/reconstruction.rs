//! What a reconstruction includes — one default for every door: decisions, reads and
//! writes included, at most 1,000 operations (the most important kept when there are
//! more), 0 to [`MAX_OPERATIONS`] allowed.

use crate::error::{ApiError, ApiResult, Code};
use crate::recall::reconstruction::{Filter, MAX_OPERATIONS};

/// The options asked for, each defaulting to [`Filter::default`].
pub fn reconstruction(
    decisions: Option<bool>,
    reads: Option<bool>,
    writes: Option<bool>,
    max_operations: Option<i64>,
) -> ApiResult<Filter> {
    let d = Filter::default();
    let max_operations = match max_operations {
        None => d.max_operations,
        Some(n) if (0..=MAX_OPERATIONS as i64).contains(&n) => n as usize,
        Some(_) => {
            return Err(ApiError::invalid(
                Code::InvalidMaxOperations,
                "max_operations",
                format!("`max_operations` is between 0 and {MAX_OPERATIONS}"),
            ))
        }
    };
    Ok(Filter {
        decisions: decisions.unwrap_or(d.decisions),
        reads: reads.unwrap_or(d.reads),
        writes: writes.unwrap_or(d.writes),
        max_operations,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_default_and_a_checked_maximum() {
        let f = reconstruction(None, Some(false), None, None).unwrap();
        assert!(f.decisions && !f.reads && f.writes);
        assert_eq!(f.max_operations, 1_000);
        assert_eq!(
            reconstruction(None, None, None, Some(0))
                .unwrap()
                .max_operations,
            0
        );
        let err = reconstruction(None, None, None, Some(MAX_OPERATIONS as i64 + 1)).unwrap_err();
        assert_eq!(err.code(), Code::InvalidMaxOperations);
    }
}
