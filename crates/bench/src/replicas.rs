//! `cairn-bench replicas`: what running more than one `cairn serve` costs or buys. In one run,
//! against `cairn serve` child processes on one Neo4j (vectors off, so only capture is
//! measured): `clients` clients each writing its own session through 1 replica, the same
//! through `replicas` replicas (client c → replica c mod n), and all clients writing one
//! session through the replicas (every batch contends for that session's write lock). Each
//! scenario is timed from the first request until every operation is in Neo4j; acks are timed
//! per request.

use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::Args;
use serde_json::json;

use super::{ms, quantile};
use cairn::config::Neo4jSettings;
use cairn::graph::{self, Store};
use cairn_testkit::child::{ServeChild, ServeOptions};

#[derive(Args, Debug, Clone)]
pub struct ReplicasArgs {
    /// Operations per scenario.
    #[arg(long, default_value_t = 32_000)]
    pub operations: usize,
    /// Operations per capture request.
    #[arg(long, default_value_t = 50)]
    pub batch: usize,
    /// Concurrent clients.
    #[arg(long, default_value_t = 16)]
    pub clients: usize,
    /// Replicas in the multi-replica scenarios.
    #[arg(long, default_value_t = 3)]
    pub replicas: usize,
    #[command(flatten)]
    pub neo4j: Neo4jSettings,
    #[command(flatten)]
    pub cairn: crate::CairnBin,
}

/// One scenario's figures.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Scenario {
    pub name: String,
    pub replicas: usize,
    pub sessions: usize,
    pub operations: usize,
    pub ops_per_sec: f64,
    pub ack_p50_ms: f64,
    pub ack_p99_ms: f64,
    pub acked_after_s: f64,
    pub in_neo4j_after_s: f64,
}

