//! Hybrid session search: BM25 over search documents (always) and embedding similarity (when
//! an embeddings endpoint is configured and the project has embeddings), fused by reciprocal
//! rank, then re-ranked by `w_s·similarity + w_r·recency + w_i·importance`.
//!
//! - recency = 1 / (1 + days/30) of the session's last activity;
//! - importance = decisions and progress, capped at 1 (computed by the indexer);
//! - similarity = the mean, over the lists in play, of the hit's normalised score in each
//!   (BM25 / best BM25 of the query; cosine), 0 where a list missed it.
//!
//! Query text never reaches Lucene raw: it is cut into terms, each escaped ([`escape_lucene`]).

use std::collections::HashMap;

use serde::Deserialize;

use crate::config::SearchSettings;
use crate::embed::Embedder;
use crate::graph::{now_ms, param, statement, Store, StoreResult};
use crate::recall::context::ScopeSession;

/// Query characters at most.
pub const MAX_QUERY_CHARS: usize = 1_000;
/// Hits per search at most.
pub const MAX_LIMIT: usize = 50;
pub const DEFAULT_LIMIT: usize = 10;
/// Terms sent to Lucene at most (the rest of a long query is ignored).
const MAX_TERMS: usize = 64;
/// The reciprocal-rank constant (Cormack et al.).
const RRF_K: f64 = 60.0;
const DAY_MS: f64 = 86_400_000.0;
/// Candidates less similar than this are noise, however recent or important.
const MIN_SIMILARITY: f64 = 0.05;

/// Lucene's English stop words: a query of only these would match every document.
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
    "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these",
    "they", "this", "to", "was", "will", "with",
];

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

