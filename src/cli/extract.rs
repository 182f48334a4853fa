//! `cairn extract`: one run of the pattern-extraction job. A progress bar on a terminal,
//! structured logs otherwise; a summary at the end; exit code 1 when any session failed.

use std::io::IsTerminal;

use anyhow::Context;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};

use crate::config::{Encoding, ExtractSettings, Neo4jSettings};
use crate::extract::{self, Job, Outcome, Progress, RunRequest, SessionReport};
use crate::graph::{now_ms, Store};

#[derive(Args, Clone, Debug)]
pub struct ExtractArgs {
    #[command(flatten)]
    pub neo4j: Neo4jSettings,
    #[command(flatten)]
    pub extract: ExtractSettings,
    /// Only this project (default: every project).
    #[arg(long, env = "CAIRN_PROJECT")]
    pub project: Option<String>,
    /// Only sessions closed within this long (`24h`, `7d`, `30m`).
    #[arg(long)]
    pub since: Option<String>,
    /// Sessions analysed in this run at most.
    #[arg(long, default_value_t = 500)]
    pub max_sessions: usize,
    /// Sessions analysed (and LLM requests in flight) at once; overrides --llm-concurrency.
    #[arg(long)]
    pub concurrency: Option<usize>,
    /// Print each prompt and its token count; write nothing, call no LLM.
    #[arg(long)]
    pub dry_run: bool,
    /// Tokenizer for the digest budget and prompt token counts.
    #[arg(
        long,
        env = "CAIRN_TOKENIZER",
        value_enum,
        default_value = "o200k_base"
    )]
    pub tokenizer: Encoding,
    /// Half-life of belief evidence, in days.
    #[arg(long, env = "CAIRN_BELIEF_HALF_LIFE_DAYS", default_value_t = 90.0)]
    pub belief_half_life_days: f64,
}

struct Bar(ProgressBar);

impl Progress for Bar {
    fn start(&self, sessions: usize) {
        self.0.set_length(sessions as u64);
    }
    fn done(&self, report: &SessionReport) {
        self.0.set_message(report.session_id.clone());
        self.0.inc(1);
    }
}

pub async fn run(args: ExtractArgs) -> anyhow::Result<i32> {
    let since_ms = match args.since.as_deref() {
        Some(s) => Some(
            now_ms()
                - extract::parse_since(s).with_context(|| {
                    format!("--since {s:?}: use a number and a unit, like 24h, 7d or 30m")
                })?,
        ),
        None => None,
    };
    if args.max_sessions == 0 {
        anyhow::bail!("--max-sessions must be at least 1");
    }
    let mut settings = args.extract.clone();
    if let Some(n) = args.concurrency {
        anyhow::ensure!(
            (1..=64).contains(&n),
            "--concurrency must be between 1 and 64"
        );
        settings.llm_concurrency = n;
    }
    let store = Store::connect(&args.neo4j).context("invalid Neo4j settings")?;
    let job = Job::new(
        store,
        settings,
        args.tokenizer,
        (args.belief_half_life_days * 86_400_000.0) as i64,
    )?;
    if job.mode() == "mining_only" {
        eprintln!("no LLM configured (CAIRN_LLM_BASE_URL): mining-only mode");
    }
    let req = RunRequest {
        project: args.project.clone(),
        since_ms,
        max_sessions: args.max_sessions,
        dry_run: args.dry_run,
        run_id: None,
    };
    let outcome = if std::io::stderr().is_terminal() {
        let bar = ProgressBar::new(0).with_style(
            ProgressStyle::with_template("{bar:40} {pos}/{len} sessions {elapsed} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        let progress = Bar(bar.clone());
        let out = job.run_once(&req, &progress).await;
        bar.finish_and_clear();
        out
    } else {
        job.run_once(&req, &extract::Silent).await
    }
    .with_context(|| {
        format!(
            "extraction failed against {}; is Neo4j running (scripts/neo4j-local status)?",
            args.neo4j.uri
        )
    })?;
    print!("{}", summary(&outcome));
    Ok(if outcome.failed() { 1 } else { 0 })
}

/// The text printed at the end of a run (and each prompt in a dry run).
pub fn summary(o: &Outcome) -> String {
    let mut out = String::new();
    for p in &o.prompts {
        if let Some(text) = &p.text {
            out.push_str(&format!(
                "===== session {} — {} prompt tokens ({} in mining hints) =====\n{text}\n\n",
                p.session_id, p.tokens, p.hint_tokens
            ));
        }
    }
    let t = &o.total;
    out.push_str(&format!(
        "extraction {}{} ({}): {} sessions, {} failed, {} skipped; {} candidates, {} patterns; \
         beliefs {} created, {} reinforced, {} contradicted, {} suppressed; {} evidence ids rejected; \
         {} LLM calls, {} prompt + {} completion tokens, est. cost {:.4}; {} ms\n",
        o.mode,
        if o.dry_run { ", dry run: nothing written" } else { "" },
        o.version,
        t.sessions,
        t.sessions_failed,
        o.skipped,
        t.candidates,
        t.patterns,
        t.beliefs_created,
        t.beliefs_reinforced,
        t.beliefs_contradicted,
        t.beliefs_suppressed,
        t.evidence_rejected,
        t.llm_calls,
        t.prompt_tokens,
        t.completion_tokens,
        t.cost_estimate,
        t.duration_ms
    ));
    for r in &o.runs {
        if !o.dry_run {
            out.push_str(&format!("run {} ({}): {}\n", r.run_id, r.project, r.status));
        }
    }
    for e in &o.errors {
        out.push_str(&format!("failed: {e}\n"));
    }
    out
}
