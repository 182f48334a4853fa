//! `cairn-bench growth`: grows a project through a `cairn serve` child in steps (10k → 100k →
//! 1M operations by default) and reports, at each step, ingest throughput next to a plain
//! `UNWIND` baseline writing as many rows in the same run, recall latency (reconstruction of a
//! full session, context with an 8k budget, the window) and the server's memory.

use std::{sync::Arc, time::Duration, time::Instant};

use anyhow::Context as _;
use clap::Args;
use serde_json::{json, Value};
use tokio::sync::Mutex;

use super::{ms, quantile};
use cairn::config::Neo4jSettings;
use cairn::graph::{self, statement, Store};
use cairn_testkit::child::ServeChild;

#[derive(Args, Debug, Clone)]
pub struct GrowthArgs {
    /// Total operations after each step.
    #[arg(long, value_delimiter = ',', default_values_t = [10_000usize, 100_000, 1_000_000])]
    pub steps: Vec<usize>,
    /// Operations per request.
    #[arg(long, default_value_t = 100)]
    pub batch: usize,
    /// Concurrent clients (and baseline writers).
    #[arg(long, default_value_t = 16)]
    pub clients: usize,
    /// Operations a client sends to one session before starting the next.
    #[arg(long, default_value_t = 1_000)]
    pub session_ops: usize,
    /// Timed recall requests per route at each step.
    #[arg(long, default_value_t = 50)]
    pub iterations: usize,
    #[command(flatten)]
    pub neo4j: Neo4jSettings,
    #[command(flatten)]
    pub cairn: crate::CairnBin,
}

#[derive(Debug, serde::Serialize)]
pub struct Step {
    pub operations: usize,
    pub cairn_ops_per_sec: f64,
    pub baseline_ops_per_sec: f64,
    pub throughput_ratio: f64,
    pub ack_p99_ms: f64,
    pub reconstruction_p95_ms: f64,
    pub context_p95_ms: f64,
    pub window_p95_ms: f64,
    pub rss_mb: Option<f64>,
    pub peak_rss_mb: Option<f64>,
}

/// One request's operations: reads, writes and conversation turns.
fn ops(client: usize, batch: u64, size: usize, run: &str) -> Vec<Value> {
    (0..size)
        .map(|i| {
            let id = format!("{run}-c{client}-b{batch}-{i}");
            match i % 10 {
                0 => json!({"id": id, "type": "message", "role": if batch.is_multiple_of(2) { "user" } else { "assistant" },
                            "content": format!("turn {batch}.{i}: please look at module {} and explain the failure", i % 50)}),
                1 | 2 => json!({"id": id, "type": "write", "summary": format!("rewrote part {i} of module {}", i % 50),
                                "files_modified": [format!("src/module_{}.rs", i % 50)]}),
                _ => json!({"id": id, "type": "read", "summary": format!("read module {} to see what it does", i % 50),
                            "files_read": [format!("src/module_{}.rs", i % 50)]}),
            }
        })
        .collect()
}

