//! `/v1/decisions`: record a decision, read a subject's history.

use std::sync::Arc;

use poem_openapi::{param::Query, payload::Json, ApiResponse, Object, OpenApi};

use super::body::JsonBody;
use super::error::{Body, Guarded, Handled, Missing, Unknown};
use super::key::ApiKey;
use super::params::ProjectParam;
use super::ApiTags;
use crate::auth::Scope;
use crate::capture::Applied;
use crate::domain::{record::subject_key, record::DecisionInput, validate};
use crate::graph::decisions::{self, DecisionFilter, DecisionView};
use crate::state::AppState;

pub struct DecisionsApi(pub Arc<AppState>);

#[derive(Object)]
pub struct DecisionAck {
    pub id: String,
    /// True once it is in Neo4j.
    pub applied: bool,
    /// The decision it superseded, if any (known once applied).
    pub supersedes: Option<String>,
}

#[derive(ApiResponse)]
pub enum DecisionWritten {
    #[oai(status = 201)]
    Created(Json<DecisionAck>),
    /// Durable; applied when Neo4j is back.
    #[oai(status = 202)]
    Accepted(Json<DecisionAck>),
}

#[derive(Object)]
pub struct DecisionList {
    pub decisions: Vec<DecisionView>,
}

#[OpenApi(prefix_path = "/v1", tag = "ApiTags::Decisions")]
impl DecisionsApi {
    /// Record a decision: what was chosen, why, and what was rejected. A later decision on
    /// the same subject (case and spacing ignored) supersedes it.
    #[oai(path = "/decisions", method = "post")]
    async fn record(
        &self,
        auth: ApiKey,
        body: JsonBody<DecisionInput>,
    ) -> Handled<DecisionWritten, (Guarded, Body, Missing, Unknown)> {
        auth.require(body.0.project.trim(), Scope::Write)?;
        let (id, applied) = self.0.capture.record_decision(&body.0).await?;
        if applied == Applied::Queued {
            return Ok(DecisionWritten::Accepted(Json(DecisionAck {
                id,
                applied: false,
                supersedes: None,
            })));
        }
        let key = subject_key(&body.0.subject);
        let history = decisions::list(
            &self.0.store,
            body.0.project.trim(),
            &DecisionFilter {
                subject_key: Some(&key),
                file: None,
                limit: 5,
            },
        )
        .await?;
        let supersedes = history
            .into_iter()
            .find(|d| d.id == id)
            .and_then(|d| d.supersedes);
        Ok(DecisionWritten::Created(Json(DecisionAck {
            id,
            applied: true,
            supersedes,
        })))
    }

    /// Decision history, newest first, with what superseded what. Filter by `subject` or by
    /// `file` (decisions listing the file or naming it).
    #[oai(path = "/decisions", method = "get")]
    async fn list(
        &self,
        auth: ApiKey,
        project: Query<ProjectParam>,
        subject: Query<Option<String>>,
        file: Query<Option<String>>,
        /// At most this many (default 100, max 1000).
        limit: Query<Option<i64>>,
    ) -> Handled<Json<DecisionList>, Guarded> {
        auth.require(project.0.trim(), Scope::Read)?;
        let project = validate::project("project", &project.0)?;
        let key = subject.0.as_deref().map(subject_key);
        let file = file
            .0
            .as_deref()
            .map(|f| crate::domain::paths::normalize(f, None));
        let list = decisions::list(
            &self.0.store,
            &project,
            &DecisionFilter {
                subject_key: key.as_deref(),
                file: file.as_deref(),
                limit: limit.0.unwrap_or(100).clamp(1, 1000),
            },
        )
        .await?;
        Ok(Json(DecisionList { decisions: list }))
    }
}
