//! Turns: the reads behind turn-level search (BM25 over `turn_search`, nearest operations by
//! embedding) and the turn indexer's work queue (sessions with operations it has not processed,
//! their search texts and vectors, how far behind it is).

use neo4rs::{BoltList, BoltNull, BoltType, Query};
use serde::{Deserialize, Serialize};

use super::{now_ms, param, rows_with, rows_with_bytes, statement, SessionKey, Store, StoreResult};
use crate::domain::turn_text;
use crate::embed::signature;

/// What a session's turn cursor records it was processed with: the model and this index's
/// way of cutting texts into passages (`domain::passages`), so sessions processed before
/// passages were kept are queued again on upgrade; empty without a model (texts only).
pub fn cursor_model(model: &str) -> String {
    if model.is_empty() {
        String::new()
    } else {
        format!("{model}{PASSAGES_SCHEME}")
    }
}

/// The suffix [`cursor_model`] adds to a model's name.
pub const PASSAGES_SCHEME: &str = " +passages";

/// Which vectors a nearest list compares: the operations' own, or their passages' (each
/// operation once, scored by its best passage).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Vectors {
    Operations,
    Passages,
}

/// What to keep of a ranked list.
#[derive(Clone, Copy, Debug)]
pub struct Filter<'a> {
    pub project: &'a str,
    pub types: Option<&'a [String]>,
    pub sessions: Option<&'a [String]>,
    /// Leave out this session's turns and its subagents' (`<session>:agent-…`).
    pub exclude_session: Option<&'a str>,
}

/// Whether `session_id` is `exclude` or one of its subagents' sessions (`<exclude>:…`), as the
/// ranked lists' Cypher reads `$exclude`.
pub fn left_out(exclude: Option<&str>, session_id: &str) -> bool {
    exclude.is_some_and(|x| {
        session_id
            .strip_prefix(x)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(':'))
    })
}

impl Filter<'_> {
    fn apply(&self, q: Query) -> StoreResult<Query> {
        Ok(q.param("project", self.project)
            .param("types", param(&self.types)?)
            .param("sessions", param(&self.sessions)?)
            .param("exclude", self.exclude_session))
    }
}

/// One turn of a ranked list. `id` is the operation's (or memory's) id; a session summary is
/// `summary:<session id>`.
#[derive(Clone, Debug, Deserialize)]
pub struct TurnRow {
    pub id: String,
    pub session_id: Option<String>,
    pub seq: i64,
    pub kind: Option<String>,
    pub role: Option<String>,
    pub text: Option<String>,
    pub at: i64,
    /// BM25, or (1 + cosine) / 2.
    pub score: f64,
    /// The model asked for made its vector.
    #[serde(default)]
    pub vectored: bool,
    /// The signature of that vector (`embed::signature`), when one was stored with it.
    #[serde(default, with = "serde_bytes")]
    pub sig: Option<Vec<u8>>,
}

/// BM25 over turns: the project's first `k` among the index's best `wide` for `lucene`, the
/// escaped query (narrowed to the project, or not when the project is nearly the whole index);
/// with the signatures `model` made.
pub async fn fulltext(
    store: &Store,
    f: &Filter<'_>,
    model: Option<&str>,
    lucene: &str,
    k: usize,
    wide: usize,
) -> StoreResult<Vec<TurnRow>> {
    let q = statement(include_str!("../../cypher/turns/fulltext.cypher"))
        .param("query", lucene)
        .param("model", model)
        .param("k", k as i64)
        .param("wide", wide.max(k) as i64);
    store.read().fetch(f.apply(q)?).await
}

/// The nearest operations embedded by `model` (by their own vectors or their passages'):
/// approximate over the shared index (asking it for `wide` candidates), keeping `k`.
pub async fn nearest(
    store: &Store,
    f: &Filter<'_>,
    of: Vectors,
    model: &str,
    vector: &[f32],
    k: usize,
    wide: usize,
) -> StoreResult<Vec<TurnRow>> {
    let text = match of {
        Vectors::Operations => include_str!("../../cypher/turns/vector.cypher"),
        Vectors::Passages => include_str!("../../cypher/turns/passages_vector.cypher"),
    };
    let q = statement(text)
        .param("vector", param(vector)?)
        .param("model", model)
        .param("k", k as i64)
        .param("wide", wide as i64);
    store.read().fetch(f.apply(q)?).await
}