pub async fn run(args: GrowthArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.batch > 0 && args.clients > 0 && args.session_ops >= args.batch,
        "--batch and --clients must be positive and --session-ops at least --batch"
    );
    anyhow::ensure!(
        args.steps.windows(2).all(|w| w[0] < w[1]),
        "--steps must increase"
    );
    let store = Store::connect(&args.neo4j).context("invalid Neo4j settings")?;
    graph::schema::apply(&store, args.neo4j.embed_dimensions)
        .await
        .context("could not reach Neo4j; start it with scripts/neo4j-local start")?;
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(args.clients)
        .timeout(Duration::from_secs(120))
        .build()?;
    let server = ServeChild::start(&args.cairn.path()?, &args.neo4j, &http).await?;
    let run_id = uuid::Uuid::new_v4().simple().to_string()[..12].to_string();
    let project = format!("bench-growth-{run_id}");
    let base_project = format!("bench-growth-base-{run_id}");
    let outcome = grow(
        &args,
        &store,
        &http,
        &server,
        &project,
        &base_project,
        &run_id,
    )
    .await;
    eprintln!("cleaning up …");
    server.stop().await;
    for p in [&project, &base_project] {
        graph::purge::project_now(&store, p).await?;
    }
    let steps = outcome?;
    println!(
        "growth: batches of {}, {} clients, sessions of {} operations",
        args.batch, args.clients, args.session_ops
    );
    println!(
        "{:>10}{:>11}{:>11}{:>7}{:>10}{:>11}{:>10}{:>10}{:>9}{:>9}",
        "ops",
        "cairn/s",
        "base/s",
        "ratio",
        "ack p99",
        "recon p95",
        "ctx p95",
        "win p95",
        "RSS MB",
        "peak MB"
    );
    for s in &steps {
        println!(
            "{:>10}{:>11.0}{:>11.0}{:>7.2}{:>10.1}{:>11.1}{:>10.1}{:>10.1}{:>9.1}{:>9.1}",
            s.operations,
            s.cairn_ops_per_sec,
            s.baseline_ops_per_sec,
            s.throughput_ratio,
            s.ack_p99_ms,
            s.reconstruction_p95_ms,
            s.context_p95_ms,
            s.window_p95_ms,
            s.rss_mb.unwrap_or(f64::NAN),
            s.peak_rss_mb.unwrap_or(f64::NAN),
        );
    }
    println!("{}", serde_json::to_string(&steps)?);
    Ok(())
}

/// Per client: batches sent so far and its current session.
struct ClientState {
    batches: u64,
    session: Option<String>,
}

