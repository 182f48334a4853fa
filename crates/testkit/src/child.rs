//! A real `cairn serve` child process for benchmarks and tests that measure the server from
//! outside, or kill and restart it: started from a given `cairn` binary ([`cairn_exe`] finds
//! one) on its own port and spool, without rate limits and (unless told otherwise) without
//! API keys or vectors; its memory read from `/proc`. Vectors stay off because the turn
//! indexer works one queue for the whole database: a child embedding with its model would
//! re-embed the sessions of every other test or bench sharing that database.

use std::{
    path::{Path, PathBuf},
    process::Stdio,
    time::{Duration, Instant},
};

use anyhow::Context as _;

use cairn::config::Neo4jSettings;

/// How to start the child; kept so that it can be restarted identically.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    pub exe: PathBuf,
    pub port: u16,
    pub spool_dir: PathBuf,
    pub neo4j: Neo4jSettings,
    /// Serve without API keys.
    pub insecure: bool,
    /// Further `cairn serve` flags; `--embed off` unless replaced.
    pub args: Vec<String>,
    /// `RUST_LOG` of the child.
    pub log_level: String,
    /// Where the child's log goes (JSON lines); inherited stderr when `None`.
    pub log_file: Option<PathBuf>,
}

/// The `cairn` binary to run: `explicit` when given, else `cairn` in the directory of the
/// current executable (a target directory's `debug/` or `release/`, from `cairn-bench` there
/// or from a test binary in its `deps/`).
pub fn cairn_exe(explicit: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(path) = explicit {
        return Ok(path.to_path_buf());
    }
    let me = std::env::current_exe().context("cannot find the current executable")?;
    let cairn = beside(&me);
    anyhow::ensure!(
        cairn.is_file(),
        "no cairn binary at {}: build it (`cargo build --bin cairn`, with `--release` for a \
         release target) or name one with --cairn-bin",
        cairn.display()
    );
    Ok(cairn)
}

/// Where `cairn` is when `exe` was built into the same target directory (a test binary sits
/// one level down, in `deps/`).
fn beside(exe: &Path) -> PathBuf {
    let mut dir = exe.parent().unwrap_or(Path::new("."));
    if dir.ends_with("deps") {
        dir = dir.parent().unwrap_or(dir);
    }
    dir.join(format!("cairn{}", std::env::consts::EXE_SUFFIX))
}

impl ServeOptions {
    /// Options for the `cairn` binary `exe` on a free port.
    pub fn new(exe: &Path, spool_dir: &Path, neo4j: &Neo4jSettings) -> anyhow::Result<Self> {
        Ok(Self {
            exe: exe.to_path_buf(),
            port: std::net::TcpListener::bind("127.0.0.1:0")?
                .local_addr()?
                .port(),
            spool_dir: spool_dir.to_path_buf(),
            neo4j: neo4j.clone(),
            insecure: true,
            args: vec!["--embed".into(), "off".into()],
            log_level: "warn".into(),
            log_file: None,
        })
    }
}

pub struct ServeChild {
    options: ServeOptions,
    child: tokio::process::Child,
    pub base: String,
}

impl ServeChild {
    /// Starts `exe serve` with a spool of its own, without API keys, and waits until
    /// `/readyz` answers 200.
    pub async fn start(
        exe: &Path,
        neo4j: &Neo4jSettings,
        http: &reqwest::Client,
    ) -> anyhow::Result<Self> {
        let spool =
            std::env::temp_dir().join(format!("cairn-bench-{}", uuid::Uuid::new_v4().simple()));
        let me = Self::spawn(ServeOptions::new(exe, &spool, neo4j)?)?;
        me.wait_ready(http, Duration::from_secs(60)).await?;
        Ok(me)
    }

