//! The Neo4j store — the one module that runs statements. Every statement the product runs
//! lives in `cypher/<aggregate>/<name>.cypher` (the schema's in `cypher/schema*.cypher`) and
//! is loaded with `include_str!` beside the typed function that runs it, in the file of the
//! same aggregate here; `recall`, `extract`, `capture` and the rest call those functions and
//! never see a statement (a test below keeps it so). Every call is bounded by the configured
//! timeout so a dead server turns into `neo4j_unavailable`, never a hang.
//!
//! Each function chooses once where its statements run. By default on the writer (with a
//! `neo4j://` URI, the cluster's leader for the database): every write, every read that
//! decides a write (a lookup before capture, a lease, a claim, the extraction job's reads)
//! and the checks that must see a change at once (API keys, web UI sign-ins). A function
//! that only answers a request reads through [`Store::read`]: its statements go out in read
//! mode, so a routing driver sends them to a reader (a follower or read replica), and they
//! wait for the bookmarks the request came with ([`causal`]). With `bolt://` both go to the
//! one server; read mode then only forbids writing.

pub mod beliefs;
pub mod causal;
pub mod decisions;
pub mod extraction;
pub mod keys;
pub mod knowledge;
pub mod lease;
pub mod memories;
pub mod nodelay;
pub mod operations;
pub mod purge;
pub mod schema;
pub mod search;
pub mod sessions;
pub mod turns;
pub mod ui_sessions;

use std::{future::Future, time::Duration, time::Instant};

use neo4rs::{BoltType, ConfigBuilder, Graph, Query, Row, Txn};
use serde::{de::DeserializeOwned, Serialize};
use tracing::Instrument;

use crate::config::Neo4jSettings;

/// What can go wrong talking to Neo4j.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("neo4j did not answer within {0:?}")]
    Timeout(Duration),
    #[error(transparent)]
    Neo4j(#[from] neo4rs::Error),
    #[error("could not read a result row: {0}")]
    Decode(String),
    #[error("could not encode a parameter: {0}")]
    Encode(String),
}

impl StoreError {
    /// True when retrying later may succeed (server down, timeout, transient error).
    pub fn is_unavailable(&self) -> bool {
        match self {
            Self::Timeout(_) => true,
            Self::Neo4j(err) => is_unavailable(err),
            Self::Decode(_) | Self::Encode(_) => false,
        }
    }

    /// True when the statement itself was refused and sending it again would fail the same
    /// way: Neo4j named it invalid (syntax, types, a constraint), or a parameter could not be
    /// encoded or a row decoded. Timeouts, lost connections and refused credentials are not
    /// the statement's fault.
    pub fn is_rejection(&self) -> bool {
        use neo4rs::Error as E;
        match self {
            Self::Timeout(_) => false,
            Self::Decode(_) | Self::Encode(_) => true,
            Self::Neo4j(E::Neo4j(e)) => {
                e.code()
                    .strip_prefix("Neo.ClientError.")
                    .is_some_and(|rest| {
                        ["Statement.", "Schema.", "Request."]
                            .iter()
                            .any(|class| rest.starts_with(class))
                    })
            }
            Self::Neo4j(
                E::StringTooLong
                | E::MapTooBig
                | E::BytesTooBig
                | E::ListTooLong
                | E::InvalidInteger(..)
                | E::IntegerOverflow(..)
                | E::ConversionError
                | E::DeserializationError(_),
            ) => true,
            Self::Neo4j(_) => false,
        }
    }

    /// A write that would have stored a second node with a unique key (an operation id
    /// stored already, say).
    pub fn is_duplicate(&self) -> bool {
        matches!(self, Self::Neo4j(neo4rs::Error::Neo4j(e)) if e.code().ends_with("ConstraintValidationFailed"))
    }

    /// Neo4j rolled the statement back for a reason of the moment (a lock conflict, data
    /// changed under a read, a memory pool momentarily full): sent again, it may succeed.
    pub fn is_transient(&self) -> bool {
        matches!(self, Self::Neo4j(neo4rs::Error::Neo4j(e)) if e.code().starts_with("Neo.TransientError."))
    }

