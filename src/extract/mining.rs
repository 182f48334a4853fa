//! Deterministic candidate mining, before any LLM: recurring read → write sequences across
//! sessions, decisions on one subject repeated or reversed, files changed together, and
//! failing-tool retry loops. Pure functions over what [`crate::graph::extraction`] loaded;
//! the same input always gives the same candidates in the same order.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::graph::extraction::{DecisionRow, OpRow, OtherTouch};

/// Reads at most this many operations before a write count as leading to it.
pub const SEQUENCE_WINDOW: i64 = 10;
/// Candidates of each kind kept per session (the best supported).
pub const MAX_PER_KIND: usize = 5;
/// Evidence ids kept per candidate.
pub const MAX_EVIDENCE: usize = 10;

/// A pattern found without the LLM, with its evidence.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    /// `sequence`, `co_change`, `decision` or `retry_loop`.
    pub kind: &'static str,
    /// Identifies the candidate across sessions (same files, same subject → same key).
    pub key: String,
    pub description: String,
    /// Operations of the analysed session.
    pub evidence: Vec<String>,
    /// Operations of other sessions showing the same thing.
    pub other_evidence: Vec<String>,
    /// Sessions showing it, the analysed one included.
    pub sessions: usize,
}

/// Everything mining looks at for one session.
pub struct MiningInput<'a> {
    pub operations: &'a [OpRow],
    pub others: &'a [OtherTouch],
    pub decisions: &'a [DecisionRow],
}

pub fn mine(input: &MiningInput<'_>) -> Vec<Candidate> {
    let mut out = sequences(input);
    out.extend(co_changes(input));
    out.extend(decisions(input.decisions));
    out.extend(retry_loops(input.operations));
    out
}

/// The paths a session touched, for loading other sessions' touches of the same files.
pub fn touched_paths(ops: &[OpRow]) -> Vec<String> {
    let set: BTreeSet<&str> = ops
        .iter()
        .flat_map(|o| o.touches.iter().map(|t| t.path.as_str()))
        .collect();
    set.into_iter().map(str::to_string).collect()
}

/// (read path, write path) → (read op, write op), first occurrence, reads within the window.
fn read_write_pairs<'a>(
    touches: impl Iterator<Item = (&'a str, i64, &'a str, &'a str)>,
) -> BTreeMap<(String, String), (String, String)> {
    let touches: Vec<_> = touches.collect();
    let mut pairs = BTreeMap::new();
    for &(write_id, write_seq, mode, write_path) in &touches {
        if mode != "write" {
            continue;
        }
        for &(read_id, read_seq, rmode, read_path) in &touches {
            if rmode == "read"
                && read_path != write_path
                && read_seq < write_seq
                && write_seq - read_seq <= SEQUENCE_WINDOW
            {
                pairs
                    .entry((read_path.to_string(), write_path.to_string()))
                    .or_insert_with(|| (read_id.to_string(), write_id.to_string()));
            }
        }
    }
    pairs
}

fn own_touches(ops: &[OpRow]) -> impl Iterator<Item = (&str, i64, &str, &str)> {
    ops.iter().flat_map(|o| {
        o.touches
            .iter()
            .map(move |t| (o.id.as_str(), o.seq, t.mode.as_str(), t.path.as_str()))
    })
}

fn others_by_session(others: &[OtherTouch]) -> BTreeMap<&str, Vec<&OtherTouch>> {
    let mut by: BTreeMap<&str, Vec<&OtherTouch>> = BTreeMap::new();
    for t in others {
        by.entry(t.session_id.as_str()).or_default().push(t);
    }
    by
}

fn best(mut found: Vec<Candidate>) -> Vec<Candidate> {
    found.sort_by(|a, b| b.sessions.cmp(&a.sessions).then(a.key.cmp(&b.key)));
    found.truncate(MAX_PER_KIND);
    found
}

