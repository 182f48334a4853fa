//! Decisions: the choice, its rationale, the options rejected, and what superseded what.

use serde::{Deserialize, Serialize};

use super::{param, statement, Store, StoreResult, Tx};
use crate::domain::{record::NewDecision, turn_text};

/// A decision as stored, with its place in the supersession chain.
#[derive(Clone, Debug, Serialize, Deserialize, poem_openapi::Object)]
pub struct DecisionView {
    pub id: String,
    pub session_id: Option<String>,
    pub subject: String,
    pub choice: String,
    pub rationale: String,
    /// The alternatives that were rejected.
    pub alternatives: Vec<String>,
    pub confidence: f64,
    pub files: Vec<String>,
    /// Epoch milliseconds.
    pub at: i64,
    /// The earlier decision on the same subject this one replaced.
    pub supersedes: Option<String>,
    /// The later decision that replaced this one; absent while it stands.
    pub superseded_by: Option<String>,
}

#[derive(Serialize)]
struct OptionRow<'a> {
    id: String,
    text: &'a str,
    chosen: bool,
}

/// Writes the decision (its operation is appended by the caller first). Replays are no-ops.
pub async fn create(tx: &mut Tx, d: &NewDecision) -> StoreResult<()> {
    #[derive(Deserialize)]
    struct Exists {
        exists: bool,
    }
    let exists = tx
        .fetch::<Exists>(
            statement(include_str!("../../cypher/decisions/exists.cypher"))
                .param("id", d.id.as_str()),
        )
        .await?;
    if exists.first().is_some_and(|e| e.exists) {
        return Ok(());
    }
    tx.run(
        statement(include_str!("../../cypher/decisions/create.cypher"))
            .param("id", d.id.as_str())
            .param("project", d.project.as_str())
            .param("session_id", d.session_id.clone())
            .param("subject", d.subject.as_str())
            .param("subject_key", d.subject_key.as_str())
            .param("choice", d.choice.as_str())
            .param("rationale", d.rationale.as_str())
            .param("alternatives", d.alternatives.clone())
            .param("confidence", d.confidence)
            .param("files", d.files.clone())
            .param("at", d.at),
    )
    .await?;
    let mut options = vec![OptionRow {
        id: format!("{}:chosen", d.id),
        text: &d.choice,
        chosen: true,
    }];
    options.extend(d.alternatives.iter().enumerate().map(|(i, a)| OptionRow {
        id: format!("{}:rejected:{i}", d.id),
        text: a,
        chosen: false,
    }));
    tx.run(
        statement(include_str!("../../cypher/decisions/options.cypher"))
            .param("id", d.id.as_str())
            .param("project", d.project.as_str())
            .param("options", param(&options)?),
    )
    .await?;
    if !d.beliefs.is_empty() {
        tx.run(
            statement(include_str!("../../cypher/decisions/informs.cypher"))
                .param("id", d.id.as_str())
                .param("project", d.project.as_str())
                .param("at", d.at)
                .param("beliefs", param(&d.beliefs)?),
        )
        .await?;
    }
    if let Some(op) = &d.operation {
        tx.run(super::with_search_text(
            statement(include_str!(
                "../../cypher/decisions/record_operation.cypher"
            ))
            .param("id", d.id.as_str())
            .param("operation_id", op.id.as_str()),
            Some(turn_text::decision(
                &d.subject,
                &d.choice,
                &d.rationale,
                &d.alternatives,
            )),
        ))
        .await?;
    }
    Ok(())
}

/// Filters for [`list`].
#[derive(Default)]
pub struct DecisionFilter<'a> {
    pub subject_key: Option<&'a str>,
    pub file: Option<&'a str>,
    pub limit: i64,
}

pub async fn list(
    store: &Store,
    project: &str,
    f: &DecisionFilter<'_>,
) -> StoreResult<Vec<DecisionView>> {
    store
        .read()
        .fetch(
            statement(include_str!("../../cypher/decisions/list.cypher"))
                .param("project", project)
                .param("subject_key", f.subject_key)
                .param("file", f.file)
                .param("limit", f.limit),
        )
        .await
}

/// The decisions made in `session_id`, as the reconstruction lists them.
pub async fn of_session(
    store: &Store,
    project: &str,
    session_id: &str,
) -> StoreResult<Vec<DecisionView>> {
    store
        .read()
        .fetch(
            statement(include_str!("../../cypher/decisions/of_session.cypher"))
                .param("project", project)
                .param("session_id", session_id),
        )
        .await
}

/// A decision as a context lists it.
#[derive(Deserialize)]
pub struct ContextDecision {
    pub subject: String,
    pub choice: String,
    pub rationale: Option<String>,
    pub superseded_by: Option<String>,
}

/// The decisions made in `sessions` or about `files`, at most `limit`.
pub async fn for_context(
    store: &Store,
    project: &str,
    sessions: &[&str],
    files: &[&str],
    limit: usize,
) -> StoreResult<Vec<ContextDecision>> {
    store
        .read()
        .fetch(
            statement(include_str!("../../cypher/decisions/for_context.cypher"))
                .param("project", project)
                .param("sessions", param(&sessions)?)
                .param("files", param(&files)?)
                .param("limit", limit as i64),
        )
        .await
}

/// A decision whose files have not changed since it was made.
#[derive(Deserialize)]
pub struct FollowUp {
    pub subject: Option<String>,
    pub choice: Option<String>,
    pub files: Vec<String>,
}

/// The decisions of `session_id` awaiting follow-up: their files unchanged since.
pub async fn awaiting_follow_up(
    store: &Store,
    project: &str,
    session_id: &str,
) -> StoreResult<Vec<FollowUp>> {
    store
        .read()
        .fetch(
            statement(include_str!(
                "../../cypher/decisions/awaiting_follow_up.cypher"
            ))
            .param("project", project)
            .param("session_id", session_id),
        )
        .await
}