/// Escapes every character the Lucene classic query parser treats as syntax.
pub fn escape_lucene(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if matches!(
            c,
            '+' | '-'
                | '&'
                | '|'
                | '!'
                | '('
                | ')'
                | '{'
                | '}'
                | '['
                | ']'
                | '^'
                | '"'
                | '~'
                | '*'
                | '?'
                | ':'
                | '\\'
                | '/'
        ) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The Lucene query for `text` within `project`, or `None` when the text has no searchable
/// term. Terms are lowercased (so `AND`/`OR`/`NOT` are words, not operators) and escaped.
pub fn lucene_query(project: &str, text: &str) -> Option<String> {
    lucene_query_on("search_doc", project, text)
}

/// [`lucene_query`] over another indexed `field`.
pub fn lucene_query_on(field: &str, project: &str, text: &str) -> Option<String> {
    let terms: Vec<String> = text
        .split_whitespace()
        .map(str::to_lowercase)
        .filter(|t| t.chars().any(char::is_alphanumeric))
        .filter(|t| !STOP_WORDS.contains(&t.as_str()))
        .take(MAX_TERMS)
        .map(|t| escape_lucene(&t))
        .collect();
    if terms.is_empty() {
        return None;
    }
    Some(format!(
        "+project:\"{}\" +{field}:({})",
        escape_lucene(project),
        terms.join(" ")
    ))
}

/// 1 / (1 + days/30).
pub fn recency(days: f64) -> f64 {
    1.0 / (1.0 + days.max(0.0) / 30.0)
}

#[derive(Deserialize)]
struct Scored {
    id: String,
    score: f64,
}

/// Runs one ranked-list statement: `$project`, `$k` and one input parameter.
async fn ranked(
    store: &Store,
    text: &'static str,
    project: &str,
    model: &str,
    input: (&str, neo4rs::BoltType),
    k: usize,
) -> StoreResult<Vec<Scored>> {
    store
        .fetch(
            statement(text)
                .param(input.0, input.1)
                .param("project", project)
                .param("model", model)
                .param("k", k as i64),
        )
        .await
}

async fn fulltext(store: &Store, project: &str, text: &str, k: usize) -> StoreResult<Vec<Scored>> {
    let Some(query) = lucene_query(project, text) else {
        return Ok(Vec::new());
    };
    let cypher = include_str!("../../cypher/search_fulltext.cypher");
    ranked(store, cypher, project, "", ("query", query.into()), k).await
}

/// The nearest sessions by the vectors `model` made.
async fn vector(
    store: &Store,
    project: &str,
    model: &str,
    v: &[f32],
    k: usize,
) -> StoreResult<Vec<Scored>> {
    let vector = param(v)?;
    // The index is shared by every project: ask for more, and scan this project exactly
    // when other projects crowded it out.
    let approx_cypher = include_str!("../../cypher/search_vector.cypher");
    let wide = (k * 4).min(1_000);
    let approx = ranked(
        store,
        approx_cypher,
        project,
        model,
        ("vector", vector.clone()),
        wide,
    )
    .await?;
    if approx.len() >= k {
        return Ok(approx.into_iter().take(k).collect());
    }
    let exact_cypher = include_str!("../../cypher/search_vector_exact.cypher");
    ranked(store, exact_cypher, project, model, ("vector", vector), k).await
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
    search_in(
        store,
        embedder,
        Lists::Both,
        weights,
        project,
        text,
        limit,
        exclude,
    )
    .await
}

/// [`search`] on the chosen ranked lists only.
#[allow(clippy::too_many_arguments)]
pub async fn search_in(
    store: &Store,
    embedder: Option<&Embedder>,
    lists: Lists,
    weights: Weights,
    project: &str,
    text: &str,
    limit: usize,
    exclude: &[String],
) -> StoreResult<Found> {
    let limit = limit.clamp(1, MAX_LIMIT);
    let k = (limit + exclude.len()) * 5;
    let k = k.max(50);
    let embedder = embedder.filter(|_| lists.vector());
    let (bm25, embedded) = tokio::join!(
        async {
            if lists.fulltext() {
                fulltext(store, project, text, k).await
            } else {
                Ok(Vec::new())
            }
        },
        async {
            match embedder {
                Some(e) => Some(e.embed(&[text.to_string()]).await),
                None => None,
            }
        }
    );
    let bm25 = bm25?;
    let mut degraded = None;
    let mut nearest = Vec::new();
    match embedded {
        Some(Ok(mut v)) => {
            if let (Some(v), Some(e)) = (v.pop(), embedder) {
                nearest = vector(store, project, e.model(), &v, k).await?;
            }
        }
        Some(Err(crate::embed::EmbedError::Unavailable(why))) => {
            // Logged once where the model failed to load; each answer says it again.
            degraded = Some(why);
        }
        Some(Err(err)) => {
            tracing::warn!(error = %err, "query embedding failed; searching on fulltext alone");
            degraded = Some(format!("embedding the query failed ({err}); fulltext only"));
        }
        None => {}
    }
    let mode = if nearest.is_empty() {
        Mode::Fulltext
    } else {
        Mode::Hybrid
    };
    let mut ranked = Vec::new();
    if lists.fulltext() {
        ranked.push(normalise_bm25(bm25));
    }
    if mode == Mode::Hybrid {
        ranked.push(normalise_cosine(nearest));
    }
    let fused = fuse(&ranked, exclude, (limit * 4).max(40));
    let ids: Vec<&str> = fused.iter().map(|(id, _)| id.as_str()).collect();
    #[derive(Deserialize)]
    struct Row {
        id: String,
        task: Option<String>,
        summary: Option<String>,
        status: Option<String>,
        files: Vec<String>,
        importance: f64,
        llm_summary: Option<String>,
        started_at: i64,
        last_activity_at: Option<i64>,
        operation_count: i64,
    }
    let rows: Vec<Row> = if ids.is_empty() {
        Vec::new()
    } else {
        store
            .fetch(
                statement(include_str!("../../cypher/search_hits.cypher"))
                    .param("ids", param(&ids)?)
                    .param("project", project),
            )
            .await?
    };
    let similarity: HashMap<&str, f64> = fused.iter().map(|(id, s)| (id.as_str(), *s)).collect();
    let now = now_ms();
    let mut hits: Vec<Hit> = rows
        .into_iter()
        .map(|r| {
            let sim = similarity.get(r.id.as_str()).copied().unwrap_or(0.0);
            let days = (now - r.last_activity_at.unwrap_or(now)).max(0) as f64 / DAY_MS;
            let score = weights.similarity * sim
                + weights.recency * recency(days)
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

/// Neo4j reports cosine as (1 + cos) / 2; back to cos, negatives as 0.
fn normalise_cosine(list: Vec<Scored>) -> Vec<(String, f64)> {
    list.into_iter()
        .map(|s| (s.id, (2.0 * s.score - 1.0).clamp(0.0, 1.0)))
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lucene_syntax_is_escaped() {
        assert_eq!(escape_lucene("a+b:(c)*"), "a\\+b\\:\\(c\\)\\*");
        let q = lucene_query("p-1", "Fix AND \"login\" || NOT redirect~ [x] \\").unwrap();
        assert_eq!(
            q,
            "+project:\"p\\-1\" +search_doc:(fix \\\"login\\\" redirect\\~ \\[x\\])"
        );
        assert_eq!(lucene_query("p", "the ??? && ||"), None);
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
    fn recency_halves_at_thirty_days() {
        assert_eq!(recency(0.0), 1.0);
        assert!((recency(30.0) - 0.5).abs() < 1e-12);
    }
}
