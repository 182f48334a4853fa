//! `/v1/decisions`: record a decision, read a subject's history.

use std::sync::Arc;

use poem_openapi::{param::Query, payload::Json, ApiResponse, Object, OpenApi};

use super::body::JsonBody;
use super::error::{Body, Guarded, Handled, Missing, Unknown};
use super::key::ApiKey;
use super::params::{PathParam, ProjectParam, Ranged, SubjectParam};
use super::ApiTags;
use crate::auth::Scope;
use crate::capture::Applied;
use crate::domain::{record::subject_key, record::DecisionInput};
use crate::graph::decisions::{self, DecisionFilter, DecisionView};
use crate::request::{self, DecisionsAsk, Limit};
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
        request::resolve(&auth, Some(&body.0.project), Scope::Write)?;
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
        /// The subject (at most 512 characters; case and spacing do not matter).
        subject: Query<Option<SubjectParam>>,
        /// A project-relative path (at most 1024 characters).
        file: Query<Option<PathParam>>,
        /// At most this many: 1 to 1000, default 100.
        limit: Query<Option<Ranged<i64, 1, { Limit::DECISIONS.max as i64 }>>>,
    ) -> Handled<Json<DecisionList>, Guarded> {
        let ask = DecisionsAsk::parse(
            &auth,
            Some(&project.0),
            subject.0.as_deref(),
            file.0.as_deref(),
            limit.0.map(|l| l.0),
        )?;
        let list = ask.run(&self.0).await?;
        Ok(Json(DecisionList { decisions: list }))
    }
}
