//! Pattern extraction in the graph: what the job reads (pending sessions, their operations,
//! cross-session touches, decisions, related beliefs), what it writes in one transaction per
//! session (patterns, `EVIDENCED_BY`, `INFORMS`, proposed beliefs, stored convictions), and
//! the `ExtractionRun` record.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use super::{now_ms, param, statement, Store, StoreResult, Tx};
use crate::domain::conviction;

/// A closed session waiting for extraction.
#[derive(Clone, Debug, Deserialize)]
pub struct Pending {
    pub id: String,
    pub project: String,
}

/// Closed sessions of `project` (or every project) not yet extracted with `version`.
pub async fn pending(
    store: &Store,
    project: Option<&str>,
    since_ms: Option<i64>,
    version: &str,
    limit: i64,
) -> StoreResult<Vec<Pending>> {
    store
        .fetch(
            statement(include_str!(
                "../../cypher/extraction/sessions_pending.cypher"
            ))
            .param("project", project)
            .param("since", since_ms)
            .param("version", version)
            .param("now", now_ms())
            .param("limit", limit),
        )
        .await
}

/// Who claims sessions before the LLM sees them, and for how long a claim lives unrenewed.
#[derive(Clone, Copy, Debug)]
pub struct Claimant<'a> {
    pub holder: &'a str,
    pub ttl_ms: i64,
}

/// Claims the session for `who` unless it is extracted with `version` already or another
/// live claim is on it; true when `who` holds it now.
pub async fn take(
    store: &Store,
    who: Claimant<'_>,
    project: &str,
    session_id: &str,
    version: &str,
) -> StoreResult<bool> {
    #[derive(Deserialize)]
    struct Claimed {
        claimed: bool,
    }
    let now = now_ms();
    let row: Option<Claimed> = store
        .fetch_one(
            statement(include_str!("../../cypher/extraction/session_take.cypher"))
                .param("project", project)
                .param("session_id", session_id)
                .param("version", version)
                .param("holder", who.holder)
                .param("now", now)
                .param("until", now + who.ttl_ms.max(1)),
        )
        .await?;
    Ok(row.is_some_and(|r| r.claimed))
}

/// Extends `who`'s claims on `session_ids` by its time to live; how many it still held.
pub async fn renew(store: &Store, who: Claimant<'_>, session_ids: &[String]) -> StoreResult<i64> {
    #[derive(Deserialize)]
    struct Renewed {
        renewed: i64,
    }
    if session_ids.is_empty() {
        return Ok(0);
    }
    let row: Option<Renewed> = store
        .fetch_one(
            statement(include_str!("../../cypher/extraction/session_renew.cypher"))
                .param("ids", param(session_ids)?)
                .param("holder", who.holder)
                .param("until", now_ms() + who.ttl_ms.max(1)),
        )
        .await?;
    Ok(row.map_or(0, |r| r.renewed))
}

/// Drops `holder`'s claim on the session, so another run may try it.
pub async fn release(
    store: &Store,
    holder: &str,
    project: &str,
    session_id: &str,
) -> StoreResult<()> {
    store
        .run(
            statement(include_str!(
                "../../cypher/extraction/session_release.cypher"
            ))
            .param("project", project)
            .param("session_id", session_id)
            .param("holder", holder),
        )
        .await
}

#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct Touch {
    pub mode: String,
    pub path: String,
}

/// One operation as the extraction job sees it.
#[derive(Clone, Debug, Deserialize)]
pub struct OpRow {
    pub id: String,
    pub seq: i64,
    #[serde(rename = "type")]
    pub kind: String,
    pub target: Option<String>,
    pub summary: Option<String>,
    pub tool: Option<String>,
    pub status: String,
    pub role: Option<String>,
    pub content: Option<String>,
    pub at: i64,
    pub decision_id: Option<String>,
    #[serde(default)]
    pub touches: Vec<Touch>,
}

