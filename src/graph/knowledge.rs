//! What the graph knows about a set of files: decisions, beliefs, sessions and open todos.

use serde::Deserialize;

use super::{param, statement, Store, StoreResult};

#[derive(Debug, Clone, Deserialize)]
pub struct FileDecision {
    pub path: String,
    pub id: String,
    pub session_id: Option<String>,
    pub subject: String,
    pub choice: String,
    pub rationale: String,
    pub alternatives: Vec<String>,
    pub confidence: f64,
    pub at: i64,
    pub superseded_by: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct FileBelief {
    pub path: String,
    pub id: String,
    pub evidence: i64,
}

#[derive(Debug, Clone, Deserialize)]
pub struct FileSession {
    pub path: String,
    pub session_id: String,
    pub task: Option<String>,
    pub summary: Option<String>,
    pub status: String,
    pub last_at: i64,
    pub modes: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct FileTodos {
    pub path: String,
    pub session_id: String,
    /// The session's latest todo list as JSON.
    pub todos: String,
    pub at: i64,
}

/// Everything at once; the four reads run concurrently.
pub async fn about(
    store: &Store,
    project: &str,
    files: &[String],
) -> StoreResult<(
    Vec<FileDecision>,
    Vec<FileBelief>,
    Vec<FileSession>,
    Vec<FileTodos>,
)> {
    let files = param(files)?;
    let q = |text: &'static str| {
        statement(text)
            .param("project", project)
            .param("files", files.clone())
    };
    let read = store.read();
    let (d, b, s, t) = tokio::join!(
        read.fetch(q(include_str!("../../cypher/knowledge/decisions.cypher"))),
        read.fetch(q(include_str!("../../cypher/knowledge/beliefs.cypher"))),
        read.fetch(q(include_str!("../../cypher/knowledge/sessions.cypher"))),
        read.fetch(q(include_str!("../../cypher/knowledge/todos.cypher"))),
    );
    Ok((d?, b?, s?, t?))
}
