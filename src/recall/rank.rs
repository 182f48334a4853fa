//! The vocabulary session search and turn search share: which ranked lists answer, how their
//! scores are re-weighted, Lucene queries built from escaped terms, and reciprocal-rank fusion.
//!
//! - recency = 1 / (1 + days/30);
//! - similarity = the mean, over the lists in play, of a hit's normalised score in each
//!   (BM25 / best BM25 of the query; cosine), 0 where a list missed it — in turn search, a
//!   candidate the vector list cannot hold (not embedded yet, a memory) is scored by the
//!   others ([`Vectorless`]).
//!
//! Query text never reaches Lucene raw: it is cut into terms, each escaped ([`escape_lucene`]).

use std::collections::{HashMap, HashSet};

use crate::config::SearchSettings;
use crate::domain::compounds;
pub use crate::domain::lucene::{escape_lucene, project_clause};
use crate::embed::Calibration;

/// Query characters at most.
pub const MAX_QUERY_CHARS: usize = 1_000;

/// Terms sent to Lucene at most (the rest of a long query is ignored).
pub const MAX_TERMS: usize = 64;
/// The reciprocal-rank constant (Cormack et al.).
const RRF_K: f64 = 60.0;
/// Candidates less similar than this are noise, however recent or important.
const MIN_SIMILARITY: f64 = 0.05;

/// Words a query is not searched by: Lucene's English stop words, and the function words of
/// a question ("what did …", "when was …"), which match every conversation's questions rather
/// than what they ask about.
pub const STOP_WORDS: &[&str] = &[
    "a", "about", "after", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be",
    "been", "before", "but", "by", "can", "could", "did", "do", "does", "for", "from", "had",
    "has", "have", "he", "her", "him", "his", "how", "i", "if", "in", "into", "is", "it", "its",
    "just", "me", "more", "most", "my", "no", "not", "of", "on", "only", "or", "our", "over",
    "she", "should", "so", "some", "such", "than", "that", "the", "their", "them", "then", "there",
    "these", "they", "this", "to", "us", "was", "we", "were", "what", "when", "where", "which",
    "who", "whom", "whose", "why", "will", "with", "would", "you", "your",
];

/// Whether `word` (lower case) is one of [`STOP_WORDS`].
pub fn is_stop_word(word: &str) -> bool {
    STOP_WORDS.binary_search(&word).is_ok()
}

/// Which lists answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, poem_openapi::Enum)]
#[serde(rename_all = "snake_case")]
#[oai(rename_all = "snake_case")]
pub enum Mode {
    /// BM25 only (no embeddings endpoint, no embeddings yet, or it failed).
    Fulltext,
    /// BM25 and embedding similarity, fused by reciprocal rank.
    Hybrid,
}

/// Which ranked lists a search consults. Services use [`Lists::Both`] (hybrid whenever an
/// embedder is configured); the quality benchmark compares each list alone with both.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Lists {
    /// BM25 only.
    Fulltext,
    /// Embedding similarity only (nothing without an embedder).
    Vector,
    /// BM25, and embedding similarity when an embedder is configured.
    #[default]
    Both,
}

impl Lists {
    pub fn fulltext(self) -> bool {
        self != Lists::Vector
    }
    pub fn vector(self) -> bool {
        self != Lists::Fulltext
    }
}

/// Re-ranking weights.
#[derive(Clone, Copy, Debug)]
pub struct Weights {
    pub similarity: f64,
    pub recency: f64,
    pub importance: f64,
}

/// The configuration's defaults (`CAIRN_SEARCH_WEIGHT_*`).
impl Default for Weights {
    fn default() -> Self {
        Self {
            similarity: 0.6,
            recency: 0.3,
            importance: 0.1,
        }
    }
}

impl From<&SearchSettings> for Weights {
    fn from(s: &SearchSettings) -> Self {
        Self {
            similarity: s.weight_similarity,
            recency: s.weight_recency,
            importance: s.weight_importance,
        }
    }
}

/// The Lucene query for `text` over sessions' documents ([`SESSION_FIELDS`]) within
/// `project`, or `None` when the text has no searchable term. Terms are lowercased (so
/// `AND`/`OR`/`NOT` are words, not operators) and escaped.
pub fn lucene_query(project: &str, text: &str) -> Option<String> {
    lucene_words_in(&SESSION_FIELDS, text).map(|words| within_project(project, &words))
}

