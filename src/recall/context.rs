//! Token-budgeted context for a session (its history and the sessions it continues) or a
//! task. A task's history is the operations turn search ranks most relevant to it, each with
//! the reply or result after it, grouped by session under the session's date ([`relevant`]);
//! its sessions (those of the hits, then those `POST /v1/sessions/search` finds) scope files,
//! decisions and memory. Without relevant operations a task falls back to the related
//! sessions' newest history, as a session does. The budget is split per [`Allocation`]
//! (framing is paid from the overhead share; what it leaves is content's); the session mode's
//! history is collected newest-first until its share is spent and presented oldest-first, the
//! newest item always present (cut to fit); files are listed once with the sessions that
//! touched them; decisions (by the task's words, for a task), beliefs and memories are ranked
//! by relevance × conviction/confidence. Stored per-operation token counts drive selection;
//! framing is tokenised per request and the final text is counted once, so `tokens_used` is
//! exact and never above the budget.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use poem_openapi::Object;
use serde::Serialize;

use crate::config::Encoding;
use crate::domain::budget::{self, Allocation};
use crate::domain::operation::render_stored_line;
use crate::domain::tokens;
use crate::embed::Embedder;
use crate::error::{ApiError, ApiResult, Code};
use crate::graph::decisions::ContextDecision;
use crate::graph::memories::ContextMemory;
use crate::graph::operations::{self, FileRow, Page};
use crate::graph::{self, Store, StoreResult};
use crate::recall::logs::{self, Log, Logs};
use crate::recall::rank;
use crate::recall::reconstruction::OperationView;
pub use crate::recall::scope::ScopeSession;
use crate::recall::search::{self, Lists, Weights};
use crate::recall::{relevant, turns};

/// Most sessions a context draws on.
pub const MAX_SESSIONS: usize = 20;
/// Most files a context lists candidates from.
const MAX_FILES: usize = 500;
/// Longest `task` accepted, in characters.
pub const MAX_TASK_CHARS: usize = 4_096;

/// What to assemble.
#[derive(Clone, Debug)]
pub struct Request<'a> {
    pub project: &'a str,
    pub session_id: Option<&'a str>,
    pub task: Option<&'a str>,
    pub budget: usize,
    /// The encoding the answer is counted in.
    pub encoding: Encoding,
    /// The encoding stored operation counts are in (the server's).
    pub stored: Encoding,
    pub allocation: Allocation,
    pub half_life_ms: i64,
    pub finder: Finder<'a>,
    /// Cached session logs: used instead of reading a session's history, and filled with
    /// the small sessions a context reads whole.
    pub logs: &'a Logs,
}

/// One section of the assembled text.
#[derive(Clone, Debug, Serialize, Object)]
pub struct Section {
    /// `history`, `files`, `decisions`, `beliefs` or `memories`.
    pub name: String,
    /// Tokens the section was granted by the allocation.
    pub share_tokens: u64,
    /// Tokens its items were estimated at (stored counts plus framing).
    pub tokens: u64,
    pub items: u64,
    /// Candidates left out.
    pub omitted: u64,
}

/// The assembled context.
#[derive(Clone, Debug, Serialize, Object)]
pub struct Context {
    pub text: String,
    /// Exactly the token count of `text` in `encoding`; never above `budget_tokens`.
    pub tokens_used: u64,
    pub budget_tokens: u64,
    pub encoding: String,
    /// The sessions drawn on, newest first.
    pub sessions: Vec<String>,
    pub sections: Vec<Section>,
    /// Everything left out, in words ("4 older sessions excluded").
    pub warnings: Vec<String>,
}

/// How a task context finds related sessions: the search of `POST /v1/sessions/search`.
#[derive(Clone, Copy)]
pub struct Finder<'a> {
    /// Hybrid (BM25 + vectors) when an embedding endpoint is configured, else fulltext.
    pub embedder: Option<&'a Embedder>,
    /// The ranked lists consulted ([`Lists::Both`] but in the quality benchmark).
    pub lists: Lists,
    pub weights: Weights,
}

impl std::fmt::Debug for Finder<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Finder")
            .field("hybrid", &self.embedder.is_some())
            .field("lists", &self.lists)
            .field("weights", &self.weights)
            .finish()
    }
}

/// The sessions a task context draws on: the project's sessions search ranks best for the
/// task, else (nothing found, or no task) the most recent ones.
pub async fn candidate_sessions(
    store: &Store,
    finder: Finder<'_>,
    project: &str,
    task: &str,
    limit: usize,
    turns: Option<&[turns::TurnHit]>,
) -> StoreResult<Vec<ScopeSession>> {
    if !task.trim().is_empty() {
        let found = search::search_in(
            store,
            finder.embedder,
            finder.lists,
            finder.weights,
            project,
            task,
            limit,
            &[],
            turns,
        )
        .await?;
        if !found.hits.is_empty() {
            return Ok(found.hits.into_iter().filter_map(|h| h.session).collect());
        }
    }
    graph::sessions::recent(store, project, limit).await
}

