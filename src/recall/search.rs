//! Hybrid session search: BM25 over search documents (always), embedding similarity (when an
//! embedder is configured and the project has embeddings) and the sessions of the turns turn
//! search finds (and, when the query names a time, the sessions of those turns from then),
//! fused by reciprocal rank ([`crate::recall::rank::fuse`]), then re-ranked by
//! `w_s·similarity + w_r·recency + w_i·importance`.
//!
//! - recency = 1 / (1 + days/30) of the session's last activity;
//! - importance = decisions and progress, capped at 1 (computed by the indexer);
//! - similarity = the mean, over the lists in play that could hold the session, of its
//!   normalised score in each: a session with no search document yet cannot be in the
//!   words' list, one not embedded by the model yet not in the nearest neighbours'
//!   ([`over_lists_holding`]); when turns were found, half of it is the session's lead
//!   instead: its best turn's score over the best turn's ([`leads`]). A session's document
//!   and vector sum up all it did; the turn that answers is what the query looks for.

use std::collections::{HashMap, HashSet};

use crate::domain::when;
use crate::embed::{Calibration, Embedder};
use crate::graph::search::Scored;
use crate::graph::{self, now_ms, Store, StoreResult};
use crate::recall::rank::{fuse, lucene_query, over_lists_holding, recency_at};
pub use crate::recall::rank::{Lists, Mode, Weights, MAX_QUERY_CHARS};
use crate::recall::scope::ScopeSession;
use crate::recall::turns;

/// Hits per search at most.
pub const MAX_LIMIT: usize = 50;
pub const DEFAULT_LIMIT: usize = 10;
const DAY_MS: f64 = 86_400_000.0;
/// Turns asked of turn search to rank sessions by the turns they hold.
pub const TURN_HITS: usize = 30;
/// Sessions compared one by one at most, when the approximate index cannot answer alone.
const EXACT_SCAN: usize = 2_000;

/// One session found.
#[derive(Clone, Debug, serde::Serialize, poem_openapi::Object)]
pub struct Hit {
    pub session_id: String,
    pub task: Option<String>,
    pub summary: Option<String>,
    pub status: Option<String>,
    /// How well it matches the query, 0..1.
    pub similarity: f64,
    /// The re-ranking score, 0..1 with the default weights.
    pub score: f64,
    /// Days since the session's last activity.
    pub days_ago: f64,
    /// Files it wrote (first) or touched, at most 20.
    pub files: Vec<String>,
    /// The session as context draws on it (read with the hit, not part of the answer).
    #[oai(skip)]
    #[serde(skip)]
    pub session: Option<ScopeSession>,
}

#[derive(Clone, Debug)]
pub struct Found {
    pub mode: Mode,
    pub hits: Vec<Hit>,
    /// Why hybrid was not possible, when an endpoint is configured but failed.
    pub degraded: Option<String>,
}

async fn fulltext(store: &Store, project: &str, text: &str, k: usize) -> StoreResult<Vec<Scored>> {
    let Some(query) = lucene_query(project, text) else {
        return Ok(Vec::new());
    };
    graph::search::sessions_by_words(store, project, &query, k).await
}

/// The nearest sessions by the vectors `model` made.
async fn vector(
    store: &Store,
    project: &str,
    model: &str,
    v: &[f32],
    k: usize,
) -> StoreResult<Vec<Scored>> {
    // The index is shared by every project: ask for more, and compare this project's
    // sessions one by one when other projects crowded it out and it is small enough.
    let wide = (k * 4).min(1_000);
    let approx = graph::search::sessions_by_vector(store, project, model, v, wide, None).await?;
    if approx.len() >= k {
        return Ok(approx.into_iter().take(k).collect());
    }
    let exact =
        graph::search::sessions_by_vector(store, project, model, v, k, Some(EXACT_SCAN)).await?;
    Ok(if exact.is_empty() { approx } else { exact })
}

/// Searches `project`'s sessions for `text`; sessions in `exclude` are left out.
pub async fn search(
    store: &Store,
    embedder: Option<&Embedder>,
    weights: Weights,
    project: &str,
    text: &str,
    limit: usize,
    exclude: &[String],
) -> StoreResult<Found> {
    let ask = Ask {
        lists: Lists::Both,
        project,
        text,
        limit,
        exclude,
        asked_at: None,
        floor: None,
    };
    search_in(store, embedder, weights, &ask, None).await
}

