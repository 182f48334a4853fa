//! Recall for a prompt: what the project remembers that bears on what the user just asked —
//! past turns (with the reply after a question, or what the agent concluded after working on a
//! request), decisions, memories and active beliefs —
//! put in front of the agent unasked, so only what is clearly relevant: a hit must share at
//! least [`MIN_SHARED_WORDS`] of the prompt's content words and a quarter of them
//! ([`MIN_COVERAGE`]) — as whole words, stemmed, so "car" is not found in "Caroline" nor
//! "port" in "report" — or be close in meaning ([`MIN_COSINE`], when vectors are on). A prompt
//! with fewer content words ("yes", "go on") recalls nothing. The current session and its
//! subagents' sessions are never recalled: the agent has them already; nor are earlier copies
//! of the prompt's template filled in otherwise ([`same_template`]).
//!
//! Read-only; rendering and fencing belong to the caller (`claude::context::prompt`).

use std::collections::{HashMap, HashSet};

use crate::config::Encoding;
use crate::embed::Embedder;
use crate::graph::beliefs::BeliefView;
use crate::graph::{self, Store, StoreResult};
use crate::recall::context::terms;
use crate::recall::relevant::{self, Found, History};
use crate::recall::search::Weights;
use crate::recall::{answered, bm25, turns};

/// Content words a hit must share with the prompt (when not close in meaning).
pub const MIN_SHARED_WORDS: usize = 2;
/// Share of the prompt's content words (at most 20 are counted) a hit must contain.
pub const MIN_COVERAGE: f64 = 0.25;
/// Cosine between the prompt's and a turn's embedding above which they mean the same thing,
/// on the common scale (`crate::embed::Calibration`).
pub const MIN_COSINE: f64 = 0.5;
/// Hits asked of turn search.
const HITS: usize = 20;
/// Distinct words from which a prompt may be a template's filling ([`same_template`]).
pub const TEMPLATE_WORDS: usize = 10;
/// Share of their words (Jaccard) two prompts from one template hold in common at least.
pub const TEMPLATE_LIKENESS: f64 = 0.6;
/// Beliefs recalled at most.
const BELIEFS: usize = 3;

/// What a prompt recalls.
#[derive(Debug, Default)]
pub struct Recalled {
    /// Past operations (grouped by session when presented), best first.
    pub history: History,
    /// Memories and session summaries found, best first: `(kind, text)`.
    pub notes: Vec<(String, String)>,
    /// Active beliefs the prompt's words bear on, most convinced first.
    pub beliefs: Vec<BeliefView>,
}

impl Recalled {
    pub fn is_empty(&self) -> bool {
        self.history.found.is_empty() && self.notes.is_empty() && self.beliefs.is_empty()
    }
}

/// The content words of a prompt ([`terms`]: at most 20), each stemmed as the index stems
/// ([`bm25::words`]), each once.
pub fn content_words(prompt: &str) -> Vec<String> {
    let mut stems: Vec<String> = Vec::new();
    for stem in terms(prompt).iter().flat_map(|t| bm25::words(t)) {
        if !stems.contains(&stem) {
            stems.push(stem);
        }
    }
    stems
}

/// How many of `words` (stems, [`content_words`]) are words of `text`.
fn shared(said: &HashSet<String>, words: &[String]) -> usize {
    words.iter().filter(|w| said.contains(*w)).count()
}

/// The distinct stemmed words of `text` ([`bm25::words`]).
fn word_set(text: &str) -> HashSet<String> {
    bm25::words(text).into_iter().collect()
}

/// Whether a text is lexically relevant to a prompt of `words` ([`content_words`]): it has at
/// least [`MIN_SHARED_WORDS`] of them as words of its own, and [`MIN_COVERAGE`] of all of
/// them.
pub fn lexically_relevant(text: &str, words: &[String]) -> bool {
    covers(&word_set(text), words)
}

/// [`lexically_relevant`] for a text already cut into its words (`said`, [`word_set`]).
fn covers(said: &HashSet<String>, words: &[String]) -> bool {
    let need = ((words.len() as f64 * MIN_COVERAGE).ceil() as usize).max(MIN_SHARED_WORDS);
    shared(said, words) >= need
}

