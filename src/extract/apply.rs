//! Applying one session's results in one transaction: the session is claimed for the prompt
//! version, mined candidates and LLM findings become `Pattern` nodes `EVIDENCED_BY` their
//! operations, each finding reinforces or contradicts the belief it names, joins an existing
//! belief that matches it, or becomes a new `proposed` belief (unless the same content or
//! evidence was rejected before), and the convictions it touched are recomputed. Any error
//! rolls the whole session back: never half-applied.

use std::collections::{BTreeSet, HashMap, HashSet};

use sha2::{Digest as _, Sha256};

use super::mining::Candidate;
use super::validate::Finding;
use crate::domain::validate::new_id;
use crate::graph::extraction::{
    self as g, ConvictionPolicy, InformsRow, NewProposed, PatternRow, RunStats,
};
use crate::graph::{now_ms, Store, StoreResult, Tx};

/// Candidates fetched per suggested belief when looking for one to join.
const MATCH_CANDIDATES: i64 = 5;

/// A stable short id from its parts.
pub fn key_hash(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0u8]);
    }
    hex::encode(&h.finalize()[..12])
}

fn words(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 3)
        .map(str::to_lowercase)
        .collect()
}

/// The normalised content of a belief: its words, lower-cased, in order.
pub fn content_key(text: &str) -> String {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Word-set overlap (Jaccard) of two texts, 0..1.
pub fn similarity(a: &str, b: &str) -> f64 {
    let (a, b) = (words(a), words(b));
    let union = a.union(&b).count();
    if union == 0 {
        return 0.0;
    }
    a.intersection(&b).count() as f64 / union as f64
}

fn evidence_key(ids: &[String]) -> String {
    let mut sorted: Vec<&str> = ids.iter().map(String::as_str).collect();
    sorted.sort_unstable();
    sorted.dedup();
    key_hash(&sorted)
}

/// What one session's application needs.
pub struct SessionResults<'a> {
    pub project: &'a str,
    pub session_id: &'a str,
    pub run_id: &'a str,
    /// The version the session is claimed for (prompt version, or mining version).
    pub version: &'a str,
    pub candidates: &'a [Candidate],
    pub findings: &'a [Finding],
    /// When each operation of the session happened.
    pub op_at: &'a HashMap<String, i64>,
    pub policy: ConvictionPolicy,
    pub match_threshold: f64,
}

/// Attempts at a session's transaction when Neo4j reports a transient error (a deadlock
/// between sessions sharing a mined candidate).
const ATTEMPTS: usize = 3;

/// Applies `r` in one transaction. `None` when another run had already claimed the session.
pub async fn session(store: &Store, r: &SessionResults<'_>) -> StoreResult<Option<RunStats>> {
    let mut attempt = 1;
    loop {
        match once(store, r).await {
            Err(e) if attempt < ATTEMPTS && e.is_unavailable() => {
                tracing::info!(session.id = %r.session_id, attempt, error = %e, "retrying the extraction transaction");
                tokio::time::sleep(std::time::Duration::from_millis(50 * attempt as u64)).await;
                attempt += 1;
            }
            other => return other,
        }
    }
}

async fn once(store: &Store, r: &SessionResults<'_>) -> StoreResult<Option<RunStats>> {
    let mut tx = store.begin().await?;
    match in_tx(&mut tx, r).await {
        Ok(Some(stats)) => {
            tx.commit().await?;
            Ok(Some(stats))
        }
        Ok(None) => {
            tx.rollback().await?;
            Ok(None)
        }
        Err(e) => {
            if let Err(rb) = tx.rollback().await {
                tracing::warn!(error = %rb, "rollback after a failed extraction apply failed");
            }
            Err(e)
        }
    }
}

fn candidate_row(r: &SessionResults<'_>, c: &Candidate) -> PatternRow {
    let mut evidence = c.evidence.clone();
    evidence.extend(c.other_evidence.iter().cloned());
    PatternRow {
        id: key_hash(&["candidate", r.project, &c.key]),
        kind: c.kind.to_string(),
        source: "mining".into(),
        status: "candidate".into(),
        description: c.description.clone(),
        // More sessions showing it, more confidence: n / (n + 1).
        confidence: c.sessions as f64 / (c.sessions as f64 + 1.0),
        evidence_key: evidence_key(&evidence),
        evidence,
        category: None,
        prompt_version: r.version.to_string(),
        run_id: r.run_id.to_string(),
        session_id: r.session_id.to_string(),
        support: c.sessions as i64,
    }
}

