//! Token budgets for context assembly, as pure functions: how a budget is split between
//! content, the model's response and framing overhead; how the content share is divided
//! between sections (a share a section does not need flows to the others); and dual
//! prioritisation (collect newest-first until a share is spent).

use serde::{Deserialize, Serialize};

/// The smallest budget the context guarantee is made for.
pub const MIN_BUDGET_TOKENS: usize = 16;
/// The largest budget accepted.
pub const MAX_BUDGET_TOKENS: usize = 1_000_000;

/// How a budget is split. The first three are fractions of the whole budget; `history`,
/// `files` and `metadata` are relative weights within the content share.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Allocation {
    pub content: f64,
    pub response: f64,
    pub overhead: f64,
    pub history: f64,
    pub files: f64,
    pub metadata: f64,
}

impl Default for Allocation {
    /// 80 % content and 20 % framing overhead (what framing leaves is content's), so the
    /// whole budget is the context's: `budget_tokens` is what the caller has room for, and a
    /// caller that wants headroom for a reply inside it sets `response`. Content is split
    /// 50/20/30 between history, file references and metadata.
    fn default() -> Self {
        Self {
            content: 0.8,
            response: 0.0,
            overhead: 0.2,
            history: 0.5,
            files: 0.2,
            metadata: 0.3,
        }
    }
}

/// Why an allocation is refused: the field at fault and what is wrong.
#[derive(Debug, PartialEq)]
pub struct AllocationError {
    pub field: &'static str,
    pub message: &'static str,
}

impl Allocation {
    /// Every fraction in 0..=1, the top-level three summing to at most 1, content above 0 and
    /// at least one positive section weight.
    pub fn check(&self) -> Result<(), AllocationError> {
        let fields = [
            ("content", self.content),
            ("response", self.response),
            ("overhead", self.overhead),
            ("history", self.history),
            ("files", self.files),
            ("metadata", self.metadata),
        ];
        for (field, v) in fields {
            if !(0.0..=1.0).contains(&v) {
                return Err(AllocationError {
                    field,
                    message: "each allocation fraction is between 0 and 1",
                });
            }
        }
        if self.content + self.response + self.overhead > 1.0 + 1e-9 {
            return Err(AllocationError {
                field: "content",
                message: "content + response + overhead must not exceed 1",
            });
        }
        if self.content <= 0.0 {
            return Err(AllocationError {
                field: "content",
                message: "content must be above 0",
            });
        }
        if self.history + self.files + self.metadata <= 0.0 {
            return Err(AllocationError {
                field: "history",
                message: "at least one of history, files, metadata must be above 0",
            });
        }
        Ok(())
    }
}

/// What a budget allows the text to hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Tokens the whole text may use: content plus framing (the response share stays free).
    pub text: usize,
    /// Tokens for content before framing is paid for.
    pub content: usize,
}

/// Splits `budget` per `alloc`. `text` never exceeds `budget`.
pub fn plan(budget: usize, alloc: &Allocation) -> Plan {
    let b = budget as f64;
    let content = (b * alloc.content).floor() as usize;
    let text = ((b * (alloc.content + alloc.overhead)).floor() as usize)
        .min(budget)
        .max(content.min(budget));
    Plan { text, content }
}

/// Divides `total` between sections by `weights`, never giving a section more than its
/// `demand`; what a section leaves unused flows to the sections that still want more, in
/// proportion to their weights (water-filling). Sections of weight 0 get only what is left
/// once every weighted section is satisfied.
pub fn distribute(total: usize, weights: &[f64], demands: &[usize]) -> Vec<usize> {
    let n = weights.len().min(demands.len());
    let mut out = vec![0usize; n];
    let mut left = total;
    loop {
        let open: Vec<usize> = (0..n).filter(|&i| out[i] < demands[i]).collect();
        if open.is_empty() || left == 0 {
            break;
        }
        let weighted: Vec<usize> = open.iter().copied().filter(|&i| weights[i] > 0.0).collect();
        let active = if weighted.is_empty() { open } else { weighted };
        let sum: f64 = active
            .iter()
            .map(|&i| weights[i].max(0.0))
            .sum::<f64>()
            .max(f64::MIN_POSITIVE);
        let mut given = 0usize;
        for &i in &active {
            let w = if sum > f64::MIN_POSITIVE {
                weights[i].max(0.0) / sum
            } else {
                1.0 / active.len() as f64
            };
            let share = ((left as f64) * w).floor() as usize;
            let grant = share.min(demands[i] - out[i]);
            out[i] += grant;
            given += grant;
        }
        if given == 0 {
            // Rounding left a few tokens nobody's fraction reaches: hand them out in order.
            for &i in &active {
                let grant = (left - given).min(demands[i] - out[i]);
                out[i] += grant;
                given += grant;
            }
        }
        left -= given;
        if given == 0 {
            break;
        }
    }
    out
}

