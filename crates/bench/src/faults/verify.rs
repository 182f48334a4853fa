//! The exactly-once check, against Neo4j itself: every acknowledged operation is stored once,
//! nothing refused or rejected is stored, nothing is stored that was never acknowledged (unless
//! its request went unanswered), and each session's chain is still `seq` 1..n with every
//! operation `FOLLOWS` its predecessor.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use super::clients::Ledger;
use cairn::graph::{param, statement, Store};

#[derive(Debug, Default, Clone, Serialize)]
pub struct Check {
    pub acked_ops: usize,
    pub stored_ops: usize,
    /// Acknowledged but not stored.
    pub missing: usize,
    /// Stored more than once (extra copies).
    pub duplicates: usize,
    /// Refused (`spool_full`) or rejected (4xx) yet stored.
    pub refused_stored: usize,
    /// Stored though never acknowledged nor left unresolved.
    pub unacked_stored: usize,
    /// Operations whose fate the clients never learnt.
    pub unresolved: usize,
    pub sessions: usize,
    /// Sessions whose `seq` is not 1..n or whose `FOLLOWS` chain is broken.
    pub broken_chains: usize,
}

impl Check {
    pub fn violations(&self) -> Vec<String> {
        [
            (self.missing, "acknowledged operations missing from Neo4j"),
            (self.duplicates, "operations stored more than once"),
            (self.refused_stored, "refused operations stored"),
            (
                self.unacked_stored,
                "operations stored without an acknowledgement",
            ),
            (self.unresolved, "operations never answered"),
            (
                self.broken_chains,
                "sessions with a broken seq/FOLLOWS chain",
            ),
        ]
        .into_iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect()
    }
}

#[derive(Deserialize)]
struct Stored {
    id: String,
    session_id: String,
    seq: Option<i64>,
    follows: Vec<Option<i64>>,
}

/// Compares what Neo4j holds for `sessions` of `project` with the clients' ledger.
pub async fn exactly_once(
    store: &Store,
    project: &str,
    sessions: &[String],
    ledger: &Ledger,
) -> anyhow::Result<Check> {
    let rows: Vec<Stored> = store
        .fetch(
            statement(include_str!("../../cypher/bench_faults_operations.cypher"))
                .param("project", project)
                .param("sessions", param(sessions)?),
        )
        .await?;
    Ok(compare(&rows, sessions.len(), ledger))
}

fn compare(rows: &[Stored], sessions: usize, ledger: &Ledger) -> Check {
    let mut copies: HashMap<&str, usize> = HashMap::new();
    let mut chains: HashMap<&str, Vec<&Stored>> = HashMap::new();
    for r in rows {
        *copies.entry(&r.id).or_default() += 1;
        chains.entry(&r.session_id).or_default().push(r);
    }
    let acked = id_set(&ledger.acked);
    let unresolved = id_set(&ledger.unresolved);
    let refused: HashSet<&str> = id_set(&ledger.refused)
        .union(&id_set(&ledger.rejected))
        .copied()
        .collect();
    Check {
        acked_ops: acked.len(),
        stored_ops: rows.len(),
        missing: acked.iter().filter(|id| !copies.contains_key(*id)).count(),
        duplicates: copies.values().map(|n| n - 1).sum(),
        refused_stored: refused.iter().filter(|id| copies.contains_key(*id)).count(),
        unacked_stored: copies
            .keys()
            .filter(|id| {
                !acked.contains(*id) && !unresolved.contains(*id) && !refused.contains(*id)
            })
            .count(),
        unresolved: unresolved.len(),
        sessions,
        broken_chains: chains.into_values().filter(|c| !chain_ok(c)).count(),
    }
}

fn id_set(ids: &[String]) -> HashSet<&str> {
    ids.iter().map(String::as_str).collect()
}

/// `seq` is exactly 1..n and each operation follows the one before it (the first, none).
fn chain_ok(chain: &[&Stored]) -> bool {
    let mut sorted = chain.to_vec();
    sorted.sort_by_key(|r| r.seq);
    sorted.iter().enumerate().all(|(i, r)| {
        let n = i as i64 + 1;
        let prev: &[Option<i64>] = if n == 1 { &[] } else { &[Some(n - 1)] };
        r.seq == Some(n) && r.follows == prev
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, session: &str, seq: i64, follows: &[i64]) -> Stored {
        Stored {
            id: id.into(),
            session_id: session.into(),
            seq: Some(seq),
            follows: follows.iter().map(|f| Some(*f)).collect(),
        }
    }

    #[test]
    fn finds_every_kind_of_violation() {
        let ledger = Ledger {
            acked: vec!["a".into(), "b".into(), "c".into(), "lost".into()],
            refused: vec!["r".into()],
            unresolved: vec!["u".into()],
            ..Default::default()
        };
        let good = [
            row("a", "s", 1, &[]),
            row("b", "s", 2, &[1]),
            row("c", "s", 3, &[2]),
            row("u", "t", 1, &[]),
        ];
        let c = compare(&good, 2, &ledger);
        assert_eq!((c.missing, c.duplicates, c.broken_chains), (1, 0, 0));
        assert_eq!((c.unacked_stored, c.refused_stored), (0, 0));

        let bad = [
            row("a", "s", 1, &[]),
            row("b", "s", 3, &[1]),
            row("b", "t", 1, &[]),
            row("r", "t", 2, &[1]),
            row("x", "t", 3, &[2]),
        ];
        let c = compare(&bad, 2, &ledger);
        assert_eq!(c.duplicates, 1);
        assert_eq!(c.refused_stored, 1);
        assert_eq!(c.unacked_stored, 1, "x");
        assert_eq!(c.broken_chains, 1, "s skips seq 2");
        assert_eq!(c.missing, 2, "c and lost");
    }
}
