//! The project the read benchmarks (`recall`, `ui`) measure, and cairn serving it. A project
//! of configurable size is seeded straight into Neo4j (UNWIND batches, no capture path):
//! sessions with their operation chains (each ending with its todo list, some items left
//! open), memories and beliefs, then decisions on a dozen subjects (superseding each other,
//! with rejected alternatives, files and the beliefs they affect), operations informing the
//! beliefs (evidence), proposed beliefs and extraction runs. A seed is resumable and reused
//! when the project already holds the requested size. Then cairn starts in this process on a
//! free port ([`Served`]) with a read key of the project.
//!
//! Vectors are seeded straight into Neo4j too (embedding a million operations with a real
//! model takes hours on small machines): each operation with a search text gets the vector of
//! the bench's stub model (hashed words, `search::stub_vector`), recorded under the
//! stub's model name, and cairn runs with that stub as its embeddings endpoint — so turn
//! searches are hybrid over a full vector index, and a query's embedding costs next to
//! nothing (add the real model's time for one short text). With `--embed off` the texts are
//! seeded all the same and search is fulltext.

use std::time::Instant;

use anyhow::Context as _;
use clap::Args;
use serde::{Deserialize, Serialize};
use serde_json::json;

use cairn::app::Application;
use cairn::config::{EmbedSwitch, Settings};
use cairn::domain::operation::{render_line, OpType};
use cairn::domain::record::{subject_key, NewBeliefLink, NewDecision};
use cairn::domain::tokens;
use cairn::graph::turns::cursor_model;
use cairn::graph::{self, param, statement, Store};

/// What to seed and serve: the flags `recall` and `ui` share.
#[derive(Args, Debug, Clone)]
pub struct SeedArgs {
    #[command(flatten)]
    pub settings: Settings,
    /// Sessions to seed.
    #[arg(long, default_value_t = 10_000)]
    pub sessions: usize,
    /// Operations to seed in all (one session gets `--big-session-ops` of them).
    #[arg(long, default_value_t = 1_000_000)]
    pub operations: usize,
    /// Operations of the biggest (and newest) session.
    #[arg(long, default_value_t = 1_000)]
    pub big_session_ops: usize,
    /// Project to seed; reused without seeding when it already holds the requested size, and
    /// completed when an earlier seed was interrupted.
    #[arg(long)]
    pub project: Option<String>,
    /// Remove the project once measured (it is kept for the next run otherwise).
    #[arg(long)]
    pub purge: bool,
    /// Only remove the project (what an interrupted run left), measuring nothing.
    #[arg(long)]
    pub purge_only: bool,
}

impl SeedArgs {
    /// The project's name: `--project`, or one per size and form of the seed (shared by
    /// every read benchmark; a seed of an earlier form is not taken for this one).
    pub fn project(&self) -> String {
        self.project.clone().unwrap_or_else(|| {
            format!(
                "bench-recall-{}-{}-f{SEED_FORM}",
                self.sessions, self.operations
            )
        })
    }

    /// Operations of session number `n` (the last one is the big one).
    fn ops_of(&self, n: usize) -> usize {
        if n == self.sessions - 1 {
            return self.big_session_ops;
        }
        let small = self.sessions.saturating_sub(1).max(1);
        let rest = self.operations.saturating_sub(self.big_session_ops);
        rest / small + usize::from(n < rest % small)
    }

    fn check(&self) -> anyhow::Result<()> {
        anyhow::ensure!(self.sessions >= 2, "--sessions must be at least 2");
        anyhow::ensure!(
            self.operations >= self.big_session_ops,
            "--operations must be at least --big-session-ops"
        );
        Ok(())
    }
}

/// The id of session number `n` of `project`.
pub fn session_id(project: &str, n: usize) -> String {
    format!("{project}-s{n:06}")
}

