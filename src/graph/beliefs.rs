//! Beliefs: what the project holds true, with the evidence that informs it.

use std::collections::HashSet;

use neo4rs::Query;
use serde::Deserialize;

use super::{memories, now_ms, param, statement, Store, StoreResult};
use crate::domain::conviction;

/// A belief with its evidence counts and current conviction.
#[derive(Clone, Debug, serde::Serialize, poem_openapi::Object)]
pub struct BeliefView {
    pub id: String,
    pub content: String,
    pub category: Option<String>,
    /// `proposed`, `active` or `rejected`.
    pub status: String,
    /// 0..1, from the evidence (see the README for the formula).
    pub conviction: f64,
    pub supporting: i64,
    pub contradicting: i64,
    pub created_at: i64,
}

pub struct NewBelief<'a> {
    pub id: &'a str,
    pub project: &'a str,
    pub content: &'a str,
    pub category: Option<&'a str>,
    pub prior: f64,
    pub status: &'a str,
}

pub async fn create(store: &Store, b: &NewBelief<'_>) -> StoreResult<()> {
    let now = now_ms();
    store
        .run(
            statement(include_str!("../../cypher/beliefs/create.cypher"))
                .param("id", b.id)
                .param("project", b.project)
                .param("content", b.content)
                .param("category", b.category)
                .param("prior", b.prior)
                .param(
                    "conviction",
                    conviction::conviction(b.prior, 0, 1, 0.0, 0.0),
                )
                .param("status", b.status)
                .param("at", now),
        )
        .await
}

/// The project's beliefs (of `status` when given), newest first, at most `limit`, with their
/// evidence counts and their conviction now (evidence decayed with `half_life_ms`).
pub async fn list(
    store: &Store,
    project: &str,
    status: Option<&str>,
    half_life_ms: i64,
    limit: i64,
) -> StoreResult<Vec<BeliefView>> {
    let q = statement(include_str!("../../cypher/beliefs/list.cypher")).param("status", status);
    let (now, rows) = read_rows(store, q, project, half_life_ms, limit).await?;
    Ok(rows
        .iter()
        .map(|r| r.view_at(now, now, half_life_ms))
        .collect())
}

/// The project's active beliefs (at most `limit`, newest first) as [`list`] reads them, each
/// with where its evidence lies — one pass over their evidence, for a context — and the time
/// their evidence was decayed to ([`BeliefRow::view_at`] gives them at any later time).
pub async fn active_with_places(
    store: &Store,
    project: &str,
    half_life_ms: i64,
    limit: i64,
) -> StoreResult<(i64, Vec<BeliefRow>)> {
    let q = statement(include_str!(
        "../../cypher/beliefs/active_with_places.cypher"
    ));
    read_rows(store, q, project, half_life_ms, limit).await
}

/// What changes whenever the project's active beliefs or their evidence change, read without
/// reading the beliefs: see `and_memories_fingerprint.cypher`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct Fingerprint {
    beliefs: i64,
    changed: Vec<i64>,
    evidence: i64,
    writes: i64,
}

/// The fingerprints of the project's active beliefs (with their evidence) and of its
/// memories, read in one statement.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct Fingerprints {
    pub beliefs: Fingerprint,
    pub memories: memories::Fingerprint,
}

/// The fingerprints of the project's active beliefs and of its memories.
pub async fn fingerprints(store: &Store, project: &str) -> StoreResult<Fingerprints> {
    store
        .read()
        .fetch_one(
            statement(include_str!(
                "../../cypher/beliefs/and_memories_fingerprint.cypher"
            ))
            .param("project", project),
        )
        .await?
        .ok_or_else(|| super::StoreError::Decode("the fingerprints returned no row".into()))
}

/// A belief as read, its evidence decayed to the time of reading.
#[derive(Clone, Debug, Deserialize)]
pub struct BeliefRow {
    id: String,
    content: String,
    category: Option<String>,
    status: String,
    prior: f64,
    created_at: i64,
    supporting: i64,
    contradicting: i64,
    support: f64,
    contradict: f64,
    #[serde(default)]
    sessions: Vec<String>,
    #[serde(default)]
    files: Vec<String>,
}