/// The fields a session's words are indexed in: its search document, and the parts of the
/// identifiers in it (`domain::compounds`).
pub const SESSION_FIELDS: [&str; 2] = ["search_doc", "search_doc_parts"];

/// [`lucene_query`] over another indexed `field`.
pub fn lucene_query_on(field: &str, project: &str, text: &str) -> Option<String> {
    lucene_words_on(field, text).map(|words| within_project(project, &words))
}

/// A query of [`lucene_words_on`] narrowed to `project` inside Lucene.
pub fn within_project(project: &str, words: &str) -> String {
    format!("{} {words}", project_clause(project))
}

/// The words part of [`lucene_query_on`] alone, narrowed to no project: the caller keeps
/// the project's rows itself.
pub fn lucene_words_on(field: &str, text: &str) -> Option<String> {
    lucene_words_in(&[field], text)
}

/// The fields a turn's words are indexed in: its text, and the parts of the identifiers in
/// it (`domain::compounds`).
pub const TURN_FIELDS: [&str; 2] = ["search_text", "search_parts"];

/// [`lucene_words_on`] over several `fields`, any of which may hold a word. The query's
/// identifiers are asked by their parts too (`token_store` also as `token store`), so they
/// find a text that writes them apart, or joined otherwise.
pub fn lucene_words_in(fields: &[&str], text: &str) -> Option<String> {
    let mut terms: Vec<String> = text
        .split_whitespace()
        .map(str::to_lowercase)
        .filter(|t| t.chars().any(char::is_alphanumeric))
        .filter(|t| !is_stop_word(t.trim_end_matches(|c: char| !c.is_alphanumeric())))
        .take(MAX_TERMS)
        .map(|t| escape_lucene(&t))
        .collect();
    if terms.is_empty() {
        return None;
    }
    if let Some(parts) = compounds::parts(text) {
        for part in parts.split(' ').filter(|p| !is_stop_word(p)) {
            if terms.len() >= 2 * MAX_TERMS {
                break;
            }
            let part = escape_lucene(part);
            if !terms.contains(&part) {
                terms.push(part);
            }
        }
    }
    let terms = terms.join(" ");
    let clauses: Vec<String> = fields.iter().map(|f| format!("{f}:({terms})")).collect();
    Some(match clauses.as_slice() {
        [one] => format!("+{one}"),
        _ => format!("+({})", clauses.join(" ")),
    })
}

/// 1 / (1 + days/30).
pub fn recency(days: f64) -> f64 {
    1.0 / (1.0 + days.max(0.0) / 30.0)
}

/// The recency of what happened at `at_ms` for a query asked at `now_ms` (epoch
/// milliseconds): [`recency`] of the days between, and none for what happened more than a
/// day after the query was asked (a question asked at a past moment, `asked_at`, gives no
/// lift to what came after it; a day covers clocks that disagree).
pub fn recency_at(now_ms: i64, at_ms: i64) -> f64 {
    const DAY_MS: i64 = 86_400_000;
    if at_ms > now_ms.saturating_add(DAY_MS) {
        return 0.0;
    }
    recency((now_ms - at_ms).max(0) as f64 / DAY_MS as f64)
}

/// Reciprocal-rank fusion of ranked lists (best first): keeps the `pool` best by
/// Σ 1/(60 + rank), each with its similarity (mean normalised score over the lists).
pub fn fuse(lists: &[Vec<(String, f64)>], exclude: &[String], pool: usize) -> Vec<(String, f64)> {
    let mut rrf: HashMap<&str, (f64, f64)> = HashMap::new();
    for list in lists {
        for (rank, (id, score)) in list.iter().enumerate() {
            if exclude.contains(id) {
                continue;
            }
            let entry = rrf.entry(id.as_str()).or_insert((0.0, 0.0));
            entry.0 += 1.0 / (RRF_K + rank as f64 + 1.0);
            entry.1 += score;
        }
    }
    let n = lists.len().max(1) as f64;
    let mut fused: Vec<(String, f64, f64)> = rrf
        .into_iter()
        .map(|(id, (r, s))| (id.to_string(), r, (s / n).clamp(0.0, 1.0)))
        .collect();
    fused.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    fused.retain(|(_, _, s)| *s >= MIN_SIMILARITY);
    fused.truncate(pool);
    fused.into_iter().map(|(id, _, s)| (id, s)).collect()
}

/// Nearest-neighbour lists shorter than this are read as absolute cosines ([`spread`]).
const SPREAD_FROM: usize = 20;