/// Words too common in a team's work to tell memories apart, beyond [`rank::STOP_WORDS`].
const MATCHLESS: &[&str] = &["make"];

/// The distinct content words of `text` (lower case, letters and digits, 3+ characters),
/// at most 20: safe to hand to Lucene and to match against stored text.
pub fn terms(text: &str) -> Vec<String> {
    let mut seen = HashSet::new();
    text.split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
        .filter(|w| {
            w.chars().count() >= 3 && !rank::is_stop_word(w) && !MATCHLESS.contains(&w.as_str())
        })
        .filter(|w| seen.insert(w.clone()))
        .take(20)
        .collect()
}

/// Share of `terms` (at most five counted) found in `text`, 0..1.
fn text_score(text: &str, terms: &[String]) -> f64 {
    if terms.is_empty() {
        return 0.0;
    }
    let lower = text.to_lowercase();
    let hits = terms.iter().filter(|t| lower.contains(t.as_str())).count();
    (hits as f64 / terms.len().min(5) as f64).min(1.0)
}

/// A candidate line with its estimated cost (tokens of the line plus its newline).
#[derive(Clone, Debug)]
struct Line {
    text: String,
    cost: usize,
}

fn line(encoding: Encoding, text: String) -> Line {
    let cost = tokens::count(encoding, &text) + 1;
    Line { text, cost }
}

/// The lines of `lines` in order until they cost at least `cap` (always the first one):
/// `lines` is lazy, so what lies beyond is never tokenised.
fn within(cap: usize, lines: impl Iterator<Item = Line>) -> Vec<Line> {
    let mut out = Vec::new();
    let mut cost = 0;
    for l in lines {
        if cost >= cap && !out.is_empty() {
            break;
        }
        cost += l.cost;
        out.push(l);
    }
    out
}

fn clip(s: &str, max_chars: usize) -> String {
    let s = s.trim().replace('\n', " ");
    if s.chars().count() <= max_chars {
        return s;
    }
    let mut out: String = s.chars().take(max_chars).collect();
    out.push('…');
    out
}

/// One session's slice of the history: its header and its operations newest first.
struct SessionLines {
    header: Line,
    /// `(seq, line)`, newest first.
    ops: Vec<(i64, Line)>,
    total_ops: usize,
}

/// The sessions of the request, newest first, or `session_not_found`. A task's sessions are
/// ranked with the turns already found for it (`turns`).
async fn scope(
    store: &Store,
    req: &Request<'_>,
    turns: &[turns::TurnHit],
) -> ApiResult<Vec<ScopeSession>> {
    let mut sessions = match req.session_id {
        Some(sid) => {
            let chain = graph::sessions::chain(store, req.project, sid).await?;
            if chain.is_empty() {
                return Err(ApiError::not_found(Code::SessionNotFound, "session_id"));
            }
            chain
        }
        None => {
            candidate_sessions(
                store,
                req.finder,
                req.project,
                req.task.unwrap_or(""),
                MAX_SESSIONS,
                Some(turns),
            )
            .await?
        }
    };
    sessions.truncate(MAX_SESSIONS);
    sessions.sort_by(|a, b| {
        b.last_activity_at
            .cmp(&a.last_activity_at)
            .then_with(|| a.id.cmp(&b.id))
    });
    Ok(sessions)
}

fn header_text(s: &ScopeSession) -> String {
    let when = chrono::DateTime::from_timestamp_millis(s.started_at)
        .map(|d| d.format("%Y-%m-%d %H:%M").to_string())
        .unwrap_or_default();
    let mut h = format!("### {when} session {} ({})", s.id, s.status);
    if let Some(t) = s.task.as_deref().filter(|t| !t.trim().is_empty()) {
        h.push_str(&format!(": {}", clip(t, 200)));
    }
    let summary = s.llm_summary.as_deref().or(s.summary.as_deref());
    if let Some(sum) = summary.filter(|t| !t.trim().is_empty()) {
        h.push_str(&format!("\nSummary: {}", clip(sum, 400)));
    }
    h
}

/// Rough tokens per operation, to decide how many sessions one query should cover.
const TOKENS_PER_OP_GUESS: usize = 10;

/// Most operations read to complete the logs of a context's uncached sessions; beyond it
/// history is paged and files are queried instead.
const WHOLE_READ_MAX: i64 = 5_000;

/// Operations per history page for a share of `want` tokens.
fn page_size(want: usize) -> usize {
    (want / 8).clamp(50, 2_000)
}

