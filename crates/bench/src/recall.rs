//! `cairn-bench recall`: seeds a project of configurable size straight into Neo4j (UNWIND
//! batches, no capture path), then starts cairn in-process on a free port and measures the
//! read path through the real HTTP API: reconstruction of a 1000-operation session, context
//! with an 8k budget, the sliding window, and turn search (`POST /v1/search`, hybrid). Prints
//! p50/p95/max per route.
//!
//! Vectors are seeded straight into Neo4j too (embedding a million operations with a real
//! model takes hours on small machines): each operation with a search text gets the vector of
//! the bench's stub model (hashed words, `search::stub_vector`), recorded under the
//! stub's model name, and cairn runs with that stub as its embeddings endpoint — so the
//! timed turn searches are hybrid over a full vector index, and a query's embedding costs
//! next to nothing (add the real model's time for one short text).

use std::time::Instant;

use anyhow::Context as _;
use clap::Args;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{ms, quantile};
use cairn::app::Application;
use cairn::config::Settings;
use cairn::domain::operation::{render_line, OpType};
use cairn::domain::tokens;
use cairn::graph::{self, param, statement, Store};

#[derive(Args, Debug)]
pub struct RecallBench {
    #[command(flatten)]
    pub settings: Settings,
    /// Sessions to seed.
    #[arg(long, default_value_t = 10_000)]
    pub sessions: usize,
    /// Operations to seed in all (one session gets `--big-session-ops` of them).
    #[arg(long, default_value_t = 1_000_000)]
    pub operations: usize,
    /// Operations of the session that is reconstructed.
    #[arg(long, default_value_t = 1_000)]
    pub big_session_ops: usize,
    /// Timed requests per route (after 10 warm-up requests).
    #[arg(long, default_value_t = 200)]
    pub iterations: usize,
    /// Project to seed; reused without seeding when it already holds the requested size, and
    /// completed when an earlier seed was interrupted.
    #[arg(long)]
    pub project: Option<String>,
    /// Context budget in tokens.
    #[arg(long, default_value_t = 8_000)]
    pub budget: usize,
    /// Window token limit.
    #[arg(long, default_value_t = 2_000)]
    pub window_tokens: usize,
    /// Remove the project once measured (it is kept for the next run otherwise).
    #[arg(long)]
    pub purge: bool,
    /// Only remove the project (what an interrupted run left), measuring nothing.
    #[arg(long)]
    pub purge_only: bool,
}

/// The stub model's name, recorded with the vectors the bench seeds.
const STUB_MODEL: &str = "bench-stub";
/// Sessions whose vectors are written per transaction.
const VECTOR_SESSIONS: usize = 50;

