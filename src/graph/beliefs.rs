//! Beliefs: what the project holds true, with the evidence that informs it.

use std::collections::HashSet;

use neo4rs::Query;
use serde::Deserialize;

use super::{now_ms, param, statement, Store, StoreResult};
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
    let rows = read_views(store, q, project, half_life_ms, limit).await?;
    Ok(rows.into_iter().map(|(view, _)| view).collect())
}

/// The project's active beliefs (at most `limit`, newest first) as [`list`] gives them, each
/// with where its evidence lies — one pass over their evidence, for a task context.
pub async fn active_with_places(
    store: &Store,
    project: &str,
    half_life_ms: i64,
    limit: i64,
) -> StoreResult<Vec<(BeliefView, EvidencePlaces)>> {
    let q = statement(include_str!(
        "../../cypher/beliefs/active_with_places.cypher"
    ));
    read_views(store, q, project, half_life_ms, limit).await
}

/// Beliefs read by `q` (`list.cypher`, or `active_with_places.cypher` with where their
/// evidence lies; empty places otherwise) into views, their conviction decayed to now.
async fn read_views(
    store: &Store,
    q: Query,
    project: &str,
    half_life_ms: i64,
    limit: i64,
) -> StoreResult<Vec<(BeliefView, EvidencePlaces)>> {
    #[derive(Deserialize)]
    struct Row {
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
    let now = now_ms();
    let rows: Vec<Row> = store
        .read()
        .fetch(
            q.param("project", project)
                .param("now", now)
                .param("half_life_ms", half_life_ms as f64)
                .param("limit", limit),
        )
        .await?;
    Ok(rows
        .into_iter()
        .map(|r| {
            let places = EvidencePlaces {
                id: r.id.clone(),
                sessions: r.sessions,
                files: r.files,
            };
            let view = BeliefView {
                conviction: conviction::conviction(
                    r.prior,
                    now - r.created_at,
                    half_life_ms,
                    r.support,
                    r.contradict,
                ),
                id: r.id,
                content: r.content,
                category: r.category,
                status: r.status,
                supporting: r.supporting,
                contradicting: r.contradicting,
                created_at: r.created_at,
            };
            (view, places)
        })
        .collect())
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