/// The nearest operations embedded by `model` (by their own vectors or their passages'),
/// exactly: within `f.sessions` when given, else within the project; at most `scan` vectors
/// are compared.
pub async fn nearest_exact(
    store: &Store,
    f: &Filter<'_>,
    of: Vectors,
    model: &str,
    vector: &[f32],
    k: usize,
    scan: usize,
) -> StoreResult<Vec<TurnRow>> {
    let text = match (of, f.sessions.is_some()) {
        (Vectors::Operations, true) => include_str!("../../cypher/turns/vector_sessions.cypher"),
        (Vectors::Operations, false) => include_str!("../../cypher/turns/vector_exact.cypher"),
        (Vectors::Passages, true) => {
            include_str!("../../cypher/turns/passages_vector_sessions.cypher")
        }
        (Vectors::Passages, false) => {
            include_str!("../../cypher/turns/passages_vector_exact.cypher")
        }
    };
    let q = statement(text)
        .param("vector", param(vector)?)
        .param("model", model)
        .param("k", k as i64)
        .param("scan", scan as i64);
    store.read().fetch(f.apply(q)?).await
}

/// One vector as held in memory (`recall::held_vectors`): an operation's own (or, for a
/// passage, its operation's id) with its signature, or the vector itself when it was stored
/// before signatures were kept.
#[derive(Debug, Deserialize)]
pub struct HeldRow {
    pub id: String,
    #[serde(default)]
    pub session_id: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default, with = "serde_bytes")]
    pub sig: Option<Vec<u8>>,
    #[serde(default)]
    pub vector: Option<Vec<f32>>,
    /// A passage's place among its operation's passages.
    #[serde(default)]
    pub n: Option<i64>,
}

#[derive(Deserialize)]
struct HeldRows {
    fits: bool,
    rows: Vec<HeldRow>,
}

/// The vectors `model` made for `project`'s operations (`of`: their own, or their passages',
/// each with its operation's id), to hold in memory; `None` when the project has more than
/// `scan` of them.
pub async fn held(
    store: &Store,
    of: Vectors,
    project: &str,
    model: &str,
    scan: usize,
) -> StoreResult<Option<Vec<HeldRow>>> {
    let text = match of {
        Vectors::Operations => include_str!("../../cypher/turns/held_operations.cypher"),
        Vectors::Passages => include_str!("../../cypher/turns/held_passages.cypher"),
    };
    let rows: Vec<HeldRows> = store
        .read()
        .fetch(
            statement(text)
                .param("project", project)
                .param("model", model)
                .param("scan", scan as i64),
        )
        .await?;
    Ok(rows.into_iter().next().filter(|r| r.fits).map(|r| r.rows))
}

/// Stores the signatures `sigs` of passages (operation id, place) that `model` made before
/// passages kept signatures.
pub async fn sign_passages(
    store: &Store,
    model: &str,
    places: &[(&str, i64)],
    sigs: Vec<Vec<u8>>,
) -> StoreResult<()> {
    #[derive(Serialize)]
    struct Place<'a> {
        operation_id: &'a str,
        n: i64,
    }
    let rows: Vec<Place> = places
        .iter()
        .map(|&(operation_id, n)| Place { operation_id, n })
        .collect();
    store
        .run(
            statement(include_str!("../../cypher/turns/passages_sign.cypher"))
                .param(
                    "rows",
                    rows_with_bytes(&rows, "sig", sigs.into_iter().map(Some))?,
                )
                .param("model", model),
        )
        .await
}

/// A row read by its id ([`rows_by_id`]).
#[derive(Debug, Deserialize)]
pub struct RowById {
    #[serde(flatten)]
    pub row: TurnRow,
    /// Whether it has passages `model` made.
    pub passaged: bool,
}

/// The rows of `project`'s operations `ids` still embedded by `model`, scored 0 (in no order).
pub async fn rows_by_id(
    store: &Store,
    project: &str,
    model: &str,
    ids: &[&str],
) -> StoreResult<Vec<RowById>> {
    store
        .read()
        .fetch(
            statement(include_str!("../../cypher/turns/rows_by_id.cypher"))
                .param("ids", param(ids)?)
                .param("project", project)
                .param("model", model),
        )
        .await
}

