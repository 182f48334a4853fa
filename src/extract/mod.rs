//! The pattern-extraction job (nightly, `cairn extract` or `POST /v1/extraction/runs`): picks
//! closed sessions not yet extracted with the current prompt version, mines candidates
//! ([`mining`]), builds a token-budgeted digest ([`digest`]) and a versioned prompt
//! ([`prompt`]), asks the LLM once per session ([`llm`]), validates the answer ([`validate`])
//! and applies it in one transaction ([`apply`]). With no LLM configured it runs in
//! mining-only mode. [`Job::run_once`] is one run; it is idempotent: a second run finds
//! nothing to do. Each session is claimed in the graph before the LLM sees it, and the claim
//! renewed beside the run's work ([`heartbeat`]), so runs at the same time on other replicas
//! or from `cairn extract` send it to the LLM once per live claim. [`schedule`] runs the job itself
//! on a cron schedule under a lease. Nothing here knows about HTTP.

pub mod apply;
pub mod digest;
pub mod heartbeat;
pub mod llm;
pub mod mining;
pub mod prompt;
pub mod schedule;
pub mod validate;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures::StreamExt;

use crate::config::{Encoding, ExtractSettings};
use crate::domain::state::RunStatus;
use crate::graph::extraction::{self as g, ConvictionPolicy, RunRecord, RunStats};
use crate::graph::{now_ms, Store};
use llm::{LlmClient, Message};

/// The version mining-only runs claim sessions with (an LLM run still analyses them later).
pub const MINING_VERSION: &str = "mining_v1";
/// Other sessions' touches of shared files loaded for mining.
const MAX_OTHER_TOUCHES: i64 = 5_000;
/// Characters of an invalid answer echoed back with the validation error.
const MAX_ECHO_CHARS: usize = 4_000;

/// What to run over.
#[derive(Clone, Debug, Default)]
pub struct RunRequest {
    pub project: Option<String>,
    /// Only sessions closed at or after this instant (epoch ms).
    pub since_ms: Option<i64>,
    pub max_sessions: usize,
    /// Build and report each prompt; write nothing.
    pub dry_run: bool,
    /// The id of a run announced beforehand (the HTTP route); its project's run uses it.
    pub run_id: Option<String>,
}

/// One session's result.
#[derive(Clone, Debug)]
pub struct SessionReport {
    pub session_id: String,
    pub project: String,
    pub stats: RunStats,
    pub error: Option<String>,
    /// Another run had already applied it.
    pub skipped: bool,
    pub prompt: Option<PromptReport>,
}

/// A prompt as built (the text only in dry runs).
#[derive(Clone, Debug)]
pub struct PromptReport {
    pub session_id: String,
    pub tokens: usize,
    pub hint_tokens: usize,
    pub text: Option<String>,
}

/// One project's run record.
#[derive(Clone, Debug)]
pub struct ProjectRun {
    pub run_id: String,
    pub project: String,
    pub status: String,
    pub stats: RunStats,
}

/// What a run did.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// `llm` or `mining_only`.
    pub mode: &'static str,
    pub dry_run: bool,
    pub version: &'static str,
    pub total: RunStats,
    pub runs: Vec<ProjectRun>,
    pub errors: Vec<String>,
    pub prompts: Vec<PromptReport>,
    pub skipped: usize,
}

impl Outcome {
    pub fn failed(&self) -> bool {
        self.total.sessions_failed > 0
    }
}

/// Hooks for progress display; the default does nothing.
pub trait Progress: Send + Sync {
    fn start(&self, _sessions: usize) {}
    fn done(&self, _report: &SessionReport) {}
}

pub struct Silent;
impl Progress for Silent {}

pub struct Job {
    store: Store,
    settings: ExtractSettings,
    encoding: Encoding,
    policy: ConvictionPolicy,
    llm: Option<Arc<LlmClient>>,
}

/// Parses `24h`, `7d`, `30m`, `90s` into milliseconds.
pub fn parse_since(text: &str) -> Option<i64> {
    let t = text.trim();
    let unit = t.chars().last()?;
    let n: f64 = t[..t.len() - unit.len_utf8()].trim().parse().ok()?;
    let ms = match unit {
        's' => 1_000.0,
        'm' => 60_000.0,
        'h' => 3_600_000.0,
        'd' => 86_400_000.0,
        'w' => 7.0 * 86_400_000.0,
        _ => return None,
    };
    (n.is_finite() && n > 0.0 && n < 1e6).then_some((n * ms) as i64)
}

