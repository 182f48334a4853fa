//! Operations: appended to a session's chain with gap-free `seq`, `FOLLOWS` to the previous
//! one, `PART_OF`, `TRIGGERED_BY`, `TOUCHED` files and `INFORMS` beliefs.

use std::collections::{HashMap, HashSet};

use neo4rs::{BoltList, BoltMap, BoltString, BoltType};
use serde::{Deserialize, Serialize};

use super::{now_ms, param, statement, Store, StoreResult, Tx};
use crate::domain::{compounds, operation::NewOperation, turn_text};

/// Operations for one session, in arrival order.
pub struct Group<'a> {
    pub project: &'a str,
    pub session_id: &'a str,
    pub ops: Vec<&'a NewOperation>,
}

/// How `append` learns which operation ids are stored already.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ids {
    /// Looks them up first (one index seek per operation).
    Lookup,
    /// Assumes none is: the unique constraint on `Operation.id` fails the statement if one is
    /// (see [`super::StoreError::is_duplicate`]), and the caller retries with `Lookup`. Capture's
    /// common case (a resend or a replay is rare) then costs no lookup at all.
    AssumeNew,
}

/// What an append did.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Appended {
    /// Operations written now.
    pub created: usize,
    /// Ids already stored (resent, or used by another session); nothing was written for them.
    pub duplicates: usize,
    /// Operations dropped because their session no longer exists (purged).
    pub orphaned: usize,
}

/// An operation's node properties. Rows are built straight into Bolt values (see
/// [`Row::bolt`]): capture's hot path skips the detour through JSON values.
struct Row<'a> {
    id: &'a str,
    project: &'a str,
    session_id: &'a str,
    seq: i64,
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
    created_at: i64,
    /// What the turn index finds it by (`domain::turn_text`); absent when nothing is.
    search_text: Option<String>,
    /// The parts of the identifiers in it (`domain::compounds`); absent when it has none.
    search_parts: Option<String>,
}

impl Row<'_> {
    /// The property map. Absent values and empty lists are left out: an array property costs
    /// a record of its own, and readers take a missing list as empty.
    fn bolt(&self) -> BoltType {
        let mut m = BoltMap::with_capacity(20);
        let mut put = |k: &str, v: BoltType| m.put(BoltString::new(k), v);
        put("id", self.id.into());
        put("project", self.project.into());
        put("session_id", self.session_id.into());
        put("seq", self.seq.into());
        put("type", self.kind.into());
        put("summary", self.summary.into());
        put("status", self.status.into());
        put("at", self.at.into());
        put("tokens", self.tokens.into());
        put("created_at", self.created_at.into());
        for (k, v) in [
            ("target", self.target),
            ("tool", self.tool),
            ("rationale", self.rationale),
            ("role", self.role),
            ("content", self.content),
            ("todos", self.todos),
            ("context", self.context),
            ("triggered_by", self.triggered_by),
            ("search_text", self.search_text.as_deref()),
            ("search_parts", self.search_parts.as_deref()),
        ] {
            if let Some(v) = v {
                put(k, v.into());
            }
        }
        for (k, v) in [
            ("files_read", self.files_read),
            ("files_modified", self.files_modified),
        ] {
            if !v.is_empty() {
                put(k, v.into());
            }
        }
        BoltType::Map(m)
    }
}

/// One session's new operations in order, the operation they follow and the new tail.
struct Chain<'a> {
    session_id: &'a str,
    prev: Option<&'a str>,
    rows: Vec<Row<'a>>,
    last_seq: i64,
    last_op_id: &'a str,
    tokens: i64,
}

impl Chain<'_> {
    fn bolt(&self) -> BoltType {
        let mut m = BoltMap::with_capacity(6);
        m.put("session_id".into(), self.session_id.into());
        m.put("prev".into(), self.prev.into());
        m.put(
            "rows".into(),
            BoltType::List(BoltList {
                value: self.rows.iter().map(Row::bolt).collect(),
            }),
        );
        m.put("last_seq".into(), self.last_seq.into());
        m.put("last_op_id".into(), self.last_op_id.into());
        m.put("tokens".into(), self.tokens.into());
        BoltType::Map(m)
    }
}

#[derive(Serialize)]
struct Trigger<'a> {
    id: &'a str,
    target: &'a str,
}

#[derive(Serialize)]
struct Touch<'a> {
    id: &'a str,
    project: &'a str,
    path: &'a str,
    mode: &'static str,
    at: i64,
}

#[derive(Serialize)]
struct Informs<'a> {
    id: &'a str,
    project: &'a str,
    belief: &'a str,
    effect: &'a str,
    weight: f64,
    at: i64,
}

