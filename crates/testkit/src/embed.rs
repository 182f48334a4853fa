//! A fake OpenAI-compatible `/embeddings` endpoint (served by wiremock) whose vectors know a
//! few synonyms, one that refuses some texts on demand, and test apps that use them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};
use wiremock::{matchers, Mock, MockServer, Request, ResponseTemplate};

use crate::app::TestApp;

const DIM: usize = 384;

/// Words that mean the same thing share a dimension: a tiny stand-in for a semantic model.
fn concept(word: &str) -> &str {
    match word {
        "login" | "signin" | "authentication" | "auth" | "credentials" => "auth",
        "slow" | "latency" | "performance" | "sluggish" => "perf",
        "database" | "postgres" | "sql" => "db",
        other => other,
    }
}

/// A deterministic unit vector: hashed concepts of the words.
pub fn fake_vector(text: &str) -> Vec<f32> {
    let mut v = vec![0.0f32; DIM];
    for word in text
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() > 2)
    {
        let h = concept(word).bytes().fold(1469598103934665603u64, |h, b| {
            (h ^ b as u64).wrapping_mul(1099511628211)
        });
        v[(h % DIM as u64) as usize] += 1.0;
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
    v.iter().map(|x| x / norm).collect()
}

/// The endpoint's answer to `req`: a [`fake_vector`] per input.
pub fn embeddings_answer(req: &Request) -> ResponseTemplate {
    answer_with(inputs(req).iter().map(|t| fake_vector(t)).collect())
}

/// The texts an embeddings request asks for.
pub fn inputs(req: &Request) -> Vec<String> {
    let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
    match &body["input"] {
        Value::String(s) => vec![s.clone()],
        Value::Array(items) => items
            .iter()
            .map(|i| i.as_str().unwrap_or_default().to_string())
            .collect(),
        _ => vec![],
    }
}

/// An embeddings answer holding `vectors`, in order.
pub fn answer_with(vectors: Vec<Vec<f32>>) -> ResponseTemplate {
    let data: Vec<Value> = vectors
        .into_iter()
        .enumerate()
        .map(|(i, v)| json!({"object": "embedding", "index": i, "embedding": v}))
        .collect();
    ResponseTemplate::new(200).set_body_json(json!({
        "object": "list", "model": "fake", "data": data,
        "usage": {"prompt_tokens": 1, "total_tokens": 1}
    }))
}

/// Apps with an embeddings endpoint run one at a time: the indexers work one queue for the
/// whole database, so two such apps would embed (or fail) each other's sessions.
static EMBEDDING_APPS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The turn of whatever embeds in this test process (an app, or `cairn serve` replicas), held
/// until the guard drops.
pub async fn embedding_turn() -> tokio::sync::MutexGuard<'static, ()> {
    EMBEDDING_APPS.lock().await
}

/// An app with the fake embeddings endpoint, and the turn it holds until the guard drops.
pub async fn app_with_embeddings(
    server: &MockServer,
) -> (TestApp, tokio::sync::MutexGuard<'static, ()>) {
    let turn = embedding_turn().await;
    let base = format!("{}/v1", server.uri());
    let app = TestApp::builder()
        .with(move |s| {
            s.embed.base_url = Some(base);
            s.embed.switch = cairn::config::EmbedSwitch::On;
            s.embed.model = "fake".into();
            s.search.index_every_ms = 100;
        })
        .spawn()
        .await;
    (app, turn)
}

/// An embeddings endpoint faked at the HTTP boundary that, while the flag is set, refuses
/// every request holding `marker` (a query without it is still embedded), and a cairn using it.
pub async fn refusing_embeddings(
    marker: &'static str,
) -> (
    MockServer,
    Arc<AtomicBool>,
    TestApp,
    tokio::sync::MutexGuard<'static, ()>,
) {
    let server = MockServer::start().await;
    let refuse = Arc::new(AtomicBool::new(false));
    let refusing = refuse.clone();
    Mock::given(matchers::method("POST"))
        .and(matchers::path("/v1/embeddings"))
        .respond_with(move |req: &Request| {
            let body = String::from_utf8_lossy(&req.body).to_string();
            if refusing.load(Ordering::SeqCst) && body.contains(marker) {
                ResponseTemplate::new(500).set_body_json(json!({"error": {"message": "down",
                    "type": "server_error", "param": null, "code": null}}))
            } else {
                embeddings_answer(req)
            }
        })
        .mount(&server)
        .await;
    let (app, turn) = app_with_embeddings(&server).await;
    (server, refuse, app, turn)
}
