//! `POST /v1/hooks/claude-code`: Claude Code HTTP hooks post their event JSON here (the
//! command hook `cairn hook claude-code` posts the same). The event goes through the one
//! mapping in `claude::mapping`; SessionStart answers with the handover, UserPromptSubmit with
//! the memory relevant to the prompt (nothing when none is) and PreToolUse of a file tool with
//! what is known about the file, as `hookSpecificOutput.additionalContext`
//! (`claude::context`). The command hook prints exactly this answer.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use poem_openapi::{param::Query, payload::Json, Object, OpenApi};

use poem_openapi::types::Type;

use super::body::JsonBody;
use super::error::{Body, Conflicts, Guarded, Handled, Missing, TimedOut, Unknown};
use super::key::ApiKey;
use super::params::{BlankOrProjectParam, SwitchBudgetParam};
use super::ApiTags;
use crate::auth::Scope;
use crate::claude::{self, context, mapping, mapping::Reply};
use crate::graph::StoreResult;
use crate::request::{self, TokenBudget};
use crate::state::AppState;

/// A hook event's answer being made.
type Answering<'a> = Pin<Box<dyn Future<Output = StoreResult<String>> + Send + 'a>>;

pub struct HooksApi(pub Arc<AppState>);

/// Claude Code's hook output: only `hookSpecificOutput` is ever set — the handover at
/// SessionStart, the memory relevant to the prompt at UserPromptSubmit, a file's context at
/// PreToolUse of a file tool — so the answer is `{}` for every other event. Its text is recorded memory, fenced and labelled as data.
#[derive(Object, Default)]
pub struct HookReply {
    #[oai(rename = "hookSpecificOutput", skip_serializing_if_is_none)]
    pub hook_specific_output: Option<HookSpecificOutput>,
}

#[derive(Object)]
pub struct HookSpecificOutput {
    /// The event answered (`SessionStart`, `UserPromptSubmit`, `PreToolUse`).
    #[oai(rename = "hookEventName")]
    pub hook_event_name: String,
    /// Markdown Claude Code adds to the session's context.
    #[oai(rename = "additionalContext")]
    pub additional_context: String,
}

/// A hook event as Claude Code sends it: any JSON object (checked by `claude::mapping`, which
/// names what is wrong as `invalid_event`).
#[derive(serde::Deserialize)]
#[serde(transparent)]
pub struct HookEvent(pub serde_json::Value);

impl Type for HookEvent {
    const IS_REQUIRED: bool = true;
    type RawValueType = serde_json::Value;
    type RawElementValueType = serde_json::Value;

    fn name() -> std::borrow::Cow<'static, str> {
        "HookEvent".into()
    }
    fn schema_ref() -> poem_openapi::registry::MetaSchemaRef {
        use poem_openapi::registry::{MetaSchema, MetaSchemaRef};
        let any = MetaSchemaRef::Inline(Box::new(MetaSchema::ANY));
        // Other fields are read leniently by `claude::events`; only the session is a must.
        let properties = vec![("session_id", <super::params::IdParam as Type>::schema_ref())];
        MetaSchemaRef::Inline(Box::new(MetaSchema {
            required: vec!["session_id"],
            properties,
            additional_properties: Some(Box::new(any)),
            ..MetaSchema::new("object")
        }))
    }
    fn as_raw_value(&self) -> Option<&serde_json::Value> {
        Some(&self.0)
    }
    fn raw_element_iter<'a>(&'a self) -> Box<dyn Iterator<Item = &'a serde_json::Value> + 'a> {
        Box::new(self.as_raw_value().into_iter())
    }
}

