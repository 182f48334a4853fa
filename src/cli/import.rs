//! `cairn import claude-code PATH…`: backfills sessions from Claude Code transcripts through
//! the HTTP API. A path is a `.jsonl` file, a session's directory (its `subagents/` files), or
//! any directory searched recursively (`~/.claude/projects`, one project's folder); files of
//! both layouts are read together so subagents become child sessions of the session that
//! launched them ([`transcript::assemble`]). Parents are sent before their children. Operation
//! ids come from the transcript (`<session>/<tool_use_id>`, `<session>/<line uuid>`), so
//! importing again stores nothing new. Unreadable lines are counted and reported, never fatal.

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use anyhow::Context;
use clap::{Args, Subcommand};
use serde_json::json;

use super::client::ClientSettings;
use crate::claude::{self, transcript};

/// Operations per request (the API takes up to 1000).
const BATCH: usize = 500;
/// A transcript whose last line is older than this is a finished session and is closed.
const FINISHED_AFTER: chrono::TimeDelta = chrono::TimeDelta::hours(4);

#[derive(Args, Debug)]
pub struct ImportArgs {
    #[command(subcommand)]
    pub source: ImportSource,
    #[command(flatten)]
    pub client: ClientSettings,
}

#[derive(Subcommand, Debug)]
pub enum ImportSource {
    /// Claude Code transcripts (`~/.claude/projects/*/*.jsonl`).
    ClaudeCode {
        /// Transcript files, or directories searched (recursively) for `.jsonl` files.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
}

/// What an import did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ImportReport {
    pub files: usize,
    /// Sessions sent, children included.
    pub sessions: usize,
    /// Of those, subagents' sessions.
    pub child_sessions: usize,
    pub operations: usize,
    pub bad_lines: usize,
    /// Lines that are no conversation, skipped on purpose, by kind (`progress`,
    /// `file-history-snapshot`, `compaction-run`, `not-a-turn`, …).
    pub skipped: std::collections::BTreeMap<String, usize>,
    pub failed_sessions: usize,
}

pub async fn run(args: ImportArgs) -> anyhow::Result<i32> {
    let report = import(&args).await?;
    println!(
        "imported {} sessions ({} of them subagents; {} operations) from {} files; {} unreadable lines skipped{}",
        report.sessions,
        report.child_sessions,
        report.operations,
        report.files,
        report.bad_lines,
        if report.failed_sessions > 0 {
            format!("; {} sessions failed (see above)", report.failed_sessions)
        } else {
            String::new()
        }
    );
    if !report.skipped.is_empty() {
        let kinds: Vec<String> = report
            .skipped
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        println!(
            "lines that are no conversation, skipped: {}",
            kinds.join(", ")
        );
    }
    Ok(if report.failed_sessions > 0 { 1 } else { 0 })
}

pub async fn import(args: &ImportArgs) -> anyhow::Result<ImportReport> {
    let ImportSource::ClaudeCode { paths } = &args.source;
    let mut files = Vec::new();
    for p in paths {
        collect(p, &mut files, true).with_context(|| format!("cannot read {}", p.display()))?;
    }
    files.sort();
    files.dedup();
    let mut report = ImportReport {
        files: files.len(),
        ..Default::default()
    };
    let bar = indicatif::ProgressBar::new(files.len() as u64).with_style(
        indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} files {wide_msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let mut transcripts = Vec::new();
    for f in &files {
        bar.set_message(f.display().to_string());
        let file =
            std::fs::File::open(f).with_context(|| format!("cannot open {}", f.display()))?;
        let t = transcript::parse(std::io::BufReader::new(file));
        if t.bad_lines > 0 {
            bar.suspend(|| eprintln!("{}: {} unreadable lines skipped", f.display(), t.bad_lines));
        }
        report.bad_lines += t.bad_lines;
        for (kind, n) in &t.skipped {
            *report.skipped.entry(kind.clone()).or_default() += n;
        }
        transcripts.push(t);
        bar.inc(1);
    }
    bar.finish_and_clear();
    let client = args.client.client(Duration::from_secs(5))?;
    let sessions = transcript::assemble(transcripts);
    let bar = indicatif::ProgressBar::new(sessions.len() as u64).with_style(
        indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} sessions {wide_msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    for s in sessions {
        let id = s.id.clone();
        bar.set_message(id.clone());
        match send(&args.client, &client, &s).await {
            Ok(n) => {
                report.sessions += 1;
                report.child_sessions += usize::from(s.parent.is_some());
                report.operations += n;
            }
            Err(err) => {
                report.failed_sessions += 1;
                bar.suspend(|| eprintln!("session {id}: {err:#}"));
            }
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(report)
}

/// `path` itself when it is a file named on the command line, with its session's
/// `<session>/subagents/` files when they are there; `.jsonl` files under a directory.
fn collect(path: &Path, out: &mut Vec<PathBuf>, named: bool) -> std::io::Result<()> {
    if path.is_dir() {
        for entry in std::fs::read_dir(path)? {
            collect(&entry?.path(), out, false)?;
        }
    } else if path.is_file() {
        if named || path.extension().is_some_and(|e| e == "jsonl") {
            out.push(path.to_path_buf());
        }
        let subagents = path.with_extension("").join("subagents");
        if named && subagents.is_dir() {
            collect(&subagents, out, false)?;
        }
    } else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "no such file or directory",
        ));
    }
    Ok(())
}

async fn send(
    settings: &ClientSettings,
    client: &reqwest::Client,
    s: &transcript::Session,
) -> anyhow::Result<usize> {
    let project = claude::project_for(settings.project.as_deref(), s.cwd.as_deref())
        .context("no project: set CAIRN_PROJECT (the transcript names no working directory)")?;
    let started = client
        .post(settings.endpoint("/v1/sessions"))
        .json(&s.start(&project))
        .send()
        .await?;
    check(started).await.context("starting the session")?;
    let url = settings.session_endpoint(&s.id, "operations")?;
    for batch in s.operations.chunks(BATCH) {
        let resp = client
            .post(url.clone())
            .query(&[("project", project.as_str())])
            .json(&json!({ "operations": batch }))
            .timeout(Duration::from_secs(60))
            .send()
            .await?;
        check(resp).await.context("sending operations")?;
    }
    let finished = s
        .last_at
        .as_deref()
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .is_some_and(|t| chrono::Utc::now().signed_duration_since(t) > FINISHED_AFTER);
    if s.summary.is_some() || finished {
        let resp = client
            .post(settings.session_endpoint(&s.id, "close")?)
            .query(&[("project", project.as_str())])
            .json(&s.close())
            .send()
            .await?;
        check(resp).await.context("closing the session")?;
    }
    Ok(s.operations.len())
}

async fn check(resp: reqwest::Response) -> anyhow::Result<()> {
    let status = resp.status();
    if status.is_success() {
        return Ok(());
    }
    let body = resp.text().await.unwrap_or_default();
    anyhow::bail!("cairn answered {status}: {body}")
}
