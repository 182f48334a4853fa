//! Turn-level search: the operations (conversation turns, tool calls, decisions), memories and
//! session summaries of a project that match a query, best first.
//!
//! Two ranked lists — BM25 over each turn's bounded `search_text` (always; a pool of 200 from
//! the shared index, more with filters, scored again with the project's own word statistics,
//! [`bm25`]) and the nearest operations by embedding (when an embedder is configured; only
//! vectors its model made) — are fused by score (BM25 over its best, the
//! neighbours' similarities spread between their worst and best: [`rank::spread`],
//! [`rank::fuse_scores`]; a candidate gains part of the score of a strong one beside it or
//! two places away and of the best one in its session, [`rank::with_neighbours`]; the turns
//! of the one speaker a query names gain a little, and a query naming speakers is embedded
//! without their names, [`crate::recall::speaker`]), re-ranked by
//! `w_s·similarity + w_r·recency + w_i·importance` (the weights of
//! [`crate::recall::search`]), then diversified by maximal marginal relevance
//! (cosine between the first 100's vectors — their signatures, which the lists' rows bring,
//! [`signature`]; a vector stored without one is read — word overlap further down or where a
//! turn has none), so near-identical turns do not crowd the top. Operations not embedded
//! yet (and memories, which have no vector) are still found by BM25, and scored by it alone
//! ([`rank::Vectorless`]). Query text reaches Lucene escaped
//! ([`rank::lucene_words_on`]).
//!
//! A time the query names ([`when`]) is searched by what happened then, not by its words: the
//! words of a dated day leave the words searched, candidates from then count up to
//! [`rank::IN_TIME`] times (less the more of them are from then, [`rank::in_time_factor`]),
//! and the nearest operations of the project's sessions active then join the vector list.
//! "Then" counts back from when the query is asked ([`TurnQuery::asked_at`], else now).
//!
//! A text said again and again (a command run in every session) is weighed by a few of its
//! copies, and a list its copies crowd is asked deeper ([`repeats`]), so what else bears on the
//! query is still found.
//!
//! A search (not a task context) keeps only what bears on the query ([`bears_on_query`]: a
//! word of it, a cosine past the floor, or the time it names), so a query about nothing the
//! project holds finds nothing rather than its nearest strangers.

use std::collections::{BinaryHeap, HashMap, HashSet};

use crate::domain::operation::OpType;
use crate::domain::{shown, when};
use crate::embed::{signature, Calibration, Embedder};
use crate::graph::turns::{self as store_turns, Filter, TurnRow, Vectors};
use crate::graph::{now_ms, Store, StoreResult};
use crate::recall::rank::{self, Lists, Mode, Weights};
use crate::recall::repeats::{self, drop_repeated_texts};
use crate::recall::speaker::{self, Named, Speakers};
use crate::recall::{answered, bm25, excerpt, held_vectors, turn_stats};

/// Query characters at most.
pub const MAX_QUERY_CHARS: usize = rank::MAX_QUERY_CHARS;
/// Hits per search at most.
pub const MAX_LIMIT: usize = 50;
/// The kinds a turn search may filter on: the operation types, then memories and summaries.
pub const TURN_KINDS: &[&str] = &KINDS;

const KINDS: [&str; OpType::ALL.len() + 2] = {
    let mut out = [""; OpType::ALL.len() + 2];
    let mut i = 0;
    while i < OpType::ALL.len() {
        out[i] = OpType::ALL[i];
        i += 1;
    }
    out[i] = "memory";
    out[i + 1] = "summary";
    out
};

/// Hits one search returns at most: what a request may ask for ([`MAX_LIMIT`]), or what a
/// task context fills a large history share with.
pub const MAX_HITS: usize = 200;
pub const DEFAULT_LIMIT: usize = 10;
/// Operation types a query may filter on at most.
pub const MAX_TYPES: usize = 16;
/// Sessions a query may be restricted to at most.
pub const MAX_SESSIONS: usize = 200;
/// Characters of a snippet at most (without the ellipses).
pub const SNIPPET_CHARS: usize = 240;
/// Candidates asked of each list (without filters): the full-text index's ranking uses the
/// whole database's word weights, so the turns that answer may lie well below its top; the
/// project's own statistics re-rank them ([`bm25`]). Also enough for the largest history a
/// task context fills (~150 turns at 8,000 tokens); asking for more only costs time (at a
/// million operations, 400 neighbours take twice as long to find as 200).
const LIST_DEPTH: usize = 200;
/// Cosine (on the common scale, [`Calibration`]) from which a hit holding none of the query's
/// words bears on it by meaning, unless configured otherwise (`CAIRN_SEARCH_MIN_COSINE`).
/// Queries about nothing a conversation held (random letters, another domain's jargon) came
/// no closer than 0.30 to any of LoCoMo's turns, with a median best of 0.19; of the evidence
/// turns for LoCoMo's questions, 1 % hold none of the question's words and lie below it.
pub const MIN_COSINE: f64 = 0.3;
/// Candidates the diversity step compares by their vectors at most; further down, by their
/// words. Reading the vectors of a large context's every candidate took longer than the rest
/// of its search after the lists.
const MMR_VECTORS: usize = 100;
/// Operations compared one by one when the approximate vector index cannot answer alone.
const EXACT_SCAN: usize = held_vectors::MOST;
/// Sessions of the time a query asks about searched by their vectors at most, and their
/// operations compared at most.
const IN_TIME_SESSIONS: usize = 10;
const IN_TIME_SCAN: usize = 1_000;
/// How many fusion pools of the nearest operations of that time are kept.
const IN_TIME_POOLS: usize = 2;
/// Neighbours asked of the approximate index at most.
const WIDEST: usize = 1_000;
/// Share of the shared full-text index from which a project is narrowed to after Lucene ranks
/// rather than inside it ([`fulltext_list`]).
const WHOLE_INDEX: f64 = 0.9;
/// How many more rows than its share would give a project the un-narrowed full-text
/// statement asks for. On a million-turn project holding 91 % of the index, "fix parser
/// cache" kept 194 of the index's best 242 (other projects' turns holding "fix" rank first),
/// 392 of its best 440. Lucene's cost hardly grows with the rows asked for (~1 ms from 242 to
/// 500).
const WIDE_MARGIN: f64 = 2.0;
/// Weight of relevance against novelty in the diversity step.
const MMR_LAMBDA: f64 = 0.75;
/// Likeness (cosine of vectors, else shared words) from which two turns count as saying the
/// same thing: below it, related turns are not held against each other.
const NEAR_DUPLICATE: f64 = 0.8;

/// What to look for.
#[derive(Clone, Copy, Debug)]
pub struct TurnQuery<'a> {
    pub project: &'a str,
    pub text: &'a str,
    pub limit: usize,
    /// Kinds to keep: operation types (`message`, `decision`, …), `memory`, `summary`.
    pub types: Option<&'a [String]>,
    /// Restrict to these sessions (`None`: the whole project).
    pub sessions: Option<&'a [String]>,
    /// Never return this session's turns, nor its subagents'.
    pub exclude_session: Option<&'a str>,
    /// Also count the project's operations still awaiting a vector (a search answer reports
    /// them; a context has no use for the count).
    pub count_pending: bool,
    /// When the query is asked, in epoch milliseconds: the times it names ("last week") and
    /// recency count back from then. `None`: now.
    pub asked_at: Option<i64>,
    /// Keep only hits that bear on the query ([`bears_on_query`]), by meaning alone from this
    /// cosine: a search for something the project never held finds nothing rather than its
    /// nearest strangers. `None`: everything ranked (a task context fills its budget with the
    /// best there is).
    pub floor: Option<f64>,
}

