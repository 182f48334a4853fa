//! `cairn-bench hooks`: the Claude Code command hook as Claude Code runs it — one `cairn hook
//! claude-code` process per event, timed from spawn to exit — against a `cairn serve` child
//! whose project holds `--sessions` closed sessions (1,000 by default) with summaries, todos
//! and decisions. Reports, per event type, p50/p99 of the whole process with cairn up and with
//! cairn down (events spooled), next to the baseline of a process that only starts and exits
//! (`cairn --version`); then the share of SessionStarts answered with context under the
//! *default* deadlines while every core is kept busy.

use std::{
    path::Path,
    process::Stdio,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use anyhow::Context as _;
use clap::Args;
use futures::StreamExt;
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;

use super::{ms, quantile};
use cairn::config::Neo4jSettings;
use cairn_testkit::child::ServeChild;

#[derive(Args, Debug, Clone)]
pub struct HooksArgs {
    /// Closed sessions seeded in the project before measuring.
    #[arg(long, default_value_t = 1_000)]
    pub sessions: usize,
    /// Hook processes per event type and state (cairn up, cairn down).
    #[arg(long, default_value_t = 40)]
    pub runs: usize,
    /// SessionStarts measured while the machine is loaded.
    #[arg(long, default_value_t = 50)]
    pub loaded_runs: usize,
    /// Busy threads per core while loaded.
    #[arg(long, default_value_t = 2)]
    pub load_per_core: usize,
    #[command(flatten)]
    pub neo4j: Neo4jSettings,
    #[command(flatten)]
    pub cairn: crate::CairnBin,
}

/// One event type's timings.
pub struct EventRow {
    pub event: &'static str,
    pub up_p50: Duration,
    pub up_p99: Duration,
    pub down_p50: Duration,
    pub down_p99: Duration,
    /// Runs whose reply carried `additionalContext` (cairn up).
    pub answered: usize,
}

pub struct HooksReport {
    pub sessions: usize,
    pub runs: usize,
    pub baseline_p50: Duration,
    pub baseline_p99: Duration,
    pub rows: Vec<EventRow>,
    pub loaded_runs: usize,
    pub loaded_answered: usize,
    pub loaded_p99: Duration,
    pub busy_threads: usize,
}

/// The events measured: `(name, fields besides the common ones)`.
fn events(tag: &str) -> Vec<(&'static str, Value)> {
    vec![
        ("SessionStart", json!({"source": "startup"})),
        (
            "UserPromptSubmit",
            json!({"prompt": format!("continue the coupon work {tag}")}),
        ),
        (
            "PreToolUse",
            json!({"tool_name": "Edit", "tool_use_id": format!("toolu_pre_{tag}"),
            "tool_input": {"file_path": "/home/dev/shop/src/cart.rs", "old_string": "a", "new_string": "b"}}),
        ),
        (
            "PostToolUse",
            json!({"tool_name": "Bash", "tool_use_id": format!("toolu_post_{tag}"),
            "tool_input": {"command": "cargo test"}, "tool_response": {"stdout": "ok", "stderr": ""},
            "duration_ms": 1200}),
        ),
        (
            "SubagentStart",
            json!({"agent_id": format!("a{tag}"), "agent_type": "Explore"}),
        ),
        (
            "SubagentStop",
            json!({"agent_id": format!("a{tag}"), "agent_type": "Explore",
            "stop_hook_active": false, "agent_transcript_path": "/tmp/a.jsonl",
            "last_assistant_message": "found it"}),
        ),
        (
            "Stop",
            json!({"stop_hook_active": false, "last_assistant_message": "done"}),
        ),
        (
            "PostCompact",
            json!({"trigger": "auto", "compact_summary": "coupon work, tests open"}),
        ),
        (
            "Notification",
            json!({"message": "waiting", "notification_type": "idle_prompt"}),
        ),
        ("SessionEnd", json!({"reason": "other"})),
    ]
}

fn event(name: &str, session: &str, extra: &Value) -> Value {
    let mut v = json!({"hook_event_name": name, "session_id": session, "cwd": "/home/dev/shop",
                       "transcript_path": "/tmp/t.jsonl"});
    if let (Some(o), Some(e)) = (v.as_object_mut(), extra.as_object()) {
        o.extend(e.clone());
    }
    v
}

/// Runs one hook process with `stdin`; returns its wall time and stdout.
async fn hook_process(
    exe: &Path,
    url: &str,
    project: &str,
    spool: &Path,
    stdin: &[u8],
) -> anyhow::Result<(Duration, String)> {
    let started = Instant::now();
    let mut child = tokio::process::Command::new(exe)
        .args(["hook", "--url", url, "--project", project, "--spool-dir"])
        .arg(spool)
        .arg("claude-code")
        .env_remove("CAIRN_HOOK_DEADLINE_MS")
        .env_remove("CAIRN_HOOK_SESSION_START_DEADLINE_MS")
        .env_remove("CAIRN_HOOK_PROMPT_DEADLINE_MS")
        .env_remove("CAIRN_HOOK_PRE_TOOL_DEADLINE_MS")
        .env("RUST_LOG", "error")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("could not start the hook")?;
    let mut input = child.stdin.take().context("hook stdin")?;
    input.write_all(stdin).await?;
    drop(input);
    let out = child.wait_with_output().await?;
    Ok((
        started.elapsed(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    ))
}

async fn baseline(exe: &Path, runs: usize) -> anyhow::Result<Vec<Duration>> {
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs {
        let started = Instant::now();
        tokio::process::Command::new(exe)
            .arg("--version")
            .stdout(Stdio::null())
            .status()
            .await?;
        samples.push(started.elapsed());
    }
    Ok(samples)
}

/// Seeds `n` closed sessions (one todo list, one edit, a summary) and a few decisions.
async fn seed(http: &reqwest::Client, base: &str, project: &str, n: usize) -> anyhow::Result<()> {
    let results: Vec<anyhow::Result<()>> = futures::stream::iter(0..n)
        .map(|i| {
            let (http, base, project) = (http.clone(), base.to_string(), project.to_string());
            async move {
                let id = format!("{project}-s{i:05}");
                http.post(format!("{base}/v1/sessions"))
                    .json(&json!({"project": project, "session_id": id, "agent": "claude-code",
                                  "task": format!("work item {i} on module {}", i % 23), "cwd": "/home/dev/shop"}))
                    .send().await?.error_for_status()?;
                http.post(format!("{base}/v1/sessions/{id}/operations"))
                    .json(&json!({"operations": [
                        {"type": "write", "summary": format!("edited module {}", i % 23), "files_modified": [format!("src/m{}.rs", i % 23)]},
                        {"type": "todo", "todos": [{"content": format!("finish item {i}"), "status": "in_progress"}]}]}))
                    .send().await?.error_for_status()?;
                http.post(format!("{base}/v1/sessions/{id}/close"))
                    .json(&json!({"summary": format!("Item {i} half done."), "next_steps": [format!("test item {i}")]}))
                    .send().await?.error_for_status()?;
                Ok(())
            }
        })
        .buffer_unordered(16)
        .collect()
        .await;
    results.into_iter().collect::<anyhow::Result<Vec<()>>>()?;
    for (subject, choice) in [("money", "integer cents"), ("cart store", "Neo4j")] {
        http.post(format!("{base}/v1/decisions"))
            .json(&json!({"project": project, "subject": subject, "choice": choice,
                          "alternatives": ["f64"], "rationale": "seeded", "files": ["src/cart.rs"]}))
            .send()
            .await?
            .error_for_status()?;
    }
    Ok(())
}

pub async fn run(args: HooksArgs) -> anyhow::Result<HooksReport> {
    let exe = args.cairn.path()?;
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()?;
    let server = ServeChild::start(&exe, &args.neo4j, &http).await?;
    let base = server.base.clone();
    let project = format!(
        "bench-hooks-{}",
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    );
    let seeded = Instant::now();
    seed(&http, &base, &project, args.sessions).await?;
    eprintln!(
        "seeded {} sessions in {:.1}s",
        args.sessions,
        seeded.elapsed().as_secs_f64()
    );
    // Let the writer drain, so the handover sees the seeded sessions.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let work = std::env::temp_dir().join(format!(
        "cairn-bench-hooks-{}",
        uuid::Uuid::new_v4().simple()
    ));
    let down = {
        let l = std::net::TcpListener::bind("127.0.0.1:0")?;
        format!("http://{}", l.local_addr()?)
    };
    let mut base_samples = baseline(&exe, args.runs).await?;
    let mut rows = Vec::new();
    for (i, (name, _)) in events("x").into_iter().enumerate() {
        let mut up = Vec::new();
        let mut downs = Vec::new();
        let mut answered = 0;
        for r in 0..args.runs {
            let tag = format!("{i}-{r}");
            let extra = events(&tag)
                .into_iter()
                .nth(i)
                .map(|(_, e)| e)
                .unwrap_or_default();
            let session = format!("{project}-hook-{r}");
            let stdin = event(name, &session, &extra).to_string();
            let (t, out) =
                hook_process(&exe, &base, &project, &work.join("up"), stdin.as_bytes()).await?;
            if out.contains("additionalContext") {
                answered += 1;
            }
            up.push(t);
            let (t, _) =
                hook_process(&exe, &down, &project, &work.join("down"), stdin.as_bytes()).await?;
            downs.push(t);
        }
        rows.push(EventRow {
            event: name,
            up_p50: quantile(&mut up, 0.5),
            up_p99: quantile(&mut up, 0.99),
            down_p50: quantile(&mut downs, 0.5),
            down_p99: quantile(&mut downs, 0.99),
            answered,
        });
    }

    // Loaded: every core kept busy while SessionStarts run with the default deadlines.
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let busy_threads = cores * args.load_per_core;
    let stop = Arc::new(AtomicBool::new(false));
    let burners: Vec<_> = (0..busy_threads)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut x = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                    std::hint::black_box(x);
                }
            })
        })
        .collect();
    let mut loaded = Vec::new();
    let mut loaded_answered = 0;
    for r in 0..args.loaded_runs {
        let session = format!("{project}-loaded-{r}");
        let stdin = event("SessionStart", &session, &json!({"source": "startup"})).to_string();
        let (t, out) = hook_process(
            &exe,
            &base,
            &project,
            &work.join("loaded"),
            stdin.as_bytes(),
        )
        .await?;
        if out.contains("additionalContext") {
            loaded_answered += 1;
        }
        loaded.push(t);
    }
    stop.store(true, Ordering::Relaxed);
    for b in burners {
        let _ = b.join();
    }
    // The seeded project would otherwise wait in the shared Neo4j's search-index queue of
    // every cairn that uses it.
    if let Err(err) = http
        .delete(format!("{base}/v1/projects/{project}"))
        .send()
        .await
    {
        eprintln!("could not purge the bench project {project}: {err}");
    }
    let probe = format!("{base}/v1/sessions/{project}-s00000");
    for _ in 0..600 {
        match http.get(&probe).send().await {
            Ok(r) if r.status() == reqwest::StatusCode::NOT_FOUND => break,
            _ => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    server.stop().await;
    let _ = std::fs::remove_dir_all(&work);
    Ok(HooksReport {
        sessions: args.sessions,
        runs: args.runs,
        baseline_p50: quantile(&mut base_samples, 0.5),
        baseline_p99: quantile(&mut base_samples, 0.99),
        rows,
        loaded_runs: args.loaded_runs,
        loaded_answered,
        loaded_p99: quantile(&mut loaded, 0.99),
        busy_threads,
    })
}

pub fn print(r: &HooksReport) {
    println!(
        "hook processes ({} runs per event and state; project of {} closed sessions)",
        r.runs, r.sessions
    );
    println!(
        "baseline `cairn --version`: p50 {:.1} ms, p99 {:.1} ms",
        ms(r.baseline_p50),
        ms(r.baseline_p99)
    );
    println!("| event | up p50 ms | up p99 ms | down p50 ms | down p99 ms | answered with context (up) |");
    println!("| --- | --- | --- | --- | --- | --- |");
    for row in &r.rows {
        println!(
            "| {} | {:.1} | {:.1} | {:.1} | {:.1} | {}/{} |",
            row.event,
            ms(row.up_p50),
            ms(row.up_p99),
            ms(row.down_p50),
            ms(row.down_p99),
            row.answered,
            r.runs
        );
    }
    println!(
        "loaded ({} busy threads): {}/{} SessionStarts answered with context under the default deadline ({:.0} %), p99 {:.1} ms",
        r.busy_threads,
        r.loaded_answered,
        r.loaded_runs,
        100.0 * r.loaded_answered as f64 / r.loaded_runs.max(1) as f64,
        ms(r.loaded_p99)
    );
}
