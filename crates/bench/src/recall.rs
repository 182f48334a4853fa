//! `cairn-bench recall`: over the seeded project ([`crate::seeded`]: 10k sessions / 1M
//! operations by default, vectors included) served by cairn in this process, measures the
//! read path through the real HTTP API: reconstruction of a 1000-operation session, context
//! with an 8k budget, the sliding window, and turn search (`POST /v1/search`, hybrid; also
//! with a day named, "… yesterday"). Prints p50/p95/max per route, and the CPU time a request
//! costs this process (cairn and the client) and the local Neo4j ([`cpu`]).
//!
//! The baseline, timed last in the same run: the two index statements a turn search cannot do
//! without (the full-text index's best 440 for the query's words, of which the project's 200;
//! the vector index's 200 nearest), sent at once straight to Neo4j with no ranking, fusion or
//! HTTP around them (`index_statements`). Each search and task context is also given as a
//! ratio of its p95 to the baseline's: what cairn adds to what Neo4j must do anyway, read
//! against the same moment's machine.
//!
//! A Neo4j just started answers the same statements several times slower than it will once
//! its JVM has compiled them: the first few thousand requests after a start measured a task
//! context's p95 at 54–76 ms, the same build 26–28 ms after. So every route is asked in turn
//! for `--warm-up-secs` first (progress shown), and what is timed is the service as it runs.
//! Before that, a Neo4j still busy on its own is waited for (`--quiet-wait-secs`): after a
//! seed it merges the vector index's Lucene segments for minutes on one of the two cores, and
//! a run timed then measured a task context's p95 at 140 ms with 128 ms of Neo4j's CPU per
//! request, against 39–45 ms and 34–37 ms in the runs after it.
//! Each task context and turn search asks another query than the one before, so no answer
//! is the repeat of the last.

use std::time::{Duration, Instant};

use clap::Args;
use serde_json::json;

use cairn::config::EmbedSwitch;
use cairn::graph::turns::{self, Filter, Vectors};
use cairn::graph::Store;

use super::cpu::{self, Meter};
use super::seeded::{self, SeedArgs};
use super::{ms, quantile};

#[derive(Args, Debug)]
pub struct RecallBench {
    #[command(flatten)]
    pub seed: SeedArgs,
    /// Timed requests per route (after 10 warm-up requests of the route).
    #[arg(long, default_value_t = 200)]
    pub iterations: usize,
    /// Seconds spent asking every route in turn before any is timed, so Neo4j's JVM has
    /// compiled what the routes run (0: only each route's 10 warm-up requests).
    #[arg(long, default_value_t = 120)]
    pub warm_up_secs: u64,
    /// Seconds at most spent waiting, before the warm-up, for the local Neo4j to use less
    /// than a tenth of a core on its own (0: no wait). Progress is shown every 10 s.
    #[arg(long, default_value_t = 900)]
    pub quiet_wait_secs: u64,
    /// Context budget in tokens.
    #[arg(long, default_value_t = 8_000)]
    pub budget: usize,
    /// Window token limit.
    #[arg(long, default_value_t = 2_000)]
    pub window_tokens: usize,
    /// The pid file of the Neo4j whose CPU time is reported (`scripts/neo4j-local`'s); none
    /// is reported when it is missing.
    #[arg(long, default_value = ".neo4j/run/neo4j.pid")]
    pub neo4j_pid_file: std::path::PathBuf,
}

/// One route's line: p50, p95 and max, then CPU milliseconds per request of this process and
/// of Neo4j (`-` when not known).
fn print_row(
    name: &str,
    times: &mut [std::time::Duration],
    (own, neo4j): (Option<f64>, Option<f64>),
) {
    let cpu = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |v| format!("{v:.1}"));
    println!(
        "{:<36} {:>9.2} {:>9.2} {:>9.2} {:>11} {:>11}",
        name,
        ms(quantile(times, 0.50)),
        ms(quantile(times, 0.95)),
        ms(quantile(times, 1.0)),
        cpu(own),
        cpu(neo4j)
    );
}

/// The CPU a route's timed requests cost, per request (`since`: read before the first).
fn cpu_since(
    meter: &Meter,
    since: Option<cpu::Reading>,
    requests: usize,
) -> (Option<f64>, Option<f64>) {
    since.map_or((None, None), |r| r.per_request(&meter.read(), requests))
}

/// Turn searches, each with another query (so no answer is a repeat of the last).
pub const TURN_QUERIES: &[&str] = &[
    "parser cache",
    "why did the lexer token change",
    "schema index tests",
    "router handler budget",
    "spool writer config metrics",
    "auth window session",
    "graph query fails",
    "please look at the cache and the index",
];

/// Rows of each baseline list: what each of turn search's lists asks for.
const BASELINE_ROWS: usize = 200;