    /// Neo4j refused the statement for memory (its transaction memory pool, or the heap).
    pub fn is_out_of_memory(&self) -> bool {
        matches!(self, Self::Neo4j(neo4rs::Error::Neo4j(e)) if e.code().contains("OutOfMemory"))
    }

    /// Neo4j refused the bookmarks a read was to follow (not ones it issued, or a mixture it
    /// cannot combine).
    pub fn is_bad_bookmark(&self) -> bool {
        matches!(self, Self::Neo4j(neo4rs::Error::Neo4j(e)) if e.code().starts_with("Neo.ClientError.Transaction.InvalidBookmark"))
    }

    /// A transaction that lost a lock conflict with another one: retry it at once.
    pub fn is_conflict(&self) -> bool {
        matches!(self, Self::Neo4j(neo4rs::Error::Neo4j(e)) if e.code().ends_with("DeadlockDetected"))
    }
}

pub fn is_unavailable(err: &neo4rs::Error) -> bool {
    use neo4rs::Error as E;
    match err {
        E::IOError { .. }
        | E::ConnectionError
        | E::ConnectionTimedOut
        | E::RequestIgnoredError
        | E::ServerUnavailableError(_)
        | E::RoutingTableError(_)
        | E::RoutingTableRefreshFailed(_)
        | E::IncompleteBoltExchange
        | E::AuthenticationError(_) => true,
        E::Neo4j(e) => {
            e.code().starts_with("Neo.TransientError") || e.code().contains("DatabaseUnavailable")
        }
        _ => false,
    }
}

impl From<StoreError> for crate::error::ApiError {
    fn from(err: StoreError) -> Self {
        if err.is_bad_bookmark() {
            return Self::invalid(
                crate::error::Code::InvalidBookmark,
                causal::FIELD,
                "Neo4j does not know a bookmark of this header; send back the value an answer carried",
            );
        }
        if err.is_unavailable() {
            Self::unavailable(err)
        } else {
            Self::internal(err)
        }
    }
}

pub type StoreResult<T> = Result<T, StoreError>;

/// A connection pool plus the per-query deadline.
#[derive(Clone)]
pub struct Store {
    graph: Graph,
    timeout: Duration,
    nodelay: std::sync::Arc<nodelay::Sweeper>,
}

impl Store {
    /// Builds the pool; no connection is made until the first query, so cairn starts even
    /// when Neo4j is down (readiness says so).
    pub fn connect(settings: &Neo4jSettings) -> StoreResult<Self> {
        let config = ConfigBuilder::default()
            .uri(settings.uri.as_str())
            .user(settings.user.as_str())
            .password(settings.password.0.as_str())
            .max_connections(settings.max_connections)
            // neo4rs bounds every reply by this too, not only the connect: a shorter value
            // would cut a slow statement off before the query deadline (`bounded`) does.
            .connection_timeout(settings.timeout())
            .fetch_size(2_000)
            .build()?;
        Ok(Self {
            graph: Graph::connect(config)?,
            timeout: settings.timeout(),
            nodelay: std::sync::Arc::new(nodelay::Sweeper::for_uri(&settings.uri)),
        })
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    async fn bounded<T>(&self, fut: impl Future<Output = StoreResult<T>>) -> StoreResult<T> {
        let started = Instant::now();
        let out = match tokio::time::timeout(self.timeout, fut).await {
            Ok(out) => out,
            Err(_) => Err(StoreError::Timeout(self.timeout)),
        };
        let elapsed = started.elapsed();
        metrics::histogram!("cairn_neo4j_query_seconds").record(elapsed.as_secs_f64());
        tracing::debug!(
            elapsed_ms = elapsed.as_secs_f64() * 1e3,
            ok = out.is_ok(),
            "statement answered"
        );
        // The statement may have opened a pooled connection.
        self.nodelay.sweep_if_due();
        if out.is_err() {
            metrics::counter!("cairn_neo4j_query_errors_total").increment(1);
        }
        out
    }

    /// Runs a statement on the writer and collects every row. A statement Neo4j rolls back
    /// with a transient error, even while its rows stream, is sent again (see
    /// `again_if_transient`).
    pub fn rows(&self, q: Query) -> impl Future<Output = StoreResult<Vec<Row>>> + Send + '_ {
        self.rows_as(Access::Write, q)
    }

