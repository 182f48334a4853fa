//! A project's statistics for turn search, remembered briefly: how many turns it holds (the
//! `N` of project-local BM25, and whether its vectors can be compared one by one) and how many
//! of its turns hold each query word (the `n` of each word's IDF, [`bm25::Stats`]).
//!
//! Reading them is the costly part of a search on a large project: the size visits every
//! session of the project, a word's count up to [`TERM_COUNT_CAP`] index hits — the most for
//! the commonest words, which are also the words queries repeat. Large counts change slowly
//! next to their size, so a large count is kept for [`TTL`] per project (and word), in this
//! process only; a small one is cheap to count and changes fast, so it is counted each time
//! (a new project's statistics are always current) — except in a large project (its size
//! remembered), where a word's few turns more or less within [`TTL`] move its weight little
//! and a word the project never holds would otherwise be counted again on every query. So is
//! the size of the whole database, which tells how much of the shared full-text index a large
//! project is ([`known_share`]). And how many passages a project's operations have
//! ([`passages`]): none means the passage index is not asked at all. And which projects the
//! shared approximate vector index has lately answered with too few of their vectors
//! ([`crowded`]): a small project among larger ones, compared one by one at once. And how
//! wide that index had to be asked for a project's list narrowed by kind ([`widened`]): a
//! search for messages among a million operations is asked that wide at once, not after a
//! first answer left it short. And the speakers' labels a project's searches last found
//! ([`speakers`], for an hour): a query naming one is embedded without the name at once,
//! beside its full-text list, rather than again after it (`recall::speaker`).

use std::sync::LazyLock;
use std::time::Duration;

use moka::sync::Cache;

use crate::graph::turns::{self as store_turns, TermQuery, Vectors};
use crate::graph::{Store, StoreResult};
use crate::recall::{bm25, rank};

/// How long a count is taken as known.
pub const TTL: Duration = Duration::from_secs(60);
/// Most turns counted per query word: past it a word is common in the project anyway.
pub const TERM_COUNT_CAP: usize = 1_000;
/// Turns from which a project's size is remembered.
const REMEMBER_SIZE_FROM: usize = 10_000;
/// Turns holding a word from which its count is remembered.
const REMEMBER_COUNT_FROM: usize = 100;
/// Projects, and (project, word) pairs, remembered at most.
const REMEMBERED: u64 = 100_000;

fn cache<K, V>() -> Cache<K, V>
where
    K: std::hash::Hash + Eq + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    cache_for(TTL)
}

/// A cache of at most [`REMEMBERED`] entries, each kept for `ttl`.
fn cache_for<K, V>(ttl: Duration) -> Cache<K, V>
where
    K: std::hash::Hash + Eq + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    Cache::builder()
        .max_capacity(REMEMBERED)
        .time_to_live(ttl)
        .build()
}

static PASSAGES: LazyLock<Cache<String, usize>> = LazyLock::new(cache);
static SIZES: LazyLock<Cache<String, usize>> = LazyLock::new(cache);
static WORDS: LazyLock<Cache<(String, String), usize>> = LazyLock::new(cache);
/// Projects (with the vectors compared, and whether the list was narrowed to some types)
/// the approximate index answered with too few rows, so that they were compared one by one.
static CROWDED: LazyLock<Cache<(String, Vectors, bool), ()>> = LazyLock::new(cache);
/// How many neighbours the approximate index was last asked for to fill a list of a project's
/// vectors narrowed to some kinds (the kinds' key, [`kinds_key`]), when its first answer left
/// the list short.
static WIDENED: LazyLock<Cache<(String, Vectors, String), usize>> = LazyLock::new(cache);
/// The whole database's turns ([`store_turns::all_size`]), under the one key `()`.
static ALL: LazyLock<Cache<(), usize>> = LazyLock::new(cache);

/// How long a project's speakers are taken as known: they change far more slowly than counts.
const SPEAKERS_TTL: Duration = Duration::from_secs(3_600);
/// Labels remembered per project at most.
const SPEAKERS_KEPT: usize = 32;
static SPEAKERS: LazyLock<Cache<String, Vec<String>>> = LazyLock::new(|| cache_for(SPEAKERS_TTL));