impl TurnQuery<'_> {
    /// The moment the query counts back from.
    pub fn now(&self) -> i64 {
        self.asked_at.unwrap_or_else(now_ms)
    }
}

/// Which ranked list found a hit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, poem_openapi::Enum)]
#[serde(rename_all = "snake_case")]
#[oai(rename_all = "snake_case")]
pub enum MatchedBy {
    /// Its words (BM25).
    Fulltext,
    /// Its meaning (embedding similarity).
    Vector,
    /// Both.
    Both,
}

/// One turn found.
#[derive(Clone, Debug, serde::Serialize)]
pub struct TurnHit {
    /// The operation's id (a memory's id for `memory`; `summary:<session>` for a summary).
    pub operation_id: String,
    /// Empty for a memory asserted outside any session.
    pub session_id: String,
    /// Its place in the session (a summary: the session's last seq; a memory: 0).
    pub seq: i64,
    /// The operation type, or `memory` / `summary`.
    pub kind: String,
    pub role: Option<String>,
    /// The indexed text (bounded, see `domain::turn_text`).
    pub text: String,
    /// Where the query matched, cut from `text`.
    pub snippet: String,
    /// Epoch milliseconds.
    pub at: i64,
    /// The re-ranking score, 0..1 with the default weights.
    pub score: f64,
    /// How well it matches the query, 0..1.
    pub similarity: f64,
    pub matched_by: MatchedBy,
}

#[derive(Clone, Debug)]
pub struct TurnResult {
    pub hits: Vec<TurnHit>,
    pub mode: Mode,
    /// Operations of the project not embedded with the configured model yet (found by BM25
    /// only meanwhile); `None` without an embedder.
    pub pending_embeddings: Option<i64>,
    /// Why hybrid was not possible when an embedder is configured.
    pub degraded: Option<String>,
    /// The query as read for its meaning when that was not its own text: without the names
    /// of the speakers it names ([`Speakers::unnamed`]).
    pub meaning: Option<String>,
}

/// Importance of a kind of turn, 0..1: what was decided or asked to be remembered first.
pub fn importance(kind: &str, role: Option<&str>) -> f64 {
    match (kind, role) {
        ("decision", _) => 1.0,
        ("memory", _) | ("summary", _) => 0.8,
        ("message", Some("user")) => 0.5,
        ("message", _) => 0.4,
        ("tool_call", _) | ("write", _) => 0.3,
        _ => 0.2,
    }
}

/// Searches with the default weights ([`Weights::default`]).
pub async fn search(
    store: &Store,
    embedder: Option<&Embedder>,
    q: &TurnQuery<'_>,
) -> StoreResult<TurnResult> {
    search_with(store, embedder, Weights::default(), q).await
}

/// Searches `q.project`'s turns for `q.text`, re-ranked with `weights`.
pub async fn search_with(
    store: &Store,
    embedder: Option<&Embedder>,
    weights: Weights,
    q: &TurnQuery<'_>,
) -> StoreResult<TurnResult> {
    search_in(store, embedder, Lists::Both, weights, q).await
}

/// [`search_with`] on the chosen ranked lists only (the quality benchmark compares them).
pub async fn search_in(
    store: &Store,
    embedder: Option<&Embedder>,
    lists: Lists,
    weights: Weights,
    q: &TurnQuery<'_>,
) -> StoreResult<TurnResult> {
    let embedder = embedder.filter(|_| lists.vector());
    let limit = q.limit.clamp(1, MAX_HITS);
    let filtered = q.types.is_some() || q.exclude_session.is_some();
    // Filters apply after the index answers: ask it for more when they may drop many.
    let k = if filtered {
        (limit * 20).clamp(200, 1_000)
    } else {
        LIST_DEPTH
    };
    // Candidates fused before re-ranking and diversity.
    let pool = (limit * 3).max(30);
    // The nearest operations of a time the query names (compared one by one), as many as
    // fusion could take by meaning: past [`IN_TIME_POOLS`] pools, a row of that time lies
    // below so many of its own that its vector score cannot carry it into the pool (its
    // words still can, through the full-text list).
    let then_k = (pool * IN_TIME_POOLS).min(k);
    let filter = Filter {
        project: q.project,
        types: q.types,
        sessions: q.sessions,
        exclude_session: q.exclude_session,
    };
    // A time the query names ranks what happened then higher; its words are left out of the
    // words searched (they say when, not what), the meaning is read from the whole query.
    let read = when::read(q.text, q.now());
    let asked = read.as_ref().map(|r| r.asked);
    let worded = read.as_ref().map_or(q.text, |r| r.rest.as_str());
    let lucene = rank::lucene_words_in(&rank::TURN_FIELDS, worded).filter(|_| lists.fulltext());
    // The project's share of the shared full-text index, when it is nearly all of it. Leaving
    // one session out (prompt recall leaves out the asking session) keeps nearly that share;
    // an answer it leaves short is asked again, narrowed ([`fulltext_list`]).
    let whole = whole_index_share(&filter);
    let model = embedder.map(|e| e.model());
    // The two lists are asked for at once: the vector list as soon as the query is embedded,
    // without the names of the project's speakers it names when they are known already.
    let words = bm25::query_words(worded);
    let guess = Speakers::among(q.text, &turn_stats::speakers(q.project)).unnamed(q.text);
    let guessed = guess.as_deref().unwrap_or(q.text);
    // Each list on the heap: together they are too large for a request's stack.
    let (bm25, nearest, pending, stats) = tokio::join!(
        Box::pin(async {
            match &lucene {
                Some(l) => fulltext_list(store, &filter, model, l, k, whole).await,
                None => Ok(Vec::new()),
            }
        }),
        Box::pin(async {
            match embedder {
                Some(e) => by_meaning(store, &filter, e, guessed, asked, k, then_k).await,
                None => Ok(Ok(Vec::new())),
            }
        }),
        Box::pin(async {
            match embedder.filter(|_| q.count_pending) {
                Some(e) => Some(store_turns::pending_in_project(store, q.project, e.model()).await),
                None => None,
            }
        }),
        Box::pin(async {
            if lucene.is_none() {
                return Ok(None);
            }
            turn_stats::for_query(store, q.project, &words)
                .await
                .map(Some)
        })
    );
    let bm25 = bm25?;
    let stats = stats?;
    let pending_embeddings = pending.transpose()?;
    // A query naming speakers is read for its meaning without their names (its words keep
    // them), the speakers as its full-text candidates show them; the vector list is asked
    // again when the guess from those known before differs. Without a full-text list (vectors
    // alone asked for, or no word to search), the guess stands.
    let meaning = if lucene.is_some() {
        let texts: Vec<&str> = bm25
            .iter()
            .filter(|r| r.kind.as_deref() == Some("message"))
            .filter_map(|r| r.text.as_deref())
            .collect();
        let labels = speaker::labels(texts.iter().copied());
        turn_stats::remember_speakers(q.project, &labels);
        Speakers::in_texts(q.text, &labels, &texts).unnamed(q.text)
    } else {
        guess.clone()
    };
    let nearest = match embedder {
        Some(e) if meaning != guess => {
            let text = meaning.as_deref().unwrap_or(q.text);
            by_meaning(store, &filter, e, text, asked, k, then_k).await
        }
        _ => nearest,
    };
    let mut degraded = None;
    let nearest = match nearest? {
        Ok(list) => list,
        Err(err) => {
            tracing::warn!(error = %err, "query embedding failed; searching turns on fulltext alone");
            degraded = Some(format!("embedding the query failed ({err}); fulltext only"));
            Vec::new()
        }
    };
    let mode = if embedder.is_some() && degraded.is_none() {
        Mode::Hybrid
    } else {
        Mode::Fulltext
    };
    // A few copies of a text said again stand for the rest, the same ones in both lists.
    let left_out = repeats::left_out(&[&bm25, &nearest]);
    let bm25 = match &stats {
        Some(stats) => rescore(&words, stats, &bm25, &nearest, &left_out),
        None => bm25,
    };
    let hits = Box::pin(rank(
        store,
        model,
        weights,
        q,
        Ranking {
            limit,
            pool,
            in_play: lists,
            asked,
            scale: embedder.map_or(Calibration::PLAIN, Embedder::calibration),
            floor: q.floor,
        },
        Listed {
            bm25,
            nearest,
            left_out,
        },
    ))
    .await?;
    Ok(TurnResult {
        hits,
        mode,
        pending_embeddings,
        degraded,
        meaning,
    })
}