/// [`search`] on the chosen ranked lists only, ranking sessions by `turns` when the caller has
/// searched the turns for the same text already (else turn search runs here, beside the
/// sessions' own lists).
pub async fn search_in(
    store: &Store,
    embedder: Option<&Embedder>,
    weights: Weights,
    ask: &Ask<'_>,
    turns: Option<&[turns::TurnHit]>,
) -> StoreResult<Found> {
    let (own, found) = match turns {
        Some(hits) => (own_lists(store, embedder, ask).await?, hits.to_vec()),
        None => {
            let turn_query = turns::TurnQuery {
                project: ask.project,
                text: ask.text,
                limit: TURN_HITS,
                types: None,
                sessions: None,
                exclude_session: None,
                count_pending: false,
                asked_at: ask.asked_at,
                floor: ask.floor,
            };
            // A session holding the turns that answer is found even when its own document
            // (the task and summary) says little about them.
            let (own, found) = tokio::join!(
                Box::pin(own_lists(store, embedder, ask)),
                // On the heap: the turn search future is large for a request's stack.
                Box::pin(turns::search_in(
                    store,
                    embedder,
                    ask.lists,
                    weights,
                    &turn_query
                )),
            );
            (own?, found?.hits)
        }
    };
    rank_sessions(store, weights, ask, own, &found).await
}

/// What a session search asks.
#[derive(Clone, Copy)]
pub struct Ask<'a> {
    pub lists: Lists,
    pub project: &'a str,
    pub text: &'a str,
    pub limit: usize,
    /// Sessions left out.
    pub exclude: &'a [String],
    /// When the query is asked, in epoch milliseconds: the times it names and recency count
    /// back from then. `None`: now.
    pub asked_at: Option<i64>,
    /// Keep only sessions that bear on the query: their document holds one of its words, one
    /// of their turns bears on it ([`turns::TurnQuery::floor`]), their vector is at least this
    /// close or they were active in the time it names. `None`: every session ranked (a task
    /// context ranks them all).
    pub floor: Option<f64>,
}

impl Ask<'_> {
    /// The moment the query counts back from.
    pub fn now(&self) -> i64 {
        self.asked_at.unwrap_or_else(now_ms)
    }

    fn limit(&self) -> usize {
        self.limit.clamp(1, MAX_LIMIT)
    }

    /// How many each list is asked for.
    fn k(&self) -> usize {
        ((self.limit() + self.exclude.len()) * 5).max(50)
    }
}

/// The sessions' own ranked lists: their documents' words, their vectors.
pub struct OwnLists {
    bm25: Vec<Scored>,
    nearest: Vec<Scored>,
    degraded: Option<String>,
    /// The time the query names, read once for both lists and the ranking.
    asked: Option<when::Asked>,
    /// The model whose vectors the nearest-neighbour list compared, when it was asked.
    model: Option<String>,
    /// How that model's cosines read.
    scale: Calibration,
}

/// Reads the sessions' own lists for `ask` (the query is embedded once, before the vector list
/// asks for it); they do not depend on turn search, so a caller may run both at once.
pub async fn own_lists(
    store: &Store,
    embedder: Option<&Embedder>,
    ask: &Ask<'_>,
) -> StoreResult<OwnLists> {
    let k = ask.k();
    let embedder = embedder.filter(|_| ask.lists.vector());
    // The words that name a time say when, not what (`domain::when`).
    let read = when::read(ask.text, ask.now());
    let worded = read.as_ref().map_or(ask.text, |r| r.rest.as_str());
    let (bm25, embedded) = tokio::join!(
        async {
            if ask.lists.fulltext() {
                fulltext(store, ask.project, worded, k).await
            } else {
                Ok(Vec::new())
            }
        },
        async {
            match embedder {
                Some(e) => Some(e.embed_query(ask.text).await),
                None => None,
            }
        }
    );
    let bm25 = bm25?;
    let mut degraded = None;
    let query_vector = match embedded {
        Some(Ok(v)) => Some(v),
        Some(Err(crate::embed::EmbedError::Unavailable(why))) => {
            // Logged once where the model failed to load; each answer says it again.
            degraded = Some(why);
            None
        }
        Some(Err(err)) => {
            tracing::warn!(error = %err, "query embedding failed; searching on fulltext alone");
            degraded = Some(format!("embedding the query failed ({err}); fulltext only"));
            None
        }
        None => None,
    };
    let (nearest, model) = match (&query_vector, embedder) {
        (Some(v), Some(e)) if crate::embed::has_direction(v) => (
            vector(store, ask.project, e.model(), v, k).await?,
            Some(e.model().to_string()),
        ),
        _ => (Vec::new(), None),
    };
    Ok(OwnLists {
        bm25,
        nearest,
        degraded,
        asked: read.map(|r| r.asked),
        model,
        scale: embedder.map_or(Calibration::PLAIN, Embedder::calibration),
    })
}