/// An operation that may have launched a child session (a Task/Agent tool call).
#[derive(Serialize)]
struct Spawn<'a> {
    id: &'a str,
    project: &'a str,
}

/// Tools whose call launches a subagent: a child session names such an operation in
/// `spawned_by`.
pub const LAUNCHING_TOOLS: [&str; 2] = ["Task", "Agent"];

#[derive(Serialize)]
struct Lock<'a> {
    id: &'a str,
    project: &'a str,
    /// The group's earliest and latest operation.
    first: i64,
    at: i64,
}

/// Appends each group to its session's chain inside `tx`, in one or two reads and one write
/// however many sessions there are. With [`Ids::Lookup`], ids already stored are skipped, so
/// replaying a batch writes nothing twice; groups of sessions that no longer exist are dropped
/// and counted.
pub async fn append(tx: &mut Tx, groups: &[Group<'_>], known: Ids) -> StoreResult<Appended> {
    #[derive(Deserialize)]
    struct TailRow {
        id: String,
        last_seq: i64,
        last_op_id: Option<String>,
    }
    #[derive(Deserialize)]
    struct Existing {
        id: String,
    }
    let locks: Vec<Lock> = groups
        .iter()
        .map(|g| Lock {
            id: g.session_id,
            project: g.project,
            first: g.ops.iter().map(|o| o.at).min().unwrap_or_else(now_ms),
            at: g.ops.iter().map(|o| o.at).max().unwrap_or_else(now_ms),
        })
        .collect();
    let tails: HashMap<String, (i64, Option<String>)> = tx
        .fetch::<TailRow>(
            statement(include_str!("../../cypher/operations/lock_sessions.cypher"))
                .param("sessions", param(&locks)?),
        )
        .await?
        .into_iter()
        .map(|t| (t.id, (t.last_seq, t.last_op_id)))
        .collect();
    let mut seen: HashSet<&str> = HashSet::new();
    if known == Ids::Lookup {
        let ids: HashSet<&str> = groups
            .iter()
            .flat_map(|g| g.ops.iter().map(|o| o.id.as_str()))
            .collect();
        seen = tx
            .fetch::<Existing>(
                statement(include_str!("../../cypher/operations/existing.cypher"))
                    .param("ids", param(&ids)?),
            )
            .await?
            .into_iter()
            .filter_map(|e| ids.get(e.id.as_str()).copied())
            .collect();
    }

    let now = now_ms();
    let mut out = Appended::default();
    let (mut chains, mut triggers, mut touches, mut informs, mut spawns) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for g in groups {
        let Some((last_seq, last_op_id)) = tails.get(g.session_id) else {
            out.orphaned += g.ops.len();
            continue;
        };
        let mut seq = *last_seq;
        let mut tokens = 0i64;
        let mut rows = Vec::with_capacity(g.ops.len());
        for &op in &g.ops {
            debug_assert!(op.tokens.is_some(), "the writer counts tokens first");
            let op_tokens = op.tokens.unwrap_or_default();
            if !seen.insert(op.id.as_str()) {
                out.duplicates += 1;
                continue;
            }
            seq += 1;
            let search_text = turn_text::operation(&turn_text::OperationText {
                kind: op.kind.as_str(),
                role: op.role.as_deref(),
                summary: &op.summary,
                content: op.content.as_deref(),
                target: op.target.as_deref(),
                tool: op.tool.as_deref(),
                rationale: op.rationale.as_deref(),
                context: op.context.as_deref(),
            });
            rows.push(Row {
                id: &op.id,
                project: g.project,
                session_id: g.session_id,
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
                tokens: op_tokens,
                triggered_by: op.triggered_by.as_deref(),
                created_at: now,
                search_parts: search_text.as_deref().and_then(compounds::parts),
                search_text,
            });
            tokens += op_tokens;
            if let Some(t) = op.triggered_by.as_deref() {
                triggers.push(Trigger {
                    id: &op.id,
                    target: t,
                });
            }
            let project = g.project;
            touches.extend(op.files_read.iter().map(|path| Touch {
                id: &op.id,
                project,
                path,
                mode: "read",
                at: op.at,
            }));
            touches.extend(op.files_modified.iter().map(|path| Touch {
                id: &op.id,
                project,
                path,
                mode: "write",
                at: op.at,
            }));
            if op
                .tool
                .as_deref()
                .is_some_and(|t| LAUNCHING_TOOLS.contains(&t))
            {
                spawns.push(Spawn {
                    id: &op.id,
                    project,
                });
            }
            if let Some(b) = op.informs_belief.as_deref() {
                informs.push(Informs {
                    id: &op.id,
                    project,
                    belief: b,
                    effect: &op.effect,
                    weight: op.weight,
                    at: op.at,
                });
            }
        }
        if let Some(last) = rows.last() {
            out.created += rows.len();
            chains.push(Chain {
                session_id: g.session_id,
                prev: last_op_id.as_deref(),
                last_seq: seq,
                last_op_id: last.id,
                tokens,
                rows,
            });
        }
    }
    if chains.is_empty() {
        return Ok(out);
    }
    // Concurrent writers lock shared `File` nodes in one global order, so they cannot
    // deadlock on them.
    // Each operation is new here, so its TOUCHED edges are created, once per path and mode.
    touches
        .sort_by(|a, b| (a.project, a.path, a.id, a.mode).cmp(&(b.project, b.path, b.id, b.mode)));
    touches.dedup_by(|a, b| (a.project, a.path, a.id, a.mode) == (b.project, b.path, b.id, b.mode));
    tx.run(
        statement(include_str!("../../cypher/operations/write.cypher"))
            .param(
                "chains",
                BoltType::List(BoltList {
                    value: chains.iter().map(Chain::bolt).collect(),
                }),
            )
            .param("triggers", param(&triggers)?)
            .param("touches", param(&touches)?)
            .param("informs", param(&informs)?)
            .param("spawns", param(&spawns)?),
    )
    .await?;
    Ok(out)
}

/// Which of `ids` are stored operations of `project`.
pub async fn known(store: &Store, project: &str, ids: &[String]) -> StoreResult<HashSet<String>> {
    super::known_ids(
        store,
        include_str!("../../cypher/operations/known.cypher"),
        project,
        ids,
    )
    .await
}

/// A stored `todo` operation: its tool and its todos as JSON.
#[derive(Debug, Default, Deserialize)]
pub struct TodoOp {
    pub tool: Option<String>,
    pub todos: Option<String>,
}

/// An operation as reconstructed.
#[derive(Clone, Debug, Default, Serialize, Deserialize, poem_openapi::Object)]
pub struct OperationView {
    pub id: String,
    pub seq: i64,
    #[oai(rename = "type")]
    #[serde(rename = "type")]
    pub kind: String,
    pub target: Option<String>,
    pub summary: String,
    pub tool: Option<String>,
    pub files_read: Vec<String>,
    pub files_modified: Vec<String>,
    pub role: Option<String>,
    pub content: Option<String>,
    /// The todo list as JSON text, for `todo` operations.
    pub todos: Option<String>,
    pub status: Option<String>,
    /// Epoch milliseconds.
    pub at: i64,
    /// Tokens of the operation's one-line rendering in the server's encoding.
    pub tokens: i64,
    /// The decision a `decision` operation records.
    pub decision_id: Option<String>,
    /// The session, when a read across sessions needs it (not part of the answer).
    #[oai(skip)]
    #[serde(default, skip_serializing)]
    pub session_id: String,
    /// A tool call's free-form context as stored (JSON text), when a read needs what it
    /// answered (not part of the answer).
    #[oai(skip)]
    #[serde(default, skip_serializing)]
    pub context: Option<String>,
}

/// A session's operations with seq above `after` (0: all), in seq order.
pub async fn after(
    store: &Store,
    project: &str,
    session_id: &str,
    after: i64,
) -> StoreResult<Vec<OperationView>> {
    store
        .read()
        .fetch(
            statement(include_str!("../../cypher/operations/after.cypher"))
                .param("project", project)
                .param("session_id", session_id)
                .param("after", after),
        )
        .await
}

/// A `(session, seq)` place as a statement's `$keys` hold it.
#[derive(Serialize)]
struct Place<'a> {
    session_id: &'a str,
    seq: i64,
}

