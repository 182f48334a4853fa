//! `POST /v1/sessions/search` (related sessions by meaning), `POST /v1/search` (the turns that
//! match: operations, memories, session summaries) and `GET /v1/handover`.

use std::sync::Arc;

use poem_openapi::{param::Query, payload::Json, Object, OpenApi};

use super::body::JsonBody;
use super::error::{Body, Guarded, Handled};
use super::key::ApiKey;
use super::params::TurnKindParam;
use super::params::{IdParam, ProjectParam, Ranged};
use super::ApiTags;
use crate::auth::{Principal, Scope};
use crate::domain::validate;
use crate::error::{ApiError, Code};
use crate::recall::handover::{self, Handover};
use crate::recall::search::{self, Hit, Mode, Weights};
use crate::recall::turns::{self, MatchedBy, TurnHit, TurnQuery};
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
    pub limit: Option<u32>,
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

/// Validated search input: (project, query, limit).
pub fn search_input(body: &SearchRequest) -> Result<(String, String, usize), ApiError> {
    let project = validate::project("project", &body.project)?;
    let query = validate::text("query", &body.query, search::MAX_QUERY_CHARS)?;
    let limit = match body.limit {
        None => search::DEFAULT_LIMIT,
        Some(n) if (1..=search::MAX_LIMIT as u32).contains(&n) => n as usize,
        Some(_) => {
            return Err(ApiError::invalid(
                Code::InvalidLimit,
                "limit",
                format!("`limit` must be between 1 and {}", search::MAX_LIMIT),
            ))
        }
    };
    Ok((project, query, limit))
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
    pub limit: Option<u32>,
    /// Kinds to keep (at most 16): `message`, `decision`, `tool_call`, `write`, `read`,
    /// `search`, `todo`, `memory`, `summary`. Absent: every kind.
    #[oai(validator(max_items = 16))]
    pub types: Option<Vec<TurnKindParam>>,
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
    /// `hybrid` (BM25 and embeddings, fused by reciprocal rank) or `fulltext` (BM25 only:
    /// no embedder, or it failed for this query).
    pub mode: Mode,
    /// Best first, near-duplicates held back.
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

/// A turn search, validated.
pub struct TurnSearchInput {
    pub project: String,
    pub query: String,
    pub limit: usize,
    pub types: Option<Vec<String>>,
}

/// Validates a turn search.
pub fn turn_search_input(body: &TurnSearchRequest) -> Result<TurnSearchInput, ApiError> {
    let (project, query, limit) = search_input(&SearchRequest {
        project: body.project.clone(),
        query: body.query.clone(),
        limit: body.limit,
    })?;
    let types = match &body.types {
        None => None,
        Some(t) if t.len() > turns::MAX_TYPES => {
            return Err(ApiError::invalid(
                Code::InvalidTypes,
                "types",
                format!("`types` names at most {} kinds", turns::MAX_TYPES),
            ))
        }
        Some(t) => {
            if let Some(i) = t.iter().position(|k| !turns::TURN_KINDS.contains(&&**k)) {
                return Err(ApiError::invalid(
                    Code::InvalidTypes,
                    format!("types[{i}]"),
                    format!(
                        "`types` entries are among: {}",
                        turns::TURN_KINDS.join(", ")
                    ),
                ));
            }
            Some(t.iter().map(|k| k.0.clone()).collect())
        }
    };
    Ok(TurnSearchInput {
        project,
        query,
        limit,
        types,
    })
}

/// `POST /v1/search` and the MCP tool `search_memory`: validates, checks the key, searches.
pub async fn turn_search(
    state: &AppState,
    who: &Principal,
    body: &TurnSearchRequest,
) -> Result<TurnSearchResponse, ApiError> {
    let TurnSearchInput {
        project,
        query,
        limit,
        types,
    } = turn_search_input(body)?;
    who.require(&project, Scope::Read)?;
    let started = std::time::Instant::now();
    let found = turns::search_with(
        &state.store,
        state.embedder.as_deref(),
        Weights::from(&state.settings.search),
        &TurnQuery {
            project: &project,
            text: &query,
            limit,
            types: types.as_deref(),
            sessions: None,
            exclude_session: None,
        },
    )
    .await?;
    metrics::histogram!("cairn_turn_search_seconds").record(started.elapsed().as_secs_f64());
    tracing::debug!(project = %project, mode = ?found.mode, hits = found.hits.len(), duration_ms = started.elapsed().as_millis() as u64, "turn search answered");
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
    /// configured — by meaning, re-ranked by similarity, recency and importance.
    #[oai(path = "/sessions/search", method = "post")]
    async fn search(
        &self,
        auth: ApiKey,
        body: JsonBody<SearchRequest>,
    ) -> Handled<Json<SearchResponse>, (Guarded, Body)> {
        let (project, query, limit) = search_input(&body.0)?;
        auth.require(&project, Scope::Read)?;
        let started = std::time::Instant::now();
        let found = search::search(
            &self.0.store,
            self.0.embedder.as_deref(),
            Weights::from(&self.0.settings.search),
            &project,
            &query,
            limit,
            &[],
        )
        .await?;
        metrics::histogram!("cairn_search_seconds").record(started.elapsed().as_secs_f64());
        tracing::debug!(project = %project, mode = ?found.mode, hits = found.hits.len(), duration_ms = started.elapsed().as_millis() as u64, "search answered");
        Ok(Json(SearchResponse {
            mode: found.mode,
            sessions: found.hits,
            degraded: found.degraded,
        }))
    }

    /// The turns that match a query — conversation turns, tool calls, decisions (with what
    /// was rejected), memories and session summaries — by words (BM25) and, with an
    /// embedder, by meaning; fused by rank, re-ranked by similarity, recency and importance,
    /// near-duplicates held back.
    #[oai(path = "/search", method = "post")]
    async fn turns(
        &self,
        auth: ApiKey,
        body: JsonBody<TurnSearchRequest>,
    ) -> Handled<Json<TurnSearchResponse>, (Guarded, Body)> {
        Ok(Json(turn_search(&self.0, &auth, &body.0).await?))
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
        /// Token budget of `markdown`: 50 to 20000, default 1500.
        budget_tokens: Query<
            Option<Ranged<u32, { handover::MIN_BUDGET as i64 }, { handover::MAX_BUDGET as i64 }>>,
        >,
    ) -> Handled<Json<Handover>, Guarded> {
        let project = validate::project("project", &project.0)?;
        auth.require(&project, Scope::Read)?;
        let session_id = match session_id.0.as_deref() {
            Some(id) => Some(validate::id("session_id", id)?),
            None => None,
        };
        let budget = match budget_tokens.0.map(|b| b.0) {
            None => handover::DEFAULT_BUDGET,
            Some(n) if (handover::MIN_BUDGET..=handover::MAX_BUDGET).contains(&(n as usize)) => {
                n as usize
            }
            Some(_) => {
                return Err(ApiError::invalid(
                    Code::InvalidBudget,
                    "budget_tokens",
                    format!(
                        "`budget_tokens` must be between {} and {}",
                        handover::MIN_BUDGET,
                        handover::MAX_BUDGET
                    ),
                )
                .into())
            }
        };
        let inputs = handover::Inputs {
            embedder: self.0.embedder.as_deref(),
            weights: Weights::from(&self.0.settings.search),
            encoding: self.0.settings.tokenizer,
        };
        let started = std::time::Instant::now();
        let out = handover::build(
            &self.0.store,
            &inputs,
            &project,
            session_id.as_deref(),
            budget,
        )
        .await?;
        tracing::debug!(project = %project, related = out.related.len(), tokens = out.tokens_used, duration_ms = started.elapsed().as_millis() as u64, "handover built");
        Ok(Json(out))
    }
}