/// The stub model's name, as cairn is configured with it.
const STUB_MODEL: &str = "bench-stub";
/// The name cairn records with the stub's vectors (`remote:<model>#unlabelled`), so the
/// seeded vectors count as its own: recorded under another name, cairn would embed every
/// operation again.
pub const STUB_IDENTITY: &str = "remote:bench-stub#unlabelled";
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
    relabel_vectors(store, project).await?;
    let mut vectors = 0usize;
    loop {
        let work: Vec<cairn::graph::turns::WorkSession> = store
            .fetch(
                statement(include_str!("../cypher/bench_vector_sessions.cypher"))
                    .param("project", project)
                    .param("cursor", cursor_model(STUB_IDENTITY))
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
                    .param("model", STUB_IDENTITY)
                    .param("cursor", cursor_model(STUB_IDENTITY))
                    .param("dim", dim as i64)
                    .param(
                        "rows",
                        graph::rows_with_bytes(
                            &rows,
                            "sig",
                            rows.iter().map(|r| cairn::embed::signature::of(&r.vector)),
                        )?,
                    )
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
            "seeded {vectors} vectors ({STUB_IDENTITY}, {dim} dimensions) in {:.1}s",
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// Vectors stored without signatures (by an earlier seed, or an older cairn) get them from
/// cairn's own pass now, so the pass does not run beside the timed requests.
async fn sign_vectors(store: &Store) -> anyhow::Result<()> {
    let started = Instant::now();
    let mut signing = cairn::recall::turn_index::Signing::unless_done(store).await?;
    while !signing.done {
        signing
            .step(store)
            .await
            .context("signing stored vectors")?;
        if signing.scanned % 100_000 < 1_000 {
            tracing::info!(
                operations_read = signing.scanned,
                signed = signing.signed,
                elapsed_s = started.elapsed().as_secs(),
                "signing stored vectors"
            );
        }
    }
    if signing.signed > 0 {
        println!(
            "signed {} stored vectors ({} operations read) in {:.1}s",
            signing.signed,
            signing.scanned,
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// Vectors an earlier seed recorded under the stub's bare name get the name cairn records, and
/// sessions an earlier seed left with a cursor naming the bare model get the one cairn records
/// (a few sessions per statement), instead of being made again.
async fn relabel_vectors(store: &Store, project: &str) -> anyhow::Result<()> {
    #[derive(Deserialize)]
    struct Done {
        n: i64,
    }
    let mut sessions = 0;
    loop {
        let n = store
            .fetch_one::<Done>(
                statement(include_str!("../cypher/bench_vector_relabel.cypher"))
                    .param("project", project)
                    .param("old", STUB_MODEL)
                    .param("model", STUB_IDENTITY)
                    .param("cursor", cursor_model(STUB_IDENTITY))
                    .param("limit", VECTOR_SESSIONS as i64),
            )
            .await
            .context("relabelling seeded vectors")?
            .map_or(0, |d| d.n);
        if n == 0 {
            break;
        }
        sessions += n;
    }
    if sessions > 0 {
        println!("relabelled the vectors of {sessions} sessions as {STUB_IDENTITY}");
    }
    Ok(())
}

/// Waits until cairn's background indexers have nothing left to do in the project, so they
/// do not share the machine with the timed requests.
async fn indexers_idle(store: &Store, project: &str, vectors: bool) -> anyhow::Result<()> {
    #[derive(Deserialize)]
    struct Busy {
        n: i64,
    }
    let started = Instant::now();
    loop {
        let busy = store
            .fetch_one::<Busy>(
                statement(include_str!("../cypher/bench_index_busy.cypher"))
                    .param("project", project)
                    .param("vectors", vectors),
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

/// Waits (at most 10 minutes) until cairn's turn indexer has nothing pending in the whole
/// database: sessions of other projects on a shared Neo4j, embedded under another model, are
/// queued for the stub's vectors and would share the machine with the timed requests.
async fn turn_index_caught_up(base: &str) {
    let http = reqwest::Client::new();
    let started = Instant::now();
    while started.elapsed() < std::time::Duration::from_secs(600) {
        let pending = match http.get(format!("{base}/metrics")).send().await {
            Ok(r) => r
                .text()
                .await
                .ok()
                .and_then(|text| super::metric(&text, "cairn_turn_index_pending_operations")),
            Err(_) => None,
        };
        if pending.unwrap_or(0.0) == 0.0 {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    }
    println!("the turn index still has work pending (other projects); measuring anyway");
}

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
    /// The agent's todo list as stored (JSON), on `todo` operations.
    todos: Option<String>,
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
    let id = session_id(project, n);
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
            // Each session ends with its todo list, some of it left open.
            let kind = if i + 1 == ops && ops >= 3 {
                OpType::Todo
            } else {
                kinds[(rng.next() % kinds.len() as u64) as usize]
            };
            let (w1, w2) = (rng.pick(WORDS), rng.pick(WORDS));
            let path = format!("src/{w1}/{w2}_{}.rs", rng.next() % 100);
            let summary = format!("{} the {w1} {w2} code in step {i}", kind.as_str());
            let (role, content) = match kind {
                // Each message says something of its own, as people do: a history of one
                // sentence said ten thousand times would leave a task context two lines
                // to show once repeats give way (`turns::drop_repeated_texts`).
                OpType::Message if i % 2 == 0 => (
                    Some("user"),
                    Some(format!(
                        "please look at the {w1} and the {w2} in {path}, step {i}"
                    )),
                ),
                OpType::Message => (
                    Some("assistant"),
                    Some(format!(
                        "I changed the {w1} {w2} logic in {path} and ran the tests, step {i}"
                    )),
                ),
                _ => (None, None),
            };
            let todos = (kind == OpType::Todo).then(|| {
                json!([
                    {"content": format!("fix the {w1} tests"), "status": "completed"},
                    {"content": format!("clean up the {w2} {w1} code"), "status": "in_progress"},
                    {"content": format!("document the {w2}"), "status": "pending"},
                ])
                .to_string()
            });
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
                    todos,
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

async fn seed(store: &Store, b: &SeedArgs, project: &str) -> anyhow::Result<String> {
    #[derive(Deserialize)]
    struct Size {
        sessions: i64,
        operations: i64,
    }
    let big_id = session_id(project, b.sessions - 1);
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
    let base = graph::now_ms() - (b.sessions as i64 + 10) * 60_000;
    let mut batch: Vec<SessionRow> = Vec::new();
    let mut batch_ops = 0usize;
    let mut links = Vec::new();
    for n in 0..b.sessions {
        // The big session is the newest, so context and window read it first.
        let ops = b.ops_of(n);
        let row = session_row(n, ops, base, &mut rng, project);
        if n > 0 && n % 5 == 0 {
            links.push(json!({"id": row.id, "prev": session_id(project, n - 1)}));
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
            json!({"id": format!("{project}-m{i}"), "session_id": session_id(project, i * 7 % b.sessions),
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

/// Subjects decided on: each a chain of `DECISIONS_PER_SUBJECT` decisions, the newest in
/// force.
pub const SUBJECTS: &[&str] = &[
    "cache eviction policy",
    "parser error recovery",
    "lexer token representation",
    "index rebuild strategy",
    "schema migration order",
    "router handler layout",
    "budget accounting",
    "session expiry",
    "graph query batching",
    "writer retry policy",
    "spool segment size",
    "metrics naming",
];
/// The form of the seeded texts, in the default project's name: 2 since each message says
/// something of its own.
const SEED_FORM: usize = 2;
const DECISIONS_PER_SUBJECT: usize = 5;
/// Operations informing each belief.
const EVIDENCE_PER_BELIEF: usize = 40;
/// Beliefs seeded as proposed (waiting for approval), besides the active ones.
const PROPOSED_BELIEFS: usize = 10;
/// Extraction runs; the last one's id marks the extras as seeded.
const RUNS: usize = 20;
const HOUR_MS: i64 = 3_600_000;

/// The file the decisions on subject `j` name (one the seeded operations touch at scale).
pub fn decided_file(j: usize) -> String {
    format!(
        "src/{}/{}_{}.rs",
        WORDS[j % WORDS.len()],
        WORDS[(j * 7 + 3) % WORDS.len()],
        j
    )
}

/// The id of seeded belief number `i` (active, with evidence).
pub fn belief_id(project: &str, i: usize) -> String {
    format!("{project}-b{i}")
}

/// Decisions, evidence, proposed beliefs and extraction runs, once per project (each step
/// idempotent, so an interrupted one is completed).
async fn seed_extras(store: &Store, b: &SeedArgs, project: &str) -> anyhow::Result<()> {
    let marker = format!("{project}-run{}", RUNS - 1);
    if graph::extraction::run_get(store, &marker).await?.is_some() {
        return Ok(());
    }
    let started = Instant::now();
    let now = graph::now_ms();
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let mut tx = store.begin().await?;
    for (j, subject) in SUBJECTS.iter().enumerate() {
        for k in 0..DECISIONS_PER_SUBJECT {
            let (choice, other) = (rng.pick(WORDS), rng.pick(WORDS));
            let beliefs = (0..2)
                .map(|m| NewBeliefLink {
                    id: belief_id(project, (j * 3 + k + m * 11) % 50),
                    effect: if m == 0 { "supports" } else { "contradicts" }.into(),
                    weight: 0.8,
                })
                .collect();
            let n = (j * 97 + k * 13) % b.sessions;
            let decision = NewDecision {
                id: format!("{project}-d{j}-{k}"),
                project: project.into(),
                session_id: Some(session_id(project, n)),
                subject: subject.to_string(),
                subject_key: subject_key(subject),
                choice: format!("use the {choice} approach (take {k})"),
                rationale: format!(
                    "the {other} approach was slower in the {choice} tests; revisit if the {other} changes"
                ),
                alternatives: vec![
                    format!("keep the {other} approach"),
                    format!("drop the {choice} entirely"),
                ],
                confidence: 0.6 + (k as f64) / 20.0,
                beliefs,
                files: vec![decided_file(j), decided_file(j + 1)],
                // Oldest first, so each supersedes the one before.
                at: now - ((DECISIONS_PER_SUBJECT - k) as i64) * 24 * HOUR_MS + j as i64,
                operation: None,
            };
            graph::decisions::create(&mut tx, &decision).await?;
        }
    }
    tx.commit().await?;
    let proposed: Vec<_> = (0..PROPOSED_BELIEFS)
        .map(|i| {
            json!({"id": format!("{project}-p{i}"),
                   "content": format!("the {} should be split from the {}", rng.pick(WORDS), rng.pick(WORDS)),
                   "at": now - i as i64 * HOUR_MS})
        })
        .collect();
    let mut evidence = Vec::new();
    for i in 0..50 + PROPOSED_BELIEFS {
        let belief = if i < 50 {
            belief_id(project, i)
        } else {
            format!("{project}-p{}", i - 50)
        };
        let count = if i < 50 { EVIDENCE_PER_BELIEF } else { 5 };
        for k in 0..count {
            let n = (i * 131 + k * 17) % b.sessions;
            let ops = b.ops_of(n);
            if ops == 0 {
                continue;
            }
            let o = (rng.next() % ops as u64) as usize;
            evidence.push(json!({
                "op": format!("{}-o{o}", session_id(project, n)),
                "belief": belief,
                "effect": if k % 4 == 3 { "contradicts" } else { "supports" },
                "weight": 0.5 + (k % 5) as f64 / 10.0,
                "at": now - ((count - k) as i64) * 6 * HOUR_MS,
            }));
        }
    }
    store
        .run(
            statement(include_str!("../cypher/bench_seed_evidence.cypher"))
                .param("project", project)
                .param("proposed", param(&proposed)?)
                .param("rows", param(&evidence)?),
        )
        .await
        .context("seeding evidence")?;
    for r in 0..RUNS {
        let stats = graph::extraction::RunStats {
            sessions: 20 + (r as i64 % 7),
            candidates: 12,
            patterns: 4 + (r as i64 % 3),
            beliefs_created: (r % 2) as i64,
            beliefs_reinforced: 3,
            beliefs_contradicted: (r % 3 == 0) as i64,
            llm_calls: 20,
            prompt_tokens: 40_000,
            completion_tokens: 3_000,
            cost_estimate: 0.05,
            duration_ms: 30_000,
            ..Default::default()
        };
        graph::extraction::run_finish(
            store,
            &graph::extraction::RunRecord {
                id: &format!("{project}-run{r}"),
                project,
                mode: "llm",
                prompt_version: "bench",
                status: "completed",
                started_at: now - ((RUNS - r) as i64) * 24 * HOUR_MS,
                stats: &stats,
                errors: &[],
            },
        )
        .await?;
    }
    println!(
        "seeded {} decisions, {} pieces of evidence, {PROPOSED_BELIEFS} proposed beliefs, {RUNS} extraction runs in {:.1}s",
        SUBJECTS.len() * DECISIONS_PER_SUBJECT,
        evidence.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// cairn serving a seeded project, in this process.
pub struct Served {
    pub project: String,
    /// The biggest session (the newest).
    pub big_session: String,
    pub store: Store,
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    /// A read key of the project.
    pub key: String,
    stopper: tokio::sync::watch::Sender<bool>,
    server: tokio::task::JoinHandle<anyhow::Result<()>>,
    spool: std::path::PathBuf,
}

/// Seeds the project (or reuses it), then starts cairn on a free port over it with a read
/// key, once its background indexers are idle. `None` when `--purge-only` removed it.
pub async fn serve(a: &SeedArgs) -> anyhow::Result<Option<Served>> {
    a.check()?;
    let project = a.project();
    let store = Store::connect(&a.settings.neo4j)?;
    if a.purge_only {
        purge(&store, &project).await?;
        return Ok(None);
    }
    graph::schema::apply(&store, a.settings.neo4j.embed_dimensions)
        .await
        .context("applying the schema")?;
    let big_session = seed(&store, a, &project).await?;
    seed_extras(&store, a, &project).await?;
    let dim = a.settings.neo4j.embed_dimensions as usize;
    seed_vectors(&store, &project, dim).await?;
    sign_vectors(&store).await?;
    let mut settings = a.settings.clone();
    // With `--embed off` (as in tests sharing a database) search is fulltext over the
    // seeded texts; otherwise hybrid, the stub answering for the query's vector.
    if settings.embed.switch != EmbedSwitch::Off {
        settings.embed.base_url = Some(super::search::serve_stub(dim).await?);
        settings.embed.model = STUB_MODEL.into();
    }
    let spool = std::env::temp_dir().join(format!("cairn-bench-{}", std::process::id()));
    settings.bind = "127.0.0.1:0".parse().context("bind address")?;
    settings.spool_dir = spool.clone();
    settings.rate_limit_per_sec = 0;
    let app = Application::build(settings).await?;
    let base = format!("http://127.0.0.1:{}", app.port());
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
    let vectors = a.settings.embed.switch != EmbedSwitch::Off;
    indexers_idle(&store, &project, vectors).await?;
    if a.settings.embed.switch != EmbedSwitch::Off {
        turn_index_caught_up(&base).await;
    }
    Ok(Some(Served {
        project,
        big_session,
        store,
        base,
        key: key.token,
        stopper,
        server,
        spool,
    }))
}

impl Served {
    /// Stops cairn; removes the project with `purge`.
    pub async fn stop(self, purge_project: bool) -> anyhow::Result<()> {
        self.stopper.send_replace(true);
        self.server.await??;
        let _ = std::fs::remove_dir_all(&self.spool);
        if purge_project {
            purge(&self.store, &self.project).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seeded_vectors_are_recorded_as_cairn_records_the_stubs() {
        assert_eq!(STUB_IDENTITY, cairn::embed::remote::identity(STUB_MODEL));
    }
}
