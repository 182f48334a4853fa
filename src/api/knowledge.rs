//! `GET /v1/knowledge`: the CI knowledge endpoint.

use std::sync::Arc;

use poem_openapi::{
    param::Query,
    payload::{Json, PlainText},
    ApiResponse, OpenApi, ResponseContent,
};

use super::error::{Guarded, Handled};
use super::key::ApiKey;
use super::params::{BudgetParam, FileListParam, FormatParam, ProjectParam};
use super::ApiTags;
use crate::knowledge::KnowledgeReport;
use crate::request::{KnowledgeAsk, KnowledgeFormat};
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
    /// `format=markdown` returns only the Markdown; `budget_tokens` (16 to 1,000,000, default 2000)
    /// bounds the Markdown.
    #[oai(path = "/knowledge", method = "get")]
    async fn knowledge(
        &self,
        auth: ApiKey,
        project: Query<ProjectParam>,
        files: Query<FileListParam>,
        format: Query<Option<FormatParam>>,
        budget_tokens: Query<Option<BudgetParam>>,
    ) -> Handled<KnowledgeResponse, Guarded> {
        let list = KnowledgeAsk::split_files(&files.0)?;
        let ask = KnowledgeAsk::parse(
            &auth,
            Some(&project.0),
            &list,
            budget_tokens.0.map(|b| i64::from(b.0)),
            format.0.as_deref(),
        )?;
        let report = ask.run(&self.0).await?;
        let markdown = ask.format == KnowledgeFormat::Markdown;
        Ok(KnowledgeResponse::Ok(if markdown {
            KnowledgeBody::Markdown(PlainText(report.markdown))
        } else {
            KnowledgeBody::Json(Json(report))
        }))
    }
}
