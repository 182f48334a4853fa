//! `cairn-bench recall`: over the seeded project ([`crate::seeded`]: 10k sessions / 1M
//! operations by default, vectors included) served by cairn in this process, measures the
//! read path through the real HTTP API: reconstruction of a 1000-operation session, context
//! with an 8k budget, the sliding window, and turn search (`POST /v1/search`, hybrid; also
//! with a day named, "… yesterday"). Prints p50/p95/max per route, and the CPU time a request
//! costs this process (cairn and the client) and the local Neo4j ([`cpu`]).

use std::time::Instant;

use anyhow::Context as _;
use clap::Args;
use serde_json::json;

use super::cpu::{self, Meter};
use super::seeded::{self, SeedArgs};
use super::{ms, quantile};

#[derive(Args, Debug)]
pub struct RecallBench {
    #[command(flatten)]
    pub seed: SeedArgs,
    /// Timed requests per route (after 10 warm-up requests).
    #[arg(long, default_value_t = 200)]
    pub iterations: usize,
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

pub async fn run(b: RecallBench) -> anyhow::Result<()> {
    let Some(served) = seeded::serve(&b.seed).await? else {
        return Ok(());
    };
    let (project, big, key) = (&served.project, &served.big_session, &served.key);
    let http = reqwest::Client::new();
    let base = served.base.clone();
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
        b.seed.sessions, b.seed.operations, b.iterations
    );
    let meter = Meter::new(&b.neo4j_pid_file);
    println!(
        "{:<36} {:>9} {:>9} {:>9} {:>11} {:>11}",
        "route", "p50 ms", "p95 ms", "max ms", "cpu cairn", "cpu neo4j"
    );
    for (name, req) in routes {
        let mut times = Vec::with_capacity(b.iterations);
        let mut since = None;
        for i in 0..b.iterations + 10 {
            if i == 10 {
                since = Some(meter.read());
            }
            let r = req.try_clone().context("request")?.bearer_auth(key);
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
        print_row(name, &mut times, cpu_since(&meter, since, b.iterations));
    }
    // The last also names a day, so the sessions active then are searched as well.
    for (name, types, when) in [
        ("turn search (hybrid, 10)", None, ""),
        ("turn search (hybrid, messages)", Some(vec!["message"]), ""),
        ("turn search (hybrid, a day named)", None, " yesterday"),
    ] {
        let mut times = Vec::with_capacity(b.iterations);
        let mut modes = std::collections::BTreeSet::new();
        let mut since = None;
        for i in 0..b.iterations + 10 {
            if i == 10 {
                since = Some(meter.read());
            }
            let query = format!("{}{when}", TURN_QUERIES[i % TURN_QUERIES.len()]);
            let r = http
                .post(format!("{base}/v1/search"))
                .json(&json!({"project": project, "query": query, "limit": 10, "types": types}))
                .bearer_auth(key);
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
        print_row(name, &mut times, cpu_since(&meter, since, b.iterations));
    }
    served.stop(b.seed.purge).await
}