impl Job {
    pub fn new(
        store: Store,
        settings: ExtractSettings,
        encoding: Encoding,
        half_life_ms: i64,
    ) -> anyhow::Result<Self> {
        let llm = LlmClient::from_settings(&settings)?.map(Arc::new);
        Ok(Self {
            policy: ConvictionPolicy {
                half_life_ms,
                auto_approve: settings.auto_approve_conviction,
            },
            store,
            settings,
            encoding,
            llm,
        })
    }

    pub fn mode(&self) -> &'static str {
        if self.llm.is_some() {
            "llm"
        } else {
            "mining_only"
        }
    }

    pub fn version(&self) -> &'static str {
        if self.llm.is_some() {
            prompt::VERSION
        } else {
            MINING_VERSION
        }
    }

    /// One run over the pending sessions.
    #[tracing::instrument(name = "extraction", skip_all, fields(run.id = ?req.run_id, project = ?req.project, mode = self.mode()))]
    pub async fn run_once(
        &self,
        req: &RunRequest,
        progress: &dyn Progress,
    ) -> anyhow::Result<Outcome> {
        let started_ms = now_ms();
        let clock = Instant::now();
        let pending = g::pending(
            &self.store,
            req.project.as_deref(),
            req.since_ms,
            self.version(),
            req.max_sessions.clamp(1, 100_000) as i64,
        )
        .await?;
        tracing::info!(
            sessions = pending.len(),
            mode = self.mode(),
            prompt.version = self.version(),
            dry_run = req.dry_run,
            "extraction run started"
        );
        if self.llm.is_none() {
            tracing::info!("no LLM configured (CAIRN_LLM_BASE_URL): mining-only mode");
        }
        progress.start(pending.len());
        let concurrency = self.settings.llm_concurrency.max(1);
        let holder = format!(
            "{}:{}",
            crate::graph::lease::process_holder(),
            uuid::Uuid::now_v7().simple()
        );
        let claims = Claims {
            who: g::Claimant {
                holder: &holder,
                ttl_ms: self.settings.claim_ttl_ms(),
            },
            in_flight: Mutex::default(),
        };
        let work = futures::stream::iter(pending)
            .map(|p| {
                let claims = &claims;
                async move {
                    let report = self.session(&p, req, claims).await;
                    progress.done(&report);
                    report
                }
            })
            .buffer_unordered(concurrency)
            .collect::<Vec<SessionReport>>();
        let who = claims.who;
        let renew = |ids: Vec<String>| async move { g::renew(&self.store, who, &ids).await };
        let reports = claims.keep_alive(renew, work).await;

        let mut out = Outcome {
            mode: self.mode(),
            dry_run: req.dry_run,
            version: self.version(),
            ..Default::default()
        };
        let mut by_project: BTreeMap<String, (RunStats, Vec<String>)> = BTreeMap::new();
        if let (Some(p), Some(_)) = (&req.project, &req.run_id) {
            by_project.entry(p.clone()).or_default();
        }
        for r in reports {
            if r.skipped {
                out.skipped += 1;
                continue;
            }
            let entry = by_project.entry(r.project.clone()).or_default();
            entry.0.add(&r.stats);
            if let Some(e) = &r.error {
                entry.1.push(format!("{}: {e}", r.session_id));
            }
            out.prompts.extend(r.prompt);
        }
        let duration_ms = clock.elapsed().as_millis() as i64;
        for (project, (mut stats, errors)) in by_project {
            stats.duration_ms = duration_ms;
            let run_id = match (&req.project, &req.run_id) {
                (Some(p), Some(id)) if *p == project => id.clone(),
                _ => uuid::Uuid::now_v7().to_string(),
            };
            let status = if errors.is_empty() {
                RunStatus::Completed
            } else {
                RunStatus::CompletedWithErrors
            }
            .as_str();
            if !req.dry_run {
                // Decay moves every conviction, supported or not: store today's values.
                let mut tx = self.store.begin().await?;
                g::refresh_convictions(&mut tx, &project, None, self.policy, now_ms()).await?;
                tx.commit().await?;
                g::run_finish(
                    &self.store,
                    &RunRecord {
                        id: &run_id,
                        project: &project,
                        mode: self.mode(),
                        prompt_version: self.version(),
                        status,
                        started_at: started_ms,
                        stats: &stats,
                        errors: &errors,
                    },
                )
                .await?;
            }
            out.total.add(&stats);
            out.errors.extend(errors);
            out.runs.push(ProjectRun {
                run_id,
                project,
                status: status.into(),
                stats,
            });
        }
        out.total.duration_ms = duration_ms;
        record_metrics(&out);
        tracing::info!(
            sessions = out.total.sessions,
            sessions_failed = out.total.sessions_failed,
            patterns = out.total.patterns,
            candidates = out.total.candidates,
            beliefs_created = out.total.beliefs_created,
            prompt_tokens = out.total.prompt_tokens,
            completion_tokens = out.total.completion_tokens,
            cost_estimate = out.total.cost_estimate,
            duration_ms,
            "extraction run finished"
        );
        Ok(out)
    }

    async fn session(
        &self,
        p: &g::Pending,
        req: &RunRequest,
        claims: &Claims<'_>,
    ) -> SessionReport {
        let mut report = SessionReport {
            session_id: p.id.clone(),
            project: p.project.clone(),
            stats: RunStats {
                sessions: 1,
                ..Default::default()
            },
            error: None,
            skipped: false,
            prompt: None,
        };
        // Claimed before the LLM sees it, so concurrent runs (replicas, `cairn extract`) pay
        // for each session once; a dry run writes nothing, not even a claim.
        if !req.dry_run {
            match g::take(&self.store, claims.who, &p.project, &p.id, self.version()).await {
                Ok(true) => claims.hold(&p.id),
                Ok(false) => {
                    tracing::debug!(session.id = %p.id, "session claimed by another run or done");
                    report.skipped = true;
                    return report;
                }
                Err(e) => {
                    report.stats.sessions_failed = 1;
                    report.error = Some(format!("could not claim the session: {e}"));
                    return report;
                }
            }
        }
        let outcome = self.analyse(p, req, &mut report).await;
        if !req.dry_run {
            claims.drop_held(&p.id);
        }
        if let Err(e) = outcome {
            tracing::warn!(session.id = %p.id, project = %p.project, error = %e, "session extraction failed");
            report.stats.sessions_failed = 1;
            report.error = Some(e);
            if !req.dry_run {
                // Left claimed, it would wait for the claim to expire before a retry.
                if let Err(e) = g::release(&self.store, claims.who.holder, &p.project, &p.id).await
                {
                    tracing::debug!(session.id = %p.id, error = %e, "could not release the claim; it expires");
                }
            }
        }
        report.stats.cost_estimate = report.stats.prompt_tokens as f64 / 1000.0
            * self.settings.price_prompt_per_1k
            + report.stats.completion_tokens as f64 / 1000.0
                * self.settings.price_completion_per_1k;
        report
    }

    async fn analyse(
        &self,
        p: &g::Pending,
        req: &RunRequest,
        report: &mut SessionReport,
    ) -> Result<(), String> {
        let err = |e: crate::graph::StoreError| e.to_string();
        let material = g::session_material(&self.store, &p.project, &p.id)
            .await
            .map_err(err)?
            .ok_or("the session no longer exists")?;
        let ops = &material.operations;
        let paths = mining::touched_paths(ops);
        let others = g::related_touches(&self.store, &p.project, &p.id, &paths, MAX_OTHER_TOUCHES)
            .await
            .map_err(err)?;
        let decisions = g::session_decisions(&self.store, &p.project, &p.id)
            .await
            .map_err(err)?;
        let candidates = mining::mine(&mining::MiningInput {
            operations: ops,
            others: &others,
            decisions: &decisions,
        });
        let op_at: HashMap<String, i64> = ops.iter().map(|o| (o.id.clone(), o.at)).collect();
        let op_ids: HashSet<String> = op_at.keys().cloned().collect();
        report.stats.candidates = candidates.len() as i64;

        let mut findings = Vec::new();
        if let Some(llm) = &self.llm {
            let digest = digest::build(ops, self.settings.digest_tokens, self.encoding);
            let mut about = format!(
                "{} {} {}",
                material.task.as_deref().unwrap_or(""),
                material.summary.as_deref().unwrap_or(""),
                paths.join(" ")
            );
            for c in &candidates {
                about.push(' ');
                about.push_str(&c.description);
            }
            let beliefs = match g::fulltext_query(&about, 40) {
                Some(q) => g::related_beliefs(&self.store, &p.project, &q, prompt::MAX_BELIEFS)
                    .await
                    .map_err(err)?,
                None => Vec::new(),
            };
            let prompt = prompt::render(
                &prompt::PromptInput {
                    session_id: &p.id,
                    task: material.task.as_deref(),
                    summary: material.summary.as_deref(),
                    digest: &digest,
                    candidates: &candidates,
                    beliefs: &beliefs,
                },
                self.encoding,
            );
            report.prompt = Some(PromptReport {
                session_id: p.id.clone(),
                tokens: prompt.tokens,
                hint_tokens: prompt.hint_tokens,
                text: req
                    .dry_run
                    .then(|| format!("{}\n\n{}", prompt.system, prompt.user)),
            });
            if req.dry_run {
                return Ok(());
            }
            let validated = self.ask(llm, &prompt, &op_ids, &mut report.stats).await?;
            report.stats.evidence_rejected += validated.evidence_rejected as i64;
            findings = validated.findings;
        } else if req.dry_run {
            return Ok(());
        }

        let applied = apply::session(
            &self.store,
            &apply::SessionResults {
                project: &p.project,
                session_id: &p.id,
                run_id: req.run_id.as_deref().unwrap_or("cli"),
                version: self.version(),
                candidates: &candidates,
                findings: &findings,
                op_at: &op_at,
                policy: self.policy,
                match_threshold: self.settings.belief_match_threshold,
            },
        )
        .await
        .map_err(err)?;
        match applied {
            Some(s) => {
                let llm_stats = std::mem::take(&mut report.stats);
                report.stats = RunStats {
                    sessions: 1,
                    evidence_rejected: llm_stats.evidence_rejected,
                    llm_calls: llm_stats.llm_calls,
                    prompt_tokens: llm_stats.prompt_tokens,
                    completion_tokens: llm_stats.completion_tokens,
                    ..s
                };
                tracing::info!(
                    session.id = %p.id,
                    project = %p.project,
                    candidates = report.stats.candidates,
                    patterns = report.stats.patterns,
                    beliefs_created = report.stats.beliefs_created,
                    llm_calls = report.stats.llm_calls,
                    "session extracted"
                );
            }
            None => report.skipped = true,
        }
        Ok(())
    }

    /// One LLM call, and one more with the validation error when the answer is invalid.
    async fn ask(
        &self,
        llm: &LlmClient,
        prompt: &prompt::Prompt,
        op_ids: &HashSet<String>,
        stats: &mut RunStats,
    ) -> Result<validate::Validated, String> {
        let schema = prompt::schema();
        let mut messages = vec![
            Message::new("system", prompt.system.clone()),
            Message::new("user", prompt.user.clone()),
        ];
        for attempt in 0..2 {
            let answer = llm
                .complete(&messages, &schema)
                .await
                .map_err(|e| e.to_string())?;
            stats.llm_calls += 1;
            // Servers that report no usage: count the prompt ourselves.
            stats.prompt_tokens += if answer.prompt_tokens > 0 {
                answer.prompt_tokens as i64
            } else {
                prompt.tokens as i64
            };
            stats.completion_tokens += answer.completion_tokens as i64;
            match validate::answer(&answer.text, op_ids) {
                Ok(v) => return Ok(v),
                Err(e) if attempt == 0 => {
                    tracing::info!(error = %e, "invalid LLM answer; asking once more");
                    let echo: String = answer.text.chars().take(MAX_ECHO_CHARS).collect();
                    messages.push(Message::new("assistant", echo));
                    messages.push(Message::new(
                        "user",
                        format!(
                            "Your answer was rejected: {e}. Answer again with JSON only, \
                             matching the schema, citing only operation ids from the digest."
                        ),
                    ));
                }
                Err(e) => return Err(format!("invalid LLM answer after a retry: {e}")),
            }
        }
        Err("invalid LLM answer".into())
    }
}

