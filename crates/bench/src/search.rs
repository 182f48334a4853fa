//! `cairn-bench search`: a seeded generator of labelled synthetic histories (topics whose
//! sessions are described with canonical words, queried either with the same words or with
//! paraphrases, plus noise sessions), written straight into a throwaway project, indexed by
//! the real indexer, embedded through the real embeddings client against a deterministic
//! stub served over HTTP in this process, then searched: recall@5 and MRR for fulltext-only
//! and hybrid, and p50/p95 latency. The project is purged afterwards unless `--keep`.
//!
//! The stub maps each word to its concept through the generator's lexicon (standing in for
//! a semantic model that knows synonyms) and hashes concepts into a unit vector.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::Args;
use poem::{handler, web::Json, Route};
use serde::Serialize;
use serde_json::{json, Value};

use cairn::config::{EmbedSettings, Neo4jSettings};
use cairn::embed::Embedder;
use cairn::graph::{param, statement, Store};
use cairn::recall::{index, search};

#[derive(Args, Debug)]
pub struct SearchBench {
    #[command(flatten)]
    pub neo4j: Neo4jSettings,
    /// Sessions to generate.
    #[arg(long, default_value_t = 10_000)]
    pub sessions: usize,
    /// Labelled queries (half with the sessions' words, half paraphrased).
    #[arg(long, default_value_t = 200)]
    pub queries: usize,
    /// Generator seed: the same seed gives the same history and queries.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Keep the generated project instead of purging it.
    #[arg(long)]
    pub keep: bool,
}

/// Concepts: the first word is canonical (used in sessions), the rest paraphrase it.
const TOPICS: &[&[&[&str]]] = &[
    &[
        &["login", "signin", "authentication"],
        &["token", "credential", "jwt"],
        &["cookie", "browser"],
        &["expiry", "expiration", "lifetime"],
    ],
    &[
        &["cache", "memoization", "memoize"],
        &["eviction", "purging", "expulsion"],
        &["latency", "slowness", "lag"],
        &["hit", "lookup", "probe"],
    ],
    &[
        &["database", "postgres", "sql"],
        &["migration", "upgrade", "evolution"],
        &["index", "btree", "lookup"],
        &["deadlock", "contention", "lockup"],
    ],
    &[
        &["parser", "tokenizer", "grammar"],
        &["error", "failure", "fault"],
        &["recovery", "resync", "resilience"],
        &["unicode", "utf8", "encoding"],
    ],
    &[
        &["deploy", "release", "rollout"],
        &["pipeline", "workflow", "ci"],
        &["artifact", "bundle", "package"],
        &["rollback", "revert", "undo"],
    ],
    &[
        &["queue", "broker", "mailbox"],
        &["retry", "redelivery", "reattempt"],
        &["backpressure", "throttling", "ratelimit"],
        &["consumer", "worker", "subscriber"],
    ],
    &[
        &["payment", "charge", "billing"],
        &["refund", "reimbursement", "chargeback"],
        &["invoice", "receipt", "statement"],
        &["currency", "money", "fx"],
    ],
    &[
        &["search", "retrieval", "lookup"],
        &["ranking", "scoring", "relevance"],
        &["embedding", "vector", "dense"],
        &["synonym", "paraphrase", "thesaurus"],
    ],
    &[
        &["upload", "ingest", "import"],
        &["image", "picture", "photo"],
        &["resize", "thumbnail", "downscale"],
        &["storage", "bucket", "blob"],
    ],
    &[
        &["websocket", "socket", "realtime"],
        &["heartbeat", "ping", "keepalive"],
        &["reconnect", "resume", "redial"],
        &["message", "frame", "packet"],
    ],
    &[
        &["logging", "tracing", "telemetry"],
        &["metric", "counter", "gauge"],
        &["alert", "alarm", "page"],
        &["dashboard", "panel", "chart"],
    ],
    &[
        &["permission", "authorization", "acl"],
        &["role", "group", "membership"],
        &["audit", "trail", "history"],
        &["admin", "superuser", "operator"],
    ],
];
const COMPONENTS: &[&str] = &[
    "ledger",
    "gateway",
    "scheduler",
    "storefront",
    "inventory",
    "catalog",
    "checkout",
    "profile",
    "notifier",
    "exporter",
    "importer",
    "planner",
    "tracker",
    "registry",
    "console",
    "portal",
    "agent",
    "proxy",
    "crawler",
    "renderer",
    "compiler",
    "editor",
    "player",
    "recorder",
    "mailer",
    "chat",
    "forum",
    "wiki",
    "calendar",
    "booking",
    "shipping",
    "warehouse",
    "reports",
    "analytics",
    "onboarding",
    "signup",
    "settings",
    "admin-panel",
    "mobile",
    "desktop",
];
const VERBS: &[&str] = &[
    "fix", "improve", "refactor", "debug", "speed up", "harden", "rework",
];
const OUTCOMES: &[&str] = &[
    "works again",
    "is faster",
    "is covered by tests",
    "is simpler",
    "no longer flakes",
];
const NOISE: &[&str] = &[
    "bump",
    "dependencies",
    "typo",
    "readme",
    "format",
    "lint",
    "rename",
    "variable",
    "comment",
    "changelog",
    "license",
    "version",
    "tidy",
    "imports",
    "whitespace",
    "docs",
];