/// `cypher` with `$project` and `places` (`(session, seq)`) as its `$keys`; `None` for no
/// places.
fn at_places(
    cypher: &'static str,
    project: &str,
    places: &[(String, i64)],
) -> StoreResult<Option<neo4rs::Query>> {
    if places.is_empty() {
        return Ok(None);
    }
    let keys: Vec<Place<'_>> = places
        .iter()
        .map(|(s, seq)| Place {
            session_id: s,
            seq: *seq,
        })
        .collect();
    Ok(Some(
        statement(cypher)
            .param("project", project)
            .param("keys", param(&keys)?),
    ))
}

/// The operations at these `(session, seq)` places, each with its session.
pub async fn at(
    store: &Store,
    project: &str,
    places: &[(String, i64)],
) -> StoreResult<Vec<OperationView>> {
    let cypher = include_str!("../../cypher/operations/at.cypher");
    match at_places(cypher, project, places)? {
        Some(q) => store.read().fetch(q).await,
        None => Ok(Vec::new()),
    }
}

/// The operations after a place in a session ([`following`]): each one's seq, type and role,
/// in seq order.
#[derive(Debug, Deserialize)]
pub struct Following {
    pub session_id: String,
    pub seq: i64,
    pub seqs: Vec<i64>,
    pub kinds: Vec<String>,
    pub roles: Vec<String>,
}