pub async fn run(args: ReplicasArgs) -> anyhow::Result<Vec<Scenario>> {
    anyhow::ensure!(
        args.clients > 0 && args.replicas > 0 && args.batch > 0,
        "nothing to do"
    );
    let store = Store::connect(&args.neo4j).context("invalid Neo4j settings")?;
    graph::schema::apply(&store, args.neo4j.embed_dimensions)
        .await
        .context("could not reach Neo4j; start it with scripts/neo4j-local start")?;
    let exe = args.cairn.path()?;
    let dir = std::env::temp_dir().join(format!(
        "cairn-bench-replicas-{}",
        uuid::Uuid::new_v4().simple()
    ));
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(args.clients)
        .build()?;
    let mut children = Vec::new();
    for i in 0..args.replicas {
        let options = ServeOptions::new(&exe, &dir.join(format!("spool-{i}")), &args.neo4j)?;
        children.push(ServeChild::spawn(options)?);
    }
    for c in &children {
        c.wait_ready(&http, Duration::from_secs(120)).await?;
    }
    let bases: Vec<String> = children.iter().map(|c| c.base.clone()).collect();
    let run_id = uuid::Uuid::new_v4().simple().to_string()[..10].to_string();
    let n = args.replicas;
    let plan = [
        ("1 replica, a session per client", 1, false),
        ("replicas, a session per client", n, false),
        ("replicas, one session for all clients", n, true),
    ];
    let mut out = Vec::new();
    for (i, (name, replicas, shared)) in plan.into_iter().enumerate() {
        let project = format!("bench-replicas-{run_id}-{i}");
        let name = name.replace("replicas", &format!("{replicas} replicas"));
        let s = scenario(
            &http,
            &store,
            &bases[..replicas],
            &project,
            &args,
            shared,
            name,
        )
        .await?;
        eprintln!(
            "{}: {:.0} ops/s, ack p50 {:.1} ms p99 {:.1} ms",
            s.name, s.ops_per_sec, s.ack_p50_ms, s.ack_p99_ms
        );
        out.push(s);
        graph::purge::project_now(&store, &project).await?;
    }
    for c in children {
        c.stop().await;
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(out)
}

/// Runs one scenario through `bases`: one session for all clients when `shared`.
async fn scenario(
    http: &reqwest::Client,
    store: &Store,
    bases: &[String],
    project: &str,
    args: &ReplicasArgs,
    shared: bool,
    name: String,
) -> anyhow::Result<Scenario> {
    let sessions = if shared { 1 } else { args.clients };
    let mut ids = Vec::new();
    for s in 0..sessions {
        let r = http
            .post(format!("{}/v1/sessions", bases[s % bases.len()]))
            .json(&json!({"project": project, "session_id": format!("{project}-s{s}")}))
            .send()
            .await?;
        anyhow::ensure!(
            r.status().is_success(),
            "starting a session answered {}",
            r.status()
        );
        let r: serde_json::Value = r.json().await?;
        ids.push(r["session_id"].as_str().context("session id")?.to_string());
    }
    // A start answered 202 is in its replica's spool only; clients writing through another
    // replica need it in Neo4j. Not timed: the clock starts with the operations.
    let visible_by = Instant::now() + Duration::from_secs(120);
    for id in &ids {
        while graph::sessions::get(store, id).await?.is_none() {
            anyhow::ensure!(
                Instant::now() < visible_by,
                "session {id} did not reach Neo4j within 2 minutes"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    let per_client = args.operations / args.clients / args.batch;
    let total = per_client * args.batch * args.clients;
    // Bodies encoded before the clock starts, as in `cairn-bench ingest`.
    let bodies: Vec<Vec<bytes::Bytes>> = (0..args.clients)
        .map(|c| {
            (0..per_client)
                .map(|b| {
                    let ops: Vec<_> = (0..args.batch)
                        .map(|i| {
                            json!({"id": format!("{project}-c{c}-b{b}-{i}"), "type": "read",
                                        "target": format!("src/module_{}.rs", i % 50),
                                        "summary": format!("client {c} batch {b} operation {i}")})
                        })
                        .collect();
                    bytes::Bytes::from(json!({ "operations": ops }).to_string())
                })
                .collect()
        })
        .collect();
    let started = Instant::now();
    let mut tasks = Vec::new();
    for (c, bodies) in bodies.into_iter().enumerate() {
        let url = format!(
            "{}/v1/sessions/{}/operations",
            bases[c % bases.len()],
            ids[if shared { 0 } else { c }]
        );
        tasks.push(tokio::spawn(crate::ingest::send(
            http.clone(),
            url,
            bodies,
            None,
        )));
    }
    let mut lat = Vec::new();
    for t in tasks {
        lat.extend(t.await??);
    }
    let acked = started.elapsed();
    super::wait_written(
        store,
        project,
        total as i64,
        Duration::from_millis(20),
        Duration::from_secs(600),
    )
    .await?
    .context("operations did not all reach Neo4j within 10 minutes")?;
    let written = started.elapsed();
    Ok(Scenario {
        name,
        replicas: bases.len(),
        sessions,
        operations: total,
        ops_per_sec: total as f64 / written.as_secs_f64(),
        ack_p50_ms: ms(quantile(&mut lat, 0.5)),
        ack_p99_ms: ms(quantile(&mut lat, 0.99)),
        acked_after_s: acked.as_secs_f64(),
        in_neo4j_after_s: written.as_secs_f64(),
    })
}

pub fn print(rows: &[Scenario]) {
    println!("| scenario | sessions | operations | ops/s until in Neo4j | ack p50 ms | ack p99 ms | acked after s | in Neo4j after s |");
    println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
    for r in rows {
        println!(
            "| {} | {} | {} | {:.0} | {:.1} | {:.1} | {:.1} | {:.1} |",
            r.name,
            r.sessions,
            r.operations,
            r.ops_per_sec,
            r.ack_p50_ms,
            r.ack_p99_ms,
            r.acked_after_s,
            r.in_neo4j_after_s
        );
    }
}