/// The logs of the scope's sessions: cached ones brought up to date, and (with the cache on)
/// the others read whole and cached when together they hold at most four pages' worth of
/// operations (and never more than [`WHOLE_READ_MAX`]).
async fn session_logs(
    req: &Request<'_>,
    store: &Store,
    sessions: &[ScopeSession],
    want: usize,
) -> StoreResult<HashMap<String, Arc<Log>>> {
    let mut logs = cached_logs(req, store, sessions).await?;
    let missing: Vec<&ScopeSession> = sessions
        .iter()
        .filter(|s| !logs.contains_key(&s.id))
        .collect();
    let total: i64 = missing.iter().map(|s| s.operation_count.max(0)).sum();
    // A whole read pays back only through the cache, and only when it is not much more than
    // the pages the share needs anyway (else the cache would churn on long sessions).
    let worth = WHOLE_READ_MAX.min(4 * page_size(want) as i64);
    if missing.is_empty() || total > worth || !req.logs.enabled() {
        return Ok(logs);
    }
    let pages: Vec<Page<'_>> = missing
        .iter()
        .filter(|s| s.operation_count > 0)
        .map(|s| Page {
            id: &s.id,
            before: i64::MAX,
        })
        .collect();
    let mut by_session: HashMap<String, Vec<OperationView>> = HashMap::new();
    if !pages.is_empty() {
        let rows = operations::pages(store, req.project, &pages, WHOLE_READ_MAX as usize).await?;
        for r in rows {
            by_session.entry(r.session_id.clone()).or_default().push(r);
        }
    }
    for s in missing {
        let mut ops = by_session.remove(&s.id).unwrap_or_default();
        ops.reverse();
        let log = Log::new(s.started_at, ops);
        logs.insert(s.id.clone(), req.logs.keep(req.project, &s.id, log));
    }
    Ok(logs)
}

/// The scope's sessions whose logs are cached, brought up to date, by id.
async fn cached_logs(
    req: &Request<'_>,
    store: &Store,
    sessions: &[ScopeSession],
) -> StoreResult<HashMap<String, Arc<Log>>> {
    let found = futures::future::try_join_all(sessions.iter().map(|s| {
        req.logs.cached(
            store,
            req.project,
            logs::Head {
                id: &s.id,
                started_at: s.started_at,
                operation_count: s.operation_count,
            },
        )
    }))
    .await?;
    Ok(sessions
        .iter()
        .zip(found)
        .filter_map(|(s, log)| Some((s.id.clone(), log?)))
        .collect())
}

/// Fetches history newest-first until `want` tokens are in hand: a cached log when there is
/// one, else the sessions likely needed in one query, a further page of one session only
/// when its first page was not enough.
async fn history(
    store: &Store,
    req: &Request<'_>,
    sessions: &[ScopeSession],
    cached: &HashMap<String, Arc<Log>>,
    want: usize,
) -> StoreResult<Vec<SessionLines>> {
    let page = page_size(want);
    let to_line = |r: &OperationView| {
        let text = render_stored_line(
            &r.kind,
            r.target.as_deref(),
            &r.summary,
            r.role.as_deref(),
            r.content.as_deref(),
        );
        let l = if req.encoding == req.stored && r.tokens > 0 {
            Line {
                text,
                cost: r.tokens as usize + 1,
            }
        } else {
            line(req.encoding, text)
        };
        (r.seq, l)
    };
    let mut out = Vec::new();
    let mut have = 0usize;
    let mut next = 0usize;
    while have <= want && next < sessions.len() {
        let mut group = Vec::new();
        let mut guess = 0usize;
        while next < sessions.len() && (group.is_empty() || have + guess <= want) {
            guess += 20 + sessions[next].operation_count.max(0) as usize * TOKENS_PER_OP_GUESS;
            group.push(next);
            next += 1;
        }
        let pages = group
            .iter()
            .map(|&i| &sessions[i])
            .filter(|s| s.operation_count > 0 && !cached.contains_key(&s.id))
            .map(|s| Page {
                id: &s.id,
                before: i64::MAX,
            })
            .collect::<Vec<_>>();
        let mut by_session: HashMap<String, Vec<OperationView>> = HashMap::new();
        if !pages.is_empty() {
            for r in operations::pages(store, req.project, &pages, page).await? {
                by_session.entry(r.session_id.clone()).or_default().push(r);
            }
        }
        for i in group {
            let s = &sessions[i];
            let header = line(req.encoding, header_text(s));
            have += header.cost;
            let total = s.operation_count.max(0) as usize;
            let mut ops: Vec<(i64, Line)> = Vec::new();
            if let Some(log) = cached.get(&s.id) {
                // Newest first (the newest always), only as far back as the share can use.
                for o in log.ops.iter().rev() {
                    if have > want && !ops.is_empty() {
                        break;
                    }
                    let l = to_line(o);
                    have += l.1.cost;
                    ops.push(l);
                }
            } else {
                ops = by_session
                    .remove(&s.id)
                    .unwrap_or_default()
                    .iter()
                    .map(to_line)
                    .collect();
                have += ops.iter().map(|(_, l)| l.cost).sum::<usize>();
                // A long session: page further back only while the share still wants more.
                while have <= want
                    && ops.len() < total
                    && ops.len().is_multiple_of(page)
                    && !ops.is_empty()
                {
                    let before = ops.last().map_or(i64::MAX, |(seq, _)| *seq);
                    let more: Vec<(i64, Line)> =
                        operations::pages(store, req.project, &[Page { id: &s.id, before }], page)
                            .await?
                            .iter()
                            .map(to_line)
                            .collect();
                    if more.is_empty() {
                        break;
                    }
                    have += more.iter().map(|(_, l)| l.cost).sum::<usize>();
                    ops.extend(more);
                }
            }
            out.push(SessionLines {
                header,
                total_ops: total.max(ops.len()),
                ops,
            });
        }
    }
    Ok(out)
}

