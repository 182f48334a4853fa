//! The CI knowledge report: for each file a change touches, the decisions about it (with what
//! was rejected), the active beliefs its operations inform, the sessions that touched it and
//! the open todos that name it — as JSON and as Markdown fit for a PR comment, within a token
//! budget.

use std::collections::HashMap;

use poem_openapi::Object;
use serde::{Deserialize, Serialize};

use crate::config::Encoding;
use crate::domain::{operation::Todo, tokens};
use crate::graph::{self, beliefs::BeliefView, Store, StoreResult};

/// At most this many items of each kind per file.
const PER_FILE: usize = 5;

#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct KnownDecision {
    pub id: String,
    pub subject: String,
    pub choice: String,
    pub rationale: String,
    /// Alternatives that were considered and rejected.
    pub rejected: Vec<String>,
    pub confidence: f64,
    /// RFC 3339.
    pub at: String,
    pub superseded: bool,
    pub superseded_by: Option<String>,
    pub session_id: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct KnownBelief {
    pub id: String,
    pub content: String,
    pub conviction: f64,
    /// Operations on the file that inform it.
    pub evidence: i64,
}

#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct KnownSession {
    pub session_id: String,
    pub task: Option<String>,
    pub summary: Option<String>,
    pub status: String,
    pub last_touched: String,
    /// `read` and/or `write`.
    pub modes: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct OpenTodo {
    pub session_id: String,
    pub content: String,
    pub status: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct FileKnowledge {
    pub path: String,
    pub decisions: Vec<KnownDecision>,
    pub beliefs: Vec<KnownBelief>,
    pub sessions: Vec<KnownSession>,
    pub open_todos: Vec<OpenTodo>,
}

impl FileKnowledge {
    pub fn is_empty(&self) -> bool {
        self.decisions.is_empty()
            && self.beliefs.is_empty()
            && self.sessions.is_empty()
            && self.open_todos.is_empty()
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct KnowledgeReport {
    pub project: String,
    pub files: Vec<FileKnowledge>,
    /// The report as Markdown, at most `budget_tokens` tokens.
    pub markdown: String,
    pub markdown_tokens: u32,
    pub budget_tokens: u32,
    /// True when items were left out of the Markdown to fit the budget.
    pub truncated: bool,
}

fn rfc3339(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
        .unwrap_or_default()
}

/// Builds the report for `files` (already normalised).
pub async fn report(
    store: &Store,
    project: &str,
    files: &[String],
    half_life_ms: i64,
    encoding: Encoding,
    budget_tokens: u32,
) -> StoreResult<KnowledgeReport> {
    let (decisions, beliefs, sessions, todos) =
        graph::knowledge::about(store, project, files).await?;
    let active: HashMap<String, BeliefView> = if beliefs.is_empty() {
        HashMap::new()
    } else {
        graph::beliefs::list(store, project, Some("active"), half_life_ms, 1000)
            .await?
            .into_iter()
            .map(|b| (b.id.clone(), b))
            .collect()
    };
    let mut out: Vec<FileKnowledge> = files
        .iter()
        .map(|p| FileKnowledge {
            path: p.clone(),
            decisions: Vec::new(),
            beliefs: Vec::new(),
            sessions: Vec::new(),
            open_todos: Vec::new(),
        })
        .collect();
    let index: HashMap<String, usize> = files
        .iter()
        .enumerate()
        .map(|(i, p)| (p.clone(), i))
        .collect();
    let slot = |path: &str| index.get(path).copied();
    for d in decisions {
        let Some(i) = slot(&d.path) else { continue };
        if out[i].decisions.len() < PER_FILE {
            out[i].decisions.push(KnownDecision {
                id: d.id,
                subject: d.subject,
                choice: d.choice,
                rationale: d.rationale,
                rejected: d.alternatives,
                confidence: d.confidence,
                at: rfc3339(d.at),
                superseded: d.superseded_by.is_some(),
                superseded_by: d.superseded_by,
                session_id: d.session_id,
            });
        }
    }
    for b in beliefs {
        let (Some(i), Some(view)) = (slot(&b.path), active.get(&b.id)) else {
            continue;
        };
        if out[i].beliefs.len() < PER_FILE {
            out[i].beliefs.push(KnownBelief {
                id: b.id,
                content: view.content.clone(),
                conviction: view.conviction,
                evidence: b.evidence,
            });
        }
    }
    for s in sessions {
        let Some(i) = slot(&s.path) else { continue };
        if out[i].sessions.len() < PER_FILE {
            out[i].sessions.push(KnownSession {
                session_id: s.session_id,
                task: s.task,
                summary: s.summary,
                status: s.status,
                last_touched: rfc3339(s.last_at),
                modes: s.modes,
            });
        }
    }
    for t in todos {
        let Some(i) = slot(&t.path) else { continue };
        let list: Vec<Todo> = serde_json::from_str(&t.todos).unwrap_or_default();
        for item in list {
            if item.status != "completed"
                && item.content.contains(&t.path)
                && out[i].open_todos.len() < PER_FILE
            {
                out[i].open_todos.push(OpenTodo {
                    session_id: t.session_id.clone(),
                    content: item.content,
                    status: item.status,
                });
            }
        }
    }
    let (markdown, truncated) = render(&out, encoding, budget_tokens as usize);
    Ok(KnowledgeReport {
        project: project.to_string(),
        markdown_tokens: tokens::count(encoding, &markdown) as u32,
        files: out,
        markdown,
        budget_tokens,
        truncated,
    })
}

fn short(s: &str, max: usize) -> String {
    let one_line = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= max {
        one_line
    } else {
        format!("{}…", one_line.chars().take(max).collect::<String>())
    }
}

/// Markdown lines, most important first within each file, cut to fit `budget` tokens.
fn render(files: &[FileKnowledge], encoding: Encoding, budget: usize) -> (String, bool) {
    let mut lines = vec!["## What cairn knows about the changed files".to_string()];
    let known: Vec<&FileKnowledge> = files.iter().filter(|f| !f.is_empty()).collect();
    if known.is_empty() {
        lines.push(String::new());
        lines.push(format!(
            "_Nothing recorded about {} changed file(s)._",
            files.len()
        ));
    }
    for f in &known {
        lines.push(String::new());
        lines.push(format!("### `{}`", f.path));
        for d in &f.decisions {
            let rejected = if d.rejected.is_empty() {
                String::new()
            } else {
                format!(
                    " Rejected: {}.",
                    d.rejected
                        .iter()
                        .map(|r| short(r, 60))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            if d.superseded {
                lines.push(format!(
                    "- ~~Decision: **{}** → {}~~ ({}, superseded)",
                    short(&d.subject, 80),
                    short(&d.choice, 80),
                    d.at
                ));
            } else {
                let rationale = short(&d.rationale, 200);
                let stop = if rationale.ends_with(['.', '!', '?', '…']) {
                    ""
                } else {
                    "."
                };
                lines.push(format!(
                    "- Decision: **{}** → {} ({}) — {rationale}{stop}{rejected}",
                    short(&d.subject, 80),
                    short(&d.choice, 80),
                    d.at,
                ));
            }
        }
        for b in &f.beliefs {
            lines.push(format!(
                "- Belief ({:.0}% conviction): {}",
                b.conviction * 100.0,
                short(&b.content, 200)
            ));
        }
        for t in &f.open_todos {
            lines.push(format!(
                "- [ ] {} (open in session `{}`)",
                short(&t.content, 160),
                t.session_id
            ));
        }
        for s in &f.sessions {
            let what = s
                .summary
                .as_deref()
                .or(s.task.as_deref())
                .map(|t| short(t, 120))
                .unwrap_or_default();
            lines.push(format!(
                "- Session `{}` ({}, {}): {what}",
                s.session_id,
                s.last_touched,
                s.modes.join("/")
            ));
        }
    }
    fit(lines, encoding, budget)
}

/// Joins `lines`, dropping lines from the end (and noting it) until the text fits `budget`.
fn fit(mut lines: Vec<String>, encoding: Encoding, budget: usize) -> (String, bool) {
    let note = "_… more not shown (token budget)._";
    let mut text = lines.join("\n");
    if tokens::count(encoding, &text) <= budget {
        return (text, false);
    }
    while !lines.is_empty() {
        lines.pop();
        let with_note = format!("{}\n{note}", lines.join("\n"));
        if tokens::count(encoding, &with_note) <= budget {
            return (with_note, true);
        }
        text = lines.join("\n");
        if tokens::count(encoding, &text) <= budget && lines.len() <= 1 {
            return (text, true);
        }
    }
    (tokens::truncate(encoding, note, budget), true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(n: usize) -> FileKnowledge {
        FileKnowledge {
            path: format!("src/file_{n}.rs"),
            decisions: vec![KnownDecision {
                id: "d".into(),
                subject: "Parser library".into(),
                choice: "nom".into(),
                rationale: "combinators compose well and the team knows them".into(),
                rejected: vec!["pest".into()],
                confidence: 0.8,
                at: "2026-11-20 10:00 UTC".into(),
                superseded: false,
                superseded_by: None,
                session_id: None,
            }],
            beliefs: vec![],
            sessions: vec![],
            open_todos: vec![],
        }
    }

    #[test]
    fn markdown_never_exceeds_the_budget() {
        let files: Vec<_> = (0..40).map(file).collect();
        for budget in [8, 16, 50, 200, 5000] {
            let (md, truncated) = render(&files, Encoding::O200kBase, budget);
            assert!(
                tokens::count(Encoding::O200kBase, &md) <= budget,
                "budget {budget}"
            );
            assert_eq!(truncated, budget < 5000, "budget {budget}");
        }
        let (md, _) = render(&files[..1], Encoding::O200kBase, 5000);
        assert!(md.contains("**Parser library** → nom") && md.contains("Rejected: pest."));
    }
}
