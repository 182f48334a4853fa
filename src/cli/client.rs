//! What the client commands (`ci`, `context`, `hook`, `import`) share: where cairn is, the key
//! to use, the project, and an [`ApiClient`] that turns cairn's error bodies into readable
//! errors.

use std::time::Duration;

use anyhow::{anyhow, Context};
use clap::Args;
use serde::de::DeserializeOwned;

use crate::config::Secret;

#[derive(Args, Clone, Debug)]
pub struct ClientSettings {
    /// Base URL of the cairn server.
    #[arg(
        long = "url",
        env = "CAIRN_URL",
        default_value = "http://127.0.0.1:8420"
    )]
    pub url: String,
    /// API key (`cairn_…`) of the project, write scope.
    #[arg(
        long = "api-key",
        env = "CAIRN_API_KEY",
        default_value = "",
        hide_env_values = true,
        hide_default_value = true
    )]
    pub api_key: Secret,
    /// The project (hooks and import default to the name of the git root of the working
    /// directory).
    #[arg(long, env = "CAIRN_PROJECT")]
    pub project: Option<String>,
    /// Request timeout in milliseconds (`ci`, `context`).
    #[arg(long, env = "CAIRN_TIMEOUT_MS", default_value_t = 30_000)]
    pub timeout_ms: u64,
}

impl ClientSettings {
    pub fn endpoint(&self, path: &str) -> String {
        format!("{}{path}", self.url.trim_end_matches('/'))
    }

    /// The URL of the session route `/v1/sessions/<id>/<rest>`, the id percent-encoded
    /// (session ids may hold `/`, `?`, `#` or spaces).
    pub fn session_endpoint(&self, id: &str, rest: &str) -> anyhow::Result<reqwest::Url> {
        let mut url = reqwest::Url::parse(&self.url).context("CAIRN_URL is not a URL")?;
        url.path_segments_mut()
            .map_err(|()| anyhow!("CAIRN_URL cannot hold a path"))?
            .pop_if_empty()
            .extend(["v1", "sessions", id, rest]);
        Ok(url)
    }

    /// An HTTP client sending the key, with the given connect timeout.
    pub fn client(&self, connect_timeout: Duration) -> anyhow::Result<reqwest::Client> {
        let mut headers = reqwest::header::HeaderMap::new();
        if !self.api_key.0.is_empty() {
            let mut value =
                reqwest::header::HeaderValue::from_str(&format!("Bearer {}", self.api_key.0))
                    .context("CAIRN_API_KEY is not a valid header value")?;
            value.set_sensitive(true);
            headers.insert(reqwest::header::AUTHORIZATION, value);
        }
        reqwest::Client::builder()
            .connect_timeout(connect_timeout)
            .default_headers(headers)
            .user_agent(concat!("cairn/", env!("CARGO_PKG_VERSION")))
            .build()
            .context("could not build the HTTP client")
    }

    /// The project, which this command needs.
    pub fn require_project(&self) -> anyhow::Result<String> {
        self.project
            .clone()
            .filter(|p| !p.trim().is_empty())
            .context("pass --project or set CAIRN_PROJECT")
    }
}

pub struct ApiClient {
    http: reqwest::Client,
    base: String,
    timeout: Duration,
}

impl ApiClient {
    pub fn new(s: &ClientSettings) -> anyhow::Result<Self> {
        // The key travels as a default header set by `ClientSettings::client`.
        let http = s.client(Duration::from_millis(s.timeout_ms.min(5_000)))?;
        Ok(Self {
            http,
            base: s.url.trim_end_matches('/').to_string(),
            timeout: Duration::from_millis(s.timeout_ms),
        })
    }

    /// GET `path` with `query`; the body as text (JSON or Markdown).
    pub async fn get_text(&self, path: &str, query: &[(&str, String)]) -> anyhow::Result<String> {
        let req = self.http.get(format!("{}{path}", self.base)).query(query);
        self.send(req, path).await
    }

    pub async fn get_json<T: DeserializeOwned>(
        &self,
        path: &str,
        query: &[(&str, String)],
    ) -> anyhow::Result<T> {
        let text = self.get_text(path, query).await?;
        serde_json::from_str(&text).with_context(|| format!("unexpected answer from {path}"))
    }

    pub async fn post_json<T: DeserializeOwned>(
        &self,
        path: &str,
        body: &serde_json::Value,
    ) -> anyhow::Result<T> {
        let req = self.http.post(format!("{}{path}", self.base)).json(body);
        let text = self.send(req, path).await?;
        serde_json::from_str(&text).with_context(|| format!("unexpected answer from {path}"))
    }

    async fn send(&self, req: reqwest::RequestBuilder, path: &str) -> anyhow::Result<String> {
        let resp = req.timeout(self.timeout).send().await.with_context(|| {
            format!(
                "could not reach cairn at {} (is `cairn serve` running? set CAIRN_URL)",
                self.base
            )
        })?;
        let status = resp.status();
        let text = resp.text().await.context("could not read cairn's answer")?;
        if status.is_success() {
            return Ok(text);
        }
        let detail = serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|v| {
                let e = v.get("error")?;
                Some(format!(
                    "{} ({}{})",
                    e.get("message")?.as_str()?,
                    e.get("code")?.as_str()?,
                    e.get("field")
                        .and_then(|f| f.as_str())
                        .map(|f| format!(", field {f}"))
                        .unwrap_or_default()
                ))
            })
            .unwrap_or(text);
        Err(anyhow!("{path} answered {status}: {detail}"))
    }
}
