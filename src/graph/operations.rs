//! Operations: appended to a session's chain with gap-free `seq`, `FOLLOWS` to the previous
//! one, `PART_OF`, `TRIGGERED_BY`, `TOUCHED` files and `INFORMS` beliefs.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use super::{now_ms, param, statement, Store, StoreResult, Tx};
use crate::domain::operation::NewOperation;

/// What an append did.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Appended {
    /// Ids written now, in seq order.
    pub created: Vec<String>,
    /// Ids already stored (resent); nothing was written for them.
    pub duplicates: usize,
    pub last_seq: i64,
}

#[derive(Serialize)]
struct Row<'a> {
    id: &'a str,
    seq: i64,
    #[serde(rename = "type")]
    kind: &'a str,
    target: Option<&'a str>,
    summary: &'a str,
    tool: Option<&'a str>,
    files_read: &'a [String],
    files_modified: &'a [String],
    rationale: Option<&'a str>,
    role: Option<&'a str>,
    content: Option<&'a str>,
    todos: Option<&'a str>,
    status: &'a str,
    context: Option<&'a str>,
    at: i64,
    tokens: i64,
    triggered_by: Option<&'a str>,
}

#[derive(Serialize)]
struct Link<'a> {
    id: &'a str,
    prev: &'a str,
}

#[derive(Serialize)]
struct Trigger<'a> {
    id: &'a str,
    target: &'a str,
}

#[derive(Serialize)]
struct Touch<'a> {
    id: &'a str,
    path: &'a str,
    mode: &'static str,
    at: i64,
}

#[derive(Serialize)]
struct Informs<'a> {
    id: &'a str,
    belief: &'a str,
    effect: &'a str,
    weight: f64,
    at: i64,
}

