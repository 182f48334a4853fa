//! `cairn setup claude-code [--project-dir DIR] [--http] [--check] [--print]`: writes cairn's
//! hooks and the pinned project into the project's Claude Code settings and its MCP server
//! into `DIR/.mcp.json`, merged with what is there (see `claude::settings`).
//!
//! What the team commits stays free of machine paths: when `cairn` resolves on the PATH, the
//! hooks run `cairn hook claude-code` from `.claude/settings.json`; otherwise they run this
//! binary's absolute path from `.claude/settings.local.json` (Claude Code's personal settings),
//! and with no binary to name, setup refuses and says what to do. The project is pinned from
//! something unique — the `origin` remote, normalised, in `settings.json`; else the git root
//! path, hashed, in `settings.local.json` — as `env.CAIRN_PROJECT`, which Claude Code passes
//! to the hook. `--http` installs `type: "http"` hooks (in `settings.local.json`: the URL is
//! this machine's) where Claude Code accepts them, command hooks elsewhere.
//!
//! `--check` proves the chain as Claude Code will run it, step by step, each pass or fail with
//! the fix: the hook's binary is found, cairn answers, the key is valid with write scope for
//! the pinned project, a SessionStart is answered (with context when there is memory) within
//! its deadline, and a PostToolUse is stored. The check's PostToolUse is sent as a subagent's,
//! so it lands in a child session, which a handover never takes for the last session.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::{Args, Subcommand};
use serde_json::{json, Value};

use crate::claude::settings::{self, Hook};

/// The hook command when `cairn` is on the PATH.
const PATH_COMMAND: &str = "cairn hook claude-code";

#[derive(Args, Debug)]
pub struct SetupArgs {
    #[command(subcommand)]
    pub target: SetupTarget,
}

#[derive(Subcommand, Debug)]
pub enum SetupTarget {
    /// Claude Code: hooks in .claude/settings.json (machine-specific parts in
    /// .claude/settings.local.json), the MCP server in .mcp.json.
    ClaudeCode {
        /// The project's root directory.
        #[arg(long, default_value = ".")]
        project_dir: PathBuf,
        /// Print the merged files instead of writing them.
        #[arg(long)]
        print: bool,
        /// The hook command Claude Code runs (default: `cairn hook claude-code` when `cairn`
        /// is on the PATH, else this binary's absolute path).
        #[arg(long)]
        command: Option<String>,
        /// `type: "http"` hooks where Claude Code accepts them (the key from
        /// `$CAIRN_API_KEY`); command hooks elsewhere.
        #[arg(long)]
        http: bool,
        /// Prove the installed chain step by step instead of writing anything.
        #[arg(long)]
        check: bool,
        /// The project id to pin (default: from the origin remote, else the git root path).
        #[arg(long, env = "CAIRN_PROJECT")]
        project: Option<String>,
        /// cairn's base URL.
        #[arg(
            long = "url",
            env = "CAIRN_URL",
            default_value = "http://127.0.0.1:8420"
        )]
        url: String,
        /// API key for `--check` (write scope).
        #[arg(
            long,
            env = "CAIRN_API_KEY",
            default_value = "",
            hide_env_values = true
        )]
        api_key: String,
    },
}

