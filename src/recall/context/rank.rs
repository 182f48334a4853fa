//! Ranking: the order each section's candidates are offered to the budget in. Pure. A session's
//! history is offered newest first (a session's header paid with its newest item); files as
//! gathered (a task's in the order of its hits, a session's newest first); for a session,
//! decisions newest first as the store lists them; a task's decisions by how many of its words
//! they share; beliefs and memories by relevance × conviction (confidence),
//! relevance being a tie to the sessions in scope, then to their files, then shared words.

use std::collections::{HashMap, HashSet};

use crate::graph::beliefs::BeliefView;
use crate::graph::decisions::ContextDecision;
use crate::graph::memories::ContextMemory;
use crate::recall::rank::is_stop_word;
use crate::recall::scope::ScopeSession;

use super::gather::Tie;
use super::recent::SessionLines;

/// Words too common in a team's work to tell memories apart, beyond the stop words.
const MATCHLESS: &[&str] = &["make"];

/// The distinct content words of `text` (lower case, letters and digits, 3+ characters),
/// at most 20: safe to hand to Lucene and to match against stored text.
pub fn terms(text: &str) -> Vec<String> {
    let mut seen = HashSet::new();
    text.split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
        .filter(|w| w.chars().count() >= 3 && !is_stop_word(w) && !MATCHLESS.contains(&w.as_str()))
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

/// What long-term memory is matched against: the sessions in scope, the files they touched,
/// and the words of the task and of the sessions' tasks.
pub(super) struct Relevance<'a> {
    pub in_scope: HashSet<&'a str>,
    pub paths: Vec<&'a str>,
    pub words: Vec<String>,
}

impl<'a> Relevance<'a> {
    pub fn new(task: Option<&str>, sessions: &'a [ScopeSession], paths: Vec<&'a str>) -> Self {
        let mut words_from = task.unwrap_or("").to_string();
        for s in sessions {
            if let Some(t) = &s.task {
                words_from.push(' ');
                words_from.push_str(t);
            }
        }
        Relevance {
            in_scope: sessions.iter().map(|s| s.id.as_str()).collect(),
            paths,
            words: terms(&words_from),
        }
    }
}

/// Sorts `(score, item)` best first; a stable sort keeps the given order among equals.
fn best_first<T>(mut scored: Vec<(f64, T)>) -> Vec<T> {
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    scored.into_iter().map(|(_, x)| x).collect()
}

/// A task's decisions by the share of its words they hold, a superseded one half a point
/// lower; newest first among equals.
pub(super) fn decisions_for_task<'a>(
    decisions: &'a [ContextDecision],
    task: &str,
) -> Vec<&'a ContextDecision> {
    let task_words = terms(task);
    let score = |d: &ContextDecision| {
        let text = format!(
            "{} {} {}",
            d.subject,
            d.choice,
            d.rationale.as_deref().unwrap_or("")
        );
        text_score(&text, &task_words) - if d.superseded_by.is_some() { 0.5 } else { 0.0 }
    };
    best_first(decisions.iter().map(|d| (score(d), d)).collect())
}

/// The beliefs tied to the scope or sharing its words, by relevance × conviction: 1 for one
/// informed by a session in scope, 0.6 for one tied to its files, else half the share of
/// words it holds.
pub(super) fn beliefs<'a>(
    beliefs: &'a [BeliefView],
    ties: &HashMap<String, Tie>,
    by: &Relevance<'_>,
) -> Vec<&'a BeliefView> {
    best_first(
        beliefs
            .iter()
            .filter_map(|b| {
                let relevance = match ties.get(&b.id) {
                    Some(Tie::Session) => 1.0,
                    Some(Tie::File) => 0.6,
                    None => 0.5 * text_score(&b.content, &by.words),
                };
                (relevance > 0.0).then_some((relevance * b.conviction, b))
            })
            .collect(),
    )
}