    /// Statements of a function that only reads, sent to a reader (see the module's docs).
    pub fn read(&self) -> Reader<'_> {
        Reader { store: self }
    }

    async fn rows_as(&self, access: Access, q: Query) -> StoreResult<Vec<Row>> {
        let span = statement_span(access.span_name(), &q);
        let q = match access {
            Access::Write => q,
            Access::Read => causal::follow(q),
        };
        self.bounded(again_if_transient(StoreError::is_transient, || {
            let q = q.clone();
            async move {
                // Boxed: the driver's futures are large, and every function of the store
                // (and every `join!` of them) would carry them inline.
                let mut stream = match access {
                    Access::Write => Box::pin(self.graph.execute(q)).await?,
                    Access::Read => Box::pin(self.graph.execute_read(q)).await?,
                };
                let mut rows = Vec::new();
                while let Some(row) = stream.next().await? {
                    rows.push(row);
                }
                if access == Access::Write {
                    // The stream is complete: its summary is at hand, no round trip.
                    record_if_written(&stream.finish().await?);
                }
                Ok(rows)
            }
        }))
        .instrument(span)
        .await
    }

    /// Runs a statement and decodes each row (its columns by name) into `T`.
    pub async fn fetch<T: DeserializeOwned>(&self, q: Query) -> StoreResult<Vec<T>> {
        self.rows(q).await?.iter().map(decode).collect()
    }

    /// Runs a statement and decodes at most one row.
    pub async fn fetch_one<T: DeserializeOwned>(&self, q: Query) -> StoreResult<Option<T>> {
        Ok(self.fetch(q).await?.into_iter().next())
    }

    /// Runs a statement for its effect, sent again after a transient error like [`Self::rows`].
    pub async fn run(&self, q: Query) -> StoreResult<()> {
        let span = statement_span("run", &q);
        self.bounded(again_if_transient(StoreError::is_transient, || {
            let q = q.clone();
            async move {
                record_if_written(&self.graph.run(q).await?);
                Ok(())
            }
        }))
        .instrument(span)
        .await
    }

    /// Opens an explicit transaction; statements in it go through [`Tx`].
    pub async fn begin(&self) -> StoreResult<Tx> {
        let txn = self
            .bounded(async { Ok(self.graph.start_txn().await?) })
            .await?;
        Ok(Tx {
            txn,
            timeout: self.timeout,
        })
    }
}

/// Where a statement runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    /// On the writer.
    Write,
    /// On a reader, in read mode, after the request's bookmarks.
    Read,
}

impl Access {
    fn span_name(self) -> &'static str {
        match self {
            Self::Write => "rows",
            Self::Read => "read",
        }
    }
}

/// The statements of a function that only reads ([`Store::read`]).
pub struct Reader<'a> {
    store: &'a Store,
}

impl Reader<'_> {
    /// Runs a read statement and collects every row (sent again after a transient error).
    pub fn rows(&self, q: Query) -> impl Future<Output = StoreResult<Vec<Row>>> + Send + '_ {
        self.store.rows_as(Access::Read, q)
    }

    /// Runs a read statement and decodes each row into `T`.
    pub async fn fetch<T: DeserializeOwned>(&self, q: Query) -> StoreResult<Vec<T>> {
        self.rows(q).await?.iter().map(decode).collect()
    }

    /// Runs a read statement and decodes at most one row.
    pub async fn fetch_one<T: DeserializeOwned>(&self, q: Query) -> StoreResult<Option<T>> {
        Ok(self.fetch(q).await?.into_iter().next())
    }
}