/// The vectors `model` made for some of `project`'s operations.
pub async fn embeddings(
    store: &Store,
    project: &str,
    model: &str,
    ids: &[&str],
) -> StoreResult<Vec<(String, Vec<f32>)>> {
    #[derive(Deserialize)]
    struct Row {
        id: String,
        vector: Vec<f32>,
    }
    let rows: Vec<Row> = store
        .read()
        .fetch(
            statement(include_str!("../../cypher/turns/embeddings.cypher"))
                .param("ids", param(ids)?)
                .param("project", project)
                .param("model", model),
        )
        .await?;
    Ok(rows.into_iter().map(|r| (r.id, r.vector)).collect())
}

/// Operations of `project` the turn indexer has not processed with `model` yet.
pub async fn pending_in_project(store: &Store, project: &str, model: &str) -> StoreResult<i64> {
    #[derive(Deserialize)]
    struct Row {
        pending: i64,
    }
    Ok(store
        .fetch_one::<Row>(
            statement(include_str!("../../cypher/turns/pending_project.cypher"))
                .param("project", project)
                .param("model", cursor_model(model)),
        )
        .await?
        .map_or(0, |r| r.pending))
}

/// The stored fields an operation's search text is made of (a memory's kind and content).
#[derive(Clone, Debug, Default, Deserialize)]
pub struct TextFields {
    /// An operation's type, a memory's kind.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub role: Option<String>,
    pub summary: Option<String>,
    pub content: Option<String>,
    pub target: Option<String>,
    pub tool: Option<String>,
    pub rationale: Option<String>,
    /// The free-form context as stored (JSON text): a tool call's outcome is in it.
    pub context: Option<String>,
}

impl TextFields {
    /// The search text an operation with these fields has today.
    pub fn operation_text(&self) -> Option<String> {
        turn_text::operation(&turn_text::OperationText {
            kind: self.kind.as_deref().unwrap_or_default(),
            role: self.role.as_deref(),
            summary: self.summary.as_deref().unwrap_or_default(),
            content: self.content.as_deref(),
            target: self.target.as_deref(),
            tool: self.tool.as_deref(),
            rationale: self.rationale.as_deref(),
            context: self.context.as_deref(),
        })
    }
}

/// An operation as the turn indexer reads it.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct WorkOp {
    pub id: String,
    pub seq: i64,
    #[serde(flatten)]
    pub fields: TextFields,
    pub search_text: Option<String>,
    pub embedding_model: Option<String>,
    /// The model that embedded its passages (set also when it has none).
    pub passages_model: Option<String>,
}

/// A session with operations the turn indexer has not processed: those after `after`.
#[derive(Clone, Debug, Deserialize)]
pub struct WorkSession {
    pub id: String,
    pub project: String,
    pub after: i64,
    pub last_seq: i64,
    /// How often its cursor was reset by a text made whole again (`texts_rewrite.cypher`);
    /// 0 where a statement does not say.
    #[serde(default)]
    pub resets: i64,
    pub ops: Vec<WorkOp>,
}

impl WorkSession {
    pub fn key(&self) -> SessionKey<'_> {
        SessionKey {
            id: &self.id,
            project: &self.project,
        }
    }
}

/// Up to `sessions` pending sessions, each with up to `per_session` operations; with a model,
/// none that another holder than `holder` has claimed ([`super::sessions::claim_for_index`]).
pub async fn work(
    store: &Store,
    model: &str,
    holder: &str,
    sessions: usize,
    per_session: usize,
) -> StoreResult<Vec<WorkSession>> {
    store
        .fetch(
            statement(queued(
                model,
                concat!(
                    include_str!("../../cypher/turns/queue_vectors.cypher"),
                    include_str!("../../cypher/turns/work.cypher")
                ),
                concat!(
                    include_str!("../../cypher/turns/queue_texts.cypher"),
                    include_str!("../../cypher/turns/work.cypher")
                ),
            ))
            .param("model", cursor_model(model))
            .param("holder", holder)
            .param("sessions", sessions as i64)
            .param("per_session", per_session as i64)
            .param("now", now_ms()),
        )
        .await
}

