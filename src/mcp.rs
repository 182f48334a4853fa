//! MCP at `/mcp`: the official `rmcp` SDK's streamable HTTP server (stateless, JSON answers),
//! bridged into the poem route tree by [`McpEndpoint`]. Authentication is the API's: the
//! `RequireKey` middleware checks the key on `/mcp` and leaves the [`Principal`] in the
//! request, which each tool reads back and checks exactly like the HTTP routes do.
//!
//! Tools call the services the HTTP routes call (`capture` for writes, `recall`, `knowledge`
//! and `graph` for reads), with the same validation and limits.

use std::sync::Arc;

use bytes::Bytes;
use futures::TryStreamExt;
use http_body_util::{BodyDataStream, Full};
use poem::{Endpoint, IntoResponse, Request, Response};
use rmcp::{
    handler::server::{common::Extension, router::tool::ToolRouter, wrapper::Parameters},
    model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig},
    tool, tool_handler, tool_router,
    transport::streamable_http_server::{
        session::local::LocalSessionManager, StreamableHttpServerConfig, StreamableHttpService,
    },
    ErrorData, ServerHandler,
};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::auth::{Principal, Scope};
use crate::claude::context;
use crate::domain::budget::Allocation;
use crate::domain::record::{DecisionInput, MemoryInput};
use crate::error::{ApiError, ApiResult};
use crate::request::{
    self, BeliefsAsk, ContextAsk, HandoverAsk, KnowledgeAsk, SearchAsk, SessionId, TurnSearchAsk,
};
use crate::state::AppState;

