//! `/v1/extraction/runs`: trigger an extraction run for a project (it runs in the background;
//! a dry run answers at once with the prompts) and inspect a run's figures.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use tracing::Instrument;

use poem_openapi::{
    param::{Path, Query},
    payload::Json,
    ApiResponse, Object, OpenApi,
};

use super::body::JsonBody;
use super::error::{Body, Conflicts, Guarded, Handled, Missing};
use super::key::ApiKey;
use super::params::{IdParam, ProjectParam};
use super::ApiTags;
use crate::auth::Scope;
use crate::domain::{state::RunStatus, validate};
use crate::error::{ApiError, Code};
use crate::extract::{self, Job, RunRequest};
use crate::graph::extraction::{self as g, RunStats, RunView};
use crate::graph::now_ms;
use crate::request::{self, ProjectId};
use crate::state::AppState;

pub struct ExtractionApi(pub Arc<AppState>);

/// Most sessions one run analyses.
pub const MAX_SESSIONS_PER_RUN: u32 = 10_000;

/// A run to start. `since` is a duration such as `24h`, `7d` or `30m` (≤ 32 characters);
/// `max_sessions` 1..=10000 (default 500).
#[derive(Object, serde::Deserialize)]
pub struct RunInput {
    #[oai(validator(min_length = 1, max_length = 128, pattern = r"^\s*[A-Za-z0-9._-]+\s*$"))]
    pub project: String,
    /// Only sessions closed within this long (`24h`, `7d`, `30m`).
    #[oai(validator(
        max_length = 32,
        pattern = r"^\s*(0*[1-9][0-9]{0,5}(\.[0-9]+)?|0*\.[0-9]*[1-9][0-9]*)\s*[smhdw]\s*$"
    ))]
    pub since: Option<String>,
    #[oai(validator(minimum(value = "1"), maximum(value = "10000")))]
    pub max_sessions: Option<u32>,
    /// Build each prompt and return it with its token count; write nothing, call no LLM.
    pub dry_run: Option<bool>,
}

#[derive(Object)]
pub struct RunStarted {
    pub run_id: String,
    /// `running`: poll `GET /v1/extraction/runs/{id}`.
    pub status: String,
    /// `llm` or `mining_only` (no LLM configured).
    pub mode: String,
}

#[derive(Object)]
pub struct PromptView {
    pub session_id: String,
    pub tokens: u64,
    /// Tokens of the mining-hints section.
    pub hint_tokens: u64,
    pub prompt: String,
}

#[derive(Object)]
pub struct DryRun {
    pub mode: String,
    pub prompt_version: String,
    pub sessions: u64,
    pub prompts: Vec<PromptView>,
}

#[derive(ApiResponse)]
pub enum RunAnswer {
    /// Dry run: the prompts that would be sent; nothing was written.
    #[oai(status = 200)]
    DryRun(Json<DryRun>),
    /// The run started in the background.
    #[oai(status = 202)]
    Started(Json<RunStarted>),
}

/// Projects with a run in progress in this process: one at a time per project.
fn running() -> &'static Mutex<HashSet<String>> {
    static RUNNING: std::sync::OnceLock<Mutex<HashSet<String>>> = std::sync::OnceLock::new();
    RUNNING.get_or_init(Default::default)
}

struct RunningGuard(String);

impl RunningGuard {
    fn take(project: &str) -> Option<Self> {
        let mut set = running().lock().unwrap_or_else(|p| p.into_inner());
        set.insert(project.to_string())
            .then(|| Self(project.to_string()))
    }
}

impl Drop for RunningGuard {
    fn drop(&mut self) {
        running()
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.0);
    }
}