/// The speakers' labels `project`'s searches found lately; empty when none are known.
pub fn speakers(project: &str) -> Vec<String> {
    SPEAKERS.get(project).unwrap_or_default()
}

/// Remembers `labels` among `project`'s speakers (beside those known, the newest first, at
/// most `SPEAKERS_KEPT`).
pub fn remember_speakers(project: &str, labels: &[String]) {
    if labels.is_empty() {
        return;
    }
    let known = speakers(project);
    if labels.iter().all(|l| known.contains(l)) {
        return;
    }
    let mut all: Vec<String> = labels.to_vec();
    all.extend(known.into_iter().filter(|l| !labels.contains(l)));
    all.truncate(SPEAKERS_KEPT);
    SPEAKERS.insert(project.to_string(), all);
}

/// The share of the database's turns `project` holds, when both counts are remembered (a
/// large project searched within [`TTL`]); `None` otherwise.
pub fn known_share(project: &str) -> Option<f64> {
    let all = ALL.get(&())?;
    let size = SIZES.get(project)?;
    (all > 0).then(|| (size as f64 / all as f64).min(1.0))
}

/// How many turns the database holds, remembered for [`TTL`].
async fn all_size(store: &Store) -> StoreResult<usize> {
    if let Some(n) = ALL.get(&()) {
        return Ok(n);
    }
    let n = store_turns::all_size(store).await?;
    ALL.insert((), n);
    Ok(n)
}

/// How many turns `project` holds, when a large size is remembered ([`project_size`]).
pub fn known_size(project: &str) -> Option<usize> {
    SIZES.get(project)
}

/// How many turns `project` holds, roughly ([`store_turns::project_size`]).
pub async fn project_size(store: &Store, project: &str) -> StoreResult<usize> {
    if let Some(n) = SIZES.get(project) {
        return Ok(n);
    }
    let n = store_turns::project_size(store, project).await?;
    if n >= REMEMBER_SIZE_FROM {
        SIZES.insert(project.to_string(), n);
    }
    Ok(n)
}

/// Whether the approximate index answered a list of `project`'s `of` vectors (narrowed to
/// some types: `typed`) with too few of them within [`TTL`], so that its vectors were
/// compared one by one ([`mark_crowded`]): that answer would be set aside again.
pub fn crowded(project: &str, of: Vectors, typed: bool) -> bool {
    CROWDED.contains_key(&(project.to_string(), of, typed))
}

/// Remembers for [`TTL`] that the approximate index left `project`'s `of` list short.
pub fn mark_crowded(project: &str, of: Vectors, typed: bool) {
    CROWDED.insert((project.to_string(), of, typed), ());
}

/// The key of a list's narrowing in [`widened`]: the kinds kept (sorted, each once) and
/// whether a session is left out.
pub fn kinds_key(types: Option<&[String]>, excludes: bool) -> String {
    let mut kinds: Vec<&str> = types
        .unwrap_or_default()
        .iter()
        .map(String::as_str)
        .collect();
    kinds.sort_unstable();
    kinds.dedup();
    format!("{}|{excludes}", kinds.join(","))
}

/// How many neighbours the approximate index had to be asked for, within [`TTL`], to fill a
/// list of `project`'s `of` vectors narrowed as `kinds` says ([`mark_widened`]).
pub fn widened(project: &str, of: Vectors, kinds: &str) -> Option<usize> {
    WIDENED.get(&(project.to_string(), of, kinds.to_string()))
}

/// Remembers for [`TTL`] that `wide` neighbours were asked for to fill such a list.
pub fn mark_widened(project: &str, of: Vectors, kinds: &str, wide: usize) {
    WIDENED.insert((project.to_string(), of, kinds.to_string()), wide);
}

/// How many passages `project`'s operations have, counted up to `cap`. A count is
/// remembered for [`TTL`], except none in a project not known to be large: a small project's
/// first passages are searched as soon as they are stored.
pub async fn passages(store: &Store, project: &str, cap: usize) -> StoreResult<usize> {
    if let Some(n) = PASSAGES.get(project) {
        return Ok(n);
    }
    let n = store_turns::passage_count(store, project, cap).await?;
    if n > 0 || SIZES.contains_key(project) {
        PASSAGES.insert(project.to_string(), n);
    }
    Ok(n)
}