/// Vector similarities (Neo4j's `(1 + cosine) / 2`) on 0..=1 for fusion. A long list of
/// nearest neighbours is spread between its worst and best: its tail is noise, and the
/// cosines of one model crowd a narrow band (0.55 to 0.7 for a whole conversation with
/// all-MiniLM-L6-v2), where the absolute value would weigh everything alike. A short list (a
/// small project: every vector is a neighbour) keeps the cosine itself, read on the common
/// scale (`scale`: 0 at orthogonal for MiniLM, at ~0.7 for e5).
pub fn spread(similarities: &[f64], scale: Calibration) -> Vec<f64> {
    let (lo, hi) = similarities
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), s| {
            (lo.min(*s), hi.max(*s))
        });
    similarities
        .iter()
        .map(|s| {
            if similarities.len() >= SPREAD_FROM && hi > lo {
                (s - lo) / (hi - lo)
            } else {
                scale.read(2.0 * s - 1.0)
            }
        })
        .collect()
}

/// Where each candidate sits ([`Place`]), by id.
pub type Places<'a> = HashMap<&'a str, Place<'a>>;

/// Where a candidate sits: its session, its place in it (seq), how far what stands beside it
/// counts for it ([`reach`]), and whether what comes after it probably answers it (a question
/// on the query's subject, a tool call: [`crate::recall::answered::answered_next`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Place<'a> {
    pub session: &'a str,
    pub seq: i64,
    pub reach: f64,
    pub answered_next: bool,
}

impl<'a> Place<'a> {
    /// A candidate at `seq` of `session`, counting its neighbours by `reach`, followed by
    /// nothing in particular.
    pub fn new(session: &'a str, seq: i64, reach: f64) -> Self {
        Self {
            session,
            seq,
            reach,
            answered_next: false,
        }
    }

    /// The same place, followed by what probably answers it when `answered_next`.
    pub fn answered(self, answered_next: bool) -> Self {
        Self {
            answered_next,
            ..self
        }
    }

    /// How much of this candidate's score the one just after it gains.
    fn lends_next(&self) -> f64 {
        if self.answered_next {
            ANSWER_WEIGHT
        } else {
            NEIGHBOUR_WEIGHT
        }
    }
}

/// Texts up to this long (in bytes) count their neighbours in full ([`reach`]).
pub const SHORT_TEXT: usize = 400;

/// How far a candidate's neighbours count for it, 0..=1: in full for a short text, less the
/// longer it is (`SHORT_TEXT / len`). An answer spread over a few short turns (a question and
/// "yes, last Tuesday"; a call and its result) is found through its neighbours; a long turn
/// says what it says on its own, and lifting it by the question before it or the session it
/// is in ranks every long reply of a session on the subject above the turn that answers.
/// `SHORT_TEXT` is past the length of 99 % of the turns of a chat between people (LoCoMo).
pub fn reach(text_len: usize) -> f64 {
    if text_len <= SHORT_TEXT {
        1.0
    } else {
        SHORT_TEXT as f64 / text_len as f64
    }
}

/// How much of the better of its two neighbours' scores a candidate gains.
pub const NEIGHBOUR_WEIGHT: f64 = 0.4;
/// How much of the score of the candidate just before it a candidate gains instead when that
/// one is answered by what comes next ([`Place::answered_next`]): the reply to a question on
/// the subject, a call's result. On LoCoMo, through the whole task context, evidence recall
/// at 1,000 tokens went 0.795 → 0.799 (REALTALK and LongMemEval unchanged;
/// docs/performance.md).
pub const ANSWER_WEIGHT: f64 = 0.6;
/// How much of the better score of the candidates two places before and after it in its
/// session a candidate gains: the same speaker's next turn, a call's result after the call.
pub const NEAR_WEIGHT: f64 = 0.2;
/// How much of the best score in its session a candidate gains.
pub const SESSION_WEIGHT: f64 = 0.2;
/// How many times its fused score a candidate from the time the query asks about counts at
/// most ([`crate::domain::when`]); [`in_time_factor`] lessens it as the time holds more of
/// the candidates. On LoCoMo's 244 questions (of 1,981) naming a time, evidence recall at
/// 1,000 tokens went 0.688 → 0.849 with the rest of the time handling (docs/performance.md).
pub const IN_TIME: f64 = 2.5;