/// Where a finding's evidence goes.
enum Target {
    Existing { id: String, effect: &'static str },
    New { content_key: String },
}

async fn in_tx(tx: &mut Tx, r: &SessionResults<'_>) -> StoreResult<Option<RunStats>> {
    if g::claim(tx, r.project, r.session_id, r.version).await? {
        return Ok(None);
    }
    let mut stats = RunStats {
        candidates: r.candidates.len() as i64,
        ..Default::default()
    };
    let mut patterns: Vec<PatternRow> = r.candidates.iter().map(|c| candidate_row(r, c)).collect();

    let named: Vec<String> = r
        .findings
        .iter()
        .flat_map(|f| f.reinforces.iter().chain(f.contradicts.iter()).cloned())
        .collect();
    let statuses = g::belief_statuses(tx, r.project, &named).await?;
    let usable = |id: &Option<String>| {
        id.as_ref()
            .filter(|id| statuses.get(*id).is_some_and(|s| s != "rejected"))
            .cloned()
    };

    let mut targets = Vec::with_capacity(r.findings.len());
    for f in r.findings {
        let target = if let Some(id) = usable(&f.reinforces) {
            Target::Existing {
                id,
                effect: "supports",
            }
        } else if let Some(id) = usable(&f.contradicts) {
            Target::Existing {
                id,
                effect: "contradicts",
            }
        } else {
            match best_match(tx, r, &f.belief).await? {
                Some(id) => Target::Existing {
                    id,
                    effect: "supports",
                },
                None => Target::New {
                    content_key: content_key(&f.belief),
                },
            }
        };
        targets.push(target);
    }

    let new_keys: Vec<String> = targets
        .iter()
        .filter_map(|t| match t {
            Target::New { content_key } => Some(content_key.clone()),
            Target::Existing { .. } => None,
        })
        .collect();
    let ev_keys: Vec<String> = r
        .findings
        .iter()
        .map(|f| evidence_key(&f.evidence))
        .collect();
    let rejected = if new_keys.is_empty() {
        g::Rejected::default()
    } else {
        g::rejected(tx, r.project, &new_keys, &ev_keys).await?
    };

    let mut created: HashMap<String, String> = HashMap::new();
    let mut proposed = Vec::new();
    let mut informs = Vec::new();
    let mut touched = HashSet::new();
    for (f, target) in r.findings.iter().zip(targets) {
        let ev_key = evidence_key(&f.evidence);
        let pattern_id = key_hash(&[
            "llm",
            r.project,
            r.session_id,
            &ev_key,
            &content_key(&f.pattern),
        ]);
        let (belief, effect) = match target {
            Target::Existing { id, effect } => {
                if effect == "supports" {
                    stats.beliefs_reinforced += 1;
                } else {
                    stats.beliefs_contradicted += 1;
                }
                (Some(id), effect)
            }
            Target::New { content_key } => {
                if rejected.content_keys.contains(&content_key)
                    || rejected.evidence_keys.contains(&ev_key)
                {
                    stats.beliefs_suppressed += 1;
                    (None, "supports")
                } else if let Some(id) = created.get(&content_key) {
                    stats.beliefs_reinforced += 1;
                    (Some(id.clone()), "supports")
                } else {
                    let id = new_id();
                    created.insert(content_key.clone(), id.clone());
                    proposed.push(NewProposed {
                        id: id.clone(),
                        content: f.belief.clone(),
                        category: f.category.clone(),
                        content_key,
                        prior: f.conviction,
                    });
                    stats.beliefs_created += 1;
                    (Some(id), "supports")
                }
            }
        };
        if let Some(belief) = belief {
            let at = f
                .evidence
                .iter()
                .filter_map(|id| r.op_at.get(id))
                .max()
                .copied()
                .unwrap_or_else(now_ms);
            touched.insert(belief.clone());
            informs.push(InformsRow {
                pattern: pattern_id.clone(),
                belief,
                effect: effect.to_string(),
                weight: f.confidence,
                at,
            });
        }
        patterns.push(PatternRow {
            id: pattern_id,
            kind: "llm".into(),
            source: "llm".into(),
            status: "extracted".into(),
            description: f.pattern.clone(),
            confidence: f.confidence,
            evidence: f.evidence.clone(),
            evidence_key: ev_key,
            category: f.category.clone(),
            prompt_version: r.version.to_string(),
            run_id: r.run_id.to_string(),
            session_id: r.session_id.to_string(),
            support: 1,
        });
        stats.patterns += 1;
    }

    g::merge_patterns(tx, r.project, &patterns).await?;
    for p in g::create_proposed(tx, r.project, &proposed).await? {
        if p.created {
            continue;
        }
        // Another session proposed the same content first: this one supports it.
        stats.beliefs_created -= 1;
        stats.beliefs_reinforced += 1;
        touched.remove(&p.proposed);
        touched.insert(p.id.clone());
        for i in informs.iter_mut().filter(|i| i.belief == p.proposed) {
            i.belief = p.id.clone();
        }
    }
    g::informs(tx, r.project, r.run_id, &informs).await?;
    let touched: Vec<String> = touched.into_iter().collect();
    g::refresh_convictions(tx, r.project, Some(&touched), r.policy, now_ms()).await?;
    Ok(Some(stats))
}

/// The existing belief a suggestion joins: full-text candidates, kept when their word
/// overlap with the suggestion reaches the threshold.
async fn best_match(
    tx: &mut Tx,
    r: &SessionResults<'_>,
    content: &str,
) -> StoreResult<Option<String>> {
    let Some(query) = g::fulltext_query(content, 30) else {
        return Ok(None);
    };
    let found = g::related_beliefs_tx(tx, r.project, &query, MATCH_CANDIDATES).await?;
    Ok(found
        .into_iter()
        .map(|b| (similarity(content, &b.content), b.id))
        .filter(|(s, _)| *s >= r.match_threshold)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, id)| id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_similarity() {
        assert_eq!(
            content_key("Run the Migrations, first!"),
            "run the migrations first"
        );
        assert_eq!(
            evidence_key(&["b".into(), "a".into()]),
            evidence_key(&["a".into(), "b".into(), "a".into()])
        );
        assert!(
            similarity(
                "always run migrations before tests",
                "Run migrations before the tests always"
            ) > 0.8
        );
        assert!(similarity("use thiserror at boundaries", "prefer tabs over spaces") < 0.1);
    }
}