/// The memories tied to the scope or sharing its words, by relevance × confidence (0.5 when
/// none was given): 1 for one asserted in a session in scope, 0.7 for one naming a file of
/// the scope, else half the share of words it holds.
pub(super) fn memories<'a>(
    memories: &'a [ContextMemory],
    by: &Relevance<'_>,
) -> Vec<&'a ContextMemory> {
    best_first(
        memories
            .iter()
            .filter_map(|m| {
                let relevance = if m
                    .session_id
                    .as_deref()
                    .is_some_and(|s| by.in_scope.contains(s))
                {
                    1.0
                } else if by.paths.iter().any(|p| m.content.contains(p)) {
                    0.7
                } else {
                    0.5 * text_score(&m.content, &by.words)
                };
                (relevance > 0.0).then_some((relevance * m.confidence.unwrap_or(0.5), m))
            })
            .collect(),
    )
}

/// A place in a session's history: a session (by index) and one of its operations (by index,
/// newest first), or its header alone when it has none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Slot {
    pub session: usize,
    pub op: Option<usize>,
    /// The operation's cost, with its session's header when it is the session's newest.
    pub cost: usize,
}

/// A session's history newest first across sessions (given newest first): each session's
/// operations newest first, its header paid with its newest one.
pub(super) fn newest_first(sessions: &[SessionLines]) -> Vec<Slot> {
    let mut out = Vec::new();
    for (si, s) in sessions.iter().enumerate() {
        if s.ops.is_empty() {
            out.push(Slot {
                session: si,
                op: None,
                cost: s.header.cost,
            });
        }
        for (oi, (_, l)) in s.ops.iter().enumerate() {
            let extra = if oi == 0 { s.header.cost } else { 0 };
            out.push(Slot {
                session: si,
                op: Some(oi),
                cost: l.cost + extra,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_are_lucene_safe_content_words() {
        assert_eq!(
            terms("Fix the parser: (AND) parser* with \"quotes\" — déjà"),
            vec!["fix", "parser", "quotes", "déjà"]
        );
        assert!(text_score("the Parser broke", &terms("parser")) > 0.99);
        assert_eq!(text_score("x", &[]), 0.0);
    }

    fn session(id: &str, task: &str) -> ScopeSession {
        ScopeSession {
            id: id.into(),
            task: Some(task.into()),
            status: "closed".into(),
            summary: None,
            llm_summary: None,
            started_at: 0,
            last_activity_at: 0,
            operation_count: 0,
        }
    }

    fn memory(content: &str, confidence: Option<f64>, session: Option<&str>) -> ContextMemory {
        ContextMemory {
            kind: "lesson".into(),
            content: content.into(),
            confidence,
            session_id: session.map(str::to_string),
            tokens: 0,
        }
    }

    #[test]
    fn memories_rank_by_tie_to_the_scope_times_confidence() {
        let sessions = [session("s1", "fix the parser")];
        let by = Relevance::new(Some("flaky parser"), &sessions, vec!["src/lex.rs"]);
        let all = [
            memory("the coffee machine is broken", Some(0.99), None),
            memory("parser errors are flaky", Some(0.9), None),
            memory("src/lex.rs is generated", Some(0.8), None),
            memory("asserted in scope", Some(0.6), Some("s1")),
        ];
        let ranked: Vec<&str> = memories(&all, &by)
            .iter()
            .map(|m| m.content.as_str())
            .collect();
        // 0.6 × 1, 0.8 × 0.7, 0.9 × 0.5 × 2/3; the unrelated one not at all.
        assert_eq!(
            ranked,
            [
                "asserted in scope",
                "src/lex.rs is generated",
                "parser errors are flaky"
            ]
        );
    }

    #[test]
    fn a_tasks_decisions_rank_by_its_words_superseded_last() {
        let d = |subject: &str, superseded: bool| ContextDecision {
            subject: subject.into(),
            choice: "x".into(),
            rationale: None,
            superseded_by: superseded.then(|| "newer".to_string()),
        };
        let all = [
            d("release notes", false),
            d("parser map type", true),
            d("parser map type", false),
            d("lexer", false),
        ];
        let ranked: Vec<(&str, bool)> = decisions_for_task(&all, "parser map")
            .iter()
            .map(|d| (d.subject.as_str(), d.superseded_by.is_some()))
            .collect();
        assert_eq!(
            ranked,
            [
                ("parser map type", false),
                ("parser map type", true),
                ("release notes", false),
                ("lexer", false)
            ]
        );
    }
}