/// What follows each of `places` (`(session, seq)`) within `window` places.
pub async fn following(
    store: &Store,
    project: &str,
    places: &[(String, i64)],
    window: i64,
) -> StoreResult<Vec<Following>> {
    let cypher = include_str!("../../cypher/operations/following.cypher");
    match at_places(cypher, project, places)? {
        Some(q) => store.read().fetch(q.param("window", window)).await,
        None => Ok(Vec::new()),
    }
}

/// One session's page of history: its operations with seq below `before`, newest first.
#[derive(Serialize)]
pub struct Page<'a> {
    pub id: &'a str,
    pub before: i64,
}

/// The pages' operations, at most `limit` per session, each with its session.
pub async fn pages(
    store: &Store,
    project: &str,
    pages: &[Page<'_>],
    limit: usize,
) -> StoreResult<Vec<OperationView>> {
    store
        .read()
        .fetch(
            statement(include_str!("../../cypher/operations/pages.cypher"))
                .param("project", project)
                .param("limit", limit as i64)
                .param("pages", param(&pages)?),
        )
        .await
}

/// A conversation turn as the sliding window reads it.
#[derive(Deserialize)]
pub struct WindowTurn {
    pub seq: i64,
    pub role: Option<String>,
    pub content: Option<String>,
    pub summary: String,
    /// Stored tokens of its line.
    pub tokens: i64,
    /// The session's turns in all.
    pub total: i64,
}

/// A session's conversation turns, newest first, at most `limit`.
pub async fn window(
    store: &Store,
    project: &str,
    session_id: &str,
    limit: usize,
) -> StoreResult<Vec<WindowTurn>> {
    store
        .read()
        .fetch(
            statement(include_str!("../../cypher/operations/window.cypher"))
                .param("project", project)
                .param("session_id", session_id)
                .param("limit", limit as i64),
        )
        .await
}

/// A file the sessions touched: how (the latest mode), in which sessions, when last.
#[derive(Debug, Deserialize, PartialEq)]
pub struct FileRow {
    pub path: String,
    pub mode: Option<String>,
    pub sessions: Vec<String>,
    pub at: i64,
}

/// The files `sessions` touched, most recently touched first, at most `limit`.
pub async fn files_of(
    store: &Store,
    project: &str,
    sessions: &[&str],
    limit: usize,
) -> StoreResult<Vec<FileRow>> {
    store
        .read()
        .fetch(
            statement(include_str!("../../cypher/operations/files_of.cypher"))
                .param("project", project)
                .param("sessions", param(&sessions)?)
                .param("limit", limit as i64),
        )
        .await
}

/// A file written in several of a set of sessions.
#[derive(Clone, Debug, Serialize, Deserialize, poem_openapi::Object)]
pub struct HotFile {
    pub path: String,
    /// Related sessions that wrote it.
    pub sessions: i64,
}

/// The files written in at least `min_sessions` of `sessions`.
pub async fn written_in_several(
    store: &Store,
    project: &str,
    sessions: &[&str],
    min_sessions: i64,
) -> StoreResult<Vec<HotFile>> {
    if sessions.is_empty() {
        return Ok(Vec::new());
    }
    store
        .read()
        .fetch(
            statement(include_str!(
                "../../cypher/operations/written_in_several.cypher"
            ))
            .param("project", project)
            .param("ids", param(&sessions)?)
            .param("min_sessions", min_sessions),
        )
        .await
}

/// A file one session touched, and whether it wrote it.
#[derive(Deserialize)]
pub struct SessionFile {
    pub path: String,
    pub written: bool,
}

/// The files `session_id` touched.
pub async fn files_of_session(
    store: &Store,
    project: &str,
    session_id: &str,
) -> StoreResult<Vec<SessionFile>> {
    store
        .read()
        .fetch(
            statement(include_str!(
                "../../cypher/operations/files_of_session.cypher"
            ))
            .param("project", project)
            .param("session_id", session_id),
        )
        .await
}