pub async fn run(args: SetupArgs, out: &mut impl std::io::Write) -> anyhow::Result<i32> {
    let SetupTarget::ClaudeCode {
        project_dir,
        print,
        command,
        http,
        check,
        project,
        url,
        api_key,
    } = args.target;
    let pinned = match project {
        Some(p) if !p.trim().is_empty() => Pin {
            id: p.trim().to_string(),
            shared: true,
        },
        _ => pin(&project_dir)?,
    };
    if check {
        return self::check(&project_dir, &pinned.id, &url, &api_key, out).await;
    }
    let hook_command = match command {
        Some(c) => c,
        None => resolve_command().ok_or_else(|| {
            anyhow::anyhow!(
                "cannot name a `cairn` binary for the hooks: `cairn` is not on the PATH and this \
                 one has no path. Install it (`cargo install --path .` or copy \
                 target/release/cairn into a directory on PATH, e.g. ~/.local/bin) and run \
                 setup again, or pass --command"
            )
        })?,
    };
    // A command naming a path is this machine's: it goes to the personal settings file.
    let machine_command = hook_command
        .split_whitespace()
        .next()
        .is_some_and(|w| w.contains('/'));
    let shared_path = project_dir.join(".claude/settings.json");
    let local_path = project_dir.join(".claude/settings.local.json");
    let mcp_path = project_dir.join(".mcp.json");
    let context = |path: &Path| {
        let path = path.display().to_string();
        move |e: String| anyhow::anyhow!("{path}: {e}; fix it and run again")
    };
    let mut shared = read(&shared_path)?;
    let mut local = read(&local_path)?;
    let command_events: Vec<&str> = settings::EVENTS
        .iter()
        .copied()
        .filter(|e| !http || !settings::HTTP_EVENTS.contains(e))
        .collect();
    let target = if machine_command {
        &mut local
    } else {
        &mut shared
    };
    *target = settings::merge_hooks(
        std::mem::take(target),
        &command_events,
        &Hook::Command(hook_command.clone()),
    )
    .map_err(context(if machine_command {
        &local_path
    } else {
        &shared_path
    }))?;
    if http {
        let hook_url = format!(
            "{}/v1/hooks/claude-code?project={}",
            url.trim_end_matches('/'),
            pinned.id
        );
        local = settings::merge_hooks(local, &settings::HTTP_EVENTS, &Hook::Http(hook_url))
            .map_err(context(&local_path))?;
    }
    let pin_target = if pinned.shared {
        &mut shared
    } else {
        &mut local
    };
    *pin_target = settings::set_env(std::mem::take(pin_target), "CAIRN_PROJECT", &pinned.id)
        .map_err(context(if pinned.shared {
            &shared_path
        } else {
            &local_path
        }))?;
    shared = settings::enable_mcp(shared).map_err(context(&shared_path))?;
    let mcp = settings::merge_mcp(read(&mcp_path)?, &url).map_err(context(&mcp_path))?;
    let mut files = vec![(&shared_path, &shared), (&mcp_path, &mcp)];
    let local_used = local.as_object().is_some_and(|o| !o.is_empty());
    if local_used {
        files.push((&local_path, &local));
    }
    for (path, value) in files {
        let text = serde_json::to_string_pretty(value)? + "\n";
        if print {
            writeln!(out, "// {}\n{text}", path.display())?;
        } else {
            write(path, &text)?;
            writeln!(out, "updated {}", path.display())?;
        }
    }
    if !print {
        writeln!(
            out,
            "project pinned as `{}` ({}); hooks run `{hook_command}`{}.\nSet CAIRN_API_KEY (write \
             scope for that project){} in the environment Claude Code starts from, then prove it \
             with `cairn setup claude-code --check`.",
            pinned.id,
            if pinned.shared {
                "from the origin remote, in .claude/settings.json"
            } else {
                "from this checkout's path, in .claude/settings.local.json"
            },
            if machine_command {
                " (this machine's path: in .claude/settings.local.json; teammates need `cairn` on their PATH)"
            } else {
                ""
            },
            if url == "http://127.0.0.1:8420" {
                String::new()
            } else {
                format!(" and CAIRN_URL={url}")
            }
        )?;
    }
    Ok(0)
}

/// The pinned project and whether it can be shared with the team (derived from the remote).
struct Pin {
    id: String,
    shared: bool,
}

