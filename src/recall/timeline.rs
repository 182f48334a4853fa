//! The project's recent top-level sessions as a timeline: each with the files it touched
//! (written first) and its child sessions, in one statement (the web UI's project page).

use serde::Deserialize;

use super::reconstruction::ChildSession;
use crate::graph::{statement, Store, StoreResult};

/// A top-level session as the web UI's timeline shows it.
#[derive(Clone, Debug, Deserialize)]
pub struct TimelineEntry {
    pub id: String,
    pub agent: Option<String>,
    pub task: Option<String>,
    pub status: String,
    pub summary: Option<String>,
    pub started_at: i64,
    pub last_activity_at: i64,
    pub operations: i64,
    /// Written files first, at most `files`.
    pub files: Vec<String>,
    /// Oldest first, at most `children`.
    pub children: Vec<ChildSession>,
}

/// The `limit` most recently active top-level sessions of `project`, newest first.
pub async fn timeline(
    store: &Store,
    project: &str,
    limit: i64,
    files: i64,
    children: i64,
) -> StoreResult<Vec<TimelineEntry>> {
    store
        .fetch(
            statement(include_str!("../../cypher/sessions_timeline.cypher"))
                .param("project", project)
                .param("limit", limit)
                .param("files", files)
                .param("children", children),
        )
        .await
}