/// Files touched in the given logs, as `operations::files_of` lists them: one row per path,
/// the newest reference's mode (a write before a read of the same operation), the sessions
/// that touched it newest first, newest path first, at most `limit`.
fn files_from_logs(logs: &[(&str, &Log)], limit: usize) -> Vec<FileRow> {
    struct Touch<'a> {
        at: i64,
        seq: i64,
        session: &'a str,
        mode: &'static str,
        path: &'a str,
    }
    let mut touches = Vec::new();
    for (session, log) in logs {
        for o in &log.ops {
            let modes = o
                .files_modified
                .iter()
                .map(|p| (p, "write"))
                .chain(o.files_read.iter().map(|p| (p, "read")));
            touches.extend(modes.map(|(path, mode)| Touch {
                at: o.at,
                seq: o.seq,
                session,
                mode,
                path,
            }));
        }
    }
    touches.sort_by_key(|t| std::cmp::Reverse((t.at, t.seq)));
    let mut index: HashMap<&str, usize> = HashMap::new();
    let mut out: Vec<FileRow> = Vec::new();
    for t in touches {
        match index.get(t.path) {
            Some(&i) => {
                if !out[i].sessions.iter().any(|s| s == t.session) {
                    out[i].sessions.push(t.session.to_string());
                }
            }
            None => {
                index.insert(t.path, out.len());
                out.push(FileRow {
                    path: t.path.to_string(),
                    mode: Some(t.mode.to_string()),
                    sessions: vec![t.session.to_string()],
                    at: t.at,
                });
            }
        }
    }
    out.sort_by(|a, b| b.at.cmp(&a.at).then_with(|| a.path.cmp(&b.path)));
    out.truncate(limit);
    out
}

/// The turns turn search finds most relevant to a task, best first; nothing in session mode.
async fn find_turns(
    store: &Store,
    req: &Request<'_>,
    share: usize,
) -> StoreResult<Vec<turns::TurnHit>> {
    let task = match (req.session_id, req.task) {
        (None, Some(t)) if !t.trim().is_empty() => t,
        _ => return Ok(Vec::new()),
    };
    // About one hit per 15 tokens of history: room for the pairs that fit, and for skipping
    // the hits that do not.
    let limit = (share / 15).clamp(10, turns::MAX_HITS);
    let found = turns::search_in(
        store,
        req.finder.embedder,
        req.finder.lists,
        req.finder.weights,
        &turns::TurnQuery {
            project: req.project,
            text: task,
            limit,
            types: None,
            sessions: None,
            exclude_session: None,
        },
    )
    .await?;
    Ok(found.hits)
}

/// The operations among turn hits, for a task's history: memories and summaries have sections
/// of their own (or a header).
fn operations_of(hits: &[turns::TurnHit]) -> Vec<relevant::Found> {
    hits.iter()
        .filter(|h| !h.session_id.is_empty() && h.kind != "memory" && h.kind != "summary")
        .map(|h| relevant::Found {
            session_id: h.session_id.clone(),
            seq: h.seq,
            kind: h.kind.clone(),
            role: h.role.clone(),
            text: h.text.clone(),
            score: h.score,
        })
        .collect()
}

/// The header of a session in a task's history: when it happened (its start, or its oldest
/// shown operation when that is older, as in an imported session) and its task.
fn relevant_header(s: &ScopeSession, when: i64) -> String {
    let date = chrono::DateTime::from_timestamp_millis(when)
        .map(|d| d.format("%Y-%m-%d %H:%M").to_string())
        .unwrap_or_default();
    // The id is in the answer's `sessions`; here it would cost more than the line it heads.
    let mut h = format!("### {date}");
    if let Some(t) = s.task.as_deref().filter(|t| !t.trim().is_empty()) {
        h.push_str(&format!(": {}", clip(t, 120)));
    }
    h
}

