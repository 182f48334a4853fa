//! Gathering: everything a context reads from the store, into one [`Inputs`]. A task's turns
//! are searched first (they rank its sessions too) while the project's active beliefs, with
//! where their evidence lies, and its memories are read; the sessions' own search lists only
//! when the turns found name fewer sessions than a context draws on; then the scope (a
//! session and the sessions it continues, or a task's related sessions); then the
//! history — a task's relevant operations ([`relevant`]) with the files they touched, or the
//! sessions' newest operations ([`super::recent`]) with the files the sessions touched; last
//! the decisions of those sessions and files, and which beliefs they tie in ([`ties`]). Reads
//! only, through the store's functions; ordering and fitting are `rank`'s and `fit`'s.

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use crate::error::{ApiError, ApiResult, Code};
use crate::graph::beliefs::{BeliefView, EvidencePlaces};
use crate::graph::decisions::ContextDecision;
use crate::graph::operations::FileRow;
use crate::graph::{self, Store, StoreResult};
use crate::recall::logs::Log;
use crate::recall::scope::ScopeSession;
use crate::recall::search;
use crate::recall::{beliefs, bm25, memories, relevant, turns};

use super::line::{day, line, relevant_header};
use super::recent::{self, SessionLines};
use super::request::Request;

/// Most sessions a context draws on.
pub const MAX_SESSIONS: usize = 20;
/// Most files a context lists candidates from.
const MAX_FILES: usize = 500;
/// Most active beliefs, and most memories, a context chooses from.
const MAX_MEMORY: usize = 500;
/// Most decisions a context chooses from.
const MAX_DECISIONS: usize = 100;

/// The sessions a task context draws on: the project's sessions search ranks best for the
/// task — their own lists (`own`, read after turn search) fused with the sessions of the
/// turns found — else (nothing found, or no task) the most recent ones.
async fn candidate_sessions(
    store: &Store,
    req: &Request<'_>,
    own: Option<search::OwnLists>,
    turns: &[turns::TurnHit],
) -> StoreResult<Vec<ScopeSession>> {
    if let Some(own) = own {
        let ask = session_ask(req);
        let found = search::rank_sessions(store, req.finder.weights, &ask, own, turns).await?;
        if !found.hits.is_empty() {
            return Ok(found.hits.into_iter().filter_map(|h| h.session).collect());
        }
    }
    graph::sessions::recent(store, req.project, MAX_SESSIONS).await
}

/// The session search of a task context.
fn session_ask<'a>(req: &Request<'a>) -> search::Ask<'a> {
    search::Ask {
        lists: req.finder.lists,
        project: req.project,
        text: req.task.unwrap_or(""),
        limit: MAX_SESSIONS,
        exclude: &[],
        asked_at: req.asked_at,
        floor: None,
    }
}

/// The sessions' own lists for a task context's session search; none in session mode or
/// without a task.
async fn own_session_lists(
    store: &Store,
    req: &Request<'_>,
) -> StoreResult<Option<search::OwnLists>> {
    let ask = session_ask(req);
    if req.session_id.is_some() || ask.text.trim().is_empty() {
        return Ok(None);
    }
    search::own_lists(store, req.finder.embedder, &ask)
        .await
        .map(Some)
}

/// A context's history as read.
pub(super) enum History {
    /// A task's relevant operations, from their sessions.
    Relevant(relevant::History),
    /// The sessions' newest operations, sessions newest first.
    Newest(Vec<SessionLines>),
}

/// Milliseconds from the start of assembly to the end of each reading step.
#[derive(Clone, Copy, Debug)]
pub(super) struct Timings {
    pub scope_ms: u64,
    pub history_ms: u64,
    pub fetched_ms: u64,
}

