//! What the client commands (`hook`, `import`) share: where cairn is and the key to use.

use std::time::Duration;

use anyhow::Context;
use clap::Args;

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
    /// The project (default: the name of the git root of the working directory).
    #[arg(long, env = "CAIRN_PROJECT")]
    pub project: Option<String>,
}

impl ClientSettings {
    pub fn endpoint(&self, path: &str) -> String {
        format!("{}{path}", self.url.trim_end_matches('/'))
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
}