/// Reads what `found` needs (its operations and neighbours, its sessions) and puts its
/// sessions, best first, before the other sessions of the scope.
async fn relevant_history(
    store: &Store,
    req: &Request<'_>,
    scope: Vec<ScopeSession>,
    found: Vec<relevant::Found>,
    share: usize,
) -> StoreResult<(Vec<ScopeSession>, relevant::History)> {
    let mut order: Vec<&str> = Vec::new();
    for f in &found {
        if !order.contains(&f.session_id.as_str()) {
            order.push(&f.session_id);
        }
    }
    let keys = relevant::keys_for(&found);
    let (rows, items) = tokio::join!(
        relevant::sessions(store, req.project, &order),
        relevant::read_items(store, req.project, &keys, req.encoding, req.stored, share),
    );
    let (rows, items) = (rows?, items?);
    let mut by_id: HashMap<String, ScopeSession> =
        rows.into_iter().map(|s| (s.id.clone(), s)).collect();
    let mut headers = HashMap::new();
    let mut sessions = Vec::new();
    for id in order {
        let Some(s) = by_id.remove(id) else { continue };
        let oldest = items
            .iter()
            .filter(|(k, _)| k.0 == s.id)
            .map(|(_, i)| i.at)
            .min()
            .unwrap_or(s.started_at);
        let when = s.started_at.min(oldest);
        let l = line(req.encoding, relevant_header(&s, when));
        headers.insert(s.id.clone(), (when, l.text, l.cost));
        sessions.push(s);
    }
    for s in scope {
        if !headers.contains_key(&s.id) {
            sessions.push(s);
        }
    }
    sessions.truncate(MAX_SESSIONS);
    Ok((
        sessions,
        relevant::History {
            found,
            items,
            headers,
        },
    ))
}

/// Assembles the context. `session_not_found` when `session_id` names no session of the
/// project.
pub async fn assemble(store: &Store, req: &Request<'_>) -> ApiResult<Context> {
    // On the heap: the search futures it awaits are large for a request's stack.
    Box::pin(assemble_boxed(store, req)).await
}