/// A session's task, summary and operations in `seq` order.
#[derive(Clone, Debug, Deserialize)]
pub struct SessionMaterial {
    pub task: Option<String>,
    pub summary: Option<String>,
    pub operations: Vec<OpRow>,
}

pub async fn session_material(
    store: &Store,
    project: &str,
    session_id: &str,
) -> StoreResult<Option<SessionMaterial>> {
    store
        .fetch_one(
            statement(include_str!(
                "../../cypher/extraction/session_operations.cypher"
            ))
            .param("project", project)
            .param("session_id", session_id),
        )
        .await
}

/// A read or write of a shared file in another session of the project.
#[derive(Clone, Debug, Deserialize)]
pub struct OtherTouch {
    pub session_id: String,
    pub id: String,
    pub seq: i64,
    pub mode: String,
    pub path: String,
}

pub async fn related_touches(
    store: &Store,
    project: &str,
    session_id: &str,
    paths: &[String],
    limit: i64,
) -> StoreResult<Vec<OtherTouch>> {
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    store
        .fetch(
            statement(include_str!(
                "../../cypher/extraction/related_touches.cypher"
            ))
            .param("project", project)
            .param("session_id", session_id)
            .param("paths", param(paths)?)
            .param("limit", limit),
        )
        .await
}

/// A decision of the session and how the project decided the same subject elsewhere.
#[derive(Clone, Debug, Deserialize)]
pub struct DecisionRow {
    pub id: String,
    pub subject: String,
    pub choice: String,
    pub operation_id: Option<String>,
    pub other_choices: Vec<String>,
    pub others: i64,
}

pub async fn session_decisions(
    store: &Store,
    project: &str,
    session_id: &str,
) -> StoreResult<Vec<DecisionRow>> {
    store
        .fetch(
            statement(include_str!(
                "../../cypher/extraction/session_decisions.cypher"
            ))
            .param("project", project)
            .param("session_id", session_id),
        )
        .await
}

/// A belief found by full-text search.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct RelatedBelief {
    pub id: String,
    pub content: String,
    pub conviction: f64,
    pub status: String,
    pub score: f64,
}

/// A Lucene query of plain words (`a OR b OR c`); `None` when no word is usable. Words only,
/// so nothing in stored text can break the query syntax.
pub fn fulltext_query(text: &str, max_words: usize) -> Option<String> {
    let mut seen = HashSet::new();
    let words: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 3)
        .map(str::to_lowercase)
        .filter(|w| !matches!(w.as_str(), "and" | "the" | "for" | "not" | "with" | "or"))
        .filter(|w| seen.insert(w.clone()))
        .take(max_words)
        .collect();
    (!words.is_empty()).then(|| words.join(" OR "))
}

/// `words` (from [`fulltext_query`]) among the beliefs of `project`, narrowed to the project
/// inside Lucene ([`crate::domain::lucene::project_clause`]).
fn related_query(project: &str, words: &str, limit: i64) -> neo4rs::Query {
    let narrow = crate::domain::lucene::project_clause(project);
    statement(include_str!(
        "../../cypher/extraction/beliefs_related.cypher"
    ))
    .param("project", project)
    .param("query", format!("{narrow} +content:({words})"))
    .param("limit", limit)
}

pub async fn related_beliefs(
    store: &Store,
    project: &str,
    query: &str,
    limit: i64,
) -> StoreResult<Vec<RelatedBelief>> {
    store.fetch(related_query(project, query, limit)).await
}

pub async fn related_beliefs_tx(
    tx: &mut Tx,
    project: &str,
    query: &str,
    limit: i64,
) -> StoreResult<Vec<RelatedBelief>> {
    tx.fetch(related_query(project, query, limit)).await
}

