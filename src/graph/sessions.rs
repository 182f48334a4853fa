//! Sessions: start (with the links of a child session to its parent and to the operation
//! that launched it), close, look up, the idle sweep, and what a session without a summary is
//! summed up from (`capture::summary`).

use serde::{Deserialize, Serialize};

use super::{now_ms, param, statement, SessionKey, Store, StoreResult, Tx};
use crate::domain::operation::COMPACTION_TOOL;
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
        statement(include_str!("../../cypher/sessions/start.cypher"))
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
    tx.run(super::with_search_text(
        statement(include_str!("../../cypher/sessions/close.cypher"))
            .param("id", cmd.id.as_str())
            .param("project", cmd.project.as_str())
            .param("status", cmd.status.as_str())
            .param("summary", cmd.summary.clone())
            .param("next_steps", cmd.next_steps.clone())
            .param("at", cmd.at),
        turn_text::session_summary(cmd.summary.as_deref(), &cmd.next_steps),
    ))
    .await
}

/// The session with this id, whatever its project (callers check the project).
pub async fn get(store: &Store, id: &str) -> StoreResult<Option<SessionRow>> {
    store.read().fetch_one(get_query(id)).await
}

/// [`get`] as the writer has it: for the checks capture makes before a write.
pub async fn get_on_writer(store: &Store, id: &str) -> StoreResult<Option<SessionRow>> {
    store.fetch_one(get_query(id)).await
}

fn get_query(id: &str) -> neo4rs::Query {
    statement(include_str!("../../cypher/sessions/get.cypher")).param("id", id)
}

/// What a session's summary is derived from.
#[derive(Debug, Default, Deserialize)]
pub struct Material {
    /// The summary already stored, if any: it is never replaced.
    pub summary: Option<String>,
    /// The content of the last compaction operation.
    pub compaction: Option<String>,
    /// The last assistant turn.
    pub last_assistant: Option<String>,
    /// The todo operations, oldest first: whole lists and task updates.
    #[serde(default)]
    pub todos: Vec<super::operations::TodoOp>,
}

/// What the summary of session `id` would be derived from, read inside the transaction
/// that closes it (operations spooled before the close are written by then).
pub async fn summary_material(tx: &mut Tx, project: &str, id: &str) -> StoreResult<Material> {
    Ok(tx
        .fetch::<Material>(material_query(project, id))
        .await?
        .into_iter()
        .next()
        .unwrap_or_default())
}

fn material_query(project: &str, id: &str) -> neo4rs::Query {
    statement(include_str!(
        "../../cypher/sessions/summary_material.cypher"
    ))
    .param("id", id)
    .param("project", project)
    .param("compaction", COMPACTION_TOOL)
}

/// Marks sessions idle since before `cutoff_ms` as abandoned, each without a summary summed
/// up by `derive` from what it holds; returns how many were abandoned.
pub async fn abandon_idle(
    store: &Store,
    cutoff_ms: i64,
    derive: impl Fn(&Material) -> Option<String>,
) -> StoreResult<i64> {
    #[derive(Deserialize)]
    struct Row {
        project: String,
        id: String,
        needs_summary: bool,
    }
    let rows: Vec<Row> = store
        .fetch(
            statement(include_str!("../../cypher/sessions/abandon_idle.cypher"))
                .param("cutoff", cutoff_ms)
                .param("now", now_ms()),
        )
        .await?;
    let mut derived = Vec::new();
    for r in rows.iter().filter(|r| r.needs_summary) {
        let Some(m) = store
            .fetch_one::<Material>(material_query(&r.project, &r.id))
            .await?
        else {
            continue;
        };
        if let Some(text) = derive(&m) {
            derived.push(serde_json::json!({"project": r.project, "id": r.id, "summary": text}));
        }
    }
    if !derived.is_empty() {
        store
            .run(
                statement(include_str!("../../cypher/sessions/set_summary.cypher"))
                    .param("rows", super::param(&derived)?),
            )
            .await?;
    }
    Ok(rows.len() as i64)
}

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

/// The session `id` of `project` (`None` also for another project's).
pub async fn head(store: &Store, project: &str, id: &str) -> StoreResult<Option<SessionHead>> {
    store
        .read()
        .fetch_one(
            statement(include_str!("../../cypher/sessions/head.cypher"))
                .param("project", project)
                .param("session_id", id),
        )
        .await
}