/// Everything a context is made from, as the store gave it.
pub(super) struct Inputs {
    /// The sessions drawn on: a task's relevant sessions first (best first), then the
    /// scope's others, newest first.
    pub sessions: Vec<ScopeSession>,
    pub history: History,
    /// Files: those a task's relevant operations touched, in the order of the hits; else
    /// those the sessions touched, newest first.
    pub files: Vec<FileRow>,
    /// Decisions of the sessions or about the files, newest first.
    pub decisions: Vec<ContextDecision>,
    /// The project's active beliefs.
    pub beliefs: Vec<BeliefView>,
    /// How beliefs are tied to the sessions or the files, by belief id.
    pub ties: HashMap<String, Tie>,
    /// The project's memories.
    pub memories: memories::Memories,
    pub timings: Timings,
}

impl Inputs {
    /// The ids of the sessions drawn on, in order.
    pub fn ids(&self) -> Vec<&str> {
        self.sessions.iter().map(|s| s.id.as_str()).collect()
    }
}

/// Reads what `req` needs, history until `want` tokens are in hand. `session_not_found` when
/// `session_id` names no session of the project.
pub(super) async fn gather(
    store: &Store,
    req: &Request<'_>,
    want: usize,
    started: Instant,
) -> ApiResult<Inputs> {
    // The project's long-term memory does not depend on the scope: read it meanwhile.
    // A task's turns are searched first: they rank its sessions too.
    let (turn_hits, long_term) = tokio::join!(
        Box::pin(find_turns(store, req, want)),
        Box::pin(long_term(store, req)),
    );
    let (turn_hits, (beliefs, memories)) = (turn_hits?, long_term?);
    let (beliefs, places): (Vec<BeliefView>, Vec<EvidencePlaces>) = beliefs.into_iter().unzip();
    let task = bm25::words(req.task_only().unwrap_or(""));
    let found = operations_of(&turn_hits, &task);
    let order = sessions_in_order(&found);
    // When the relevant operations' sessions alone fill the context, the sessions' own lists
    // would rank sessions that are never shown: they are not read.
    let own = if order.len() >= MAX_SESSIONS {
        None
    } else {
        Box::pin(own_session_lists(store, req)).await?
    };
    // A task with relevant operations: its history is those, from their sessions first, and
    // its files are the ones they touched. Their operations and sessions are read while the
    // scope's sessions are searched.
    let (sessions, relevant) = if found.is_empty() {
        (Box::pin(scope(store, req, own, &turn_hits)).await?, None)
    } else {
        let full = order.len() >= MAX_SESSIONS;
        let (sessions, read) = tokio::join!(
            Box::pin(async {
                if full {
                    // The relevant sessions fill the context: the scope adds nothing.
                    Ok(Vec::new())
                } else {
                    scope(store, req, own, &turn_hits).await
                }
            }),
            Box::pin(read_relevant(store, req, &found, order, want, &task)),
        );
        let (sessions, r) = relevant_history(req, sessions?, read?, found, task);
        (sessions, Some(r))
    };
    let scope_ms = started.elapsed().as_millis() as u64;
    let ids: Vec<&str> = sessions.iter().map(|s| s.id.as_str()).collect();

    let (history, files) = match relevant {
        Some(r) => {
            let files = r.files(MAX_FILES);
            (History::Relevant(r), files)
        }
        None => {
            let cached = recent::session_logs(req, store, &sessions, want).await?;
            let (newest, files) = if cached.len() == sessions.len() {
                // Every session's log is in hand: its files need no query.
                let logs: Vec<(&str, &Log)> = sessions
                    .iter()
                    .filter_map(|s| Some((s.id.as_str(), cached.get(&s.id)?.as_ref())))
                    .collect();
                let files = recent::files_from_logs(&logs, MAX_FILES);
                (
                    recent::newest(store, req, &sessions, &cached, want).await?,
                    files,
                )
            } else {
                let (newest, files) = tokio::join!(
                    recent::newest(store, req, &sessions, &cached, want),
                    graph::operations::files_of(store, req.project, &ids, MAX_FILES),
                );
                (newest?, files?)
            };
            (History::Newest(newest), files)
        }
    };
    let history_ms = started.elapsed().as_millis() as u64;
    let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();

    let decisions =
        graph::decisions::for_context(store, req.project, &ids, &paths, MAX_DECISIONS).await?;
    let ties = ties(places, &ids, &paths);
    let fetched_ms = started.elapsed().as_millis() as u64;
    Ok(Inputs {
        sessions,
        history,
        files,
        decisions,
        beliefs,
        ties,
        memories,
        timings: Timings {
            scope_ms,
            history_ms,
            fetched_ms,
        },
    })
}