#[OpenApi(prefix_path = "/v1", tag = "ApiTags::Hooks")]
impl HooksApi {
    /// Capture one Claude Code hook event (the body is the event JSON as Claude Code sends
    /// it; unknown events and fields are accepted and ignored). Secrets in it are redacted
    /// and `<private>…</private>` dropped before anything is stored; tool responses are
    /// summarised (at most 1000 characters kept). The project is `project`, else the key's
    /// project, else the name of the git root of the event's `cwd`. Body at most the
    /// server's request limit (4 MiB by default). An answer not ready by its event's deadline
    /// (SessionStart 2 s, UserPromptSubmit 1 s, PreToolUse 0.5 s) is left out; the event is
    /// still captured.
    #[oai(path = "/hooks/claude-code", method = "post")]
    async fn claude_code(
        &self,
        auth: ApiKey,
        /// The project the event belongs to (default: the key's project, else the git root
        /// name of the event's `cwd`).
        project: Query<Option<BlankOrProjectParam>>,
        /// Token budget of the SessionStart and PreToolUse context: 16 to 1,000,000
        /// (default 1500), or 0 for none.
        budget_tokens: Query<Option<SwitchBudgetParam>>,
        /// Token budget of the memory recalled for a UserPromptSubmit's prompt: 16 to
        /// 1,000,000 (default 600), or 0 for none.
        prompt_tokens: Query<Option<SwitchBudgetParam>>,
        /// Answer the event without capturing it (the command hook sends it later, behind
        /// the events spooled before it).
        answer_only: Query<Option<bool>>,
        body: JsonBody<HookEvent>,
    ) -> Handled<Json<HookReply>, (Guarded, Body, Missing, Conflicts, Unknown, TimedOut)> {
        let event = mapping::parse(body.0 .0)?;
        let named = project
            .0
            .as_ref()
            .map(|p| p.0.as_str())
            .filter(|p| !p.trim().is_empty());
        let project = request::resolve_or(
            &auth,
            named,
            || event.cwd.as_deref().and_then(claude::project_from_cwd),
            Scope::Write,
        )?;
        let budget = TokenBudget::parse_switch(
            "budget_tokens",
            budget_tokens.0.map(|b| i64::from(b.0)),
            TokenBudget::SESSION_START,
        )?;
        let prompt_budget = TokenBudget::parse_switch(
            "prompt_tokens",
            prompt_tokens.0.map(|b| i64::from(b.0)),
            TokenBudget::PROMPT,
        )?;
        let plan = mapping::plan(&event, &project)?;
        if answer_only.0 != Some(true) {
            let applied = Box::pin(mapping::apply(&self.0.capture, &plan)).await?;
            tracing::debug!(
                hook.event = %event.hook_event_name,
                session.id = %plan.session_id,
                project = %project,
                operations = plan.operations.len(),
                applied = ?applied,
                "claude code hook captured"
            );
        }
        let wanted = match plan.reply {
            Reply::Prompt => prompt_budget,
            _ => budget,
        };
        let Some(wanted) = wanted.map(TokenBudget::get) else {
            return Ok(Json(HookReply::default()));
        };
        // Each answer with its event's deadline; boxed, as these futures are large (the
        // handover runs a search).
        let (bound, answering): (u64, Answering<'_>) = match &plan.reply {
            Reply::Nothing => return Ok(Json(HookReply::default())),
            Reply::Prompt => (
                claude::PROMPT_ANSWER_MS,
                Box::pin(context::prompt(
                    &self.0,
                    &project,
                    &plan.session_id,
                    event.prompt.as_deref().unwrap_or_default(),
                    wanted,
                )),
            ),
            Reply::Handover { source } => (
                claude::SESSION_START_ANSWER_MS,
                Box::pin(context::session_start_for(
                    &self.0,
                    &project,
                    &plan.session_id,
                    wanted,
                    source,
                )),
            ),
            Reply::FileContext { path } => (
                claude::PRE_TOOL_ANSWER_MS,
                Box::pin(context::file(
                    &self.0,
                    &project,
                    &plan.session_id,
                    plan.start.cwd.as_deref(),
                    path,
                    wanted.min(context::FILE_BUDGET_TOKENS),
                )),
            ),
        };
        // The answer is worth nothing after the event's deadline: an HTTP hook would hold the
        // agent up to Claude Code's own timeout, and a command hook has stopped waiting.
        let answer = match tokio::time::timeout(Duration::from_millis(bound), answering).await {
            Ok(answer) => answer,
            Err(_) => {
                metrics::counter!("cairn_hook_answers_late_total").increment(1);
                tracing::warn!(
                    hook.event = %event.hook_event_name,
                    session.id = %plan.session_id,
                    deadline_ms = bound,
                    "hook context not ready by the event's deadline; answered with none (the event is captured)"
                );
                Ok(String::new())
            }
        };
        let text = answer.unwrap_or_else(|err| {
            // The event is captured; a missing context must not fail the hook.
            tracing::warn!(error = %err, session.id = %plan.session_id, "no hook context");
            String::new()
        });
        Ok(Json(HookReply {
            hook_specific_output: (!text.is_empty()).then(|| HookSpecificOutput {
                hook_event_name: event.hook_event_name.clone(),
                additional_context: text,
            }),
        }))
    }
}