/// A child session (a subagent's work), as the handover and reconstruction name it.
#[derive(Clone, Debug, Serialize, Deserialize, poem_openapi::Object)]
pub struct ChildSession {
    pub id: String,
    pub agent_type: Option<String>,
    pub task: Option<String>,
    pub summary: Option<String>,
    pub status: Option<String>,
    pub operations: i64,
}

/// The child sessions of `session_id`, oldest first, at most `limit`.
pub async fn children(
    store: &Store,
    project: &str,
    session_id: &str,
    limit: usize,
) -> StoreResult<Vec<ChildSession>> {
    store
        .read()
        .fetch(
            statement(include_str!("../../cypher/sessions/children.cypher"))
                .param("project", project)
                .param("session_id", session_id)
                .param("limit", limit as i64),
        )
        .await
}

/// What a session left open, as stored: its todo operations in order and the next steps
/// it closed with (`None`: no such session).
pub async fn unfinished(
    store: &Store,
    project: &str,
    session_id: &str,
) -> StoreResult<Option<(Vec<super::operations::TodoOp>, Vec<String>)>> {
    #[derive(Deserialize)]
    struct Row {
        lists: Vec<super::operations::TodoOp>,
        next_steps: Vec<String>,
    }
    let row: Option<Row> = store
        .read()
        .fetch_one(
            statement(include_str!("../../cypher/sessions/unfinished.cypher"))
                .param("project", project)
                .param("session_id", session_id),
        )
        .await?;
    Ok(row.map(|r| (r.lists, r.next_steps)))
}

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

/// The project's sessions with these ids.
pub async fn by_ids(store: &Store, project: &str, ids: &[&str]) -> StoreResult<Vec<ScopeSession>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    store
        .read()
        .fetch(
            statement(include_str!("../../cypher/sessions/by_ids.cypher"))
                .param("project", project)
                .param("ids", super::param(&ids)?),
        )
        .await
}

/// The project's most recently active sessions, newest first.
pub async fn recent(store: &Store, project: &str, limit: usize) -> StoreResult<Vec<ScopeSession>> {
    store
        .read()
        .fetch(
            statement(include_str!("../../cypher/sessions/recent.cypher"))
                .param("project", project)
                .param("limit", limit as i64),
        )
        .await
}

/// `session_id` and the sessions it continues, newest first (empty: no such session).
pub async fn chain(
    store: &Store,
    project: &str,
    session_id: &str,
) -> StoreResult<Vec<ScopeSession>> {
    store
        .read()
        .fetch(
            statement(include_str!("../../cypher/sessions/chain.cypher"))
                .param("project", project)
                .param("session_id", session_id),
        )
        .await
}

/// The latest session with content, as the handover opens with it.
#[derive(Deserialize)]
pub struct LastSession {
    pub id: String,
    pub task: Option<String>,
    pub summary: Option<String>,
    pub status: Option<String>,
    pub last_activity_at: Option<i64>,
}

/// The project's latest session with content other than `exclude` — or, with `own`,
/// `exclude` itself when it has content.
pub async fn last_with_content(
    store: &Store,
    project: &str,
    exclude: &str,
    own: bool,
) -> StoreResult<Option<LastSession>> {
    let text = if own {
        include_str!("../../cypher/sessions/own_with_content.cypher")
    } else {
        include_str!("../../cypher/sessions/last_with_content.cypher")
    };
    store
        .read()
        .fetch_one(
            statement(text)
                .param("project", project)
                .param("exclude", exclude),
        )
        .await
}

/// Sessions and their operations on one day (days since the epoch, UTC).
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct ActiveDay {
    pub day: i64,
    pub sessions: i64,
    pub operations: i64,
}

/// Days with sessions last active since `since_ms`, oldest first.
pub async fn activity(store: &Store, project: &str, since_ms: i64) -> StoreResult<Vec<ActiveDay>> {
    store
        .read()
        .fetch(
            statement(include_str!("../../cypher/sessions/activity.cypher"))
                .param("project", project)
                .param("since", since_ms),
        )
        .await
}

/// An operation of a session triggered by another operation.
#[derive(Clone, Debug, Deserialize)]
pub struct Trigger {
    pub seq: i64,
    pub by_id: String,
    pub by_seq: Option<i64>,
    pub by_session: Option<String>,
}

/// What surrounds a session: the sessions continuing it, its parent, its triggered-by links.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct SessionLinks {
    pub continued_by: Vec<String>,
    pub parent: Option<String>,
    pub triggers: Vec<Trigger>,
}