/// The baseline's `i`-th request: `TURN_QUERIES[i]`'s two index statements, as turn search
/// sends them (`cairn::graph::turns`), at once; the full-text one alone without vectors
/// (`vectors`, their dimension: `None` with `--embed off`). The full-text statement reads the
/// index's best rows and keeps the project's, or is narrowed to the project inside Lucene on a
/// database other projects share, as turn search decides
/// (`cairn::recall::turns::fulltext_at`).
async fn index_statements(
    store: &Store,
    project: &str,
    vectors: Option<usize>,
    i: usize,
) -> anyhow::Result<Duration> {
    let text = TURN_QUERIES[i % TURN_QUERIES.len()];
    let words = cairn::recall::rank::lucene_words_in(&cairn::recall::rank::TURN_FIELDS, text)
        .ok_or_else(|| anyhow::anyhow!("no words to search in {text:?}"))?;
    let filter = Filter {
        project,
        types: None,
        sessions: None,
        exclude_session: None,
    };
    let model = vectors.map(|_| seeded::STUB_IDENTITY);
    let vector = vectors.map(|dim| super::search::stub_vector(text, dim));
    let t = Instant::now();
    let (words, near) = tokio::try_join!(
        cairn::recall::turns::fulltext_at(
            store,
            &filter,
            model,
            &words,
            BASELINE_ROWS,
            cairn::recall::turns::whole_index_share(&filter),
        ),
        async {
            match (model, &vector) {
                (Some(model), Some(v)) => {
                    let of = Vectors::Operations;
                    turns::nearest(store, &filter, of, model, v, BASELINE_ROWS, BASELINE_ROWS)
                        .await
                        .map(Some)
                }
                _ => Ok(None),
            }
        }
    )?;
    let took = t.elapsed();
    anyhow::ensure!(
        !words.is_empty() && near.as_ref().is_none_or(|n| !n.is_empty()),
        "the baseline found nothing for {text:?} ({} full-text rows, {:?} nearest): is the \
         project seeded?",
        words.len(),
        near.map(|n| n.len())
    );
    Ok(took)
}

/// Tasks of the task contexts, in turn (so no answer is the repeat of the last).
pub const TASKS: &[&str] = &[
    "fix the parser cache",
    "why did the lexer token change",
    "make the schema index tests pass",
    "the router handler ignores the budget",
    "spool writer config and its metrics",
    "auth window of a session",
];

/// A route the bench times: how its `i`-th request is made.
struct Route<'a> {
    name: &'static str,
    make: Box<dyn Fn(usize) -> reqwest::RequestBuilder + 'a>,
    /// A turn search: every answer must say it was hybrid.
    search: bool,
}

/// Sends the `i`-th request of `route`; how long its answer took.
async fn ask(route: &Route<'_>, i: usize, key: &str) -> anyhow::Result<Duration> {
    let r = (route.make)(i).bearer_auth(key);
    let t = Instant::now();
    let resp = r.send().await?;
    let status = resp.status();
    let body = resp.bytes().await?;
    let took = t.elapsed();
    let text = || String::from_utf8_lossy(&body).into_owned();
    anyhow::ensure!(
        status.is_success(),
        "{} answered {status}: {}",
        route.name,
        text()
    );
    if route.search {
        let answer: serde_json::Value = serde_json::from_slice(&body)?;
        anyhow::ensure!(
            answer["mode"] == "hybrid",
            "{} was not hybrid: {}",
            route.name,
            answer["mode"]
        );
    }
    Ok(took)
}

/// A Neo4j using less than this share of a core on its own is quiet.
const QUIET_CORES: f64 = 0.1;

/// Waits, at most `secs`, until the Neo4j `meter` reads uses less than [`QUIET_CORES`] over
/// 10 s, saying each time what it still uses. Returns at once when its time is not read (a
/// remote Neo4j).
async fn until_neo4j_is_quiet(meter: &Meter, secs: u64) {
    let window = Duration::from_secs(10);
    let started = Instant::now();
    while started.elapsed().as_secs() < secs {
        let before = meter.read();
        tokio::time::sleep(window).await;
        let Some(cores) = before.neo4j_cores(&meter.read(), window) else {
            return;
        };
        if cores < QUIET_CORES {
            println!(
                "Neo4j is quiet ({:.0} % of a core over 10 s) after {} s",
                cores * 100.0,
                started.elapsed().as_secs()
            );
            return;
        }
        println!(
            "Neo4j is busy on its own: {:.0} % of a core over the last 10 s (after a seed it merges what was written); waiting, {} s of at most {secs} s",
            cores * 100.0,
            started.elapsed().as_secs()
        );
    }
    println!("Neo4j is still busy after {secs} s; timing anyway (the figures below count it)");
}

