//! `/v1/beliefs`: create and list beliefs with conviction and evidence counts.

use std::sync::Arc;

use poem_openapi::{
    param::{Path, Query},
    payload::Json,
    Object, OpenApi,
};

use super::body::JsonBody;
use super::error::{Body, Conflicts, Guarded, Handled, Missing};
use super::key::ApiKey;
use super::params::{BeliefStatusParam, IdParam, ProjectParam, Ranged};
use super::ApiTags;
use crate::auth::{Principal, Scope};
use crate::domain::state::BeliefStatus;
use crate::domain::{limits::MAX_RATIONALE_CHARS, validate};
use crate::error::{ApiError, Code};
use crate::graph::beliefs::{self, BeliefView, NewBelief};
use crate::request::{self, BeliefsAsk, Limit};
use crate::state::AppState;

pub struct BeliefsApi(pub Arc<AppState>);

/// A belief to hold. `content` ≤ 16384 characters, `category` ≤ 100.
#[derive(Object, serde::Deserialize)]
pub struct BeliefInput {
    #[oai(validator(min_length = 1, max_length = 128, pattern = r"^\s*[A-Za-z0-9._-]+\s*$"))]
    pub project: String,
    #[oai(validator(min_length = 1, max_length = 16384, pattern = r"\S"))]
    pub content: String,
    #[oai(validator(max_length = 100))]
    pub category: Option<String>,
    /// Prior conviction 0..1 (default 0.5).
    #[oai(validator(minimum(value = "0"), maximum(value = "1")))]
    pub conviction: Option<f64>,
    /// `active` (default) or `proposed`.
    #[oai(validator(pattern = r"^(active|proposed)$"))]
    pub status: Option<String>,
}

#[derive(Object)]
pub struct BeliefCreated {
    pub id: String,
}

#[derive(Object)]
pub struct BeliefList {
    pub beliefs: Vec<BeliefView>,
}

/// A belief after review.
#[derive(Object)]
pub struct BeliefReviewed {
    pub id: String,
    /// The status now: `active` or `rejected`.
    pub status: String,
    /// The status before the review.
    pub previous: String,
}

#[OpenApi(prefix_path = "/v1", tag = "ApiTags::Beliefs")]
impl BeliefsApi {
    /// Hold a belief explicitly.
    #[oai(path = "/beliefs", method = "post")]
    async fn create(
        &self,
        auth: ApiKey,
        body: JsonBody<BeliefInput>,
    ) -> Handled<Json<BeliefCreated>, (Guarded, Body)> {
        let b = body.0;
        let project = request::resolve(&auth, Some(&b.project), Scope::Write)?.into_string();
        let content = validate::text("content", &b.content, MAX_RATIONALE_CHARS)?;
        let category = validate::opt_text("category", b.category.as_deref(), 100)?;
        let prior = validate::unit("conviction", b.conviction, 0.5)?;
        let status = b.status.as_deref().unwrap_or(BeliefStatus::Active.as_str());
        if !BeliefStatus::parse(status).is_some_and(|s| BeliefStatus::INITIAL.contains(&s)) {
            return Err(ApiError::invalid(
                Code::InvalidStatus,
                "status",
                "a new belief is `active` or `proposed`",
            )
            .into());
        }
        let id = validate::new_id();
        beliefs::create(
            &self.0.store,
            &NewBelief {
                id: &id,
                project: &project,
                content: &content,
                category: category.as_deref(),
                prior,
                status,
            },
        )
        .await?;
        Ok(Json(BeliefCreated { id }))
    }

    /// Beliefs with conviction, status and evidence counts, newest first.
    #[oai(path = "/beliefs", method = "get")]
    async fn list(
        &self,
        auth: ApiKey,
        project: Query<ProjectParam>,
        /// `proposed`, `active` or `rejected`.
        status: Query<Option<BeliefStatusParam>>,
        /// At most this many: 1 to 1000, default 200.
        limit: Query<Option<Ranged<i64, 1, { Limit::BELIEFS.max as i64 }>>>,
    ) -> Handled<Json<BeliefList>, Guarded> {
        let ask = BeliefsAsk::parse(
            &auth,
            Some(&project.0),
            status.0.as_deref(),
            limit.0.map(|l| l.0),
        )?;
        let list = ask.run(&self.0).await?;
        Ok(Json(BeliefList { beliefs: list }))
    }

    /// Approve a proposed belief: it becomes `active`. Approving an active belief changes
    /// nothing; a rejected one is 409 `invalid_transition`.
    #[oai(path = "/beliefs/:id/approve", method = "post")]
    async fn approve(
        &self,
        auth: ApiKey,
        id: Path<IdParam>,
        project: Query<Option<ProjectParam>>,
    ) -> Handled<Json<BeliefReviewed>, (Guarded, Missing, Conflicts)> {
        self.review(&auth, &id.0, project.0.as_deref(), BeliefStatus::Active)
            .await
    }

    /// Reject a proposed (or active) belief. Extraction does not propose it again from the
    /// same content or the same evidence.
    #[oai(path = "/beliefs/:id/reject", method = "post")]
    async fn reject(
        &self,
        auth: ApiKey,
        id: Path<IdParam>,
        project: Query<Option<ProjectParam>>,
    ) -> Handled<Json<BeliefReviewed>, (Guarded, Missing, Conflicts)> {
        self.review(&auth, &id.0, project.0.as_deref(), BeliefStatus::Rejected)
            .await
    }
}

impl BeliefsApi {
    async fn review(
        &self,
        auth: &Principal,
        id: &str,
        project: Option<&str>,
        to: BeliefStatus,
    ) -> Handled<Json<BeliefReviewed>, (Guarded, Missing, Conflicts)> {
        let project = request::resolve(auth, project, Scope::Write)?;
        let id = request::RecordId::parse("id", id)?;
        let r = beliefs::review(&self.0.store, &project, &id, to, &auth.actor())
            .await?
            .ok_or_else(|| ApiError::not_found(Code::BeliefNotFound, "id"))?;
        let to = to.as_str();
        if r.status != to {
            return Err(ApiError::invalid(
                Code::InvalidTransition,
                "id",
                format!("a {} belief cannot become {to}", r.previous),
            )
            .into());
        }
        Ok(Json(BeliefReviewed {
            id: id.into_string(),
            status: r.status,
            previous: r.previous,
        }))
    }
}