#[allow(clippy::too_many_arguments)]
async fn grow(
    args: &GrowthArgs,
    store: &Store,
    http: &reqwest::Client,
    server: &ServeChild,
    project: &str,
    base_project: &str,
    run_id: &str,
) -> anyhow::Result<Vec<Step>> {
    let baseline_sessions: Vec<String> = (0..args.clients)
        .map(|c| format!("{base_project}-s{c}"))
        .collect();
    for s in &baseline_sessions {
        store
            .run(
                statement("MERGE (x:Session {id: $id}) SET x.project = $project")
                    .param("id", s.as_str())
                    .param("project", base_project),
            )
            .await?;
    }
    let states: Vec<Arc<Mutex<ClientState>>> = (0..args.clients)
        .map(|_| {
            Arc::new(Mutex::new(ClientState {
                batches: 0,
                session: None,
            }))
        })
        .collect();
    let mut base_batches = vec![0u64; args.clients];
    let mut done = 0usize;
    let mut steps = Vec::new();
    for &target in &args.steps {
        let batches = (target - done) / args.batch;
        let per_client: Vec<usize> = (0..args.clients)
            .map(|c| batches / args.clients + usize::from(c < batches % args.clients))
            .collect();
        let added: usize = per_client.iter().sum::<usize>() * args.batch;

        eprintln!("step {target}: baseline, {added} rows with plain UNWIND …");
        let started = Instant::now();
        let mut tasks = Vec::new();
        for (c, &n) in per_client.iter().enumerate() {
            let (store, session, first) =
                (store.clone(), baseline_sessions[c].clone(), base_batches[c]);
            let (batch, base_project, run_id) =
                (args.batch, base_project.to_string(), run_id.to_string());
            tasks.push(tokio::spawn(async move {
                for b in first..first + n as u64 {
                    let rows = ops(c, b, batch, &format!("base-{run_id}"));
                    let seq = b as i64 * batch as i64;
                    super::baseline_insert(&store, &base_project, &session, rows, seq).await?;
                }
                anyhow::Ok(())
            }));
        }
        for t in tasks {
            t.await??;
        }
        let base_rate = added as f64 / started.elapsed().as_secs_f64();
        for (c, n) in per_client.iter().enumerate() {
            base_batches[c] += *n as u64;
        }

        eprintln!("step {target}: cairn, {added} operations through the API …");
        let latencies = Arc::new(Mutex::new(Vec::new()));
        let started = Instant::now();
        let mut tasks = Vec::new();
        for (c, &n) in per_client.iter().enumerate() {
            let (http, base, state, lat) = (
                http.clone(),
                server.base.clone(),
                states[c].clone(),
                latencies.clone(),
            );
            let (batch, per_session, project, run_id) = (
                args.batch,
                (args.session_ops / args.batch) as u64,
                project.to_string(),
                run_id.to_string(),
            );
            tasks.push(tokio::spawn(async move {
                let mut st = state.lock().await;
                for _ in 0..n {
                    if st.batches.is_multiple_of(per_session) || st.session.is_none() {
                        let id = format!("{project}-c{c}-s{}", st.batches / per_session);
                        let r = http
                            .post(format!("{base}/v1/sessions"))
                            .json(&json!({"project": project, "session_id": id, "task": format!("client {c} grows module {}", st.batches % 50)}))
                            .send()
                            .await?;
                        anyhow::ensure!(r.status().is_success(), "session start answered {}", r.status());
                        st.session = Some(id);
                    }
                    let session = st.session.clone().expect("a session was started");
                    let body = json!({"operations": ops(c, st.batches, batch, &format!("cairn-{run_id}"))});
                    let t = Instant::now();
                    let r = http
                        .post(format!("{base}/v1/sessions/{session}/operations"))
                        .json(&body)
                        .send()
                        .await?;
                    anyhow::ensure!(r.status().as_u16() == 202, "capture answered {}", r.status());
                    lat.lock().await.push(t.elapsed());
                    st.batches += 1;
                }
                anyhow::Ok(())
            }));
        }
        for t in tasks {
            t.await??;
        }
        let expected = (done + added) as i64;
        super::wait_written(
            store,
            project,
            expected,
            Duration::from_millis(50),
            Duration::from_secs(3_600),
        )
        .await?
        .context("operations did not reach Neo4j within an hour")?;
        let cairn_rate = added as f64 / started.elapsed().as_secs_f64();
        done += added;
        let mut ack = std::mem::take(&mut *latencies.lock().await);

        // Recall on the newest session client 0 has completed (or its current one).
        let full = {
            let st = states[0].lock().await;
            let per_session = (args.session_ops / args.batch) as u64;
            format!("{project}-c0-s{}", (st.batches / per_session).max(1) - 1)
        };
        eprintln!("step {target}: recall on {full} …");
        let mut recon = timed(args.iterations, || {
            http.get(server.url(&format!("/v1/sessions/{full}/reconstruction")))
                .send()
        })
        .await?;
        let mut context = timed(args.iterations, || {
            http.post(server.url("/v1/context"))
                .json(&json!({"project": project, "session_id": full, "budget_tokens": 8000}))
                .send()
        })
        .await?;
        let mut window = timed(args.iterations, || {
            http.get(server.url(&format!("/v1/sessions/{full}/window?token_limit=2000")))
                .send()
        })
        .await?;
        steps.push(Step {
            operations: done,
            cairn_ops_per_sec: cairn_rate,
            baseline_ops_per_sec: base_rate,
            throughput_ratio: cairn_rate / base_rate,
            ack_p99_ms: ms(quantile(&mut ack, 0.99)),
            reconstruction_p95_ms: ms(quantile(&mut recon, 0.95)),
            context_p95_ms: ms(quantile(&mut context, 0.95)),
            window_p95_ms: ms(quantile(&mut window, 0.95)),
            rss_mb: server.rss_mb(),
            peak_rss_mb: server.peak_rss_mb(),
        });
        eprintln!(
            "{}",
            serde_json::to_string(steps.last().expect("just pushed"))?
        );
    }
    Ok(steps)
}

/// Latencies of `n` requests (after 5 untimed ones); any answer but 200 is an error.
async fn timed<F, Fut>(n: usize, mut send: F) -> anyhow::Result<Vec<Duration>>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = reqwest::Result<reqwest::Response>>,
{
    let mut out = Vec::with_capacity(n);
    for i in 0..n + 5 {
        let t = Instant::now();
        let r = send().await?;
        let status = r.status();
        let body = r.bytes().await?;
        anyhow::ensure!(
            status.is_success(),
            "recall answered {status}: {}",
            String::from_utf8_lossy(&body)
        );
        if i >= 5 {
            out.push(t.elapsed());
        }
    }
    Ok(out)
}
