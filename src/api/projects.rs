//! `/v1/projects/{id}`: purge a whole project.

use std::sync::Arc;

use poem_openapi::{param::Path, payload::Json, OpenApi};

use super::error::{Guarded, Handled, TimedOut};
use super::key::ApiKey;
use super::params::IdParam;
use super::sessions::Deleted;
use super::ApiTags;
use crate::auth::Scope;
use crate::capture::Applied;
use crate::error::ApiError;
use crate::request;
use crate::state::AppState;

pub struct ProjectsApi(pub Arc<AppState>);

#[OpenApi(prefix_path = "/v1", tag = "ApiTags::Projects")]
impl ProjectsApi {
    /// Delete every session, operation, decision, belief, memory and file of the project.
    #[oai(path = "/projects/:id", method = "delete")]
    async fn delete(
        &self,
        auth: ApiKey,
        id: Path<IdParam>,
    ) -> Handled<Json<Deleted>, (Guarded, TimedOut)> {
        let project = request::resolve(&auth, Some(&id.0), Scope::Admin)?;
        let applied = self.0.capture.purge_project(&project).await?;
        self.0.logs.forget_project(&project);
        match applied {
            Applied::Yes => {
                crate::graph::keys::audit(
                    &self.0.store,
                    id.0.trim(),
                    "project_purged",
                    &auth.actor(),
                    None,
                )
                .await?;
                Ok(Json(Deleted { deleted: true }))
            }
            Applied::Queued => Err(ApiError::timeout("deleting the project").into()),
        }
    }
}
