//! The read path: what cairn hands back. [`reconstruction`] rebuilds one session (narrative,
//! operations, decisions, beliefs affected, what was left unfinished); [`context`] assembles
//! token-budgeted context for a session or a task, long-term memory included (a task's
//! history is the relevant operations, chosen by [`relevant`]); [`window`] is
//! the sliding window of a session's recent turns; [`search`] finds related sessions (hybrid
//! BM25 + embeddings); [`turns`] finds single turns (operations, decisions, memories, session
//! summaries); [`handover`] is the wake-up briefing for a new session; [`timeline`] the
//! recent sessions with their files and children; [`logs`]
//! caches sessions' operation logs for reconstruction and context. Budget
//! arithmetic is pure and lives in [`crate::domain::budget`]. Nothing here knows HTTP; the
//! only writers are [`index`] and [`turn_index`], which keep derived search fields (documents,
//! search texts, embeddings with their model).

pub mod context;
pub mod handover;
pub mod index;
pub mod logs;
pub mod prompt;
pub mod rank;
pub mod reconstruction;
pub mod relevant;
pub mod scope;
pub mod search;
pub mod timeline;
pub mod turn_index;
pub mod turns;
pub mod window;

use serde::Deserialize;

use crate::error::{ApiError, ApiResult, Code};
use crate::graph::{statement, Store};

/// A session as the read path sees it.
#[derive(Clone, Debug, Deserialize)]
pub struct SessionHead {
    pub id: String,
    pub agent: Option<String>,
    pub task: Option<String>,
    pub status: String,
    pub summary: Option<String>,
    /// The summary the extraction job wrote with an LLM, when it has run.
    pub llm_summary: Option<String>,
    #[serde(default)]
    pub next_steps: Vec<String>,
    pub started_at: i64,
    pub closed_at: Option<i64>,
    pub last_activity_at: i64,
    pub operation_count: i64,
    pub continues: Option<String>,
}

/// The session `id` of `project`, or `session_not_found` (also for another project's).
pub async fn session(store: &Store, project: &str, id: &str) -> ApiResult<SessionHead> {
    store
        .fetch_one::<SessionHead>(
            statement(include_str!("../../cypher/recall_session.cypher"))
                .param("project", project)
                .param("session_id", id),
        )
        .await?
        .ok_or_else(|| ApiError::not_found(Code::SessionNotFound, "id"))
}
