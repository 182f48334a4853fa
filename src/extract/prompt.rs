//! Prompt templates (`prompts/`, versioned; the version is recorded with every result) and the
//! JSON schema of the answer (the contract's extraction output), sent as `response_format`.

use serde_json::{json, Value};

use super::digest::Digest;
use super::mining::Candidate;
use crate::config::Encoding;
use crate::domain::tokens;
use crate::graph::extraction::RelatedBelief;

/// The prompt version: sessions are extracted once per version, patterns record it.
pub const VERSION: &str = "extract_v1";
const SYSTEM: &str = include_str!("../../prompts/extract_v1_system.md");
const USER: &str = include_str!("../../prompts/extract_v1_user.md");

/// Related beliefs shown to the LLM.
pub const MAX_BELIEFS: i64 = 15;

/// A rendered prompt and its size.
#[derive(Clone, Debug)]
pub struct Prompt {
    pub system: String,
    pub user: String,
    /// Tokens of system + user text.
    pub tokens: usize,
    /// Tokens of the mining-hints section alone.
    pub hint_tokens: usize,
}

/// What goes into the user message besides the digest.
pub struct PromptInput<'a> {
    pub session_id: &'a str,
    pub task: Option<&'a str>,
    pub summary: Option<&'a str>,
    pub digest: &'a Digest,
    pub candidates: &'a [Candidate],
    pub beliefs: &'a [RelatedBelief],
}

/// The hints section: one line per candidate with its evidence ids.
pub fn hints(candidates: &[Candidate]) -> String {
    if candidates.is_empty() {
        return "(none)".into();
    }
    candidates
        .iter()
        .map(|c| {
            let evidence = if c.evidence.is_empty() {
                "no operation of this session".to_string()
            } else {
                c.evidence.join(", ")
            };
            format!("- [{}] {} — evidence: {evidence}", c.kind, c.description)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn beliefs(list: &[RelatedBelief]) -> String {
    if list.is_empty() {
        return "(none)".into();
    }
    list.iter()
        .map(|b| {
            format!(
                "- {} ({:.2}, {}): {}",
                b.id,
                b.conviction,
                b.status,
                b.content.replace('\n', " ")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

pub fn render(input: &PromptInput<'_>, encoding: Encoding) -> Prompt {
    let hints = hints(input.candidates);
    let user = fill(
        USER,
        &[
            ("session_id", input.session_id),
            ("task", input.task.unwrap_or("(not given)")),
            ("summary", input.summary.unwrap_or("(not given)")),
            ("digest", &input.digest.text),
            ("hints", &hints),
            ("beliefs", &beliefs(input.beliefs)),
        ],
    );
    Prompt {
        tokens: tokens::count(encoding, SYSTEM) + tokens::count(encoding, &user),
        hint_tokens: tokens::count(encoding, &hints),
        system: SYSTEM.to_string(),
        user,
    }
}

/// Replaces `{{name}}` placeholders of the template in one pass, so text inserted for one
/// placeholder is never scanned for another.
fn fill(template: &str, vars: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len() * 2);
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find("}}") {
            Some(end) => {
                let name = &after[..end];
                match vars.iter().find(|(k, _)| *k == name) {
                    Some((_, v)) => out.push_str(v),
                    None => out.push_str(&rest[start..start + 2 + end + 2]),
                }
                rest = &after[end + 2..];
            }
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// The answer's JSON schema (strict structured-output form).
pub fn schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["patterns"],
        "properties": {
            "patterns": {
                "type": "array",
                "items": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["pattern", "evidence", "suggested_belief", "reinforces_belief_id",
                                 "contradicts_belief_id", "confidence"],
                    "properties": {
                        "pattern": {"type": "string"},
                        "evidence": {"type": "array", "items": {"type": "string"}},
                        "suggested_belief": {
                            "type": "object",
                            "additionalProperties": false,
                            "required": ["content", "category", "conviction"],
                            "properties": {
                                "content": {"type": "string"},
                                "category": {"type": "string"},
                                "conviction": {"type": "number"}
                            }
                        },
                        "reinforces_belief_id": {"type": ["string", "null"]},
                        "contradicts_belief_id": {"type": ["string", "null"]},
                        "confidence": {"type": "number"}
                    }
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_fill_once_and_unknown_ones_stay() {
        let out = fill("a {{x}} b {{y}} c {{z}}", &[("x", "{{y}}"), ("y", "Y")]);
        assert_eq!(out, "a {{y}} b Y c {{z}}");
    }

    #[test]
    fn hints_carry_evidence_ids() {
        let c = Candidate {
            kind: "sequence",
            key: "k".into(),
            description: "reading a leads to writing b (in 2 sessions)".into(),
            evidence: vec!["op-1".into(), "op-2".into()],
            other_evidence: vec![],
            sessions: 2,
        };
        assert_eq!(
            hints(&[c]),
            "- [sequence] reading a leads to writing b (in 2 sessions) — evidence: op-1, op-2"
        );
        assert!(SYSTEM.contains("evidence") && USER.contains("{{digest}}"));
    }
}
