//! An OpenAI-compatible chat-completion stub that misbehaves on purpose, per session (read
//! from the prompt's first line, `# Session <id>`): it answers, fails with 500 once or always,
//! rate-limits once with 429 and `Retry-After`, or answers only after the client's timeout,
//! once or always, or slowly. It counts what it served, and the requests about each session.

use std::{
    collections::{BTreeMap, HashMap},
    sync::{Arc, Mutex},
    time::Duration,
};

use poem::{
    handler,
    http::StatusCode,
    web::{Data, Json},
    EndpointExt, Response, Route,
};
use serde_json::{json, Value};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Behaviour {
    Answers,
    FailsOnce,
    RateLimitedOnce,
    HangsOnce,
    AlwaysFails,
    AlwaysHangs,
}

impl Behaviour {
    pub const ALL: [Behaviour; 6] = [
        Self::Answers,
        Self::FailsOnce,
        Self::RateLimitedOnce,
        Self::HangsOnce,
        Self::AlwaysFails,
        Self::AlwaysHangs,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Self::Answers => "answers",
            Self::FailsOnce => "500_once",
            Self::RateLimitedOnce => "429_once",
            Self::HangsOnce => "hangs_once",
            Self::AlwaysFails => "500_always",
            Self::AlwaysHangs => "hangs_always",
        }
    }

    /// Whether a session behind it should be extracted: transient faults are retried,
    /// persistent ones fail the session (and leave nothing of it).
    pub fn recovers(self) -> bool {
        !matches!(self, Self::AlwaysFails | Self::AlwaysHangs)
    }
}

struct Script {
    behaviour: Behaviour,
    /// The operation id the stub's finding cites.
    evidence: String,
    calls: u32,
}

struct State {
    hang: Duration,
    /// How long every answer takes (a slow model).
    delay: Mutex<Duration>,
    scripts: Mutex<HashMap<String, Script>>,
    served: Mutex<BTreeMap<&'static str, u64>>,
    by_session: Mutex<BTreeMap<String, u64>>,
}

pub struct LlmStub {
    base: String,
    state: Arc<State>,
}

impl LlmStub {
    /// Serves on loopback; hanging answers come after `hang`.
    pub async fn start(hang: Duration) -> anyhow::Result<Self> {
        let state = Arc::new(State {
            hang,
            delay: Mutex::default(),
            scripts: Mutex::default(),
            served: Mutex::default(),
            by_session: Mutex::default(),
        });
        let app = Route::new()
            .at("/v1/chat/completions", poem::post(chat))
            .data(state.clone());
        Ok(Self {
            base: format!("{}/v1", crate::stub::serve(app).await?),
            state,
        })
    }

    /// The base URL to configure as `CAIRN_LLM_BASE_URL`.
    pub fn base_url(&self) -> &str {
        &self.base
    }

    pub fn script(&self, session: &str, behaviour: Behaviour, evidence: &str) {
        self.state.scripts.lock().expect("stub lock").insert(
            session.to_string(),
            Script {
                behaviour,
                evidence: evidence.to_string(),
                calls: 0,
            },
        );
    }

    /// Every answer takes `delay` from now on.
    pub fn slow_down(&self, delay: Duration) {
        *self.state.delay.lock().expect("stub lock") = delay;
    }

    /// Requests received, by the session their prompt is about.
    pub fn calls_by_session(&self) -> BTreeMap<String, u64> {
        self.state.by_session.lock().expect("stub lock").clone()
    }

    /// Requests served, by what the stub did: `answered`, `500`, `429`, `hung`.
    pub fn served(&self) -> BTreeMap<&'static str, u64> {
        self.state.served.lock().expect("stub lock").clone()
    }
}

#[handler]
async fn chat(body: Json<Value>, state: Data<&Arc<State>>) -> Response {
    let user = body.0["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "user"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default();
    let session = user
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("# Session "))
        .map(str::trim)
        .unwrap_or_default();
    *state
        .by_session
        .lock()
        .expect("stub lock")
        .entry(session.to_string())
        .or_default() += 1;
    let delay = *state.delay.lock().expect("stub lock");
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    let (behaviour, first, evidence) = {
        let mut scripts = state.scripts.lock().expect("stub lock");
        match scripts.get_mut(session) {
            Some(s) => {
                s.calls += 1;
                (s.behaviour, s.calls == 1, Some(s.evidence.clone()))
            }
            None => (Behaviour::Answers, true, None),
        }
    };
    use Behaviour as B;
    let what = match (behaviour, first) {
        (B::AlwaysFails, _) | (B::FailsOnce, true) => "500",
        (B::RateLimitedOnce, true) => "429",
        (B::AlwaysHangs, _) | (B::HangsOnce, true) => "hung",
        _ => "answered",
    };
    *state
        .served
        .lock()
        .expect("stub lock")
        .entry(what)
        .or_default() += 1;
    match what {
        "500" => error(StatusCode::INTERNAL_SERVER_ERROR, "server_error", None),
        "429" => error(StatusCode::TOO_MANY_REQUESTS, "rate_limit_error", Some("1")),
        "hung" => {
            tokio::time::sleep(state.hang).await;
            completion(evidence.as_deref())
        }
        _ => completion(evidence.as_deref()),
    }
}

fn error(status: StatusCode, kind: &str, retry_after: Option<&str>) -> Response {
    let mut r = Response::builder()
        .status(status)
        .content_type("application/json");
    if let Some(secs) = retry_after {
        r = r.header("retry-after", secs);
    }
    r.body(json!({"error": {"message": "the stub fails on purpose", "type": kind, "param": null, "code": null}}).to_string())
}

/// A valid answer: one pattern citing `evidence` (none when the session is unknown).
fn completion(evidence: Option<&str>) -> Response {
    let patterns: Vec<Value> = evidence
        .map(|id| {
            json!({
                "pattern": "the tests are run after every change to the module",
                "evidence": [id],
                "suggested_belief": {"content": "Run the tests after changing a module",
                                     "category": "workflow", "conviction": 0.6},
                "reinforces_belief_id": null, "contradicts_belief_id": null, "confidence": 0.7
            })
        })
        .into_iter()
        .collect();
    let content = json!({ "patterns": patterns }).to_string();
    Response::builder().content_type("application/json").body(
        json!({
            "id": "chatcmpl-stub", "object": "chat.completion", "created": 1_700_000_000u64,
            "model": "stub",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 800, "completion_tokens": 120, "total_tokens": 920}
        })
        .to_string(),
    )
}