/// Hands the bookmark of an autocommit statement that wrote to the request it serves.
fn record_if_written(summary: &neo4rs::summary::ResultSummary) {
    use neo4rs::summary::Type;
    if matches!(summary.query_type(), Type::Read) {
        return;
    }
    if let Some(bookmark) = summary.bookmark.as_deref() {
        causal::record(bookmark);
    }
}

/// A `store` span for one statement: `db.statement` is its first line of Cypher (the
/// statement's own text, never its parameters), computed only when the span is recorded.
fn statement_span(op: &'static str, q: &Query) -> tracing::Span {
    let span = tracing::debug_span!("store", db.op = op, db.statement = tracing::field::Empty);
    if !span.is_disabled() {
        let first = q
            .query()
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with("//"))
            .unwrap_or_default();
        span.record("db.statement", first.chars().take(100).collect::<String>());
    }
    span
}

/// Attempts of one autocommit statement while Neo4j answers with transient errors.
const TRANSIENT_ATTEMPTS: u32 = 3;

/// Awaits `attempt()` until it succeeds, fails for good, or has failed
/// [`TRANSIENT_ATTEMPTS`] times with an error `is_transient` accepts, pausing a few jittered
/// milliseconds in between. Safe for an autocommit statement, or a whole transaction run again
/// from its start: Neo4j rolled the failed one back whole. The caller's deadline bounds all
/// attempts together.
async fn again_if_transient<T, E, Fut>(
    is_transient: impl Fn(&E) -> bool,
    mut attempt: impl FnMut() -> Fut,
) -> Result<T, E>
where
    Fut: Future<Output = Result<T, E>>,
{
    let mut tries = 1;
    loop {
        match attempt().await {
            Err(err) if tries < TRANSIENT_ATTEMPTS && is_transient(&err) => {
                metrics::counter!("cairn_neo4j_transient_retries_total").increment(1);
                let pause = 10 * u64::from(tries) + rand::random_range(0..10);
                tries += 1;
                tokio::time::sleep(Duration::from_millis(pause)).await;
            }
            out => return out,
        }
    }
}

/// An explicit transaction with the same per-statement deadline.
pub struct Tx {
    txn: Txn,
    timeout: Duration,
}

impl Tx {
    pub async fn run(&mut self, q: Query) -> StoreResult<()> {
        let timeout = self.timeout;
        let span = statement_span("tx.run", &q);
        let txn = &mut self.txn;
        match tokio::time::timeout(timeout, txn.run(q))
            .instrument(span)
            .await
        {
            Ok(out) => out.map(|_| ()).map_err(Into::into),
            Err(_) => Err(StoreError::Timeout(timeout)),
        }
    }

    pub async fn fetch<T: DeserializeOwned>(&mut self, q: Query) -> StoreResult<Vec<T>> {
        let timeout = self.timeout;
        let span = statement_span("tx.fetch", &q);
        let txn = &mut self.txn;
        let fut = async move {
            let mut stream = txn.execute(q).await?;
            let mut out = Vec::new();
            while let Some(row) = stream.next(txn.handle()).await? {
                out.push(decode(&row)?);
            }
            Ok(out)
        };
        match tokio::time::timeout(timeout, fut).instrument(span).await {
            Ok(out) => out,
            Err(_) => Err(StoreError::Timeout(timeout)),
        }
    }

    /// Commits; returns the transaction's bookmark (also handed to the request it serves).
    pub async fn commit(self) -> StoreResult<Option<String>> {
        let timeout = self.timeout;
        match tokio::time::timeout(timeout, self.txn.commit()).await {
            Ok(Ok(bookmark)) => {
                if let Some(b) = bookmark.as_deref() {
                    causal::record(b);
                }
                Ok(bookmark)
            }
            Ok(Err(err)) => Err(err.into()),
            Err(_) => Err(StoreError::Timeout(timeout)),
        }
    }

    pub async fn rollback(self) -> StoreResult<()> {
        let timeout = self.timeout;
        match tokio::time::timeout(timeout, self.txn.rollback()).await {
            Ok(out) => out.map_err(Into::into),
            Err(_) => Err(StoreError::Timeout(timeout)),
        }
    }
}

