//! The wake-up handover: what a new session should know before it starts — the last
//! session's summary and unfinished work, related past sessions (by [`super::search`]),
//! patterns (active beliefs; files iterated on in several related sessions) and suggested
//! next steps (open todos, decisions awaiting follow-up, files changed without a test
//! touched) — as data and as a Markdown block within a token budget.

use serde::Serialize;

use super::reconstruction::{self, children, ChildSession, Unfinished};
use super::search::{self, Weights};
use crate::config::Encoding;
use crate::domain::tokens;
use crate::embed::Embedder;
pub use crate::graph::beliefs::ActiveBelief;
pub use crate::graph::operations::HotFile;
use crate::graph::{self, now_ms, operations, sessions, Store, StoreResult};

/// Related sessions shown at most.
pub const RELATED: usize = 5;
/// Related sessions a file must have been written in to count as iterated on.
pub const HOT_FILE_SESSIONS: i64 = 3;
/// The share of a hook's budget the handover takes is kept within these (the rest is the
/// decisions in force; the whole is cut to the hook's budget).
pub const MIN_BUDGET: usize = 50;
pub const MAX_BUDGET: usize = 20_000;
/// Related sessions looked at for iterated-on files.
const PATTERN_POOL: usize = 20;

#[derive(Clone, Debug, Serialize, poem_openapi::Object)]
pub struct LastSession {
    pub session_id: String,
    pub task: Option<String>,
    pub summary: Option<String>,
    pub status: Option<String>,
    pub days_ago: f64,
    /// Open todos of its last todo list and the next steps it closed with.
    pub unfinished: Vec<Unfinished>,
    /// Its child sessions (subagents it launched), one line each.
    pub children: Vec<ChildSession>,
}

#[derive(Clone, Debug, Serialize, poem_openapi::Object)]
pub struct RelatedSession {
    pub session_id: String,
    pub task: Option<String>,
    pub summary: Option<String>,
    /// Similarity to what the new session is about, in percent.
    pub relevance_pct: u32,
    pub days_ago: f64,
    pub files: Vec<String>,
}

#[derive(Clone, Debug, Serialize, poem_openapi::Object)]
pub struct Patterns {
    pub beliefs: Vec<ActiveBelief>,
    /// Files written in at least 3 related sessions.
    pub hot_files: Vec<HotFile>,
}

#[derive(Clone, Debug, Serialize, poem_openapi::Object)]
pub struct NextStep {
    /// `todo`, `next_step`, `decision_follow_up` or `untested_change`.
    pub kind: String,
    pub text: String,
}

#[derive(Clone, Debug, Serialize, poem_openapi::Object)]
pub struct Handover {
    pub project: String,
    /// The session waking up, when given.
    pub session_id: Option<String>,
    pub last_session: Option<LastSession>,
    pub related: Vec<RelatedSession>,
    /// How related sessions were found: `hybrid` or `fulltext`.
    pub search_mode: search::Mode,
    pub patterns: Patterns,
    pub next_steps: Vec<NextStep>,
    /// Ready to inject at the start of a session; at most `budget_tokens` tokens.
    pub markdown: String,
    pub tokens_used: u64,
    pub budget_tokens: u64,
}

/// What a handover needs besides the store.
pub struct Inputs<'a> {
    pub embedder: Option<&'a Embedder>,
    pub weights: Weights,
    pub encoding: Encoding,
}

/// True for paths that look like tests (`tests/`, `*_test.*`, `*.spec.*`, `test_*`).
pub fn is_test_path(path: &str) -> bool {
    let p = path.to_lowercase();
    p.split('/').any(|seg| {
        matches!(seg, "test" | "tests" | "spec" | "specs" | "__tests__")
            || seg.starts_with("test_")
            || seg.contains("_test.")
            || seg.contains(".test.")
            || seg.contains("_spec.")
            || seg.contains(".spec.")
    })
}

fn days_since(ms: Option<i64>, now: i64) -> f64 {
    let days = (now - ms.unwrap_or(now)).max(0) as f64 / 86_400_000.0;
    (days * 10.0).round() / 10.0
}

