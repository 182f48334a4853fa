//! A real `cairn serve` child process for benchmarks that measure the server from outside:
//! its own port and spool, no keys, no rate limit, and its memory read from `/proc`.

use std::{path::PathBuf, time::Duration, time::Instant};

use anyhow::Context as _;

use crate::config::Neo4jSettings;

pub struct ServeChild {
    child: tokio::process::Child,
    pid: u32,
    pub base: String,
    spool: PathBuf,
}

impl ServeChild {
    /// Starts `cairn serve` from the current executable and waits until `/readyz` answers 200.
    pub async fn start(neo4j: &Neo4jSettings, http: &reqwest::Client) -> anyhow::Result<Self> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let spool =
            std::env::temp_dir().join(format!("cairn-bench-{}", uuid::Uuid::new_v4().simple()));
        let exe = std::env::current_exe().context("cannot find the cairn binary")?;
        let child = tokio::process::Command::new(exe)
            .args(["serve", "--insecure-no-auth", "--rate-limit-per-sec", "0"])
            .arg("--bind")
            .arg(format!("127.0.0.1:{port}"))
            .arg("--spool-dir")
            .arg(&spool)
            .env("CAIRN_NEO4J_URI", &neo4j.uri)
            .env("CAIRN_NEO4J_TIMEOUT_MS", neo4j.timeout_ms.to_string())
            .env("RUST_LOG", "warn")
            .kill_on_drop(true)
            .spawn()
            .context("could not start cairn serve")?;
        let pid = child.id().context("the child has no pid")?;
        let me = Self {
            child,
            pid,
            base: format!("http://127.0.0.1:{port}"),
            spool,
        };
        let started = Instant::now();
        loop {
            if let Ok(r) = http.get(me.url("/readyz")).send().await {
                if r.status().is_success() {
                    return Ok(me);
                }
            }
            anyhow::ensure!(
                started.elapsed() < Duration::from_secs(60),
                "cairn serve did not become ready within 60 s"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Resident memory now (`VmRSS`), in MB.
    pub fn rss_mb(&self) -> Option<f64> {
        proc_status_kb(self.pid, "VmRSS:").map(|kb| kb as f64 / 1024.0)
    }

    /// Peak resident memory so far (`VmHWM`), in MB.
    pub fn peak_rss_mb(&self) -> Option<f64> {
        proc_status_kb(self.pid, "VmHWM:").map(|kb| kb as f64 / 1024.0)
    }

    /// Stops the child and removes its spool.
    pub async fn stop(mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
        let _ = std::fs::remove_dir_all(&self.spool);
    }
}

fn proc_status_kb(pid: u32, key: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| l.starts_with(key))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}