/// Dual prioritisation, selection half: how many items, taken newest-first from `costs`
/// (already ordered newest first), fit in `share`. Stops at the first that does not fit so
/// the selection is a contiguous run of the newest items.
pub fn take_newest(costs: &[usize], share: usize) -> usize {
    let mut used = 0usize;
    for (i, &c) in costs.iter().enumerate() {
        if used + c > share {
            return i;
        }
        used += c;
    }
    costs.len()
}

/// Ranked selection: takes items in the given order while they fit, skipping ones that do
/// not (a smaller later item may still fit). Returns the indices taken, in order.
pub fn take_ranked(costs: &[usize], share: usize) -> Vec<usize> {
    let mut used = 0usize;
    let mut out = Vec::new();
    for (i, &c) in costs.iter().enumerate() {
        if used + c <= share {
            used += c;
            out.push(i);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn default_gives_the_whole_budget_to_the_text() {
        let a = Allocation::default();
        assert!(a.check().is_ok());
        let p = plan(10_000, &a);
        assert_eq!(p.content, 8_000);
        assert_eq!(p.text, 10_000);
        let reply = Allocation {
            content: 0.6,
            response: 0.2,
            ..a
        };
        assert_eq!(
            plan(10_000, &reply).text,
            8_000,
            "a response share stays free"
        );
    }

    #[test]
    fn bad_allocations_name_the_field() {
        let a = Allocation {
            files: 1.5,
            ..Default::default()
        };
        assert_eq!(a.check().unwrap_err().field, "files");
        let a = Allocation {
            response: 0.5,
            ..Default::default()
        };
        assert_eq!(a.check().unwrap_err().field, "content");
    }

    #[test]
    fn unused_share_flows_to_the_others() {
        // History wants little; files and metadata get what it leaves.
        let out = distribute(1000, &[0.5, 0.2, 0.3], &[100, 10_000, 10_000]);
        assert_eq!(out[0], 100);
        assert!(out[1] + out[2] >= 899, "{out:?}");
        assert!(out[2] > out[1], "weights still order the rest: {out:?}");
        // Everyone satisfied: each gets its demand.
        assert_eq!(
            distribute(1000, &[0.5, 0.2, 0.3], &[10, 20, 30]),
            vec![10, 20, 30]
        );
    }

    #[test]
    fn newest_first_stops_at_the_first_misfit() {
        assert_eq!(take_newest(&[5, 5, 5], 12), 2);
        assert_eq!(take_newest(&[20, 1], 12), 0);
        assert_eq!(take_ranked(&[20, 1, 5], 12), vec![1, 2]);
    }

    proptest! {
        #[test]
        fn distribute_never_overspends(
            total in 0usize..50_000,
            weights in proptest::collection::vec(0.0f64..1.0, 1..6),
            demands in proptest::collection::vec(0usize..20_000, 6),
        ) {
            let out = distribute(total, &weights, &demands);
            prop_assert!(out.iter().sum::<usize>() <= total);
            for (i, o) in out.iter().enumerate() {
                prop_assert!(*o <= demands[i]);
            }
            let want: usize = demands.iter().take(weights.len()).sum();
            if want <= total {
                prop_assert_eq!(out.iter().sum::<usize>(), want);
            } else {
                // Nothing is left idle while someone still wants tokens.
                prop_assert_eq!(out.iter().sum::<usize>(), total);
            }
        }

        #[test]
        fn plan_fits_the_budget(budget in 0usize..MAX_BUDGET_TOKENS) {
            let p = plan(budget, &Allocation::default());
            prop_assert!(p.content <= p.text && p.text <= budget);
        }
    }
}