/// The nearest operations to `text` by meaning, and those of a time the query names
/// ([`in_time_list`], its sessions found while `text` is embedded); `Err` inside when the
/// query could not be embedded.
async fn by_meaning(
    store: &Store,
    filter: &Filter<'_>,
    e: &Embedder,
    text: &str,
    asked: Option<when::Asked>,
    k: usize,
    then_k: usize,
) -> StoreResult<Result<Vec<TurnRow>, crate::embed::EmbedError>> {
    let (v, then_ids) = tokio::join!(e.embed_query(text), in_time_sessions(store, filter, asked));
    match v {
        // Nothing to read in the query: nothing is close to it in meaning.
        Ok(v) if !crate::embed::has_direction(&v) => Ok(Ok(Vec::new())),
        Ok(v) => {
            let (near, then) = tokio::join!(
                vector_list(store, filter, e.model(), &v, k),
                in_time_list(store, filter, e.model(), &v, asked, then_ids?, then_k),
            );
            Ok(Ok(merged(near?, then?)))
        }
        Err(err) => Ok(Err(err)),
    }
}

/// The full-text list scored again with the project's own statistics: every candidate either
/// list found (a turn the vector list found may hold the query's words too) but the copies
/// `left_out` ([`repeats::left_out`]), best first, those without any of the words left out.
fn rescore(
    words: &[(String, String)],
    stats: &bm25::Stats,
    bm25_rows: &[TurnRow],
    nearest: &[TurnRow],
    left_out: &HashSet<String>,
) -> Vec<TurnRow> {
    let query: Vec<String> = words.iter().map(|(_, stem)| stem.clone()).collect();
    let mut seen = HashSet::new();
    let rows: Vec<&TurnRow> = bm25_rows
        .iter()
        .chain(nearest)
        .filter(|r| !left_out.contains(&r.id) && seen.insert(r.id.as_str()))
        .collect();
    let docs: Vec<bm25::Doc> = rows
        .iter()
        .map(|r| bm25::Doc::of(r.text.as_deref().unwrap_or_default(), &query))
        .collect();
    let scores = bm25::score_all(&query, &docs, stats);
    let mut out: Vec<TurnRow> = rows
        .into_iter()
        .zip(scores)
        .filter(|(_, s)| *s > 0.0)
        .map(|(r, s)| TurnRow {
            score: s,
            ..r.clone()
        })
        .collect();
    out.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.id.cmp(&b.id)));
    out
}

/// The full-text list: the project's best `k` for `words` ([`rank::lucene_words_on`]),
/// narrowed to the project inside Lucene ([`rank::within_project`]). A project that is nearly
/// the whole index (`share`) is narrowed to after Lucene instead: the index's best
/// `k / share` times [`WIDE_MARGIN`] for the words alone, of which the project's rows are kept
/// — the same rows in the same order, since the project clause adds the same score to each
/// of them, at a third of the time on a million turns, where Lucene would otherwise intersect
/// every match with the project's million postings. Should fewer than `k` remain, Lucene
/// narrows (a second statement, which the margin makes rare).
async fn fulltext_list(
    store: &Store,
    filter: &Filter<'_>,
    model: Option<&str>,
    words: &str,
    k: usize,
    share: Option<f64>,
) -> StoreResult<Vec<TurnRow>> {
    repeats::past_copies(k, |k| fulltext_at(store, filter, model, words, k, share)).await
}

/// The project's share of the shared full-text index when the full-text list may read the
/// index's best rows and keep the project's (`fulltext_list`): known, nearly the whole
/// index, and no kinds or sessions narrowing the project further.
pub fn whole_index_share(filter: &Filter<'_>) -> Option<f64> {
    let unfiltered = filter.types.is_none() && filter.sessions.is_none();
    turn_stats::known_share(filter.project).filter(|s| unfiltered && *s >= WHOLE_INDEX)
}

/// `fulltext_list` asked for `k` rows once: the index statements turn search sends for the
/// words, with `share` from [`whole_index_share`].
pub async fn fulltext_at(
    store: &Store,
    filter: &Filter<'_>,
    model: Option<&str>,
    words: &str,
    k: usize,
    share: Option<f64>,
) -> StoreResult<Vec<TurnRow>> {
    if let Some(share) = share {
        let wide = (k as f64 / share * WIDE_MARGIN).ceil() as usize;
        let rows = store_turns::fulltext(store, filter, model, words, k, wide).await?;
        if rows.len() >= k {
            return Ok(rows);
        }
    }
    let narrowed = rank::within_project(filter.project, words);
    store_turns::fulltext(store, filter, model, &narrowed, k, k).await
}

/// The `k` nearest operations of the project (fewer when fewer are embedded), each scored by
/// the better of its own vector and its best passage's (`domain::passages`): both lists are
/// asked at once ([`nearest_of`]) and merged.
async fn vector_list(
    store: &Store,
    filter: &Filter<'_>,
    model: &str,
    v: &[f32],
    k: usize,
) -> StoreResult<Vec<TurnRow>> {
    repeats::past_copies(k, |k| vector_list_at(store, filter, model, v, k)).await
}

/// [`vector_list`] asked for `k` rows once.
async fn vector_list_at(
    store: &Store,
    filter: &Filter<'_>,
    model: &str,
    v: &[f32],
    k: usize,
) -> StoreResult<Vec<TurnRow>> {
    let (own, passages) = tokio::try_join!(
        nearest_of(store, filter, Vectors::Operations, model, v, k),
        nearest_of(store, filter, Vectors::Passages, model, v, k),
    )?;
    let mut rows = merged(own, passages);
    rows.truncate(k);
    Ok(rows)
}