/// Whether a user's earlier prompt `text` is the prompt (its stemmed words `said`) filled in
/// otherwise: both hold at least [`TEMPLATE_WORDS`] distinct words, most of them shared
/// ([`TEMPLATE_LIKENESS`], Jaccard), and each holds a word the other lacks — a filling put
/// in place of another ("Work on ticket web-4kq. Run tk show web-4kq …" after the same for
/// web-9zd). A prompt sent from a template (a slash command's instructions, a checklist, a
/// work-queue runner's request) finds its earlier copies first; they and what answered them
/// are about another filling, and the agent has the template already. A prompt asked again
/// word for word stays, and so does one that only adds to or leaves out of an earlier one
/// ("… the parser tests" after "… the parser tests quickly"): what answered it then answers it
/// now.
pub fn same_template(text: &str, said: &HashSet<String>) -> bool {
    filled_otherwise(&word_set(text), said)
}

/// [`same_template`] for an earlier prompt already cut into its words (`theirs`).
fn filled_otherwise(theirs: &HashSet<String>, said: &HashSet<String>) -> bool {
    if said.len() < TEMPLATE_WORDS {
        return false;
    }
    if theirs.len() < TEMPLATE_WORDS || theirs.is_subset(said) || said.is_subset(theirs) {
        return false;
    }
    let shared = theirs.intersection(said).count();
    let all = theirs.len() + said.len() - shared;
    shared as f64 / all as f64 >= TEMPLATE_LIKENESS
}

