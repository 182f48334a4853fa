//! `cairn hook claude-code` (a Claude Code command hook: event JSON on stdin) and
//! `cairn hook flush`.
//!
//! The hook never blocks the agent: it always exits 0, within a deadline of its event's own.
//! The events whose answer Claude Code reads get room for it — SessionStart (the handover,
//! `--session-start-deadline-ms`, 2000 ms by default), UserPromptSubmit
//! (`--prompt-deadline-ms`, 1000 ms) and PreToolUse (a file's context,
//! `--pre-tool-deadline-ms`, 500 ms); every other event keeps the short `--deadline-ms`
//! (60 ms). `setup` writes a hook `timeout` well above all of them.
//!
//! It posts the event to `POST /v1/hooks/claude-code` and prints the reply's
//! `hookSpecificOutput`. When cairn is down, slow or busy, the event goes to a local disk spool
//! instead (one file per event, named by arrival time, written then renamed so a crash never
//! leaves half an event), and the flush below sends it. A backlog never stands in front of the answer: when events are
//! waiting, this one joins the end of the queue (so a session's events keep their order), an
//! answering event asks cairn for its answer alone (`answer_only`), and the queue is sent by
//! a detached `cairn hook flush --if-idle` started after answering, which Claude Code does not
//! wait for. Every event carries its idempotency key (`tool_use_id`, else a `cairn_event_id`
//! given here when it is first seen), so an event sent twice — acknowledged but not yet
//! deleted when the hook was killed — is stored once: exactly once, in order.
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
/// SessionStart's default time budget, in milliseconds (`CAIRN_HOOK_SESSION_START_DEADLINE_MS`).
pub const SESSION_START_DEADLINE_MS: u64 = claude::SESSION_START_ANSWER_MS;

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
    /// Claude Code command hook: one event on stdin; exits 0 within its event's deadline
    /// whatever happens, spooling the event when cairn cannot take it now.
    ClaudeCode {
        /// Time budget of events whose answer Claude Code ignores, in milliseconds.
        #[arg(long, env = "CAIRN_HOOK_DEADLINE_MS", default_value_t = 60)]
        deadline_ms: u64,
        /// Time budget of SessionStart (the handover), in milliseconds.
        #[arg(
            long,
            env = "CAIRN_HOOK_SESSION_START_DEADLINE_MS",
            default_value_t = SESSION_START_DEADLINE_MS
        )]
        session_start_deadline_ms: u64,
        /// Time budget of UserPromptSubmit, in milliseconds.
        #[arg(long, env = "CAIRN_HOOK_PROMPT_DEADLINE_MS", default_value_t = claude::PROMPT_ANSWER_MS)]
        prompt_deadline_ms: u64,
        /// Time budget of PreToolUse (a file's context), in milliseconds.
        #[arg(long, env = "CAIRN_HOOK_PRE_TOOL_DEADLINE_MS", default_value_t = claude::PRE_TOOL_ANSWER_MS)]
        pre_tool_deadline_ms: u64,
        /// Token budget of the SessionStart context.
        #[arg(long, env = "CAIRN_HOOK_CONTEXT_TOKENS")]
        context_tokens: Option<u32>,
        /// Token budget of the memory recalled for a prompt at UserPromptSubmit (cairn's
        /// default: 600; 0: none).
        #[arg(long, env = "CAIRN_HOOK_PROMPT_TOKENS")]
        prompt_tokens: Option<u32>,
        /// How a backlog of spooled events is sent: `detached` (a `cairn hook flush` process
        /// started after answering, which Claude Code does not wait for), `inline` (by this
        /// process after it has answered: for tests and embedding) or `off`.
        #[arg(long, env = "CAIRN_HOOK_FLUSH", value_enum, default_value_t = FlushMode::Detached)]
        flush: FlushMode,
    },
    /// Send every spooled event now, in order; exits 1 when some are left (cairn unreachable).
    Flush {
        /// Timeout of each request, in milliseconds.
        #[arg(long, default_value_t = 10_000)]
        timeout_ms: u64,
        /// Exit at once (0) when another process is sending the spool already.
        #[arg(long)]
        if_idle: bool,
    },
}

/// How the command hook sends a backlog.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlushMode {
    Detached,
    Inline,
    Off,
}

/// The per-event deadlines of the command hook.
#[derive(Clone, Copy, Debug)]
pub struct Deadlines {
    pub other: Duration,
    pub session_start: Duration,
    pub prompt: Duration,
    pub pre_tool: Duration,
}