/// Gives every operation of the project with a search text a stub vector (and its text where
/// it had none), and moves its sessions' turn cursors to their end. Resumes where it stopped.
async fn seed_vectors(store: &Store, project: &str, dim: usize) -> anyhow::Result<()> {
    #[derive(Serialize)]
    struct VectorRow {
        id: String,
        text: String,
        vector: Vec<f32>,
    }
    #[derive(Serialize)]
    struct Done<'a> {
        id: &'a str,
        last_seq: i64,
    }
    let started = Instant::now();
    let mut vectors = 0usize;
    loop {
        let work: Vec<cairn::graph::turns::WorkSession> = store
            .fetch(
                statement(include_str!("../cypher/bench_vector_sessions.cypher"))
                    .param("project", project)
                    .param("model", STUB_MODEL)
                    .param("limit", VECTOR_SESSIONS as i64),
            )
            .await
            .context("reading operations to give vectors")?;
        if work.is_empty() {
            break;
        }
        let rows: Vec<VectorRow> = work
            .iter()
            .flat_map(|s| &s.ops)
            .filter_map(|op| {
                let text = op
                    .search_text
                    .clone()
                    .or_else(|| cairn::recall::turn_index::text_of(op))?;
                Some(VectorRow {
                    id: op.id.clone(),
                    vector: super::search::stub_vector(&text, dim),
                    text,
                })
            })
            .collect();
        let done: Vec<Done> = work
            .iter()
            .map(|s| Done {
                id: &s.id,
                last_seq: s.last_seq,
            })
            .collect();
        store
            .run(
                statement(include_str!("../cypher/bench_vector_seed.cypher"))
                    .param("project", project)
                    .param("model", STUB_MODEL)
                    .param("dim", dim as i64)
                    .param("rows", param(&rows)?)
                    .param("sessions", param(&done)?),
            )
            .await
            .context("seeding vectors")?;
        vectors += rows.len();
        if vectors % 50_000 < rows.len() {
            tracing::info!(
                vectors,
                elapsed_s = started.elapsed().as_secs(),
                "seeding vectors"
            );
        }
    }
    if vectors > 0 {
        println!(
            "seeded {vectors} vectors ({STUB_MODEL}, {dim} dimensions) in {:.1}s",
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// Waits until cairn's background indexers have nothing left to do in the project, so they
/// do not share the machine with the timed requests.
async fn indexers_idle(store: &Store, project: &str) -> anyhow::Result<()> {
    #[derive(Deserialize)]
    struct Busy {
        n: i64,
    }
    let started = Instant::now();
    loop {
        let busy = store
            .fetch_one::<Busy>(
                statement(include_str!("../cypher/bench_index_busy.cypher"))
                    .param("project", project),
            )
            .await?
            .map_or(0, |b| b.n);
        if busy == 0 {
            println!(
                "background indexers idle after {:.1}s",
                started.elapsed().as_secs_f64()
            );
            return Ok(());
        }
        anyhow::ensure!(
            started.elapsed() < std::time::Duration::from_secs(1_800),
            "{busy} sessions still being indexed after 30 minutes"
        );
        tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    }
}

/// One route's line: p50, p95 and max.
fn print_row(name: &str, times: &mut [std::time::Duration]) {
    println!(
        "{:<36} {:>9.2} {:>9.2} {:>9.2}",
        name,
        ms(quantile(times, 0.50)),
        ms(quantile(times, 0.95)),
        ms(quantile(times, 1.0))
    );
}

/// Turn searches, each with another query (so no answer is a repeat of the last).
const TURN_QUERIES: &[&str] = &[
    "parser cache",
    "why did the lexer token change",
    "schema index tests",
    "router handler budget",
    "spool writer config metrics",
    "auth window session",
    "graph query fails",
    "please look at the cache and the index",
];

#[derive(Serialize)]
struct OpProps {
    id: String,
    seq: i64,
    #[serde(rename = "type")]
    kind: &'static str,
    target: Option<String>,
    summary: String,
    tool: Option<&'static str>,
    files_read: Vec<String>,
    files_modified: Vec<String>,
    role: Option<&'static str>,
    content: Option<String>,
    status: &'static str,
    effect: &'static str,
    weight: f64,
    at: i64,
    tokens: i64,
}

#[derive(Serialize)]
struct OpRow {
    props: OpProps,
    touch: Vec<String>,
    mode: &'static str,
}

#[derive(Serialize)]
struct SessionRow {
    id: String,
    task: String,
    summary: String,
    next_steps: Vec<String>,
    started_at: i64,
    last_activity_at: i64,
    ops: Vec<OpRow>,
}

const WORDS: &[&str] = &[
    "parser", "lexer", "cache", "index", "schema", "router", "handler", "budget", "token",
    "session", "graph", "query", "writer", "spool", "config", "metrics", "auth", "window",
];

/// A deterministic pseudo-random stream (no dependency; the bench needs variety, not quality).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[(self.next() % xs.len() as u64) as usize]
    }
}