/// Runs a "which of `$ids` exist in `$project`" statement (returning an `id` column).
pub async fn known_ids(
    store: &Store,
    text: &'static str,
    project: &str,
    ids: &[String],
) -> StoreResult<std::collections::HashSet<String>> {
    #[derive(serde::Deserialize)]
    struct Id {
        id: String,
    }
    if ids.is_empty() {
        return Ok(Default::default());
    }
    Ok(store
        .fetch::<Id>(
            statement(text)
                .param("project", project)
                .param("ids", param(ids)?),
        )
        .await?
        .into_iter()
        .map(|i| i.id)
        .collect())
}

/// Decodes one row into `T` by column name.
pub fn decode<T: DeserializeOwned>(row: &Row) -> StoreResult<T> {
    row.to::<T>().map_err(|e| StoreError::Decode(e.to_string()))
}

/// A session as statements over several sessions name it (`$rows` of `id` and `project`).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct SessionKey<'a> {
    pub id: &'a str,
    pub project: &'a str,
}

/// Encodes any serialisable value as a Cypher parameter (maps, lists of maps for `UNWIND`).
pub fn param<T: Serialize + ?Sized>(value: &T) -> StoreResult<BoltType> {
    let json = serde_json::to_value(value).map_err(|e| StoreError::Encode(e.to_string()))?;
    BoltType::try_from(json).map_err(|e| StoreError::Encode(e.to_string()))
}

/// Rows for `UNWIND` ([`param`]) with a byte-array column `key`, one value per row (none
/// for null): JSON has no bytes, so [`param`] alone would send each as a list of integers.
pub fn rows_with_bytes<T: Serialize>(
    rows: &[T],
    key: &str,
    bytes: impl IntoIterator<Item = Option<Vec<u8>>>,
) -> StoreResult<BoltType> {
    rows_with(
        rows,
        key,
        bytes
            .into_iter()
            .map(|b| b.map_or(BoltType::Null(neo4rs::BoltNull), BoltType::from)),
    )
}

/// [`rows_with_bytes`] for any Bolt value: a list of byte strings per row, say.
pub fn rows_with<T: Serialize>(
    rows: &[T],
    key: &str,
    values: impl IntoIterator<Item = BoltType>,
) -> StoreResult<BoltType> {
    let mut out = param(rows)?;
    let BoltType::List(list) = &mut out else {
        return Err(StoreError::Encode("rows did not encode as a list".into()));
    };
    for (row, value) in list.value.iter_mut().zip(values) {
        let BoltType::Map(map) = row else {
            return Err(StoreError::Encode("a row did not encode as a map".into()));
        };
        map.put(key.into(), value);
    }
    Ok(out)
}

/// A statement from `cypher/`, ready for parameters.
pub fn statement(text: &'static str) -> Query {
    neo4rs::query(text)
}

/// `$search_text` and `$search_parts`: what a turn is found by, and the parts of the
/// identifiers in it (`domain::compounds`), always written together.
pub fn with_search_text(q: Query, text: Option<String>) -> Query {
    let parts = text.as_deref().and_then(crate::domain::compounds::parts);
    q.param("search_text", text).param("search_parts", parts)
}