impl BeliefRow {
    /// The belief at `now`, read at `read_at`: evidence decays by the same factor whatever its
    /// age, so the sums read then are carried forward exactly.
    pub fn view_at(&self, now: i64, read_at: i64, half_life_ms: i64) -> BeliefView {
        let support = conviction::decayed(self.support, now - read_at, half_life_ms);
        let contradict = conviction::decayed(self.contradict, now - read_at, half_life_ms);
        BeliefView {
            conviction: conviction::conviction(
                self.prior,
                now - self.created_at,
                half_life_ms,
                support,
                contradict,
            ),
            id: self.id.clone(),
            content: self.content.clone(),
            category: self.category.clone(),
            status: self.status.clone(),
            supporting: self.supporting,
            contradicting: self.contradicting,
            created_at: self.created_at,
        }
    }

    /// Where the belief's evidence lies (as `active_with_places.cypher` read it).
    pub fn places(&self) -> EvidencePlaces {
        EvidencePlaces {
            id: self.id.clone(),
            sessions: self.sessions.clone(),
            files: self.files.clone(),
        }
    }

    /// Bytes the row holds, roughly (for bounding what is remembered of it).
    pub fn size(&self) -> usize {
        let texts = self.sessions.iter().chain(&self.files);
        128 + self.id.len() + self.content.len() + texts.map(|t| t.len() + 24).sum::<usize>()
    }
}

/// Beliefs read by `q` (`list.cypher`, or `active_with_places.cypher` with where their
/// evidence lies; empty places otherwise), and the time their evidence was decayed to.
async fn read_rows(
    store: &Store,
    q: Query,
    project: &str,
    half_life_ms: i64,
    limit: i64,
) -> StoreResult<(i64, Vec<BeliefRow>)> {
    let now = now_ms();
    let rows: Vec<BeliefRow> = store
        .read()
        .fetch(
            q.param("project", project)
                .param("now", now)
                .param("half_life_ms", half_life_ms as f64)
                .param("limit", limit),
        )
        .await?;
    Ok((now, rows))
}

/// Which of `ids` are beliefs of `project`.
pub async fn known(store: &Store, project: &str, ids: &[String]) -> StoreResult<HashSet<String>> {
    super::known_ids(
        store,
        include_str!("../../cypher/beliefs/known.cypher"),
        project,
        ids,
    )
    .await
}

/// A belief's status before and after a review.
#[derive(Clone, Debug, Deserialize)]
pub struct Reviewed {
    pub previous: String,
    pub status: String,
}

/// Moves the belief to `to` when its status is one of `from`; `None` when it does not exist
/// in the project. The status is unchanged otherwise (the caller compares).
pub async fn set_status(
    store: &Store,
    project: &str,
    id: &str,
    from: &[&str],
    to: &str,
    actor: &str,
) -> StoreResult<Option<Reviewed>> {
    store
        .fetch_one(
            statement(include_str!("../../cypher/beliefs/set_status.cypher"))
                .param("project", project)
                .param("id", id)
                .param("from", param(from)?)
                .param("to", to)
                .param("actor", actor)
                .param("now", now_ms()),
        )
        .await
}

/// A belief the session's operations or decisions informed.
#[derive(Clone, Debug, serde::Serialize, Deserialize, poem_openapi::Object)]
pub struct BeliefAffected {
    pub id: String,
    pub content: String,
    pub status: String,
    /// Pieces of evidence from this session that support it.
    pub reinforced: i64,
    /// Pieces of evidence from this session that contradict it.
    pub weakened: i64,
}

/// The beliefs `session_id`'s operations or decisions informed, with its evidence on each.
pub async fn affected_by_session(
    store: &Store,
    project: &str,
    session_id: &str,
) -> StoreResult<Vec<BeliefAffected>> {
    store
        .read()
        .fetch(
            statement(include_str!(
                "../../cypher/beliefs/affected_by_session.cypher"
            ))
            .param("project", project)
            .param("session_id", session_id),
        )
        .await
}