/// The `k` nearest operations of the project by `of`. The shared approximate index is asked
/// first; when other projects or models crowd the project out of its answer, a project small
/// enough to compare one by one is searched exactly, a larger one by asking the index for
/// more when it kept less than half of what was asked — and, within [`turn_stats::TTL`], that
/// wide at once for the same narrowing ([`turn_stats::widened`]: a search for messages among
/// a million operations). A small project the index answered too briefly within
/// [`turn_stats::TTL`] is searched exactly at once ([`turn_stats::crowded`]). A project
/// without passages does not ask the passage index at all.
async fn nearest_of(
    store: &Store,
    filter: &Filter<'_>,
    of: Vectors,
    model: &str,
    v: &[f32],
    k: usize,
) -> StoreResult<Vec<TurnRow>> {
    // How many vectors of `of` the project has, as far as the choice needs to know.
    let size = match of {
        Vectors::Operations => None,
        Vectors::Passages => {
            Some(turn_stats::passages(store, filter.project, EXACT_SCAN + 1).await?)
        }
    };
    if size == Some(0) {
        return Ok(Vec::new());
    }
    let typed = filter.types.is_some();
    if filter.sessions.is_some() || turn_stats::crowded(filter.project, of, typed) {
        let size = turn_stats::known_size(filter.project);
        let held = held_vectors::nearest(store, filter, of, model, v, k, EXACT_SCAN, size);
        return Box::pin(held).await;
    }
    // A list that had to be asked wider lately is asked that wide at once.
    let kinds = turn_stats::kinds_key(filter.types, filter.exclude_session.is_some());
    let first = turn_stats::widened(filter.project, of, &kinds).map_or(k, |w| w.max(k));
    let approx = store_turns::nearest(store, filter, of, model, v, k, first).await?;
    if approx.len() >= k {
        return Ok(approx);
    }
    let size = match size {
        Some(n) => n,
        None => turn_stats::project_size(store, filter.project).await?,
    };
    if size <= EXACT_SCAN {
        // The next searches go straight to the exact scan, while the project is small
        // enough to stay within it meanwhile.
        if size <= EXACT_SCAN / 2 {
            turn_stats::mark_crowded(filter.project, of, typed);
        }
        let held = held_vectors::nearest(store, filter, of, model, v, k, EXACT_SCAN, Some(size));
        return Box::pin(held).await;
    }
    let wider = (k * 4).min(WIDEST);
    if approx.len() >= k / 2 || first >= wider {
        return Ok(approx);
    }
    turn_stats::mark_widened(filter.project, of, &kinds, wider);
    store_turns::nearest(store, filter, of, model, v, k, wider).await
}

/// The project's sessions active in the time the query asks about (none when it names no
/// time), within the sessions `filter` keeps.
async fn in_time_sessions(
    store: &Store,
    filter: &Filter<'_>,
    asked: Option<when::Asked>,
) -> StoreResult<Vec<String>> {
    let Some(asked) = asked else {
        return Ok(Vec::new());
    };
    let mut ids = store_turns::sessions_in_time(
        store,
        filter.project,
        asked.from_ms,
        asked.to_ms,
        IN_TIME_SESSIONS,
    )
    .await?;
    if let Some(only) = filter.sessions {
        ids.retain(|id| only.contains(id));
    }
    Ok(ids)
}

/// The nearest operations of `ids`, the sessions active in the time the query asks about
/// ([`in_time_sessions`]): a turn of that day may lie beyond the project-wide list.
async fn in_time_list(
    store: &Store,
    filter: &Filter<'_>,
    model: &str,
    v: &[f32],
    asked: Option<when::Asked>,
    ids: Vec<String>,
    k: usize,
) -> StoreResult<Vec<TurnRow>> {
    let Some(asked) = asked.filter(|_| !ids.is_empty()) else {
        return Ok(Vec::new());
    };
    let within = Filter {
        sessions: Some(&ids),
        ..*filter
    };
    let mut rows = Box::pin(held_vectors::nearest(
        store,
        &within,
        Vectors::Operations,
        model,
        v,
        k,
        IN_TIME_SCAN,
        turn_stats::known_size(filter.project),
    ))
    .await?;
    // A session active then may hold operations dated otherwise (an import, a long session).
    rows.retain(|r| asked.holds(r.at));
    Ok(rows)
}

/// Two nearest lists as one, each operation once with its better score, nearest first.
fn merged(a: Vec<TurnRow>, b: Vec<TurnRow>) -> Vec<TurnRow> {
    if b.is_empty() {
        return a;
    }
    let mut best: HashMap<String, TurnRow> = HashMap::with_capacity(a.len() + b.len());
    for r in a.into_iter().chain(b) {
        match best.get(&r.id) {
            Some(kept) if kept.score >= r.score => {}
            _ => {
                best.insert(r.id.clone(), r);
            }
        }
    }
    let mut rows: Vec<TurnRow> = best.into_values().collect();
    rows.sort_by(|x, y| y.score.total_cmp(&x.score).then(x.id.cmp(&y.id)));
    rows
}

/// How the fused candidates are cut down.
struct Ranking {
    /// Hits returned at most.
    limit: usize,
    /// Candidates fused before re-ranking and diversity.
    pool: usize,
    in_play: Lists,
    /// The time the query asks about.
    asked: Option<when::Asked>,
    /// How the model's cosines read.
    scale: Calibration,
    /// Leave out what does not bear on the query ([`TurnQuery::floor`]).
    floor: Option<f64>,
}

/// The lists as found, and the copies fusion leaves out of them ([`repeats::left_out`]).
struct Listed {
    bm25: Vec<TurnRow>,
    nearest: Vec<TurnRow>,
    left_out: HashSet<String>,
}