/// The project's active beliefs with where their evidence lies, and its memories: both
/// fingerprints in one statement, then each read again only if its own has changed.
async fn long_term(
    store: &Store,
    req: &Request<'_>,
) -> StoreResult<(Vec<(BeliefView, EvidencePlaces)>, memories::Memories)> {
    let now = graph::beliefs::fingerprints(store, req.project).await?;
    tokio::try_join!(
        beliefs::active_with_places(
            store,
            req.project,
            req.half_life_ms,
            MAX_MEMORY as i64,
            now.beliefs
        ),
        memories::for_context(store, req.project, MAX_MEMORY, now.memories),
    )
}

/// How a belief is tied to a context.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Tie {
    /// Evidence of it lies in one of the context's sessions.
    Session,
    /// An operation informing it touched one of the context's files.
    File,
}

/// The beliefs whose evidence lies in `sessions` or on `files`, and how (a session first).
fn ties(places: Vec<EvidencePlaces>, sessions: &[&str], files: &[&str]) -> HashMap<String, Tie> {
    let sessions: HashSet<&str> = sessions.iter().copied().collect();
    let files: HashSet<&str> = files.iter().copied().collect();
    places
        .into_iter()
        .filter_map(|p| {
            let tie = if p.sessions.iter().any(|s| sessions.contains(s.as_str())) {
                Tie::Session
            } else if p.files.iter().any(|f| files.contains(f.as_str())) {
                Tie::File
            } else {
                return None;
            };
            Some((p.id, tie))
        })
        .collect()
}

/// The sessions of the request, newest first, or `session_not_found`. A task's sessions are
/// ranked with their own lists (`own`) and the turns already found for it (`turns`).
async fn scope(
    store: &Store,
    req: &Request<'_>,
    own: Option<search::OwnLists>,
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
        None => candidate_sessions(store, req, own, turns).await?,
    };
    sessions.truncate(MAX_SESSIONS);
    sessions.sort_by(|a, b| {
        b.last_activity_at
            .cmp(&a.last_activity_at)
            .then_with(|| a.id.cmp(&b.id))
    });
    Ok(sessions)
}

/// The turns turn search finds most relevant to a task, best first; nothing in session mode.
async fn find_turns(
    store: &Store,
    req: &Request<'_>,
    share: usize,
) -> StoreResult<Vec<turns::TurnHit>> {
    let Some(task) = req.task_only().filter(|t| !t.trim().is_empty()) else {
        return Ok(Vec::new());
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
            count_pending: false,
            asked_at: req.asked_at,
            floor: None,
        },
    )
    .await?;
    Ok(found.hits)
}

/// The operations among turn hits, for a task's history (`task`: its stemmed words):
/// memories and summaries have sections of their own (or a header).
fn operations_of(hits: &[turns::TurnHit], task: &[String]) -> Vec<relevant::Found> {
    hits.iter()
        .filter(|h| !h.session_id.is_empty() && h.kind != "memory" && h.kind != "summary")
        .map(|h| relevant::Found::of_hit(h.clone(), task))
        .collect()
}

/// What [`read_relevant`] reads for a task's relevant operations: their sessions in the
/// order of their best hit, the sessions' rows, and the history items.
struct RelevantRead {
    order: Vec<String>,
    rows: Vec<ScopeSession>,
    items: HashMap<relevant::Key, relevant::Item>,
}