/// Fuses the sessions' own lists with the sessions of the turns found for the same text
/// (`turns`, best first) and, when the text names a time, the sessions of those turns from
/// then; re-ranks by similarity, recency and importance and keeps the best `ask.limit`.
pub async fn rank_sessions(
    store: &Store,
    weights: Weights,
    ask: &Ask<'_>,
    own: OwnLists,
    turns: &[turns::TurnHit],
) -> StoreResult<Found> {
    let OwnLists {
        bm25,
        nearest,
        degraded,
        asked,
        model,
        scale,
    } = own;
    let by_turns = sessions_of(turns, ask.floor.is_some());
    let leads = leads(turns, ask.floor.is_some());
    let by_time = asked
        .map(|a| sessions_in_time(turns, a))
        .unwrap_or_default();
    let (lists, project, exclude, limit) = (ask.lists, ask.project, ask.exclude, ask.limit());
    let mode = if nearest.is_empty() {
        Mode::Fulltext
    } else {
        Mode::Hybrid
    };
    let words = if lists.fulltext() {
        Some(normalise_bm25(bm25))
    } else {
        None
    };
    let meaning = (mode == Mode::Hybrid).then(|| normalise_cosine(nearest, scale));
    // What bears on the query: a session whose document holds one of its words, whose vector
    // is close enough, which holds a turn that bears on it (turn search kept only those, and
    // `by_turns` lists the sessions of them all) or was active in the time it names.
    let bearing: Option<HashSet<String>> = ask.floor.map(|floor| {
        let close = meaning.iter().flatten().filter(|(_, s)| *s >= floor);
        words
            .iter()
            .flatten()
            .chain(close)
            .chain(&by_time)
            .chain(&by_turns)
            .map(|(id, _)| id.clone())
            .collect()
    });
    let mut ranked: Vec<Vec<(String, f64)>> = words.into_iter().chain(meaning).collect();
    if !by_turns.is_empty() {
        ranked.push(by_turns);
    }
    if !by_time.is_empty() {
        ranked.push(by_time);
    }
    let mut fused = fuse(&ranked, exclude, (limit * 4).max(40));
    if let Some(bearing) = &bearing {
        fused.retain(|(id, _)| bearing.contains(id));
    }
    let ids: Vec<&str> = fused.iter().map(|(id, _)| id.as_str()).collect();
    let model = model.as_deref().filter(|_| mode == Mode::Hybrid);
    let rows = graph::search::hit_sessions(store, project, &ids, model).await?;
    let similarity: HashMap<&str, f64> = fused.iter().map(|(id, s)| (id.as_str(), *s)).collect();
    let now = ask.now();
    let in_play = ranked.len();
    let mut hits: Vec<Hit> = rows
        .into_iter()
        .map(|r| {
            let fused = similarity.get(r.id.as_str()).copied().unwrap_or(0.0);
            // A session whose search document is not made yet cannot be in the words' list,
            // one its model has not embedded yet not in the nearest neighbours'.
            let cannot_hold = usize::from(lists.fulltext() && !r.worded)
                + usize::from(model.is_some() && !r.vectored);
            let mut sim = over_lists_holding(fused, in_play, cannot_hold);
            if !leads.is_empty() {
                sim = (sim + leads.get(r.id.as_str()).copied().unwrap_or(0.0)) / 2.0;
            }
            let last = r.last_activity_at.unwrap_or(now);
            let days = (now - last).max(0) as f64 / DAY_MS;
            let score = weights.similarity * sim
                + weights.recency * recency_at(now, last)
                + weights.importance * r.importance.clamp(0.0, 1.0);
            let session = ScopeSession {
                id: r.id.clone(),
                task: r.task.clone(),
                status: r.status.clone().unwrap_or_default(),
                summary: r.summary.clone(),
                llm_summary: r.llm_summary,
                started_at: r.started_at,
                last_activity_at: r.last_activity_at.unwrap_or(r.started_at),
                operation_count: r.operation_count,
            };
            Hit {
                session_id: r.id,
                task: r.task,
                summary: r.summary,
                status: r.status,
                similarity: round3(sim),
                score: round3(score),
                days_ago: (days * 10.0).round() / 10.0,
                files: r.files,
                session: Some(session),
            }
        })
        .collect();
    hits.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(b.similarity.total_cmp(&a.similarity))
            .then(a.session_id.cmp(&b.session_id))
    });
    hits.truncate(limit);
    Ok(Found {
        mode,
        hits,
        degraded,
    })
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// The sessions of turn hits (best first), each once, with its best turn's similarity. Only
/// turns the query's words found count, unless the hits were `floored` (kept only when they
/// bear on the query, [`Ask::floor`]): a vector list always has a nearest turn, however far.
/// A floored turn close in meaning names its session even when the session's own vector,
/// made from the start of a long session, is far from the query.
pub fn sessions_of(hits: &[turns::TurnHit], floored: bool) -> Vec<(String, f64)> {
    sessions_where(hits, |h| counts(h, floored))
}