/// A run's claims: whose they are, and the sessions in flight whose claims its heartbeat
/// renews (every third of their time to live) until the run is done.
struct Claims<'a> {
    who: g::Claimant<'a>,
    in_flight: Mutex<HashSet<String>>,
}

impl Claims<'_> {
    fn hold(&self, id: &str) {
        self.in_flight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.to_string());
    }

    fn drop_held(&self, id: &str) {
        self.in_flight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(id);
    }

    /// Awaits `work`, renewing the claims in flight meanwhile ([`heartbeat::beside`]).
    async fn keep_alive<T, R>(
        &self,
        renew: impl Fn(Vec<String>) -> R,
        work: impl std::future::Future<Output = T>,
    ) -> T
    where
        R: std::future::Future<Output = crate::graph::StoreResult<i64>>,
    {
        let beat = || async {
            let ids: Vec<String> = self
                .in_flight
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .cloned()
                .collect();
            let n = ids.len();
            if let Err(e) = renew(ids).await {
                tracing::warn!(error = %e, sessions = n, "could not renew the extraction claims");
            }
        };
        heartbeat::beside(work, heartbeat::every_third_of(self.who.ttl_ms), beat).await
    }
}

fn record_metrics(out: &Outcome) {
    if out.dry_run {
        return;
    }
    let t = &out.total;
    metrics::counter!("cairn_extract_runs_total", "mode" => out.mode).increment(1);
    metrics::counter!("cairn_extract_sessions_total", "outcome" => "applied")
        .increment((t.sessions - t.sessions_failed).max(0) as u64);
    metrics::counter!("cairn_extract_sessions_total", "outcome" => "failed")
        .increment(t.sessions_failed.max(0) as u64);
    metrics::counter!("cairn_extract_patterns_total").increment(t.patterns.max(0) as u64);
    metrics::counter!("cairn_extract_candidates_total").increment(t.candidates.max(0) as u64);
    for (kind, n) in [
        ("created", t.beliefs_created),
        ("reinforced", t.beliefs_reinforced),
        ("contradicted", t.beliefs_contradicted),
        ("suppressed", t.beliefs_suppressed),
    ] {
        metrics::counter!("cairn_extract_beliefs_total", "effect" => kind)
            .increment(n.max(0) as u64);
    }
    metrics::counter!("cairn_extract_evidence_rejected_total")
        .increment(t.evidence_rejected.max(0) as u64);
    metrics::counter!("cairn_extract_llm_calls_total").increment(t.llm_calls.max(0) as u64);
    metrics::counter!("cairn_extract_tokens_total", "kind" => "prompt")
        .increment(t.prompt_tokens.max(0) as u64);
    metrics::counter!("cairn_extract_tokens_total", "kind" => "completion")
        .increment(t.completion_tokens.max(0) as u64);
    metrics::gauge!("cairn_extract_last_run_cost_estimate").set(t.cost_estimate);
    metrics::histogram!("cairn_extract_run_seconds").record(t.duration_ms as f64 / 1000.0);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A renewal that waits for the run's own work (its commit holds the session's lock)
    /// must not stop that work: the two go on side by side.
    #[tokio::test]
    async fn a_renewal_waiting_on_the_work_does_not_stall_it() {
        let claims = Claims {
            who: g::Claimant {
                holder: "test",
                ttl_ms: 300,
            },
            in_flight: Mutex::default(),
        };
        claims.hold("s1");
        let renewing = tokio::sync::Notify::new();
        let committed = tokio::sync::Notify::new();
        let renew = |_ids: Vec<String>| async {
            renewing.notify_one();
            committed.notified().await;
            Ok(1)
        };
        let work = async {
            renewing.notified().await;
            committed.notify_one();
            7
        };
        let out = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            claims.keep_alive(renew, work),
        )
        .await;
        assert_eq!(out, Ok(7), "the work finished while a renewal waited on it");
    }

    #[test]
    fn since_parses_units() {
        assert_eq!(super::parse_since("24h"), Some(86_400_000));
        assert_eq!(super::parse_since("7d"), Some(7 * 86_400_000));
        assert_eq!(super::parse_since("30m"), Some(1_800_000));
        assert_eq!(super::parse_since("soon"), None);
        assert_eq!(super::parse_since("-1h"), None);
    }
}