/// xorshift64*: deterministic, dependency-free; variety, not cryptography.
struct Rng(u64);
impl Rng {
    fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// What a session is about: the label queries are judged by.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
struct Label {
    topic: usize,
    component: usize,
    concepts: (usize, usize),
}

pub struct Generated {
    /// (task, summary, age in days, label; `None` for noise).
    sessions: Vec<(String, String, f64, Option<Label>)>,
    /// (query text, paraphrased?, label).
    queries: Vec<(String, bool, Label)>,
}

/// The labelled synthetic history for `seed`.
pub fn generate(sessions: usize, queries: usize, seed: u64) -> Generated {
    let mut rng = Rng::new(seed);
    let mut out = Vec::with_capacity(sessions);
    let mut labelled = Vec::new();
    for _ in 0..sessions {
        let age = (rng.below(180 * 24) as f64) / 24.0;
        if rng.below(5) == 0 {
            let words: Vec<&str> = (0..6).map(|_| NOISE[rng.below(NOISE.len())]).collect();
            out.push((words[..3].join(" "), words[3..].join(" "), age, None));
            continue;
        }
        let topic = rng.below(TOPICS.len());
        let a = rng.below(4);
        let b = (a + 1 + rng.below(3)) % 4;
        let label = Label {
            topic,
            component: rng.below(COMPONENTS.len()),
            concepts: (a.min(b), a.max(b)),
        };
        let (c1, c2) = (TOPICS[topic][a][0], TOPICS[topic][b][0]);
        let comp = COMPONENTS[label.component];
        let task = format!("{} the {c1} {c2} in {comp}", VERBS[rng.below(VERBS.len())]);
        let summary = format!(
            "{c1} handling in {comp} {}",
            OUTCOMES[rng.below(OUTCOMES.len())]
        );
        labelled.push(label);
        out.push((task, summary, age, Some(label)));
    }
    let mut qs = Vec::with_capacity(queries);
    for i in 0..queries {
        if labelled.is_empty() {
            break;
        }
        let label = labelled[rng.below(labelled.len())];
        let paraphrased = i % 2 == 1;
        let word = |rng: &mut Rng, c: usize| {
            let group = TOPICS[label.topic][c];
            if paraphrased {
                group[1 + rng.below(group.len() - 1)]
            } else {
                group[0]
            }
        };
        let (w1, w2) = (
            word(&mut rng, label.concepts.0),
            word(&mut rng, label.concepts.1),
        );
        qs.push((
            format!("{w1} {w2} {}", COMPONENTS[label.component]),
            paraphrased,
            label,
        ));
    }
    Generated {
        sessions: out,
        queries: qs,
    }
}

/// The stub's "model": words to concepts (the canonical word), hashed into a unit vector.
pub fn stub_vector(text: &str, dim: usize) -> Vec<f32> {
    static CONCEPTS: std::sync::OnceLock<HashMap<&'static str, &'static str>> =
        std::sync::OnceLock::new();
    let concepts = CONCEPTS.get_or_init(|| {
        let mut m = HashMap::new();
        for topic in TOPICS {
            for group in *topic {
                for w in *group {
                    m.entry(*w).or_insert(group[0]);
                }
            }
        }
        m
    });
    let mut v = vec![0.0f32; dim.max(1)];
    let lower = text.to_lowercase();
    for word in lower.split(|c: char| !c.is_alphanumeric() && c != '-') {
        if word.len() < 2 {
            continue;
        }
        let concept = concepts.get(word).copied().unwrap_or(word);
        let h = concept.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        });
        let slot = (h % v.len() as u64) as usize;
        v[slot] += if h & 1 == 0 { 1.0 } else { -1.0 };
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    } else {
        v[0] = 1.0;
    }
    v
}