async fn assemble_boxed(store: &Store, req: &Request<'_>) -> ApiResult<Context> {
    let enc = req.encoding;
    let started = std::time::Instant::now();
    let plan = budget::plan(req.budget, &req.allocation);
    // The project's long-term memory does not depend on the scope: read it meanwhile.
    // A task's turns are searched first: they rank its sessions too.
    let (turn_hits, beliefs, memories) = tokio::join!(
        Box::pin(find_turns(store, req, plan.text)),
        graph::beliefs::list(store, req.project, Some("active"), req.half_life_ms, 500),
        graph::memories::for_context(store, req.project, 500),
    );
    let (turn_hits, beliefs, memories) = (turn_hits?, beliefs?, memories?);
    let sessions = Box::pin(scope(store, req, &turn_hits)).await?;
    let found = operations_of(&turn_hits);
    // A task with relevant operations: its history is those, from their sessions first.
    let (sessions, relevant) = if found.is_empty() {
        (sessions, None)
    } else {
        let (sessions, r) =
            Box::pin(relevant_history(store, req, sessions, found, plan.text)).await?;
        (sessions, Some(r))
    };
    let scope_ms = started.elapsed().as_millis() as u64;
    let ids: Vec<&str> = sessions.iter().map(|s| s.id.as_str()).collect();

    let cached = if relevant.is_some() {
        HashMap::new()
    } else {
        session_logs(req, store, &sessions, plan.text).await?
    };
    let (hist, files) = if relevant.is_some() {
        (
            Vec::new(),
            graph::operations::files_of(store, req.project, &ids, MAX_FILES).await?,
        )
    } else if cached.len() == sessions.len() {
        // Every session's log is in hand: its files need no query.
        let logs: Vec<(&str, &Log)> = sessions
            .iter()
            .filter_map(|s| Some((s.id.as_str(), cached.get(&s.id)?.as_ref())))
            .collect();
        let files = files_from_logs(&logs, MAX_FILES);
        (
            history(store, req, &sessions, &cached, plan.text).await?,
            files,
        )
    } else {
        let (hist, files) = tokio::join!(
            history(store, req, &sessions, &cached, plan.text),
            graph::operations::files_of(store, req.project, &ids, MAX_FILES),
        );
        (hist?, files?)
    };
    let history_ms = started.elapsed().as_millis() as u64;
    let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();

    let (decisions, links) = tokio::join!(
        graph::decisions::for_context(store, req.project, &ids, &paths, 100),
        graph::beliefs::linked_to(store, req.project, &ids, &paths),
    );
    let (decisions, links) = (decisions?, links?);
    let fetched_ms = started.elapsed().as_millis() as u64;

    // Words the long-term memory is matched against: the task and the sessions' tasks.
    let mut words_from = req.task.unwrap_or("").to_string();
    for s in &sessions {
        if let Some(t) = &s.task {
            words_from.push(' ');
            words_from.push_str(t);
        }
    }
    let words = terms(&words_from);
    let task_words = terms(req.task.unwrap_or(""));
    let in_scope: HashSet<&str> = ids.iter().copied().collect();

    // Candidates, in selection order. Files and decisions are taken as a contiguous newest
    // run and no section is granted more than the whole content share, so their lines are
    // tokenised lazily, never beyond that much.
    let cap = plan.text;
    let file_lines = within(
        cap,
        files.iter().map(|f| {
            let mode = f.mode.as_deref().unwrap_or("touched");
            line(
                enc,
                format!("- {} ({mode}; sessions: {})", f.path, f.sessions.join(", ")),
            )
        }),
    );
    // For a task, decisions are ranked by how many of its words they share (newest first
    // among equals), and like the other ranked sections may skip one that does not fit.
    let ranked_decisions = req.task.is_some() && req.session_id.is_none();
    let mut decisions = decisions;
    if ranked_decisions {
        let score = |d: &ContextDecision| {
            let text = format!(
                "{} {} {}",
                d.subject,
                d.choice,
                d.rationale.as_deref().unwrap_or("")
            );
            text_score(&text, &task_words) - if d.superseded_by.is_some() { 0.5 } else { 0.0 }
        };
        let mut scored: Vec<(f64, ContextDecision)> =
            decisions.into_iter().map(|d| (score(&d), d)).collect();
        // A stable sort keeps the statement's newest-first order among equals.
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        decisions = scored.into_iter().map(|(_, d)| d).collect();
    }
    let decision_lines = within(
        cap,
        decisions.iter().map(|d| {
            let mut t = format!("- {}: {}", clip(&d.subject, 200), clip(&d.choice, 300));
            if let Some(r) = d.rationale.as_deref().filter(|r| !r.trim().is_empty()) {
                t.push_str(&format!(" — {}", clip(r, 300)));
            }
            if d.superseded_by.is_some() {
                t.push_str(" (superseded)");
            }
            line(enc, t)
        }),
    );
    let linked: HashMap<&str, &Vec<String>> =
        links.iter().map(|l| (l.id.as_str(), &l.links)).collect();
    let mut ranked_beliefs: Vec<(f64, &graph::beliefs::BeliefView)> = beliefs
        .iter()
        .filter_map(|b| {
            let relevance = match linked.get(b.id.as_str()) {
                Some(l) if l.iter().any(|x| x == "session") => 1.0,
                Some(_) => 0.6,
                None => 0.5 * text_score(&b.content, &words),
            };
            (relevance > 0.0).then_some((relevance * b.conviction, b))
        })
        .collect();
    ranked_beliefs.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut ranked_memories: Vec<(f64, &ContextMemory)> = memories
        .iter()
        .filter_map(|m| {
            let relevance = if m
                .session_id
                .as_deref()
                .is_some_and(|s| in_scope.contains(s))
            {
                1.0
            } else if paths.iter().any(|p| m.content.contains(p)) {
                0.7
            } else {
                0.5 * text_score(&m.content, &words)
            };
            (relevance > 0.0).then_some((relevance * m.confidence.unwrap_or(0.5), m))
        })
        .collect();
    ranked_memories.sort_by(|a, b| b.0.total_cmp(&a.0));
    // Ranked sections skip what does not fit and may take a smaller item further down, so
    // every candidate is counted.
    let belief_lines: Vec<Line> = ranked_beliefs
        .iter()
        .map(|(_, b)| {
            line(
                enc,
                format!("- ({:.2}) {}", b.conviction, clip(&b.content, 600)),
            )
        })
        .collect();
    let memory_lines: Vec<Line> = ranked_memories
        .iter()
        .map(|(_, m)| {
            let text = format!("- ({}) {}", m.kind, m.content);
            if enc == req.stored && m.tokens > 0 {
                Line {
                    text,
                    cost: m.tokens as usize + 1,
                }
            } else {
                line(enc, text)
            }
        })
        .collect();
    let candidates = [
        files.len(),
        decisions.len(),
        ranked_beliefs.len(),
        ranked_memories.len(),
    ];

    // History flattened newest-first; a session's header is paid with its newest item.
    let mut flat: Vec<(usize, Option<usize>, usize)> = Vec::new(); // (session, op index, cost)
    for (si, s) in hist.iter().enumerate() {
        if s.ops.is_empty() {
            flat.push((si, None, s.header.cost));
        }
        for (oi, (_, l)) in s.ops.iter().enumerate() {
            let extra = if oi == 0 { s.header.cost } else { 0 };
            flat.push((si, Some(oi), l.cost + extra));
        }
    }

    // Framing: a title and one heading per section that has candidates. Tiny budgets drop
    // framing altogether so the content itself fits.
    let title = match (req.session_id, req.task) {
        (Some(sid), _) => format!("# Context for session {sid}"),
        (None, Some(t)) => format!("# Context for task: {}", clip(t, 120)),
        (None, None) => "# Context".to_string(),
    };
    let names = ["history", "files", "decisions", "beliefs", "memories"];
    let headings = [
        "## History",
        "## Files",
        "## Decisions",
        "## Beliefs",
        "## Memories",
    ];
    let counts = [
        flat.len() + relevant.as_ref().map_or(0, |r| r.items.len()),
        file_lines.len(),
        decision_lines.len(),
        belief_lines.len(),
        memory_lines.len(),
    ];
    let mut framing = tokens::count(enc, &title) + 1;
    for (i, h) in headings.iter().enumerate() {
        if counts[i] > 0 {
            framing += tokens::count(enc, h) + 1;
        }
    }
    let framed = framing <= plan.text / 2;
    // Framing is paid from the overhead share; what it leaves of that share is content's.
    let content = if framed {
        plan.text.saturating_sub(framing)
    } else {
        plan.text
    };

    let sum = |ls: &[Line]| ls.iter().map(|l| l.cost).sum::<usize>();
    let mut history_demand: usize = flat.iter().map(|f| f.2).sum();
    if let Some(r) = &relevant {
        history_demand = r.demand();
    } else if hist.iter().any(|s| s.ops.len() < s.total_ops) || hist.len() < sessions.len() {
        history_demand = history_demand.max(content);
    }
    let a = &req.allocation;
    let shares = budget::distribute(
        content,
        &[
            a.history,
            a.files,
            a.metadata / 3.0,
            a.metadata / 3.0,
            a.metadata / 3.0,
        ],
        &[
            history_demand,
            sum(&file_lines),
            sum(&decision_lines),
            sum(&belief_lines),
            sum(&memory_lines),
        ],
    );

    let mut warnings = Vec::new();
    // History: newest-first selection, at least the newest item.
    let flat_costs: Vec<usize> = flat.iter().map(|f| f.2).collect();
    let taken = budget::take_newest(&flat_costs, shares[0]);
    let mut chosen: Vec<Vec<usize>> = vec![Vec::new(); hist.len()];
    let mut shown_sessions: Vec<bool> = vec![false; hist.len()];
    let mut cut_newest: Option<Line> = None;
    for &(si, oi, _) in &flat[..taken] {
        shown_sessions[si] = true;
        if let Some(oi) = oi {
            chosen[si].push(oi);
        }
    }
    let mut history_tokens: usize = flat_costs[..taken].iter().sum();
    if taken == 0 {
        if let Some(&(si, oi, _)) = flat.first() {
            let newest = match oi {
                Some(oi) => &hist[si].ops[oi].1,
                None => &hist[si].header,
            };
            let room = shares[0].max(2) - 1;
            let text = tokens::truncate(enc, &newest.text, room);
            if !text.is_empty() {
                warnings.push("the newest history item was cut to fit the budget".to_string());
                cut_newest = Some(line(enc, text));
                history_tokens = cut_newest.as_ref().map_or(0, |l| l.cost);
                shown_sessions[si] = true;
            }
        }
    }

    let picked = relevant.as_ref().map(|r| r.select(shares[0]));
    if let Some(p) = &picked {
        history_tokens = p.tokens;
    }

    let take_files = budget::take_newest(
        &file_lines.iter().map(|l| l.cost).collect::<Vec<_>>(),
        shares[1],
    );
    let decision_costs: Vec<usize> = decision_lines.iter().map(|l| l.cost).collect();
    let decision_idx: Vec<usize> = if ranked_decisions {
        budget::take_ranked(&decision_costs, shares[2])
    } else {
        // Newest first, presented oldest first.
        (0..budget::take_newest(&decision_costs, shares[2]))
            .rev()
            .collect()
    };
    let belief_idx = budget::take_ranked(
        &belief_lines.iter().map(|l| l.cost).collect::<Vec<_>>(),
        shares[3],
    );
    let memory_idx = budget::take_ranked(
        &memory_lines.iter().map(|l| l.cost).collect::<Vec<_>>(),
        shares[4],
    );

    // Presentation: oldest first for history, files and decisions; rank order for the rest.
    let mut out: Vec<String> = Vec::new();
    if framed {
        out.push(title);
    }
    let mut history_block: Vec<String> = Vec::new();
    if let (Some(r), Some(p)) = (&relevant, &picked) {
        history_block = r.present(p);
    } else if let Some(l) = &cut_newest {
        history_block.push(l.text.clone());
    } else {
        for si in (0..hist.len()).rev() {
            if !shown_sessions[si] {
                continue;
            }
            history_block.push(hist[si].header.text.clone());
            let mut ops: Vec<&(i64, Line)> =
                chosen[si].iter().map(|&oi| &hist[si].ops[oi]).collect();
            ops.sort_by_key(|(seq, _)| *seq);
            history_block.extend(ops.into_iter().map(|(_, l)| l.text.clone()));
        }
    }
    let files_block: Vec<String> = file_lines[..take_files]
        .iter()
        .rev()
        .map(|l| l.text.clone())
        .collect();
    let decisions_block: Vec<String> = decision_idx
        .iter()
        .map(|&i| decision_lines[i].text.clone())
        .collect();
    let beliefs_block: Vec<String> = belief_idx
        .iter()
        .map(|&i| belief_lines[i].text.clone())
        .collect();
    let memories_block: Vec<String> = memory_idx
        .iter()
        .map(|&i| memory_lines[i].text.clone())
        .collect();
    let blocks = [
        &history_block,
        &files_block,
        &decisions_block,
        &beliefs_block,
        &memories_block,
    ];
    for (i, block) in blocks.iter().enumerate() {
        if block.is_empty() {
            continue;
        }
        if framed {
            out.push(headings[i].to_string());
        }
        out.extend(block.iter().cloned());
    }

    // Warnings for everything left out.
    let shown_ops: usize = chosen.iter().map(Vec::len).sum::<usize>()
        + cut_newest.iter().count()
        + picked.as_ref().map_or(0, |p| p.keys.len());
    if let (Some(r), Some(p)) = (&relevant, &picked) {
        let left = r.left_out(p);
        if left > 0 {
            warnings.push(format!("{left} less relevant operations excluded"));
        }
    }
    let excluded_sessions = sessions.len() - shown_sessions.iter().filter(|s| **s).count();
    if excluded_sessions > 0 && relevant.is_none() {
        warnings.push(format!("{excluded_sessions} older sessions excluded"));
    }
    let ops_in_shown: usize = hist
        .iter()
        .zip(&shown_sessions)
        .filter(|(_, shown)| **shown)
        .map(|(s, _)| s.total_ops)
        .sum();
    if ops_in_shown > shown_ops {
        warnings.push(format!(
            "{} older operations excluded",
            ops_in_shown - shown_ops
        ));
    }
    let all_ops: usize = sessions
        .iter()
        .map(|s| s.operation_count.max(0) as usize)
        .sum();
    let omitted = [
        all_ops.saturating_sub(shown_ops),
        candidates[0] - take_files,
        candidates[1] - decision_idx.len(),
        candidates[2] - belief_idx.len(),
        candidates[3] - memory_idx.len(),
    ];
    for (i, what) in [
        (1, "files"),
        (2, "decisions"),
        (3, "beliefs"),
        (4, "memories"),
    ] {
        if omitted[i] > 0 {
            warnings.push(format!("{} {what} not listed", omitted[i]));
        }
    }

    let items = [
        shown_ops,
        take_files,
        decision_idx.len(),
        belief_idx.len(),
        memory_idx.len(),
    ];
    let estimated = [
        history_tokens,
        sum(&file_lines[..take_files]),
        decision_idx.iter().map(|&i| decision_lines[i].cost).sum(),
        belief_idx.iter().map(|&i| belief_lines[i].cost).sum(),
        memory_idx.iter().map(|&i| memory_lines[i].cost).sum(),
    ];
    let sections = (0..names.len())
        .map(|i| Section {
            name: names[i].to_string(),
            share_tokens: shares[i] as u64,
            tokens: estimated[i] as u64,
            items: items[i] as u64,
            omitted: omitted[i] as u64,
        })
        .collect();

    let mut text = out.join("\n");
    let mut used = tokens::count(enc, &text);
    if used > req.budget {
        // The estimate was short (a join tokenised longer than its parts): cut the text.
        text = tokens::truncate(enc, &text, req.budget);
        used = tokens::count(enc, &text);
        warnings.push("the text was cut at the end to fit the budget".to_string());
    }
    tracing::debug!(
        project = %req.project,
        budget_tokens = req.budget,
        tokens_used = used,
        sessions = sessions.len(),
        scope_ms,
        history_ms,
        fetched_ms,
        duration_ms = started.elapsed().as_millis() as u64,
        "context assembled"
    );
    Ok(Context {
        text,
        tokens_used: used as u64,
        budget_tokens: req.budget as u64,
        encoding: encoding_name(enc).to_string(),
        sessions: ids.iter().map(|s| s.to_string()).collect(),
        sections,
        warnings,
    })
}