/// How many times its fused score a candidate from the time asked about counts, when
/// `in_time` of the `candidates` are from then: [`IN_TIME`] when few are, falling to 1 as all
/// are. A time says which turns answer only as far as it narrows them: a day among a
/// project's months does (LoCoMo's sessions are weeks apart); a month that holds most of the
/// sessions found, or a day every session shares, does not, and boosting all of them only
/// ranks the turns just outside it lower (LongMemEval's histories, forty sessions over a few
/// weeks, some all of one day).
pub fn in_time_factor(in_time: usize, candidates: usize) -> f64 {
    let share = in_time as f64 / candidates.max(1) as f64;
    1.0 + (IN_TIME - 1.0) * (1.0 - share.clamp(0.0, 1.0))
}

/// The candidates of a fusion that its last list, the nearest neighbours by vector, cannot
/// hold: operations the configured model has not embedded yet (capture runs ahead of the
/// indexer; after a switch of models every operation waits its turn) and memories, which have
/// no vector. Counting the list they cannot be in as a 0 would halve their score beside the
/// turns embedded already, and rank a project's newest work last while the index catches up;
/// they are scored by the lists that could hold them instead ([`over_lists_holding`]).
pub type Vectorless<'a> = HashSet<&'a str>;

/// A fused score (the mean over `in_play` lists, 0 where a list lacks the candidate) as the
/// mean over the lists that could hold it, when `cannot_hold` of them could not: a candidate
/// not embedded by the model yet (while the indexer catches up, or after a switch of models),
/// or a session whose search document is not made yet, counted as a 0 there would rank below
/// everything already indexed that shares a word with the query. Never above 1; as fused when
/// no list, or every one, could hold it.
pub fn over_lists_holding(fused: f64, in_play: usize, cannot_hold: usize) -> f64 {
    let holding = in_play.saturating_sub(cannot_hold);
    if holding == 0 || holding == in_play {
        return fused;
    }
    (fused * in_play as f64 / holding as f64).min(1.0)
}

/// Score fusion of lists whose scores are already on 0..=1 (BM25 over its best, [`spread`]
/// vectors): the mean over the lists that could hold the candidate (0 where such a list lacks
/// it; the last list cannot hold those in `vectorless`, [`Vectorless`]), those under
/// `MIN_SIMILARITY` dropped, those `in_time` counted [`in_time_factor`] times (then all scaled
/// back onto 0..=1), then [`with_neighbours`] over what `places` locates, the `pool` best
/// kept. On LoCoMo's questions the mean holds more of the evidence in its top 20 than
/// reciprocal-rank fusion (0.50 against 0.45; docs/performance.md).
pub fn fuse_scores(
    lists: &[Vec<(String, f64)>],
    places: &Places<'_>,
    in_time: &HashSet<&str>,
    vectorless: &Vectorless<'_>,
    pool: usize,
) -> Vec<(String, f64)> {
    let n = lists.len().max(1);
    let mut sum: HashMap<&str, f64> = HashMap::new();
    for list in lists {
        for (id, s) in list {
            *sum.entry(id.as_str()).or_insert(0.0) += s.clamp(0.0, 1.0) / n as f64;
        }
    }
    for (id, s) in sum.iter_mut() {
        if vectorless.contains(id) {
            *s = over_lists_holding(*s, n, 1);
        }
    }
    sum.retain(|_, s| *s >= MIN_SIMILARITY);
    if !in_time.is_empty() {
        // What happened when the query asks about counts more, then all are scaled back onto
        // 0..=1.
        let factor = in_time_factor(
            sum.keys().filter(|id| in_time.contains(*id)).count(),
            sum.len(),
        );
        let mut best: f64 = 0.0;
        for (id, s) in sum.iter_mut() {
            if in_time.contains(id) {
                *s *= factor;
            }
            best = best.max(*s);
        }
        if best > 1.0 {
            sum.values_mut().for_each(|s| *s /= best);
        }
    }
    let mut fused: Vec<(String, f64)> = with_neighbours(&sum, places)
        .into_iter()
        .map(|(id, s)| (id.to_string(), s))
        .collect();
    fused.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    fused.truncate(pool);
    fused
}