/// What the indexer stores for one operation: a search text where it had none, a vector.
#[derive(Debug, Serialize)]
pub struct TurnWrite {
    pub id: String,
    pub text: Option<String>,
    /// The parts of the identifiers in `text` (`domain::compounds`).
    pub parts: Option<String>,
    pub vector: Option<Vec<f32>>,
    /// Its session's resets as the pass read them: a reset meanwhile stores nothing.
    pub resets: i64,
}

/// Stores search texts and vectors (recording `model` and `dim` with each vector).
pub async fn store_turns(
    store: &Store,
    model: &str,
    dim: usize,
    rows: &[TurnWrite],
) -> StoreResult<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let sigs = rows
        .iter()
        .map(|r| r.vector.as_deref().and_then(signature::of));
    store
        .run(
            statement(include_str!("../../cypher/turns/store.cypher"))
                .param("rows", rows_with_bytes(rows, "sig", sigs)?)
                .param("model", model)
                .param("dim", dim as i64),
        )
        .await
}

/// An operation's passages as the indexer made them: one vector per passage (none when its
/// text is one passage).
#[derive(Debug, Serialize)]
pub struct PassageWrite {
    pub id: String,
    pub vectors: Vec<Vec<f32>>,
    /// Its session's resets as the pass read them: a reset meanwhile stores nothing.
    pub resets: i64,
}

/// Replaces the operations' passages with these (recording `model` and `dim`).
pub async fn store_passages(
    store: &Store,
    model: &str,
    dim: usize,
    rows: &[PassageWrite],
) -> StoreResult<()> {
    if rows.is_empty() {
        return Ok(());
    }
    // Each passage's signature beside its vector (`embed::signature`).
    let sigs = rows.iter().map(|r| {
        BoltType::List(BoltList {
            value: r
                .vectors
                .iter()
                .map(|v| signature::of(v).map_or(BoltType::Null(BoltNull), BoltType::from))
                .collect(),
        })
    });
    store
        .run(
            statement(include_str!("../../cypher/turns/passages_store.cypher"))
                .param("rows", rows_with(rows, "sigs", sigs)?)
                .param("model", model)
                .param("dim", dim as i64),
        )
        .await
}

/// A session's turn cursor: processed up to `seq`.
#[derive(Debug, Serialize)]
pub struct Cursor<'a> {
    pub id: &'a str,
    pub project: &'a str,
    /// Where the pass read the cursor (`after` of its work).
    pub from: i64,
    pub seq: i64,
    /// The session's resets as the pass read them.
    pub resets: i64,
}

/// Moves the sessions' cursors (processed with `model`), each only from where its pass read
/// it: a cursor reset meanwhile (another model's vectors found, a session queued again) is
/// left for the next pass. `holder`'s claims on them end.
pub async fn advance(
    store: &Store,
    model: &str,
    holder: &str,
    rows: &[Cursor<'_>],
) -> StoreResult<()> {
    if rows.is_empty() {
        return Ok(());
    }
    store
        .run(
            statement(include_str!("../../cypher/turns/advance.cypher"))
                .param("rows", param(rows)?)
                .param("model", cursor_model(model))
                .param("holder", holder),
        )
        .await
}

/// Embedding these sessions' operations failed: they are retried after a back-off, and
/// `holder`'s claims on them end.
pub async fn failed(
    store: &Store,
    holder: &str,
    rows: &[Cursor<'_>],
    base_delay_ms: i64,
) -> StoreResult<()> {
    store
        .run(
            statement(include_str!("../../cypher/turns/failed.cypher"))
                .param("rows", param(rows)?)
                .param("holder", holder)
                .param("now", now_ms())
                .param("base_delay_ms", base_delay_ms),
        )
        .await
}

/// Operations not processed with `model` yet, in all projects.
pub async fn lag(store: &Store, model: &str) -> StoreResult<i64> {
    #[derive(Deserialize)]
    struct Row {
        pending: i64,
    }
    Ok(store
        .fetch_one::<Row>(
            statement(queued(
                model,
                concat!(
                    include_str!("../../cypher/turns/queue_vectors.cypher"),
                    include_str!("../../cypher/turns/lag.cypher")
                ),
                concat!(
                    include_str!("../../cypher/turns/queue_texts.cypher"),
                    include_str!("../../cypher/turns/lag.cypher")
                ),
            ))
            .param("model", cursor_model(model)),
        )
        .await?
        .map_or(0, |r| r.pending))
}

/// Queues every session not processed with `model`, a page at a time; returns how many
/// sessions and operations, and the other models that had embedded them.
pub async fn backfill(store: &Store, model: &str) -> StoreResult<super::sessions::Pass> {
    super::sessions::in_pages(store, || {
        statement(include_str!("../../cypher/turns/backfill.cypher"))
            .param("model", cursor_model(model))
    })
    .await
}

/// The statement over the sessions a pass of `model` works through: `vectors` with a model,
/// `texts` without one (whose queue empties once the texts are made; the vectors' queue
/// empties only with vectors).
fn queued(model: &str, vectors: &'static str, texts: &'static str) -> &'static str {
    if model.is_empty() {
        texts
    } else {
        vectors
    }
}

/// A memory or a closed session written before turn search, without a search text.
#[derive(Debug, Deserialize)]
pub struct MissingText {
    /// `memory` or `session`.
    pub label: String,
    pub id: String,
    pub fields: TextFields,
    pub next_steps: Vec<String>,
}

/// Up to `limit` memories and up to `limit` sessions without a search text.
pub async fn missing_texts(store: &Store, limit: usize) -> StoreResult<Vec<MissingText>> {
    store
        .fetch(
            statement(include_str!("../../cypher/turns/texts_missing.cypher"))
                .param("limit", limit as i64),
        )
        .await
}

/// A backfilled search text (empty when there is nothing worth finding).
#[derive(Debug, Serialize)]
pub struct TextWrite<'a> {
    pub label: &'a str,
    pub id: &'a str,
    pub text: String,
    /// The parts of the identifiers in `text` (`domain::compounds`).
    pub parts: Option<String>,
}