/// Which session the handover's "last session" is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Focus {
    /// The latest session of the project with content, other than the one waking up (and
    /// not a child session): a new session (Claude Code `startup`, `clear`, `fork`).
    Latest,
    /// The waking session itself, when it has content (Claude Code `resume`, `compact`: the
    /// session's own recap); else as `Latest`.
    Own,
}

/// Builds the handover of `project` for the session `session_id` (if any).
pub async fn build(
    store: &Store,
    inputs: &Inputs<'_>,
    project: &str,
    session_id: Option<&str>,
    budget: usize,
) -> StoreResult<Handover> {
    build_with(store, inputs, project, session_id, budget, Focus::Latest).await
}

/// [`build`] with the last session chosen by `focus`.
pub async fn build_with(
    store: &Store,
    inputs: &Inputs<'_>,
    project: &str,
    session_id: Option<&str>,
    budget: usize,
    focus: Focus,
) -> StoreResult<Handover> {
    let now = now_ms();
    let current = match session_id {
        Some(id) => crate::graph::sessions::get(store, id)
            .await?
            .filter(|s| s.project == project),
        None => None,
    };
    let exclude = session_id.unwrap_or_default();
    let mut last = None;
    if focus == Focus::Own && session_id.is_some() {
        last = sessions::last_with_content(store, project, exclude, true).await?;
    }
    if last.is_none() {
        last = sessions::last_with_content(store, project, exclude, false).await?;
    }
    let last = match last {
        Some(l) => {
            let unfinished = reconstruction::unfinished(store, project, &l.id).await?;
            let children = children(store, project, &l.id).await?;
            Some(LastSession {
                days_ago: days_since(l.last_activity_at, now),
                session_id: l.id,
                task: l.task,
                summary: l.summary,
                status: l.status,
                unfinished,
                children,
            })
        }
        None => None,
    };

    // What the new session is about: its task, else where the last one left off.
    let about = current
        .as_ref()
        .and_then(|c| c.task.clone())
        .filter(|t| !t.trim().is_empty())
        .or_else(|| {
            last.as_ref().map(|l| {
                [l.task.as_deref(), l.summary.as_deref()]
                    .into_iter()
                    .flatten()
                    .collect::<Vec<_>>()
                    .join(" ")
            })
        })
        .unwrap_or_default();
    let mut exclude: Vec<String> = session_id.map(str::to_string).into_iter().collect();
    exclude.extend(last.as_ref().map(|l| l.session_id.clone()));
    let (mode, pool) = if about.trim().is_empty() {
        (search::Mode::Fulltext, Vec::new())
    } else {
        let about: String = about.chars().take(search::MAX_QUERY_CHARS).collect();
        let found = search::search(
            store,
            inputs.embedder,
            inputs.weights,
            project,
            &about,
            PATTERN_POOL,
            &exclude,
        )
        .await?;
        (found.mode, found.hits)
    };
    let related: Vec<RelatedSession> = pool
        .iter()
        .take(RELATED)
        .map(|h| RelatedSession {
            session_id: h.session_id.clone(),
            task: h.task.clone(),
            summary: h.summary.clone(),
            relevance_pct: (h.similarity * 100.0).round().clamp(0.0, 100.0) as u32,
            days_ago: h.days_ago,
            files: h.files.clone(),
        })
        .collect();

    let beliefs = graph::beliefs::strongest_active(store, project, 10).await?;
    let pool_ids: Vec<&str> = pool.iter().map(|h| h.session_id.as_str()).collect();
    let hot_files =
        operations::written_in_several(store, project, &pool_ids, HOT_FILE_SESSIONS).await?;

    let mut next_steps = Vec::new();
    if let Some(l) = &last {
        for u in &l.unfinished {
            next_steps.push(NextStep {
                kind: u.source.clone(),
                text: u.content.clone(),
            });
        }
        next_steps.extend(follow_ups(store, project, &l.session_id).await?);
        next_steps.extend(untested(store, project, &l.session_id).await?);
    }

    let mut handover = Handover {
        project: project.to_string(),
        session_id: session_id.map(str::to_string),
        last_session: last,
        related,
        search_mode: mode,
        patterns: Patterns { beliefs, hot_files },
        next_steps,
        markdown: String::new(),
        tokens_used: 0,
        budget_tokens: budget as u64,
    };
    let (markdown, used) = render(&handover, inputs.encoding, budget);
    handover.markdown = markdown;
    handover.tokens_used = used as u64;
    Ok(handover)
}

