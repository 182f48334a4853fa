//! `POST /v1/sessions/search` (related sessions by meaning), `POST /v1/search` (the turns that
//! match: operations, memories, session summaries) and `GET /v1/handover`.

use std::sync::Arc;

use poem_openapi::{param::Query, payload::Json, Object, OpenApi};

use super::body::JsonBody;
use super::error::{Body, Guarded, Handled};
use super::key::ApiKey;
use super::params::{BudgetParam, IdParam, ProjectParam, TurnKindParam};
use super::ApiTags;
use crate::error::ApiResult;
use crate::recall::handover::{self, Handover};
use crate::recall::search::{Hit, Mode, Weights};
use crate::recall::turns::{MatchedBy, TurnHit};
use crate::request::{asked_at, HandoverAsk, SearchAsk, TurnSearchAsk};
use crate::state::AppState;

pub struct SearchApi(pub Arc<AppState>);

/// A search over a project's sessions.
#[derive(Object, serde::Deserialize)]
pub struct SearchRequest {
    /// Project id (at most 128 characters).
    #[oai(validator(min_length = 1, max_length = 128, pattern = r"^\s*[A-Za-z0-9._-]+\s*$"))]
    pub project: String,
    /// What to look for, in any words: at most 1000 characters. Lucene syntax has no
    /// effect; every character is searched as text.
    #[oai(validator(min_length = 1, max_length = 1000, pattern = r"\S"))]
    pub query: String,
    /// Sessions to return: 1 to 50, default 10.
    #[oai(validator(minimum(value = "1"), maximum(value = "50")))]
    pub limit: Option<i64>,
    /// When the question is asked, RFC 3339 (at most 64 characters, e.g.
    /// `2023-05-30T23:40:00Z`): the times it names ("last week", "two months ago", "in June")
    /// and recency count back from then (what happened more than a day after it gets no lift
    /// of recency), so a question recorded with its date is answered as it was asked. Absent:
    /// now. Anything else, blank included, is `invalid_timestamp`.
    #[oai(validator(max_length = 64))]
    pub asked_at: Option<String>,
}

#[derive(Object)]
pub struct SearchResponse {
    /// `hybrid` (BM25 and embeddings, fused by reciprocal rank) or `fulltext` (BM25 only).
    pub mode: Mode,
    /// Best first by `score`.
    pub sessions: Vec<Hit>,
    /// Set when an embeddings endpoint is configured but could not be used for this query.
    #[oai(skip_serializing_if_is_none)]
    pub degraded: Option<String>,
}

/// A search over a project's turns.
#[derive(Object, serde::Deserialize)]
pub struct TurnSearchRequest {
    /// Project id (at most 128 characters).
    #[oai(validator(min_length = 1, max_length = 128, pattern = r"^\s*[A-Za-z0-9._-]+\s*$"))]
    pub project: String,
    /// What to look for, in any words: at most 1000 characters. Lucene syntax has no
    /// effect; every character is searched as text.
    #[oai(validator(min_length = 1, max_length = 1000, pattern = r"\S"))]
    pub query: String,
    /// Operations to return: 1 to 50, default 10.
    #[oai(validator(minimum(value = "1"), maximum(value = "50")))]
    pub limit: Option<i64>,
    /// Kinds to keep (at most 16): `message`, `decision`, `tool_call`, `write`, `read`,
    /// `search`, `todo`, `memory`, `summary`. Absent: every kind.
    #[oai(validator(max_items = 16))]
    pub types: Option<Vec<TurnKindParam>>,
    /// When the question is asked, RFC 3339 (at most 64 characters, e.g.
    /// `2023-05-30T23:40:00Z`): the times it names ("last week", "two months ago", "in June")
    /// and recency count back from then (what happened more than a day after it gets no lift
    /// of recency), so a question recorded with its date is answered as it was asked. Absent:
    /// now. Anything else, blank included, is `invalid_timestamp`.
    #[oai(validator(max_length = 64))]
    pub asked_at: Option<String>,
}

/// One turn found.
#[derive(Object, serde::Serialize)]
pub struct TurnFound {
    /// The operation's id (a memory's id for `memory`; `summary:<session id>` for a summary).
    pub operation_id: String,
    /// The session it belongs to (empty for a memory asserted outside any session).
    pub session_id: String,
    /// Its place in the session (a summary: the session's last; a memory: 0).
    pub seq: i64,
    /// The operation type, or `memory` / `summary`.
    #[oai(rename = "type")]
    #[serde(rename = "type")]
    pub kind: String,
    #[oai(skip_serializing_if_is_none)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// The re-ranking score (similarity, recency, importance), 0..1 with the default weights.
    pub score: f64,
    /// How well it matches the query, 0..1.
    pub similarity: f64,
    /// At most 240 characters of the turn's text around the match, `…` where cut.
    pub snippet: String,
    /// Which lists found it: `fulltext` (its words), `vector` (its meaning), `both`.
    pub matched_by: MatchedBy,
    /// Epoch milliseconds.
    pub at: i64,
}

impl From<TurnHit> for TurnFound {
    fn from(h: TurnHit) -> Self {
        Self {
            operation_id: h.operation_id,
            session_id: h.session_id,
            seq: h.seq,
            kind: h.kind,
            role: h.role,
            score: h.score,
            similarity: h.similarity,
            snippet: h.snippet,
            matched_by: h.matched_by,
            at: h.at,
        }
    }
}

