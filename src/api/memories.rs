//! `/v1/memories`: explicit "remember this".

use std::sync::Arc;

use poem_openapi::{payload::Json, ApiResponse, Object, OpenApi};

use super::body::JsonBody;
use super::error::{Body, Guarded, Handled, Missing};
use super::key::ApiKey;
use super::ApiTags;
use crate::auth::Scope;
use crate::capture::Applied;
use crate::domain::record::MemoryInput;
use crate::request;
use crate::state::AppState;

pub struct MemoriesApi(pub Arc<AppState>);

#[derive(Object)]
pub struct MemoryAck {
    pub id: String,
    pub applied: bool,
}

#[derive(ApiResponse)]
pub enum MemoryWritten {
    #[oai(status = 201)]
    Created(Json<MemoryAck>),
    /// Durable; applied when Neo4j is back.
    #[oai(status = 202)]
    Accepted(Json<MemoryAck>),
}

#[OpenApi(prefix_path = "/v1", tag = "ApiTags::Memories")]
impl MemoriesApi {
    /// Remember a fact, assumption, lesson or discovery, optionally asserted in a session.
    #[oai(path = "/memories", method = "post")]
    async fn remember(
        &self,
        auth: ApiKey,
        body: JsonBody<MemoryInput>,
    ) -> Handled<MemoryWritten, (Guarded, Body, Missing)> {
        request::resolve(&auth, Some(&body.0.project), Scope::Write)?;
        let (id, applied) = self.0.capture.remember(&body.0).await?;
        Ok(match applied {
            Applied::Yes => MemoryWritten::Created(Json(MemoryAck { id, applied: true })),
            Applied::Queued => MemoryWritten::Accepted(Json(MemoryAck { id, applied: false })),
        })
    }
}
