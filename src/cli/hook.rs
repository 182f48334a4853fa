//! `cairn hook claude-code` (a Claude Code command hook: event JSON on stdin) and
//! `cairn hook flush`.
//!
//! The hook never blocks the agent: it always exits 0, within a deadline (`--deadline-ms`,
//! 60 ms by default). It posts the event to `POST /v1/hooks/claude-code`; when cairn is down,
//! slow or busy, the event goes to a local disk spool instead (one file per event, named by
//! arrival time, written then renamed so a crash never leaves half an event). The next
//! invocation (within its deadline) or `cairn hook flush` sends spooled events first, in
//! order, and deletes each once cairn has acknowledged it. Every event carries its
//! idempotency key (`tool_use_id`, else a `cairn_event_id` given here when it is first seen),
//! so an event sent twice — acknowledged but not yet deleted when the hook was killed — is
//! stored once: exactly once, in order.
//!
//! Secrets are redacted and large strings shrunk before an event touches the disk.

use std::{
    fs::{self, File},
    io::{Read, Write},
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use anyhow::Context;
use clap::{Args, Subcommand};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::client::ClientSettings;
use crate::claude::{self, events, redact};

/// Longest string kept in a spooled event; tool responses are summarised server-side anyway.
const SPOOL_STRING_CHARS: usize = 4_000;
/// Largest event read from stdin.
const MAX_STDIN_BYTES: u64 = 32 * 1024 * 1024;
const SUFFIX: &str = ".hook.json";

#[derive(Args, Debug)]
pub struct HookArgs {
    #[command(subcommand)]
    pub command: HookCommand,
    #[command(flatten)]
    pub client: ClientSettings,
    /// Directory of the hook's local spool (events waiting for cairn).
    #[arg(long, env = "CAIRN_SPOOL_DIR", default_value_os_t = default_spool_dir())]
    pub spool_dir: PathBuf,
}

#[derive(Subcommand, Debug)]
pub enum HookCommand {
    /// Claude Code command hook: one event on stdin; exits 0 within the deadline whatever
    /// happens, spooling the event when cairn cannot take it now.
    ClaudeCode {
        /// Time budget of the whole invocation, in milliseconds.
        #[arg(long, env = "CAIRN_HOOK_DEADLINE_MS", default_value_t = 60)]
        deadline_ms: u64,
        /// Token budget of the SessionStart context.
        #[arg(long, env = "CAIRN_HOOK_CONTEXT_TOKENS")]
        context_tokens: Option<u32>,
    },
    /// Send every spooled event now, in order; exits 1 when some are left (cairn unreachable).
    Flush {
        /// Timeout of each request, in milliseconds.
        #[arg(long, default_value_t = 10_000)]
        timeout_ms: u64,
    },
}

fn default_spool_dir() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir)
        .join(".cairn/hook-spool")
}

pub async fn run(args: HookArgs) -> anyhow::Result<i32> {
    let mut raw = Vec::new();
    if matches!(args.command, HookCommand::ClaudeCode { .. }) {
        if let Err(err) = std::io::stdin()
            .lock()
            .take(MAX_STDIN_BYTES)
            .read_to_end(&mut raw)
        {
            tracing::warn!(error = %err, "hook: could not read the event from stdin");
            return Ok(0);
        }
    }
    let mut out = Vec::new();
    let code = invoke(args, &raw, &mut out).await?;
    std::io::stdout().lock().write_all(&out)?;
    Ok(code)
}

/// One `cairn hook` invocation with `stdin` given; what it prints goes to `out`.
pub async fn invoke(args: HookArgs, stdin: &[u8], out: &mut Vec<u8>) -> anyhow::Result<i32> {
    match args.command {
        HookCommand::ClaudeCode {
            deadline_ms,
            context_tokens,
        } => {
            let deadline = Instant::now() + Duration::from_millis(deadline_ms);
            let sender = Sender::new(&args.client, context_tokens, deadline_ms);
            match claude_code(stdin, &args.client, &args.spool_dir, &sender, deadline).await {
                Ok(Some(reply)) => writeln!(out, "{reply}")?,
                Ok(None) => {}
                Err(err) => tracing::warn!(error = %format!("{err:#}"), "hook: event not captured"),
            }
            // Never fail the agent.
            Ok(0)
        }
        HookCommand::Flush { timeout_ms } => {
            let spool = HookSpool::open(&args.spool_dir)?;
            let _lock = spool.lock(true)?;
            let sender = Sender::new(&args.client, None, timeout_ms);
            let report = flush(&spool, &sender, None, Duration::from_millis(timeout_ms)).await?;
            writeln!(
                out,
                "sent {} spooled events ({} rejected by cairn), {} left",
                report.sent, report.rejected, report.left
            )?;
            Ok(if report.left == 0 { 0 } else { 1 })
        }
    }
}