/// Fuses, re-ranks and diversifies the lists in play into at most `limit` hits. The copies
/// left out count in the vector list's scale, not among the candidates.
async fn rank(
    store: &Store,
    model: Option<&str>,
    weights: Weights,
    q: &TurnQuery<'_>,
    how: Ranking,
    listed: Listed,
) -> StoreResult<Vec<TurnHit>> {
    let Listed {
        bm25,
        nearest,
        left_out,
    } = listed;
    let Ranking {
        limit,
        pool,
        in_play,
        asked,
        scale,
        floor,
    } = how;
    let in_bm25: HashSet<String> = bm25.iter().map(|r| r.id.clone()).collect();
    // Each neighbour's cosine on the common scale (the better of its own and its passages';
    // the index scores `(1 + cosine) / 2`).
    let cosines: HashMap<String, f64> = nearest
        .iter()
        .map(|r| (r.id.clone(), scale.read(2.0 * r.score - 1.0)))
        .collect();
    let best = bm25.iter().map(|r| r.score).fold(0.0_f64, f64::max);
    let mut lists = Vec::new();
    if in_play.fulltext() {
        lists.push(
            bm25.iter()
                .map(|r| (r.id.clone(), if best > 0.0 { r.score / best } else { 0.0 }))
                .collect::<Vec<_>>(),
        );
    }
    if !nearest.is_empty() {
        let similarities: Vec<f64> = nearest.iter().map(|r| r.score).collect();
        lists.push(
            nearest
                .iter()
                .zip(rank::spread(&similarities, scale))
                .map(|(r, s)| (r.id.clone(), s))
                .collect(),
        );
    }
    for list in &mut lists {
        list.retain(|(id, _)| !left_out.contains(id));
    }
    let mut rows: HashMap<String, TurnRow> = HashMap::new();
    for r in nearest.into_iter().chain(bm25) {
        if !left_out.contains(&r.id) {
            rows.insert(r.id.clone(), r);
        }
    }
    let words = bm25::words(q.text);
    let places: rank::Places = rows
        .values()
        // Memories and summaries stand beside no turn.
        .filter(|r| !matches!(r.kind.as_deref(), Some("memory" | "summary")))
        .filter_map(|r| {
            let text = r.text.as_deref().unwrap_or_default();
            let kind = r.kind.as_deref().unwrap_or_default();
            let place = rank::Place::new(r.session_id.as_deref()?, r.seq, rank::reach(text.len()));
            Some((
                r.id.as_str(),
                place.answered(answered::answered_next(kind, text, &words)),
            ))
        })
        .collect();
    let in_time: HashSet<&str> = match asked {
        Some(asked) => rows
            .values()
            .filter(|r| asked.holds(r.at))
            .map(|r| r.id.as_str())
            .collect(),
        None => HashSet::new(),
    };
    // A session summary is a recap of turns that have vectors: it stays weighed by both lists,
    // below the turns it repeats.
    let vectorless: rank::Vectorless = if lists.len() > 1 {
        rows.values()
            .filter(|r| !r.vectored && r.kind.as_deref() != Some("summary"))
            .map(|r| r.id.as_str())
            .collect()
    } else {
        HashSet::new()
    };
    let fused = rank::fuse_scores(&lists, &places, &in_time, &vectorless, pool);
    let named = Named::in_query(
        q.text,
        rows.values()
            .filter(|r| r.kind.as_deref() == Some("message"))
            .filter_map(|r| r.text.as_deref()),
    );
    drop(places);
    drop(in_time);
    drop(vectorless);
    let now = q.now();
    // How each candidate's vector can be compared: by the signature its row brought, or
    // (stored before signatures were) by looking the vector up.
    let mut likeness: HashMap<String, Likeness> = HashMap::new();
    let mut candidates: Vec<TurnHit> = fused
        .into_iter()
        .filter_map(|(id, sim)| {
            let mut r = rows.remove(&id)?;
            match r.sig.take() {
                Some(sig) => likeness.insert(id.clone(), Likeness::Signed(sig)),
                None if r.vectored => likeness.insert(id.clone(), Likeness::Stored),
                None => None,
            };
            let kind = r.kind.unwrap_or_else(|| "operation".into());
            let text = r.text.unwrap_or_default();
            // The speaker's lift counts in the score; the similarity stays the match's own.
            let lift = match &named {
                Some(n) if kind == "message" => n.lift(&text),
                _ => 1.0,
            };
            let score = weights.similarity * sim * lift
                + weights.recency * rank::recency_at(now, r.at)
                + weights.importance * importance(&kind, r.role.as_deref());
            let matched_by = match (in_bm25.contains(&id), cosines.contains_key(&id)) {
                (true, true) => MatchedBy::Both,
                (false, true) => MatchedBy::Vector,
                _ => MatchedBy::Fulltext,
            };
            Some(TurnHit {
                // Made for the hits kept only, below.
                snippet: String::new(),
                operation_id: id,
                session_id: r.session_id.unwrap_or_default(),
                seq: r.seq,
                kind,
                role: r.role,
                text,
                at: r.at,
                score: round3(score),
                similarity: round3(sim),
                matched_by,
            })
        })
        .collect();
    drop_repeated_summaries(&mut candidates);
    candidates.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(b.similarity.total_cmp(&a.similarity))
            .then(a.operation_id.cmp(&b.operation_id))
    });
    drop_repeated_texts(&mut candidates);
    if let Some(floor) = floor {
        candidates.retain(|h| bears_on_query(h, &cosines, floor, asked));
    }
    let vectors: HashMap<String, Vec<f32>> = match model {
        Some(model) if candidates.len() > limit => {
            // Diversity only ever reaches past the best few; their vectors are enough.
            let mut vectors = HashMap::new();
            let mut unsigned = Vec::new();
            for h in candidates.iter().take((limit * 2).min(MMR_VECTORS)) {
                match likeness.remove(&h.operation_id) {
                    Some(Likeness::Signed(sig)) => {
                        vectors.insert(h.operation_id.clone(), signature::direction(&sig));
                    }
                    Some(Likeness::Stored) => unsigned.push(h.operation_id.as_str()),
                    None => {}
                }
            }
            if !unsigned.is_empty() {
                vectors.extend(store_turns::embeddings(store, q.project, model, &unsigned).await?);
            }
            vectors
        }
        _ => HashMap::new(),
    };
    let mut hits = diversify(candidates, &vectors, limit, scale);
    for h in &mut hits {
        h.snippet = snippet(&h.text, &words);
    }
    Ok(hits)
}

/// Whether a hit bears on the query: it holds one of the query's words (the full-text list
/// found it), it is close in meaning (its cosine in `cosines`, on the common scale, at least
/// `floor`), or it happened in the time the query names (found by when, not by what).
pub fn bears_on_query(
    hit: &TurnHit,
    cosines: &HashMap<String, f64>,
    floor: f64,
    asked: Option<when::Asked>,
) -> bool {
    hit.matched_by != MatchedBy::Vector
        || cosines.get(&hit.operation_id).is_some_and(|c| *c >= floor)
        || asked.is_some_and(|a| a.holds(hit.at))
}

/// Where a candidate's vector for diversity comes from.
enum Likeness {
    /// The signature its row brought.
    Signed(Vec<u8>),
    /// Its vector, stored without a signature, read again.
    Stored,
}

/// Maximal marginal relevance against near-duplicates: repeatedly takes the candidate with the
/// best `λ·score − (1−λ)·d`, where `d` is how far its greatest likeness to one already taken
/// lies above `NEAR_DUPLICATE` (0 below it, 1 for the same text). Turns of one conversation
/// are alike in topic; only repeats should give way.
pub fn diversify(
    mut candidates: Vec<TurnHit>,
    vectors: &HashMap<String, Vec<f32>>,
    limit: usize,
    scale: Calibration,
) -> Vec<TurnHit> {
    if candidates.len() <= 1 {
        return candidates;
    }
    // Unit vectors and sorted word lists (made when first needed) once, so each pair costs
    // one dot product or one merge of two short lists.
    let units: Vec<Option<Vec<f32>>> = candidates
        .iter()
        .map(|h| vectors.get(&h.operation_id).and_then(|v| unit(v)))
        .collect();
    let words: Vec<std::cell::OnceCell<Vec<String>>> =
        candidates.iter().map(|_| Default::default()).collect();
    let words_of = |i: usize| {
        words[i].get_or_init(|| {
            let mut w = query_terms(&candidates[i].text);
            w.sort_unstable();
            w.dedup();
            w
        })
    };
    let likeness = |i: usize, j: usize| {
        let l = match (&units[i], &units[j]) {
            (Some(x), Some(y)) => scale.read(f64::from(dot(x, y))),
            _ => jaccard(words_of(i), words_of(j)),
        };
        ((l - NEAR_DUPLICATE) / (1.0 - NEAR_DUPLICATE)).max(0.0)
    };
    // Lazily greedy: a candidate's value only falls as more are taken, so the value it had
    // when last compared bounds it. The best bound is compared with the ones taken since
    // and, if it still leads, is the candidate with the best value (ties to the better
    // ranked), exactly as comparing every candidate after each take would choose. Those far
    // down are never compared at all.
    let value =
        |i: usize, closest: f64| MMR_LAMBDA * candidates[i].score - (1.0 - MMR_LAMBDA) * closest;
    let mut closest = vec![0.0_f64; candidates.len()];
    let mut compared = vec![0usize; candidates.len()];
    let mut taken: Vec<usize> = Vec::with_capacity(limit);
    let mut bounds: BinaryHeap<Bound> = (0..candidates.len())
        .map(|i| Bound {
            value: value(i, 0.0),
            index: i,
        })
        .collect();
    while taken.len() < limit {
        let Some(Bound { index: i, .. }) = bounds.pop() else {
            break;
        };
        if compared[i] == taken.len() {
            taken.push(i);
            continue;
        }
        for &t in &taken[compared[i]..] {
            closest[i] = closest[i].max(likeness(i, t));
        }
        compared[i] = taken.len();
        bounds.push(Bound {
            value: value(i, closest[i]),
            index: i,
        });
    }
    let mut out = Vec::with_capacity(taken.len());
    let mut slots: Vec<Option<TurnHit>> = candidates.drain(..).map(Some).collect();
    for i in taken {
        if let Some(h) = slots[i].take() {
            out.push(h);
        }
    }
    out
}