fn session_row(n: usize, ops: usize, base: i64, rng: &mut Rng, project: &str) -> SessionRow {
    let id = format!("{project}-s{n:06}");
    let started = base + (n as i64) * 60_000;
    let kinds = [
        OpType::Read,
        OpType::Read,
        OpType::Write,
        OpType::ToolCall,
        OpType::Search,
        OpType::Message,
        OpType::Message,
    ];
    let rows = (0..ops)
        .map(|i| {
            let kind = kinds[(rng.next() % kinds.len() as u64) as usize];
            let (w1, w2) = (rng.pick(WORDS), rng.pick(WORDS));
            let path = format!("src/{w1}/{w2}_{}.rs", rng.next() % 100);
            let summary = format!("{} the {w1} {w2} code in step {i}", kind.as_str());
            let (role, content) = match kind {
                OpType::Message if i % 2 == 0 => (
                    Some("user"),
                    Some(format!("please look at the {w1} and the {w2}")),
                ),
                OpType::Message => (
                    Some("assistant"),
                    Some(format!("I changed the {w1} {w2} logic and ran the tests")),
                ),
                _ => (None, None),
            };
            let target = matches!(kind, OpType::Read | OpType::Write).then(|| path.clone());
            let line = render_line(kind, target.as_deref(), &summary, role, content.as_deref());
            let (files_read, files_modified, mode) = match kind {
                OpType::Read => (vec![path.clone()], vec![], "read"),
                OpType::Write => (vec![], vec![path.clone()], "write"),
                _ => (vec![], vec![], "read"),
            };
            let touch = files_read.iter().chain(&files_modified).cloned().collect();
            OpRow {
                props: OpProps {
                    id: format!("{id}-o{i}"),
                    seq: i as i64 + 1,
                    kind: kind.as_str(),
                    target,
                    tokens: tokens::count(cairn::config::Encoding::O200kBase, &line) as i64,
                    summary,
                    tool: (kind == OpType::ToolCall).then_some("Bash"),
                    files_read,
                    files_modified,
                    role,
                    content,
                    status: "ok",
                    effect: "supports",
                    weight: 1.0,
                    at: started + i as i64 * 1_000,
                },
                touch,
                mode,
            }
        })
        .collect();
    SessionRow {
        task: format!("work on the {} {}", rng.pick(WORDS), rng.pick(WORDS)),
        summary: format!("changed the {} module", rng.pick(WORDS)),
        next_steps: vec![format!("review the {}", rng.pick(WORDS))],
        started_at: started,
        last_activity_at: started + ops as i64 * 1_000,
        id,
        ops: rows,
    }
}

