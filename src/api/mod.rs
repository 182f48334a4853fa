//! The HTTP surface: one `#[OpenApi]` struct per resource, the error table's HTTP face
//! ([`error`]), request ids, spans and metrics ([`trace`]), bookmarks for read-your-writes
//! across replicas ([`bookmark`]), and the route tree with `/openapi.json` and `/docs`.

pub mod allow;
pub mod beliefs;
pub mod body;
pub mod bookmark;
pub mod decisions;
pub mod error;
pub mod extraction;
pub mod health;
pub mod hooks;
pub mod key;
pub mod knowledge;
pub mod memories;
pub mod params;
pub mod projects;
pub mod recall;
pub mod search;
pub mod sessions;
pub mod spec;
pub mod trace;

use std::sync::Arc;

use poem::{EndpointExt, Route};
use poem_openapi::{OpenApiService, Tags};

use crate::state::AppState;

#[derive(Tags)]
pub enum ApiTags {
    /// Liveness, readiness and metrics.
    Ops,
    /// Sessions and the operations captured in them.
    Sessions,
    /// Decisions with rationale, alternatives and supersession.
    Decisions,
    /// Beliefs and their evidence.
    Beliefs,
    /// Explicit memories.
    Memories,
    /// Whole-project administration.
    Projects,
    /// What is known about files (for CI).
    Knowledge,
    /// Reading memory back: reconstruction, context, the sliding window.
    Recall,
    /// The pattern-extraction job and its runs.
    Extraction,
    /// Agent hooks (Claude Code).
    Hooks,
    /// Related sessions and the wake-up handover.
    Search,
}

type Apis = (
    health::HealthApi,
    sessions::SessionsApi,
    decisions::DecisionsApi,
    beliefs::BeliefsApi,
    memories::MemoriesApi,
    projects::ProjectsApi,
    knowledge::KnowledgeApi,
    recall::RecallApi,
    extraction::ExtractionApi,
    hooks::HooksApi,
    search::SearchApi,
);

/// The OpenAPI service (also used to render the spec without a server).
pub fn service(state: Arc<AppState>) -> OpenApiService<Apis, ()> {
    OpenApiService::new(
        (
            health::HealthApi(state.clone()),
            sessions::SessionsApi(state.clone()),
            decisions::DecisionsApi(state.clone()),
            beliefs::BeliefsApi(state.clone()),
            memories::MemoriesApi(state.clone()),
            projects::ProjectsApi(state.clone()),
            knowledge::KnowledgeApi(state.clone()),
            recall::RecallApi(state.clone()),
            extraction::ExtractionApi(state.clone()),
            hooks::HooksApi(state.clone()),
            search::SearchApi(state),
        ),
        "cairn",
        env!("CARGO_PKG_VERSION"),
    )
    .description(
        "A durable, queryable memory for AI coding agents. Every `/v1` route needs \
         `Authorization: Bearer <key>`. Errors are always \
         `{\"error\": {\"code\", \"message\", \"field\"?, \"request_id\"}}` with a stable \
         `code`; `request_id` is the request's `X-Request-Id` (sent, or made by the server).",
    )
}

/// The whole route tree with its middleware.
pub fn routes(state: Arc<AppState>) -> impl poem::Endpoint {
    let max_body = state.settings.max_body_bytes;
    let auth = state.auth.clone();
    let mcp = crate::mcp::McpEndpoint::new(state.clone());
    let state_ui = state.clone();
    let api = service(state);
    let document = spec::document(&api.spec());
    let allow = std::sync::Arc::new(allow::AllowTable::from_spec(&document));
    let spec = poem::endpoint::make_sync(move |_| poem::web::Json(document.clone()));
    let docs = api.swagger_ui();
    Route::new()
        .nest("/", api)
        .at("/openapi.json", spec)
        .nest("/docs", docs)
        .at("/mcp", mcp)
        .nest("/ui", crate::ui::routes(state_ui))
        .with(bookmark::FollowBookmarks)
        .with(crate::auth::RequireKey(auth))
        .with(error::JsonErrors { max_body, allow })
        .with(trace::RequestTrace)
}