async fn follow_ups(store: &Store, project: &str, session_id: &str) -> StoreResult<Vec<NextStep>> {
    let rows = graph::decisions::awaiting_follow_up(store, project, session_id).await?;
    Ok(rows
        .into_iter()
        .map(|r| NextStep {
            kind: "decision_follow_up".into(),
            text: format!(
                "Decided “{}: {}” but {} not changed since",
                r.subject.unwrap_or_default(),
                r.choice.unwrap_or_default(),
                r.files.join(", ")
            ),
        })
        .collect())
}

async fn untested(store: &Store, project: &str, session_id: &str) -> StoreResult<Vec<NextStep>> {
    let rows = operations::files_of_session(store, project, session_id).await?;
    if rows.iter().any(|r| is_test_path(&r.path)) {
        return Ok(Vec::new());
    }
    let changed: Vec<&str> = rows
        .iter()
        .filter(|r| r.written)
        .map(|r| r.path.as_str())
        .take(10)
        .collect();
    if changed.is_empty() {
        return Ok(Vec::new());
    }
    Ok(vec![NextStep {
        kind: "untested_change".into(),
        text: format!(
            "Changed without touching a test: {}; add or run tests",
            changed.join(", ")
        ),
    }])
}

/// The Markdown block: sections in priority order, each line added only while the whole
/// stays within `budget` tokens. Returns the text and its token count.
pub fn render(h: &Handover, encoding: Encoding, budget: usize) -> (String, usize) {
    fitted(&sections(h), encoding, budget)
}

/// The handover's sections in priority order: each heading with its lines.
fn sections(h: &Handover) -> Vec<(String, Vec<String>)> {
    let mut sections: Vec<(String, Vec<String>)> = Vec::new();
    if let Some(l) = &h.last_session {
        let mut lines = vec![format!(
            "- {} (`{}`, {}, {} days ago): {}",
            l.task.as_deref().unwrap_or("(no task)"),
            l.session_id,
            l.status.as_deref().unwrap_or("unknown"),
            l.days_ago,
            l.summary.as_deref().unwrap_or("no summary")
        )];
        lines.extend(
            l.unfinished
                .iter()
                .map(|u| format!("  - unfinished ({}): {}", u.source, u.content)),
        );
        lines.extend(l.children.iter().map(|c| format!("  - {}", c.line())));
        sections.push(("### Last session".into(), lines));
    }
    if !h.next_steps.is_empty() {
        let lines = h
            .next_steps
            .iter()
            .filter(|s| s.kind != "todo" && s.kind != "next_step")
            .map(|s| format!("- {}", s.text))
            .collect::<Vec<_>>();
        if !lines.is_empty() {
            sections.push(("### Suggested next steps".into(), lines));
        }
    }
    if !h.related.is_empty() {
        let lines = h
            .related
            .iter()
            .map(|r| {
                format!(
                    "- {}% {} (`{}`, {} days ago): {}",
                    r.relevance_pct,
                    r.task.as_deref().unwrap_or("(no task)"),
                    r.session_id,
                    r.days_ago,
                    r.summary.as_deref().unwrap_or("no summary")
                )
            })
            .collect();
        sections.push(("### Related past sessions".into(), lines));
    }
    let mut patterns: Vec<String> = h
        .patterns
        .beliefs
        .iter()
        .map(|b| format!("- belief ({:.0}%): {}", b.conviction * 100.0, b.content))
        .collect();
    patterns.extend(h.patterns.hot_files.iter().map(|f| {
        format!(
            "- iterated on in {} related sessions: {}",
            f.sessions, f.path
        )
    }));
    if !patterns.is_empty() {
        sections.push(("### Patterns".into(), patterns));
    }

    sections
}

