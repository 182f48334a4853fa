//! `/v1/sessions`: start, close, read, purge, and the operations captured in a session.

use std::sync::Arc;

use poem_openapi::{
    param::{Path, Query},
    payload::Json,
    ApiResponse, Object, OpenApi,
};

use super::body::JsonBody;
use super::error::{Body, Conflicts, Guarded, Handled, Missing, TimedOut, Unknown};
use super::key::ApiKey;
use super::params::{IdParam, ProjectParam};
use super::ApiTags;
use crate::auth::Scope;
use crate::capture::Applied;
use crate::domain::{
    operation::OperationInput, record::SessionClose, record::SessionStart, validate,
};
use crate::error::{ApiError, Code};
use crate::graph::sessions::SessionRow;
use crate::request::{self, ProjectId};
use crate::state::AppState;

pub struct SessionsApi(pub Arc<AppState>);

/// The answer to a session write.
#[derive(Object)]
pub struct SessionAck {
    pub session_id: String,
    /// True once it is in Neo4j; false when it is durable in the spool and applied later.
    pub applied: bool,
}

#[derive(ApiResponse)]
pub enum SessionWritten {
    /// Written to Neo4j.
    #[oai(status = 201)]
    Created(Json<SessionAck>),
    /// Durable in the spool; Neo4j is slow or down and it will be applied later.
    #[oai(status = 202)]
    Accepted(Json<SessionAck>),
}

impl SessionWritten {
    fn from(session_id: String, applied: Applied) -> Self {
        match applied {
            Applied::Yes => Self::Created(Json(SessionAck {
                session_id,
                applied: true,
            })),
            Applied::Queued => Self::Accepted(Json(SessionAck {
                session_id,
                applied: false,
            })),
        }
    }
}

/// A batch of operations. At most 1000 per request.
#[derive(Object, serde::Deserialize)]
pub struct OperationBatch {
    #[oai(validator(min_items = 1, max_items = 1000))]
    pub operations: Vec<OperationInput>,
}

#[derive(Object)]
pub struct OperationsAck {
    /// Operations accepted (resent ids included; they are stored once).
    pub accepted: u64,
    /// Always true: the batch is on disk.
    pub durable: bool,
    /// True when the batch is already in Neo4j (`sync=true`).
    pub applied: bool,
}

#[derive(ApiResponse)]
pub enum OperationsWritten {
    /// In Neo4j (`sync=true`): readable at once.
    #[oai(status = 201)]
    Applied(Json<OperationsAck>),
    /// Durable in the spool; written to Neo4j in the background, in arrival order.
    #[oai(status = 202)]
    Accepted(Json<OperationsAck>),
}

#[derive(Object)]
pub struct Deleted {
    pub deleted: bool,
}

#[OpenApi(prefix_path = "/v1", tag = "ApiTags::Sessions")]
impl SessionsApi {
    /// Start a session (idempotent on `session_id`).
    #[oai(path = "/sessions", method = "post")]
    async fn start(
        &self,
        auth: ApiKey,
        body: JsonBody<SessionStart>,
    ) -> Handled<SessionWritten, (Guarded, Body, Conflicts, Unknown)> {
        request::resolve(&auth, Some(&body.0.project), Scope::Write)?;
        let (id, applied) = self.0.capture.start_session(&body.0).await?;
        Ok(SessionWritten::from(id, applied))
    }

    /// A session's stored state.
    #[oai(path = "/sessions/:id", method = "get")]
    async fn get(
        &self,
        auth: ApiKey,
        id: Path<IdParam>,
        project: Query<Option<ProjectParam>>,
    ) -> Handled<Json<SessionRow>, (Guarded, Missing)> {
        let project = Query(
            request::scoped(&auth, project.0.as_deref(), Scope::Read)?.map(ProjectId::into_string),
        );
        let id = validate::id("id", &id.0)?;
        let row = crate::graph::sessions::get(&self.0.store, &id)
            .await?
            .filter(|s| project.0.as_deref().is_none_or(|p| p == s.project))
            .ok_or_else(|| ApiError::not_found(Code::SessionNotFound, "id"))?;
        Ok(Json(row))
    }

    /// Close a session with a summary and next steps.
    #[oai(path = "/sessions/:id/close", method = "post")]
    async fn close(
        &self,
        auth: ApiKey,
        id: Path<IdParam>,
        project: Query<Option<ProjectParam>>,
        body: JsonBody<SessionClose>,
    ) -> Handled<SessionWritten, (Guarded, Body, Missing)> {
        let project = Query(
            request::scoped(&auth, project.0.as_deref(), Scope::Write)?.map(ProjectId::into_string),
        );
        let id = validate::id("id", &id.0)?;
        let applied = self
            .0
            .capture
            .close_session(&id, project.0.as_deref(), &body.0)
            .await?;
        Ok(SessionWritten::from(id, applied))
    }

    /// Capture operations. Answers 202 once the batch is durable on disk; with `sync=true`,
    /// 201 once it is in Neo4j. The server numbers operations with gap-free `seq` in arrival
    /// order; an `id` sent twice is stored once. A rejected batch writes nothing.
    #[oai(path = "/sessions/:id/operations", method = "post")]
    async fn operations(
        &self,
        auth: ApiKey,
        id: Path<IdParam>,
        project: Query<Option<ProjectParam>>,
        /// Wait until the batch is in Neo4j (read-your-writes).
        sync: Query<Option<bool>>,
        body: JsonBody<OperationBatch>,
    ) -> Handled<OperationsWritten, (Guarded, Body, Missing, Unknown, TimedOut)> {
        let project = Query(
            request::scoped(&auth, project.0.as_deref(), Scope::Write)?.map(ProjectId::into_string),
        );
        let (count, applied) = self
            .0
            .capture
            .add_operations(
                &id.0,
                project.0.as_deref(),
                &body.0.operations,
                sync.0.unwrap_or(false),
            )
            .await?;
        let ack = OperationsAck {
            accepted: count as u64,
            durable: true,
            applied: applied == Applied::Yes,
        };
        Ok(match applied {
            Applied::Yes => OperationsWritten::Applied(Json(ack)),
            Applied::Queued => OperationsWritten::Accepted(Json(ack)),
        })
    }

    /// Delete a session and everything it owns (operations, its decisions, memories).
    #[oai(path = "/sessions/:id", method = "delete")]
    async fn delete(
        &self,
        auth: ApiKey,
        id: Path<IdParam>,
        project: Query<Option<ProjectParam>>,
    ) -> Handled<Json<Deleted>, (Guarded, Missing, TimedOut)> {
        let project = Query(
            request::scoped(&auth, project.0.as_deref(), Scope::Admin)?.map(ProjectId::into_string),
        );
        let applied = self
            .0
            .capture
            .purge_session(&id.0, project.0.as_deref())
            .await?;
        if let Some(p) = project.0.as_deref() {
            self.0.logs.forget_session(p.trim(), id.0.trim());
        }
        match applied {
            Applied::Yes => Ok(Json(Deleted { deleted: true })),
            Applied::Queued => Err(ApiError::timeout("deleting the session").into()),
        }
    }
}