/// A candidate's best possible value in [`diversify`]: the greater value first, then the
/// better ranked candidate.
struct Bound {
    value: f64,
    index: usize,
}

impl Ord for Bound {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.value
            .total_cmp(&other.value)
            .then(other.index.cmp(&self.index))
    }
}

impl PartialOrd for Bound {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Bound {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for Bound {}

/// The shortest start of a turn a summary cut from it holds (a derived summary is cut at
/// ~400 tokens, some 1,500 bytes of prose).
const MIN_CUT_BYTES: usize = 400;

/// A derived summary that repeats one of its session's replies gives way to the reply itself:
/// a session of conversation is summed up by its last reply, word for word, or by its start
/// when the reply is longer than a summary (cut, ending with `…`). Otherwise the two would
/// stand as near twins, and diversity would keep the summary, weighed as a recap, over the
/// whole reply. A summary with the todo list or next steps after the cut is not a copy, and
/// stays.
pub fn drop_repeated_summaries(hits: &mut Vec<TurnHit>) {
    // Only the sessions with a summary among the hits are compared: most searches have none,
    // and squashing hundreds of candidates' texts for nothing would cost every request.
    let summed: HashSet<&str> = hits
        .iter()
        .filter(|h| h.kind == "summary")
        .map(|h| h.session_id.as_str())
        .collect();
    if summed.is_empty() {
        return;
    }
    let mut said: HashMap<&str, Vec<String>> = HashMap::new();
    let derivable = |h: &TurnHit| {
        h.kind == "message"
            && h.role.as_deref() != Some("user")
            && summed.contains(h.session_id.as_str())
    };
    for h in hits.iter().filter(|h| derivable(h)) {
        said.entry(h.session_id.as_str())
            .or_default()
            .push(squashed(&h.text));
    }
    let repeats = |h: &TurnHit| {
        let Some(turns) = said.get(h.session_id.as_str()) else {
            return false;
        };
        let summary = squashed(&h.text);
        // Only a cut as long as a summary is cut: "WIP…" is a summary of its own.
        let start = summary
            .strip_suffix('…')
            .map(str::trim_end)
            .filter(|s| s.len() >= MIN_CUT_BYTES);
        turns
            .iter()
            .any(|t| *t == summary || start.is_some_and(|s| t.starts_with(s)))
    };
    let repeated: HashSet<String> = hits
        .iter()
        .filter(|h| h.kind == "summary" && repeats(h))
        .map(|h| h.operation_id.clone())
        .collect();
    hits.retain(|h| !repeated.contains(&h.operation_id));
}

/// Whitespace runs as one space.
fn squashed(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Cosine of two vectors, negatives as 0; 0 when their lengths differ.
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    crate::embed::cosine(a, b).clamp(0.0, 1.0)
}

/// `v` scaled to length 1; `None` for a zero vector.
fn unit(v: &[f32]) -> Option<Vec<f32>> {
    let norm = dot(v, v).sqrt();
    (norm > 0.0).then(|| v.iter().map(|x| x / norm).collect())
}

/// The dot product, in eight lanes the compiler can keep in vector registers.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() {
        return 0.0;
    }
    let mut lanes = [0.0_f32; 8];
    let (a8, b8) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = a8
        .remainder()
        .iter()
        .zip(b8.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in a8.zip(b8) {
        for i in 0..8 {
            lanes[i] += x[i] * y[i];
        }
    }
    lanes.iter().sum::<f32>() + tail
}

/// Jaccard similarity of two sorted, deduplicated word lists.
fn jaccard(a: &[String], b: &[String]) -> f64 {
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    let (mut i, mut j, mut common) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
        }
    }
    common as f64 / (a.len() + b.len() - common) as f64
}

/// Lowercased words of three characters or more.
fn query_terms(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 3)
        .map(str::to_lowercase)
        .collect()
}

