//! cairn's benchmarks, run with `cairn-bench …` against the real Neo4j. Each reports its
//! figures next to a baseline measured in the same run, never against a fixed threshold.
//! They drive cairn through its library (an `Application` in this process) or a `cairn
//! serve` child ([`CairnBin`]); the fault proxy, the LLM stub and the child come from
//! `cairn-testkit`, the statements only benchmarks run from `crates/bench/cypher/`.
//!
//! - [`cli`] — the `cairn-bench` command line, a subcommand per benchmark.
//! - [`ingest`], [`growth`], [`load`] — capture throughput and latency, at growing size,
//!   under mixed load; [`disk`] times the spool's disk alone.
//! - [`seeded`] — the project the read benchmarks measure (seeded straight into Neo4j), and
//!   cairn serving it; [`ui`] — every page of the web UI over it.
//! - [`recall`], [`quality`], [`search`] — recall latency, evidence recall on LoCoMo (or
//!   another data set [`dataset`] reads), search
//!   quality on labelled synthetic histories; [`cpu`] — the CPU time a request costs cairn
//!   and Neo4j, beside the recall latency.
//! - [`hooks`] — the Claude Code command hook, a process per event.
//! - [`embed`] — the embedded embedding model's throughput and memory.
//! - [`faults`] — capture through faults, each ending with an exactly-once check.
//! - [`replicas`] — capture through 1 vs several `cairn serve` replicas, and one session
//!   written by every client through them.
// The benchmarks' futures nest the whole application (and the driver's routing layer) deeply.
#![recursion_limit = "256"]

pub mod cli;
pub mod cpu;
pub mod dataset;
pub mod disk;
pub mod embed;
pub mod faults;
pub mod growth;
pub mod hooks;
pub mod ingest;
pub mod load;
pub mod plain_bm25;
pub mod quality;
pub mod recall;
pub mod replicas;
pub mod search;
pub mod seeded;
pub mod ui;

use std::{path::PathBuf, time::Duration};

/// The `cairn` binary a benchmark starts as its server (and, for `hooks`, as the hook).
#[derive(clap::Args, Clone, Debug, Default)]
pub struct CairnBin {
    /// The cairn binary to run (default: `cairn` beside this executable).
    #[arg(long = "cairn-bin", env = "CAIRN_BIN")]
    pub cairn_bin: Option<PathBuf>,
}

impl CairnBin {
    pub fn path(&self) -> anyhow::Result<PathBuf> {
        cairn_testkit::child::cairn_exe(self.cairn_bin.as_deref())
    }
}

/// Operations stored for `project`.
pub async fn stored_operations(store: &cairn::graph::Store, project: &str) -> anyhow::Result<i64> {
    project_count(
        store,
        include_str!("../cypher/bench_count_operations.cypher"),
        project,
    )
    .await
}

/// Operations of `project` written so far, from the sessions' counters: what a bench polls
/// while waiting for the writer (counting the operations themselves would load Neo4j with
/// work the baseline never does). Confirm the end with [`stored_operations`].
pub async fn written_operations(store: &cairn::graph::Store, project: &str) -> anyhow::Result<i64> {
    project_count(
        store,
        include_str!("../cypher/bench_written_operations.cypher"),
        project,
    )
    .await
}

/// The `n` a counting statement returns for `project`.
async fn project_count(
    store: &cairn::graph::Store,
    cypher: &'static str,
    project: &str,
) -> anyhow::Result<i64> {
    #[derive(serde::Deserialize)]
    struct N {
        n: i64,
    }
    Ok(store
        .fetch_one::<N>(cairn::graph::statement(cypher).param("project", project))
        .await?
        .map_or(0, |r| r.n))
}

