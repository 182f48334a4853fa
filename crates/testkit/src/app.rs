//! `spawn_app()`: the real application on port 0 against the real Neo4j, with a spool in a
//! temporary directory and a fresh project id. Tracing is silent unless `TEST_LOG=1`.

use std::{path::Path, time::Duration};

pub use cairn::bench::proxy::Neo4jProxy;
use cairn::{app::Application, config::Settings, graph::Store};
use clap::Parser;
use serde_json::{json, Value};
use tokio::{sync::OnceCell, task::JoinHandle};

#[derive(Parser)]
struct SettingsParser {
    #[command(flatten)]
    settings: Settings,
}

/// Settings for a test app: port 0, the given spool, Neo4j at `neo4j_uri` (default from env).
pub fn settings(spool: &Path, neo4j_uri: Option<&str>) -> Settings {
    let mut args = vec![
        "test".to_string(),
        "--bind".into(),
        "127.0.0.1:0".into(),
        "--spool-dir".into(),
        spool.display().to_string(),
        // The default deadline, so a busy machine does not pass for a slow Neo4j; apps behind
        // the fault proxy get a short one below, so outages are noticed and shutdowns are quick.
        "--neo4j-timeout-ms".into(),
        (if neo4j_uri.is_some() { "3000" } else { "10000" }).into(),
        // Small preallocated segments: many apps start in parallel, and rotation gets used.
        "--spool-segment-bytes".into(),
        "262144".into(),
        // Tests that read their own writes expect 201; a busy machine must not turn it into 202.
        "--sync-wait-ms".into(),
        "20000".into(),
        // No vectors unless a test asks: the indexer is global, so every app with a model
        // would embed every other test's sessions.
        "--embed".into(),
        "off".into(),
    ];
    if let Some(uri) = neo4j_uri {
        args.push("--neo4j-uri".into());
        args.push(uri.into());
    }
    SettingsParser::parse_from(args).settings
}

pub fn neo4j_uri() -> String {
    std::env::var("CAIRN_NEO4J_URI").unwrap_or_else(|_| "bolt://127.0.0.1:7687".into())
}

/// A store for assertions, straight to Neo4j.
pub fn store() -> Store {
    let s = settings(Path::new("/nonexistent"), None);
    Store::connect(&s.neo4j).expect("neo4j settings")
}

fn init_tracing() {
    if std::env::var("TEST_LOG").is_ok() {
        cairn::telemetry::init_logging("info,cairn=debug");
    }
}