/// Up to [`SNIPPET_CHARS`] characters of `text` from where it bears on the query (its
/// stemmed `words`, [`bm25::words`]: the sentence or line holding most of them, a quarter of
/// the snippet before its first such word at most; its start when none), on one line with
/// what acts instead of printing blanked (`domain::shown`), `…` where it was cut.
pub fn snippet(text: &str, words: &[String]) -> String {
    let chars: Vec<char> = shown::one_line(text).chars().collect();
    if chars.len() <= SNIPPET_CHARS {
        return chars.into_iter().collect::<String>().trim().to_string();
    }
    let start = excerpt::telling_start(text, words, SNIPPET_CHARS / 4)
        .unwrap_or(0)
        .min(chars.len() - SNIPPET_CHARS);
    let end = start + SNIPPET_CHARS;
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    out.extend(&chars[start..end]);
    if end < chars.len() {
        out.push('…');
    }
    out
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(id: &str, score: f64, text: &str) -> TurnHit {
        TurnHit {
            operation_id: id.into(),
            session_id: "s".into(),
            seq: 1,
            kind: "message".into(),
            role: None,
            text: text.into(),
            snippet: String::new(),
            at: 0,
            score,
            similarity: score,
            matched_by: MatchedBy::Fulltext,
        }
    }

    #[test]
    fn a_hit_bears_on_the_query_by_its_words_its_meaning_or_its_time() {
        let mut by_meaning = hit("m", 0.5, "the login form rejects passwords");
        by_meaning.matched_by = MatchedBy::Vector;
        by_meaning.at = 5_000;
        let cosines: HashMap<String, f64> = [("m".to_string(), 0.31)].into();
        assert!(bears_on_query(&by_meaning, &cosines, MIN_COSINE, None));
        let far: HashMap<String, f64> = [("m".to_string(), 0.29)].into();
        assert!(!bears_on_query(&by_meaning, &far, MIN_COSINE, None));
        assert!(!bears_on_query(
            &by_meaning,
            &HashMap::new(),
            MIN_COSINE,
            None
        ));
        // Configured off: anything ranked.
        assert!(bears_on_query(&by_meaning, &far, 0.0, None));
        // Found by when: the time the query names holds it.
        let then = when::Asked {
            from_ms: 1_000,
            to_ms: 9_000,
        };
        assert!(bears_on_query(&by_meaning, &far, MIN_COSINE, Some(then)));
        let before = when::Asked {
            from_ms: 6_000,
            to_ms: 9_000,
        };
        assert!(!bears_on_query(&by_meaning, &far, MIN_COSINE, Some(before)));
        // A word of the query is enough, however far its meaning.
        for by in [MatchedBy::Fulltext, MatchedBy::Both] {
            let worded = TurnHit {
                matched_by: by,
                ..by_meaning.clone()
            };
            assert!(bears_on_query(&worded, &far, MIN_COSINE, None));
        }
    }

    #[test]
    fn near_duplicates_do_not_crowd_the_top() {
        let same = "tokens expire after thirty minutes of inactivity";
        let hits = vec![
            hit("a", 0.90, same),
            hit("b", 0.89, same),
            hit("c", 0.88, same),
            hit("d", 0.70, "refresh tokens rotate on every use"),
        ];
        let out = diversify(hits.clone(), &HashMap::new(), 2, Calibration::PLAIN);
        let ids: Vec<&str> = out.iter().map(|h| h.operation_id.as_str()).collect();
        assert_eq!(ids, ["a", "d"]);
        // With vectors, likeness is their cosine: orthogonal vectors do not penalise.
        let vectors: HashMap<String, Vec<f32>> = [
            ("a".to_string(), vec![1.0, 0.0]),
            ("b".to_string(), vec![0.0, 1.0]),
            ("c".to_string(), vec![1.0, 0.0]),
            ("d".to_string(), vec![1.0, 0.0]),
        ]
        .into();
        let out = diversify(hits, &vectors, 2, Calibration::PLAIN);
        let ids: Vec<&str> = out.iter().map(|h| h.operation_id.as_str()).collect();
        assert_eq!(ids, ["a", "b"]);
    }

    /// Maximal marginal relevance the plain way: after each take, every candidate left is
    /// compared with it and the best value is taken (ties to the better ranked).
    fn diversify_plainly(
        candidates: &[TurnHit],
        vectors: &HashMap<String, Vec<f32>>,
        limit: usize,
    ) -> Vec<String> {
        let likeness = |i: usize, j: usize| {
            let (a, b) = (&candidates[i], &candidates[j]);
            let l = match (vectors.get(&a.operation_id), vectors.get(&b.operation_id)) {
                (Some(x), Some(y)) => {
                    let (x, y) = (unit(x).unwrap(), unit(y).unwrap());
                    f64::from(dot(&x, &y)).clamp(0.0, 1.0)
                }
                _ => {
                    let words = |t: &str| {
                        let mut w = query_terms(t);
                        w.sort_unstable();
                        w.dedup();
                        w
                    };
                    jaccard(&words(&a.text), &words(&b.text))
                }
            };
            ((l - NEAR_DUPLICATE) / (1.0 - NEAR_DUPLICATE)).max(0.0)
        };
        let mut closest = vec![0.0_f64; candidates.len()];
        let mut left: Vec<usize> = (0..candidates.len()).collect();
        let mut out = Vec::new();
        while out.len() < limit && !left.is_empty() {
            let mut best = (0, f64::NEG_INFINITY);
            for (pos, &i) in left.iter().enumerate() {
                let v = MMR_LAMBDA * candidates[i].score - (1.0 - MMR_LAMBDA) * closest[i];
                if v > best.1 {
                    best = (pos, v);
                }
            }
            let chosen = left.remove(best.0);
            out.push(candidates[chosen].operation_id.clone());
            for &i in &left {
                closest[i] = closest[i].max(likeness(i, chosen));
            }
        }
        out
    }

    #[test]
    fn lazy_diversity_takes_what_comparing_everything_takes_and_signatures_do_too() {
        // Near-duplicates in runs, equal scores, vectors for some: a small generator.
        let mut seed = 7_u64;
        let mut next = move || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as usize
        };
        let topics = [
            "cache expiry",
            "parser tokens",
            "spool segments",
            "auth keys",
        ];
        for round in 0..20 {
            let n = 5 + next() % 60;
            let hits: Vec<TurnHit> = (0..n)
                .map(|i| {
                    let topic = topics[next() % topics.len()];
                    let text = format!("{topic} {topic} note {}", next() % 3);
                    // Scores in steps, so ties happen.
                    let score = 1.0 - (next() % 20) as f64 * 0.03;
                    hit(&format!("h{i}"), score, &text)
                })
                .collect();
            let mut sorted = hits.clone();
            sorted.sort_by(|a, b| b.score.total_cmp(&a.score));
            let mut vectors: HashMap<String, Vec<f32>> = HashMap::new();
            for h in &sorted {
                if next() % 2 == 0 {
                    let v: Vec<f32> = (0..8).map(|_| (next() % 5) as f32 + 0.5).collect();
                    vectors.insert(h.operation_id.clone(), v);
                }
            }
            // What a search compares: the vectors' signatures.
            let signed: HashMap<String, Vec<f32>> = vectors
                .iter()
                .map(|(id, v)| (id.clone(), signature::direction(&signature::of(v).unwrap())))
                .collect();
            for limit in [1, 3, n / 2 + 1, n, n + 5] {
                let lazy: Vec<String> =
                    diversify(sorted.clone(), &vectors, limit, Calibration::PLAIN)
                        .into_iter()
                        .map(|h| h.operation_id)
                        .collect();
                assert_eq!(
                    lazy,
                    diversify_plainly(&sorted, &vectors, limit),
                    "round {round}, limit {limit}"
                );
                let by_signature: Vec<String> =
                    diversify(sorted.clone(), &signed, limit, Calibration::PLAIN)
                        .into_iter()
                        .map(|h| h.operation_id)
                        .collect();
                assert_eq!(lazy, by_signature, "round {round}, limit {limit}");
            }
        }
    }

    #[test]
    fn snippet_centres_on_the_match_and_hides_controls() {
        let text = format!(
            "{}the token expiry\u{1b}[31m policy{}",
            "x ".repeat(300),
            " y".repeat(300)
        );
        let s = snippet(&text, &["expiry".to_string()]);
        assert!(s.starts_with('…') && s.ends_with('…'), "{s}");
        assert!(s.contains("token expiry [31m policy"), "{s}");
        assert_eq!(s.chars().count(), SNIPPET_CHARS + 2);
        assert_eq!(snippet("short\ntext", &[]), "short text");
    }

    #[test]
    fn snippet_shows_the_sentence_with_the_querys_rare_words_not_its_common_ones() {
        let report: String = (0..30)
            .map(|i| format!("The quarterly report covered the build servers in week {i}. "))
            .collect();
        let text = format!("{report}Then: the zeppelin hangar keys are kept by Ottoline. {report}");
        let words = bm25::words("who keeps the zeppelin hangar keys");
        let s = snippet(&text, &words);
        // "the" opens the text; the words that matter are in its middle.
        assert!(s.starts_with("…Then: the zeppelin hangar keys"), "{s}");
        assert!(s.ends_with('…'), "{s}");
        // Near the end, the snippet ends with the text.
        let last = format!("{report}Then: the zeppelin hangar keys are kept by Ottoline.");
        let s = snippet(&last, &words);
        assert!(
            s.ends_with("kept by Ottoline.") && s.starts_with('…'),
            "{s}"
        );
        // No word of the query in the text: its start.
        assert!(snippet(&text, &bm25::words("unrelated")).starts_with("The quarterly"));
    }

    #[test]
    fn a_summary_repeating_a_turn_gives_way_to_it() {
        let turn = hit("op-9", 0.5, "Gina: That's the spirit!  Bye!");
        let mut summary = hit("summary:s", 0.7, "Gina: That's the spirit! Bye!");
        summary.kind = "summary".into();
        let mut other = hit("summary:t", 0.6, "Gina: That's the spirit! Bye!");
        other.kind = "summary".into();
        other.session_id = "t".into();
        let mut hits = vec![summary, turn, other];
        drop_repeated_summaries(&mut hits);
        let ids: Vec<&str> = hits.iter().map(|h| h.operation_id.as_str()).collect();
        // Another session's summary with the same words stays: it is not that turn's twin.
        assert_eq!(ids, ["op-9", "summary:t"]);
    }

    #[test]
    fn a_turn_said_again_is_listed_once_at_its_best_place() {
        let mut memory = hit("m", 0.6, "run the nightly restore drill");
        memory.kind = "memory".into();
        let mut hits = vec![
            hit("a", 0.9, "run the nightly restore drill"),
            hit("b", 0.8, "run  the nightly\nrestore drill "),
            hit("c", 0.7, "run the nightly restore drills"),
            memory,
            hit("d", 0.5, "run the nightly restore drill"),
        ];
        drop_repeated_texts(&mut hits);
        let ids: Vec<&str> = hits.iter().map(|h| h.operation_id.as_str()).collect();
        // Another word or another kind is not a repeat.
        assert_eq!(ids, ["a", "c", "m"]);
    }

    #[test]
    fn a_summary_cut_from_a_long_turn_gives_way_to_the_whole_turn() {
        let long = "assistant: Here is how to organise the playlist. ".repeat(40);
        let cut = format!("{}…", &long[..900]);
        let turn = hit("op-12", 0.5, &long);
        let mut summary = hit("summary:s", 0.7, &cut);
        summary.kind = "summary".into();
        // The same cut in another session is that session's own summary.
        let mut elsewhere = hit("summary:t", 0.65, &cut);
        elsewhere.kind = "summary".into();
        elsewhere.session_id = "t".into();
        // A short summary ending with `…` is not a cut of the turn it opens like.
        let mut short = hit("summary:u", 0.6, "assistant: Here is how…");
        short.kind = "summary".into();
        short.session_id = "u".into();
        let mut other = hit(
            "op-13",
            0.4,
            "assistant: Here is how to organise the playlist.",
        );
        other.session_id = "u".into();
        let mut hits = vec![summary, turn, elsewhere, short, other];
        drop_repeated_summaries(&mut hits);
        let ids: Vec<&str> = hits.iter().map(|h| h.operation_id.as_str()).collect();
        assert_eq!(ids, ["op-12", "summary:t", "summary:u", "op-13"]);
    }

    #[test]
    fn turn_kinds_are_the_operation_types_then_memories_and_summaries() {
        assert_eq!(TURN_KINDS.len(), OpType::ALL.len() + 2);
        assert_eq!(&TURN_KINDS[..OpType::ALL.len()], &OpType::ALL[..]);
        assert_eq!(&TURN_KINDS[OpType::ALL.len()..], &["memory", "summary"]);
    }

    fn row(id: &str, text: &str, score: f64) -> TurnRow {
        TurnRow {
            id: id.into(),
            session_id: Some("s".into()),
            seq: 1,
            kind: Some("message".into()),
            role: None,
            text: Some(text.into()),
            at: 0,
            score,
            vectored: false,
            sig: None,
        }
    }

    #[test]
    fn the_projects_own_statistics_rerank_what_either_list_found() {
        let words = bm25::query_words("What did Zed say about the ledger?");
        // Zed is on most of the project's turns, the ledger on one.
        let stats = bm25::Stats {
            docs: 50,
            df: [("zed".to_string(), 40), ("ledger".to_string(), 1)].into(),
        };
        // The index ranked by the whole database, where Zed is rare.
        let fulltext = vec![
            row("chatter", "Zed: Zed says hi, Zed here", 9.0),
            row("answer", "Zed: the ledger closed at noon", 5.0),
        ];
        // Meaning found a turn with a query word too, and one with none.
        let nearest = vec![
            row("also", "the ledger again", 0.8),
            row("none", "nothing alike", 0.7),
        ];
        let out = rescore(&words, &stats, &fulltext, &nearest, &HashSet::new());
        let ids: Vec<&str> = out.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["also", "answer", "chatter"]);
        assert!(out.iter().all(|r| r.score > 0.0));
    }

    #[test]
    fn unit_vectors_dot_to_the_cosine_and_word_lists_merge_to_jaccard() {
        // Lengths around the eight lanes, with a remainder.
        for n in [1usize, 7, 8, 9, 384, 389] {
            let a: Vec<f32> = (0..n).map(|i| ((i * 7 % 11) as f32) - 4.0).collect();
            let b: Vec<f32> = (0..n).map(|i| ((i * 5 % 13) as f32) - 6.0).collect();
            let (ua, ub) = (unit(&a).unwrap(), unit(&b).unwrap());
            let want = cosine(&a, &b);
            let got = f64::from(dot(&ua, &ub)).clamp(0.0, 1.0);
            assert!((got - want).abs() < 1e-5, "{n}: {got} vs {want}");
            assert!((f64::from(dot(&ua, &ua)) - 1.0).abs() < 1e-5);
        }
        assert_eq!(unit(&[0.0, 0.0]), None);
        assert_eq!(dot(&[1.0, 2.0], &[1.0]), 0.0);
        let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let (a, b) = (
            words(&["cache", "parser", "token"]),
            words(&["lexer", "parser", "token"]),
        );
        assert!((jaccard(&a, &b) - 0.5).abs() < 1e-12);
        assert_eq!(jaccard(&a, &[]), 0.0);
    }

    #[test]
    fn merged_lists_hold_each_operation_once_nearest_first() {
        let a = vec![row("a", "x", 0.9), row("b", "y", 0.7)];
        let b = vec![row("b", "y", 0.7), row("c", "z", 0.8)];
        let ids: Vec<String> = merged(a, b).into_iter().map(|r| r.id).collect();
        assert_eq!(ids, ["a", "c", "b"]);
        // An operation found by its own vector and by a passage keeps the better score.
        let own = vec![row("a", "x", 0.9), row("b", "y", 0.6)];
        let passages = vec![row("b", "y", 0.95), row("a", "x", 0.5)];
        let scored: Vec<(String, f64)> = merged(own, passages)
            .into_iter()
            .map(|r| (r.id, r.score))
            .collect();
        assert_eq!(scored, [("b".to_string(), 0.95), ("a".to_string(), 0.9)]);
    }

    #[test]
    fn decisions_weigh_most() {
        assert!(importance("decision", None) > importance("memory", None));
        assert!(importance("message", Some("user")) > importance("read", None));
    }
}