pub async fn store_texts(store: &Store, rows: &[TextWrite<'_>]) -> StoreResult<()> {
    store
        .run(
            statement(include_str!("../../cypher/turns/texts_store.cypher"))
                .param("rows", param(rows)?),
        )
        .await
}

/// A vector stored without a signature.
#[derive(Debug, Deserialize)]
pub struct Unsigned {
    pub id: String,
    pub model: Option<String>,
    pub vector: Vec<f32>,
}

/// One page of operations by id, after `after`: how many, the last id (none past the last
/// operation), and their vectors stored without a signature.
#[derive(Debug, Default, Deserialize)]
pub struct UnsignedPage {
    pub last: Option<String>,
    pub scanned: i64,
    pub unsigned: Vec<Unsigned>,
}

pub async fn unsigned(store: &Store, after: &str, page: usize) -> StoreResult<UnsignedPage> {
    store
        .fetch_one(
            statement(include_str!("../../cypher/turns/unsigned.cypher"))
                .param("after", after)
                .param("page", page as i64),
        )
        .await
        .map(Option::unwrap_or_default)
}

/// Whether a pass over every operation has signed the vectors stored without a signature.
pub async fn signed(store: &Store) -> StoreResult<bool> {
    #[derive(Deserialize)]
    struct Row {
        done: bool,
    }
    Ok(store
        .fetch_one::<Row>(statement(include_str!(
            "../../cypher/turns/signed_get.cypher"
        )))
        .await?
        .is_some_and(|r| r.done))
}

/// Records that a pass over every operation has signed them.
pub async fn set_signed(store: &Store) -> StoreResult<()> {
    store
        .run(statement(include_str!(
            "../../cypher/turns/signed_set.cypher"
        )))
        .await
}

/// Gives these vectors, stored without one, their signature.
pub async fn sign(store: &Store, rows: &[Unsigned]) -> StoreResult<usize> {
    #[derive(Serialize)]
    struct Signed<'a> {
        id: &'a str,
        model: Option<&'a str>,
    }
    let (rows, sigs): (Vec<Signed>, Vec<Option<Vec<u8>>>) = rows
        .iter()
        .filter_map(|r| {
            let sig = signature::of(&r.vector)?;
            let row = Signed {
                id: &r.id,
                model: r.model.as_deref(),
            };
            Some((row, Some(sig)))
        })
        .unzip();
    if rows.is_empty() {
        return Ok(0);
    }
    store
        .run(
            statement(include_str!("../../cypher/turns/sign.cypher"))
                .param("rows", rows_with_bytes(&rows, "sig", sigs)?),
        )
        .await?;
    Ok(rows.len())
}