/// Asks every route in turn for `secs` seconds, saying every 30 s how long a round of them
/// took last: it falls as the JVM compiles, then holds.
async fn warm_up(routes: &[Route<'_>], key: &str, secs: u64) -> anyhow::Result<()> {
    let started = Instant::now();
    let mut said = started;
    let mut round = 0;
    while started.elapsed().as_secs() < secs {
        let t = Instant::now();
        for route in routes {
            ask(route, round, key).await?;
        }
        round += 1;
        if said.elapsed().as_secs() >= 30 {
            said = Instant::now();
            println!(
                "warming up: {}s of {secs}s, {round} rounds of every route, the last in {:.1} ms",
                started.elapsed().as_secs(),
                ms(t.elapsed())
            );
        }
    }
    Ok(())
}

pub async fn run(b: RecallBench) -> anyhow::Result<()> {
    let Some(served) = seeded::serve(&b.seed).await? else {
        return Ok(());
    };
    let (project, big, key) = (&served.project, &served.big_session, &served.key);
    let http = reqwest::Client::new();
    let base = served.base.as_str();
    let budget = b.budget;
    let window = b.window_tokens;
    let (http, project, big) = (&http, project.as_str(), big.as_str());
    let mut routes = vec![
        Route {
            name: "reconstruction (1000-op session)",
            make: Box::new(move |_| {
                http.get(format!(
                    "{base}/v1/sessions/{big}/reconstruction?max_operations=1000"
                ))
            }),
            search: false,
        },
        Route {
            name: "context (session, 8k budget)",
            make: Box::new(move |_| {
                http.post(format!("{base}/v1/context"))
                    .json(&json!({"project": project, "session_id": big, "budget_tokens": budget}))
            }),
            search: false,
        },
        Route {
            name: "context (task, 8k budget)",
            make: Box::new(move |i| {
                let task = TASKS[i % TASKS.len()];
                http.post(format!("{base}/v1/context"))
                    .json(&json!({"project": project, "task": task, "budget_tokens": budget}))
            }),
            search: false,
        },
        Route {
            name: "window",
            make: Box::new(move |_| {
                http.get(format!(
                    "{base}/v1/sessions/{big}/window?token_limit={window}"
                ))
            }),
            search: false,
        },
    ];
    // The last also names a day, so the sessions active then are searched as well.
    for (name, types, when) in [
        ("turn search (hybrid, 10)", None, ""),
        ("turn search (hybrid, messages)", Some(["message"]), ""),
        ("turn search (hybrid, a day named)", None, " yesterday"),
    ] {
        routes.push(Route {
            name,
            make: Box::new(move |i| {
                let query = format!("{}{when}", TURN_QUERIES[i % TURN_QUERIES.len()]);
                http.post(format!("{base}/v1/search"))
                    .json(&json!({"project": project, "query": query, "limit": 10, "types": types}))
            }),
            search: true,
        });
    }
    println!(
        "project {project}: {} sessions, {} operations; {} timed requests per route",
        b.seed.sessions, b.seed.operations, b.iterations
    );
    let meter = Meter::new(&b.neo4j_pid_file);
    until_neo4j_is_quiet(&meter, b.quiet_wait_secs).await;
    warm_up(&routes, key, b.warm_up_secs).await?;
    println!(
        "{:<36} {:>9} {:>9} {:>9} {:>11} {:>11}",
        "route", "p50 ms", "p95 ms", "max ms", "cpu cairn", "cpu neo4j"
    );
    let mut p95s = Vec::with_capacity(routes.len());
    for route in &routes {
        for i in 0..10 {
            ask(route, i, key).await?;
        }
        let since = Some(meter.read());
        let mut times = Vec::with_capacity(b.iterations);
        for i in 10..b.iterations + 10 {
            times.push(ask(route, i, key).await?);
        }
        print_row(
            route.name,
            &mut times,
            cpu_since(&meter, since, b.iterations),
        );
        p95s.push((route.name, quantile(&mut times, 0.95)));
    }
    drop(routes);
    let dim = (b.seed.settings.embed.switch != EmbedSwitch::Off)
        .then_some(b.seed.settings.neo4j.embed_dimensions as usize);
    let store = &served.store;
    for i in 0..10 {
        index_statements(store, project, dim, i).await?;
    }
    let since = Some(meter.read());
    let mut times = Vec::with_capacity(b.iterations);
    for i in 10..b.iterations + 10 {
        times.push(index_statements(store, project, dim, i).await?);
    }
    print_row(
        "baseline: the two index statements",
        &mut times,
        cpu_since(&meter, since, b.iterations),
    );
    let base = ms(quantile(&mut times, 0.95));
    for (name, p95) in p95s
        .iter()
        .filter(|(name, _)| name.starts_with("turn search") || name.contains("task"))
    {
        println!("{name}: p95 {:.2}× the baseline's", ms(*p95) / base);
    }
    served.stop(b.seed.purge).await
}
