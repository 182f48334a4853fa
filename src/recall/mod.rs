//! The read path: what cairn hands back. [`reconstruction`] rebuilds one session (narrative,
//! operations, decisions, beliefs affected, what was left unfinished); [`context`] assembles
//! token-budgeted context for a session or a task, long-term memory included, in three steps
//! (gather from the store, rank each section's candidates, fit them into the budget; a task's
//! history is the relevant operations, chosen by [`relevant`], a long one shown around what
//! bears on the task by [`excerpt`]); [`window`] is
//! the sliding window of a session's recent turns; [`search`] finds related sessions (hybrid
//! BM25 + embeddings); [`turns`] finds single turns (operations, decisions, memories, session
//! summaries), its full-text candidates scored again with the project's own statistics
//! ([`bm25`], counted by [`turn_stats`] and remembered briefly), the turns of a speaker the
//! query names lifted a little ([`speaker`]), the turn after one it answers (the reply to a
//! question on the subject, a call's result: [`answered`]) lifted more by it than other
//! neighbours, a text said again weighed by a few of its copies and searched past
//! ([`repeats`]); a small project the shared vector indexes crowd out is compared in memory,
//! its vectors' signatures held and kept current with what the indexer stores
//! ([`held_vectors`]); [`handover`] is the wake-up briefing for a new session; [`logs`]
//! caches sessions' operation logs for reconstruction and context, [`beliefs`] and
//! [`memories`] a project's active beliefs and its memories for context while their
//! fingerprint stays the same ([`remembered`]); [`touches`] groups the files operations
//! touched into a context's file rows. Budget
//! arithmetic is pure and lives in [`crate::domain::budget`]. Nothing here knows HTTP; the
//! only writers are [`index`] and [`turn_index`], which keep derived search fields (documents,
//! search texts, embeddings with their model); vectors the indexers could not store wait in
//! [`unstored`] for their next pass.

pub mod answered;
pub mod beliefs;
pub mod bm25;
pub mod context;
pub mod excerpt;
pub mod handover;
pub mod held_vectors;
pub mod index;
pub mod logs;
pub mod memories;
pub mod prompt;
pub mod rank;
pub mod reconstruction;
pub mod relevant;
pub mod remembered;
pub mod repeats;
pub mod scope;
pub mod search;
pub mod speaker;
pub mod touches;
pub mod turn_index;
pub mod turn_stats;
pub mod turns;
pub mod unstored;
pub mod window;

use crate::error::{ApiError, ApiResult, Code};
use crate::graph::{sessions, Store};

pub use crate::graph::sessions::SessionHead;

/// The session `id` of `project`, or `session_not_found` (also for another project's).
pub async fn session(store: &Store, project: &str, id: &str) -> ApiResult<SessionHead> {
    sessions::head(store, project, id)
        .await?
        .ok_or_else(|| ApiError::not_found(Code::SessionNotFound, "id"))
}