/// Nodes whose search text the re-texting pass reads, a label at a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Texted {
    Operation,
    Memory,
    Session,
}

impl Texted {
    /// Every label with a search text, in the order a pass reads them.
    pub const ALL: [Texted; 3] = [Texted::Operation, Texted::Memory, Texted::Session];

    fn statement(self) -> &'static str {
        match self {
            Texted::Operation => include_str!("../../cypher/turns/texts_operations.cypher"),
            Texted::Memory => include_str!("../../cypher/turns/texts_memories.cypher"),
            Texted::Session => include_str!("../../cypher/turns/texts_sessions.cypher"),
        }
    }
}

/// The decision an operation records, as its search text is made of it.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct DecisionText {
    pub subject: Option<String>,
    pub choice: Option<String>,
    pub rationale: Option<String>,
    pub alternatives: Option<Vec<String>>,
}

/// A stored search text and what it is made of.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct StoredText {
    /// `operation`, `memory` or `session`.
    pub label: String,
    pub eid: String,
    pub search_text: String,
    /// The parts of its identifiers as stored (`domain::compounds`).
    #[serde(default)]
    pub search_parts: Option<String>,
    /// Whether the text is long enough to have been cut at the bound of the pass.
    #[serde(default)]
    pub cut: bool,
    #[serde(flatten)]
    pub fields: TextFields,
    pub decision: Option<DecisionText>,
    #[serde(default)]
    pub next_steps: Vec<String>,
}

/// One page of nodes by id: how many, the last id (none past the last), and those whose
/// text may have been cut.
#[derive(Debug, Default, Deserialize)]
pub struct TextPage {
    pub last: Option<String>,
    pub scanned: i64,
    pub rows: Vec<StoredText>,
}

/// A page of `label`'s nodes after id `after`, with what the texts of at least `from`
/// characters are made of (of every text, when `parts` are made again).
pub async fn stored_texts(
    store: &Store,
    label: Texted,
    after: &str,
    page: usize,
    from: usize,
    parts: bool,
) -> StoreResult<TextPage> {
    store
        .fetch_one(
            statement(label.statement())
                .param("after", after)
                .param("page", page as i64)
                .param("from", from as i64)
                .param("parts", parts),
        )
        .await
        .map(Option::unwrap_or_default)
}

/// A search text made again: the node, the text read, the text now.
#[derive(Debug, Serialize)]
pub struct Rewrite<'a> {
    pub eid: &'a str,
    pub was: &'a str,
    pub text: String,
    /// The parts of the identifiers in `text` (`domain::compounds`).
    pub parts: Option<String>,
}

/// Writes texts made again (each only while it holds what was read); operations embedded
/// from their old text are queued to be embedded again.
pub async fn rewrite_texts(store: &Store, rows: &[Rewrite<'_>]) -> StoreResult<()> {
    write_rows(
        store,
        include_str!("../../cypher/turns/texts_rewrite.cypher"),
        rows,
    )
    .await
}

/// The parts of a text read, written alone: the node, the text read, its parts now.
#[derive(Debug, Serialize)]
pub struct Parted<'a> {
    pub eid: &'a str,
    pub was: &'a str,
    pub parts: Option<String>,
}