/// Each session's lead: its best turn's score over the best of all (0..=1), of the turns
/// [`sessions_of`] counts. Empty when none counts.
pub fn leads(hits: &[turns::TurnHit], floored: bool) -> HashMap<String, f64> {
    let counted = || {
        hits.iter()
            .filter(move |h| !h.session_id.is_empty() && counts(h, floored))
    };
    let top = counted().map(|h| h.score).fold(0.0_f64, f64::max);
    let mut out: HashMap<String, f64> = HashMap::new();
    if top <= 0.0 {
        return out;
    }
    for h in counted() {
        let lead = out.entry(h.session_id.clone()).or_insert(0.0);
        *lead = lead.max(h.score / top);
    }
    out
}

/// Whether a turn hit names its session ([`sessions_of`]).
fn counts(h: &turns::TurnHit, floored: bool) -> bool {
    floored || h.matched_by != turns::MatchedBy::Vector
}

/// The sessions of the turn hits from the time asked about (best first), each once, with its
/// best such turn's similarity: a session of that day ranks with the sessions on the subject.
pub fn sessions_in_time(hits: &[turns::TurnHit], asked: when::Asked) -> Vec<(String, f64)> {
    sessions_where(hits, |h| asked.holds(h.at))
}

fn sessions_where(
    hits: &[turns::TurnHit],
    keep: impl Fn(&turns::TurnHit) -> bool,
) -> Vec<(String, f64)> {
    let mut out: Vec<(String, f64)> = Vec::new();
    for h in hits.iter().filter(|h| !h.session_id.is_empty() && keep(h)) {
        if !out.iter().any(|(id, _)| *id == h.session_id) {
            out.push((h.session_id.clone(), h.similarity));
        }
    }
    out
}

/// BM25 scores divided by the best one (Lucene scores have no fixed scale).
fn normalise_bm25(list: Vec<Scored>) -> Vec<(String, f64)> {
    let best = list.iter().map(|s| s.score).fold(0.0_f64, f64::max);
    list.into_iter()
        .map(|s| {
            let n = if best > 0.0 { s.score / best } else { 0.0 };
            (s.id, n)
        })
        .collect()
}

/// Neo4j reports cosine as (1 + cos) / 2; back to cos, read on the common scale.
fn normalise_cosine(list: Vec<Scored>, scale: Calibration) -> Vec<(String, f64)> {
    list.into_iter()
        .map(|s| (s.id, scale.read(2.0 * s.score - 1.0)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use turns::{MatchedBy, TurnHit};

    fn hit(session: &str, score: f64, matched_by: MatchedBy) -> TurnHit {
        TurnHit {
            operation_id: format!("{session}-{score}"),
            session_id: session.into(),
            seq: 1,
            kind: "message".into(),
            role: None,
            text: String::new(),
            snippet: String::new(),
            at: 0,
            score,
            similarity: score,
            matched_by,
        }
    }

    #[test]
    fn a_session_leads_by_its_best_turn_over_the_best_found() {
        let hits = [
            hit("a", 0.8, MatchedBy::Both),
            hit("b", 0.6, MatchedBy::Fulltext),
            hit("a", 0.7, MatchedBy::Both),
            hit("c", 0.9, MatchedBy::Vector),
            hit("", 1.0, MatchedBy::Both),
        ];
        // Unfloored, a turn found by its meaning alone names no session: the best is a's.
        let leads = leads(&hits, false);
        assert_eq!(leads.len(), 2);
        assert!((leads["a"] - 1.0).abs() < 1e-9);
        assert!((leads["b"] - 0.75).abs() < 1e-9);
        // Floored, every turn kept bears on the query: c's turn is the best.
        let leads = super::leads(&hits, true);
        assert!((leads["c"] - 1.0).abs() < 1e-9);
        assert!((leads["a"] - 0.8 / 0.9).abs() < 1e-9);
        assert!(super::leads(&[hit("a", 0.0, MatchedBy::Both)], true).is_empty());
    }
}
