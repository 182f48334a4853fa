//! A session as recall draws on it: what context, search and a task's history need of it.

use serde::Deserialize;

/// A session the context may draw on (read with search hits, the scope of a context).
#[derive(Clone, Debug, Deserialize)]
pub struct ScopeSession {
    pub id: String,
    pub task: Option<String>,
    pub status: String,
    pub summary: Option<String>,
    pub llm_summary: Option<String>,
    pub started_at: i64,
    pub last_activity_at: i64,
    pub operation_count: i64,
}