/// Marks the session extracted with `version` inside `tx` (its claim, if any, dropped); true
/// when it already was, so two runs racing on one session apply it once.
pub async fn claim(
    tx: &mut Tx,
    project: &str,
    session_id: &str,
    version: &str,
) -> StoreResult<bool> {
    #[derive(Deserialize)]
    struct Done {
        done: bool,
    }
    let rows: Vec<Done> = tx
        .fetch(
            statement(include_str!("../../cypher/extraction/session_claim.cypher"))
                .param("project", project)
                .param("session_id", session_id)
                .param("version", version)
                .param("now", now_ms()),
        )
        .await?;
    // A session purged meanwhile counts as done: there is nothing left to apply to.
    Ok(rows.first().is_none_or(|r| r.done))
}

/// A pattern to store: a mined candidate or an LLM finding.
#[derive(Clone, Debug, Serialize)]
pub struct PatternRow {
    pub id: String,
    /// `sequence`, `decision`, `co_change`, `retry_loop` (mined) or `llm`.
    pub kind: String,
    /// `mining` or `llm`.
    pub source: String,
    /// `candidate` (mined) or `extracted`.
    pub status: String,
    pub description: String,
    pub confidence: f64,
    pub evidence: Vec<String>,
    pub evidence_key: String,
    pub category: Option<String>,
    pub prompt_version: String,
    pub run_id: String,
    pub session_id: String,
    /// Sessions showing it (mined candidates).
    pub support: i64,
}

pub async fn merge_patterns(tx: &mut Tx, project: &str, rows: &[PatternRow]) -> StoreResult<()> {
    if rows.is_empty() {
        return Ok(());
    }
    tx.run(
        statement(include_str!(
            "../../cypher/extraction/patterns_merge.cypher"
        ))
        .param("project", project)
        .param("rows", param(rows)?)
        .param("now", now_ms()),
    )
    .await
}

#[derive(Clone, Debug, Serialize)]
pub struct NewProposed {
    pub id: String,
    pub content: String,
    pub category: Option<String>,
    pub content_key: String,
    pub prior: f64,
}

/// The belief a proposal ended up as: itself, or the one with the same content that a
/// concurrent session created first.
#[derive(Clone, Debug, Deserialize)]
pub struct Proposed {
    pub proposed: String,
    pub id: String,
    pub created: bool,
}

pub async fn create_proposed(
    tx: &mut Tx,
    project: &str,
    rows: &[NewProposed],
) -> StoreResult<Vec<Proposed>> {
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    tx.fetch(
        statement(include_str!(
            "../../cypher/extraction/beliefs_create.cypher"
        ))
        .param("project", project)
        .param("rows", param(rows)?)
        .param("now", now_ms()),
    )
    .await
}

#[derive(Clone, Debug, Serialize)]
pub struct InformsRow {
    pub pattern: String,
    pub belief: String,
    /// `supports` or `contradicts`.
    pub effect: String,
    pub weight: f64,
    /// When the evidence happened (its newest operation), so it decays from then.
    pub at: i64,
}

pub async fn informs(
    tx: &mut Tx,
    project: &str,
    run_id: &str,
    rows: &[InformsRow],
) -> StoreResult<()> {
    if rows.is_empty() {
        return Ok(());
    }
    tx.run(
        statement(include_str!("../../cypher/extraction/informs.cypher"))
            .param("project", project)
            .param("run_id", run_id)
            .param("rows", param(rows)?),
    )
    .await
}

/// Status of each named belief that exists in the project.
pub async fn belief_statuses(
    tx: &mut Tx,
    project: &str,
    ids: &[String],
) -> StoreResult<HashMap<String, String>> {
    #[derive(Deserialize)]
    struct Row {
        id: String,
        status: String,
    }
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    Ok(tx
        .fetch::<Row>(
            statement(include_str!(
                "../../cypher/extraction/beliefs_status.cypher"
            ))
            .param("project", project)
            .param("ids", param(ids)?),
        )
        .await?
        .into_iter()
        .map(|r| (r.id, r.status))
        .collect())
}

/// Content keys and evidence keys that already produced a rejected belief.
#[derive(Default, Debug)]
pub struct Rejected {
    pub content_keys: HashSet<String>,
    pub evidence_keys: HashSet<String>,
}

