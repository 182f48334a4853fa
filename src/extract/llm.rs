//! The LLM client: chat completions through async-openai against any OpenAI-compatible
//! endpoint. `response_format` is the answer's JSON schema; a server that refuses it (400/422)
//! is asked again in JSON mode, and JSON mode is kept for the rest of the run. The HTTP stack
//! is a tower service: a concurrency limit, an overall timeout, and retries on 429/5xx that
//! honour Retry-After (else exponential backoff), around a reqwest client with a per-request
//! timeout whose requests are retried when they time out.

use std::{
    future::Future,
    pin::Pin,
    sync::atomic::{AtomicBool, Ordering},
    task::{Context, Poll},
};

use async_openai::{
    config::OpenAIConfig,
    error::OpenAIError,
    middleware::{retry::OpenAIRetryLayer, HttpRequestFactory},
    types::chat::{CreateChatCompletionRequest, CreateChatCompletionResponse},
    Client,
};
use serde_json::{json, Value};

use crate::config::ExtractSettings;

/// One chat message.
#[derive(Clone, Debug)]
pub struct Message {
    pub role: &'static str,
    pub content: String,
}

impl Message {
    pub fn new(role: &'static str, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
        }
    }
}

/// An answer and what it cost.
#[derive(Clone, Debug, Default)]
pub struct Completion {
    pub text: String,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    #[error("the LLM request failed: {0}")]
    Request(String),
    #[error("the LLM answered without content")]
    Empty,
}

pub struct LlmClient {
    client: Client<OpenAIConfig>,
    model: String,
    /// False once the server refused `json_schema`: JSON mode from then on.
    schema_mode: AtomicBool,
}

impl LlmClient {
    /// The client, or `None` when no base URL is configured (mining-only mode).
    pub fn from_settings(s: &ExtractSettings) -> anyhow::Result<Option<Self>> {
        let Some(base) = s
            .llm_base_url
            .as_deref()
            .map(str::trim)
            .filter(|b| !b.is_empty())
        else {
            return Ok(None);
        };
        let http = reqwest::Client::builder()
            .timeout(s.llm_timeout())
            .build()
            .map_err(|e| anyhow::anyhow!("could not build the LLM HTTP client: {e}"))?;
        // Retries sit inside the overall timeout, so one slow or rate-limited request never
        // holds a session longer than max_retries + 1 request timeouts.
        let total = s.llm_timeout() * (s.llm_max_retries as u32 + 1);
        let service = tower::ServiceBuilder::new()
            .concurrency_limit(s.llm_concurrency.max(1))
            .timeout(total)
            .layer(OpenAIRetryLayer::new(s.llm_max_retries))
            .service(RetryTimeouts {
                http,
                retries: s.llm_max_retries,
            });
        let config = OpenAIConfig::new()
            .with_api_base(base.trim_end_matches('/'))
            .with_api_key(s.llm_api_key.0.clone());
        Ok(Some(Self {
            client: Client::with_config(config).with_http_service(service),
            model: s.llm_model.clone(),
            schema_mode: AtomicBool::new(true),
        }))
    }

    pub fn model(&self) -> &str {
        &self.model
    }

    fn request(
        &self,
        messages: &[Message],
        schema: Option<&Value>,
    ) -> Result<CreateChatCompletionRequest, LlmError> {
        let response_format = match schema {
            Some(schema) => json!({"type": "json_schema", "json_schema": {
                "name": "cairn_patterns", "schema": schema, "strict": true}}),
            None => json!({"type": "json_object"}),
        };
        let messages: Vec<Value> = messages
            .iter()
            .map(|m| json!({"role": m.role, "content": m.content}))
            .collect();
        serde_json::from_value(json!({
            "model": self.model,
            "messages": messages,
            "temperature": 0,
            "response_format": response_format,
        }))
        .map_err(|e| LlmError::Request(format!("could not build the request: {e}")))
    }

    /// One chat completion (HTTP retries included) constrained to `schema`.
    pub async fn complete(
        &self,
        messages: &[Message],
        schema: &Value,
    ) -> Result<Completion, LlmError> {
        if self.schema_mode.load(Ordering::Relaxed) {
            match self.send(self.request(messages, Some(schema))?).await {
                Err(OpenAIError::ApiError(e)) if matches!(e.status_code.as_u16(), 400 | 422) => {
                    tracing::warn!(
                        llm.model = %self.model,
                        error = %e,
                        "the LLM server refused a json_schema response_format; using JSON mode"
                    );
                    self.schema_mode.store(false, Ordering::Relaxed);
                }
                other => return into_completion(other),
            }
        }
        into_completion(self.send(self.request(messages, None)?).await)
    }

    async fn send(
        &self,
        request: CreateChatCompletionRequest,
    ) -> Result<CreateChatCompletionResponse, OpenAIError> {
        metrics::counter!("cairn_extract_llm_requests_total").increment(1);
        self.client.chat().create(request).await
    }
}

/// The HTTP transport: a request that times out (the server hung) is sent again, up to
/// `retries` times, as the retry layer above does for 429 and 5xx answers.
#[derive(Clone)]
struct RetryTimeouts {
    http: reqwest::Client,
    retries: usize,
}

type Sent = Pin<Box<dyn Future<Output = Result<reqwest::Response, OpenAIError>> + Send>>;

impl tower_service::Service<HttpRequestFactory> for RetryTimeouts {
    type Response = reqwest::Response;
    type Error = OpenAIError;
    type Future = Sent;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: HttpRequestFactory) -> Self::Future {
        let (http, retries) = (self.http.clone(), self.retries);
        Box::pin(async move {
            let mut attempt = 0;
            loop {
                match http.execute(request.build().await?).await {
                    Err(e) if e.is_timeout() && attempt < retries => {
                        attempt += 1;
                        metrics::counter!("cairn_extract_llm_timeouts_total").increment(1);
                        tracing::warn!(attempt, "the LLM request timed out; sending it again");
                    }
                    other => return other.map_err(OpenAIError::Reqwest),
                }
            }
        })
    }
}

fn into_completion(
    out: Result<CreateChatCompletionResponse, OpenAIError>,
) -> Result<Completion, LlmError> {
    let response = out.map_err(|e| LlmError::Request(e.to_string()))?;
    let text = response
        .choices
        .into_iter()
        .next()
        .and_then(|c| c.message.content)
        .filter(|t| !t.trim().is_empty())
        .ok_or(LlmError::Empty)?;
    let (prompt_tokens, completion_tokens) = response
        .usage
        .map(|u| (u64::from(u.prompt_tokens), u64::from(u.completion_tokens)))
        .unwrap_or_default();
    Ok(Completion {
        text,
        prompt_tokens,
        completion_tokens,
    })
}