#[derive(Object, serde::Serialize)]
pub struct TurnSearchResponse {
    /// `hybrid` (BM25 and embeddings: each list's scores scaled onto 0..1 and averaged) or
    /// `fulltext` (BM25 only: no embedder, or it failed for this query).
    pub mode: Mode,
    /// Best first, near-duplicates held back, a text said again listed once.
    pub operations: Vec<TurnFound>,
    /// Operations of the project not embedded with the configured model yet (they are found
    /// by their words meanwhile); absent without an embedder.
    #[oai(skip_serializing_if_is_none)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending_embeddings: Option<i64>,
    /// Set when an embedder is configured but could not be used for this query.
    #[oai(skip_serializing_if_is_none)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub degraded: Option<String>,
}

/// `POST /v1/search` and the MCP tool `search_memory`: one turn search, answered.
pub async fn turn_search(state: &AppState, ask: &TurnSearchAsk) -> ApiResult<TurnSearchResponse> {
    let found = ask.run(state).await?;
    Ok(TurnSearchResponse {
        mode: found.mode,
        operations: found.hits.into_iter().map(TurnFound::from).collect(),
        pending_embeddings: found.pending_embeddings,
        degraded: found.degraded,
    })
}

#[OpenApi(prefix_path = "/v1", tag = "ApiTags::Search")]
impl SearchApi {
    /// Sessions related to a query, by words (BM25) and — when an embeddings endpoint is
    /// configured — by meaning, re-ranked by similarity, recency and importance. A session
    /// sharing no word with the query, holding no turn that does, and not close in meaning
    /// (`CAIRN_SEARCH_MIN_COSINE`) is left out: a query about nothing held answers `[]`.
    #[oai(path = "/sessions/search", method = "post")]
    async fn search(
        &self,
        auth: ApiKey,
        body: JsonBody<SearchRequest>,
    ) -> Handled<Json<SearchResponse>, (Guarded, Body)> {
        let b = &body.0;
        let mut ask = SearchAsk::parse(&auth, Some(&b.project), &b.query, b.limit)?;
        ask.asked_at = asked_at(b.asked_at.as_deref())?;
        let found = ask.run(&self.0).await?;
        Ok(Json(SearchResponse {
            mode: found.mode,
            sessions: found.hits,
            degraded: found.degraded,
        }))
    }

    /// The turns that match a query — conversation turns, tool calls, decisions (with what
    /// was rejected), memories and session summaries — by words (BM25) and, with an
    /// embedder, by meaning; fused by rank, re-ranked by similarity, recency and importance,
    /// near-duplicates held back. A turn sharing no word with the query and not close in
    /// meaning (`CAIRN_SEARCH_MIN_COSINE`, 0.3 by default) is left out, unless it happened in
    /// the time the query names: a query about nothing held answers `[]`.
    #[oai(path = "/search", method = "post")]
    async fn turns(
        &self,
        auth: ApiKey,
        body: JsonBody<TurnSearchRequest>,
    ) -> Handled<Json<TurnSearchResponse>, (Guarded, Body)> {
        let b = &body.0;
        let types: Option<Vec<String>> = b
            .types
            .as_ref()
            .map(|t| t.iter().map(|k| k.0.clone()).collect());
        let mut ask = TurnSearchAsk::parse(&auth, Some(&b.project), &b.query, b.limit, types)?;
        ask.asked_at = asked_at(b.asked_at.as_deref())?;
        Ok(Json(turn_search(&self.0, &ask).await?))
    }

    /// The wake-up handover for a new session: the last session's summary and unfinished
    /// work, related past sessions with relevance, patterns (active beliefs, files iterated
    /// on in ≥ 3 related sessions) and suggested next steps — as JSON and as a Markdown block
    /// of at most `budget_tokens` tokens.
    #[oai(path = "/handover", method = "get")]
    async fn handover(
        &self,
        auth: ApiKey,
        /// Project id (at most 128 characters).
        project: Query<ProjectParam>,
        /// The session waking up (its task says what is related); optional.
        session_id: Query<Option<IdParam>>,
        /// Token budget of `markdown`: 16 to 1,000,000, default 1500.
        budget_tokens: Query<Option<BudgetParam>>,
    ) -> Handled<Json<Handover>, Guarded> {
        let ask = HandoverAsk::parse(
            &auth,
            Some(&project.0),
            session_id.0.as_deref(),
            budget_tokens.0.map(|b| i64::from(b.0)),
        )?;
        let inputs = handover::Inputs {
            embedder: self.0.embedder.as_deref(),
            weights: Weights::from(&self.0.settings.search),
            encoding: self.0.settings.tokenizer,
        };
        let started = std::time::Instant::now();
        let out = handover::build(
            &self.0.store,
            &inputs,
            &ask.project,
            ask.session.as_deref(),
            ask.budget.get(),
        )
        .await?;
        tracing::debug!(project = %ask.project, related = out.related.len(), tokens = out.tokens_used, duration_ms = started.elapsed().as_millis() as u64, "handover built");
        Ok(Json(out))
    }
}
