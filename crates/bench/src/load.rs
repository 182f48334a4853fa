//! `cairn-bench load`: many concurrent clients on loopback against a `cairn serve` child
//! process, mixing capture (70 %), context (20 %) and search (10 %) for a fixed time. Reports
//! throughput, p50/p99 per route, errors, and the server's peak RSS (VmHWM). The baseline is
//! `GET /healthz` under the same concurrency, measured first in the same run: the cost of the
//! HTTP stack alone.

use std::{
    collections::HashMap,
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::Context as _;
use clap::Args;
use serde_json::json;
use tokio::sync::Mutex;

use super::{ms, quantile};
use cairn::config::Neo4jSettings;
use cairn_testkit::child::ServeChild;

#[derive(Args, Debug, Clone)]
pub struct LoadArgs {
    /// Concurrent clients.
    #[arg(long, default_value_t = 200)]
    pub clients: usize,
    /// Seconds of mixed load.
    #[arg(long, default_value_t = 60)]
    pub seconds: u64,
    /// Seconds of the `/healthz` baseline.
    #[arg(long, default_value_t = 10)]
    pub baseline_seconds: u64,
    /// Operations per capture request.
    #[arg(long, default_value_t = 20)]
    pub batch: usize,
    #[command(flatten)]
    pub neo4j: Neo4jSettings,
    #[command(flatten)]
    pub cairn: crate::CairnBin,
}

type Samples = Arc<Mutex<HashMap<&'static str, (Vec<Duration>, u64)>>>;

async fn record(samples: &Samples, route: &'static str, took: Duration, ok: bool) {
    let mut map = samples.lock().await;
    let entry = map.entry(route).or_default();
    entry.0.push(took);
    if !ok {
        entry.1 += 1;
    }
}

pub async fn run(args: LoadArgs) -> anyhow::Result<()> {
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(args.clients)
        .timeout(Duration::from_secs(30))
        .build()?;
    let server = ServeChild::start(&args.cairn.path()?, &args.neo4j, &http).await?;
    let base = server.base.clone();
    let project = format!(
        "bench-load-{}",
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    );
    let mut sessions = Vec::new();
    for c in 0..args.clients {
        let r: serde_json::Value = http
            .post(format!("{base}/v1/sessions"))
            .json(&json!({"project": project, "session_id": format!("{project}-s{c}"), "task": format!("load client {c} works on module {}", c % 17)}))
            .send()
            .await?
            .json()
            .await?;
        sessions.push(r["session_id"].as_str().context("session id")?.to_string());
    }

    // Baseline: the HTTP stack alone.
    let baseline: Samples = Arc::default();
    drive(
        &http,
        &base,
        &project,
        &sessions,
        args.baseline_seconds,
        args.batch,
        &baseline,
        true,
    )
    .await;
    // The mix.
    let mixed: Samples = Arc::default();
    let started = Instant::now();
    drive(
        &http,
        &base,
        &project,
        &sessions,
        args.seconds,
        args.batch,
        &mixed,
        false,
    )
    .await;
    let elapsed = started.elapsed();
    let peak = server.peak_rss_mb();
    let server_metrics = http
        .get(server.url("/metrics"))
        .send()
        .await?
        .text()
        .await?;

    let mut total = 0u64;
    let mut errors = 0u64;
    println!(
        "load: {} clients, {} s, capture 70 % / context 20 % / search 10 %",
        args.clients, args.seconds
    );
    println!(
        "{:<28}{:>10}{:>10}{:>12}{:>12}",
        "route", "requests", "errors", "p50 ms", "p99 ms"
    );
    for (name, samples) in [("healthz (baseline)", &baseline), ("", &mixed)] {
        let mut map = samples.lock().await;
        let mut keys: Vec<_> = map.keys().copied().collect();
        keys.sort_unstable();
        for k in keys {
            let (lat, err) = map.get_mut(k).expect("key");
            let label = if name.is_empty() {
                k.to_string()
            } else {
                name.to_string()
            };
            println!(
                "{:<28}{:>10}{:>10}{:>12.2}{:>12.2}",
                label,
                lat.len(),
                err,
                ms(quantile(lat, 0.5)),
                ms(quantile(lat, 0.99))
            );
            if name.is_empty() {
                total += lat.len() as u64;
                errors += *err;
            }
        }
    }
    println!(
        "mixed throughput: {:.0} requests/s, errors: {errors}, cairn peak RSS: {} MB",
        total as f64 / elapsed.as_secs_f64(),
        peak.map_or("unknown".into(), |mb| format!("{mb:.1}"))
    );
    report_writer(&server_metrics);
    let _ = http
        .delete(format!("{base}/v1/projects/{project}"))
        .send()
        .await;
    server.stop().await;
    Ok(())
}

/// What the server's own metrics say about the run: how the capture writer shared Neo4j with
/// the reads (its transactions, their size and commit time) and what each query cost.
fn report_writer(metrics: &str) {
    use super::{histogram_count, histogram_mean, histogram_mean_ms};
    let fmt = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}"));
    println!(
        "server: {} writer transactions, {} operations each, commit {} ms; {} neo4j queries, {} ms each",
        fmt(histogram_count(metrics, "cairn_writer_batch_operations", "")),
        fmt(histogram_mean(metrics, "cairn_writer_batch_operations", "")),
        fmt(histogram_mean_ms(metrics, "cairn_writer_commit_seconds", "")),
        fmt(histogram_count(metrics, "cairn_neo4j_query_seconds", "")),
        fmt(histogram_mean_ms(metrics, "cairn_neo4j_query_seconds", "")),
    );
    let counter = |name: &str| super::metric(metrics, name).unwrap_or(0.0);
    let acked = counter("cairn_capture_operations_total");
    let written = counter("cairn_writer_operations_total");
    println!(
        "capture: {acked:.0} operations acknowledged, {written:.0} in Neo4j at the end ({:.0} still spooled)",
        (acked - written).max(0.0)
    );
}

