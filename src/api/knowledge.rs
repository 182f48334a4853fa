//! `GET /v1/knowledge`: the CI knowledge endpoint.

use std::sync::Arc;

use poem_openapi::{
    param::Query,
    payload::{Json, PlainText},
    ApiResponse, OpenApi, ResponseContent,
};

use super::error::{Guarded, Handled};
use super::key::ApiKey;
use super::params::{FileListParam, FormatParam, ProjectParam, Ranged};
use super::ApiTags;
use crate::auth::Scope;
use crate::domain::{limits::MAX_FILES_PER_OPERATION, limits::MAX_PATH_CHARS, paths, validate};
use crate::error::{ApiError, Code};
use crate::knowledge::{self, KnowledgeReport};
use crate::state::AppState;

pub struct KnowledgeApi(pub Arc<AppState>);

#[derive(ResponseContent)]
pub enum KnowledgeBody {
    Json(Json<KnowledgeReport>),
    /// The Markdown report alone, ready for a PR comment.
    Markdown(PlainText<String>),
}

#[derive(ApiResponse)]
pub enum KnowledgeResponse {
    #[oai(status = 200)]
    Ok(KnowledgeBody),
}

#[OpenApi(prefix_path = "/v1", tag = "ApiTags::Knowledge")]
impl KnowledgeApi {
    /// What is known about some files: decisions (with rejected alternatives and
    /// supersession), active beliefs informed by work on them, recent sessions that touched
    /// them, open todos naming them. `files` is comma-separated (at most 200 paths);
    /// `format=markdown` returns only the Markdown; `budget_tokens` (16..=32000, default 2000)
    /// bounds the Markdown.
    #[oai(path = "/knowledge", method = "get")]
    async fn knowledge(
        &self,
        auth: ApiKey,
        project: Query<ProjectParam>,
        files: Query<FileListParam>,
        format: Query<Option<FormatParam>>,
        budget_tokens: Query<Option<Ranged<u32, 16, 32_000>>>,
    ) -> Handled<KnowledgeResponse, Guarded> {
        let project = validate::project("project", &project.0)?;
        auth.require(&project, Scope::Read)?;
        let mut list: Vec<String> = Vec::new();
        for raw in files.0.split(',').map(str::trim).filter(|f| !f.is_empty()) {
            if raw.chars().count() > MAX_PATH_CHARS {
                return Err(
                    ApiError::too_long("files", MAX_PATH_CHARS, "characters per path").into(),
                );
            }
            let p = paths::normalize(raw, None);
            if !list.contains(&p) {
                list.push(p);
            }
        }
        if list.is_empty() {
            return Err(ApiError::missing("files").into());
        }
        if list.len() > MAX_FILES_PER_OPERATION {
            return Err(ApiError::too_long("files", MAX_FILES_PER_OPERATION, "paths").into());
        }
        let budget = budget_tokens.0.map_or(2000, |b| b.0);
        if !(16..=32_000).contains(&budget) {
            return Err(ApiError::invalid(
                Code::OutOfRange,
                "budget_tokens",
                "budget_tokens is between 16 and 32000",
            )
            .into());
        }
        let markdown = match format.0.as_deref() {
            None | Some("json") => false,
            Some("markdown") => true,
            Some(_) => {
                return Err(ApiError::invalid(
                    Code::InvalidFormat,
                    "format",
                    "format is `json` or `markdown`",
                )
                .into())
            }
        };
        let settings = &self.0.settings;
        let report = knowledge::report(
            &self.0.store,
            &project,
            &list,
            settings.belief_half_life_ms(),
            settings.tokenizer,
            budget,
        )
        .await?;
        Ok(KnowledgeResponse::Ok(if markdown {
            KnowledgeBody::Markdown(PlainText(report.markdown))
        } else {
            KnowledgeBody::Json(Json(report))
        }))
    }
}