/// The project of `dir`: the origin remote, normalised; else the git root (or `dir`) path.
fn pin(dir: &Path) -> anyhow::Result<Pin> {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .filter(|s| !s.is_empty())
    };
    if let Some(id) = git(&["config", "--get", "remote.origin.url"])
        .as_deref()
        .and_then(settings::project_from_remote)
    {
        return Ok(Pin { id, shared: true });
    }
    let root = git(&["rev-parse", "--show-toplevel"])
        .map(PathBuf::from)
        .unwrap_or(std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf()));
    use sha2::Digest;
    let hash = hex::encode(sha2::Sha256::digest(root.to_string_lossy().as_bytes()));
    let name = root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "project".into());
    let id = settings::id_chars(&format!("{name}-{}", &hash[..10]))
        .context("cannot derive a project id; pass --project")?;
    Ok(Pin { id, shared: false })
}

/// `cairn hook claude-code` when `cairn` is on the PATH, else this binary by absolute path.
fn resolve_command() -> Option<String> {
    if on_path("cairn").is_some() {
        return Some(PATH_COMMAND.into());
    }
    let exe = std::env::current_exe().ok()?;
    let exe = exe.to_str()?;
    // A path with spaces or quotes would need shell quoting; refuse rather than guess.
    (!exe.contains(|c: char| c.is_whitespace() || "'\"$`\\".contains(c)))
        .then(|| format!("{exe} hook claude-code"))
}

/// The executable `name` resolves to on the PATH.
fn on_path(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        p.is_file()
    }
}

/// One step of `--check`.
fn step(out: &mut impl std::io::Write, ok: bool, what: &str, fix: &str) -> anyhow::Result<bool> {
    if ok {
        writeln!(out, "PASS  {what}")?;
    } else {
        writeln!(out, "FAIL  {what}\n      fix: {fix}")?;
    }
    Ok(ok)
}

/// The hook command installed for SessionStart in the project's settings (local first).
fn installed_command(dir: &Path) -> Option<String> {
    ["settings.local.json", "settings.json"]
        .iter()
        .find_map(|f| {
            let v = read(&dir.join(".claude").join(f)).ok()?;
            v["hooks"]["SessionStart"]
                .as_array()?
                .iter()
                .flat_map(|g| g["hooks"].as_array().cloned().unwrap_or_default())
                .find_map(|h| {
                    h.get("command")
                        .and_then(Value::as_str)
                        .filter(|c| c.contains("hook claude-code"))
                        .map(str::to_string)
                })
        })
}