/// The wire name of an encoding.
pub fn encoding_name(e: Encoding) -> &'static str {
    match e {
        Encoding::O200kBase => "o200k_base",
        Encoding::Cl100kBase => "cl100k_base",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_from_logs_list_each_path_once_newest_first() {
        let op = |seq: i64, at: i64, read: &[&str], write: &[&str]| OperationView {
            seq,
            at,
            files_read: read.iter().map(|p| p.to_string()).collect(),
            files_modified: write.iter().map(|p| p.to_string()).collect(),
            ..Default::default()
        };
        let older = Log::new(
            1,
            vec![op(1, 10, &["a.rs", "b.rs"], &[]), op(2, 20, &[], &["a.rs"])],
        );
        let newer = Log::new(
            2,
            vec![op(1, 30, &["b.rs"], &["b.rs"]), op(2, 40, &["c.rs"], &[])],
        );
        let files = files_from_logs(&[("new", &newer), ("old", &older)], 10);
        let row = |path: &str, mode: &str, sessions: &[&str], at: i64| FileRow {
            path: path.into(),
            mode: Some(mode.into()),
            sessions: sessions.iter().map(|s| s.to_string()).collect(),
            at,
        };
        assert_eq!(
            files,
            vec![
                row("c.rs", "read", &["new"], 40),
                row("b.rs", "write", &["new", "old"], 30),
                row("a.rs", "write", &["old"], 20),
            ]
        );
        assert_eq!(
            files_from_logs(&[("new", &newer), ("old", &older)], 1).len(),
            1
        );
    }

    #[test]
    fn terms_are_lucene_safe_content_words() {
        assert_eq!(
            terms("Fix the parser: (AND) parser* with \"quotes\" — déjà"),
            vec!["fix", "parser", "quotes", "déjà"]
        );
        assert!(text_score("the Parser broke", &terms("parser")) > 0.99);
        assert_eq!(text_score("x", &[]), 0.0);
    }
}