fn sequences(input: &MiningInput<'_>) -> Vec<Candidate> {
    let mine = read_write_pairs(own_touches(input.operations));
    if mine.is_empty() {
        return Vec::new();
    }
    let mut seen: HashMap<(String, String), (usize, Vec<String>)> = HashMap::new();
    for touches in others_by_session(input.others).values() {
        let theirs = read_write_pairs(
            touches
                .iter()
                .map(|t| (t.id.as_str(), t.seq, t.mode.as_str(), t.path.as_str())),
        );
        for (pair, (r, w)) in theirs {
            if mine.contains_key(&pair) {
                let e = seen.entry(pair).or_default();
                e.0 += 1;
                e.1.extend([r, w]);
            }
        }
    }
    best(
        seen.into_iter()
            .map(|((read, write), (n, other))| {
                let (r, w) = &mine[&(read.clone(), write.clone())];
                Candidate {
                    kind: "sequence",
                    key: format!("sequence|{read}|{write}"),
                    description: format!(
                        "reading {read} leads to writing {write} (in {} sessions)",
                        n + 1
                    ),
                    evidence: vec![r.clone(), w.clone()],
                    other_evidence: other.into_iter().take(MAX_EVIDENCE).collect(),
                    sessions: n + 1,
                }
            })
            .collect(),
    )
}

fn co_changes(input: &MiningInput<'_>) -> Vec<Candidate> {
    let mut written: BTreeMap<&str, &str> = BTreeMap::new();
    for (id, _, mode, path) in own_touches(input.operations) {
        if mode == "write" {
            written.entry(path).or_insert(id);
        }
    }
    if written.len() < 2 {
        return Vec::new();
    }
    let mut seen: BTreeMap<(&str, &str), (usize, Vec<String>)> = BTreeMap::new();
    for touches in others_by_session(input.others).values() {
        let mut theirs: BTreeMap<&str, &str> = BTreeMap::new();
        for t in touches.iter().filter(|t| t.mode == "write") {
            theirs.entry(t.path.as_str()).or_insert(t.id.as_str());
        }
        let files: Vec<(&str, &str)> = theirs
            .into_iter()
            .filter(|(p, _)| written.contains_key(p))
            .collect();
        for (i, (a, ida)) in files.iter().enumerate() {
            for (b, idb) in &files[i + 1..] {
                let e = seen.entry((a, b)).or_default();
                e.0 += 1;
                e.1.extend([ida.to_string(), idb.to_string()]);
            }
        }
    }
    best(
        seen.into_iter()
            .map(|((a, b), (n, other))| Candidate {
                kind: "co_change",
                key: format!("co_change|{a}|{b}"),
                description: format!("{a} and {b} change together (in {} sessions)", n + 1),
                evidence: vec![written[a].to_string(), written[b].to_string()],
                other_evidence: other.into_iter().take(MAX_EVIDENCE).collect(),
                sessions: n + 1,
            })
            .collect(),
    )
}

fn decisions(rows: &[DecisionRow]) -> Vec<Candidate> {
    let found = rows
        .iter()
        .filter(|d| d.others > 0)
        .map(|d| {
            let reversed: Vec<&String> =
                d.other_choices.iter().filter(|c| **c != d.choice).collect();
            let description = if reversed.is_empty() {
                format!(
                    "the decision on \"{}\" was taken again: {} ({} earlier)",
                    d.subject, d.choice, d.others
                )
            } else {
                format!(
                    "the decision on \"{}\" was reversed: now {}, before {}",
                    d.subject,
                    d.choice,
                    reversed
                        .iter()
                        .map(|c| c.as_str())
                        .collect::<Vec<_>>()
                        .join(" / ")
                )
            };
            Candidate {
                kind: "decision",
                key: format!("decision|{}", d.subject.trim().to_lowercase()),
                description,
                evidence: d.operation_id.iter().cloned().collect(),
                other_evidence: Vec::new(),
                sessions: d.others as usize + 1,
            }
        })
        .collect();
    best(found)
}

