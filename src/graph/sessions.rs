//! Sessions: start (with the links of a child session to its parent and to the operation
//! that launched it), close, look up, and the idle sweep.

use serde::{Deserialize, Serialize};

use super::{now_ms, statement, Store, StoreResult, Tx};
use crate::domain::{
    record::{NewClose, NewSession},
    turn_text,
};

/// A session as stored.
#[derive(Clone, Debug, Serialize, Deserialize, poem_openapi::Object)]
pub struct SessionRow {
    pub id: String,
    pub project: String,
    pub agent: Option<String>,
    pub task: Option<String>,
    pub cwd: Option<String>,
    pub status: String,
    pub summary: Option<String>,
    pub next_steps: Vec<String>,
    /// Epoch milliseconds.
    pub started_at: i64,
    pub closed_at: Option<i64>,
    pub last_activity_at: i64,
    pub operation_count: i64,
    pub continues: Option<String>,
    /// A child session (a subagent's work): the session that launched it.
    #[serde(default)]
    pub parent: Option<String>,
    /// A child session: the operation (Task/Agent tool call) that launched it.
    #[serde(default)]
    pub spawned_by: Option<String>,
    /// A child session: the kind of subagent.
    #[serde(default)]
    pub agent_type: Option<String>,
}

pub async fn start(tx: &mut Tx, cmd: &NewSession) -> StoreResult<()> {
    tx.run(
        statement(include_str!("../../cypher/session_start.cypher"))
            .param("id", cmd.id.as_str())
            .param("project", cmd.project.as_str())
            .param("agent", cmd.agent.clone())
            .param("task", cmd.task.clone())
            .param("cwd", cmd.cwd.clone())
            .param("continues", cmd.continues.clone().unwrap_or_default())
            .param("parent", cmd.parent.clone())
            .param("spawned_by", cmd.spawned_by.clone())
            .param("agent_type", cmd.agent_type.clone())
            .param("at", cmd.at),
    )
    .await
}

pub async fn close(tx: &mut Tx, cmd: &NewClose) -> StoreResult<()> {
    tx.run(
        statement(include_str!("../../cypher/session_close.cypher"))
            .param("id", cmd.id.as_str())
            .param("project", cmd.project.as_str())
            .param("status", cmd.status.as_str())
            .param("summary", cmd.summary.clone())
            .param("next_steps", cmd.next_steps.clone())
            .param(
                "search_text",
                turn_text::session_summary(cmd.summary.as_deref(), &cmd.next_steps),
            )
            .param("at", cmd.at),
    )
    .await
}

/// The session with this id, whatever its project (callers check the project).
pub async fn get(store: &Store, id: &str) -> StoreResult<Option<SessionRow>> {
    store
        .fetch_one(statement(include_str!("../../cypher/session_get.cypher")).param("id", id))
        .await
}

/// Marks sessions idle since before `cutoff_ms` as abandoned; returns how many.
pub async fn abandon_idle(store: &Store, cutoff_ms: i64) -> StoreResult<i64> {
    #[derive(Deserialize)]
    struct Row {
        abandoned: i64,
    }
    Ok(store
        .fetch_one::<Row>(
            statement(include_str!("../../cypher/sessions_abandon_idle.cypher"))
                .param("cutoff", cutoff_ms)
                .param("now", now_ms()),
        )
        .await?
        .map_or(0, |r| r.abandoned))
}
