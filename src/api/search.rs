//! `POST /v1/sessions/search` (related sessions by meaning) and `GET /v1/handover`.

use std::sync::Arc;

use poem::web::Data;
use poem_openapi::{param::Query, payload::Json, Object, OpenApi};

use super::body::JsonBody;
use super::error::Handled;
use super::ApiTags;
use crate::app::AppState;
use crate::auth::{Principal, Scope};
use crate::domain::validate;
use crate::error::ApiError;
use crate::recall::handover::{self, Handover};
use crate::recall::search::{self, Hit, Mode, Weights};

pub struct SearchApi(pub Arc<AppState>);

/// A search over a project's sessions.
#[derive(Object, serde::Deserialize)]
pub struct SearchRequest {
    /// Project id (at most 128 characters).
    pub project: String,
    /// What to look for, in any words: at most 1000 characters. Lucene syntax has no
    /// effect; every character is searched as text.
    pub query: String,
    /// Sessions to return: 1 to 50, default 10.
    pub limit: Option<u32>,
}

#[derive(Object)]
pub struct SearchResponse {
    /// `hybrid` (BM25 and embeddings, fused by reciprocal rank) or `fulltext` (BM25 only).
    pub mode: Mode,
    /// Best first by `score`.
    pub sessions: Vec<Hit>,
    /// Why vectors were not used for this query (`mode` is then `fulltext`): the embedded
    /// model is missing or still loading, or the embeddings endpoint failed.
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
                "invalid_limit",
                "limit",
                format!("`limit` must be between 1 and {}", search::MAX_LIMIT),
            ))
        }
    };
    Ok((project, query, limit))
}

#[OpenApi(prefix_path = "/v1", tag = "ApiTags::Search")]
impl SearchApi {
    /// Sessions related to a query, by words (BM25) and — when an embeddings endpoint is
    /// configured — by meaning, re-ranked by similarity, recency and importance.
    #[oai(path = "/sessions/search", method = "post")]
    async fn search(
        &self,
        auth: Data<&Principal>,
        body: JsonBody<SearchRequest>,
    ) -> Handled<Json<SearchResponse>> {
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

    /// The wake-up handover for a new session: the last session's summary and unfinished
    /// work, related past sessions with relevance, patterns (active beliefs, files iterated
    /// on in ≥ 3 related sessions) and suggested next steps — as JSON and as a Markdown block
    /// of at most `budget_tokens` tokens.
    #[oai(path = "/handover", method = "get")]
    async fn handover(
        &self,
        auth: Data<&Principal>,
        /// Project id (at most 128 characters).
        project: Query<String>,
        /// The session waking up (its task says what is related); optional.
        session_id: Query<Option<String>>,
        /// Token budget of `markdown`: 50 to 20000, default 1500.
        budget_tokens: Query<Option<u32>>,
    ) -> Handled<Json<Handover>> {
        let project = validate::project("project", &project.0)?;
        auth.require(&project, Scope::Read)?;
        let session_id = match session_id.0.as_deref() {
            Some(id) => Some(validate::id("session_id", id)?),
            None => None,
        };
        let budget = match budget_tokens.0 {
            None => handover::DEFAULT_BUDGET,
            Some(n) if (handover::MIN_BUDGET..=handover::MAX_BUDGET).contains(&(n as usize)) => {
                n as usize
            }
            Some(_) => {
                return Err(ApiError::invalid(
                    "invalid_budget",
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
