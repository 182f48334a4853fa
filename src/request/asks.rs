//! The requests several doors make, parsed once: a context, a session search, a turn
//! search, a handover, a knowledge report. Each `parse` takes the caller's key and the raw
//! fields as the door received them, and either returns a request whose every part is valid
//! and whose project the key may read, or the first fault (with its field).

use crate::auth::{Principal, Scope};
use crate::config::Encoding;
use crate::domain::budget::Allocation;
use crate::domain::limits::MAX_SUBJECT_CHARS;
use crate::domain::record::subject_key;
use crate::domain::state::BeliefStatus;
use crate::domain::{paths, validate};
use crate::error::{ApiError, ApiResult, Code};
use crate::graph::beliefs::{self, BeliefView};
use crate::graph::decisions::{self, DecisionFilter, DecisionView};
use crate::recall::context;
use crate::recall::search::{self, Weights};
use crate::recall::turns::{self, TurnQuery};
use crate::state::AppState;

use super::{encoding, resolve, Limit, ProjectId, Query, SessionId, Task, TokenBudget};

/// Context for a session (that session and those it continues), a task, or both.
#[derive(Debug)]
pub struct ContextAsk {
    pub project: ProjectId,
    pub session: Option<SessionId>,
    pub task: Option<Task>,
    pub budget: TokenBudget,
    pub encoding: Encoding,
    /// When the task is asked ([`asked_at`]); `None`: now.
    pub asked_at: Option<i64>,
}

/// When a query is asked, as a door received it (`asked_at`, RFC 3339): the times the query
/// names ("last week", "in June") and recency count back from then, so a question recorded
/// with its date is answered as it was asked. Absent: now.
pub fn asked_at(value: Option<&str>) -> ApiResult<Option<i64>> {
    value
        .map(|v| validate::timestamp("asked_at", v))
        .transpose()
}

impl ContextAsk {
    pub fn parse(
        who: &Principal,
        project: Option<&str>,
        session_id: Option<&str>,
        task: Option<&str>,
        budget_tokens: i64,
        encoding_name: Option<&str>,
        server_encoding: Encoding,
    ) -> ApiResult<Self> {
        let project = resolve(who, project, Scope::Read)?;
        let session = SessionId::parse_opt("session_id", session_id)?;
        let sent_task = task.is_some();
        let task = Task::parse_opt("task", task)?;
        if session.is_none() && task.is_none() {
            // A blank task sent is the field at fault; nothing sent, the session is missing.
            return Err(ApiError::invalid(
                Code::MissingField,
                if sent_task { "task" } else { "session_id" },
                "give `session_id` (context for a session) or `task` (context for a task)",
            ));
        }
        Ok(Self {
            project,
            session,
            task,
            budget: TokenBudget::parse("budget_tokens", budget_tokens)?,
            encoding: encoding("encoding", encoding_name, server_encoding)?,
            asked_at: None,
        })
    }

    /// Assembles it, the budget split per `allocation`.
    pub async fn run(
        &self,
        state: &AppState,
        allocation: Allocation,
    ) -> ApiResult<context::Context> {
        let req = context::Request {
            project: &self.project,
            session_id: self.session.as_deref(),
            task: self.task.as_ref().map(Task::as_str),
            budget: self.budget.get(),
            encoding: self.encoding,
            stored: state.settings.tokenizer,
            allocation,
            half_life_ms: state.settings.belief_half_life_ms(),
            finder: state.finder(),
            logs: &state.logs,
            asked_at: self.asked_at,
        };
        context::assemble(&state.store, &req).await
    }
}

/// Sessions related to a query.
#[derive(Debug)]
pub struct SearchAsk {
    pub project: ProjectId,
    pub query: Query,
    pub limit: usize,
    /// When the query is asked ([`asked_at`]); `None`: now.
    pub asked_at: Option<i64>,
}

impl SearchAsk {
    pub fn parse(
        who: &Principal,
        project: Option<&str>,
        query: &str,
        limit: Option<i64>,
    ) -> ApiResult<Self> {
        let project = resolve(who, project, Scope::Read)?;
        Ok(Self {
            project,
            query: Query::parse("query", query)?,
            limit: Limit::SESSIONS.parse("limit", limit)?,
            asked_at: None,
        })
    }

    pub async fn run(&self, state: &AppState) -> ApiResult<search::Found> {
        self.run_ranked_by(state, None).await
    }

    /// [`Self::run`] ranking sessions by turn hits the caller already has for the same query
    /// (at least [`search::TURN_HITS`] of them, from [`TurnSearchAsk::run`]), so the turns are
    /// searched once.
    pub async fn run_with_turns(
        &self,
        state: &AppState,
        turns: &[turns::TurnHit],
    ) -> ApiResult<search::Found> {
        self.run_ranked_by(state, Some(turns)).await
    }