/// Turns answer in runs — a question and its reply, a call and its result, a story told over
/// a few messages — and within the sessions on the subject, so a candidate beside a strong
/// one, or in a session holding one, is likelier part of the answer: each score gains
/// [`NEIGHBOUR_WEIGHT`] × the better score of the candidates just before and just after it in
/// its session ([`ANSWER_WEIGHT`] × the one before when that one is answered by what follows
/// it: the reply to a question on the subject, a call's result), [`NEAR_WEIGHT`] × the better
/// of those two places away (one speaker's turn after the other's reply, a result after its
/// call) and [`SESSION_WEIGHT`] × the best score in its session (its own included), times its
/// [`reach`] — a long turn gains less, since it answers on its own or not at all; then all are
/// scaled so that the best is as high as the best fused score was (on 0..=1). Candidates
/// `places` cannot locate gain nothing. On LoCoMo's 1,981 questions, through the whole task
/// context, evidence recall at 1,000 tokens went 0.661 → 0.688 with the neighbours, → 0.694
/// with the session as well, and 0.719 → 0.727 with the turns two places away; on
/// LongMemEval's long replies the gains lifted every reply of a session on the subject above
/// the user's turn that answers: 0.710 → 0.797 with the reach (full text; docs/performance.md).
pub fn with_neighbours<'a>(
    scores: &HashMap<&'a str, f64>,
    places: &Places<'_>,
) -> Vec<(&'a str, f64)> {
    // Each located candidate's score, and how much of it the candidate after it gains.
    let at: HashMap<(&str, i64), (f64, f64)> = scores
        .iter()
        .filter_map(|(id, s)| {
            places
                .get(id)
                .map(|p| ((p.session, p.seq), (*s, p.lends_next())))
        })
        .collect();
    let mut best: HashMap<&str, f64> = HashMap::new();
    for (&(session, _), &(s, _)) in &at {
        let b = best.entry(session).or_insert(0.0);
        *b = b.max(s);
    }
    let scale = 1.0 + ANSWER_WEIGHT.max(NEIGHBOUR_WEIGHT) + NEAR_WEIGHT + SESSION_WEIGHT;
    let placed: Vec<(&'a str, f64)> = scores
        .iter()
        .map(|(&id, &s)| {
            let Some(p) = places.get(id) else {
                return (id, s / scale);
            };
            let score = |seq| at.get(&(p.session, seq)).map_or(0.0, |a| a.0);
            let apart = |d| score(p.seq - d).max(score(p.seq + d));
            let before = at
                .get(&(p.session, p.seq - 1))
                .map_or(0.0, |&(s, lent)| s * lent);
            let beside = before.max(NEIGHBOUR_WEIGHT * score(p.seq + 1));
            let gained = beside
                + NEAR_WEIGHT * apart(2)
                + SESSION_WEIGHT * best.get(p.session).copied().unwrap_or(0.0);
            (id, (s + p.reach * gained) / scale)
        })
        .collect();
    // The best keeps the best fused score, so similarity weighs against recency and
    // importance as much as before this step.
    let raw = scores.values().copied().fold(0.0_f64, f64::max);
    let now = placed.iter().map(|(_, s)| *s).fold(0.0_f64, f64::max);
    let k = if now > 0.0 { raw / now } else { 1.0 };
    placed
        .into_iter()
        .map(|(id, s)| (id, (s * k).min(1.0)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_came_after_the_question_gains_no_recency() {
        let now = 1_795_600_800_000_i64;
        let day = 86_400_000_i64;
        assert!((recency_at(now, now) - 1.0).abs() < 1e-9);
        assert!((recency_at(now, now - 30 * day) - 0.5).abs() < 1e-9);
        assert!(
            (recency_at(now, now + day / 2) - 1.0).abs() < 1e-9,
            "clocks disagree"
        );
        assert_eq!(recency_at(now, now + 2 * day), 0.0);
    }

    #[test]
    fn a_time_counts_less_the_more_of_the_candidates_it_holds() {
        assert!((in_time_factor(0, 300) - IN_TIME).abs() < 1e-9);
        assert!(in_time_factor(20, 300) > 2.3, "a day among months");
        assert!(in_time_factor(150, 300) < in_time_factor(20, 300));
        assert!(
            (in_time_factor(300, 300) - 1.0).abs() < 1e-9,
            "every candidate: no lift"
        );
        assert!((in_time_factor(5, 0) - 1.0).abs() < 1e-9);
    }

    #[test]
    fn a_query_narrowed_to_a_project_is_its_clause_and_its_words() {
        let words = lucene_words_on("search_text", "Fix the parser: cache").unwrap();
        assert_eq!(words, "+search_text:(fix parser\\: cache)");
        assert_eq!(
            lucene_query_on("search_text", "bench-1m", "Fix the parser: cache").unwrap(),
            format!("{} {words}", project_clause("bench-1m"))
        );
        assert_eq!(lucene_words_on("search_text", "the of"), None);
        // A turn's words are asked in its text and its identifiers' parts; an identifier in
        // the query is asked whole and by its parts.
        assert_eq!(
            lucene_words_in(&TURN_FIELDS, "why did token_store.rs fail").unwrap(),
            "+(search_text:(token_store.rs fail token store rs) \
             search_parts:(token_store.rs fail token store rs))"
        );
        assert_eq!(
            lucene_words_in(&TURN_FIELDS, "parseConfig").unwrap(),
            "+(search_text:(parseconfig parse config) search_parts:(parseconfig parse config))"
        );
    }

    #[test]
    fn lucene_syntax_is_escaped() {
        assert_eq!(escape_lucene("a+b:(c)*"), "a\\+b\\:\\(c\\)\\*");
        let q = lucene_query("p-1", "Fix AND \"login\" || NOT redirect~ [x] \\").unwrap();
        assert_eq!(
            q,
            "+(+project:p +project:1) +(search_doc:(fix \\\"login\\\" redirect\\~ \\[x\\]) \
             search_doc_parts:(fix \\\"login\\\" redirect\\~ \\[x\\]))"
        );
        assert_eq!(lucene_query("p", "the ??? && ||"), None);
    }

    #[test]
    fn a_long_neighbour_list_is_spread_a_short_one_kept() {
        let long: Vec<f64> = (0..20).map(|i| 0.80 + 0.005 * i as f64).collect();
        let spread_long = spread(&long, Calibration::PLAIN);
        assert!(spread_long[0].abs() < 1e-9 && (spread_long[19] - 1.0).abs() < 1e-9);
        // A short list: the cosine, (2s - 1), so a weak neighbour stays weak.
        let short = spread(&[0.9, 0.6, 0.4], Calibration::PLAIN);
        assert!((short[0] - 0.8).abs() < 1e-9 && (short[1] - 0.2).abs() < 1e-9);
        assert_eq!(short[2], 0.0);
        // A model whose unrelated texts lie at cosine 0.7: 0.7 reads as nothing, 0.85 as half.
        let e5 = Calibration {
            unrelated: 0.7,
            span: 0.3,
        };
        let short = spread(&[0.925, 0.85], e5);
        assert!(
            (short[0] - 0.5).abs() < 1e-9 && short[1].abs() < 1e-9,
            "{short:?}"
        );
    }

    #[test]
    fn score_fusion_averages_and_rewards_agreement() {
        let bm25 = vec![("a".to_string(), 1.0), ("b".to_string(), 0.5)];
        let vectors = vec![
            ("b".to_string(), 1.0),
            ("c".to_string(), 0.6),
            ("d".to_string(), 0.05),
        ];
        let fused = fuse_scores(
            &[bm25, vectors],
            &Places::new(),
            &HashSet::new(),
            &HashSet::new(),
            10,
        );
        let ids: Vec<&str> = fused.iter().map(|(i, _)| i.as_str()).collect();
        // b 0.75, a 0.5, c 0.3; d (0.025) is under the floor.
        assert_eq!(ids, ["b", "a", "c"]);
        // Unplaced candidates keep their own score.
        assert!((fused[0].1 - 0.75).abs() < 1e-9);
        let one = fuse_scores(
            &[vec![("a".to_string(), 1.0)]],
            &Places::new(),
            &HashSet::new(),
            &HashSet::new(),
            1,
        );
        assert!((one[0].1 - 1.0).abs() < 1e-9);
    }

    #[test]
    fn a_candidate_the_vector_list_cannot_hold_is_scored_by_the_others() {
        let bm25 = vec![("waiting".to_string(), 1.0), ("embedded".to_string(), 0.6)];
        let vectors = vec![("embedded".to_string(), 0.9)];
        let fused = |vectorless: &Vectorless| {
            fuse_scores(
                &[bm25.clone(), vectors.clone()],
                &Places::new(),
                &HashSet::new(),
                vectorless,
                10,
            )
        };
        // Counted as 0 in the vector list, the best match by words falls behind (0.5 < 0.75).
        let as_zero = fused(&HashSet::new());
        assert_eq!(as_zero[0].0, "embedded");
        // Not embedded yet: its words alone score it (1.0), the others as before.
        let fair = fused(&["waiting"].into_iter().collect());
        assert_eq!(fair[0].0, "waiting");
        assert!((fair[0].1 - 1.0).abs() < 1e-9 && (fair[1].1 - 0.75).abs() < 1e-9);
        // With one list there is nothing to leave out.
        let one = fuse_scores(
            std::slice::from_ref(&bm25),
            &Places::new(),
            &HashSet::new(),
            &["embedded"].into_iter().collect(),
            10,
        );
        assert!((one[1].1 - 0.6).abs() < 1e-9);
    }

    #[test]
    fn a_session_is_scored_by_the_lists_that_could_hold_it() {
        // Four lists in play; words' 0.9 and a turn's 0.7 found it: 1.6 / 4.
        assert!((over_lists_holding(0.4, 4, 0) - 0.4).abs() < 1e-9);
        // Not embedded yet: the mean of the three that could hold it.
        assert!((over_lists_holding(0.4, 4, 1) - 1.6 / 3.0).abs() < 1e-9);
        // No document yet either: the turns' lists alone, never above 1.
        assert!((over_lists_holding(0.4, 4, 2) - 0.8).abs() < 1e-9);
        assert_eq!(over_lists_holding(0.9, 3, 2), 1.0);
        // No list could hold it (nothing to compare with): as fused.
        assert_eq!(over_lists_holding(0.3, 1, 1), 0.3);
    }

    #[test]
    fn a_candidate_beside_a_strong_one_or_in_its_session_rises() {
        let list = vec![
            ("question".to_string(), 1.0),
            ("reply".to_string(), 0.3),
            ("elsewhere".to_string(), 0.35),
            ("other-session".to_string(), 0.34),
        ];
        let places: Places = [
            ("question", Place::new("s1", 4, 1.0)),
            ("reply", Place::new("s1", 5, 1.0)),
            ("elsewhere", Place::new("s1", 9, 1.0)),
            ("other-session", Place::new("s2", 3, 1.0)),
        ]
        .into_iter()
        .collect();
        let fused = fuse_scores(
            std::slice::from_ref(&list),
            &places,
            &HashSet::new(),
            &HashSet::new(),
            10,
        );
        let ids: Vec<&str> = fused.iter().map(|(i, _)| i.as_str()).collect();
        assert_eq!(ids, ["question", "reply", "elsewhere", "other-session"]);
        let reply = fused.iter().find(|(i, _)| i == "reply").unwrap().1;
        // The best keeps its fused score (1.0): everything is scaled by what the best gained.
        assert!((fused[0].1 - 1.0).abs() < 1e-9);
        let best = 1.0 + NEIGHBOUR_WEIGHT * 0.3 + SESSION_WEIGHT * 1.0;
        // Beside the question, in the question's session.
        let want = (0.3 + NEIGHBOUR_WEIGHT * 1.0 + SESSION_WEIGHT * 1.0) / best;
        assert!((reply - want).abs() < 1e-9);
        // Its session's best is itself.
        let other = fused.iter().find(|(i, _)| i == "other-session").unwrap().1;
        assert!((other - (0.34 + SESSION_WEIGHT * 0.34) / best).abs() < 1e-9);
        // Without places, the order is the lists' own.
        let fused = fuse_scores(
            &[list],
            &Places::new(),
            &HashSet::new(),
            &HashSet::new(),
            10,
        );
        assert_eq!(fused[1].0, "elsewhere");
        assert_eq!(fused[3].0, "reply");
    }

    #[test]
    fn a_candidate_two_places_from_a_strong_one_gains_less_than_one_beside_it() {
        let list = vec![
            ("asked".to_string(), 1.0),
            ("beside".to_string(), 0.3),
            ("two-on".to_string(), 0.3),
            ("three-on".to_string(), 0.3),
        ];
        let places: Places = [
            ("asked", Place::new("s1", 10, 1.0)),
            ("beside", Place::new("s1", 9, 1.0)),
            ("two-on", Place::new("s1", 12, 1.0)),
            ("three-on", Place::new("s1", 13, 1.0)),
        ]
        .into_iter()
        .collect();
        let fused = fuse_scores(&[list], &places, &HashSet::new(), &HashSet::new(), 10);
        let ids: Vec<&str> = fused.iter().map(|(i, _)| i.as_str()).collect();
        assert_eq!(ids, ["asked", "beside", "two-on", "three-on"]);
        let score = |id: &str| fused.iter().find(|(i, _)| i == id).unwrap().1;
        // Both are beside a 0.3 and in the session of "asked"; only "two-on" is two places
        // from it.
        let gap = NEAR_WEIGHT * 1.0;
        let best = 1.0 + NEIGHBOUR_WEIGHT * 0.3 + NEAR_WEIGHT * 0.3 + SESSION_WEIGHT;
        assert!((score("two-on") - score("three-on") - gap / best).abs() < 1e-9);
    }

    #[test]
    fn the_reply_to_a_question_gains_more_of_it_than_the_turn_before_it() {
        let list = vec![
            ("asks".to_string(), 1.0),
            ("reply".to_string(), 0.3),
            ("states".to_string(), 1.0),
            ("after-statement".to_string(), 0.3),
            ("before-question".to_string(), 0.3),
        ];
        let places: Places = [
            ("before-question", Place::new("s1", 1, 1.0)),
            ("asks", Place::new("s1", 2, 1.0).answered(true)),
            ("reply", Place::new("s1", 3, 1.0)),
            ("states", Place::new("s2", 1, 1.0)),
            ("after-statement", Place::new("s2", 2, 1.0)),
        ]
        .into_iter()
        .collect();
        let fused = fuse_scores(&[list], &places, &HashSet::new(), &HashSet::new(), 10);
        let score = |id: &str| fused.iter().find(|(i, _)| i == id).unwrap().1;
        // Each is beside a 1.0 in a session whose best is 1.0; only the reply follows the
        // question it answers. The reply and the turn before the question are also two
        // places from each other.
        let best = 1.0 + NEIGHBOUR_WEIGHT * 0.3 + SESSION_WEIGHT;
        let near = NEAR_WEIGHT * 0.3;
        let want = |beside: f64, near: f64| (0.3 + beside + near + SESSION_WEIGHT) / best;
        assert!((score("reply") - want(ANSWER_WEIGHT, near)).abs() < 1e-9);
        assert!((score("after-statement") - want(NEIGHBOUR_WEIGHT, 0.0)).abs() < 1e-9);
        // The question's answer does not flow backwards.
        assert!((score("before-question") - want(NEIGHBOUR_WEIGHT, near)).abs() < 1e-9);
        assert!(score("reply") > score("before-question"));
    }

    #[test]
    fn a_long_turn_gains_less_from_what_stands_beside_it() {
        assert_eq!(reach(SHORT_TEXT), 1.0);
        assert_eq!(reach(4 * SHORT_TEXT), 0.25);
        let list = vec![
            ("asked".to_string(), 1.0),
            ("short-reply".to_string(), 0.3),
            ("asked-too".to_string(), 1.0),
            ("long-reply".to_string(), 0.3),
        ];
        let places: Places = [
            ("asked", Place::new("s1", 1, 1.0)),
            ("short-reply", Place::new("s1", 2, reach(100))),
            ("asked-too", Place::new("s2", 1, 1.0)),
            ("long-reply", Place::new("s2", 2, reach(4 * SHORT_TEXT))),
        ]
        .into_iter()
        .collect();
        let fused = fuse_scores(&[list], &places, &HashSet::new(), &HashSet::new(), 10);
        let score = |id: &str| fused.iter().find(|(i, _)| i == id).unwrap().1;
        let gain = NEIGHBOUR_WEIGHT * 1.0 + SESSION_WEIGHT * 1.0;
        let best = 1.0 + NEIGHBOUR_WEIGHT * 0.3 + SESSION_WEIGHT * 1.0;
        assert!((score("short-reply") - (0.3 + gain) / best).abs() < 1e-9);
        assert!((score("long-reply") - (0.3 + 0.25 * gain) / best).abs() < 1e-9);
        assert!(score("asked-too") > score("short-reply"));
    }

    #[test]
    fn fusion_rewards_agreement_and_excludes() {
        let a = vec![("x".to_string(), 1.0), ("y".to_string(), 0.5)];
        let b = vec![("y".to_string(), 0.9), ("z".to_string(), 0.8)];
        let fused = fuse(&[a.clone(), b], &[], 10);
        assert_eq!(fused[0].0, "y");
        assert!((fused[0].1 - 0.7).abs() < 1e-9);
        let fused = fuse(&[a], &["x".to_string()], 10);
        assert_eq!(fused.len(), 1);
    }

    #[test]
    fn stop_words_are_sorted_for_lookup_and_drop_a_questions_function_words() {
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(
            lucene_query("p", "What did Caroline research?"),
            Some(
                "+(+project:p) +(search_doc:(caroline research\\?) \
                 search_doc_parts:(caroline research\\?))"
                    .to_string()
            )
        );
    }

    #[test]
    fn recency_halves_at_thirty_days() {
        assert_eq!(recency(0.0), 1.0);
        assert!((recency(30.0) - 0.5).abs() < 1e-12);
    }
}