async fn seed(store: &Store, b: &RecallBench, project: &str) -> anyhow::Result<String> {
    #[derive(Deserialize)]
    struct Size {
        sessions: i64,
        operations: i64,
    }
    let big_id = format!("{project}-s{:06}", b.sessions - 1);
    let size = store
        .fetch_one::<Size>(
            statement(include_str!("../cypher/bench_project_size.cypher"))
                .param("project", project),
        )
        .await?;
    if let Some(s) = size {
        if s.sessions as usize == b.sessions && s.operations as usize == b.operations {
            tracing::info!(project, "bench project already seeded; reusing it");
            return Ok(big_id);
        }
        if s.sessions as usize > b.sessions {
            anyhow::bail!(
                "project {project} holds {} sessions / {} operations, more than requested; pick another --project",
                s.sessions,
                s.operations
            );
        }
        if s.sessions > 0 {
            tracing::info!(
                project,
                sessions = s.sessions,
                "resuming an interrupted seed"
            );
        }
    }
    let started = Instant::now();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let small = b.sessions.saturating_sub(1).max(1);
    let rest = b.operations.saturating_sub(b.big_session_ops);
    let base = graph::now_ms() - (b.sessions as i64 + 10) * 60_000;
    let mut batch: Vec<SessionRow> = Vec::new();
    let mut batch_ops = 0usize;
    let mut links = Vec::new();
    for n in 0..b.sessions {
        // The big session is the newest, so context and window read it first.
        let ops = if n == b.sessions - 1 {
            b.big_session_ops
        } else {
            rest / small + usize::from(n < rest % small)
        };
        let row = session_row(n, ops, base, &mut rng, project);
        if n > 0 && n % 5 == 0 {
            links.push(json!({"id": row.id, "prev": format!("{project}-s{:06}", n - 1)}));
        }
        batch_ops += ops;
        batch.push(row);
        if batch_ops >= 20_000 || n == b.sessions - 1 {
            store
                .run(
                    statement(include_str!("../cypher/bench_seed_sessions.cypher"))
                        .param("project", project)
                        .param("now", graph::now_ms())
                        .param("sessions", param(&batch)?),
                )
                .await
                .context("seeding sessions")?;
            batch.clear();
            batch_ops = 0;
            tracing::info!(
                sessions = n + 1,
                elapsed_s = started.elapsed().as_secs(),
                "seeding"
            );
        }
    }
    for chunk in links.chunks(5_000) {
        store
            .run(
                statement(include_str!("../cypher/bench_seed_links.cypher"))
                    .param("project", project)
                    .param("links", param(chunk)?),
            )
            .await?;
    }
    let memories: Vec<_> = (0..200)
        .map(|i| {
            let content = format!(
                "the {} must stay fast under load ({i})",
                rng.pick(WORDS)
            );
            json!({"id": format!("{project}-m{i}"), "session_id": format!("{project}-s{:06}", i * 7 % b.sessions),
                   "content": content, "confidence": 0.5 + (i % 5) as f64 / 10.0,
                   "tokens": tokens::count(cairn::config::Encoding::O200kBase, &format!("- (lesson) {content}")),
                   "at": base + i as i64})
        })
        .collect();
    let beliefs: Vec<_> = (0..50)
        .map(|i| json!({"id": format!("{project}-b{i}"), "content": format!("the {} is the bottleneck", rng.pick(WORDS)), "at": base + i as i64}))
        .collect();
    store
        .run(
            statement(include_str!("../cypher/bench_seed_memory.cypher"))
                .param("project", project)
                .param("memories", param(&memories)?)
                .param("beliefs", param(&beliefs)?),
        )
        .await?;
    println!(
        "seeded {} sessions / {} operations in {:.1}s",
        b.sessions,
        b.operations,
        started.elapsed().as_secs_f64()
    );
    Ok(big_id)
}