/// The project's statistics for the query's words (raw word, stem), counting only the words
/// not counted within [`TTL`].
pub async fn for_query(
    store: &Store,
    project: &str,
    words: &[(String, String)],
) -> StoreResult<bm25::Stats> {
    let words = &words[..words.len().min(rank::MAX_TERMS)];
    let mut df = std::collections::HashMap::new();
    let mut missing: Vec<TermQuery> = Vec::new();
    for (raw, stem) in words {
        match WORDS.get(&(project.to_string(), stem.clone())) {
            Some(n) => {
                df.insert(stem.clone(), n);
            }
            None if !missing.iter().any(|t| &t.word == stem) => missing.push(TermQuery {
                word: stem.clone(),
                query: format!(
                    "{} +({})",
                    rank::project_clause(project),
                    rank::TURN_FIELDS
                        .map(|f| format!("{f}:({})", rank::escape_lucene(raw)))
                        .join(" ")
                ),
            }),
            None => {}
        }
    }
    let (docs, counted, all) = tokio::join!(
        project_size(store, project),
        store_turns::term_counts(store, project, &missing, TERM_COUNT_CAP),
        // Only a large project's share is ever asked for ([`known_share`]).
        async {
            match SIZES.get(project) {
                Some(_) => all_size(store).await.map(Some),
                None => Ok(None),
            }
        }
    );
    all?;
    let large = SIZES.contains_key(project);
    for (word, n) in counted? {
        if large || n >= REMEMBER_COUNT_FROM {
            WORDS.insert((project.to_string(), word.clone()), n);
        }
        df.insert(word, n);
    }
    Ok(bm25::Stats { docs: docs?, df })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_projects_speakers_are_remembered_newest_first_beside_those_known() {
        let project = "turn-stats-speakers-test";
        let names = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(speakers(project).is_empty());
        remember_speakers(project, &[]);
        assert!(speakers(project).is_empty());
        remember_speakers(project, &names(&["Caroline", "Melanie"]));
        remember_speakers(project, &names(&["Melanie"]));
        assert_eq!(speakers(project), ["Caroline", "Melanie"], "nothing new");
        remember_speakers(project, &names(&["Ann"]));
        assert_eq!(speakers(project), ["Ann", "Caroline", "Melanie"]);
        let many: Vec<String> = (0..40).map(|i| format!("Name{i}")).collect();
        remember_speakers(project, &many);
        assert_eq!(speakers(project).len(), SPEAKERS_KEPT);
        assert!(speakers("turn-stats-speakers-other").is_empty());
    }

    #[test]
    fn a_crowded_list_is_remembered_for_its_project_vectors_and_typing_alone() {
        let project = "turn-stats-crowded-test";
        assert!(!crowded(project, Vectors::Passages, false));
        mark_crowded(project, Vectors::Passages, false);
        assert!(crowded(project, Vectors::Passages, false));
        assert!(!crowded(project, Vectors::Operations, false));
        assert!(!crowded(project, Vectors::Passages, true));
        assert!(!crowded(
            "turn-stats-crowded-other",
            Vectors::Passages,
            false
        ));
    }

    #[test]
    fn a_widening_is_remembered_for_its_project_vectors_and_kinds_alone() {
        let project = "turn-stats-widened-test";
        let messages = kinds_key(Some(&["message".to_string()]), false);
        assert_eq!(widened(project, Vectors::Operations, &messages), None);
        mark_widened(project, Vectors::Operations, &messages, 800);
        assert_eq!(widened(project, Vectors::Operations, &messages), Some(800));
        assert_eq!(widened(project, Vectors::Passages, &messages), None);
        assert_eq!(
            widened(project, Vectors::Operations, &kinds_key(None, false)),
            None
        );
        assert_eq!(
            widened(
                project,
                Vectors::Operations,
                &kinds_key(Some(&["message".to_string()]), true)
            ),
            None
        );
        // The kinds' order and repeats do not matter.
        let two = |a: &str, b: &str| {
            kinds_key(Some(&[a.to_string(), b.to_string(), a.to_string()]), false)
        };
        assert_eq!(two("message", "decision"), two("decision", "message"));
    }
}