    /// Starts the child without waiting for it.
    pub fn spawn(options: ServeOptions) -> anyhow::Result<Self> {
        let child = command(&options)?;
        Ok(Self {
            base: format!("http://127.0.0.1:{}", options.port),
            options,
            child,
        })
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Waits until `/readyz` answers 200; returns how long that took.
    pub async fn wait_ready(
        &self,
        http: &reqwest::Client,
        limit: Duration,
    ) -> anyhow::Result<Duration> {
        let started = Instant::now();
        loop {
            if let Ok(r) = http.get(self.url("/readyz")).send().await {
                if r.status().is_success() {
                    return Ok(started.elapsed());
                }
            }
            anyhow::ensure!(
                started.elapsed() < limit,
                "cairn serve did not become ready within {limit:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// SIGKILL, and wait until the process is gone.
    pub async fn kill(&mut self) -> anyhow::Result<()> {
        self.child
            .start_kill()
            .context("could not kill cairn serve")?;
        self.child.wait().await?;
        Ok(())
    }

    /// SIGTERM (a graceful stop: the server drains its spool), and wait up to `limit` for
    /// the process to end; its exit status.
    pub async fn terminate(&mut self, limit: Duration) -> anyhow::Result<std::process::ExitStatus> {
        let pid = self.child.id().context("cairn serve has already ended")?;
        // SAFETY: kill(2) with a process id this child owns and a constant signal.
        let rc = unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
        anyhow::ensure!(rc == 0, "could not send SIGTERM to {pid}");
        tokio::time::timeout(limit, self.child.wait())
            .await
            .with_context(|| format!("cairn serve did not stop within {limit:?} of SIGTERM"))?
            .context("could not wait for cairn serve")
    }

    /// The child's process id (none once it has been waited for).
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Starts the same command again, on the same port and spool (after [`Self::kill`]).
    pub fn restart(&mut self) -> anyhow::Result<()> {
        self.child = command(&self.options)?;
        Ok(())
    }

    /// Stops the child and removes its spool.
    pub async fn stop(mut self) {
        let _ = self.kill().await;
        let _ = std::fs::remove_dir_all(&self.options.spool_dir);
    }

    /// Resident memory now (`VmRSS`), in MB.
    pub fn rss_mb(&self) -> Option<f64> {
        self.proc_status_kb("VmRSS:").map(|kb| kb as f64 / 1024.0)
    }

    /// Peak resident memory so far (`VmHWM`), in MB.
    pub fn peak_rss_mb(&self) -> Option<f64> {
        self.proc_status_kb("VmHWM:").map(|kb| kb as f64 / 1024.0)
    }

    fn proc_status_kb(&self, key: &str) -> Option<u64> {
        let pid = self.child.id()?;
        proc_status_kb(&format!("/proc/{pid}/status"), key)
    }
}

/// A `kB` figure (`VmRSS:`, `VmHWM:`…) of a `/proc/<pid>/status` file.
pub fn proc_status_kb(status_file: &str, key: &str) -> Option<u64> {
    let status = std::fs::read_to_string(status_file).ok()?;
    status
        .lines()
        .find(|l| l.starts_with(key))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

fn command(o: &ServeOptions) -> anyhow::Result<tokio::process::Child> {
    let mut cmd = tokio::process::Command::new(&o.exe);
    cmd.args(["serve", "--rate-limit-per-sec", "0", "--bind"])
        .arg(format!("127.0.0.1:{}", o.port))
        .arg("--spool-dir")
        .arg(&o.spool_dir)
        .args(&o.args)
        .env("CAIRN_NEO4J_URI", &o.neo4j.uri)
        .env("CAIRN_NEO4J_USER", &o.neo4j.user)
        .env("CAIRN_NEO4J_PASSWORD", &o.neo4j.password.0)
        .env("CAIRN_NEO4J_TIMEOUT_MS", o.neo4j.timeout_ms.to_string())
        .env(
            "CAIRN_NEO4J_MAX_CONNECTIONS",
            o.neo4j.max_connections.to_string(),
        )
        .env("RUST_LOG", &o.log_level)
        .stdout(Stdio::null())
        .kill_on_drop(true);
    if o.insecure {
        cmd.arg("--insecure-no-auth");
    }
    if let Some(path) = &o.log_file {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .with_context(|| format!("could not open {}", path.display()))?;
        cmd.env("CAIRN_LOG_FORMAT", "json").stderr(file);
    }
    cmd.spawn().context("could not start cairn serve")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cairn_is_found_beside_the_bench_or_a_test_binary() {
        let cairn = format!("cairn{}", std::env::consts::EXE_SUFFIX);
        assert_eq!(
            beside(Path::new("/t/release/cairn-bench")),
            Path::new("/t/release").join(&cairn)
        );
        assert_eq!(
            beside(Path::new("/t/debug/deps/api-0123abcd")),
            Path::new("/t/debug").join(&cairn)
        );
        let named = Path::new("/opt/cairn/bin/cairn");
        assert_eq!(cairn_exe(Some(named)).unwrap(), named);
    }
}