/// Runs the installed hook command (through `sh -c`, as Claude Code does) with `event`.
async fn run_hook(
    command: &str,
    project: &str,
    url: &str,
    key: &str,
    event: &Value,
) -> anyhow::Result<(Duration, String)> {
    use tokio::io::AsyncWriteExt;
    let started = Instant::now();
    let mut child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .env("CAIRN_PROJECT", project)
        .env("CAIRN_URL", url)
        .env("CAIRN_API_KEY", key)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .context("could not start the hook command")?;
    let mut stdin = child.stdin.take().context("hook stdin")?;
    stdin.write_all(event.to_string().as_bytes()).await?;
    drop(stdin);
    let output = tokio::time::timeout(
        Duration::from_secs(settings::HOOK_TIMEOUT_SECS),
        child.wait_with_output(),
    )
    .await
    .context("the hook did not exit within its timeout")??;
    Ok((
        started.elapsed(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    ))
}

async fn check(
    dir: &Path,
    project: &str,
    url: &str,
    key: &str,
    out: &mut impl std::io::Write,
) -> anyhow::Result<i32> {
    writeln!(
        out,
        "checking the Claude Code → cairn chain for project `{project}` at {url}"
    )?;
    let command = installed_command(dir);
    let binary = command
        .as_deref()
        .and_then(|c| c.split_whitespace().next())
        .map(|b| {
            if b.contains('/') {
                Some(PathBuf::from(b)).filter(|p| is_executable(p))
            } else {
                on_path(b)
            }
        });
    let found = matches!(binary, Some(Some(_)));
    if !step(
        out,
        found,
        &format!("hook binary found: {}", command.as_deref().unwrap_or("(no cairn hook installed)")),
        "run `cairn setup claude-code` in this directory; put `cairn` on the PATH Claude Code starts from",
    )? {
        return Ok(1);
    }
    let command = command.unwrap_or_default();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()?;
    let base = url.trim_end_matches('/');
    let up = http
        .get(format!("{base}/healthz"))
        .send()
        .await
        .is_ok_and(|r| r.status().is_success());
    if !step(
        out,
        up,
        &format!("cairn answers at {base}"),
        "start it (`make run` or `cairn serve`), or set CAIRN_URL",
    )? {
        return Ok(1);
    }
    let session = format!("cairn-check-{}", uuid::Uuid::new_v4().simple());
    let started = http
        .post(format!("{base}/v1/sessions"))
        .bearer_auth(key)
        .json(&json!({"project": project, "session_id": session, "agent": "cairn-check", "task": "cairn setup --check"}))
        .send()
        .await?;
    let status = started.status().as_u16();
    let fix = match status {
        401 => "CAIRN_API_KEY is missing or not a valid key: create one with `cairn keys create --project <project> --scope write`".to_string(),
        403 => format!("the key is not for project `{project}` with write scope: `cairn keys create --project {project} --scope write`"),
        _ => format!("cairn answered {status}"),
    };
    if !step(
        out,
        (200..300).contains(&status),
        &format!("key valid with write scope for `{project}`"),
        &fix,
    )? {
        return Ok(1);
    }
    // The hook started here reads the same variable.
    let deadline = Duration::from_millis(
        std::env::var("CAIRN_HOOK_SESSION_START_DEADLINE_MS")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(super::hook::SESSION_START_DEADLINE_MS),
    );
    let start_event = json!({"hook_event_name": "SessionStart", "session_id": session, "source": "startup",
                              "cwd": dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf())});
    let (took, reply) = run_hook(&command, project, url, key, &start_event).await?;
    let context = reply.contains("additionalContext");
    step(
        out,
        took <= deadline + Duration::from_millis(500),
        &format!(
            "SessionStart answered in {} ms ({})",
            took.as_millis(),
            if context { "with context" } else { "no memory yet for this project, so no context" }
        ),
        "cairn or Neo4j is slow: raise CAIRN_HOOK_SESSION_START_DEADLINE_MS (below the hook timeout)",
    )?;
    let post = json!({"hook_event_name": "PostToolUse", "session_id": session, "agent_id": "cairn-check",
                      "agent_type": "cairn-check", "tool_name": "Bash", "tool_use_id": "toolu_cairn_check",
                      "tool_input": {"command": "true", "description": "cairn setup --check"},
                      "tool_response": {"stdout": "", "stderr": ""}});
    run_hook(&command, project, url, key, &post).await?;
    let child = crate::claude::child_session_id(&session, "cairn-check");
    let mut stored = false;
    // An event that missed the hook's deadline is sent by the flush the hook starts: wait
    // for that too.
    for _ in 0..100 {
        let r = http
            .get(format!("{base}/v1/sessions/{child}"))
            .bearer_auth(key)
            .send()
            .await?;
        if r.status().is_success() {
            let v: Value = r.json().await.unwrap_or_default();
            if v["operation_count"].as_i64().unwrap_or(0) > 0 {
                stored = true;
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let ok = step(
        out,
        stored,
        "PostToolUse stored",
        "see `cairn hook flush` (events wait in the spool when cairn cannot take them) and cairn's log",
    )?;
    Ok(if ok { 0 } else { 1 })
}

/// The JSON document at `path`, or `{}` when there is none. Invalid JSON is an error: the
/// file is never overwritten then.
fn read(path: &Path) -> anyhow::Result<Value> {
    match std::fs::read_to_string(path) {
        Ok(text) if text.trim().is_empty() => Ok(Value::Object(Default::default())),
        Ok(text) => serde_json::from_str(&text)
            .with_context(|| format!("{} is not valid JSON; it was left as it is", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Value::Object(Default::default())),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// Writes through a temporary file and a rename, so a failure never leaves half a file.
fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let tmp = path.with_extension("json.cairn-tmp");
    std::fs::write(&tmp, text).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))
}
