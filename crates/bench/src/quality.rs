//! `cairn-bench recall-quality`: how much of what answers a question does cairn hand back?
//!
//! A public data set of long multi-session conversations with annotated evidence turns (by
//! default the LoCoMo extract in `tests/fixtures/locomo`, see its `SOURCE`; LoCoMo's and
//! LongMemEval's files as published, [`crate::dataset`]) is captured through
//! the real path — each conversation a project, each session a cairn session, each turn a
//! `message` operation posted to an in-process server — and indexed by the real indexers with
//! the configured embedder. Then every question with evidence is asked, for fulltext only,
//! vectors only and hybrid, side by side:
//!
//! - evidence recall at each budget: the share of the question's evidence turns whose text is
//!   in the task context (`task` = the question);
//! - session recall@5: the share of the evidence's sessions among the first five sessions
//!   search finds for the question; MRR of the first of them;
//! - turn recall@10: the share of the evidence turns among the first ten turns turn search
//!   (`POST /v1/search`, `cairn search`) finds for the question;
//! - p50 / p95 latency of context assembly, of session search and of turn search, and the
//!   tokens used;
//! - the same evidence recall for the baseline of the same run: plain BM25 over the
//!   conversation's turns filling the whole budget ([`crate::plain_bm25`]), and each mode's
//!   ratio to it;
//! - evidence and session recall again for the questions that name a time and for each of
//!   the data set's question categories (`--dump FILE`: the same per question, with where
//!   each evidence turn ranks).
//!
//! Nothing is tuned here: the figures are what a user's configuration gives.

use std::collections::{HashMap, HashSet};
use std::io::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::{Args, Parser};
use serde_json::{json, Value};

use cairn::app::Application;
use cairn::config::Settings;
use cairn::domain::budget::Allocation;
use cairn::domain::limits::MAX_CONTENT_CHARS;
use cairn::domain::when;
use cairn::recall::context::{self, Finder};
use cairn::recall::search::{self, Lists, Weights};
use cairn::recall::turns;
use cairn::state::AppState;

use crate::dataset::{
    self, check_dates, parse_date, Conversation, DataSession, DataSet, Question, Turn, DEFAULT_DATA,
};
use crate::plain_bm25;

/// Context budgets evidence recall is measured at.
const BUDGETS: [usize; 3] = [500, 1_000, 2_000];
/// Sessions search is judged on its first this many.
const TOP_SESSIONS: usize = 5;
/// Turns a turn search returns, as `cairn search` asks for by default.
const TOP_TURNS: usize = 10;
/// Questions asked, per mode, before timing starts.
const WARM_UP: usize = 10;

#[derive(Args, Debug)]
pub struct QualityBench {
    #[command(flatten)]
    pub settings: Settings,
    /// The data set: LoCoMo's `locomo10.json` or LongMemEval's files as published (a file of
    /// instances, or a folder of one-instance files), or the bench's shape `{conversations:
    /// [{id, speakers, sessions: [{date, turns: [{id, speaker, text}]}], questions:
    /// [{question, evidence: [turn id]}]}]}` with dates as RFC 3339, ISO ("2023-05-08
    /// 13:56"), LongMemEval ("2023/05/08 (Mon) 13:56") or LoCoMo ("1:56 pm on 8 May, 2023")
    /// write them (`dataset`).
    #[arg(long, default_value = DEFAULT_DATA)]
    pub data: PathBuf,
    /// Use only the first N conversations.
    #[arg(long)]
    pub conversations: Option<usize>,
    /// Ask at most N questions per conversation (the first ones).
    #[arg(long)]
    pub questions: Option<usize>,
    /// Keep the projects instead of purging them (their run id is printed).
    #[arg(long)]
    pub keep: bool,
    /// Ask again on the projects a run with `--keep` left (its run id), capturing nothing.
    #[arg(long, value_name = "RUN")]
    pub reuse: Option<String>,
    /// Only these modes (`fulltext`, `vectors`, `hybrid`); all three by default.
    #[arg(long, value_delimiter = ',')]
    pub modes: Vec<String>,
    /// Skip asking the questions as prompts through the command hook.
    #[arg(long)]
    pub no_prompts: bool,
    /// Write one JSON line per question and mode to this file: the question, its category,
    /// each evidence turn with whether each budget's context held it and its rank in turn
    /// search (of 200), the sessions found first, turn search's 200 hits (session, seq,
    /// score, similarity, matched by) and session search's 50 best (session, similarity,
    /// score) — for studying a ranking offline.
    #[arg(long, value_name = "FILE")]
    pub dump: Option<PathBuf>,
    /// Ask as if the index were behind: the vectors of this share of each conversation's
    /// sessions (spread evenly; their operations', passages' and documents' vectors) are
    /// marked as another model's while the questions are asked — as after a switch of models,
    /// or before the indexer reaches them — and unmarked after. 0 (the default): everything
    /// embedded.
    #[arg(long, default_value_t = 0.0, value_name = "SHARE", value_parser = share)]
    pub waiting: f64,
}

/// A share, 0 to 1.
fn share(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if (0.0..=1.0).contains(&x) => Ok(x),
        _ => Err(format!("`{s}` is not a share from 0 to 1")),
    }
}

/// The model `--waiting` says made the vectors it holds back.
const WAITING_MODEL: &str = "bench:waiting";

