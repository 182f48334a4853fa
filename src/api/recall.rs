//! The read path over HTTP: session reconstruction, the sliding window, and token-budgeted
//! context. Validation and scoping here; the work is in [`crate::recall`].

use std::sync::Arc;

use poem_openapi::{
    param::{Path, Query},
    payload::Json,
    Object, OpenApi,
};

use super::body::JsonBody;
use super::error::{Body, Guarded, Handled, Missing};
use super::key::ApiKey;
use super::params::{IdParam, ProjectParam, Ranged};
use super::ApiTags;
use crate::auth::{Principal, Scope};
use crate::domain::budget::Allocation;
use crate::error::{ApiError, ApiResult, Code};
use crate::recall::{
    self,
    context::Context,
    reconstruction::{self, Reconstruction, MAX_OPERATIONS},
    window::{self, Window, MAX_TOKEN_LIMIT},
    SessionHead,
};
use crate::request::{self, asked_at, ContextAsk, SessionId};
use crate::state::AppState;

pub struct RecallApi(pub Arc<AppState>);

/// How the budget is split; every field optional (defaults below: the whole budget is the
/// context's). `content`, `response` and `overhead` are fractions of the budget (0..1,
/// summing to at most 1); `history`, `files` and `metadata` are relative weights within the
/// content share (0..1).
#[derive(Object, Default, serde::Deserialize)]
pub struct AllocationInput {
    /// Share of the budget for content, above 0 (default: what `response` and `overhead`
    /// leave, 0.8 when neither is sent).
    #[oai(validator(minimum(value = "0", exclusive = true), maximum(value = "1")))]
    pub content: Option<f64>,
    /// Share kept free inside the budget for the model's response (default 0).
    #[oai(validator(minimum(value = "0"), maximum(value = "1")))]
    pub response: Option<f64>,
    /// Share for framing: title and headings (default 0.2).
    #[oai(validator(minimum(value = "0"), maximum(value = "1")))]
    pub overhead: Option<f64>,
    /// Weight of session history within content (default 0.5).
    #[oai(validator(minimum(value = "0"), maximum(value = "1")))]
    pub history: Option<f64>,
    /// Weight of file references within content (default 0.2).
    #[oai(validator(minimum(value = "0"), maximum(value = "1")))]
    pub files: Option<f64>,
    /// Weight of decisions, beliefs and memories within content (default 0.3).
    #[oai(validator(minimum(value = "0"), maximum(value = "1")))]
    pub metadata: Option<f64>,
}

/// A context request: `session_id` (that session and the sessions it continues) or `task`
/// (related sessions of the project), or both.
#[derive(Object, serde::Deserialize)]
pub struct ContextBody {
    #[oai(validator(min_length = 1, max_length = 128, pattern = r"^\s*[A-Za-z0-9._-]+\s*$"))]
    pub project: String,
    /// Context for this session (≤ 200 characters).
    #[oai(validator(
        min_length = 1,
        max_length = 200,
        pattern = r"^[^\u0000-\u001f\u007f-\u009f]*[^\s\u0000-\u001f\u007f-\u009f][^\u0000-\u001f\u007f-\u009f]*$"
    ))]
    pub session_id: Option<String>,
    /// Context for this task (≤ 4096 characters).
    #[oai(validator(max_length = 4096))]
    pub task: Option<String>,
    /// Token budget, 16 to 1,000,000. `tokens_used` never exceeds it.
    #[oai(validator(minimum(value = "16"), maximum(value = "1000000")))]
    pub budget_tokens: i64,
    /// `o200k_base` or `cl100k_base`; default: the server's tokenizer.
    #[oai(validator(pattern = r"^\s*(o200k_base|cl100k_base)?\s*$"))]
    pub encoding: Option<String>,
    pub allocation: Option<AllocationInput>,
    /// When the question is asked, RFC 3339 (at most 64 characters, e.g.
    /// `2023-05-30T23:40:00Z`): the times it names ("last week", "two months ago", "in June")
    /// and recency count back from then (what happened more than a day after it gets no lift
    /// of recency), so a question recorded with its date is answered as it was asked. Absent:
    /// now. Anything else, blank included, is `invalid_timestamp`.
    #[oai(validator(max_length = 64))]
    pub asked_at: Option<String>,
}

impl AllocationInput {
    fn resolve(&self) -> ApiResult<Allocation> {
        let d = Allocation::default();
        let response = self.response.unwrap_or(d.response);
        let overhead = self.overhead.unwrap_or(d.overhead);
        let fraction = |v: f64| (0.0..=1.0).contains(&v);
        // Content not sent is what the response and framing leave (0.8 by default), so
        // `response` alone keeps room for a reply.
        let derived = self.content.is_none() && fraction(response) && fraction(overhead);
        let a = Allocation {
            content: match self.content {
                Some(c) => c,
                None if derived => 1.0 - response - overhead,
                None => d.content,
            },
            response,
            overhead,
            history: self.history.unwrap_or(d.history),
            files: self.files.unwrap_or(d.files),
            metadata: self.metadata.unwrap_or(d.metadata),
        };
        a.check().map_err(|e| {
            // A derived content is never the field at fault: the shares sent that left it
            // nothing are.
            let (field, message) = if derived && e.field == "content" {
                let sent = if self.response.is_some() {
                    "response"
                } else {
                    "overhead"
                };
                (
                    sent,
                    "response + overhead must leave room for content (below 1)",
                )
            } else {
                (e.field, e.message)
            };
            ApiError::invalid(
                Code::InvalidAllocation,
                format!("allocation.{field}"),
                message,
            )
        })?;
        Ok(a)
    }
}

