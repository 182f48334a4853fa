//! Sessions' search documents and their embeddings: marking a document stale (capture),
//! reading what documents are built from and storing them, the embedding queue. Building a
//! document's text is `recall::index`'s job; ranked reads are `recall::search`'s, through
//! [`sessions_by_words`], [`sessions_by_vector`] and [`hit_sessions`].

use serde::{Deserialize, Serialize};

use super::{now_ms, param, statement, SessionKey, Store, StoreResult, Tx};
use crate::domain::compounds;

/// Marks a session's search document stale; the indexer rebuilds it in the background.
pub async fn mark_dirty(tx: &mut Tx, project: &str, session_id: &str) -> StoreResult<()> {
    tx.run(
        statement(include_str!("../../cypher/search/mark_dirty.cypher"))
            .param("project", project)
            .param("session_id", session_id),
    )
    .await
}

#[derive(Debug, Default, Deserialize)]
pub struct DecisionPart {
    pub subject: Option<String>,
    pub choice: Option<String>,
    pub rationale: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
pub struct OperationPart {
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub summary: Option<String>,
    pub role: Option<String>,
    pub content: Option<String>,
    pub rationale: Option<String>,
}

/// What a session's search document is built from.
#[derive(Debug, Default, Deserialize)]
pub struct DocSource {
    pub id: String,
    pub project: String,
    pub rev: i64,
    pub task: Option<String>,
    pub summary: Option<String>,
    pub next_steps: Vec<String>,
    pub decisions: Vec<DecisionPart>,
    pub files: Vec<String>,
    /// Newest first.
    pub operations: Vec<OperationPart>,
    pub writes: i64,
}

/// A built document, ready to store.
#[derive(Debug, Serialize)]
pub struct Doc {
    pub id: String,
    pub project: String,
    pub rev: i64,
    pub doc: String,
    /// The parts of the identifiers in the document (`domain::compounds::parts`).
    pub parts: Option<String>,
    pub hash: String,
    pub files: Vec<String>,
    pub importance: f64,
}

/// An embedding for the document with `hash` of a session.
#[derive(Serialize)]
pub struct Stored<'a> {
    pub id: &'a str,
    pub project: &'a str,
    pub hash: &'a str,
    pub vector: Vec<f32>,
}

/// Queues sessions whose embedding another model made for embedding with `model`, a page at
/// a time; returns how many.
pub async fn requeue_other_models(store: &Store, model: &str) -> StoreResult<i64> {
    let pass = super::sessions::in_pages(store, || {
        statement(include_str!("../../cypher/search/requeue_models.cypher")).param("model", model)
    })
    .await?;
    Ok(pass.sessions)
}

/// Marks sessions that never had a search document as dirty, a page at a time; returns how
/// many.
pub async fn backfill(store: &Store) -> StoreResult<i64> {
    let pass = super::sessions::in_pages(store, || {
        statement(include_str!("../../cypher/search/backfill.cypher"))
            .param("form", compounds::FORM)
    })
    .await?;
    Ok(pass.sessions)
}

/// A session whose document is stale, and its revision when that was read.
#[derive(Deserialize, Serialize)]
struct Stale {
    id: String,
    project: String,
    rev: i64,
}

/// Up to `limit` sessions whose document is stale, with what to build it from. The revisions
/// are read first and the sources after, in two statements: read in one, a capture committing
/// in between could be seen in the revision and not in the operations, and the document
/// would be stored as current without them.
pub async fn dirty_sources(
    store: &Store,
    limit: usize,
    max_files: usize,
    max_operations: usize,
) -> StoreResult<Vec<DocSource>> {
    let stale: Vec<Stale> = store
        .fetch(
            statement(include_str!("../../cypher/search/dirty_revs.cypher"))
                .param("limit", limit as i64),
        )
        .await?;
    if stale.is_empty() {
        return Ok(Vec::new());
    }
    store
        .fetch(
            statement(include_str!("../../cypher/search/dirty_sessions.cypher"))
                .param("sessions", param(&stale)?)
                .param("max_files", max_files as i64)
                .param("max_operations", max_operations as i64),
        )
        .await
}

/// Stores built documents (each marked clean and pending an embedding).
pub async fn store_docs(store: &Store, docs: &[Doc]) -> StoreResult<()> {
    store
        .run(
            statement(include_str!("../../cypher/search/store_docs.cypher"))
                .param("rows", param(&docs)?)
                .param("form", compounds::FORM)
                .param("now", now_ms()),
        )
        .await
}