/// A spooled event: the project it was resolved to when it happened, and the event.
#[derive(Serialize, Deserialize)]
pub struct Spooled {
    pub project: Option<String>,
    pub event: Value,
}

/// Handles one event; returns what to print on stdout (the SessionStart reply).
pub async fn claude_code(
    raw: &[u8],
    client: &ClientSettings,
    spool_dir: &Path,
    sender: &Sender,
    deadline: Instant,
) -> anyhow::Result<Option<String>> {
    let mut event: Value = serde_json::from_slice(raw).context("stdin is not a JSON hook event")?;
    let Some(obj) = event.as_object_mut() else {
        anyhow::bail!("stdin is not a JSON object");
    };
    if !obj.contains_key("cairn_event_id") {
        obj.insert(
            "cairn_event_id".into(),
            Value::String(uuid::Uuid::now_v7().to_string()),
        );
    }
    redact::value(&mut event);
    events::shrink(&mut event, SPOOL_STRING_CHARS);
    let cwd = event.get("cwd").and_then(Value::as_str);
    let item = Spooled {
        project: claude::project_for(client.project.as_deref(), cwd),
        event,
    };
    let spool = HookSpool::open(spool_dir)?;
    let Some(_lock) = spool.lock(false)? else {
        // Another hook is flushing; ours waits its turn in the spool.
        spool.push(&item)?;
        return Ok(None);
    };
    let remaining = || deadline.saturating_duration_since(Instant::now());
    let report = flush(&spool, sender, Some(deadline), remaining()).await?;
    if report.left > 0 {
        spool.push(&item)?;
        return Ok(None);
    }
    match sender.send(&item, remaining()).await {
        Outcome::Sent(reply) => Ok(reply
            .filter(|r| r.get("hookSpecificOutput").is_some())
            .map(|r| r.to_string())),
        Outcome::Rejected(status, body) => {
            tracing::warn!(status, body = %body, "hook: cairn rejected the event; not spooled");
            Ok(None)
        }
        Outcome::Failed(why) => {
            tracing::debug!(reason = %why, "hook: cairn unavailable; event spooled");
            spool.push(&item)?;
            Ok(None)
        }
    }
}

#[derive(Debug, Default, PartialEq, Eq)]
pub struct FlushReport {
    pub sent: usize,
    pub rejected: usize,
    pub left: usize,
}