/// Where a belief's evidence lies: the sessions of the operations and decisions that inform
/// it, and the files those operations touched.
#[derive(Debug)]
pub struct EvidencePlaces {
    pub id: String,
    pub sessions: Vec<String>,
    pub files: Vec<String>,
}

/// An active belief, as the handover lists it.
#[derive(Clone, Debug, serde::Serialize, Deserialize, poem_openapi::Object)]
pub struct ActiveBelief {
    pub id: String,
    pub content: String,
    pub conviction: f64,
}

/// The project's active beliefs with the highest conviction, at most `limit`.
pub async fn strongest_active(
    store: &Store,
    project: &str,
    limit: usize,
) -> StoreResult<Vec<ActiveBelief>> {
    store
        .read()
        .fetch(
            statement(include_str!("../../cypher/beliefs/strongest_active.cypher"))
                .param("project", project)
                .param("limit", limit as i64),
        )
        .await
}

/// Moves the belief `id` of `project` to `to` through the approval workflow: `None` when
/// there is no such belief, else its status before and after (unchanged when `to` cannot be
/// reached from it — the caller says why). What the API's approve/reject and the web UI run.
pub async fn review(
    store: &Store,
    project: &str,
    id: &str,
    to: crate::domain::state::BeliefStatus,
    actor: &str,
) -> StoreResult<Option<Reviewed>> {
    let from: Vec<&str> = to.reachable_from().iter().map(|s| s.as_str()).collect();
    set_status(store, project, id, &from, to.as_str(), actor).await
}

/// One piece of evidence informing a belief, with where it comes from.
#[derive(Clone, Debug, Deserialize)]
pub struct EvidenceItem {
    /// `supports` or `contradicts`.
    pub effect: String,
    pub weight: f64,
    /// Epoch milliseconds.
    pub at: i64,
    /// `operation`, `pattern` or `decision`.
    pub kind: String,
    /// The id of the operation, pattern or decision.
    pub source: Option<String>,
    pub session_id: Option<String>,
    pub seq: Option<i64>,
    pub text: String,
}

impl EvidenceItem {
    /// The evidence as the conviction formula counts it at `now`.
    pub fn as_evidence(&self, now: i64) -> conviction::Evidence {
        conviction::Evidence {
            supports: self.effect != "contradicts",
            weight: self.weight,
            at: self.at.min(now),
        }
    }
}

/// A belief with all its evidence, oldest first.
#[derive(Clone, Debug, Deserialize)]
pub struct BeliefEvidence {
    pub id: String,
    pub content: String,
    pub category: Option<String>,
    pub status: String,
    pub prior: f64,
    pub created_at: i64,
    pub evidence: Vec<EvidenceItem>,
}

/// The belief `id` of `project` with its evidence; `None` when there is none.
pub async fn evidence(
    store: &Store,
    project: &str,
    id: &str,
) -> StoreResult<Option<BeliefEvidence>> {
    store
        .read()
        .fetch_one(
            statement(include_str!("../../cypher/beliefs/evidence.cypher"))
                .param("project", project)
                .param("id", id),
        )
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(support: f64, contradict: f64) -> BeliefRow {
        BeliefRow {
            id: "b".into(),
            content: "c".into(),
            category: None,
            status: "active".into(),
            prior: 0.7,
            created_at: 1_000,
            supporting: 3,
            contradicting: 1,
            support,
            contradict,
            sessions: vec!["s".into()],
            files: vec![],
        }
    }

    #[test]
    fn a_belief_read_earlier_is_carried_forward_as_a_fresh_read_would_give_it() {
        let h = 86_400_000;
        let (read_at, later) = (5_000, 5_000 + 2 * h);
        // Read at `read_at` with sums 8 and 2; a read two half-lives later sums a quarter.
        let carried = row(8.0, 2.0).view_at(later, read_at, h);
        let fresh = row(2.0, 0.5).view_at(later, later, h);
        assert!((carried.conviction - fresh.conviction).abs() < 1e-12);
        assert!(carried.conviction != row(8.0, 2.0).view_at(read_at, read_at, h).conviction);
        assert_eq!(carried.supporting, 3);
    }
}