    async fn run_ranked_by(
        &self,
        state: &AppState,
        turns: Option<&[turns::TurnHit]>,
    ) -> ApiResult<search::Found> {
        let started = std::time::Instant::now();
        let ask = search::Ask {
            lists: search::Lists::Both,
            project: &self.project,
            text: self.query.as_str(),
            limit: self.limit,
            exclude: &[],
            asked_at: self.asked_at,
            floor: Some(state.settings.search.min_cosine),
        };
        let found = Box::pin(search::search_in(
            &state.store,
            state.embedder.as_deref(),
            Weights::from(&state.settings.search),
            &ask,
            turns,
        ))
        .await?;
        metrics::histogram!("cairn_search_seconds").record(started.elapsed().as_secs_f64());
        tracing::debug!(project = %self.project, mode = ?found.mode, hits = found.hits.len(), duration_ms = started.elapsed().as_millis() as u64, "search answered");
        Ok(found)
    }
}

/// The turns that match a query, of some kinds or all.
#[derive(Debug)]
pub struct TurnSearchAsk {
    pub project: ProjectId,
    pub query: Query,
    pub limit: usize,
    pub types: Option<Vec<String>>,
    /// When the query is asked ([`asked_at`]); `None`: now.
    pub asked_at: Option<i64>,
}

impl TurnSearchAsk {
    pub fn parse(
        who: &Principal,
        project: Option<&str>,
        query: &str,
        limit: Option<i64>,
        types: Option<Vec<String>>,
    ) -> ApiResult<Self> {
        let project = resolve(who, project, Scope::Read)?;
        let query = Query::parse("query", query)?;
        let limit = Limit::TURNS.parse("limit", limit)?;
        let types = match types {
            None => None,
            Some(t) if t.len() > turns::MAX_TYPES => {
                return Err(ApiError::invalid(
                    Code::InvalidTypes,
                    "types",
                    format!("`types` names at most {} kinds", turns::MAX_TYPES),
                ))
            }
            Some(t) => {
                if let Some(i) = t
                    .iter()
                    .position(|k| !turns::TURN_KINDS.contains(&k.as_str()))
                {
                    return Err(ApiError::invalid(
                        Code::InvalidTypes,
                        format!("types[{i}]"),
                        format!(
                            "`types` entries are among: {}",
                            turns::TURN_KINDS.join(", ")
                        ),
                    ));
                }
                Some(t)
            }
        };
        Ok(Self {
            project,
            query,
            limit,
            types,
            asked_at: None,
        })
    }

    pub async fn run(&self, state: &AppState) -> ApiResult<turns::TurnResult> {
        let started = std::time::Instant::now();
        let found = turns::search_with(
            &state.store,
            state.embedder.as_deref(),
            Weights::from(&state.settings.search),
            &TurnQuery {
                project: &self.project,
                text: self.query.as_str(),
                limit: self.limit,
                types: self.types.as_deref(),
                sessions: None,
                exclude_session: None,
                count_pending: true,
                asked_at: self.asked_at,
                floor: Some(state.settings.search.min_cosine),
            },
        )
        .await?;
        metrics::histogram!("cairn_turn_search_seconds").record(started.elapsed().as_secs_f64());
        tracing::debug!(project = %self.project, mode = ?found.mode, hits = found.hits.len(), duration_ms = started.elapsed().as_millis() as u64, "turn search answered");
        Ok(found)
    }
}

/// The wake-up handover, leaving out the session waking up.
#[derive(Debug)]
pub struct HandoverAsk {
    pub project: ProjectId,
    pub session: Option<SessionId>,
    pub budget: TokenBudget,
}

impl HandoverAsk {
    pub fn parse(
        who: &Principal,
        project: Option<&str>,
        session_id: Option<&str>,
        budget_tokens: Option<i64>,
    ) -> ApiResult<Self> {
        Ok(Self {
            project: resolve(who, project, Scope::Read)?,
            session: SessionId::parse_opt("session_id", session_id)?,
            budget: TokenBudget::parse_or("budget_tokens", budget_tokens, TokenBudget::HANDOVER)?,
        })
    }
}

/// How a knowledge report is answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KnowledgeFormat {
    Json,
    Markdown,
}

/// What is known about some files.
#[derive(Debug)]
pub struct KnowledgeAsk {
    pub project: ProjectId,
    /// Normalised, deduplicated, at least one.
    pub files: Vec<String>,
    pub budget: TokenBudget,
    pub format: KnowledgeFormat,
}

