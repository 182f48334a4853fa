//! Validation of the LLM's answer: the schema, size limits, numbers in 0..1, and evidence
//! that names operations of the analysed session (anything else is dropped and counted). An
//! `Err` carries a message for the one retry the LLM gets.

use std::collections::HashSet;

use serde::Deserialize;

pub const MAX_PATTERNS: usize = 20;
pub const MAX_PATTERN_CHARS: usize = 1_000;
pub const MAX_BELIEF_CHARS: usize = 1_000;
pub const MAX_CATEGORY_CHARS: usize = 64;
pub const MAX_EVIDENCE_IDS: usize = 50;
pub const MAX_ID_CHARS: usize = 200;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAnswer {
    patterns: Vec<RawPattern>,
}

#[derive(Deserialize)]
struct RawPattern {
    pattern: String,
    evidence: Vec<String>,
    suggested_belief: RawBelief,
    #[serde(default)]
    reinforces_belief_id: Option<String>,
    #[serde(default)]
    contradicts_belief_id: Option<String>,
    confidence: f64,
}

#[derive(Deserialize)]
struct RawBelief {
    content: String,
    #[serde(default)]
    category: Option<String>,
    conviction: f64,
}

/// A pattern that passed validation, its evidence reduced to the session's operations.
#[derive(Clone, Debug, PartialEq)]
pub struct Finding {
    pub pattern: String,
    pub evidence: Vec<String>,
    pub belief: String,
    pub category: Option<String>,
    pub conviction: f64,
    pub reinforces: Option<String>,
    pub contradicts: Option<String>,
    pub confidence: f64,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Validated {
    pub findings: Vec<Finding>,
    /// Evidence ids that are not operations of the session.
    pub evidence_rejected: usize,
    /// Patterns left without any valid evidence.
    pub patterns_dropped: usize,
}

/// The JSON inside the answer: models sometimes wrap it in a Markdown code fence.
fn unfenced(text: &str) -> &str {
    let t = text.trim();
    let Some(inner) = t.strip_prefix("```") else {
        return t;
    };
    let inner = inner.strip_prefix("json").unwrap_or(inner);
    inner.strip_suffix("```").unwrap_or(inner).trim()
}

fn unit(field: String, v: f64) -> Result<f64, String> {
    if v.is_finite() && (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!(
            "`{field}` must be a number between 0 and 1, got {v}"
        ))
    }
}

fn text(field: String, v: &str, max: usize) -> Result<String, String> {
    let v = v.trim();
    if v.is_empty() {
        return Err(format!("`{field}` must not be empty"));
    }
    if v.chars().count() > max {
        return Err(format!("`{field}` is longer than {max} characters"));
    }
    Ok(v.to_string())
}

fn belief_ref(field: String, v: Option<String>) -> Result<Option<String>, String> {
    match v.as_deref().map(str::trim) {
        None | Some("") => Ok(None),
        Some(id) if id.chars().count() > MAX_ID_CHARS => Err(format!(
            "`{field}` is longer than {MAX_ID_CHARS} characters"
        )),
        Some(id) => Ok(Some(id.to_string())),
    }
}

/// Checks an answer against the schema and the session's operation ids.
pub fn answer(text_in: &str, session_ops: &HashSet<String>) -> Result<Validated, String> {
    let raw: RawAnswer = serde_json::from_str(unfenced(text_in))
        .map_err(|e| format!("the answer is not JSON matching the schema: {e}"))?;
    if raw.patterns.len() > MAX_PATTERNS {
        return Err(format!(
            "`patterns` has {} items; at most {MAX_PATTERNS} are allowed",
            raw.patterns.len()
        ));
    }
    let mut out = Validated::default();
    for (i, p) in raw.patterns.into_iter().enumerate() {
        let at = |f: &str| format!("patterns[{i}].{f}");
        let pattern = text(at("pattern"), &p.pattern, MAX_PATTERN_CHARS)?;
        let belief = text(
            at("suggested_belief.content"),
            &p.suggested_belief.content,
            MAX_BELIEF_CHARS,
        )?;
        let category = match p.suggested_belief.category.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(c) => Some(text(
                at("suggested_belief.category"),
                c,
                MAX_CATEGORY_CHARS,
            )?),
        };
        let conviction = unit(
            at("suggested_belief.conviction"),
            p.suggested_belief.conviction,
        )?;
        let confidence = unit(at("confidence"), p.confidence)?;
        if p.evidence.len() > MAX_EVIDENCE_IDS {
            return Err(format!(
                "`{}` has {} ids; at most {MAX_EVIDENCE_IDS} are allowed",
                at("evidence"),
                p.evidence.len()
            ));
        }
        let reinforces = belief_ref(at("reinforces_belief_id"), p.reinforces_belief_id)?;
        let contradicts = belief_ref(at("contradicts_belief_id"), p.contradicts_belief_id)?;
        if reinforces.is_some() && contradicts.is_some() {
            return Err(format!(
                "`{}`: a pattern reinforces or contradicts a belief, not both",
                at("contradicts_belief_id")
            ));
        }
        let mut seen = HashSet::new();
        let mut evidence = Vec::new();
        for id in p.evidence {
            let id = id.trim().to_string();
            if !session_ops.contains(&id) {
                out.evidence_rejected += 1;
            } else if seen.insert(id.clone()) {
                evidence.push(id);
            }
        }
        if evidence.is_empty() {
            out.patterns_dropped += 1;
            continue;
        }
        out.findings.push(Finding {
            pattern,
            evidence,
            belief,
            category,
            conviction,
            reinforces,
            contradicts,
            confidence,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ops() -> HashSet<String> {
        ["a", "b"].iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn invented_evidence_is_dropped_and_counted() {
        let v = answer(
            r#"```json
            {"patterns": [
              {"pattern": "p", "evidence": ["a", "zzz", "a"], "suggested_belief": {"content": "c", "category": "x", "conviction": 0.7}, "reinforces_belief_id": null, "contradicts_belief_id": null, "confidence": 0.8},
              {"pattern": "q", "evidence": ["nope"], "suggested_belief": {"content": "d", "category": "x", "conviction": 0.7}, "reinforces_belief_id": null, "contradicts_belief_id": null, "confidence": 0.8}
            ]}
            ```"#,
            &ops(),
        )
        .expect("valid");
        assert_eq!(v.evidence_rejected, 2);
        assert_eq!(v.patterns_dropped, 1);
        assert_eq!(v.findings.len(), 1);
        assert_eq!(v.findings[0].evidence, vec!["a"]);
    }

    #[test]
    fn schema_and_range_errors_name_the_field() {
        let e = answer("not json", &ops()).unwrap_err();
        assert!(e.contains("not JSON"), "{e}");
        let e = answer(
            r#"{"patterns": [{"pattern": "p", "evidence": ["a"], "suggested_belief": {"content": "c", "category": "x", "conviction": 1.5}, "confidence": 0.8}]}"#,
            &ops(),
        )
        .unwrap_err();
        assert!(e.contains("patterns[0].suggested_belief.conviction"), "{e}");
        let e = answer(
            r#"{"patterns": [{"pattern": "p", "evidence": ["a"], "suggested_belief": {"content": "c", "category": "x", "conviction": 0.5}, "reinforces_belief_id": "x", "contradicts_belief_id": "y", "confidence": 0.8}]}"#,
            &ops(),
        )
        .unwrap_err();
        assert!(e.contains("not both"), "{e}");
        assert_eq!(
            answer(r#"{"patterns": []}"#, &ops()),
            Ok(Validated::default())
        );
    }
}