pub async fn rejected(
    tx: &mut Tx,
    project: &str,
    content_keys: &[String],
    evidence_keys: &[String],
) -> StoreResult<Rejected> {
    #[derive(Deserialize)]
    struct Row {
        content_key: Option<String>,
        evidence_keys: Vec<String>,
    }
    let rows: Vec<Row> = tx
        .fetch(
            statement(include_str!("../../cypher/extraction/rejected_keys.cypher"))
                .param("project", project)
                .param("content_keys", param(content_keys)?)
                .param("evidence_keys", param(evidence_keys)?),
        )
        .await?;
    let mut out = Rejected::default();
    for r in rows {
        out.content_keys.extend(r.content_key);
        out.evidence_keys.extend(r.evidence_keys);
    }
    Ok(out)
}

/// How convictions are recomputed: the half-life and the auto-approval threshold.
#[derive(Clone, Copy, Debug)]
pub struct ConvictionPolicy {
    pub half_life_ms: i64,
    pub auto_approve: Option<f64>,
}

/// A belief whose conviction was recomputed.
#[derive(Clone, Debug, Serialize)]
pub struct Recomputed {
    pub id: String,
    pub conviction: f64,
    pub status: String,
    pub auto_approved: bool,
}

/// Recomputes and stores the conviction of `ids` (every belief of the project when `None`)
/// from their evidence, at `now`. Proposed beliefs reaching the auto-approval threshold
/// become active.
pub async fn refresh_convictions(
    tx: &mut Tx,
    project: &str,
    ids: Option<&[String]>,
    policy: ConvictionPolicy,
    now: i64,
) -> StoreResult<Vec<Recomputed>> {
    #[derive(Deserialize)]
    struct Evidence {
        effect: String,
        weight: f64,
        at: i64,
    }
    #[derive(Deserialize)]
    struct Row {
        id: String,
        status: String,
        prior: f64,
        created_at: i64,
        evidence: Vec<Evidence>,
    }
    let ids = match ids {
        Some([]) => return Ok(Vec::new()),
        Some(ids) => Some(param(ids)?),
        None => None,
    };
    let rows: Vec<Row> = tx
        .fetch(
            statement(include_str!(
                "../../cypher/extraction/belief_evidence.cypher"
            ))
            .param("project", project)
            .param("ids", ids),
        )
        .await?;
    let out: Vec<Recomputed> = rows
        .into_iter()
        .map(|r| {
            let evidence: Vec<conviction::Evidence> = r
                .evidence
                .iter()
                .map(|e| conviction::Evidence {
                    supports: e.effect != "contradicts",
                    weight: e.weight,
                    // Evidence stamped ahead of this clock counts in full, as of now.
                    at: e.at.min(now),
                })
                .collect();
            let c = conviction::at(r.prior, r.created_at, policy.half_life_ms, &evidence, now);
            let auto_approved =
                r.status == "proposed" && policy.auto_approve.is_some_and(|t| c >= t);
            Recomputed {
                id: r.id,
                conviction: c,
                status: if auto_approved {
                    "active".into()
                } else {
                    r.status
                },
                auto_approved,
            }
        })
        .collect();
    if !out.is_empty() {
        tx.run(
            statement(include_str!(
                "../../cypher/extraction/belief_conviction_set.cypher"
            ))
            .param("project", project)
            .param("rows", param(&out)?)
            .param("now", now),
        )
        .await?;
    }
    Ok(out)
}

/// Announces a run (status `running`).
pub async fn run_create(
    store: &Store,
    id: &str,
    project: &str,
    mode: &str,
    prompt_version: &str,
) -> StoreResult<()> {
    store
        .run(
            statement(include_str!("../../cypher/extraction/run_create.cypher"))
                .param("id", id)
                .param("project", project)
                .param("mode", mode)
                .param("prompt_version", prompt_version)
                .param("now", now_ms()),
        )
        .await
}