/// Sends spooled events in order until one fails or `deadline` passes. Rejected events (a
/// 4xx that retrying cannot fix) are moved to `rejected/` so they never block the queue.
pub async fn flush(
    spool: &HookSpool,
    sender: &Sender,
    deadline: Option<Instant>,
    per_request: Duration,
) -> anyhow::Result<FlushReport> {
    let pending = spool.pending()?;
    let mut report = FlushReport::default();
    for (i, path) in pending.iter().enumerate() {
        let timeout = match deadline {
            Some(d) => d.saturating_duration_since(Instant::now()).min(per_request),
            None => per_request,
        };
        if timeout < Duration::from_millis(2) {
            report.left = pending.len() - i;
            return Ok(report);
        }
        let item: Spooled = match fs::read(path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
        {
            Some(item) => item,
            None => {
                spool.reject(path)?;
                report.rejected += 1;
                continue;
            }
        };
        match sender.send(&item, timeout).await {
            Outcome::Sent(_) => {
                fs::remove_file(path).with_context(|| format!("removing {}", path.display()))?;
                report.sent += 1;
            }
            Outcome::Rejected(status, body) => {
                tracing::warn!(status, body = %body, file = %path.display(), "spooled event rejected by cairn");
                spool.reject(path)?;
                report.rejected += 1;
            }
            Outcome::Failed(_) => {
                report.left = pending.len() - i;
                return Ok(report);
            }
        }
    }
    Ok(report)
}

pub enum Outcome {
    /// Acknowledged; the reply body when it was JSON.
    Sent(Option<Value>),
    /// A 4xx that resending cannot fix.
    Rejected(u16, String),
    /// Down, slow, or an error worth retrying.
    Failed(String),
}

/// Posts events to `POST /v1/hooks/claude-code`.
pub struct Sender {
    client: Option<reqwest::Client>,
    url: String,
    context_tokens: Option<u32>,
}

impl Sender {
    pub fn new(settings: &ClientSettings, context_tokens: Option<u32>, connect_ms: u64) -> Self {
        let client = settings
            .client(Duration::from_millis(connect_ms.clamp(1, 2_000)))
            .map_err(|e| tracing::warn!(error = %format!("{e:#}"), "hook: no HTTP client"))
            .ok();
        Self {
            client,
            url: settings.endpoint("/v1/hooks/claude-code"),
            context_tokens,
        }
    }

    pub async fn send(&self, item: &Spooled, timeout: Duration) -> Outcome {
        let Some(client) = &self.client else {
            return Outcome::Failed("no HTTP client".into());
        };
        if timeout.is_zero() {
            return Outcome::Failed("out of time".into());
        }
        let mut query: Vec<(&str, String)> = Vec::new();
        if let Some(p) = &item.project {
            query.push(("project", p.clone()));
        }
        if let Some(b) = self.context_tokens {
            query.push(("budget_tokens", b.to_string()));
        }
        let sent = client
            .post(&self.url)
            .query(&query)
            .json(&item.event)
            .timeout(timeout)
            .send()
            .await;
        let resp = match sent {
            Ok(r) => r,
            Err(e) => return Outcome::Failed(e.to_string()),
        };
        let status = resp.status().as_u16();
        let body = match tokio::time::timeout(timeout, resp.bytes()).await {
            Ok(Ok(b)) => b,
            Ok(Err(e)) => return Outcome::Failed(e.to_string()),
            Err(_) => return Outcome::Failed("timed out reading the reply".into()),
        };
        match status {
            200..=299 => Outcome::Sent(serde_json::from_slice(&body).ok()),
            // Auth, rate limits and timeouts can pass; keep the event for later.
            401 | 403 | 404 | 408 | 429 => {
                Outcome::Failed(format!("{status}: {}", String::from_utf8_lossy(&body)))
            }
            400..=499 => Outcome::Rejected(status, String::from_utf8_lossy(&body).into_owned()),
            _ => Outcome::Failed(format!("{status}")),
        }
    }
}

/// The hook's disk spool: one file per event, `<arrival ns>-<uuid>.hook.json`.
pub struct HookSpool {
    dir: PathBuf,
}

impl HookSpool {
    pub fn open(dir: &Path) -> anyhow::Result<Self> {
        fs::create_dir_all(dir)
            .with_context(|| format!("could not create the hook spool {}", dir.display()))?;
        Ok(Self {
            dir: dir.to_path_buf(),
        })
    }

    /// The flush lock: `Ok(None)` when another process holds it and `wait` is false.
    pub fn lock(&self, wait: bool) -> anyhow::Result<Option<File>> {
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.dir.join("flush.lock"))
            .context("could not open the hook spool lock")?;
        if wait {
            file.lock().context("could not lock the hook spool")?;
            return Ok(Some(file));
        }
        match file.try_lock() {
            Ok(()) => Ok(Some(file)),
            Err(fs::TryLockError::WouldBlock) => Ok(None),
            Err(fs::TryLockError::Error(e)) => Err(e).context("could not lock the hook spool"),
        }
    }

    /// Writes the event durably under a name that sorts after every earlier one.
    pub fn push(&self, item: &Spooled) -> anyhow::Result<PathBuf> {
        let ns = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let name = format!("{ns:024}-{}{SUFFIX}", uuid::Uuid::now_v7().simple());
        let tmp = self.dir.join(format!(".{name}.tmp"));
        let path = self.dir.join(name);
        let bytes = serde_json::to_vec(item)?;
        let mut f = File::create(&tmp).context("could not write to the hook spool")?;
        // No fsync: it can take longer than the whole hook budget on a busy disk. The rename
        // still means a crash leaves the event whole or absent, never torn.
        f.write_all(&bytes)?;
        fs::rename(&tmp, &path)?;
        Ok(path)
    }

    /// Spooled events, oldest first.
    pub fn pending(&self) -> anyhow::Result<Vec<PathBuf>> {
        let mut files: Vec<PathBuf> = fs::read_dir(&self.dir)?
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.ends_with(SUFFIX) && !n.starts_with('.'))
            })
            .collect();
        files.sort();
        Ok(files)
    }

    fn reject(&self, path: &Path) -> anyhow::Result<()> {
        let dir = self.dir.join("rejected");
        fs::create_dir_all(&dir)?;
        if let Some(name) = path.file_name() {
            fs::rename(path, dir.join(name))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spool_keeps_arrival_order_and_ignores_partial_files() {
        let dir = tempfile::tempdir().unwrap();
        let spool = HookSpool::open(dir.path()).unwrap();
        for i in 0..5 {
            spool
                .push(&Spooled {
                    project: None,
                    event: serde_json::json!({"n": i}),
                })
                .unwrap();
        }
        std::fs::write(dir.path().join(".partial.hook.json.tmp"), b"{").unwrap();
        let order: Vec<i64> = spool
            .pending()
            .unwrap()
            .iter()
            .map(|p| {
                let s: Spooled = serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap();
                s.event["n"].as_i64().unwrap()
            })
            .collect();
        assert_eq!(order, vec![0, 1, 2, 3, 4]);
        let held = spool.lock(false).unwrap();
        assert!(held.is_some());
        assert!(
            spool.lock(false).unwrap().is_none(),
            "the lock is exclusive"
        );
    }
}
