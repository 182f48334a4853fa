//! Turns: the reads behind turn-level search (BM25 over `turn_search`, nearest operations by
//! embedding) and the turn indexer's work queue (sessions with operations it has not processed,
//! their search texts and vectors, how far behind it is).

use neo4rs::Query;
use serde::Deserialize;

use super::{param, statement, Store, StoreResult};

/// What to keep of a ranked list.
#[derive(Clone, Copy, Debug)]
pub struct Filter<'a> {
    pub project: &'a str,
    pub types: Option<&'a [String]>,
    pub sessions: Option<&'a [String]>,
    pub exclude_session: Option<&'a str>,
}

impl Filter<'_> {
    fn apply(&self, q: Query) -> StoreResult<Query> {
        Ok(q.param("project", self.project)
            .param("types", param(&self.types)?)
            .param("sessions", param(&self.sessions)?)
            .param("exclude", self.exclude_session))
    }
}

/// One turn of a ranked list. `id` is the operation's (or memory's) id; a session summary is
/// `summary:<session id>`.
#[derive(Clone, Debug, Deserialize)]
pub struct TurnRow {
    pub id: String,
    pub session_id: Option<String>,
    pub seq: i64,
    pub kind: Option<String>,
    pub role: Option<String>,
    pub text: Option<String>,
    pub at: i64,
    /// BM25, or (1 + cosine) / 2.
    pub score: f64,
}

/// BM25 over turns; `lucene` is the escaped query, narrowed to the project.
pub async fn fulltext(
    store: &Store,
    f: &Filter<'_>,
    lucene: &str,
    k: usize,
) -> StoreResult<Vec<TurnRow>> {
    let q = statement(include_str!("../../cypher/turns_fulltext.cypher"))
        .param("query", lucene)
        .param("k", k as i64);
    store.fetch(f.apply(q)?).await
}

/// The nearest operations embedded by `model`: approximate over the shared index (asking it
/// for `wide` candidates), keeping `k`.
pub async fn nearest(
    store: &Store,
    f: &Filter<'_>,
    model: &str,
    vector: &[f32],
    k: usize,
    wide: usize,
) -> StoreResult<Vec<TurnRow>> {
    let q = statement(include_str!("../../cypher/turns_vector.cypher"))
        .param("vector", param(vector)?)
        .param("model", model)
        .param("k", k as i64)
        .param("wide", wide as i64);
    store.fetch(f.apply(q)?).await
}

/// The nearest operations embedded by `model`, exactly: within `f.sessions` when given, else
/// within the project; at most `scan` operations are compared.
pub async fn nearest_exact(
    store: &Store,
    f: &Filter<'_>,
    model: &str,
    vector: &[f32],
    k: usize,
    scan: usize,
) -> StoreResult<Vec<TurnRow>> {
    let text = if f.sessions.is_some() {
        include_str!("../../cypher/turns_vector_sessions.cypher")
    } else {
        include_str!("../../cypher/turns_vector_exact.cypher")
    };
    let q = statement(text)
        .param("vector", param(vector)?)
        .param("model", model)
        .param("k", k as i64)
        .param("scan", scan as i64);
    store.fetch(f.apply(q)?).await
}

/// The vectors `model` made for some of `project`'s operations.
pub async fn embeddings(
    store: &Store,
    project: &str,
    model: &str,
    ids: &[&str],
) -> StoreResult<Vec<(String, Vec<f32>)>> {
    #[derive(Deserialize)]
    struct Row {
        id: String,
        vector: Vec<f32>,
    }
    let rows: Vec<Row> = store
        .fetch(
            statement(include_str!("../../cypher/turns_embeddings.cypher"))
                .param("ids", param(ids)?)
                .param("project", project)
                .param("model", model),
        )
        .await?;
    Ok(rows.into_iter().map(|r| (r.id, r.vector)).collect())
}

/// Operations of `project` the turn indexer has not processed with `model` yet.
pub async fn pending_in_project(store: &Store, project: &str, model: &str) -> StoreResult<i64> {
    #[derive(Deserialize)]
    struct Row {
        pending: i64,
    }
    Ok(store
        .fetch_one::<Row>(
            statement(include_str!("../../cypher/turns_pending_project.cypher"))
                .param("project", project)
                .param("model", model),
        )
        .await?
        .map_or(0, |r| r.pending))
}