#[allow(clippy::too_many_arguments)]
async fn drive(
    http: &reqwest::Client,
    base: &str,
    project: &str,
    sessions: &[String],
    seconds: u64,
    batch: usize,
    samples: &Samples,
    baseline: bool,
) {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let mut tasks = Vec::new();
    for (c, session) in sessions.iter().enumerate() {
        let (http, base, project, session, samples) = (
            http.clone(),
            base.to_string(),
            project.to_string(),
            session.clone(),
            samples.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let mut i: u64 = 0;
            while Instant::now() < deadline {
                i += 1;
                let roll = (i * 7 + c as u64 * 13) % 10;
                let t = Instant::now();
                let (route, result) = if baseline {
                    ("healthz", http.get(format!("{base}/healthz")).send().await)
                } else if roll < 7 {
                    let ops: Vec<_> = (0..batch)
                        .map(|k| json!({"type": if k % 4 == 0 { "write" } else { "read" }, "summary": format!("step {i}.{k} on module {}", c % 17), "files_read": [format!("src/module_{}.rs", k % 9)]}))
                        .collect();
                    ("capture", http.post(format!("{base}/v1/sessions/{session}/operations")).json(&json!({"operations": ops})).send().await)
                } else if roll < 9 {
                    ("context", http.post(format!("{base}/v1/context")).json(&json!({"project": project, "session_id": session, "budget_tokens": 2000})).send().await)
                } else {
                    ("search", http.post(format!("{base}/v1/sessions/search")).json(&json!({"project": project, "query": format!("module {}", c % 17), "limit": 5})).send().await)
                };
                let ok = match result {
                    Ok(r) => {
                        let good = r.status().is_success();
                        let _ = r.bytes().await;
                        good
                    }
                    Err(_) => false,
                };
                record(&samples, route, t.elapsed(), ok).await;
            }
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
}