impl Deadlines {
    /// The deadline of an event, by its `hook_event_name`.
    pub fn of(&self, event: &str) -> Duration {
        match event {
            "SessionStart" => self.session_start,
            "UserPromptSubmit" => self.prompt,
            "PreToolUse" => self.pre_tool,
            _ => self.other,
        }
    }
}

/// Events whose reply Claude Code reads (`hookSpecificOutput`).
pub fn answers(event: &str) -> bool {
    matches!(event, "SessionStart" | "UserPromptSubmit" | "PreToolUse")
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
            session_start_deadline_ms,
            prompt_deadline_ms,
            pre_tool_deadline_ms,
            context_tokens,
            prompt_tokens,
            flush: mode,
        } => {
            let started = Instant::now();
            let deadlines = Deadlines {
                other: Duration::from_millis(deadline_ms),
                session_start: Duration::from_millis(session_start_deadline_ms),
                prompt: Duration::from_millis(prompt_deadline_ms),
                pre_tool: Duration::from_millis(pre_tool_deadline_ms),
            };
            let longest = deadline_ms
                .max(session_start_deadline_ms)
                .max(prompt_deadline_ms)
                .max(pre_tool_deadline_ms);
            let sender = Sender::new(&args.client, context_tokens, longest)
                .with_prompt_tokens(prompt_tokens);
            // Boxed: the future is large, and tests run it on a small stack.
            let handled = Box::pin(claude_code(
                stdin,
                &args.client,
                &args.spool_dir,
                &sender,
                &deadlines,
                started,
            ))
            .await;
            let backlog = match handled {
                Ok(h) => {
                    if let Some(reply) = h.reply {
                        writeln!(out, "{reply}")?;
                    }
                    h.backlog
                }
                Err(err) => {
                    tracing::warn!(error = %format!("{err:#}"), "hook: event not captured");
                    false
                }
            };
            // After the answer: Claude Code waits for this process, not for the flush.
            if backlog {
                match mode {
                    FlushMode::Detached => spawn_flusher(&args),
                    FlushMode::Inline => {
                        if let Ok(spool) = HookSpool::open(&args.spool_dir) {
                            if let Ok(Some(_lock)) = spool.lock(false) {
                                let sender = Sender::new(&args.client, None, 10_000).capture_only();
                                let sent =
                                    Box::pin(flush(&spool, &sender, None, Duration::from_secs(10)));
                                let _ = sent.await;
                            }
                        }
                    }
                    FlushMode::Off => {}
                }
            }
            // Never fail the agent.
            Ok(0)
        }
        HookCommand::Flush {
            timeout_ms,
            if_idle,
        } => {
            let spool = HookSpool::open(&args.spool_dir)?;
            let Some(_lock) = spool.lock(!if_idle)? else {
                writeln!(out, "another process is sending the spool")?;
                return Ok(0);
            };
            let sender = Sender::new(&args.client, None, timeout_ms).capture_only();
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

/// Starts `cairn hook flush --if-idle` detached (own session, no stdio), with this
/// invocation's settings; Claude Code does not wait for it.
fn spawn_flusher(args: &HookArgs) {
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let mut cmd = std::process::Command::new(exe);
    cmd.arg("hook")
        .arg("--spool-dir")
        .arg(&args.spool_dir)
        .arg("--url")
        .arg(&args.client.url)
        .args(["flush", "--if-idle"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    if !args.client.api_key.0.is_empty() {
        // Through the environment, never the command line (visible to every user).
        cmd.env("CAIRN_API_KEY", &args.client.api_key.0);
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // Its own session: not killed with the hook's process group, not holding its pipes.
        cmd.process_group(0);
    }
    match cmd.spawn() {
        Ok(child) => drop(child),
        Err(err) => tracing::debug!(error = %err, "hook: could not start the flush"),
    }
}

/// A spooled event: the project it was resolved to when it happened, and the event.
#[derive(Serialize, Deserialize)]
pub struct Spooled {
    pub project: Option<String>,
    pub event: Value,
}

/// What one event came to: the line to print (the reply with `hookSpecificOutput`), and
/// whether spooled events are waiting to be sent.
#[derive(Debug, Default)]
pub struct Handled {
    pub reply: Option<String>,
    pub backlog: bool,
}

/// Handles one event within its deadline (from `started`).
pub async fn claude_code(
    raw: &[u8],
    client: &ClientSettings,
    spool_dir: &Path,
    sender: &Sender,
    deadlines: &Deadlines,
    started: Instant,
) -> anyhow::Result<Handled> {
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
    let name = obj
        .get("hook_event_name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let deadline = started + deadlines.of(&name);
    redact::value(&mut event);
    events::shrink(&mut event, SPOOL_STRING_CHARS);
    let cwd = event.get("cwd").and_then(Value::as_str);
    let item = Spooled {
        // `CAIRN_PROJECT` (which `setup` pins in the settings' `env`), else the git root.
        project: claude::project_for(client.project.as_deref(), cwd),
        event,
    };
    let remaining = || deadline.saturating_duration_since(Instant::now());
    let spool = HookSpool::open(spool_dir)?;
    let lock = spool.lock(false)?;
    if lock.is_none() || !spool.pending()?.is_empty() {
        // Events are waiting: this one goes behind them, so a session keeps its order; an
        // answering event still gets its answer, asked for alone.
        spool.push(&item)?;
        drop(lock);
        let reply = if answers(&name) {
            match sender.send_as(&item, remaining(), true).await {
                Outcome::Sent(reply) => printable(reply),
                Outcome::Rejected(status, why) => {
                    tracing::warn!(status, body = %why, "hook: cairn refused to answer");
                    None
                }
                Outcome::Failed(why) => {
                    tracing::debug!(reason = %why, "hook: no answer from cairn");
                    None
                }
            }
        } else {
            None
        };
        return Ok(Handled {
            reply,
            backlog: true,
        });
    }
    match sender.send(&item, remaining()).await {
        Outcome::Sent(reply) => Ok(Handled {
            reply: printable(reply),
            backlog: false,
        }),
        Outcome::Rejected(status, body) => {
            tracing::warn!(status, body = %body, "hook: cairn rejected the event; not spooled");
            Ok(Handled::default())
        }
        Outcome::Failed(why) => {
            // Spooled, it is sent by the flush started after answering: an event that missed
            // its deadline because cairn was slow arrives seconds later, not at the next event
            // (which, after a session's last one, may never come).
            tracing::debug!(reason = %why, "hook: cairn unavailable; event spooled");
            spool.push(&item)?;
            Ok(Handled {
                reply: None,
                backlog: true,
            })
        }
    }
}

/// The reply to print: only one that carries `hookSpecificOutput`.
fn printable(reply: Option<Value>) -> Option<String> {
    reply
        .filter(|r| r.get("hookSpecificOutput").is_some())
        .map(|r| r.to_string())
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
    let mut report = FlushReport::default();
    // Events spooled while this flush runs are sent too, behind the ones before them.
    loop {
        let before = report.sent + report.rejected;
        let left = flush_round(spool, sender, deadline, per_request, &mut report).await?;
        if left > 0 || report.sent + report.rejected == before {
            report.left = left;
            return Ok(report);
        }
    }
}

/// One pass over what is spooled now; returns how many are left.
async fn flush_round(
    spool: &HookSpool,
    sender: &Sender,
    deadline: Option<Instant>,
    per_request: Duration,
    report: &mut FlushReport,
) -> anyhow::Result<usize> {
    let pending = spool.pending()?;
    for (i, path) in pending.iter().enumerate() {
        let timeout = match deadline {
            Some(d) => d.saturating_duration_since(Instant::now()).min(per_request),
            None => per_request,
        };
        if timeout < Duration::from_millis(2) {
            return Ok(pending.len() - i);
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
            Outcome::Failed(_) => return Ok(pending.len() - i),
        }
    }
    Ok(0)
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
    prompt_tokens: Option<u32>,
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
            prompt_tokens: None,
        }
    }

    /// Asks for this budget of recalled memory at UserPromptSubmit (cairn's default if `None`).
    pub fn with_prompt_tokens(mut self, prompt_tokens: Option<u32>) -> Self {
        self.prompt_tokens = prompt_tokens;
        self
    }

    /// Asks cairn for no answer (both budgets 0): a spooled event is sent after its moment,
    /// and nobody reads what it would have answered.
    pub fn capture_only(mut self) -> Self {
        self.context_tokens = Some(0);
        self.prompt_tokens = Some(0);
        self
    }

    pub async fn send(&self, item: &Spooled, timeout: Duration) -> Outcome {
        self.send_as(item, timeout, false).await
    }

    /// [`Self::send`]; with `answer_only`, cairn answers the event without capturing it (it
    /// waits in the spool, behind earlier events).
    pub async fn send_as(&self, item: &Spooled, timeout: Duration, answer_only: bool) -> Outcome {
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
        if let Some(b) = self.prompt_tokens {
            query.push(("prompt_tokens", b.to_string()));
        }
        if answer_only {
            query.push(("answer_only", "true".into()));
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