#[handler]
fn embeddings(body: Json<Value>, dim: poem::web::Data<&usize>) -> Json<Value> {
    let inputs: Vec<String> = match &body.0["input"] {
        Value::String(s) => vec![s.clone()],
        Value::Array(xs) => xs
            .iter()
            .map(|x| x.as_str().unwrap_or_default().to_string())
            .collect(),
        _ => Vec::new(),
    };
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(i, t)| json!({"object": "embedding", "index": i, "embedding": stub_vector(t, *dim.0)}))
        .collect();
    Json(json!({"object": "list", "model": "stub", "data": data,
                "usage": {"prompt_tokens": 0, "total_tokens": 0}}))
}

/// Serves the stub on 127.0.0.1:0; returns its base URL.
pub async fn serve_stub(dim: usize) -> anyhow::Result<String> {
    use poem::EndpointExt;
    let app = Route::new()
        .at("/v1/embeddings", poem::post(embeddings))
        .data(dim);
    Ok(format!("{}/v1", cairn_testkit::stub::serve(app).await?))
}

#[derive(Default, Serialize)]
struct Quality {
    recall_at_5: f64,
    mrr: f64,
    queries: usize,
}

fn quality(ranks: &[Option<usize>]) -> Quality {
    let n = ranks.len().max(1) as f64;
    Quality {
        recall_at_5: ranks.iter().filter(|r| r.is_some_and(|r| r < 5)).count() as f64 / n,
        mrr: ranks
            .iter()
            .map(|r| r.map_or(0.0, |r| 1.0 / (r as f64 + 1.0)))
            .sum::<f64>()
            / n,
        queries: ranks.len(),
    }
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

pub async fn run(args: SearchBench) -> anyhow::Result<()> {
    let store = Store::connect(&args.neo4j).context("invalid Neo4j settings")?;
    cairn::graph::schema::apply(&store, args.neo4j.embed_dimensions)
        .await
        .context("could not apply the schema; is Neo4j running?")?;
    let project = format!("bench-search-{}", uuid::Uuid::new_v4().simple());
    let generated = generate(args.sessions, args.queries, args.seed);
    let outcome = measure(&store, &args, &project, &generated).await;
    if !args.keep {
        cairn::graph::purge::project_now(&store, &project).await?;
    }
    let report = outcome?;
    println!("{}", serde_json::to_string_pretty(&report)?);
    Ok(())
}

async fn measure(
    store: &Store,
    args: &SearchBench,
    project: &str,
    generated: &Generated,
) -> anyhow::Result<Value> {
    #[derive(Serialize)]
    struct Row {
        id: String,
        task: String,
        summary: String,
        at: i64,
    }
    let now = cairn::graph::now_ms();
    let mut labels: HashMap<String, Option<Label>> = HashMap::new();
    let rows: Vec<Row> = generated
        .sessions
        .iter()
        .enumerate()
        .map(|(i, (task, summary, age, label))| {
            let id = format!("{project}-{i:06}");
            labels.insert(id.clone(), *label);
            Row {
                id,
                task: task.clone(),
                summary: summary.clone(),
                at: now - (age * 86_400_000.0) as i64,
            }
        })
        .collect();
    let started = Instant::now();
    for chunk in rows.chunks(1_000) {
        store
            .run(
                statement(include_str!("../cypher/bench_search_seed.cypher"))
                    .param("project", project)
                    .param("now", now)
                    .param("rows", param(chunk)?),
            )
            .await?;
    }
    let seeded_ms = started.elapsed().as_millis();
    let started = Instant::now();
    while index::rebuild_dirty(store, 1_000).await? > 0 {}
    let indexed_ms = started.elapsed().as_millis();

    let dim = args.neo4j.embed_dimensions as usize;
    let base = serve_stub(dim).await?;
    let embedder = Embedder::from_settings(
        &EmbedSettings {
            base_url: Some(base),
            model: "stub".into(),
            timeout_ms: 10_000,
            attempts: 3,
            batch: 64,
            ..Default::default()
        },
        dim as u32,
    )
    .context("embedder")?;
    let started = Instant::now();
    loop {
        #[derive(serde::Deserialize)]
        struct Doc {
            id: String,
            project: String,
            doc: String,
            hash: String,
        }
        let docs: Vec<Doc> = store
            .fetch(
                statement(include_str!("../cypher/bench_search_docs.cypher"))
                    .param("project", project)
                    .param("limit", 1_000_i64),
            )
            .await?;
        if docs.is_empty() {
            break;
        }
        let texts: Vec<String> = docs.iter().map(|d| d.doc.clone()).collect();
        let vectors = embedder.embed(&texts).await?;
        let stored: Vec<index::Stored> = docs
            .iter()
            .zip(vectors)
            .map(|(d, vector)| index::Stored {
                id: &d.id,
                project: &d.project,
                hash: &d.hash,
                vector,
            })
            .collect();
        let holder = cairn::graph::lease::process_holder();
        index::store_embeddings(
            store,
            holder,
            embedder.model(),
            embedder.dimensions(),
            &stored,
        )
        .await?;
    }
    let embedded_ms = started.elapsed().as_millis();

    let weights = search::Weights {
        similarity: 0.6,
        recency: 0.3,
        importance: 0.1,
    };
    let mut report = serde_json::Map::new();
    for (mode, embed) in [("fulltext", None), ("hybrid", Some(&embedder))] {
        // Warm-up: the first queries pay for caches and connections.
        for (q, _, _) in generated.queries.iter().take(10) {
            search::search(store, embed, weights, project, q, 5, &[]).await?;
        }
        let mut ranks: [Vec<Option<usize>>; 2] = [Vec::new(), Vec::new()];
        let mut took = Vec::new();
        let mut answered = HashMap::new();
        for (q, paraphrased, label) in &generated.queries {
            let t = Instant::now();
            let found = search::search(store, embed, weights, project, q, 10, &[]).await?;
            took.push(t.elapsed());
            *answered
                .entry(format!("{:?}", found.mode).to_lowercase())
                .or_insert(0) += 1;
            let rank = found
                .hits
                .iter()
                .position(|h| labels.get(&h.session_id).copied().flatten() == Some(*label));
            ranks[usize::from(*paraphrased)].push(rank);
        }
        took.sort();
        let all: Vec<Option<usize>> = ranks.concat();
        report.insert(
            mode.into(),
            json!({
                "answered_by": answered,
                "exact_words": quality(&ranks[0]),
                "paraphrased": quality(&ranks[1]),
                "overall": quality(&all),
                "latency_ms": {"p50": percentile(&took, 0.5), "p95": percentile(&took, 0.95),
                               "max": percentile(&took, 1.0)},
            }),
        );
    }
    report.insert(
        "setup".into(),
        json!({"sessions": args.sessions, "queries": generated.queries.len(), "seed": args.seed,
               "dimensions": dim, "seed_ms": seeded_ms, "index_ms": indexed_ms,
               "embed_ms": embedded_ms}),
    );
    Ok(Value::Object(report))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generator_is_deterministic_and_labelled() {
        let a = generate(500, 40, 7);
        let b = generate(500, 40, 7);
        assert_eq!(a.sessions.len(), 500);
        assert_eq!(a.queries.len(), 40);
        assert_eq!(format!("{:?}", a.queries), format!("{:?}", b.queries));
        assert!(a.sessions.iter().any(|s| s.3.is_none()), "noise present");
        // A paraphrased query shares no concept word with the sessions it is about.
        let (q, paraphrased, label) = &a.queries[1];
        assert!(*paraphrased);
        let canon = TOPICS[label.topic][label.concepts.0][0];
        assert!(!q.split(' ').any(|w| w == canon), "{q}");
    }

    #[test]
    fn stub_vectors_are_unit_and_synonym_aware() {
        let a = stub_vector("login token ledger", 384);
        let b = stub_vector("signin credential ledger", 384);
        let c = stub_vector("cache eviction ledger", 384);
        let dot = |x: &[f32], y: &[f32]| x.iter().zip(y).map(|(p, q)| p * q).sum::<f32>();
        assert!((dot(&a, &a) - 1.0).abs() < 1e-5);
        assert!(dot(&a, &b) > 0.99);
        assert!(dot(&a, &c) < 0.5);
    }
}