/// The MCP server: one per request (stateless), sharing the application state.
#[derive(Clone)]
pub struct CairnMcp {
    state: Arc<AppState>,
    tool_router: ToolRouter<Self>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct RecordDecision {
    /// Project id. Optional when the API key belongs to one project.
    pub project: Option<String>,
    /// The session the decision was made in (the Claude Code session id), if any.
    pub session_id: Option<String>,
    /// What was decided about, in a few words ("database engine", "retry policy"). A later
    /// decision on the same subject supersedes this one. At most 512 characters.
    pub subject: String,
    /// What was chosen. At most 4096 characters.
    pub choice: String,
    /// Why: the reasoning a future reader needs. At most 16384 characters.
    pub rationale: String,
    /// Alternatives considered and rejected (at most 50).
    pub alternatives: Option<Vec<String>>,
    /// How sure you are, 0..1 (default 0.7).
    pub confidence: Option<f64>,
    /// Files the decision concerns (at most 200).
    pub files: Option<Vec<String>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct Remember {
    /// Project id. Optional when the API key belongs to one project.
    pub project: Option<String>,
    /// The current session id, if any.
    pub session_id: Option<String>,
    /// `fact`, `assumption`, `lesson` or `discovery`.
    pub kind: String,
    /// What to remember, self-contained. At most 16384 characters.
    pub content: String,
    /// 0..1 (default 0.8).
    pub confidence: Option<f64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListBeliefs {
    /// Project id. Optional when the API key belongs to one project.
    pub project: Option<String>,
    /// `proposed`, `active` or `rejected`; all when absent.
    pub status: Option<String>,
    /// At most this many (default 200, at most 1000).
    pub limit: Option<u32>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct GetHandover {
    /// Project id. Optional when the API key belongs to one project.
    pub project: Option<String>,
    /// The current session, left out of the handover.
    pub session_id: Option<String>,
    /// Token budget of the answer (16 to 1000000, default 1500).
    pub budget_tokens: Option<u32>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReconstructSession {
    /// Project id. Optional when the API key belongs to one project.
    pub project: Option<String>,
    /// The session to reconstruct.
    pub session_id: String,
    /// At most this many operations, the most important kept (default 1000, at most 5000).
    pub max_operations: Option<u32>,
    /// Include `read` operations (default true; false leaves out the most numerous and least
    /// telling kind).
    pub include_reads: Option<bool>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchSessions {
    /// Project id. Optional when the API key belongs to one project.
    pub project: Option<String>,
    /// What you are looking for, in plain words (at most 1000 characters).
    #[schemars(length(min = 1, max = 1000))]
    pub query: String,
    /// How many sessions (default 10, at most 50).
    #[schemars(range(min = 1, max = 50))]
    pub limit: Option<u32>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchMemory {
    /// Project id. Optional when the API key belongs to one project.
    pub project: Option<String>,
    /// What you are looking for, in plain words (at most 1000 characters).
    #[schemars(length(min = 1, max = 1000))]
    pub query: String,
    /// How many turns (default 10, at most 50).
    #[schemars(range(min = 1, max = 50))]
    pub limit: Option<u32>,
    /// Kinds to keep (at most 16): `message`, `decision`, `tool_call`, `write`, `read`,
    /// `search`, `todo`, `memory`, `summary`. All when absent.
    #[schemars(length(max = 16), extend("items" = {"type": "string", "enum": ["read", "write", "tool_call", "search", "decision", "message", "todo", "memory", "summary"]}))]
    pub types: Option<Vec<String>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct GetContext {
    /// Project id. Optional when the API key belongs to one project.
    pub project: Option<String>,
    /// Context for this session (its history and the sessions it continues)…
    pub session_id: Option<String>,
    /// …or for this task (related sessions of the project; at most 4096 characters).
    #[schemars(length(max = 4096))]
    pub task: Option<String>,
    /// Token budget of the whole answer (16 to 1000000; 4000 is a good start).
    #[schemars(range(min = 16, max = 1_000_000))]
    pub budget_tokens: u32,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct GetKnowledge {
    /// Project id. Optional when the API key belongs to one project.
    pub project: Option<String>,
    /// Project-relative paths of the files you are about to change (at most 200).
    pub files: Vec<String>,
    /// Token budget of the Markdown report (16 to 1000000, default 2000).
    pub budget_tokens: Option<u32>,
}

fn principal(parts: &http::request::Parts) -> Result<Principal, ErrorData> {
    parts
        .extensions
        .get::<Principal>()
        .cloned()
        .ok_or_else(|| ErrorData::invalid_request("not authenticated", None))
}

/// The project a tool call touches (`request::resolve`); a blank `project` argument counts
/// as none, as agents fill optional arguments with empty strings.
fn project_of(p: &Principal, named: Option<&str>, scope: Scope) -> ApiResult<String> {
    let named = named.filter(|n| !n.trim().is_empty());
    Ok(request::resolve(p, named, scope)?.into_string())
}

/// An optional argument as the request layer reads it: blank counts as absent.
fn given(arg: Option<&str>) -> Option<&str> {
    arg.filter(|a| !a.trim().is_empty())
}

/// Tool failures are results the agent reads (with the stable code), not protocol errors.
fn answer(result: ApiResult<serde_json::Value>) -> Result<CallToolResult, ErrorData> {
    Ok(match result {
        Ok(v) => CallToolResult::success(vec![ContentBlock::text(
            serde_json::to_string_pretty(&v).unwrap_or_default(),
        )]),
        Err(err) => {
            err.log("mcp tool failed");
            let body = err.body();
            CallToolResult::error(vec![ContentBlock::text(format!(
                "{} ({}{})",
                body.error.message,
                body.error.code,
                body.error
                    .field
                    .map(|f| format!(", field `{f}`"))
                    .unwrap_or_default()
            ))])
        }
    })
}

#[tool_router]
impl CairnMcp {
    pub fn new(state: Arc<AppState>) -> Self {
        Self {
            state,
            tool_router: Self::tool_router(),
        }
    }

    #[tool(
        description = "Record a decision you (or the user) made, with its rationale and the alternatives rejected, so later sessions know what was chosen and why. A later decision on the same subject supersedes the earlier one. Use it for choices a future reader would otherwise have to rediscover: libraries, designs, conventions, trade-offs."
    )]
    async fn record_decision(
        &self,
        Extension(parts): Extension<http::request::Parts>,
        Parameters(p): Parameters<RecordDecision>,
    ) -> Result<CallToolResult, ErrorData> {
        let who = principal(&parts)?;
        answer(
            async {
                let project = project_of(&who, p.project.as_deref(), Scope::Write)?;
                let (id, applied) = self
                    .state
                    .capture
                    .record_decision(&DecisionInput {
                        project,
                        session_id: p.session_id,
                        subject: p.subject,
                        choice: p.choice,
                        rationale: p.rationale,
                        alternatives: p.alternatives,
                        confidence: p.confidence,
                        affects_beliefs: None,
                        files: p.files,
                    })
                    .await?;
                Ok(serde_json::json!({"decision_id": id, "applied": applied == crate::capture::Applied::Yes}))
            }
            .await,
        )
    }

    #[tool(
        description = "Remember something worth knowing in later sessions of this project: a fact, an assumption, a lesson learned or a discovery. Write it self-contained (it will be read without this conversation)."
    )]
    async fn remember(
        &self,
        Extension(parts): Extension<http::request::Parts>,
        Parameters(p): Parameters<Remember>,
    ) -> Result<CallToolResult, ErrorData> {
        let who = principal(&parts)?;
        answer(
            async {
                let project = project_of(&who, p.project.as_deref(), Scope::Write)?;
                let (id, applied) = self
                    .state
                    .capture
                    .remember(&MemoryInput {
                        project,
                        session_id: p.session_id,
                        kind: p.kind,
                        content: p.content,
                        confidence: p.confidence,
                    })
                    .await?;
                Ok(serde_json::json!({"memory_id": id, "applied": applied == crate::capture::Applied::Yes}))
            }
            .await,
        )
    }

    #[tool(
        description = "List what the project believes to be true (its beliefs), each with its conviction (0..1), status (proposed, active, rejected) and how much evidence supports or contradicts it. Check it before acting on an assumption about the codebase or the team's conventions."
    )]
    async fn list_beliefs(
        &self,
        Extension(parts): Extension<http::request::Parts>,
        Parameters(p): Parameters<ListBeliefs>,
    ) -> Result<CallToolResult, ErrorData> {
        let who = principal(&parts)?;
        answer(
            async {
                let ask = BeliefsAsk::parse(
                    &who,
                    given(p.project.as_deref()),
                    p.status.as_deref(),
                    p.limit.map(i64::from),
                )?;
                let beliefs = ask.run(&self.state).await?;
                Ok(serde_json::json!({ "beliefs": beliefs }))
            }
            .await,
        )
    }

    #[tool(
        description = "Get the handover for this project as Markdown: what the latest sessions did and left (summary, next steps, open todos) and the decisions in force. Call it when you start work or lose track of where things stand."
    )]
    async fn get_handover(
        &self,
        Extension(parts): Extension<http::request::Parts>,
        Parameters(p): Parameters<GetHandover>,
    ) -> Result<CallToolResult, ErrorData> {
        let who = principal(&parts)?;
        answer(
            async {
                let ask = HandoverAsk::parse(
                    &who,
                    given(p.project.as_deref()),
                    given(p.session_id.as_deref()),
                    p.budget_tokens.map(i64::from),
                )?;
                let markdown = context::session_start(
                    &self.state,
                    &ask.project,
                    ask.session.as_deref().unwrap_or(""),
                    ask.budget.get(),
                )
                .await?;
                let project = ask.project.into_string();
                Ok(serde_json::json!({ "project": project, "markdown": markdown }))
            }
            .await,
        )
    }

    #[tool(
        description = "Reconstruct an earlier session of this project: a narrative of what was read, decided, written and left open, its operations in order (the most important kept when there are many), its decisions, the beliefs it informed and its unfinished work. Use it to pick up where a session stopped."
    )]
    async fn reconstruct_session(
        &self,
        Extension(parts): Extension<http::request::Parts>,
        Parameters(p): Parameters<ReconstructSession>,
    ) -> Result<CallToolResult, ErrorData> {
        let who = principal(&parts)?;
        answer(
            async {
                let project = project_of(&who, p.project.as_deref(), Scope::Read)?;
                let id = SessionId::parse("session_id", &p.session_id)?;
                let filter = request::reconstruction(
                    None,
                    p.include_reads,
                    None,
                    p.max_operations.map(i64::from),
                )?;
                let head = crate::recall::session(&self.state.store, &project, &id).await?;
                let r = crate::recall::reconstruction::reconstruct(
                    &self.state.store,
                    &self.state.logs,
                    &project,
                    head,
                    filter,
                )
                .await?;
                serde_json::to_value(r).map_err(ApiError::internal)
            }
            .await,
        )
    }

    #[tool(
        description = "Find earlier sessions of this project related to a query — by words, and by meaning when embeddings are configured — ranked by similarity, recency and importance. Each hit has the session id, its summary, the files it touched and how long ago it was; an empty list means nothing recorded bears on the query. Use it before starting work that may have been done or decided before."
    )]
    async fn search_sessions(
        &self,
        Extension(parts): Extension<http::request::Parts>,
        Parameters(p): Parameters<SearchSessions>,
    ) -> Result<CallToolResult, ErrorData> {
        let who = principal(&parts)?;
        answer(
            async {
                let ask = SearchAsk::parse(
                    &who,
                    given(p.project.as_deref()),
                    &p.query,
                    p.limit.map(i64::from),
                )?;
                let found = ask.run(&self.state).await?;
                Ok(serde_json::json!({"mode": found.mode, "sessions": found.hits, "degraded": found.degraded}))
            }
            .await,
        )
    }

    #[tool(
        description = "Search this project's memory at the level of single turns: conversation turns, tool calls, decisions (with the alternatives rejected), memories and session summaries that match a query — by words, and by meaning when embeddings are on — best first, near-duplicates held back. Each hit has its session, its place in it (seq), its type, a score, a snippet and why it matched (fulltext, vector or both); an empty list means nothing recorded bears on the query. Use it to find when and where something was said or decided."
    )]
    async fn search_memory(
        &self,
        Extension(parts): Extension<http::request::Parts>,
        Parameters(p): Parameters<SearchMemory>,
    ) -> Result<CallToolResult, ErrorData> {
        let who = principal(&parts)?;
        answer(
            async {
                let ask = TurnSearchAsk::parse(
                    &who,
                    given(p.project.as_deref()),
                    &p.query,
                    p.limit.map(i64::from),
                    p.types,
                )?;
                let found = crate::api::search::turn_search(&self.state, &ask).await?;
                serde_json::to_value(found).map_err(ApiError::internal)
            }
            .await,
        )
    }

    #[tool(
        description = "Get context from this project's memory that fits a token budget exactly: recent history (newest selected first, shown in order), the files involved, decisions, beliefs and memories — for a session (to continue it) or for a task (related past work). Warnings say what was left out."
    )]
    async fn get_context(
        &self,
        Extension(parts): Extension<http::request::Parts>,
        Parameters(p): Parameters<GetContext>,
    ) -> Result<CallToolResult, ErrorData> {
        let who = principal(&parts)?;
        answer(
            async {
                let ask = ContextAsk::parse(
                    &who,
                    given(p.project.as_deref()),
                    given(p.session_id.as_deref()),
                    p.task.as_deref(),
                    i64::from(p.budget_tokens),
                    None,
                    self.state.settings.tokenizer,
                )?;
                let ctx = ask.run(&self.state, Allocation::default()).await?;

                serde_json::to_value(ctx).map_err(ApiError::internal)
            }
            .await,
        )
    }

    #[tool(
        description = "What this project knows about some files before you change them: decisions about each file (with the alternatives that were rejected, and whether they still stand), active beliefs informed by work on it, recent sessions that touched it and open todos naming it. Returns a Markdown report within a token budget plus the structured data."
    )]
    async fn get_knowledge(
        &self,
        Extension(parts): Extension<http::request::Parts>,
        Parameters(p): Parameters<GetKnowledge>,
    ) -> Result<CallToolResult, ErrorData> {
        let who = principal(&parts)?;
        answer(
            async {
                let ask = KnowledgeAsk::parse(
                    &who,
                    given(p.project.as_deref()),
                    &p.files,
                    p.budget_tokens.map(i64::from),
                    None,
                )?;
                let report = ask.run(&self.state).await?;
                serde_json::to_value(report).map_err(ApiError::internal)
            }
            .await,
        )
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for CairnMcp {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::default();
        info.capabilities = ServerCapabilities::builder().enable_tools().build();
        info.server_info = Implementation::new("cairn", env!("CARGO_PKG_VERSION"));
        info.instructions = Some(
            "cairn is this project's long-term memory: decisions with their rationale, \
             beliefs with evidence, and what earlier sessions did. Call get_handover when you \
             start, search_sessions or get_knowledge before changing something that may have \
             history, record_decision when a choice is made, remember for facts and lessons."
                .into(),
        );
        info
    }
}