/// Reads what `found` needs: its operations and the answers after them (a long one cut around
/// what bears on `task`, the task's stemmed words; an answer shorter than a hit), and its
/// sessions.
async fn read_relevant(
    store: &Store,
    req: &Request<'_>,
    found: &[relevant::Found],
    order: Vec<String>,
    share: usize,
    task: &[String],
) -> StoreResult<RelevantRead> {
    let ids: Vec<&str> = order.iter().map(String::as_str).collect();
    let lines = relevant::Lines {
        encoding: req.encoding,
        stored: req.stored,
        share,
        task,
    };
    let (rows, items) = tokio::join!(
        relevant::sessions(store, req.project, &ids),
        relevant::read_items(store, req.project, found, lines),
    );
    Ok(RelevantRead {
        order,
        rows: rows?,
        items: items?,
    })
}

/// The sessions of the relevant operations, each once, in the order of their best hit.
fn sessions_in_order(found: &[relevant::Found]) -> Vec<String> {
    let mut order: Vec<String> = Vec::new();
    for f in found {
        if !order.contains(&f.session_id) {
            order.push(f.session_id.clone());
        }
    }
    order
}

/// Puts the sessions of the relevant operations, best first, before the other sessions of
/// the scope, each with its header.
fn relevant_history(
    req: &Request<'_>,
    scope: Vec<ScopeSession>,
    read: RelevantRead,
    found: Vec<relevant::Found>,
    task: Vec<String>,
) -> (Vec<ScopeSession>, relevant::History) {
    let RelevantRead { order, rows, items } = read;
    let mut by_id: HashMap<String, ScopeSession> =
        rows.into_iter().map(|s| (s.id.clone(), s)).collect();
    let mut headed = Vec::new();
    for id in &order {
        let Some(s) = by_id.remove(id) else { continue };
        let ats = items.iter().filter(|(k, _)| k.0 == s.id).map(|(_, i)| i.at);
        let (oldest, newest) = ats.fold((s.started_at, i64::MIN), |(lo, hi), at| {
            (lo.min(at), hi.max(at))
        });
        // A session resumed on a later day: its header gives the day of its last operation
        // read too, so a turn of that day is not taken for one of the first.
        let until = Some(day(newest)).filter(|d| newest > oldest && *d != day(oldest));
        headed.push((oldest, day(oldest), until, s));
    }
    let mut days: HashMap<String, usize> = HashMap::new();
    for (_, d, _, _) in &headed {
        *days.entry(d.clone()).or_default() += 1;
    }
    let mut headers = HashMap::new();
    let mut sessions = Vec::new();
    for (when, d, until, s) in headed {
        let same_day = days[&d] > 1;
        let header = relevant_header(&s, when, &d, same_day, until.as_deref());
        let l = line(req.encoding, header);
        headers.insert(s.id.clone(), (when, l.text, l.cost));
        sessions.push(s);
    }
    for s in scope {
        if !headers.contains_key(&s.id) {
            sessions.push(s);
        }
    }
    sessions.truncate(MAX_SESSIONS);
    (
        sessions,
        relevant::History {
            found,
            items,
            headers,
            task,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn places(id: &str, sessions: &[&str], files: &[&str]) -> EvidencePlaces {
        EvidencePlaces {
            id: id.into(),
            sessions: sessions.iter().map(|s| s.to_string()).collect(),
            files: files.iter().map(|f| f.to_string()).collect(),
        }
    }

    #[test]
    fn a_belief_is_tied_by_a_session_first_then_by_a_file() {
        let all = vec![
            places("both", &["s1"], &["src/a.rs"]),
            places("file", &["s9"], &["src/a.rs", "src/z.rs"]),
            places("elsewhere", &["s9"], &["src/z.rs"]),
            places("session", &["s2", "s9"], &[]),
        ];
        let ties = ties(all, &["s1", "s2"], &["src/a.rs", "src/b.rs"]);
        assert_eq!(ties.get("both"), Some(&Tie::Session));
        assert_eq!(ties.get("session"), Some(&Tie::Session));
        assert_eq!(ties.get("file"), Some(&Tie::File));
        assert_eq!(ties.get("elsewhere"), None);
        assert_eq!(ties.len(), 3);
    }
}