impl RecallApi {
    /// The session addressed by `id`, in the key's project (or the one asked for).
    async fn addressed(
        &self,
        auth: &Principal,
        id: &str,
        project: Option<&str>,
    ) -> ApiResult<(String, SessionHead)> {
        let scoped = request::scoped(auth, project, Scope::Read)?;
        let id = SessionId::parse("id", id)?;
        let project = match scoped {
            Some(p) => p.into_string(),
            None => {
                crate::graph::sessions::get(&self.0.store, &id)
                    .await?
                    .ok_or_else(|| ApiError::not_found(Code::SessionNotFound, "id"))?
                    .project
            }
        };
        let head = recall::session(&self.0.store, &project, &id).await?;
        Ok((project, head))
    }
}

#[OpenApi(prefix_path = "/v1", tag = "ApiTags::Recall")]
impl RecallApi {
    /// Reconstruct a session: its narrative, operations (seq order), decisions, the beliefs
    /// it informed and what it left unfinished. When `max_operations` cuts, the most
    /// important are kept (decisions > writes > tool calls > todos > searches > messages >
    /// reads; newer first within a kind).
    #[oai(path = "/sessions/:id/reconstruction", method = "get")]
    #[allow(clippy::too_many_arguments)] // one per query parameter of the contract
    async fn reconstruction(
        &self,
        auth: ApiKey,
        id: Path<IdParam>,
        project: Query<Option<ProjectParam>>,
        /// Include decision operations and the decisions list (default true).
        include_decisions: Query<Option<bool>>,
        /// Include `read` operations (default true).
        include_reads: Query<Option<bool>>,
        /// Include `write` operations (default true).
        include_writes: Query<Option<bool>>,
        /// At most this many operations, 0 to 5000 (default 1000).
        max_operations: Query<Option<Ranged<i64, 0, { MAX_OPERATIONS as i64 }>>>,
    ) -> Handled<Json<Reconstruction>, (Guarded, Missing)> {
        let filter = request::reconstruction(
            include_decisions.0,
            include_reads.0,
            include_writes.0,
            max_operations.0.map(|m| m.0),
        )?;
        let (project, head) = self.addressed(&auth, &id.0, project.0.as_deref()).await?;
        Ok(Json(
            reconstruction::reconstruct(&self.0.store, &self.0.logs, &project, head, filter)
                .await?,
        ))
    }

    /// The sliding window: the newest conversation turns that fit `token_limit`, at least
    /// one (the newest, cut to the limit when it alone is longer), oldest first.
    #[oai(path = "/sessions/:id/window", method = "get")]
    async fn window(
        &self,
        auth: ApiKey,
        id: Path<IdParam>,
        project: Query<Option<ProjectParam>>,
        /// Token limit, 1 to 200,000.
        token_limit: Query<Ranged<i64, 1, { MAX_TOKEN_LIMIT as i64 }>>,
    ) -> Handled<Json<Window>, (Guarded, Missing)> {
        if !(1..=MAX_TOKEN_LIMIT as i64).contains(&token_limit.0 .0) {
            return Err(ApiError::invalid(
                Code::InvalidTokenLimit,
                "token_limit",
                format!("token_limit is between 1 and {MAX_TOKEN_LIMIT}"),
            )
            .into());
        }
        let (project, head) = self.addressed(&auth, &id.0, project.0.as_deref()).await?;
        Ok(Json(
            window::window(
                &self.0.store,
                &project,
                &head.id,
                token_limit.0 .0 as usize,
                self.0.settings.tokenizer,
            )
            .await?,
        ))
    }

    /// Token-budgeted context for a session or a task. Of the budget, by default 80 % goes
    /// to content and 20 % covers framing, what framing leaves going to content (a
    /// `response` share, default 0, stays free); content is split
    /// between history, file references and metadata (decisions, beliefs, memories), a share
    /// one section does not need flowing to the others. For a session, each section collects
    /// newest-first and presents oldest-first; the newest history item is always there (cut
    /// to fit). For a task, history holds the operations turn search ranks most relevant
    /// (grouped by session, in the order they happened), files are those operations' files
    /// in the order of the hits, and decisions, beliefs and memories come by relevance.
    /// `tokens_used` is exactly the token count of `text` and never exceeds `budget_tokens`.
    #[oai(path = "/context", method = "post")]
    async fn context(
        &self,
        auth: ApiKey,
        body: JsonBody<ContextBody>,
    ) -> Handled<Json<Context>, (Guarded, Body, Missing)> {
        let b = body.0;
        let mut ask = ContextAsk::parse(
            &auth,
            Some(&b.project),
            b.session_id.as_deref(),
            b.task.as_deref(),
            b.budget_tokens,
            b.encoding.as_deref(),
            self.0.settings.tokenizer,
        )?;
        ask.asked_at = asked_at(b.asked_at.as_deref())?;
        let allocation = b.allocation.unwrap_or_default().resolve()?;
        Ok(Json(ask.run(&self.0, allocation).await?))
    }
}