/// The sessions of a conversation of `sessions` sessions in `project` that `--waiting share`
/// holds back, spread evenly (a half: every second one).
fn waiting_sessions(project: &str, sessions: usize, share: f64) -> Vec<String> {
    (0..sessions)
        .filter(|&i| ((i + 1) as f64 * share).floor() > (i as f64 * share).floor())
        .map(|i| format!("{project}-s{}", i + 1))
        .collect()
}

/// The model whose vectors `--waiting` holds back: the configured one, when a share is asked
/// for and vectors are made at all. The hold-back and the give-back both ask here.
fn held_back_model(b: &QualityBench, state: &AppState) -> Option<String> {
    let e = state.embedder.as_deref().filter(|_| b.waiting > 0.0)?;
    Some(e.model().to_string())
}

/// Relabels the vectors of the sessions `--waiting share` holds back from the model `from` to
/// `to`; how many sessions, operations and passages moved.
async fn relabel_waiting(
    state: &AppState,
    data: &[Conversation],
    loaded: &[Loaded],
    share: f64,
    from: &str,
    to: &str,
) -> anyhow::Result<Value> {
    let mut moved = [0i64; 3];
    for (conv, l) in data.iter().zip(loaded) {
        let sessions = waiting_sessions(&l.project, conv.sessions.len(), share);
        let rows = state
            .store
            .rows(
                cairn::graph::statement(include_str!("../cypher/bench_quality_waiting.cypher"))
                    .param("project", l.project.as_str())
                    .param("sessions", sessions)
                    .param("from", from)
                    .param("to", to),
            )
            .await?;
        if let Some(r) = rows.first() {
            for (m, k) in moved.iter_mut().zip(["sessions", "operations", "passages"]) {
                *m += r.get::<i64>(k)?;
            }
        }
    }
    Ok(json!({"share": share, "sessions": moved[0], "operations": moved[1], "passages": moved[2]}))
}

/// The id of the operation a turn is captured as in `project`.
fn operation_id(project: &str, turn: &str) -> String {
    format!("{project}-{turn}")
}

/// The text a turn is stored with: who said it, then what was said — cut to the longest
/// content capture takes ([`MAX_CONTENT_CHARS`]; a few of LongMemEval's turns are longer).
fn turn_content(t: &Turn) -> String {
    format!("{}: {}", t.speaker, t.text)
        .chars()
        .take(MAX_CONTENT_CHARS)
        .collect()
}

/// Whitespace runs as one space: the context joins and trims lines its own way.
fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Where each conversation went.
struct Loaded {
    project: String,
    /// Turn id → (session id, the turn's stored text, squashed).
    turns: HashMap<String, (String, String)>,
}

/// The operations of one session as `POST …/operations` takes them.
fn session_operations(project: &str, session: &DataSession, speakers: &[String]) -> Vec<Value> {
    let start = parse_date(&session.date).unwrap_or(0);
    session
        .turns
        .iter()
        .enumerate()
        .map(|(i, t)| {
            // The first speaker opens every conversation: the user's side of it.
            let role = if speakers.first() == Some(&t.speaker) {
                "user"
            } else {
                "assistant"
            };
            let at = t.at.as_deref().and_then(parse_date);
            let at =
                chrono::DateTime::from_timestamp_millis(at.unwrap_or(start + i as i64 * 30_000))
                    .unwrap_or_default()
                    .to_rfc3339();
            json!({"id": operation_id(project, &t.id), "type": "message", "role": role,
                   "content": turn_content(t), "at": at})
        })
        .collect()
}

async fn post(http: &reqwest::Client, url: String, body: &Value) -> anyhow::Result<()> {
    let resp = http.post(&url).json(body).send().await?;
    let status = resp.status();
    anyhow::ensure!(
        status.is_success(),
        "{url} answered {status}: {}",
        resp.text().await.unwrap_or_default()
    );
    Ok(())
}

/// Where each conversation of run `run` goes: its project, and each turn's session and text.
fn placed(run: &str, data: &[Conversation]) -> Vec<Loaded> {
    data.iter()
        .map(|conv| {
            let project = format!("bench-quality-{run}-{}", conv.id);
            let mut turns = HashMap::new();
            for (i, session) in conv.sessions.iter().enumerate() {
                let sid = format!("{project}-s{}", i + 1);
                for t in &session.turns {
                    turns.insert(t.id.clone(), (sid.clone(), squash(&turn_content(t))));
                }
            }
            Loaded { project, turns }
        })
        .collect()
}

/// Captures every conversation through the server at `base`, as [`placed`] says.
async fn capture(base: &str, data: &[Conversation], loaded: &[Loaded]) -> anyhow::Result<()> {
    let http = reqwest::Client::new();
    for (conv, l) in data.iter().zip(loaded) {
        let project = &l.project;
        for (i, session) in conv.sessions.iter().enumerate() {
            let sid = format!("{project}-s{}", i + 1);
            post(
                &http,
                format!("{base}/v1/sessions"),
                &json!({"project": project, "session_id": sid, "agent": "locomo"}),
            )
            .await?;
            let ops = session_operations(project, session, &conv.speakers);
            for chunk in ops.chunks(200) {
                post(
                    &http,
                    format!("{base}/v1/sessions/{sid}/operations"),
                    &json!({ "operations": chunk }),
                )
                .await?;
            }
            post(&http, format!("{base}/v1/sessions/{sid}/close"), &json!({})).await?;
        }
    }
    Ok(())
}

