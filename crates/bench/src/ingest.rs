//! `cairn-bench ingest`: N operations in batches through cairn's HTTP capture path, timed until
//! all are in Neo4j, next to a baseline of the same rows written straight to Neo4j with a
//! plain `UNWIND` by the same number of concurrent writers.

use std::{time::Duration, time::Instant};

use anyhow::Context;
use clap::Args;
use serde_json::json;

use super::{ms, quantile};
use cairn::app::Application;
use cairn::config::Settings;
use cairn::graph::{self, Store};

#[derive(Args, Debug, Clone)]
pub struct IngestArgs {
    /// Operations in total.
    #[arg(long, default_value_t = 100_000)]
    pub operations: usize,
    /// Operations per request.
    #[arg(long, default_value_t = 100)]
    pub batch: usize,
    /// Concurrent clients (each writes its own session).
    #[arg(long, default_value_t = 16)]
    pub clients: usize,
    /// Requests per second per client (open loop, latency counted from each request's
    /// scheduled time); 0 sends each request as soon as the previous one is answered.
    #[arg(long, default_value_t = 0.0)]
    pub rate: f64,
    /// Rounds of baseline and cairn, alternating which goes first, each with its share of
    /// the operations; the figures sum over all rounds.
    #[arg(long, default_value_t = 2)]
    pub rounds: usize,
    /// Write + fdatasync pairs timed on the spool's disk alone before each round's cairn side
    /// (0: none), and then one every 5 ms while either side writes: the floor under an ack,
    /// which waits for one.
    #[arg(long, default_value_t = 500)]
    pub disk_syncs: usize,
    #[command(flatten)]
    pub settings: Settings,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct IngestReport {
    pub operations: usize,
    pub batch: usize,
    pub clients: usize,
    /// Requests per second per client; 0 for a closed loop.
    pub rate: f64,
    pub rounds: usize,
    pub cairn_ops_per_sec: f64,
    pub cairn_ack_p50_ms: f64,
    pub cairn_ack_p99_ms: f64,
    pub cairn_ack_max_ms: f64,
    /// Server-side mean of the acknowledgement's stages: validation, then the durable append.
    pub cairn_ack_validate_mean_ms: Option<f64>,
    pub cairn_ack_spool_mean_ms: Option<f64>,
    /// Mean time of one spool write + fsync, and records per fsync (group commit).
    pub spool_sync_mean_ms: Option<f64>,
    pub spool_records_per_sync: Option<f64>,
    /// Spool fsyncs, and those slower than 5 ms: every client waiting on one waits that long.
    pub spool_syncs: Option<f64>,
    pub spool_syncs_over_5ms: Option<f64>,
    /// Capture requests the server itself took more than 10 ms to answer.
    pub server_acks_over_10ms: Option<f64>,
    /// The spool's disk in the same run: idle, and while each side writes (a sync every
    /// 5 ms on both sides alike, so neither bears more load than the other).
    pub disk_idle: SyncStats,
    pub disk_under_baseline: SyncStats,
    pub disk_under_cairn: SyncStats,
    pub baseline_ops_per_sec: f64,
    pub baseline_batch_p50_ms: f64,
    pub baseline_batch_p99_ms: f64,
    pub throughput_ratio: f64,
    /// The turn index's model (empty: texts only, no embedder configured).
    pub turn_index_model: String,
    /// Operations of the run the turn indexer had not processed: the most seen while cairn
    /// captured (sampled every 250 ms), and when the last capture was in Neo4j.
    pub turn_index_lag_max: i64,
    pub turn_index_lag_at_written: i64,
    /// Seconds from all operations in Neo4j to none pending in the turn index (summed over
    /// rounds; the baseline side starts after it), and the indexer's rate meanwhile.
    pub turn_index_catch_up_s: f64,
    pub turn_index_catch_up_ops_per_sec: f64,
}

/// The turn index's lag in `project`: sampled while `stop` is unset; the largest seen.
async fn sample_lag(
    store: Store,
    project: String,
    model: String,
    stop: tokio::sync::watch::Receiver<bool>,
) -> i64 {
    let mut max = 0i64;
    while !*stop.borrow() {
        if let Ok(n) = graph::turns::pending_in_project(&store, &project, &model).await {
            max = max.max(n);
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    max
}

/// Waits until the turn index has nothing pending in `project`; returns how long it took.
async fn turn_index_caught_up(
    store: &Store,
    project: &str,
    model: &str,
) -> anyhow::Result<Duration> {
    let started = Instant::now();
    loop {
        if graph::turns::pending_in_project(store, project, model).await? == 0 {
            return Ok(started.elapsed());
        }
        anyhow::ensure!(
            started.elapsed() < Duration::from_secs(1_800),
            "the turn index did not catch up within 30 minutes"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Write + fdatasync latencies on the spool's disk.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct SyncStats {
    pub syncs: usize,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub over_10ms: usize,
}

impl SyncStats {
    fn of(mut lat: Vec<Duration>) -> Self {
        Self {
            syncs: lat.len(),
            over_10ms: lat
                .iter()
                .filter(|d| **d > Duration::from_millis(10))
                .count(),
            p50_ms: ms(quantile(&mut lat, 0.5)),
            p99_ms: ms(quantile(&mut lat, 0.99)),
            max_ms: ms(quantile(&mut lat, 1.0)),
        }
    }

    fn print(&self, what: &str) {
        if self.syncs > 0 {
            println!(
                "spool disk {what}: write + fdatasync p50 {:.2} / p99 {:.2} / max {:.1} ms, {} of {} over 10 ms",
                self.p50_ms, self.p99_ms, self.max_ms, self.over_10ms, self.syncs
            );
        }
    }
}

fn rows(client: usize, batch: usize, size: usize, run: &str) -> Vec<serde_json::Value> {
    (0..size)
        .map(|i| {
            json!({
                "id": format!("{run}-c{client}-b{batch}-{i}"),
                "type": if i % 3 == 0 { "write" } else { "read" },
                "target": format!("src/module_{}.rs", i % 50),
                "summary": format!("client {client} batch {batch} operation {i}: looked at the module and noted what it does"),
                "tool": "Read",
            })
        })
        .collect()
}

/// Batches per client: the clients' shares of `batches_total`.
fn shares(batches_total: usize, clients: usize) -> Vec<usize> {
    let per_client = batches_total.div_ceil(clients);
    (0..clients)
        .map(|c| per_client.min(batches_total.saturating_sub(c * per_client)))
        .collect()
}

/// The batches of round `r` of `rounds` out of `n`.
fn round_range(n: usize, r: usize, rounds: usize) -> std::ops::Range<usize> {
    n * r / rounds..n * (r + 1) / rounds
}

pub async fn run(args: IngestArgs) -> anyhow::Result<IngestReport> {
    anyhow::ensure!(
        args.batch > 0 && args.clients > 0 && args.operations >= args.batch,
        "nothing to do"
    );
    anyhow::ensure!(
        args.rate.is_finite() && args.rate >= 0.0,
        "--rate is a number of requests per second, 0 or more"
    );
    anyhow::ensure!(args.rounds >= 1, "--rounds is 1 or more");
    let batches_total = args.operations / args.batch;
    let shares = shares(batches_total, args.clients);
    let run_id = uuid::Uuid::new_v4().simple().to_string()[..12].to_string();
    let store = Store::connect(&args.settings.neo4j).context("invalid Neo4j settings")?;
    graph::schema::apply(&store, args.settings.neo4j.embed_dimensions)
        .await
        .context("could not reach Neo4j; start it with scripts/neo4j-local start")?;

    // The baseline's sessions, straight in Neo4j.
    let base_project = format!("bench-base-{run_id}");
    let baseline_sessions: Vec<String> = (0..args.clients)
        .map(|c| format!("{base_project}-s{c}"))
        .collect();
    for s in &baseline_sessions {
        store
            .run(
                graph::statement(include_str!("../cypher/bench_baseline_session.cypher"))
                    .param("id", s.as_str())
                    .param("project", base_project.as_str()),
            )
            .await?;
    }

    // cairn, serving the HTTP capture path, and its sessions.
    let dir = tempfile_dir()?;
    let mut settings = args.settings.clone();
    settings.bind = "127.0.0.1:0".parse()?;
    settings.spool_dir = dir.join("spool");
    settings.insecure_no_auth = true;
    settings.rate_limit_per_sec = 0;
    let (port, stop, server) = serve_apart(settings).await?;
    let url = format!("http://127.0.0.1:{port}");
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(args.clients)
        .build()?;
    let project = format!("bench-cairn-{run_id}");
    let mut sessions = Vec::new();
    for c in 0..args.clients {
        let r: serde_json::Value = http
            .post(format!("{url}/v1/sessions"))
            .json(&json!({"project": project, "session_id": format!("{project}-s{c}")}))
            .send()
            .await?
            .json()
            .await?;
        sessions.push(r["session_id"].as_str().context("session id")?.to_string());
    }
    // Request bodies are encoded before the clock starts: the clients stand for agents in
    // other processes, so their JSON encoding is not cairn's time (nor its CPU).
    let bodies: Vec<Vec<bytes::Bytes>> = shares
        .iter()
        .enumerate()
        .map(|(c, &n)| {
            (0..n)
                .map(|b| {
                    let body =
                        json!({"operations": rows(c, b, args.batch, &format!("cairn-{run_id}"))});
                    bytes::Bytes::from(body.to_string())
                })
                .collect()
        })
        .collect();

    // The baseline's rows, built ahead too, so neither side pays for its client's encoding.
    let mut base_rows: Vec<std::collections::VecDeque<Vec<serde_json::Value>>> = shares
        .iter()
        .enumerate()
        .map(|(c, &n)| {
            (0..n)
                .map(|b| rows(c, b, args.batch, &format!("base-{run_id}")))
                .collect()
        })
        .collect();

    // Rounds alternate which side goes first (A B, B A, …), so drift in the server's state
    // (warm-up, checkpoints) weighs on both sides alike.
    eprintln!(
        "{} operations in batches of {}, {} clients, {} round(s): cairn (HTTP capture, until in Neo4j) and baseline (plain UNWIND, {} writers) …",
        batches_total * args.batch,
        args.batch,
        args.clients,
        args.rounds,
        args.clients
    );
    let (mut base_elapsed, mut cairn_elapsed, mut acked_after) =
        (Duration::ZERO, Duration::ZERO, Duration::ZERO);
    let (mut base_lat, mut ack) = (Vec::new(), Vec::new());
    let (mut disk_idle, mut disk_base, mut disk_cairn) = (Vec::new(), Vec::new(), Vec::new());
    let disk_probe = |on: bool| on.then(|| super::disk::Background::start(dir.clone()));
    let mut written = 0i64;
    let model = cairn::embed::Embedder::from_settings(
        &args.settings.embed,
        args.settings.neo4j.embed_dimensions,
    )
    .map_or(String::new(), |e| e.model().to_string());
    let (mut lag_max, mut lag_at_written, mut catch_up) = (0i64, 0i64, Duration::ZERO);
    let mut caught_up_ops = 0i64;
    for r in 0..args.rounds {
        for cairn_side in [r % 2 == 1, r % 2 == 0] {
            if cairn_side {
                if args.disk_syncs > 0 {
                    disk_idle.extend(super::disk::idle(dir.clone(), args.disk_syncs).await?);
                }
                let probe = disk_probe(args.disk_syncs > 0);
                let (lag_stop, lag_rx) = tokio::sync::watch::channel(false);
                let sampler = tokio::spawn(sample_lag(
                    store.clone(),
                    project.clone(),
                    model.clone(),
                    lag_rx,
                ));
                let mut tasks = Vec::new();
                let started = Instant::now();
                for (c, session) in sessions.iter().enumerate() {
                    let range = round_range(bodies[c].len(), r, args.rounds);
                    written += (range.len() * args.batch) as i64;
                    tasks.push(tokio::spawn(send(
                        http.clone(),
                        format!("{url}/v1/sessions/{session}/operations"),
                        bodies[c][range].to_vec(),
                        (args.rate > 0.0).then(|| {
                            let every = Duration::from_secs_f64(1.0 / args.rate);
                            (
                                started + every.mul_f64(c as f64 / args.clients as f64),
                                every,
                            )
                        }),
                    )));
                }
                for t in tasks {
                    ack.extend(t.await??);
                }
                acked_after += started.elapsed();
                super::wait_written(
                    &store,
                    &project,
                    written,
                    Duration::from_millis(20),
                    Duration::from_secs(600),
                )
                .await?
                .context("operations did not all reach Neo4j within 10 minutes")?;
                cairn_elapsed += started.elapsed();
                lag_stop.send_replace(true);
                let at_written = graph::turns::pending_in_project(&store, &project, &model).await?;
                lag_max = lag_max.max(sampler.await?).max(at_written);
                lag_at_written = lag_at_written.max(at_written);
                if let Some(p) = probe {
                    disk_cairn.extend(p.finish().await?);
                }
                // The index catches up before the baseline's turn, so it never shares the
                // machine with the baseline.
                let took = turn_index_caught_up(&store, &project, &model).await?;
                catch_up += took;
                caught_up_ops += at_written;
                eprintln!(
                    "turn index: {at_written} operations pending when all were in Neo4j; caught up in {:.1} s",
                    took.as_secs_f64()
                );
            } else {
                let probe = disk_probe(args.disk_syncs > 0);
                let mut tasks = Vec::new();
                let started = Instant::now();
                for (c, session) in baseline_sessions.iter().enumerate() {
                    let (store, session, project) =
                        (store.clone(), session.clone(), base_project.clone());
                    let range = round_range(shares[c], r, args.rounds);
                    let batches: Vec<_> = base_rows[c].drain(..range.len()).collect();
                    let batch = args.batch;
                    tasks.push(tokio::spawn(async move {
                        let mut lat = Vec::new();
                        for (b, rows) in range.zip(batches) {
                            let t = Instant::now();
                            super::baseline_insert(
                                &store,
                                &project,
                                &session,
                                rows,
                                (b * batch) as i64,
                            )
                            .await?;
                            lat.push(t.elapsed());
                        }
                        anyhow::Ok(lat)
                    }));
                }
                for t in tasks {
                    base_lat.extend(t.await??);
                }
                base_elapsed += started.elapsed();
                if let Some(p) = probe {
                    disk_base.extend(p.finish().await?);
                }
            }
        }
    }
    let base_ops = super::stored_operations(&store, &base_project).await?;
    let expected = written;
    let metrics = cairn::telemetry::metrics_handle().render();
    let stage = |s: &str| {
        super::histogram_mean_ms(
            &metrics,
            "cairn_capture_ack_seconds",
            &format!("{{stage=\"{s}\"}}"),
        )
    };
    stop.send_replace(true);
    server.await??;
    eprintln!(
        "cairn: acknowledged in {:.1} s, in Neo4j after {:.1} s; baseline: {:.1} s",
        acked_after.as_secs_f64(),
        cairn_elapsed.as_secs_f64(),
        base_elapsed.as_secs_f64()
    );

    // Clean up both projects.
    for p in [&base_project, &project] {
        graph::purge::project_now(&store, p).await?;
    }
    let _ = std::fs::remove_dir_all(&dir);

    let cairn_rate = expected as f64 / cairn_elapsed.as_secs_f64();
    let base_rate = base_ops as f64 / base_elapsed.as_secs_f64();
    Ok(IngestReport {
        operations: expected as usize,
        batch: args.batch,
        clients: args.clients,
        rate: args.rate,
        rounds: args.rounds,
        cairn_ops_per_sec: cairn_rate,
        cairn_ack_p50_ms: ms(quantile(&mut ack, 0.5)),
        cairn_ack_p99_ms: ms(quantile(&mut ack, 0.99)),
        cairn_ack_max_ms: ms(quantile(&mut ack, 1.0)),
        cairn_ack_validate_mean_ms: stage("validate"),
        cairn_ack_spool_mean_ms: stage("spool"),
        spool_sync_mean_ms: super::histogram_mean_ms(&metrics, "cairn_spool_sync_seconds", ""),
        spool_records_per_sync: super::histogram_mean(&metrics, "cairn_spool_group_records", ""),
        spool_syncs: super::histogram_count(&metrics, "cairn_spool_sync_seconds", ""),
        spool_syncs_over_5ms: super::histogram_over(
            &metrics,
            "cairn_spool_sync_seconds",
            "",
            "0.005",
        ),
        server_acks_over_10ms: super::histogram_over(
            &metrics,
            "cairn_http_request_duration_seconds",
            "method=\"POST\",route=\"/v1/sessions/:param0/operations\"",
            "0.01",
        ),
        disk_idle: SyncStats::of(disk_idle),
        disk_under_baseline: SyncStats::of(disk_base),
        disk_under_cairn: SyncStats::of(disk_cairn),
        baseline_ops_per_sec: base_rate,
        baseline_batch_p50_ms: ms(quantile(&mut base_lat, 0.5)),
        baseline_batch_p99_ms: ms(quantile(&mut base_lat, 0.99)),
        throughput_ratio: cairn_rate / base_rate,
        turn_index_model: model,
        turn_index_lag_max: lag_max,
        turn_index_lag_at_written: lag_at_written,
        turn_index_catch_up_s: catch_up.as_secs_f64(),
        turn_index_catch_up_ops_per_sec: if catch_up.is_zero() {
            0.0
        } else {
            caught_up_ops as f64 / catch_up.as_secs_f64()
        },
    })
}

/// One client: posts `bodies` in order and returns each acknowledgement's latency. With
/// `schedule` (first due time, interval) it sends open loop, each latency counted from when
/// the request was due, so a slow answer cannot hide the requests queued behind it.
pub(crate) async fn send(
    http: reqwest::Client,
    url: String,
    bodies: Vec<bytes::Bytes>,
    schedule: Option<(Instant, Duration)>,
) -> anyhow::Result<Vec<Duration>> {
    let mut lat = Vec::with_capacity(bodies.len());
    for (k, body) in bodies.into_iter().enumerate() {
        let t = match schedule {
            Some((first, every)) => {
                let due = first + every * k as u32;
                tokio::time::sleep_until(due.into()).await;
                due
            }
            None => Instant::now(),
        };
        let r = http
            .post(&url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body)
            .send()
            .await?;
        anyhow::ensure!(
            r.status().as_u16() == 202,
            "capture answered {}",
            r.status()
        );
        lat.push(t.elapsed());
    }
    Ok(lat)
}

/// Serves cairn on a runtime of its own, as `cairn serve` in another process would: the
/// clients' tasks never queue in front of the server's, nor its behind theirs. Resolves to
/// the port, the stop switch and the server's outcome.
async fn serve_apart(
    settings: Settings,
) -> anyhow::Result<(
    u16,
    tokio::sync::watch::Sender<bool>,
    tokio::sync::oneshot::Receiver<anyhow::Result<()>>,
)> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("cairn-bench-server")
        .build()?;
    let (started_tx, started) = tokio::sync::oneshot::channel();
    let (done_tx, done) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("cairn-bench-server".into())
        .spawn(move || {
            let outcome = runtime.block_on(async move {
                let app = match Application::build(settings).await {
                    Ok(app) => app,
                    Err(err) => {
                        let _ = started_tx.send(Err(err));
                        return Ok(());
                    }
                };
                let _ = started_tx.send(Ok((app.port(), app.stopper())));
                app.run_until_stopped().await
            });
            let _ = done_tx.send(outcome);
        })?;
    let (port, stop) = started.await.context("the bench's server thread ended")??;
    Ok((port, stop, done))
}

fn tempfile_dir() -> anyhow::Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!("cairn-bench-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// Prints the report as a table and as one JSON line.
pub fn print(r: &IngestReport) {
    println!(
        "ingest: {} operations, batches of {}, {} concurrent clients, {} round(s) alternating cairn and baseline",
        r.operations, r.batch, r.clients, r.rounds
    );
    if r.rate > 0.0 {
        println!(
            "open loop: {} requests/s per client ({:.0} operations/s offered); ack latency from each request's scheduled time",
            r.rate,
            r.rate * (r.clients * r.batch) as f64
        );
    }
    println!("{:<34}{:>14}{:>14}", "", "cairn", "baseline");
    println!(
        "{:<34}{:>14.0}{:>14.0}",
        "throughput (ops/s, until in Neo4j)", r.cairn_ops_per_sec, r.baseline_ops_per_sec
    );
    println!(
        "{:<34}{:>14.2}{:>14.2}",
        "p50 latency (ms; ack / batch)", r.cairn_ack_p50_ms, r.baseline_batch_p50_ms
    );
    println!(
        "{:<34}{:>14.2}{:>14.2}",
        "p99 latency (ms; ack / batch)", r.cairn_ack_p99_ms, r.baseline_batch_p99_ms
    );
    if let (Some(v), Some(s)) = (r.cairn_ack_validate_mean_ms, r.cairn_ack_spool_mean_ms) {
        println!("ack stages (server mean, ms): validate {v:.2}, durable append {s:.2}");
    }
    if let (Some(s), Some(g)) = (r.spool_sync_mean_ms, r.spool_records_per_sync) {
        println!("spool: write + fsync {s:.2} ms mean, {g:.1} records per fsync");
    }
    if let (Some(n), Some(slow), Some(acks)) = (
        r.spool_syncs,
        r.spool_syncs_over_5ms,
        r.server_acks_over_10ms,
    ) {
        println!(
            "slow: {slow:.0} of {n:.0} fsyncs over 5 ms; {acks:.0} acks over 10 ms measured by the server"
        );
    }
    r.disk_idle.print("idle");
    r.disk_under_baseline.print("while the baseline writes");
    r.disk_under_cairn.print("while cairn writes");
    if r.rate > 0.0 {
        println!(
            "throughput ratio cairn/baseline: {:.2} (open loop: cairn's throughput is capped by the offered rate)",
            r.throughput_ratio
        );
    } else {
        println!("throughput ratio cairn/baseline: {:.2}", r.throughput_ratio);
    }
    println!(
        "turn index ({}): at most {} operations pending while cairn captured, {} when all were in Neo4j; caught up in {:.1} s",
        if r.turn_index_model.is_empty() { "texts only" } else { &r.turn_index_model },
        r.turn_index_lag_max,
        r.turn_index_lag_at_written,
        r.turn_index_catch_up_s
    );
    println!("{}", serde_json::to_string(r).unwrap_or_default());
}
