//! Rendering the listed sections' candidates: each file, decision, belief and memory as the
//! line it would be shown as, in the order [`super::rank`] offers them. No section is
//! granted more than the whole content share, so files and decisions (most often taken as a
//! newest run) are tokenised lazily, never beyond that much; beliefs and memories may skip
//! what does not fit for a smaller item further down, so every one of theirs is counted.

use crate::graph::beliefs::BeliefView;
use crate::graph::decisions::ContextDecision;
use crate::graph::memories::ContextMemory;
use crate::graph::operations::FileRow;

use super::gather::{History, Inputs};
use super::line::{clip, line, stored_line, within, Line};
use super::rank::{self, Relevance};
use super::request::Request;
use super::section::{Listed, Pick, SectionKind};

/// The files, decisions, beliefs and memories sections' candidates, in that order; lines
/// tokenised lazily no further than `cap`.
pub(super) fn listed(req: &Request<'_>, cap: usize, inputs: &Inputs) -> [Listed; 4] {
    let enc = req.encoding;
    // A task's files come in the order of its hits, and are shown in it.
    let files_pick = match inputs.history {
        History::Relevant(_) => Pick::Ranked,
        History::Newest(_) => Pick::NewestRun,
    };
    let files = Listed {
        kind: SectionKind::Files,
        lines: within(cap, inputs.files.iter().map(|f| line(enc, file_line(f)))),
        candidates: inputs.files.len(),
        pick: files_pick,
    };
    // For a task, decisions are ranked by how many of its words they share (newest first
    // among equals), and like the other ranked sections may skip one that does not fit.
    let (decisions, pick) = match req.task_only() {
        Some(task) => (
            rank::decisions_for_task(&inputs.decisions, task),
            Pick::Ranked,
        ),
        None => (inputs.decisions.iter().collect(), Pick::NewestRun),
    };
    let decisions = Listed {
        kind: SectionKind::Decisions,
        lines: within(cap, decisions.iter().map(|d| line(enc, decision_line(d)))),
        candidates: decisions.len(),
        pick,
    };
    let paths = inputs.files.iter().map(|f| f.path.as_str()).collect();
    let by = Relevance::new(req.task, &inputs.sessions, paths);
    let beliefs: Vec<Line> = rank::beliefs(&inputs.beliefs, &inputs.ties, &by)
        .into_iter()
        .map(|b| line(enc, belief_line(b)))
        .collect();
    let memories: Vec<Line> = rank::memories(&inputs.memories, &by)
        .into_iter()
        .map(|m| stored_line(enc, req.stored, m.tokens, memory_line(m)))
        .collect();
    [
        files,
        decisions,
        Listed {
            kind: SectionKind::Beliefs,
            candidates: beliefs.len(),
            lines: beliefs,
            pick: Pick::Ranked,
        },
        Listed {
            kind: SectionKind::Memories,
            candidates: memories.len(),
            lines: memories,
            pick: Pick::Ranked,
        },
    ]
}

/// Sessions a file's line names at most; how many more touched it is said in a number.
const FILE_SESSIONS: usize = 3;

/// A file with its newest touch's mode and the first sessions that touched it (the most
/// relevant for a task, the newest for a session).
fn file_line(f: &FileRow) -> String {
    let mode = f.mode.as_deref().unwrap_or("touched");
    let named = f.sessions.len().min(FILE_SESSIONS);
    let mut line = format!(
        "- {} ({mode}; sessions: {}",
        f.path,
        f.sessions[..named].join(", ")
    );
    if f.sessions.len() > named {
        line.push_str(&format!(" and {} more", f.sessions.len() - named));
    }
    line.push(')');
    line
}

fn decision_line(d: &ContextDecision) -> String {
    let mut t = format!("- {}: {}", clip(&d.subject, 200), clip(&d.choice, 300));
    if let Some(r) = d.rationale.as_deref().filter(|r| !r.trim().is_empty()) {
        t.push_str(&format!(" — {}", clip(r, 300)));
    }
    if d.superseded_by.is_some() {
        t.push_str(" (superseded)");
    }
    t
}

fn belief_line(b: &BeliefView) -> String {
    format!("- ({:.2}) {}", b.conviction, clip(&b.content, 600))
}

fn memory_line(m: &ContextMemory) -> String {
    format!("- ({}) {}", m.kind, m.content)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_names_its_first_sessions_and_counts_the_rest() {
        let row = |sessions: &[&str]| FileRow {
            path: "src/cache.rs".into(),
            mode: Some("write".into()),
            sessions: sessions.iter().map(|s| s.to_string()).collect(),
            at: 0,
        };
        assert_eq!(
            file_line(&row(&["a", "b"])),
            "- src/cache.rs (write; sessions: a, b)"
        );
        assert_eq!(
            file_line(&row(&["a", "b", "c", "d", "e"])),
            "- src/cache.rs (write; sessions: a, b, c and 2 more)"
        );
    }
}