/// The links around session `id` of `project` (empty when there is no such session).
pub async fn links(store: &Store, project: &str, id: &str) -> StoreResult<SessionLinks> {
    Ok(store
        .read()
        .fetch_one(
            statement(include_str!("../../cypher/sessions/links.cypher"))
                .param("project", project)
                .param("session_id", id),
        )
        .await?
        .unwrap_or_default())
}

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
        .read()
        .fetch(
            statement(include_str!("../../cypher/sessions/timeline.cypher"))
                .param("project", project)
                .param("limit", limit)
                .param("files", files)
                .param("children", children),
        )
        .await
}

/// Sessions one page of a session-wide pass touches at most: each page is its own
/// transaction, so no statement of the pass holds more than this many sessions' locks.
const PAGE: i64 = 500;

/// Dates the sessions stored before capture dated them by their work (a session's first
/// operations older than its start) once per database: what `cypher/sessions/date_page.cypher`
/// says, a page at a time; returns how many it dated now (0 when a pass finished before).
pub async fn date_by_work(store: &Store) -> StoreResult<i64> {
    #[derive(Deserialize)]
    struct Done {
        done: bool,
    }
    let done = store
        .fetch_one::<Done>(statement(include_str!(
            "../../cypher/sessions/dated_get.cypher"
        )))
        .await?
        .is_some_and(|d| d.done);
    if done {
        return Ok(0);
    }
    let pass = in_pages(store, || {
        statement(include_str!("../../cypher/sessions/date_page.cypher"))
    })
    .await?;
    store
        .run(statement(include_str!(
            "../../cypher/sessions/dated_set.cypher"
        )))
        .await?;
    Ok(pass.sessions)
}

/// What a pass over every session changed ([`in_pages`]).
#[derive(Debug, Default, PartialEq)]
pub struct Pass {
    pub sessions: i64,
    pub operations: i64,
    /// What the pass names of the sessions it changed (the models that had embedded them).
    pub models: std::collections::BTreeSet<String>,
}

/// Runs a pass over every session, a page at a time in the order of their ids: `page` makes a
/// statement taking `$after` (the last id of the page before) and `$page`, and returning the
/// page's `last` id, how many sessions it `scanned`, the `sessions` and `operations` it
/// changed and the `models` it names (see `cypher/turns/backfill.cypher`); returns their sums.
pub async fn in_pages(store: &Store, page: impl Fn() -> neo4rs::Query) -> StoreResult<Pass> {
    #[derive(Deserialize)]
    struct Page {
        last: Option<String>,
        scanned: i64,
        sessions: i64,
        operations: i64,
        models: Vec<String>,
    }
    let (mut after, mut pass) = (String::new(), Pass::default());
    loop {
        let q = page().param("after", after.as_str()).param("page", PAGE);
        let Some(p) = store.fetch_one::<Page>(q).await? else {
            break;
        };
        pass.sessions += p.sessions;
        pass.operations += p.operations;
        pass.models.extend(p.models);
        match p.last {
            Some(last) if p.scanned >= PAGE => after = last,
            _ => break,
        }
    }
    Ok(pass)
}

/// How long an indexer pass's claim on its sessions lasts unless the pass ends it first (a
/// pass of the turn index or of the search documents' embeddings): well past what a pass takes
/// (seconds). A replica that dies mid-pass holds them back this long; a pass that outlasts it
/// may see another replica embed them too.
pub const INDEX_CLAIM_MS: i64 = 30_000;

/// Claims `sessions` for an indexer pass of `holder` (the turn index's, or the embedding of
/// search documents) for [`INDEX_CLAIM_MS`], each unless another holder's claim on it is still
/// live; the ids of those `holder` now holds. The statements that store or fail the pass's
/// work end the claim (`turns::advance`, `turns::failed`, `search::store_embeddings`,
/// `search::embedding_failed`).
pub async fn claim_for_index(
    store: &Store,
    holder: &str,
    sessions: &[SessionKey<'_>],
) -> StoreResult<std::collections::HashSet<String>> {
    #[derive(Deserialize)]
    struct Row {
        id: String,
    }
    if sessions.is_empty() {
        return Ok(Default::default());
    }
    let now = now_ms();
    let rows: Vec<Row> = store
        .fetch(
            statement(include_str!("../../cypher/sessions/index_claim.cypher"))
                .param("rows", param(sessions)?)
                .param("holder", holder)
                .param("now", now)
                .param("until", now + INDEX_CLAIM_MS),
        )
        .await?;
    Ok(rows.into_iter().map(|r| r.id).collect())
}