fn retry_loops(ops: &[OpRow]) -> Vec<Candidate> {
    let mut groups: BTreeMap<(String, String), Vec<&OpRow>> = BTreeMap::new();
    for o in ops.iter().filter(|o| o.kind == "tool_call") {
        let what = o
            .target
            .clone()
            .or_else(|| o.summary.clone())
            .unwrap_or_default();
        groups
            .entry((o.tool.clone().unwrap_or_default(), what))
            .or_default()
            .push(o);
    }
    let found = groups
        .into_iter()
        .filter_map(|((tool, what), runs)| {
            let failures = runs.iter().filter(|o| o.status == "failed").count();
            if failures < 2 {
                return None;
            }
            let ended = if runs.last().is_some_and(|o| o.status != "failed") {
                "then it passed"
            } else {
                "and it never passed"
            };
            let label = if tool.is_empty() {
                what.clone()
            } else {
                format!("{tool} {what}")
            };
            Some(Candidate {
                kind: "retry_loop",
                key: format!("retry_loop|{tool}|{what}"),
                description: format!(
                    "{label} failed {failures} times in a row of retries, {ended}"
                ),
                evidence: runs
                    .iter()
                    .take(MAX_EVIDENCE)
                    .map(|o| o.id.clone())
                    .collect(),
                other_evidence: Vec::new(),
                sessions: 1,
            })
        })
        .collect();
    best(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::extraction::Touch;

    fn op(id: &str, seq: i64, kind: &str, touches: &[(&str, &str)]) -> OpRow {
        OpRow {
            id: id.into(),
            seq,
            kind: kind.into(),
            target: touches.first().map(|t| t.1.to_string()),
            summary: Some(format!("{kind} {id}")),
            tool: None,
            status: "ok".into(),
            role: None,
            content: None,
            at: seq * 1000,
            decision_id: None,
            touches: touches
                .iter()
                .map(|(m, p)| Touch {
                    mode: m.to_string(),
                    path: p.to_string(),
                })
                .collect(),
        }
    }

    fn other(session: &str, id: &str, seq: i64, mode: &str, path: &str) -> OtherTouch {
        OtherTouch {
            session_id: session.into(),
            id: id.into(),
            seq,
            mode: mode.into(),
            path: path.into(),
        }
    }

    #[test]
    fn recurring_read_then_write_and_co_changes_are_found() {
        let ops = vec![
            op("a1", 1, "read", &[("read", "schema.sql")]),
            op("a2", 2, "write", &[("write", "model.rs")]),
            op("a3", 3, "write", &[("write", "api.rs")]),
        ];
        let others = vec![
            other("s2", "b1", 4, "read", "schema.sql"),
            other("s2", "b2", 6, "write", "model.rs"),
            other("s2", "b3", 7, "write", "api.rs"),
            // Written before it was read: not a read → write sequence.
            other("s3", "c1", 1, "write", "model.rs"),
            other("s3", "c2", 2, "read", "schema.sql"),
        ];
        let found = mine(&MiningInput {
            operations: &ops,
            others: &others,
            decisions: &[],
        });
        let seq: Vec<_> = found.iter().filter(|c| c.kind == "sequence").collect();
        // schema.sql → model.rs and schema.sql → api.rs recur; nothing from s3's reverse order.
        assert_eq!(seq.len(), 2, "{found:?}");
        assert_eq!(seq[1].key, "sequence|schema.sql|model.rs");
        assert_eq!(seq[1].evidence, vec!["a1", "a2"]);
        assert_eq!(seq[1].other_evidence, vec!["b1", "b2"]);
        assert_eq!(seq[1].sessions, 2);
        let co: Vec<_> = found.iter().filter(|c| c.kind == "co_change").collect();
        assert_eq!(co.len(), 1, "{found:?}");
        assert_eq!(co[0].key, "co_change|api.rs|model.rs");
        assert_eq!(co[0].evidence, vec!["a3", "a2"]);
        // Deterministic: the same input gives the same output.
        assert_eq!(
            found,
            mine(&MiningInput {
                operations: &ops,
                others: &others,
                decisions: &[]
            })
        );
    }

    #[test]
    fn retry_loops_and_reversed_decisions() {
        let mut ops: Vec<OpRow> = (1..=4)
            .map(|i| {
                let mut o = op(&format!("t{i}"), i, "tool_call", &[]);
                o.tool = Some("Bash".into());
                o.target = Some("cargo test".into());
                o.status = if i < 4 { "failed".into() } else { "ok".into() };
                o
            })
            .collect();
        ops.push(op("x", 9, "read", &[]));
        let decisions = vec![DecisionRow {
            id: "d".into(),
            subject: "Error handling".into(),
            choice: "thiserror".into(),
            operation_id: Some("x".into()),
            other_choices: vec!["anyhow".into()],
            others: 1,
        }];
        let found = mine(&MiningInput {
            operations: &ops,
            others: &[],
            decisions: &decisions,
        });
        let retry = found
            .iter()
            .find(|c| c.kind == "retry_loop")
            .expect("retry loop");
        assert!(
            retry.description.contains("failed 3 times")
                && retry.description.contains("then it passed")
        );
        assert_eq!(retry.evidence.len(), 4);
        let d = found
            .iter()
            .find(|c| c.kind == "decision")
            .expect("decision");
        assert!(d.description.contains("reversed"), "{}", d.description);
        assert_eq!(d.evidence, vec!["x"]);
    }
}