/// What a finished run records.
pub struct RunRecord<'a> {
    pub id: &'a str,
    pub project: &'a str,
    pub mode: &'a str,
    pub prompt_version: &'a str,
    pub status: &'a str,
    pub started_at: i64,
    pub stats: &'a RunStats,
    pub errors: &'a [String],
}

pub async fn run_finish(store: &Store, r: &RunRecord<'_>) -> StoreResult<()> {
    store
        .run(
            statement(include_str!("../../cypher/extraction/run_finish.cypher"))
                .param("id", r.id)
                .param("project", r.project)
                .param("mode", r.mode)
                .param("prompt_version", r.prompt_version)
                .param("status", r.status)
                .param("started_at", r.started_at)
                .param("stats", param(r.stats)?)
                .param("errors", param(r.errors)?)
                .param("now", now_ms()),
        )
        .await
}

/// The figures of a run (per project).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, poem_openapi::Object)]
pub struct RunStats {
    /// Sessions analysed (applied or failed).
    pub sessions: i64,
    pub sessions_failed: i64,
    /// Candidate patterns found by deterministic mining.
    pub candidates: i64,
    /// Patterns stored from the LLM's answers.
    pub patterns: i64,
    pub beliefs_created: i64,
    pub beliefs_reinforced: i64,
    pub beliefs_contradicted: i64,
    /// Suggestions not proposed because the same content or evidence was rejected before.
    pub beliefs_suppressed: i64,
    /// Evidence ids in answers that are not operations of the analysed session.
    pub evidence_rejected: i64,
    pub llm_calls: i64,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
    /// Estimated cost from the configured prices per 1000 tokens.
    pub cost_estimate: f64,
    pub duration_ms: i64,
}

impl RunStats {
    pub fn add(&mut self, o: &RunStats) {
        self.sessions += o.sessions;
        self.sessions_failed += o.sessions_failed;
        self.candidates += o.candidates;
        self.patterns += o.patterns;
        self.beliefs_created += o.beliefs_created;
        self.beliefs_reinforced += o.beliefs_reinforced;
        self.beliefs_contradicted += o.beliefs_contradicted;
        self.beliefs_suppressed += o.beliefs_suppressed;
        self.evidence_rejected += o.evidence_rejected;
        self.llm_calls += o.llm_calls;
        self.prompt_tokens += o.prompt_tokens;
        self.completion_tokens += o.completion_tokens;
        self.cost_estimate += o.cost_estimate;
    }
}

/// An extraction run as stored.
#[derive(Clone, Debug, Deserialize, poem_openapi::Object)]
pub struct RunView {
    pub id: String,
    pub project: String,
    /// `running`, `completed`, `completed_with_errors` or `failed`.
    pub status: String,
    /// `llm` or `mining_only` (no LLM configured).
    pub mode: String,
    pub prompt_version: String,
    pub started_at: i64,
    pub finished_at: Option<i64>,
    /// One line per failed session: `<session id>: <error>`.
    pub errors: Vec<String>,
    pub sessions: i64,
    pub sessions_failed: i64,
    pub candidates: i64,
    pub patterns: i64,
    pub beliefs_created: i64,
    pub beliefs_reinforced: i64,
    pub beliefs_contradicted: i64,
    pub beliefs_suppressed: i64,
    pub evidence_rejected: i64,
    pub llm_calls: i64,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
    pub cost_estimate: f64,
    pub duration_ms: i64,
}

/// The `limit` newest extraction runs of `project`.
pub async fn run_list(store: &Store, project: &str, limit: i64) -> StoreResult<Vec<RunView>> {
    store
        .read()
        .fetch(
            statement(include_str!("../../cypher/extraction/runs_list.cypher"))
                .param("project", project)
                .param("limit", limit),
        )
        .await
}

pub async fn run_get(store: &Store, id: &str) -> StoreResult<Option<RunView>> {
    store
        .read()
        .fetch_one(
            statement(include_str!("../../cypher/extraction/run_get.cypher")).param("id", id),
        )
        .await
}