pub async fn run(mut b: RecallBench) -> anyhow::Result<()> {
    anyhow::ensure!(b.sessions >= 2, "--sessions must be at least 2");
    anyhow::ensure!(
        b.operations >= b.big_session_ops,
        "--operations must be at least --big-session-ops"
    );
    let project = b
        .project
        .clone()
        .unwrap_or_else(|| format!("bench-recall-{}-{}", b.sessions, b.operations));
    let store = Store::connect(&b.settings.neo4j)?;
    if b.purge_only {
        return purge(&store, &project).await;
    }
    graph::schema::apply(&store, b.settings.neo4j.embed_dimensions)
        .await
        .context("applying the schema")?;
    let big = seed(&store, &b, &project).await?;
    let dim = b.settings.neo4j.embed_dimensions as usize;
    seed_vectors(&store, &project, dim).await?;
    b.settings.embed.base_url = Some(super::search::serve_stub(dim).await?);
    b.settings.embed.model = STUB_MODEL.into();

    let spool = std::env::temp_dir().join(format!("cairn-bench-{}", std::process::id()));
    b.settings.bind = "127.0.0.1:0".parse().context("bind address")?;
    b.settings.spool_dir = spool.clone();
    b.settings.rate_limit_per_sec = 0;
    let app = Application::build(b.settings.clone()).await?;
    let port = app.port();
    let stopper = app.stopper();
    let server = tokio::spawn(app.run_until_stopped());
    let key = cairn::auth::mint();
    graph::keys::create(
        &store,
        &graph::keys::NewKey {
            id: &key.id,
            project: &project,
            scope: "read",
            hash: &key.hash,
            label: Some("bench"),
            actor: "bench",
        },
    )
    .await?;
    indexers_idle(&store, &project).await?;
    let http = reqwest::Client::new();
    let base = format!("http://127.0.0.1:{port}");
    let routes: Vec<(&str, reqwest::RequestBuilder)> = vec![
        (
            "reconstruction (1000-op session)",
            http.get(format!(
                "{base}/v1/sessions/{big}/reconstruction?max_operations=1000"
            )),
        ),
        (
            "context (session, 8k budget)",
            http.post(format!("{base}/v1/context")).json(
                &json!({"project": project, "session_id": big, "budget_tokens": b.budget}),
            ),
        ),
        (
            "context (task, 8k budget)",
            http.post(format!("{base}/v1/context")).json(
                &json!({"project": project, "task": "fix the parser cache", "budget_tokens": b.budget}),
            ),
        ),
        (
            "window",
            http.get(format!(
                "{base}/v1/sessions/{big}/window?token_limit={}",
                b.window_tokens
            )),
        ),
    ];
    println!(
        "project {project}: {} sessions, {} operations; {} timed requests per route",
        b.sessions, b.operations, b.iterations
    );
    println!(
        "{:<36} {:>9} {:>9} {:>9}",
        "route", "p50 ms", "p95 ms", "max ms"
    );
    for (name, req) in routes {
        let mut times = Vec::with_capacity(b.iterations);
        for i in 0..b.iterations + 10 {
            let r = req.try_clone().context("request")?.bearer_auth(&key.token);
            let t = Instant::now();
            let resp = r.send().await?;
            let status = resp.status();
            let body = resp.bytes().await?;
            let took = t.elapsed();
            anyhow::ensure!(
                status.is_success(),
                "{name} answered {status}: {}",
                String::from_utf8_lossy(&body)
            );
            if i >= 10 {
                times.push(took);
            }
        }
        print_row(name, &mut times);
    }
    for (name, types) in [
        ("turn search (hybrid, 10)", None),
        ("turn search (hybrid, messages)", Some(vec!["message"])),
    ] {
        let mut times = Vec::with_capacity(b.iterations);
        let mut modes = std::collections::BTreeSet::new();
        for i in 0..b.iterations + 10 {
            let query = TURN_QUERIES[i % TURN_QUERIES.len()];
            let r = http
                .post(format!("{base}/v1/search"))
                .json(&json!({"project": project, "query": query, "limit": 10, "types": types}))
                .bearer_auth(&key.token);
            let t = Instant::now();
            let resp = r.send().await?;
            let status = resp.status();
            let body: serde_json::Value = resp.json().await?;
            let took = t.elapsed();
            anyhow::ensure!(status.is_success(), "{name} answered {status}: {body}");
            modes.insert(body["mode"].as_str().unwrap_or_default().to_string());
            if i >= 10 {
                times.push(took);
            }
        }
        anyhow::ensure!(
            modes.len() == 1 && modes.contains("hybrid"),
            "turn search was not hybrid: {modes:?}"
        );
        print_row(name, &mut times);
    }
    stopper.send_replace(true);
    server.await??;
    let _ = std::fs::remove_dir_all(&spool);
    if b.purge {
        purge(&store, &project).await?;
    }
    Ok(())
}

/// Removes the bench's project: a seeded million operations must not stay in a shared
/// database (every cairn on it with another embedding model would queue them).
async fn purge(store: &Store, project: &str) -> anyhow::Result<()> {
    let started = Instant::now();
    graph::purge::project_now(store, project)
        .await
        .with_context(|| format!("purging {project}"))?;
    println!(
        "purged {project} in {:.1}s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