/// `sections` under the handover's heading, each line added only while the whole stays within
/// `budget` tokens; the text and its token count.
fn fitted(
    sections: &[(String, Vec<String>)],
    encoding: Encoding,
    budget: usize,
) -> (String, usize) {
    // The text's lines, each ending with a newline; counted as they are added, and with the
    // newline after the last one (an empty line after it) when asked what they would make.
    let mut text = String::from("## Handover\n");
    let mut counted = tokens::Growing::new(encoding);
    counted.push("## Handover");
    if counted.with("") > budget {
        return (String::new(), 0);
    }
    for (heading, lines) in sections {
        let mut section = counted.clone();
        section.push("");
        section.push(heading);
        if section.with("") > budget {
            continue;
        }
        let mut added = String::new();
        for line in lines {
            let mut candidate = section.clone();
            candidate.push(line);
            if candidate.with("") <= budget {
                section = candidate;
                added.push_str(line);
                added.push('\n');
            }
        }
        if !added.is_empty() {
            counted = section;
            text.push('\n');
            text.push_str(heading);
            text.push('\n');
            text.push_str(&added);
        }
    }
    let used = counted.with("");
    (text, used)
}

/// Decisions still standing (none superseded them), newest first, at most `n`: what a new
/// session must not undo without reason.
pub async fn decisions_in_force(
    store: &Store,
    project: &str,
    n: usize,
) -> StoreResult<Vec<crate::graph::decisions::DecisionView>> {
    let all = crate::graph::decisions::list(
        store,
        project,
        &crate::graph::decisions::DecisionFilter {
            limit: 40,
            ..Default::default()
        },
    )
    .await?;
    Ok(all
        .into_iter()
        .filter(|d| d.superseded_by.is_none())
        .take(n)
        .collect())
}

/// Appends a "Decisions in force" section to `md`, a line per decision while the whole stays
/// within `budget` tokens; nothing when not one line fits.
pub fn append_decisions_in_force(
    md: &mut String,
    standing: &[crate::graph::decisions::DecisionView],
    encoding: Encoding,
    budget: usize,
) {
    if standing.is_empty() {
        return;
    }
    let mut section = String::from("\n\n### Decisions in force\n");
    // `md` and the section, counted as they grow; the newline after the last line is the
    // empty line asked about.
    let mut counted = tokens::Growing::new(encoding);
    for line in md.split('\n').chain(["", "### Decisions in force"]) {
        counted.push(line);
    }
    for d in standing {
        let line = decision_line(&d.subject, &d.choice, &d.alternatives, &d.rationale);
        let mut candidate = counted.clone();
        candidate.push(&line);
        if candidate.with("") <= budget {
            counted = candidate;
            section.push_str(&line);
            section.push('\n');
        }
    }
    if section.lines().count() > 3 {
        md.push_str(&section);
    }
}