impl KnowledgeAsk {
    /// The paths of a comma-separated list (`GET /v1/knowledge?files=`), blanks between
    /// commas ignored. A control character anywhere is refused, also beside a comma where
    /// trimming would drop it: the list is taken as sent or not at all.
    pub fn split_files(list: &str) -> ApiResult<Vec<String>> {
        if list.chars().any(char::is_control) {
            return Err(ApiError::invalid(
                Code::InvalidPath,
                "files",
                "paths may not contain control characters",
            ));
        }
        Ok(list
            .split(',')
            .map(str::trim)
            .filter(|f| !f.is_empty())
            .map(str::to_string)
            .collect())
    }

    pub fn parse(
        who: &Principal,
        project: Option<&str>,
        files: &[String],
        budget_tokens: Option<i64>,
        format: Option<&str>,
    ) -> ApiResult<Self> {
        let project = resolve(who, project, Scope::Read)?;
        let files = validate::files("files", Some(files), None)?;
        if files.is_empty() {
            return Err(ApiError::missing("files"));
        }
        let format = match format.map(str::trim) {
            None | Some("") | Some("json") => KnowledgeFormat::Json,
            Some("markdown") => KnowledgeFormat::Markdown,
            Some(_) => {
                return Err(ApiError::invalid(
                    Code::InvalidFormat,
                    "format",
                    "`format` is `json` or `markdown`",
                ))
            }
        };
        Ok(Self {
            project,
            files,
            budget: TokenBudget::parse_or("budget_tokens", budget_tokens, TokenBudget::KNOWLEDGE)?,
            format,
        })
    }

    pub async fn run(&self, state: &AppState) -> ApiResult<crate::knowledge::KnowledgeReport> {
        let settings = &state.settings;
        Ok(crate::knowledge::report(
            &state.store,
            &self.project,
            &self.files,
            settings.belief_half_life_ms(),
            settings.tokenizer,
            self.budget.get() as u32,
        )
        .await?)
    }
}

/// A project's beliefs, of one status or all.
#[derive(Debug)]
pub struct BeliefsAsk {
    pub project: ProjectId,
    pub status: Option<BeliefStatus>,
    pub limit: usize,
}

impl BeliefsAsk {
    pub fn parse(
        who: &Principal,
        project: Option<&str>,
        status: Option<&str>,
        limit: Option<i64>,
    ) -> ApiResult<Self> {
        let project = resolve(who, project, Scope::Read)?;
        let status = match status.map(str::trim) {
            None | Some("") => None,
            Some(s) => Some(BeliefStatus::parse(s).ok_or_else(|| {
                ApiError::invalid(
                    Code::InvalidStatus,
                    "status",
                    "`status` is `proposed`, `active` or `rejected`",
                )
            })?),
        };
        Ok(Self {
            project,
            status,
            limit: Limit::BELIEFS.parse("limit", limit)?,
        })
    }

    pub async fn run(&self, state: &AppState) -> ApiResult<Vec<BeliefView>> {
        Ok(beliefs::list(
            &state.store,
            &self.project,
            self.status.map(BeliefStatus::as_str),
            state.settings.belief_half_life_ms(),
            self.limit as i64,
        )
        .await?)
    }
}

/// A project's decisions, newest first: about one subject, or concerning one file, or all.
#[derive(Debug)]
pub struct DecisionsAsk {
    pub project: ProjectId,
    /// The subject's key (`subject_key`): case and spacing do not matter.
    pub subject_key: Option<String>,
    /// Normalised.
    pub file: Option<String>,
    pub limit: usize,
}

impl DecisionsAsk {
    pub fn parse(
        who: &Principal,
        project: Option<&str>,
        subject: Option<&str>,
        file: Option<&str>,
        limit: Option<i64>,
    ) -> ApiResult<Self> {
        let project = resolve(who, project, Scope::Read)?;
        let subject = validate::opt_text("subject", subject, MAX_SUBJECT_CHARS)?;
        let file = match file.map(str::trim).filter(|f| !f.is_empty()) {
            None => None,
            Some(f) => Some(paths::normalize(&validate::path("file", f)?, None)),
        };
        Ok(Self {
            project,
            subject_key: subject.as_deref().map(subject_key),
            file,
            limit: Limit::DECISIONS.parse("limit", limit)?,
        })
    }

    pub async fn run(&self, state: &AppState) -> ApiResult<Vec<DecisionView>> {
        Ok(decisions::list(
            &state.store,
            &self.project,
            &DecisionFilter {
                subject_key: self.subject_key.as_deref(),
                file: self.file.as_deref(),
                limit: self.limit as i64,
            },
        )
        .await?)
    }
}