/// `/mcp` as a poem endpoint around rmcp's tower service.
pub struct McpEndpoint {
    service: StreamableHttpService<CairnMcp, LocalSessionManager>,
}

impl McpEndpoint {
    pub fn new(state: Arc<AppState>) -> Self {
        // Stateless with JSON answers: every request stands alone, which suits keys checked
        // per request. Host checks are off: every call carries an API key, so a rebinding
        // page cannot use it.
        let mut config = StreamableHttpServerConfig::default().disable_allowed_hosts();
        config.legacy_session_mode = false;
        config.json_response = true;
        let service = StreamableHttpService::new(
            move || Ok(CairnMcp::new(state.clone())),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        Self { service }
    }
}

impl Endpoint for McpEndpoint {
    type Output = Response;

    async fn call(&self, req: Request) -> poem::Result<Response> {
        let principal = req.extensions().get::<Principal>().cloned();
        let (parts, body) = req.into_parts();
        let bytes = body.into_bytes().await?;
        let mut builder = http::Request::builder()
            .method(parts.method)
            .uri(parts.uri)
            .version(parts.version);
        if let Some(headers) = builder.headers_mut() {
            *headers = parts.headers;
        }
        let mut http_req = builder
            .body(Full::new(bytes))
            .map_err(poem::error::InternalServerError)?;
        if let Some(p) = principal {
            http_req.extensions_mut().insert(p);
        }
        let mut service = self.service.clone();
        let resp = tower_service::Service::call(&mut service, http_req)
            .await
            .unwrap_or_else(|never| match never {});
        let (head, body) = resp.into_parts();
        let stream = BodyDataStream::new(body).map_err(|never| match never {});
        let mut out =
            poem::Response::builder()
                .status(head.status)
                .body(poem::Body::from_bytes_stream::<_, Bytes, std::io::Error>(
                    stream,
                ));
        *out.headers_mut() = head.headers;
        Ok(out.into_response())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recall::turns;
    use crate::request::Limit;

    #[test]
    fn search_memory_states_the_limits_the_server_enforces() {
        let schema = serde_json::to_value(schemars::schema_for!(SearchMemory)).unwrap();
        let p = &schema["properties"];
        assert_eq!(p["limit"]["minimum"], 1, "{schema}");
        assert_eq!(p["limit"]["maximum"], Limit::TURNS.max, "{schema}");
        assert_eq!(p["query"]["maxLength"], turns::MAX_QUERY_CHARS, "{schema}");
        assert_eq!(p["types"]["maxItems"], turns::MAX_TYPES, "{schema}");
        let kinds: Vec<&str> = p["types"]["items"]["enum"]
            .as_array()
            .unwrap_or_else(|| panic!("{schema}"))
            .iter()
            .filter_map(|k| k.as_str())
            .collect();
        assert_eq!(kinds, turns::TURN_KINDS);
        let schema = serde_json::to_value(schemars::schema_for!(GetContext)).unwrap();
        assert_eq!(
            schema["properties"]["task"]["maxLength"],
            crate::recall::context::MAX_TASK_CHARS,
            "{schema}"
        );
    }
}
