//! The HTTP client the client-side commands share (`ci`, `context`, `hook`): `CAIRN_URL` and
//! `CAIRN_API_KEY`, a bounded timeout, and cairn's error bodies turned into readable errors.

use std::time::Duration;

use anyhow::{anyhow, Context};
use clap::Args;
use serde::de::DeserializeOwned;

#[derive(Args, Debug, Clone)]
pub struct ClientSettings {
    /// Base URL of the cairn server.
    #[arg(long, env = "CAIRN_URL", default_value = "http://127.0.0.1:8420")]
    pub url: String,
    /// API key (`cairn keys create`).
    #[arg(long, env = "CAIRN_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Request timeout in milliseconds.
    #[arg(long, env = "CAIRN_TIMEOUT_MS", default_value_t = 30_000)]
    pub timeout_ms: u64,
}

pub struct ApiClient {
    http: reqwest::Client,
    base: String,
    key: Option<String>,
}

impl ApiClient {
    pub fn new(s: &ClientSettings) -> anyhow::Result<Self> {
        Ok(Self {
            http: reqwest::Client::builder()
                .timeout(Duration::from_millis(s.timeout_ms))
                .connect_timeout(Duration::from_millis(s.timeout_ms.min(5_000)))
                .build()
                .context("could not build the HTTP client")?,
            base: s.url.trim_end_matches('/').to_string(),
            key: s.api_key.clone(),
        })
    }

    fn with_key(&self, req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.key {
            Some(k) => req.bearer_auth(k),
            None => req,
        }
    }

    /// GET `path` with `query`; the body as text (JSON or Markdown).
    pub async fn get_text(&self, path: &str, query: &[(&str, String)]) -> anyhow::Result<String> {
        let req = self.with_key(self.http.get(format!("{}{path}", self.base)).query(query));
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
        let req = self.with_key(self.http.post(format!("{}{path}", self.base)).json(body));
        let text = self.send(req, path).await?;
        serde_json::from_str(&text).with_context(|| format!("unexpected answer from {path}"))
    }

    async fn send(&self, req: reqwest::RequestBuilder, path: &str) -> anyhow::Result<String> {
        let resp = req.send().await.with_context(|| {
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