/// A document waiting for its embedding.
#[derive(Deserialize)]
pub struct Pending {
    pub id: String,
    pub project: String,
    pub doc: String,
    pub hash: String,
}

impl Pending {
    pub fn key(&self) -> SessionKey<'_> {
        SessionKey {
            id: &self.id,
            project: &self.project,
        }
    }
}

/// Up to `limit` documents due for an embedding, none of a session another holder than
/// `holder` has claimed ([`super::sessions::claim_for_index`]).
pub async fn pending_docs(store: &Store, limit: usize, holder: &str) -> StoreResult<Vec<Pending>> {
    store
        .fetch(
            statement(include_str!("../../cypher/search/embed_pending.cypher"))
                .param("limit", limit as i64)
                .param("holder", holder)
                .param("now", now_ms()),
        )
        .await
}

/// Puts `pending` back for a later retry, the delay doubling per failure from
/// `base_delay_ms`; `holder`'s claims on them end.
pub async fn embedding_failed(
    store: &Store,
    holder: &str,
    pending: &[Pending],
    base_delay_ms: i64,
) -> StoreResult<()> {
    let keys: Vec<SessionKey> = pending.iter().map(Pending::key).collect();
    store
        .run(
            statement(include_str!("../../cypher/search/embed_failed.cypher"))
                .param("rows", param(&keys)?)
                .param("holder", holder)
                .param("now", now_ms())
                .param("base_delay_ms", base_delay_ms),
        )
        .await
}

/// Stores embeddings that `model` (of `dim` dimensions) made, skipping sessions whose
/// document changed meanwhile; `holder`'s claims on them end.
pub async fn store_embeddings(
    store: &Store,
    holder: &str,
    model: &str,
    dim: usize,
    rows: &[Stored<'_>],
) -> StoreResult<()> {
    store
        .run(
            statement(include_str!("../../cypher/search/store_embeddings.cypher"))
                .param("rows", param(rows)?)
                .param("holder", holder)
                .param("model", model)
                .param("dim", dim as i64)
                .param("now", now_ms()),
        )
        .await
}

/// A session and its score in one ranked list.
#[derive(Debug, Deserialize)]
pub struct Scored {
    pub id: String,
    pub score: f64,
}

/// The project's sessions whose documents match the Lucene `query` (already escaped), best
/// first, at most `k`.
pub async fn sessions_by_words(
    store: &Store,
    project: &str,
    query: &str,
    k: usize,
) -> StoreResult<Vec<Scored>> {
    store
        .read()
        .fetch(
            statement(include_str!("../../cypher/search/fulltext.cypher"))
                .param("query", query)
                .param("project", project)
                .param("k", k as i64),
        )
        .await
}

/// The project's sessions nearest to `vector` among those `model` embedded, at most `k`:
/// from the shared vector index, or (`exact: Some(scan)`) by comparing the project's vectors
/// one by one — nothing then when the project has more than `scan` sessions.
pub async fn sessions_by_vector(
    store: &Store,
    project: &str,
    model: &str,
    vector: &[f32],
    k: usize,
    exact: Option<usize>,
) -> StoreResult<Vec<Scored>> {
    let q = match exact {
        Some(scan) => statement(include_str!("../../cypher/search/vector_exact.cypher"))
            .param("scan", scan as i64),
        None => statement(include_str!("../../cypher/search/vector.cypher")),
    };
    store
        .read()
        .fetch(
            q.param("vector", param(vector)?)
                .param("project", project)
                .param("model", model)
                .param("k", k as i64),
        )
        .await
}

/// A session found, with what a hit shows of it.
#[derive(Deserialize)]
pub struct HitSession {
    pub id: String,
    pub task: Option<String>,
    pub summary: Option<String>,
    pub status: Option<String>,
    pub files: Vec<String>,
    pub importance: f64,
    pub llm_summary: Option<String>,
    pub started_at: i64,
    pub last_activity_at: Option<i64>,
    pub operation_count: i64,
    /// It has a search document, so its words' list could hold it.
    #[serde(default)]
    pub worded: bool,
    /// The model asked about made its vector, so the nearest-neighbour list could hold it.
    #[serde(default)]
    pub vectored: bool,
}

/// The project's sessions with these ids, as hits show them, with whether `model` made their
/// vectors.
pub async fn hit_sessions(
    store: &Store,
    project: &str,
    ids: &[&str],
    model: Option<&str>,
) -> StoreResult<Vec<HitSession>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    store
        .read()
        .fetch(
            statement(include_str!("../../cypher/search/hits.cypher"))
                .param("ids", param(&ids)?)
                .param("project", project)
                .param("model", model),
        )
        .await
}