/// Milliseconds since the Unix epoch: how cairn stores instants (sortable, index-friendly).
pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_columns_are_bolt_bytes_and_none_is_null() {
        #[derive(Serialize)]
        struct Row {
            id: &'static str,
        }
        let rows = [Row { id: "a" }, Row { id: "b" }];
        let BoltType::List(list) =
            rows_with_bytes(&rows, "sig", [Some(vec![1, 255]), None]).unwrap()
        else {
            panic!("not a list");
        };
        let sig = |i: usize| match &list.value[i] {
            BoltType::Map(m) => m.value.get("sig").cloned(),
            _ => None,
        };
        assert_eq!(sig(0), Some(BoltType::from(vec![1u8, 255])));
        assert!(matches!(sig(1), Some(BoltType::Null(_))));
        assert!(matches!(&list.value[1], BoltType::Map(m) if m.value.len() == 2));
    }

    /// The Rust sources under `dir`, with their paths relative to the crate.
    fn sources(dir: &std::path::Path, out: &mut Vec<(String, String)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                sources(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path
                    .strip_prefix(env!("CARGO_MANIFEST_DIR"))
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                out.push((rel, std::fs::read_to_string(&path).unwrap()));
            }
        }
    }

    #[test]
    fn only_the_store_runs_statements_and_every_statement_is_run() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        sources(&root.join("src"), &mut files);
        let mut loaded = std::collections::BTreeSet::new();
        for (path, text) in &files {
            let in_store = path.starts_with("src/graph/");
            for (i, line) in text.lines().enumerate() {
                let runs = ["statement(", "neo4rs::query(", ".cypher\""]
                    .iter()
                    .any(|p| line.contains(p));
                if !in_store && runs && !line.trim_start().starts_with("//") {
                    panic!("{path}:{}: a statement outside the store: {line}", i + 1);
                }
            }
            let mut rest = text.as_str();
            while let Some(at) = rest.find("\"../../cypher/") {
                rest = &rest[at + 14..];
                let end = rest.find('"').unwrap();
                if rest[..end].ends_with(".cypher") {
                    loaded.insert(rest[..end].to_string());
                }
                rest = &rest[end..];
            }
        }
        let mut on_disk = std::collections::BTreeSet::new();
        let mut dirs = vec![root.join("cypher")];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                } else {
                    let rel = path.strip_prefix(root.join("cypher")).unwrap();
                    on_disk.insert(rel.to_string_lossy().into_owned());
                }
            }
        }
        assert_eq!(
            on_disk, loaded,
            "every file in cypher/ is run, and only those"
        );
        assert!(loaded.len() > 90, "{}", loaded.len());
    }

    #[test]
    fn a_slow_or_lost_neo4j_is_unavailable_never_a_rejection() {
        use neo4rs::Error as E;
        for err in [
            StoreError::Timeout(Duration::from_secs(1)),
            StoreError::Neo4j(E::ConnectionTimedOut),
            StoreError::Neo4j(E::ConnectionError),
            StoreError::Neo4j(E::RequestIgnoredError),
            StoreError::Neo4j(E::IncompleteBoltExchange),
        ] {
            assert!(err.is_unavailable(), "{err}");
            assert!(!err.is_rejection(), "{err}");
        }
    }

    #[tokio::test]
    async fn a_transient_failure_is_tried_again_and_a_lasting_one_is_not() {
        use std::sync::atomic::{AtomicU32, Ordering};
        let transient = |e: &&str| *e == "transient";
        let calls = AtomicU32::new(0);
        let out = again_if_transient(transient, || async {
            match calls.fetch_add(1, Ordering::SeqCst) {
                0 | 1 => Err("transient"),
                _ => Ok(7),
            }
        })
        .await;
        assert_eq!((out, calls.load(Ordering::SeqCst)), (Ok(7), 3));

        let calls = AtomicU32::new(0);
        let out: Result<(), _> = again_if_transient(transient, || async {
            calls.fetch_add(1, Ordering::SeqCst);
            Err("transient")
        })
        .await;
        assert_eq!(
            (out, calls.load(Ordering::SeqCst)),
            (Err("transient"), TRANSIENT_ATTEMPTS)
        );

        let calls = AtomicU32::new(0);
        let out: Result<(), _> = again_if_transient(transient, || async {
            calls.fetch_add(1, Ordering::SeqCst);
            Err("syntax")
        })
        .await;
        assert_eq!((out, calls.load(Ordering::SeqCst)), (Err("syntax"), 1));
    }

    #[test]
    fn what_cannot_be_encoded_is_a_rejection() {
        assert!(StoreError::Encode("nan".into()).is_rejection());
        assert!(StoreError::Neo4j(neo4rs::Error::StringTooLong).is_rejection());
        assert!(!StoreError::Neo4j(neo4rs::Error::StringTooLong).is_unavailable());
    }
}