/// Appends `ops` to the session inside `tx`. Ids already stored are skipped, so replaying a
/// batch writes nothing twice. Returns `None` when the session does not exist (purged).
pub async fn append(
    tx: &mut Tx,
    project: &str,
    session_id: &str,
    ops: &[NewOperation],
) -> StoreResult<Option<Appended>> {
    #[derive(Deserialize)]
    struct Tail {
        last_seq: i64,
        last_op_id: Option<String>,
    }
    #[derive(Deserialize)]
    struct Existing {
        id: String,
    }
    let newest = ops.iter().map(|o| o.at).max().unwrap_or_else(now_ms);
    let tail = tx
        .fetch::<Tail>(
            statement(include_str!("../../cypher/operations_lock_session.cypher"))
                .param("session_id", session_id)
                .param("project", project)
                .param("at", newest),
        )
        .await?;
    let Some(tail) = tail.into_iter().next() else {
        return Ok(None);
    };
    let ids: Vec<&str> = ops.iter().map(|o| o.id.as_str()).collect();
    let existing: HashSet<String> = tx
        .fetch::<Existing>(
            statement(include_str!("../../cypher/operations_existing.cypher"))
                .param("ids", param(&ids)?),
        )
        .await?
        .into_iter()
        .map(|e| e.id)
        .collect();

    let mut seen = HashSet::new();
    let fresh: Vec<&NewOperation> = ops
        .iter()
        .filter(|o| !existing.contains(&o.id) && seen.insert(o.id.as_str()))
        .collect();
    let mut out = Appended {
        duplicates: ops.len() - fresh.len(),
        last_seq: tail.last_seq,
        ..Default::default()
    };
    if fresh.is_empty() {
        return Ok(Some(out));
    }

    let mut rows = Vec::with_capacity(fresh.len());
    let mut links = Vec::with_capacity(fresh.len());
    let mut triggers = Vec::new();
    let mut touches = Vec::new();
    let mut informs = Vec::new();
    let mut prev: Option<&str> = tail.last_op_id.as_deref();
    let mut tokens = 0i64;
    for (i, op) in fresh.iter().enumerate() {
        let seq = tail.last_seq + 1 + i as i64;
        rows.push(Row {
            id: &op.id,
            seq,
            kind: op.kind.as_str(),
            target: op.target.as_deref(),
            summary: &op.summary,
            tool: op.tool.as_deref(),
            files_read: &op.files_read,
            files_modified: &op.files_modified,
            rationale: op.rationale.as_deref(),
            role: op.role.as_deref(),
            content: op.content.as_deref(),
            todos: op.todos.as_deref(),
            status: &op.status,
            context: op.context.as_deref(),
            at: op.at,
            tokens: op.tokens,
            triggered_by: op.triggered_by.as_deref(),
        });
        tokens += op.tokens;
        if let Some(p) = prev {
            links.push(Link {
                id: &op.id,
                prev: p,
            });
        }
        prev = Some(&op.id);
        if let Some(t) = op.triggered_by.as_deref() {
            triggers.push(Trigger {
                id: &op.id,
                target: t,
            });
        }
        for path in &op.files_read {
            touches.push(Touch {
                id: &op.id,
                path,
                mode: "read",
                at: op.at,
            });
        }
        for path in &op.files_modified {
            touches.push(Touch {
                id: &op.id,
                path,
                mode: "write",
                at: op.at,
            });
        }
        if let Some(b) = op.informs_belief.as_deref() {
            informs.push(Informs {
                id: &op.id,
                belief: b,
                effect: &op.effect,
                weight: op.weight,
                at: op.at,
            });
        }
    }
    let now = now_ms();
    tx.run(
        statement(include_str!("../../cypher/operations_create.cypher"))
            .param("session_id", session_id)
            .param("project", project)
            .param("now", now)
            .param("rows", param(&rows)?),
    )
    .await?;
    // Link lists are small relative to rows; each statement is skipped when empty.
    if !links.is_empty() {
        tx.run(
            statement(include_str!("../../cypher/operations_link_follows.cypher"))
                .param("links", param(&links)?),
        )
        .await?;
    }
    if !triggers.is_empty() {
        tx.run(
            statement(include_str!(
                "../../cypher/operations_link_triggered.cypher"
            ))
            .param("project", project)
            .param("links", param(&triggers)?),
        )
        .await?;
    }
    if !touches.is_empty() {
        tx.run(
            statement(include_str!("../../cypher/operations_touch_files.cypher"))
                .param("project", project)
                .param("touches", param(&touches)?),
        )
        .await?;
    }
    if !informs.is_empty() {
        tx.run(
            statement(include_str!("../../cypher/operations_informs.cypher"))
                .param("project", project)
                .param("informs", param(&informs)?),
        )
        .await?;
    }
    let last_seq = tail.last_seq + fresh.len() as i64;
    tx.run(
        statement(include_str!("../../cypher/operations_session_tail.cypher"))
            .param("session_id", session_id)
            .param("last_seq", last_seq)
            .param("last_op_id", prev)
            .param("added", fresh.len() as i64)
            .param("tokens", tokens),
    )
    .await?;
    out.created = fresh.iter().map(|o| o.id.clone()).collect();
    out.last_seq = last_seq;
    Ok(Some(out))
}

/// Which of `ids` are stored operations of `project`.
pub async fn known(store: &Store, project: &str, ids: &[String]) -> StoreResult<HashSet<String>> {
    #[derive(Deserialize)]
    struct Id {
        id: String,
    }
    if ids.is_empty() {
        return Ok(HashSet::new());
    }
    Ok(store
        .fetch::<Id>(
            statement(include_str!("../../cypher/operations_known.cypher"))
                .param("project", project)
                .param("ids", param(ids)?),
        )
        .await?
        .into_iter()
        .map(|i| i.id)
        .collect())
}

/// Which of `ids` are stored, and in which session.
pub async fn owners(store: &Store, ids: &[String]) -> StoreResult<Vec<(String, String)>> {
    #[derive(Deserialize)]
    struct Owner {
        id: String,
        session_id: String,
    }
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    Ok(store
        .fetch::<Owner>(
            statement(include_str!("../../cypher/operations_existing.cypher"))
                .param("ids", param(ids)?),
        )
        .await?
        .into_iter()
        .map(|o| (o.id, o.session_id))
        .collect())
}