#[OpenApi(prefix_path = "/v1", tag = "ApiTags::Extraction")]
impl ExtractionApi {
    /// Start an extraction run over the project's closed sessions not yet extracted with the
    /// current prompt version (a second run finds nothing to do). Answers 202 with the run id;
    /// with `dry_run`, 200 with each prompt and its token count. 409 `extraction_running`
    /// while another run of the project is in progress.
    #[oai(path = "/extraction/runs", method = "post")]
    async fn start(
        &self,
        auth: ApiKey,
        body: JsonBody<RunInput>,
    ) -> Handled<RunAnswer, (Guarded, Body, Conflicts)> {
        let b = body.0;
        let project = request::resolve(&auth, Some(&b.project), Scope::Write)?.into_string();
        let since_ms = match b.since.as_deref() {
            Some(s) if s.chars().count() > 32 => {
                return Err(ApiError::too_long("since", 32, "characters").into())
            }
            Some(s) => Some(
                now_ms()
                    - extract::parse_since(s).ok_or_else(|| {
                        ApiError::invalid(
                            Code::InvalidSince,
                            "since",
                            "`since` is a number and a unit: 24h, 7d, 30m",
                        )
                    })?,
            ),
            None => None,
        };
        let max_sessions = b.max_sessions.unwrap_or(500);
        if !(1..=MAX_SESSIONS_PER_RUN).contains(&max_sessions) {
            return Err(ApiError::invalid(
                Code::InvalidMaxSessions,
                "max_sessions",
                format!("`max_sessions` is between 1 and {MAX_SESSIONS_PER_RUN}"),
            )
            .into());
        }
        let settings = &self.0.settings;
        let job = Job::new(
            self.0.store.clone(),
            settings.extract.clone(),
            settings.tokenizer,
            settings.belief_half_life_ms(),
        )
        .map_err(ApiError::internal)?;
        let guard = RunningGuard::take(&project).ok_or_else(|| {
            ApiError::invalid(
                Code::ExtractionRunning,
                "project",
                "an extraction run of this project is in progress; wait for it to finish",
            )
        })?;
        let mut req = RunRequest {
            project: Some(project.clone()),
            since_ms,
            max_sessions: max_sessions as usize,
            dry_run: b.dry_run.unwrap_or(false),
            run_id: None,
        };
        if req.dry_run {
            let out = job
                .run_once(&req, &extract::Silent)
                .await
                .map_err(ApiError::internal)?;
            drop(guard);
            return Ok(RunAnswer::DryRun(Json(DryRun {
                mode: out.mode.into(),
                prompt_version: out.version.into(),
                sessions: out.total.sessions as u64,
                prompts: out
                    .prompts
                    .into_iter()
                    .map(|p| PromptView {
                        session_id: p.session_id,
                        tokens: p.tokens as u64,
                        hint_tokens: p.hint_tokens as u64,
                        prompt: p.text.unwrap_or_default(),
                    })
                    .collect(),
            })));
        }
        let run_id = uuid::Uuid::now_v7().to_string();
        g::run_create(&self.0.store, &run_id, &project, job.mode(), job.version()).await?;
        req.run_id = Some(run_id.clone());
        let mode = job.mode().to_string();
        let store = self.0.store.clone();
        let span = tracing::info_span!("job", job.name = "extraction", run.id = %run_id, project = %project);
        tokio::spawn(async move {
            let _guard = guard;
            let started = now_ms();
            if let Err(e) = job.run_once(&req, &extract::Silent).await {
                tracing::error!(run.id = ?req.run_id, error = %format!("{e:#}"), "extraction run failed");
                let record = g::RunRecord {
                    id: req.run_id.as_deref().unwrap_or_default(),
                    project: req.project.as_deref().unwrap_or_default(),
                    mode: job.mode(),
                    prompt_version: job.version(),
                    status: RunStatus::Failed.as_str(),
                    started_at: started,
                    stats: &RunStats::default(),
                    errors: &[format!("{e:#}")],
                };
                if let Err(e) = g::run_finish(&store, &record).await {
                    tracing::error!(error = %e, "could not record the failed extraction run");
                }
            }
        }.instrument(span));
        Ok(RunAnswer::Started(Json(RunStarted {
            run_id,
            status: RunStatus::Running.as_str().into(),
            mode,
        })))
    }

    /// An extraction run: status, sessions, patterns, beliefs created / reinforced /
    /// contradicted, evidence ids rejected, tokens, estimated cost, duration, errors.
    #[oai(path = "/extraction/runs/:id", method = "get")]
    async fn get(
        &self,
        auth: ApiKey,
        id: Path<IdParam>,
        project: Query<Option<ProjectParam>>,
    ) -> Handled<Json<RunView>, (Guarded, Missing)> {
        let project =
            request::scoped(&auth, project.0.as_deref(), Scope::Read)?.map(ProjectId::into_string);
        let id = validate::id("id", &id.0)?;
        let run = g::run_get(&self.0.store, &id)
            .await?
            .filter(|r| project.as_deref().is_none_or(|p| p == r.project))
            .ok_or_else(|| ApiError::not_found(Code::ExtractionRunNotFound, "id"))?;
        Ok(Json(run))
    }
}