/// Waits until turn search finds each project's last turn by its own words (the turn index
/// is updated after commit) and, with an embedder, nothing is left to embed. The last turn is
/// looked for among all of its own session's turns: among a long history's hundreds of
/// turns, a generic one ("Thanks, that helps!") need not rank first for its own words, nor
/// within its session a reply that repeats an earlier one. It is asked for by its
/// first [`LAST_TURN_WORDS`] words: a long reply's hundreds of words, each one of the
/// project's common words too, would rank the project's other long turns before the
/// session's. Says every minute what it is waiting for.
async fn turns_indexed(
    state: &AppState,
    data: &[Conversation],
    loaded: &[Loaded],
) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(3_600);
    // A question asked while the embedded model still loads is searched by its words alone.
    while let Some(e) = state.embedder.as_deref() {
        if e.status() != cairn::embed::Status::Loading {
            break;
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "the embedded model did not load within an hour"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut said = Instant::now();
    for (conv, l) in data.iter().zip(loaded) {
        let Some(last_session) = conv.sessions.last() else {
            continue;
        };
        let Some(last) = last_session.turns.last() else {
            continue;
        };
        // Every turn of the session, and its summary.
        let whole = (last_session.turns.len() + 1).clamp(10, turns::MAX_HITS);
        let want = operation_id(&l.project, &last.id);
        let (session, _) = l
            .turns
            .get(&last.id)
            .with_context(|| format!("turn {} was not captured", last.id))?;
        let session = [session.clone()];
        let asked = turn_content(last)
            .split_whitespace()
            .take(LAST_TURN_WORDS)
            .collect::<Vec<_>>()
            .join(" ");
        loop {
            let found = turns::search(
                &state.store,
                state.embedder.as_deref(),
                &turns::TurnQuery {
                    project: &l.project,
                    text: &asked,
                    limit: whole,
                    types: None,
                    sessions: Some(&session),
                    exclude_session: None,
                    count_pending: true,
                    asked_at: None,
                    floor: None,
                },
            )
            .await?;
            let seen = found.hits.iter().any(|h| h.operation_id == want);
            let pending = found.pending_embeddings.unwrap_or(0);
            if seen && pending == 0 {
                break;
            }
            if said.elapsed() >= Duration::from_secs(60) {
                eprintln!(
                    "waiting for the turn index of {}: its last turn {}, {pending} operations \
                     not embedded yet",
                    l.project,
                    if seen { "found" } else { "not found yet" }
                );
                said = Instant::now();
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "the turn index of {} did not catch up within an hour",
                l.project
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
    Ok(())
}

/// Words of a conversation's last turn turn search is asked for to see it indexed.
const LAST_TURN_WORDS: usize = 40;

/// Removes the sessions the prompt phase captured in `l`'s project.
async fn forget_prompts(store: &cairn::graph::Store, l: &Loaded) -> anyhow::Result<()> {
    store
        .run(
            cairn::graph::statement(include_str!(
                "../cypher/bench_quality_forget_prompts.cypher"
            ))
            .param("project", l.project.as_str())
            .param("prefix", format!("{}-prompt-", l.project)),
        )
        .await?;
    Ok(())
}

/// Runs the indexers until a pass finds nothing left to do.
async fn index_everything(state: &AppState) -> anyhow::Result<()> {
    loop {
        let o = cairn::recall::index::run_once(&state.store, state.embedder.as_deref()).await?;
        if o.rebuilt == 0 && o.embedded.stored == 0 && o.embedded.failed == 0 {
            return Ok(());
        }
        anyhow::ensure!(
            o.embedded.failed == 0,
            "embedding failed; is the embedder configured and working?"
        );
    }
}

/// One mode's tallies.
#[derive(Default)]
struct Tally {
    /// Per budget: evidence turns found, tokens used.
    found: [usize; BUDGETS.len()],
    tokens: [u64; BUDGETS.len()],
    evidence: usize,
    questions: usize,
    session_recall: f64,
    reciprocal_rank: f64,
    /// Evidence turns among the first [`TOP_TURNS`] of turn search.
    turns_found: usize,
    context_ms: Vec<Duration>,
    search_ms: Vec<Duration>,
    turn_search_ms: Vec<Duration>,
}

fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e5).round() / 100.0
}

impl Tally {
    /// Evidence recall and mean tokens used, per budget.
    fn per_budget(&self) -> (Value, Value) {
        let q = self.questions.max(1) as f64;
        let e = self.evidence.max(1) as f64;
        let mut recall = serde_json::Map::new();
        let mut tokens = serde_json::Map::new();
        for (i, b) in BUDGETS.iter().enumerate() {
            recall.insert(b.to_string(), json!(round3(self.found[i] as f64 / e)));
            tokens.insert(b.to_string(), json!((self.tokens[i] as f64 / q).round()));
        }
        (Value::Object(recall), Value::Object(tokens))
    }

    /// A subset's figures: its size, evidence recall and session recall@5.
    fn subset(&self) -> Value {
        let (recall, _) = self.per_budget();
        json!({
            "questions": self.questions,
            "evidence_turns": self.evidence,
            "evidence_recall": recall,
            "session_recall_at_5": round3(self.session_recall / self.questions.max(1) as f64),
        })
    }

    fn report(&mut self) -> Value {
        let q = self.questions.max(1) as f64;
        let (recall, tokens) = self.per_budget();
        json!({
            "evidence_recall": recall,
            "mean_tokens_used": tokens,
            "session_recall_at_5": round3(self.session_recall / q),
            "mrr": round3(self.reciprocal_rank / q),
            "turn_recall_at_10": round3(self.turns_found as f64 / self.evidence.max(1) as f64),
            "context_latency_ms": {
                "p50": ms(super::quantile(&mut self.context_ms, 0.5)),
                "p95": ms(super::quantile(&mut self.context_ms, 0.95)),
            },
            "search_latency_ms": {
                "p50": ms(super::quantile(&mut self.search_ms, 0.5)),
                "p95": ms(super::quantile(&mut self.search_ms, 0.95)),
            },
            "turn_search_latency_ms": {
                "p50": ms(super::quantile(&mut self.turn_search_ms, 0.5)),
                "p95": ms(super::quantile(&mut self.turn_search_ms, 0.95)),
            },
            "questions": self.questions,
            "evidence_turns": self.evidence,
        })
    }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// The modes compared, by name.
const MODES: [(&str, Lists); 3] = [
    ("fulltext", Lists::Fulltext),
    ("vectors", Lists::Vector),
    ("hybrid", Lists::Both),
];

/// What one question in one mode brought back.
struct Answer {
    /// Per budget: evidence turns found, tokens used.
    found: [usize; BUDGETS.len()],
    used: [u64; BUDGETS.len()],
    evidence: usize,
    /// Share of the evidence's sessions among the first sessions found.
    session_recall: f64,
    reciprocal_rank: f64,
    /// Evidence turns among the first [`TOP_TURNS`] of turn search.
    turns_found: usize,
    context_ms: Vec<Duration>,
    search_ms: Duration,
    turn_search_ms: Duration,
    /// Per evidence turn (of those the conversation holds, in the question's order): its id,
    /// and whether each budget's context held it.
    held: Vec<(String, [bool; BUDGETS.len()])>,
    /// The sessions search found first.
    sessions: Vec<String>,
}

impl Tally {
    fn add(&mut self, a: &Answer) {
        for i in 0..BUDGETS.len() {
            self.found[i] += a.found[i];
            self.tokens[i] += a.used[i];
        }
        self.evidence += a.evidence;
        self.questions += 1;
        self.session_recall += a.session_recall;
        self.reciprocal_rank += a.reciprocal_rank;
        self.turns_found += a.turns_found;
        self.context_ms.extend(&a.context_ms);
        self.search_ms.push(a.search_ms);
        self.turn_search_ms.push(a.turn_search_ms);
    }
}

/// Asks one question in one mode: what came back.
async fn ask(
    state: &AppState,
    lists: Lists,
    loaded: &Loaded,
    question: &Question,
) -> anyhow::Result<Answer> {
    let stored = state.settings.tokenizer;
    let asked_at = question.asked_at();
    let finder = Finder {
        embedder: state.embedder.as_deref(),
        lists,
        weights: Weights::from(&state.settings.search),
    };
    let evidence: Vec<(&String, &(String, String))> = question
        .evidence
        .iter()
        .filter_map(|id| Some((id, loaded.turns.get(id)?)))
        .collect();
    let mut held: Vec<(String, [bool; BUDGETS.len()])> = evidence
        .iter()
        .map(|(id, _)| ((*id).clone(), [false; BUDGETS.len()]))
        .collect();
    let mut found = [0usize; BUDGETS.len()];
    let mut used = [0u64; BUDGETS.len()];
    let mut took = Vec::new();
    for (i, budget) in BUDGETS.iter().enumerate() {
        let req = context::Request {
            project: &loaded.project,
            session_id: None,
            task: Some(&question.question),
            budget: *budget,
            encoding: stored,
            stored,
            allocation: Allocation::default(),
            half_life_ms: state.settings.belief_half_life_ms(),
            finder,
            logs: &state.logs,
            asked_at,
        };
        let t = Instant::now();
        let ctx = context::assemble(&state.store, &req)
            .await
            .map_err(|e| anyhow::anyhow!("context: {e:?}"))?;
        took.push(t.elapsed());
        anyhow::ensure!(
            ctx.tokens_used <= ctx.budget_tokens,
            "the context used {} tokens of {}",
            ctx.tokens_used,
            ctx.budget_tokens
        );
        let text = squash(&ctx.text);
        for (h, (_, (_, t))) in held.iter_mut().zip(&evidence) {
            h.1[i] = text.contains(t.as_str());
        }
        found[i] = held.iter().filter(|h| h.1[i]).count();
        used[i] = ctx.tokens_used;
    }
    let t = Instant::now();
    let hits = search::search_in(
        &state.store,
        state.embedder.as_deref(),
        finder.weights,
        &search::Ask {
            lists,
            project: &loaded.project,
            text: &question.question,
            limit: TOP_SESSIONS,
            exclude: &[],
            asked_at,
            floor: Some(state.settings.search.min_cosine),
        },
        None,
    )
    .await?
    .hits;
    let search_ms = t.elapsed();
    let wanted: HashSet<&str> = evidence.iter().map(|(_, (s, _))| s.as_str()).collect();
    let ranked: Vec<&str> = hits.iter().map(|h| h.session_id.as_str()).collect();
    let in_top = wanted.iter().filter(|s| ranked.contains(s)).count();
    let t = Instant::now();
    let turns = turns::search_in(
        &state.store,
        state.embedder.as_deref(),
        lists,
        finder.weights,
        &turns::TurnQuery {
            project: &loaded.project,
            text: &question.question,
            limit: TOP_TURNS,
            types: None,
            sessions: None,
            exclude_session: None,
            count_pending: false,
            asked_at,
            floor: Some(state.settings.search.min_cosine),
        },
    )
    .await?
    .hits;
    let turn_search_ms = t.elapsed();
    let op_ids: HashSet<&str> = turns.iter().map(|h| h.operation_id.as_str()).collect();
    let turns_found = evidence
        .iter()
        .filter(|(id, _)| op_ids.contains(operation_id(&loaded.project, id).as_str()))
        .count();
    Ok(Answer {
        found,
        used,
        evidence: evidence.len(),
        session_recall: in_top as f64 / wanted.len().max(1) as f64,
        reciprocal_rank: ranked
            .iter()
            .position(|s| wanted.contains(s))
            .map_or(0.0, |r| 1.0 / (r as f64 + 1.0)),
        turns_found,
        context_ms: took,
        search_ms,
        turn_search_ms,
        held,
        sessions: ranked.iter().map(|s| s.to_string()).collect(),
    })
}

/// Where each of `answer`'s evidence turns ranks in turn search for the question (1-based, of
/// at most [`turns::MAX_HITS`]), as one JSON line for `--dump`.
async fn dump_line(
    state: &AppState,
    mode: &str,
    lists: Lists,
    conv: &Conversation,
    l: &Loaded,
    q: &Question,
    answer: &Answer,
) -> anyhow::Result<String> {
    let found = turns::search_in(
        &state.store,
        state.embedder.as_deref(),
        lists,
        Weights::from(&state.settings.search),
        &turns::TurnQuery {
            project: &l.project,
            text: &q.question,
            limit: turns::MAX_HITS,
            types: None,
            sessions: None,
            exclude_session: None,
            count_pending: false,
            asked_at: q.asked_at(),
            floor: None,
        },
    )
    .await?;
    // Session search's longest answer, so a change to session ranking can be tried offline.
    let sessions = search::search_in(
        &state.store,
        state.embedder.as_deref(),
        Weights::from(&state.settings.search),
        &search::Ask {
            lists,
            project: &l.project,
            text: &q.question,
            limit: search::MAX_LIMIT,
            exclude: &[],
            asked_at: q.asked_at(),
            floor: None,
        },
        None,
    )
    .await?
    .hits;
    let evidence: Vec<Value> = answer
        .held
        .iter()
        .map(|(id, held)| {
            let op = operation_id(&l.project, id);
            let rank = found.hits.iter().position(|h| h.operation_id == op);
            json!({"id": id, "held": held, "rank": rank.map(|r| r + 1),
                   "session": l.turns.get(id).map(|t| t.0.as_str())})
        })
        .collect();
    let prefix = operation_id(&l.project, "");
    Ok(json!({
        "mode": mode,
        "conversation": conv.id,
        "question": q.question,
        "category": q.category_key(),
        "evidence": evidence,
        "sessions": answer.sessions,
        "tokens_used": answer.used,
        // Each hit with the data set's id of its turn (absent for what is not a turn).
        "hits": found.hits.iter().map(|h| {
            let turn = h.operation_id.strip_prefix(&prefix);
            json!([h.session_id, h.seq, h.score, h.similarity, h.matched_by, turn])
        }).collect::<Vec<_>>(),
        "session_hits": sessions.iter().map(|h| json!([h.session_id, h.similarity, h.score])).collect::<Vec<_>>(),
    })
    .to_string())
}

/// `cairn hook --url base --project project --spool-dir spool <command…>`, parsed.
fn hook_args(
    base: &str,
    project: &str,
    spool: &str,
    command: &[&str],
) -> anyhow::Result<cairn::cli::hook::HookArgs> {
    let mut argv = vec![
        "cairn",
        "hook",
        "--url",
        base,
        "--project",
        project,
        "--spool-dir",
        spool,
    ];
    argv.extend_from_slice(command);
    let cli = cairn::cli::Cli::try_parse_from(argv).context("hook arguments")?;
    match cli.command {
        cairn::cli::Command::Hook(hook) => Ok(hook),
        _ => anyhow::bail!("not a hook command"),
    }
}

/// Sends what the hook spooled in `spool` to cairn (`cairn hook flush`).
async fn flush_spool(base: &str, project: &str, spool: &str) -> anyhow::Result<()> {
    let mut out = Vec::new();
    let code =
        cairn::cli::hook::invoke(hook_args(base, project, spool, &["flush"])?, b"", &mut out)
            .await?;
    anyhow::ensure!(
        code == 0,
        "the hook's spool could not be sent: {}",
        String::from_utf8_lossy(&out)
    );
    Ok(())
}

/// Asks every question as a user's prompt through the command hook (`cairn hook claude-code`
/// with its default deadlines), each from a session of its own: how many were answered within
/// the UserPromptSubmit deadline, how many recalled something, how much of the evidence the
/// recalled memory held, and the hook's latency.
async fn prompts(
    store: &cairn::graph::Store,
    base: &str,
    run: &str,
    data: &[Conversation],
    loaded: &[Loaded],
    per_conversation: Option<usize>,
) -> anyhow::Result<Value> {
    let spool = std::env::temp_dir().join(format!("cairn-bench-quality-hook-{run}"));
    let spool_arg = spool.display().to_string();
    let (mut asked, mut in_time, mut recalled, mut evidence, mut found) = (0, 0, 0, 0, 0);
    let mut took = Vec::new();
    let mut deadline = Duration::ZERO;
    for (conv, l) in data.iter().zip(loaded) {
        for (i, q) in questions_of(conv, l, per_conversation).enumerate() {
            let hook = hook_args(
                base,
                &l.project,
                &spool_arg,
                &["claude-code", "--flush", "off"],
            )?;
            if let cairn::cli::hook::HookCommand::ClaudeCode {
                prompt_deadline_ms, ..
            } = &hook.command
            {
                deadline = Duration::from_millis(*prompt_deadline_ms);
            }
            let event = json!({"hook_event_name": "UserPromptSubmit",
                               "session_id": format!("{}-prompt-{i}", l.project),
                               "cwd": "/tmp", "prompt": q.question});
            let mut out = Vec::new();
            let t = Instant::now();
            cairn::cli::hook::invoke(hook, event.to_string().as_bytes(), &mut out).await?;
            let elapsed = t.elapsed();
            took.push(elapsed);
            asked += 1;
            let reply: Value = serde_json::from_slice(&out).unwrap_or(Value::Null);
            // An event cairn did not answer in time waits in the hook's spool.
            let spooled = std::fs::read_dir(&spool).map_or(0, |d| {
                d.filter_map(Result::ok)
                    .filter(|e| e.file_name().to_string_lossy().ends_with(".hook.json"))
                    .count()
            });
            if spooled == 0 && elapsed <= deadline {
                in_time += 1;
            } else {
                // Sent now, untimed, as the flush Claude Code's hook starts after answering
                // would: else every later prompt would queue behind this one, and count as
                // late too.
                if let Err(err) = flush_spool(base, &l.project, &spool_arg).await {
                    tracing::warn!(error = %err, "the hook's spool was not sent; later prompts queue behind it");
                }
            }
            let text = reply["hookSpecificOutput"]["additionalContext"]
                .as_str()
                .map(squash)
                .unwrap_or_default();
            if !text.is_empty() {
                recalled += 1;
            }
            for id in &q.evidence {
                if let Some((_, t)) = l.turns.get(id) {
                    evidence += 1;
                    found += usize::from(!text.is_empty() && text.contains(t.as_str()));
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&spool);
    for l in loaded {
        forget_prompts(store, l).await?;
    }
    let n = asked.max(1) as f64;
    Ok(json!({
        "prompts": asked,
        "deadline_ms": deadline.as_millis() as u64,
        "answered_within_deadline": round3(in_time as f64 / n),
        "recalled_something": round3(recalled as f64 / n),
        "evidence_recall": round3(found as f64 / evidence.max(1) as f64),
        "latency_ms": {
            "p50": ms(super::quantile(&mut took, 0.5)),
            "p95": ms(super::quantile(&mut took, 0.95)),
        },
    }))
}

pub async fn run(mut b: QualityBench) -> anyhow::Result<()> {
    let mut data = dataset::load(&b.data)?;
    anyhow::ensure!(
        data.conversations
            .iter()
            .any(|c| c.questions.iter().any(|q| !q.evidence.is_empty())),
        "{} holds no question with evidence to recall",
        b.data.display()
    );
    if let Some(n) = b.conversations {
        data.conversations.truncate(n);
    }
    check_dates(&data)?;
    let reused = b.reuse.is_some();
    let run = b
        .reuse
        .clone()
        .unwrap_or_else(|| uuid::Uuid::new_v4().simple().to_string()[..8].to_string());
    let spool = std::env::temp_dir().join(format!("cairn-bench-quality-{run}"));
    b.settings.bind = "127.0.0.1:0".parse().context("bind address")?;
    b.settings.spool_dir = spool.clone();
    b.settings.rate_limit_per_sec = 0;
    b.settings.insecure_no_auth = true;
    let app = Application::build(b.settings.clone()).await?;
    let state = app.state();
    let base = format!("http://127.0.0.1:{}", app.port());
    let stopper = app.stopper();
    let server = tokio::spawn(app.run_until_stopped());
    let outcome = measure(&state, &base, &run, &data, &b, reused).await;
    if let Some(model) = held_back_model(&b, &state) {
        let loaded = placed(&run, &data.conversations);
        let back = relabel_waiting(
            &state,
            &data.conversations,
            &loaded,
            b.waiting,
            WAITING_MODEL,
            &model,
        );
        if let Err(err) = back.await {
            eprintln!("the vectors --waiting held back were not given back ({err:#}); purge the run's projects");
        }
    }
    if b.keep || reused {
        eprintln!("projects kept: --reuse {run}");
    } else {
        for conv in &data.conversations {
            let project = format!("bench-quality-{run}-{}", conv.id);
            cairn::graph::purge::project_now(&state.store, &project).await?;
        }
    }
    stopper.send_replace(true);
    server.await??;
    let _ = std::fs::remove_dir_all(&spool);
    let report = outcome?;
    print(&report);
    println!("{}", serde_json::to_string(&report)?);
    Ok(())
}

async fn measure(
    state: &AppState,
    base: &str,
    run: &str,
    data: &DataSet,
    b: &QualityBench,
    reused: bool,
) -> anyhow::Result<Value> {
    let per_conversation = b.questions;
    let started = Instant::now();
    let loaded = placed(run, &data.conversations);
    if reused {
        // A run stopped before its prompt phase cleaned up may have left prompts behind.
        for l in &loaded {
            forget_prompts(&state.store, l).await?;
        }
    } else {
        capture(base, &data.conversations, &loaded).await?;
    }
    let sent: usize = loaded.iter().map(|l| l.turns.len()).sum();
    for l in &loaded {
        let expected = l.turns.len() as i64;
        super::wait_written(
            &state.store,
            &l.project,
            expected,
            Duration::from_millis(100),
            Duration::from_secs(600),
        )
        .await?
        .with_context(|| format!("{} was not written within 10 minutes", l.project))?;
    }
    let captured_s = started.elapsed().as_secs_f64();
    let started = Instant::now();
    index_everything(state).await?;
    turns_indexed(state, &data.conversations, &loaded).await?;
    let indexed_s = started.elapsed().as_secs_f64();
    let waiting = match held_back_model(b, state) {
        Some(model) => Some(
            relabel_waiting(
                state,
                &data.conversations,
                &loaded,
                b.waiting,
                &model,
                WAITING_MODEL,
            )
            .await?,
        ),
        None => None,
    };

    let mut report = serde_json::Map::new();
    let embedder = state.embedder.as_deref().map(|e| format!("{e:?}"));
    let mut dump = match &b.dump {
        Some(path) => Some(std::io::BufWriter::new(
            std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?,
        )),
        None => None,
    };
    for (name, lists) in MODES {
        if !b.modes.is_empty() && !b.modes.iter().any(|m| m == name) {
            report.insert(name.into(), json!({"skipped": "not asked for (--modes)"}));
            continue;
        }
        if lists.vector() && embedder.is_none() {
            report.insert(name.into(), json!({"skipped": "no embedder configured"}));
            continue;
        }
        let mut tally = Tally::default();
        // The questions that name a time (`domain::when`), and each category, on their own.
        let mut timed = Tally::default();
        let mut categories: std::collections::BTreeMap<String, Tally> = Default::default();
        let mut warm = 0;
        for (conv, l) in data.conversations.iter().zip(&loaded) {
            for q in questions_of(conv, l, per_conversation) {
                if warm < WARM_UP {
                    ask(state, lists, l, q).await?;
                    warm += 1;
                }
                let answer = ask(state, lists, l, q).await?;
                tally.add(&answer);
                categories.entry(q.category_key()).or_default().add(&answer);
                let asked = q.asked_at().unwrap_or_else(cairn::graph::now_ms);
                if when::read(&q.question, asked).is_some() {
                    timed.add(&answer);
                }
                if let Some(out) = dump.as_mut() {
                    let line = dump_line(state, name, lists, conv, l, q, &answer).await?;
                    writeln!(out, "{line}").context("writing the dump")?;
                }
            }
        }
        let mut mode = tally.report();
        mode["naming_a_time"] = timed.subset();
        if categories.len() > 1 {
            mode["by_category"] = categories
                .iter()
                .map(|(k, t)| (k.clone(), t.subset()))
                .collect::<serde_json::Map<_, _>>()
                .into();
        }
        report.insert(name.into(), mode);
    }
    report.insert(
        "plain_bm25".into(),
        baseline(data, &loaded, per_conversation, state.settings.tokenizer),
    );
    report.insert("ratio_to_plain_bm25".into(), ratios(&report));
    if !b.no_prompts {
        report.insert(
            "prompt_recall".into(),
            prompts(
                &state.store,
                base,
                run,
                &data.conversations,
                &loaded,
                per_conversation,
            )
            .await?,
        );
    }
    report.insert(
        "setup".into(),
        json!({
            "data": if b.data == std::path::Path::new(DEFAULT_DATA) {
                "LoCoMo (snap-research/LoCoMo data/locomo10.json, CC BY-NC 4.0), extract".to_string()
            } else {
                b.data.display().to_string()
            },
            "conversations": data.conversations.len(),
            "sessions": data.conversations.iter().map(|c| c.sessions.len()).sum::<usize>(),
            "turns": sent,
            "embedder": embedder,
            "budgets": BUDGETS,
            "capture_s": (captured_s * 10.0).round() / 10.0,
            "index_s": (indexed_s * 10.0).round() / 10.0,
            "waiting": waiting,
        }),
    );
    Ok(Value::Object(report))
}

/// Evidence recall of the plain BM25 baseline at each budget, for the questions the modes ask.
fn baseline(
    data: &DataSet,
    loaded: &[Loaded],
    per_conversation: Option<usize>,
    encoding: cairn::config::Encoding,
) -> Value {
    let mut tally = Tally::default();
    for (conv, l) in data.conversations.iter().zip(loaded) {
        let lines: Vec<String> = conv
            .sessions
            .iter()
            .flat_map(|s| s.turns.iter().map(turn_content))
            .collect();
        let corpus = plain_bm25::Corpus::new(&lines, encoding);
        for q in questions_of(conv, l, per_conversation) {
            let evidence: Vec<&str> = q
                .evidence
                .iter()
                .filter_map(|id| l.turns.get(id).map(|(_, t)| t.as_str()))
                .collect();
            for (i, budget) in BUDGETS.iter().enumerate() {
                let chosen = corpus.fill(&q.question, *budget);
                let text = squash(&chosen.lines.join("\n"));
                tally.found[i] += evidence.iter().filter(|t| text.contains(*t)).count();
                tally.tokens[i] += chosen.tokens as u64;
            }
            tally.evidence += evidence.len();
            tally.questions += 1;
        }
    }
    let (recall, tokens) = tally.per_budget();
    json!({
        "evidence_recall": recall,
        "mean_tokens_used": tokens,
        "questions": tally.questions,
        "evidence_turns": tally.evidence,
    })
}

/// The questions asked of a conversation: those whose evidence it holds, the first
/// `per_conversation` of them.
fn questions_of<'a>(
    conv: &'a Conversation,
    l: &'a Loaded,
    per_conversation: Option<usize>,
) -> impl Iterator<Item = &'a Question> + 'a {
    conv.questions
        .iter()
        .filter(|q| q.evidence.iter().any(|e| l.turns.contains_key(e)))
        .take(per_conversation.unwrap_or(usize::MAX))
}

/// Each mode's evidence recall divided by the baseline's, per budget.
fn ratios(report: &serde_json::Map<String, Value>) -> Value {
    let base = &report["plain_bm25"]["evidence_recall"];
    let mut out = serde_json::Map::new();
    for (name, _) in MODES {
        let Some(mode) = report.get(name).filter(|m| m.get("skipped").is_none()) else {
            continue;
        };
        let per: serde_json::Map<String, Value> = BUDGETS
            .iter()
            .map(|b| {
                let (m, p) = (
                    mode["evidence_recall"][b.to_string()]
                        .as_f64()
                        .unwrap_or(0.0),
                    base[b.to_string()].as_f64().unwrap_or(0.0),
                );
                let r = if p > 0.0 { round3(m / p) } else { 0.0 };
                (b.to_string(), json!(r))
            })
            .collect();
        out.insert(name.into(), Value::Object(per));
    }
    Value::Object(out)
}

/// The side-by-side table.
fn print(report: &Value) {
    println!(
        "{:<10} {:>8} {:>8} {:>8} {:>10} {:>6} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "mode",
        "ev@500",
        "ev@1000",
        "ev@2000",
        "sess R@5",
        "MRR",
        "ctx p50",
        "ctx p95",
        "srch p50",
        "srch p95",
        "turn R@10",
        "turn p95"
    );
    for (name, _) in MODES {
        let m = &report[name];
        if m.get("skipped").is_some() {
            println!("{name:<10} skipped: {}", m["skipped"]);
            continue;
        }
        let ev = &m["evidence_recall"];
        let cells = [
            &ev["500"],
            &ev["1000"],
            &ev["2000"],
            &m["session_recall_at_5"],
            &m["mrr"],
            &m["context_latency_ms"]["p50"],
            &m["context_latency_ms"]["p95"],
            &m["search_latency_ms"]["p50"],
            &m["search_latency_ms"]["p95"],
            &m["turn_recall_at_10"],
            &m["turn_search_latency_ms"]["p95"],
        ]
        .map(|v| v.to_string());
        println!(
            "{:<10} {:>8} {:>8} {:>8} {:>10} {:>6} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
            name,
            cells[0],
            cells[1],
            cells[2],
            cells[3],
            cells[4],
            cells[5],
            cells[6],
            cells[7],
            cells[8],
            cells[9],
            cells[10],
        );
    }
    for (name, _) in MODES {
        let t = &report[name]["naming_a_time"];
        if t.is_object() {
            let ev = &t["evidence_recall"];
            println!(
                "{:<10} {:>8} {:>8} {:>8} {:>10}   ({} questions naming a time)",
                format!("{name} @t"),
                ev["500"],
                ev["1000"],
                ev["2000"],
                t["session_recall_at_5"],
                t["questions"]
            );
        }
    }
    for (name, _) in MODES {
        let Some(cats) = report[name]["by_category"].as_object() else {
            continue;
        };
        for (cat, t) in cats {
            let ev = &t["evidence_recall"];
            println!(
                "{:<10} {:>8} {:>8} {:>8} {:>10}   (category {cat}: {} questions, {} evidence turns)",
                format!("{name} c"),
                ev["500"],
                ev["1000"],
                ev["2000"],
                t["session_recall_at_5"],
                t["questions"],
                t["evidence_turns"]
            );
        }
    }
    let base = &report["plain_bm25"]["evidence_recall"];
    println!(
        "{:<10} {:>8} {:>8} {:>8}   (baseline: the whole budget, see plain_bm25)",
        "plain bm25", base["500"], base["1000"], base["2000"]
    );
    if let Some(ratios) = report["ratio_to_plain_bm25"].as_object() {
        for (name, r) in ratios {
            println!(
                "{:<10} {:>8} {:>8} {:>8}",
                format!("{name} ÷"),
                r["500"],
                r["1000"],
                r["2000"]
            );
        }
    }
    let p = &report["prompt_recall"];
    if p.is_null() {
        return;
    }
    println!(
        "prompt recall (command hook, {} ms deadline): {} prompts, {} answered in time, {} recalled something, evidence recall {}, p50 {} ms, p95 {} ms",
        p["deadline_ms"],
        p["prompts"],
        p["answered_within_deadline"],
        p["recalled_something"],
        p["evidence_recall"],
        p["latency_ms"]["p50"],
        p["latency_ms"]["p95"],
    );
}

#[cfg(test)]
mod tests {
    use super::{share, waiting_sessions};

    #[test]
    fn waiting_holds_back_a_share_of_the_sessions_spread_evenly() {
        assert_eq!(waiting_sessions("p", 5, 0.5), ["p-s2", "p-s4"]);
        assert_eq!(waiting_sessions("p", 4, 0.25), ["p-s4"]);
        assert_eq!(waiting_sessions("p", 3, 1.0), ["p-s1", "p-s2", "p-s3"]);
        assert!(waiting_sessions("p", 3, 0.0).is_empty());
        assert_eq!(share("0.5"), Ok(0.5));
        assert!(share("1.5").is_err() && share("half").is_err());
    }
}
