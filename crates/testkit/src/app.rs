//! [`TestApp`]: the real application on port 0 against the real Neo4j, with a spool in a
//! temporary directory and a fresh project id, built with [`TestApp::builder`]; and the
//! helpers tests assert with. Tracing is silent unless `TEST_LOG=1`.

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use cairn::{
    app::Application,
    config::{EmbedSwitch, Settings},
    graph::Store,
};
use clap::Parser;
use serde_json::{json, Value};
use tokio::{sync::OnceCell, task::JoinHandle};

use crate::proxy::Neo4jProxy;

/// What `cairn serve` runs with given no flags: cairn's defaults, with the environment's
/// `CAIRN_*` variables applied (where the tests' Neo4j is, for one).
fn serve_defaults() -> Settings {
    #[derive(Parser)]
    struct Serve {
        #[command(flatten)]
        settings: Settings,
    }
    Serve::try_parse_from(["cairn-test"])
        .expect("the CAIRN_* environment variables are valid")
        .settings
}

/// How a [`TestApp`] is built: `TestApp::builder().behind(&proxy).with(|s| …).spawn()`.
#[must_use]
pub struct TestAppBuilder {
    settings: Settings,
    spool_dir: Option<PathBuf>,
}

impl TestAppBuilder {
    fn new() -> Self {
        let mut s = serve_defaults();
        s.bind = ([127, 0, 0, 1], 0).into();
        // The default deadline, so a busy machine does not pass for a slow Neo4j; apps behind
        // the fault proxy get a short one, so outages are noticed and shutdowns are quick.
        s.neo4j.timeout_ms = 10_000;
        // Small preallocated segments: many apps start in parallel, and rotation gets used.
        s.spool_segment_bytes = 262_144;
        // Tests that read their own writes expect 201; a busy machine must not turn it into 202.
        s.sync_wait_ms = 20_000;
        // No vectors unless a test asks: the indexer is global, so every app with a model
        // would embed every other test's sessions.
        s.embed.switch = EmbedSwitch::Off;
        Self {
            settings: s,
            spool_dir: None,
        }
    }

    /// Talks to Neo4j through `proxy`, with a short query deadline (3 s).
    pub fn behind(mut self, proxy: &Neo4jProxy) -> Self {
        self.settings.neo4j.uri = proxy.uri().to_string();
        self.settings.neo4j.timeout_ms = 3_000;
        self
    }

    /// The spool in `dir`, which the caller keeps (by default a temporary directory that
    /// goes with the app).
    pub fn spool_dir(mut self, dir: &Path) -> Self {
        self.spool_dir = Some(dir.to_path_buf());
        self
    }

    /// Adjusts the settings (an LLM endpoint, thresholds, limits).
    pub fn with(mut self, edit: impl FnOnce(&mut Settings)) -> Self {
        edit(&mut self.settings);
        self
    }

    /// The settings the app would run with (its spool aside).
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Builds the application, serves it in the background and mints an admin key of a new
    /// project for its client.
    pub async fn spawn(self) -> TestApp {
        let Self {
            mut settings,
            spool_dir,
        } = self;
        let dir = match spool_dir {
            Some(spool) => {
                settings.spool_dir = spool;
                None
            }
            None => {
                let dir = tempfile::tempdir().expect("temp dir");
                settings.spool_dir = dir.path().join("spool");
                Some(dir)
            }
        };
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
            _dir: dir,
        }
    }
}

pub fn neo4j_uri() -> String {
    std::env::var("CAIRN_NEO4J_URI").unwrap_or_else(|_| "bolt://127.0.0.1:7687".into())
}

/// The Neo4j settings tests run with (for `cairn serve` children, say).
pub fn neo4j_settings() -> cairn::config::Neo4jSettings {
    TestAppBuilder::new().settings.neo4j
}

/// A store for assertions, straight to Neo4j.
pub fn store() -> Store {
    Store::connect(&TestAppBuilder::new().settings.neo4j).expect("neo4j settings")
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

/// A running application, its address, a project of its own and a client holding an admin
/// key of that project.
pub struct TestApp {
    pub addr: String,
    pub client: reqwest::Client,
    pub project: String,
    stopper: tokio::sync::watch::Sender<bool>,
    handle: Option<JoinHandle<anyhow::Result<()>>>,
    _dir: Option<tempfile::TempDir>,
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
    /// An app with the test defaults: port 0, its own spool, no vectors.
    pub async fn spawn() -> TestApp {
        Self::builder().spawn().await
    }

    /// Settings to adjust before [`TestAppBuilder::spawn`].
    pub fn builder() -> TestAppBuilder {
        TestAppBuilder::new()
    }

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