/// What to recall for `prompt` in `project`, leaving out `session` (and its subagents').
/// History lines are read and costed for a share of `share` tokens.
#[allow(clippy::too_many_arguments)]
pub async fn recall(
    store: &Store,
    embedder: Option<&Embedder>,
    weights: Weights,
    encoding: Encoding,
    half_life_ms: i64,
    project: &str,
    session: &str,
    prompt: &str,
    share: usize,
) -> StoreResult<Recalled> {
    let prompt: String = prompt.chars().take(turns::MAX_QUERY_CHARS).collect();
    let words = content_words(&prompt);
    if words.len() < MIN_SHARED_WORDS {
        return Ok(Recalled::default());
    }
    let embedder = embedder.filter(|e| e.is_ready());
    let query = turns::TurnQuery {
        project,
        text: &prompt,
        limit: HITS,
        types: None,
        sessions: None,
        exclude_session: (!session.is_empty()).then_some(session),
        count_pending: false,
        asked_at: None,
        floor: None,
    };
    let (found, beliefs) = tokio::join!(
        Box::pin(turns::search_with(store, embedder, weights, &query)),
        graph::beliefs::list(store, project, Some("active"), half_life_ms, 200),
    );
    let (found, beliefs) = (found?, beliefs?);
    // The prompt's vector, as turn search just embedded it (remembered, not made again):
    // read without the names of the speakers it names, when it names some.
    let meaning = found.meaning.as_deref().unwrap_or(&prompt);
    let vector = match embedder {
        Some(e) => e.embed_query(meaning).await.ok(),
        None => None,
    };
    let hits = found.hits;
    // Closeness in meaning, from the stored vectors of the hits the model embedded.
    let cosines: HashMap<String, f64> = match (vector, embedder) {
        (Some(v), Some(e)) => {
            let ids: Vec<&str> = hits.iter().map(|h| h.operation_id.as_str()).collect();
            graph::turns::embeddings(store, project, e.model(), &ids)
                .await?
                .into_iter()
                .map(|(id, stored)| (id, e.calibration().read(turns::cosine(&v, &stored))))
                .collect()
        }
        _ => HashMap::new(),
    };
    let stems = bm25::words(&prompt);
    let said: HashSet<String> = stems.iter().cloned().collect();
    // Each hit's words are read once, for both the template test and the words shared.
    let relevant_hit = |h: &turns::TurnHit| {
        let theirs = word_set(&h.text);
        let copied = h.role.as_deref() == Some("user") && filled_otherwise(&theirs, &said);
        !copied
            && (covers(&theirs, &words)
                || cosines
                    .get(&h.operation_id)
                    .is_some_and(|c| *c >= MIN_COSINE))
    };
    let mut out = Recalled::default();
    let mut history = Vec::new();
    for h in hits.into_iter().filter(|h| relevant_hit(h)) {
        match h.kind.as_str() {
            "memory" | "summary" => out.notes.push((h.kind, h.text)),
            _ if h.session_id.is_empty() => {}
            _ => history.push(Found::of_hit(h, &stems)),
        }
    }
    // A request the agent worked on is answered by what it concluded, not by the message
    // announcing the work; work that came to nothing said leaves the request alone.
    let requests: Vec<(String, i64)> = history
        .iter()
        .filter(|f| f.kind == "message" && f.role.as_deref() == Some("user"))
        .map(|f| (f.session_id.clone(), f.seq))
        .collect();
    let concluded = answered::conclusions(store, project, &requests).await?;
    for f in &mut history {
        if let Some(end) = concluded.get(&(f.session_id.clone(), f.seq)) {
            f.answer = *end;
        }
    }
    if !history.is_empty() {
        let lines = relevant::Lines {
            encoding,
            stored: encoding,
            share,
            task: &stems,
        };
        let items = relevant::read_items(store, project, &history, lines).await?;
        out.history = History {
            found: history,
            items,
            headers: HashMap::new(),
            task: stems.clone(),
        };
    }
    let mut beliefs: Vec<BeliefView> = beliefs
        .into_iter()
        .filter(|b| lexically_relevant(&b.content, &words))
        .collect();
    beliefs.sort_by(|a, b| b.conviction.total_cmp(&a.conviction));
    beliefs.truncate(BELIEFS);
    out.beliefs = beliefs;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relevance_needs_two_shared_words_and_a_quarter_of_them() {
        let words = content_words("when do the refresh tokens expire?");
        assert_eq!(words, vec!["refresh", "token", "expir"]);
        assert!(lexically_relevant(
            "Refresh tokens expire after fourteen days",
            &words
        ));
        assert!(!lexically_relevant("the tokens of the lexer", &words));
        assert!(!lexically_relevant("tidied the changelog", &words));
        // A long prompt: a quarter of its words.
        let long = content_words("refresh tokens: please look into the mobile keychain storage and the flaky login screen");
        assert_eq!(long.len(), 10);
        assert!(lexically_relevant(
            "refresh tokens live in the keychain",
            &long
        ));
        assert!(!lexically_relevant("the login screen", &long));
    }

    #[test]
    fn a_template_filled_in_otherwise_is_not_recalled_but_a_prompt_asked_again_is() {
        let template = |change: &str| {
            format!(
                "Review the pull request {change} for correctness, security, performance, \
                 naming, error handling, test coverage, documentation, logging, concurrency, \
                 resource leaks, input validation, backwards compatibility, migrations, \
                 configuration defaults, dependency versions, licensing, accessibility, \
                 localisation, observability and rollback plans; list blocking issues first, \
                 then suggestions, each with the file and line."
            )
        };
        let now = template("#412 (token refresh)");
        let said: HashSet<String> = bm25::words(&now).into_iter().collect();
        assert!(said.len() >= 30, "{}", said.len());
        assert!(same_template(&template("#398 (cache eviction)"), &said));
        // Asked again word for word: kept, its answer stands.
        assert!(!same_template(&now, &said));
        // Another long prompt sharing a few words is not a copy.
        assert!(!same_template(
            "Plan the migration of the billing service to the new queue: list the consumers, \
             their retry policies, dead-letter handling, idempotency keys, ordering \
             guarantees, schema changes, feature flags, dashboards, alerts, load tests, \
             capacity, costs, owners, the rollout order and a rollback plan for each step.",
            &said
        ));
        // A short prompt is never taken for a template.
        let short: HashSet<String> = bm25::words("review the token refresh")
            .into_iter()
            .collect();
        assert!(!same_template("review the token refresh again", &short));
        // A work-queue runner's one-line request, filled in with another ticket.
        let ticket = |id: &str| {
            format!(
                "Work on ticket {id}. Run tk show {id} for the details and tk ready for the \
                 open subtasks. Begin with the first ready one."
            )
        };
        let said: HashSet<String> = bm25::words(&ticket("web-4kq")).into_iter().collect();
        assert!(same_template(&ticket("web-9zd"), &said));
        assert!(!same_template(&ticket("web-4kq"), &said));
        // Words only added or left out: the same request, asked again.
        const ASKED: &str = "how do we run the parser integration tests against the staging \
                             database on the nightly runner with coverage";
        let said: HashSet<String> = bm25::words(ASKED).into_iter().collect();
        assert!(said.len() >= TEMPLATE_WORDS, "{said:?}");
        assert!(!same_template(
            &format!("{ASKED} quickly, with every log kept"),
            &said
        ));
        assert!(!same_template(
            "how do we run the parser integration tests against the staging database on the \
             nightly runner",
            &said
        ));
    }

    #[test]
    fn words_are_matched_whole_not_inside_other_words() {
        let words = content_words("Should the car use the new engine?");
        assert!(!lexically_relevant(
            "Caroline: Anything new? The cart is in the carport.",
            &words
        ));
        assert!(lexically_relevant("The car's engine is new.", &words));
        let words = content_words("Can we port the cat game to rust?");
        assert!(!lexically_relevant(
            "Port.open in application.ex reports the catalogue",
            &words
        ));
        assert!(lexically_relevant("the cat game is ported", &words));
    }
}