/// "chose X over Y because Z", as a Markdown list item.
pub fn decision_line(subject: &str, choice: &str, rejected: &[String], rationale: &str) -> String {
    let over = if rejected.is_empty() {
        String::new()
    } else {
        format!(" over {}", rejected.join(", "))
    };
    format!("- **{subject}**: chose {choice}{over} because {rationale}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_test_paths() {
        for p in [
            "tests/api/x.rs",
            "src/foo_test.go",
            "web/a.spec.ts",
            "test_x.py",
        ] {
            assert!(is_test_path(p), "{p}");
        }
        for p in ["src/testing_utils.rs", "src/auth.rs", "latest/x.rs"] {
            assert!(!is_test_path(p), "{p}");
        }
    }

    /// A handover with a line of each kind, some opening on what runs on from the line
    /// before (an indent, a path).
    fn handover() -> Handover {
        let unfinished = |content: &str| Unfinished {
            content: content.into(),
            source: "todo".into(),
            status: Some("pending".into()),
        };
        let mut summary = "half done ".repeat(50);
        summary.push_str("\n\n/etc/app.conf still old!");
        Handover {
            project: "p".into(),
            session_id: None,
            last_session: Some(LastSession {
                session_id: "s".into(),
                task: Some("fix login".into()),
                summary: Some(summary),
                status: Some("abandoned".into()),
                days_ago: 1.0,
                unfinished: vec![unfinished("write the test…"), unfinished("/tmp clean-up")],
                children: vec![],
            }),
            related: (0..6)
                .map(|i| RelatedSession {
                    session_id: format!("r{i}"),
                    task: Some(format!("related task {i}")),
                    summary: Some(format!("done; see src/auth/{i}.rs.")),
                    relevance_pct: 80,
                    days_ago: 2.0,
                    files: vec![],
                })
                .collect(),
            search_mode: search::Mode::Fulltext,
            patterns: Patterns {
                beliefs: vec![],
                hot_files: vec![crate::graph::operations::HotFile {
                    path: "src/auth/token.rs".into(),
                    sessions: 3,
                }],
            },
            next_steps: vec![NextStep {
                kind: "untested_change".into(),
                text: "src/auth/token.rs changed without a test".into(),
            }],
            markdown: String::new(),
            tokens_used: 0,
            budget_tokens: 0,
        }
    }

    #[test]
    fn markdown_respects_the_budget() {
        let h = handover();
        for budget in [5, 40, 80, 2_000] {
            let (text, used) = render(&h, Encoding::O200kBase, budget);
            assert!(used <= budget, "{used} > {budget}");
            assert_eq!(used, tokens::count(Encoding::O200kBase, &text));
        }
        let (full, _) = render(&h, Encoding::O200kBase, 2_000);
        assert!(full.contains("### Last session") && full.contains("80% related task 4"));
    }

    /// What every line added would make, counted whole each time: the text the handover and
    /// its decisions must match, budget by budget.
    fn counted_whole(sections: &[(String, Vec<String>)], enc: Encoding, budget: usize) -> String {
        let mut text = String::from("## Handover\n");
        if tokens::count(enc, &text) > budget {
            return String::new();
        }
        for (heading, lines) in sections {
            let mut section = format!("{text}\n{heading}\n");
            if tokens::count(enc, &section) > budget {
                continue;
            }
            let mut added = false;
            for line in lines {
                let candidate = format!("{section}{line}\n");
                if tokens::count(enc, &candidate) <= budget {
                    section = candidate;
                    added = true;
                }
            }
            if added {
                text = section;
            }
        }
        text
    }

    #[test]
    fn decisions_in_force_counted_as_they_grow_are_the_ones_counted_whole() {
        let decision = |i: usize| crate::graph::decisions::DecisionView {
            id: format!("d{i}"),
            session_id: None,
            subject: format!("token expiry {i}"),
            choice: "15 minutes".into(),
            rationale: "short-lived tokens limit a leak's reach.".into(),
            alternatives: vec!["1 hour".into(), "/refresh only".into()],
            confidence: 0.9,
            files: vec![],
            at: 0,
            supersedes: None,
            superseded_by: None,
        };
        let standing: Vec<_> = (0..5).map(decision).collect();
        for enc in [Encoding::O200kBase, Encoding::Cl100kBase] {
            for md in [
                "",
                "## Handover\n",
                "## Handover\n\n### Last session\n- fix login!\n",
            ] {
                for budget in (0..300).step_by(4) {
                    let mut grown = md.to_string();
                    append_decisions_in_force(&mut grown, &standing, enc, budget);
                    let mut whole = String::from("\n\n### Decisions in force\n");
                    for d in &standing {
                        let line =
                            decision_line(&d.subject, &d.choice, &d.alternatives, &d.rationale);
                        if tokens::count(enc, &format!("{md}{whole}{line}\n")) <= budget {
                            whole.push_str(&line);
                            whole.push('\n');
                        }
                    }
                    let whole = if whole.lines().count() > 3 {
                        format!("{md}{whole}")
                    } else {
                        md.to_string()
                    };
                    assert_eq!(grown, whole, "{enc:?} {budget} {md:?}");
                }
            }
        }
    }

    #[test]
    fn a_handover_counted_as_it_grows_is_the_one_counted_whole() {
        let h = handover();
        let sections = sections(&h);
        for enc in [Encoding::O200kBase, Encoding::Cl100kBase] {
            for budget in (0..400).step_by(3) {
                let (text, used) = render(&h, enc, budget);
                assert_eq!(
                    text,
                    counted_whole(&sections, enc, budget),
                    "{enc:?} {budget}"
                );
                assert_eq!(used, tokens::count(enc, &text));
                assert!(used <= budget || text.is_empty());
            }
        }
    }
}
