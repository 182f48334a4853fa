//! Token-budgeted context for a session (its history and the sessions it continues) or a
//! task, in three steps:
//!
//! - gathering (`gather`, the session mode's history in `recent`): what is read from the
//!   store — a task's relevant turns, the project's beliefs and memories, the scope's sessions,
//!   their history, files, decisions and belief links — into one set of inputs;
//! - ranking (`rank`): the order each section's candidates are offered in — decisions by
//!   the task's words, beliefs and memories by relevance × conviction/confidence, a session's
//!   history newest first;
//! - rendering and fitting: candidates become `line`s with their costs (`candidates`), the
//!   budget is split between the `section`s, each takes what fits its share (the history in
//!   `history`) and the text is built and counted once (`fit`).
//!
//! A task's history is the operations turn search ranks most relevant to it, each with the
//! reply or result after it, grouped by session under the session's date
//! ([`crate::recall::relevant`]); its sessions (those of the hits, then those
//! `POST /v1/sessions/search` finds) scope files, decisions and memory. Without relevant
//! operations a task falls back to the related sessions' newest history, as a session does.
//! The budget is split per [`Allocation`](crate::domain::budget::Allocation) (framing is
//! paid from the overhead share; what it leaves is content's); the session mode's history is
//! collected newest-first until its share is spent and presented oldest-first, the newest
//! item always present (cut to fit); files are listed once, each naming the first three
//! sessions that touched it and counting the rest. Stored per-operation token counts drive selection; framing is tokenised per request
//! and the final text is counted once, so `tokens_used` is exact and never above the budget.

mod candidates;
mod fit;
mod gather;
mod history;
mod line;
mod rank;
mod recent;
mod request;
mod section;

pub use fit::{encoding_name, Context};
pub use gather::MAX_SESSIONS;
pub use rank::terms;
pub use request::{Finder, Request, MAX_TASK_CHARS};
pub use section::Section;

pub use crate::recall::scope::ScopeSession;

use crate::domain::budget;
use crate::error::ApiResult;
use crate::graph::Store;

/// Assembles the context. `session_not_found` when `session_id` names no session of the
/// project.
pub async fn assemble(store: &Store, req: &Request<'_>) -> ApiResult<Context> {
    // On the heap: the search futures it awaits are large for a request's stack.
    Box::pin(assemble_boxed(store, req)).await
}

async fn assemble_boxed(store: &Store, req: &Request<'_>) -> ApiResult<Context> {
    let started = std::time::Instant::now();
    let plan = budget::plan(req.budget, &req.allocation);
    let inputs = gather::gather(store, req, plan.text, started).await?;
    let listed = candidates::listed(req, plan.text, &inputs);
    let context = fit::fit(req, plan, &inputs, &listed);
    let t = inputs.timings;
    tracing::debug!(
        project = %req.project,
        budget_tokens = req.budget,
        tokens_used = context.tokens_used,
        sessions = inputs.sessions.len(),
        scope_ms = t.scope_ms,
        history_ms = t.history_ms,
        fetched_ms = t.fetched_ms,
        duration_ms = started.elapsed().as_millis() as u64,
        "context assembled"
    );
    Ok(context)
}
