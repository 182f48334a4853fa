//! The context a SessionStart hook (and the MCP `get_handover` tool) hands back: the wake-up
//! handover (`recall::handover`: last session and its unfinished work, related sessions,
//! patterns, suggested next steps) followed by the decisions in force, as Markdown within a
//! token budget. Read-only.

use crate::app::AppState;
use crate::domain::tokens;
use crate::graph::{decisions, StoreResult};
use crate::recall::handover;
use crate::recall::search::Weights;

/// Default token budget of the SessionStart context.
pub const DEFAULT_BUDGET_TOKENS: usize = 1_500;
/// Largest budget a caller may ask for.
pub const MAX_BUDGET_TOKENS: usize = 32_000;

/// The handover Markdown for a session starting in `project`; empty when nothing is known.
pub async fn session_start(
    state: &AppState,
    project: &str,
    session_id: &str,
    budget_tokens: usize,
) -> StoreResult<String> {
    let encoding = state.settings.tokenizer;
    let inputs = handover::Inputs {
        embedder: state.embedder.as_deref(),
        weights: Weights::from(&state.settings.search),
        encoding,
    };
    let current = (!session_id.is_empty()).then_some(session_id);
    let budget = budget_tokens.clamp(handover::MIN_BUDGET, handover::MAX_BUDGET);
    let h = handover::build(&state.store, &inputs, project, current, budget).await?;
    let standing: Vec<_> = decisions::list(
        &state.store,
        project,
        &decisions::DecisionFilter {
            limit: 20,
            ..Default::default()
        },
    )
    .await?
    .into_iter()
    .filter(|d| d.superseded_by.is_none())
    .take(8)
    .collect();
    if h.last_session.is_none() && h.related.is_empty() && standing.is_empty() {
        return Ok(String::new());
    }
    let mut md = h.markdown;
    if !standing.is_empty() {
        md.push_str("\n\n### Decisions in force\n");
        for d in standing {
            md.push_str(&format!(
                "- **{}**: {} — {}\n",
                d.subject, d.choice, d.rationale
            ));
        }
    }
    Ok(tokens::truncate(encoding, &md, budget_tokens))
}