/// The schema once per test process; fails loudly when Neo4j is not there.
pub async fn schema_once() {
    static DONE: OnceCell<()> = OnceCell::const_new();
    DONE.get_or_init(|| async {
        let store = store();
        let mut last = None;
        for _ in 0..30 {
            match cairn::graph::schema::apply(&store, 384).await {
                Ok(()) => return,
                Err(e) => last = Some(e),
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        panic!(
            "Neo4j is not reachable at {} ({:?}); start it with `scripts/neo4j-local start` — tests never skip",
            neo4j_uri(),
            last
        );
    })
    .await;
}

pub struct TestApp {
    pub addr: String,
    pub client: reqwest::Client,
    pub project: String,
    stopper: tokio::sync::watch::Sender<bool>,
    handle: Option<JoinHandle<anyhow::Result<()>>>,
    _dir: Option<tempfile::TempDir>,
}

pub async fn spawn_app() -> TestApp {
    let dir = tempfile::tempdir().expect("temp dir");
    let spool = dir.path().join("spool");
    let mut app = spawn_with(&spool, None).await;
    app._dir = Some(dir);
    app
}

/// An app with settings adjusted by `edit` (an LLM endpoint, thresholds).
pub async fn spawn_app_with(edit: impl FnOnce(&mut Settings)) -> TestApp {
    spawn_edited(None, edit).await
}

/// An app talking to Neo4j through `proxy` (its short deadline included), with settings
/// adjusted by `edit`.
pub async fn spawn_behind(proxy: &Neo4jProxy, edit: impl FnOnce(&mut Settings)) -> TestApp {
    spawn_edited(Some(proxy.uri()), edit).await
}

async fn spawn_edited(neo4j_uri: Option<&str>, edit: impl FnOnce(&mut Settings)) -> TestApp {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut s = settings(&dir.path().join("spool"), neo4j_uri);
    edit(&mut s);
    let mut app = spawn_settings(s).await;
    app._dir = Some(dir);
    app
}

/// An app on a given spool directory and Neo4j URI (a proxy, for fault tests).
pub async fn spawn_with(spool: &Path, neo4j_uri: Option<&str>) -> TestApp {
    spawn_settings(settings(spool, neo4j_uri)).await
}

async fn spawn_settings(settings: Settings) -> TestApp {
    init_tracing();
    schema_once().await;
    let app = Application::build(settings).await.expect("app builds");
    let port = app.port();
    let stopper = app.stopper();
    let handle = tokio::spawn(app.run_until_stopped());
    let project = format!("test-{}", uuid::Uuid::new_v4().simple());
    TestApp {
        addr: format!("http://127.0.0.1:{port}"),
        client: client_with_key(&mint_key(&project, "admin").await),
        project,
        stopper,
        handle: Some(handle),
        _dir: None,
    }
}

/// A new API key of `project` with `scope`, stored the way `cairn keys create` stores it.
pub async fn mint_key(project: &str, scope: &str) -> String {
    let key = cairn::auth::mint();
    cairn::graph::keys::create(
        &store(),
        &cairn::graph::keys::NewKey {
            id: &key.id,
            project,
            scope,
            hash: &key.hash,
            label: Some("test"),
            actor: "test",
        },
    )
    .await
    .expect("store key");
    key.token
}

/// A client that sends `Authorization: Bearer <key>` (or nothing, for `None`-like empty keys).
pub fn client_with_key(key: &str) -> reqwest::Client {
    let mut headers = reqwest::header::HeaderMap::new();
    if !key.is_empty() {
        headers.insert(
            reqwest::header::AUTHORIZATION,
            reqwest::header::HeaderValue::from_str(&format!("Bearer {key}")).expect("header"),
        );
    }
    reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .default_headers(headers)
        .build()
        .expect("client")
}

impl TestApp {
    /// A client holding a fresh key of `project` with `scope`.
    pub async fn client_for(&self, project: &str, scope: &str) -> reqwest::Client {
        client_with_key(&mint_key(project, scope).await)
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.addr, path)
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        let r = self
            .client
            .get(self.url(path))
            .send()
            .await
            .expect("request");
        split(r).await
    }

    /// GETs `path` until it answers 200 with a body satisfying `cond` (writes acknowledged
    /// with 202 reach Neo4j a little later); returns that body, panicking after 60 s.
    pub async fn get_when(&self, path: &str, cond: impl Fn(&Value) -> bool) -> Value {
        let answered = |(status, body): &(u16, Value)| *status == 200 && cond(body);
        let last = settle(60, || self.get(path), answered).await;
        assert!(
            answered(&last),
            "GET {path} never satisfied the condition; last answer {} {}",
            last.0,
            last.1
        );
        last.1
    }

    pub async fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        let r = self
            .client
            .post(self.url(path))
            .json(body)
            .send()
            .await
            .expect("request");
        split(r).await
    }

    pub async fn delete(&self, path: &str) -> (u16, Value) {
        let r = self
            .client
            .delete(self.url(path))
            .send()
            .await
            .expect("request");
        split(r).await
    }

    /// Starts a session in this app's project and returns its id.
    pub async fn session(&self) -> String {
        let (status, body) = self
            .post(
                "/v1/sessions",
                &json!({"project": self.project, "agent": "test", "task": "testing"}),
            )
            .await;
        assert!(
            status == 201 || status == 202,
            "start session: {status} {body}"
        );
        body["session_id"].as_str().expect("session id").to_string()
    }

    /// Posts operations with `sync=true` and asserts they were applied.
    pub async fn ops_sync(&self, session: &str, ops: Value) -> Value {
        let (status, body) = self
            .post(
                &format!("/v1/sessions/{session}/operations?sync=true"),
                &json!({"operations": ops}),
            )
            .await;
        assert_eq!(status, 201, "{body}");
        body
    }

    /// Stops the app (as SIGTERM would) and waits for the writer to drain.
    pub async fn stop(mut self) {
        self.stopper.send_replace(true);
        if let Some(h) = self.handle.take() {
            h.await.expect("app task").expect("app ran");
        }
    }
}

pub async fn split(r: reqwest::Response) -> (u16, Value) {
    let status = r.status().as_u16();
    let text = r.text().await.expect("body");
    let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, value)
}

/// Runs a read query and returns the single integer column `n`.
pub async fn count(cypher: &str, project: &str) -> i64 {
    let rows = store()
        .rows(neo4rs::query(cypher).param("project", project))
        .await
        .expect("count query");
    rows.first()
        .map(|r| r.get::<i64>("n").expect("column n"))
        .unwrap_or(0)
}

/// Waits until `cond` holds (polling), panicking after `secs`.
pub async fn eventually<F, Fut>(secs: u64, what: &str, cond: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    assert!(
        settle(secs, cond, |held| *held).await,
        "timed out after {secs}s waiting for: {what}"
    );
}

/// Calls `probe` until its result satisfies `done` or `secs` pass; returns the last result,
/// so the caller's assertions say what was seen.
pub async fn settle<T, F, Fut>(secs: u64, mut probe: F, done: impl Fn(&T) -> bool) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = T>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    loop {
        let seen = probe().await;
        if done(&seen) || tokio::time::Instant::now() >= deadline {
            return seen;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A proxy in front of the test Neo4j that a test can cut, restore or slow down: cairn sees
/// Neo4j go away without other tests being disturbed.
pub async fn neo4j_proxy() -> Neo4jProxy {
    Neo4jProxy::start(&neo4j_uri()).await.expect("proxy starts")
}