/// Waits until the sessions of `project` count `expected` operations (polling every `every`,
/// at most `limit`), then confirms it by counting the operations. Returns the time the
/// counters took to reach `expected`, or `None` past `limit`.
pub async fn wait_written(
    store: &cairn::graph::Store,
    project: &str,
    expected: i64,
    every: Duration,
    limit: Duration,
) -> anyhow::Result<Option<Duration>> {
    let started = std::time::Instant::now();
    while written_operations(store, project).await? < expected {
        if started.elapsed() > limit {
            return Ok(None);
        }
        tokio::time::sleep(every).await;
    }
    let elapsed = started.elapsed();
    // The counters and the operations commit together; give the count a moment to see the
    // last commits' index entries, then insist.
    let confirm_by = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let stored = stored_operations(store, project).await?;
        if stored == expected {
            return Ok(Some(elapsed));
        }
        anyhow::ensure!(
            stored < expected && std::time::Instant::now() < confirm_by,
            "the sessions count {expected} operations but {stored} are stored"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The ingest baseline: `rows` written straight to Neo4j with one plain `UNWIND`, numbered
/// from `first_seq`, no service in between.
pub async fn baseline_insert(
    store: &cairn::graph::Store,
    project: &str,
    session_id: &str,
    mut rows: Vec<serde_json::Value>,
    first_seq: i64,
) -> anyhow::Result<()> {
    for (i, row) in rows.iter_mut().enumerate() {
        row["seq"] = serde_json::json!(first_seq + i as i64);
        row["at"] = serde_json::json!(cairn::graph::now_ms());
    }
    store
        .run(
            cairn::graph::statement(include_str!("../cypher/bench_baseline_insert.cypher"))
                .param("session_id", session_id)
                .param("project", project)
                .param("rows", cairn::graph::param(&rows)?),
        )
        .await?;
    Ok(())
}

/// The `q`-quantile (0..=1) of `samples` (sorted in place), nearest-rank.
pub fn quantile(samples: &mut [Duration], q: f64) -> Duration {
    if samples.is_empty() {
        return Duration::ZERO;
    }
    samples.sort_unstable();
    let rank = ((q * samples.len() as f64).ceil() as usize).clamp(1, samples.len());
    samples[rank - 1]
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Mean of a histogram series in Prometheus text (`name{labels}` as rendered, e.g.
/// `cairn_capture_ack_seconds{stage="spool"}`), from its `_sum` and `_count`.
pub fn histogram_mean(text: &str, name: &str, labels: &str) -> Option<f64> {
    let count = histogram_count(text, name, labels)?;
    (count > 0.0).then(|| histogram_value(text, name, "sum", labels).unwrap_or(0.0) / count)
}

/// How many values a histogram series of Prometheus text holds.
pub fn histogram_count(text: &str, name: &str, labels: &str) -> Option<f64> {
    histogram_value(text, name, "count", labels)
}

/// How many values of a histogram series exceed the bucket bound `le` (as Prometheus prints
/// it, e.g. `"0.01"`); `labels` are the series' own, without braces.
pub fn histogram_over(text: &str, name: &str, labels: &str, le: &str) -> Option<f64> {
    let (series, bucket) = if labels.is_empty() {
        (String::new(), format!("{{le=\"{le}\"}}"))
    } else {
        (format!("{{{labels}}}"), format!("{{{labels},le=\"{le}\"}}"))
    };
    let within = histogram_value(text, name, "bucket", &bucket)?;
    Some(histogram_count(text, name, &series)? - within)
}

fn histogram_value(text: &str, name: &str, suffix: &str, labels: &str) -> Option<f64> {
    metric(text, &format!("{name}_{suffix}{labels}"))
}

/// The value of the series `key` (name and labels, as printed) in Prometheus text.
pub fn metric(text: &str, key: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse::<f64>().ok())
}

/// [`histogram_mean`] of a series in seconds, in milliseconds.
pub fn histogram_mean_ms(text: &str, name: &str, labels: &str) -> Option<f64> {
    histogram_mean(text, name, labels).map(|s| s * 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_quantiles() {
        let mut s: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        assert_eq!(quantile(&mut s, 0.5), Duration::from_millis(50));
        assert_eq!(quantile(&mut s, 0.99), Duration::from_millis(99));
        assert_eq!(quantile(&mut s, 1.0), Duration::from_millis(100));
        assert_eq!(quantile(&mut [], 0.5), Duration::ZERO);
    }

    #[test]
    fn histogram_means_from_prometheus_text() {
        let text = "x_sum{stage=\"a\"} 0.5\nx_count{stage=\"a\"} 4\nx_count{stage=\"b\"} 0\n";
        assert_eq!(histogram_mean_ms(text, "x", "{stage=\"a\"}"), Some(125.0));
        assert_eq!(histogram_mean_ms(text, "x", "{stage=\"b\"}"), None);
        assert_eq!(histogram_mean_ms(text, "y", ""), None);
        assert_eq!(histogram_count(text, "x", "{stage=\"a\"}"), Some(4.0));
        let buckets = "y_bucket{le=\"0.01\"} 7\ny_count 9\nz_bucket{r=\"a\",le=\"0.01\"} 2\nz_count{r=\"a\"} 2\n";
        assert_eq!(histogram_over(buckets, "y", "", "0.01"), Some(2.0));
        assert_eq!(histogram_over(buckets, "z", "r=\"a\"", "0.01"), Some(0.0));
        assert_eq!(histogram_over(buckets, "y", "", "0.5"), None);
    }
}