/// Writes the parts of texts read (each only while it holds what was read).
pub async fn store_parts(store: &Store, rows: &[Parted<'_>]) -> StoreResult<()> {
    write_rows(
        store,
        include_str!("../../cypher/turns/texts_parts.cypher"),
        rows,
    )
    .await
}

/// Runs `text` with `$rows`, unless there are none.
async fn write_rows<T: Serialize>(
    store: &Store,
    text: &'static str,
    rows: &[T],
) -> StoreResult<()> {
    if rows.is_empty() {
        return Ok(());
    }
    store.run(statement(text).param("rows", param(rows)?)).await
}

/// What the last texts pass recorded ([`texts_done`]): the bound texts were made whole at, the
/// form of the identifiers' parts and the form of the texts it stored; `None` before the first.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq)]
pub struct TextsDone {
    pub bound: Option<i64>,
    pub parts: Option<i64>,
    pub form: Option<i64>,
}

pub async fn texts_done(store: &Store) -> StoreResult<TextsDone> {
    Ok(store
        .fetch_one::<TextsDone>(statement(include_str!(
            "../../cypher/turns/texts_bound_get.cypher"
        )))
        .await?
        .unwrap_or_default())
}

/// Records that every text cut at a bound shorter than `done.bound` was made whole again,
/// every text's parts stored in form `done.parts` and every text made in form `done.form`.
pub async fn set_texts_done(store: &Store, done: TextsDone) -> StoreResult<()> {
    store
        .run(
            statement(include_str!("../../cypher/turns/texts_bound_set.cypher"))
                .param("bound", done.bound)
                .param("parts", done.parts)
                .param("form", done.form),
        )
        .await
}

/// One query word whose turns [`term_counts`] counts: the stemmed word, and the escaped
/// Lucene query that finds the project's turns holding it.
#[derive(Debug, Serialize)]
pub struct TermQuery {
    pub word: String,
    pub query: String,
}

/// Ids of `project`'s sessions active between `from_ms` (inclusive) and `to_ms` (exclusive),
/// at most `limit`, those whose activity ended first first.
pub async fn sessions_in_time(
    store: &Store,
    project: &str,
    from_ms: i64,
    to_ms: i64,
    limit: usize,
) -> StoreResult<Vec<String>> {
    #[derive(Deserialize)]
    struct Row {
        id: String,
    }
    let rows: Vec<Row> = store
        .read()
        .fetch(
            statement(include_str!("../../cypher/turns/sessions_in_time.cypher"))
                .param("project", project)
                .param("from", from_ms)
                .param("to", to_ms)
                .param("limit", limit as i64),
        )
        .await?;
    Ok(rows.into_iter().map(|r| r.id).collect())
}

/// How many turns the whole database holds, roughly (operations and session summaries; from
/// Neo4j's counts, without visiting them).
pub async fn all_size(store: &Store) -> StoreResult<usize> {
    count(
        store,
        statement(include_str!("../../cypher/turns/all_size.cypher")),
    )
    .await
}

/// How many turns `project` holds, roughly (operations and session summaries), for
/// project-local BM25 and for choosing between approximate and exact vector search.
pub async fn project_size(store: &Store, project: &str) -> StoreResult<usize> {
    count(
        store,
        statement(include_str!("../../cypher/turns/project_size.cypher")).param("project", project),
    )
    .await
}

/// How many passages `project`'s operations have, counted up to `cap`.
pub async fn passage_count(store: &Store, project: &str, cap: usize) -> StoreResult<usize> {
    count(
        store,
        statement(include_str!("../../cypher/turns/passage_count.cypher"))
            .param("project", project)
            .param("cap", cap as i64),
    )
    .await
}

/// The count `q` answers in its one row's column `n` (none or a negative one: 0).
async fn count(store: &Store, q: Query) -> StoreResult<usize> {
    #[derive(Deserialize)]
    struct Row {
        n: Option<i64>,
    }
    let row: Option<Row> = store.read().fetch_one(q).await?;
    Ok(row.and_then(|r| r.n).unwrap_or(0).max(0) as usize)
}

/// How many of `project`'s turns hold each word (at most `cap` counted), for project-local
/// BM25.
pub async fn term_counts(
    store: &Store,
    project: &str,
    terms: &[TermQuery],
    cap: usize,
) -> StoreResult<Vec<(String, usize)>> {
    #[derive(Deserialize)]
    struct Row {
        word: String,
        df: i64,
    }
    if terms.is_empty() {
        return Ok(Vec::new());
    }
    let rows: Vec<Row> = store
        .read()
        .fetch(
            statement(include_str!("../../cypher/turns/term_counts.cypher"))
                .param("project", project)
                .param("terms", param(terms)?)
                .param("cap", cap as i64),
        )
        .await?;
    Ok(rows
        .into_iter()
        .map(|r| (r.word, r.df.max(0) as usize))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::left_out;

    #[test]
    fn a_session_leaves_out_itself_and_its_subagents_only() {
        assert!(left_out(Some("s1"), "s1"));
        assert!(left_out(Some("s1"), "s1:agent-a7f3"));
        assert!(!left_out(Some("s1"), "s10"));
        assert!(!left_out(Some("s1"), "s10:agent-a7f3"));
        assert!(!left_out(Some("s1"), "other"));
        assert!(!left_out(None, "s1"));
    }
}
