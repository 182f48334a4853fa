//! The write path. Handlers validate input, append a [`command::Command`] to the durable
//! [`spool::Spool`] and answer once it is on disk; the [`writer::Writer`] applies commands to
//! Neo4j in order, on a `background` thread of its own below the handlers' CPU priority, with
//! its own connection pool. Nothing here knows about HTTP.

mod background;
pub mod command;
pub mod spool;
pub mod summary;
pub mod writer;

use std::{
    collections::{HashMap, HashSet},
    path::PathBuf,
    sync::{Arc, Mutex},
    time::Duration,
};

use serde::Serialize;

use self::command::{Command, Operations};
use self::spool::{Spool, SpoolError};
use crate::config::Encoding;
use crate::domain::{
    field::Field,
    limits::MAX_OPERATIONS_PER_BATCH,
    operation::{NewOperation, OpType, OperationInput},
    record::{DecisionInput, MemoryInput, SessionClose, SessionStart},
    validate,
};
use crate::error::{ApiError, ApiResult, Code};
use crate::graph::{self, now_ms, Store};

/// What capture remembers between requests: sessions it has seen, operations in flight, and
/// records the writer could not apply.
pub struct State {
    sessions: Mutex<HashMap<String, KnownSession>>,
    /// Operation ids spooled but not yet in Neo4j, with their project (client ids, hence a
    /// seeded hasher; a fast one, as every acknowledged operation passes through).
    in_flight: Mutex<HashMap<String, Arc<str>, foldhash::fast::RandomState>>,
    failed: Mutex<HashMap<u64, String>>,
    /// False while the writer cannot get its transactions into Neo4j.
    writer_ok: tokio::sync::watch::Sender<bool>,
    /// The bookmarks of the transactions of the last batch the writer committed: set before
    /// the spool's cursor moves, so whoever sees its record committed finds them (or a later
    /// batch's, which come after it).
    bookmarks: Mutex<Vec<String>>,
    spool_dir: PathBuf,
}

#[derive(Clone, Debug)]
pub struct KnownSession {
    pub project: String,
    pub cwd: Option<String>,
}

const SESSION_CACHE_MAX: usize = 100_000;

impl State {
    fn remember_session(&self, id: &str, s: KnownSession) {
        let mut map = self.sessions.lock().expect("session cache lock");
        if map.len() >= SESSION_CACHE_MAX {
            map.clear();
        }
        map.insert(id.to_string(), s);
    }

    fn set_writer_ok(&self, ok: bool) {
        self.writer_ok
            .send_if_modified(|now| std::mem::replace(now, ok) != ok);
    }

    fn failed(&self, end: u64, error: String) {
        self.failed.lock().expect("failed lock").insert(end, error);
    }

    /// Remembers the operations of `batch` as on their way to Neo4j.
    fn track(&self, batch: &Operations) {
        let project: Arc<str> = Arc::from(batch.project.as_str());
        let mut map = self.in_flight.lock().expect("in-flight lock");
        map.reserve(batch.operations.len());
        for op in &batch.operations {
            map.insert(op.id.clone(), project.clone());
        }
    }

    fn untrack(&self, cmd: &Command) {
        let ids = cmd.operation_ids();
        if !ids.is_empty() {
            let mut map = self.in_flight.lock().expect("in-flight lock");
            for id in ids {
                map.remove(id);
            }
        }
    }

    /// Called by the writer once `cmd` is in Neo4j.
    fn applied(&self, cmd: &Command) {
        self.untrack(cmd);
        self.forget_purged(cmd);
    }

    /// Reads the part of the spool Neo4j has not seen (after a restart) and remembers what it
    /// will write, as the requests that wrote it did: the sessions it starts and the operation
    /// ids it adds are known before the writer has replayed them. Returns the records read.
    fn recall_spooled(&self, spool: &Spool) -> usize {
        let mut reader = spool.reader();
        let mut records = 0;
        loop {
            let batch = match reader.read_batch(1024, 16 * 1024 * 1024) {
                Ok(b) if b.is_empty() => return records,
                Ok(b) => b,
                Err(err) => {
                    // The writer reports (and retries) the same read.
                    tracing::warn!(error = %err, "could not read the spool ahead of the writer");
                    return records;
                }
            };
            records += batch.len();
            // Undecodable records are the writer's to dead-letter.
            for cmd in batch
                .iter()
                .filter_map(|r| Command::decode(&r.payload).ok())
            {
                match &cmd {
                    Command::StartSession(s) => self.remember_session(
                        &s.id,
                        KnownSession {
                            project: s.project.clone(),
                            cwd: s.cwd.clone(),
                        },
                    ),
                    Command::Operations(b) => self.track(b),
                    other => self.forget_purged(other),
                }
            }
        }
    }

    fn forget_purged(&self, cmd: &Command) {
        match cmd {
            Command::PurgeSession { session_id, .. } => {
                self.sessions
                    .lock()
                    .expect("session cache lock")
                    .remove(session_id);
            }
            Command::PurgeProject { project } => {
                self.sessions
                    .lock()
                    .expect("session cache lock")
                    .retain(|_, s| &s.project != project);
            }
            _ => {}
        }
    }
}

/// The outcome of a capture request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Applied {
    /// In Neo4j.
    Yes,
    /// Durable in the spool; the writer will apply it.
    Queued,
}

/// The capture service.
#[derive(Clone)]
pub struct Capture {
    store: Store,
    spool: Spool,
    state: Arc<State>,
    encoding: Encoding,
    sync_wait: Duration,
}

impl Capture {
    /// Opens the spool and returns the service plus the writer to spawn. The writer gets a
    /// connection pool of its own (`writer_store`): its connections then live on its thread.
    #[allow(clippy::too_many_arguments)]
    pub fn open(
        store: Store,
        writer_store: Store,
        spool_dir: PathBuf,
        spool_max_bytes: u64,
        spool_segment_bytes: u64,
        encoding: Encoding,
        sync_wait: Duration,
        writer_lanes: usize,
    ) -> std::io::Result<(Self, writer::Writer)> {
        let spool = Spool::open(&spool_dir, spool_max_bytes, spool_segment_bytes)?;
        let state = Arc::new(State {
            sessions: Mutex::default(),
            in_flight: Mutex::default(),
            failed: Mutex::default(),
            writer_ok: tokio::sync::watch::Sender::new(true),
            bookmarks: Mutex::default(),
            spool_dir,
        });
        let pending = state.recall_spooled(&spool);
        if pending > 0 {
            tracing::info!(
                records = pending,
                spool.bytes = spool.used_bytes(),
                "the spool holds captures not yet in neo4j; the writer replays them"
            );
        }
        let writer = writer::Writer {
            store: writer_store,
            spool: spool.clone(),
            state: state.clone(),
            encoding,
            lanes: writer_lanes.max(1),
            replay_end: spool.appended(),
            made: Mutex::default(),
        };
        Ok((
            Self {
                store,
                spool,
                state,
                encoding,
                sync_wait,
            },
            writer,
        ))
    }

    pub fn spool(&self) -> &Spool {
        &self.spool
    }

    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// False while the writer cannot get its transactions into Neo4j (captures wait in the
    /// spool and it retries).
    pub fn writer_ok(&self) -> bool {
        *self.state.writer_ok.borrow()
    }

    async fn submit(&self, cmd: &Command) -> ApiResult<u64> {
        let payload = cmd.encode().map_err(ApiError::internal)?;
        match self.spool.append(payload).await {
            Ok(end) => {
                metrics::gauge!("cairn_spool_bytes").set(self.spool.used_bytes() as f64);
                Ok(end)
            }
            Err(SpoolError::Full { used, max }) => {
                metrics::counter!("cairn_spool_rejections_total").increment(1);
                tracing::warn!(
                    spool.used_bytes = used,
                    spool.max_bytes = max,
                    "capture refused: spool full"
                );
                Err(ApiError::new(Code::SpoolFull))
            }
            Err(err) => Err(ApiError::internal(err)),
        }
    }

    /// Waits until the record ending at `end` is in Neo4j, at most `wait`, and not at all
    /// while the writer cannot reach Neo4j: the record is durable, and waiting helps nobody.
    async fn wait_applied(&self, end: u64, wait: Duration) -> ApiResult<Applied> {
        let mut committed = self.spool.committed();
        let mut writer_ok = self.state.writer_ok.subscribe();
        let reached = tokio::time::timeout(wait, async {
            loop {
                if *committed.borrow_and_update() >= end {
                    return true;
                }
                if !*writer_ok.borrow_and_update() {
                    return false;
                }
                tokio::select! {
                    changed = committed.changed() => if changed.is_err() { return false },
                    _ = writer_ok.changed() => {}
                }
            }
        })
        .await
        .unwrap_or(false);
        if !reached {
            return Ok(Applied::Queued);
        }
        if let Some(err) = self.state.failed.lock().expect("failed lock").remove(&end) {
            return Err(ApiError::internal(format!(
                "neo4j rejected the write: {err}"
            )));
        }
        for b in self.state.bookmarks.lock().expect("bookmarks lock").iter() {
            graph::causal::record(b);
        }
        Ok(Applied::Yes)
    }

    /// The session, from cache or Neo4j; `project` (when known) must match. `Ok(None)` when
    /// Neo4j cannot be asked.
    async fn lookup(&self, id: &str) -> ApiResult<Option<KnownSession>> {
        if let Some(s) = self
            .state
            .sessions
            .lock()
            .expect("session cache lock")
            .get(id)
        {
            return Ok(Some(s.clone()));
        }
        match graph::sessions::get_on_writer(&self.store, id).await {
            Ok(Some(row)) => {
                let s = KnownSession {
                    project: row.project,
                    cwd: row.cwd,
                };
                self.state.remember_session(id, s.clone());
                Ok(Some(s))
            }
            Ok(None) => Err(ApiError::not_found(Code::SessionNotFound, "session_id")),
            Err(err) if err.is_unavailable() => Ok(None),
            Err(err) => Err(err.into()),
        }
    }

    /// [`Self::lookup`], asking Neo4j again for about a second before answering
    /// `session_not_found`: a session another replica has acknowledged (202) reaches Neo4j
    /// when that replica's writer applies it, typically within milliseconds.
    async fn lookup_awhile(&self, id: &str) -> ApiResult<Option<KnownSession>> {
        for pause_ms in [25, 50, 100, 200, 300, 400] {
            match self.lookup(id).await {
                Err(err) if err.code() == Code::SessionNotFound => {
                    tokio::time::sleep(Duration::from_millis(pause_ms)).await
                }
                found => return found,
            }
        }
        self.lookup(id).await
    }

    /// A session that must exist (in `project` when given), with its id as stored: what a
    /// client sends is trimmed, so writes must use the returned id, never the one sent.
    pub async fn session(
        &self,
        id: &str,
        project: Option<&str>,
    ) -> ApiResult<(String, KnownSession)> {
        let id = validate::id("session_id", id)?;
        let s = self
            .lookup_awhile(&id)
            .await?
            .ok_or_else(|| ApiError::unavailable("session lookup"))?;
        match project {
            Some(p) if p != s.project => {
                Err(ApiError::not_found(Code::SessionNotFound, "session_id"))
            }
            _ => Ok((id, s)),
        }
    }

    /// `POST /v1/sessions`: idempotent on the id.
    pub async fn start_session(&self, input: &SessionStart) -> ApiResult<(String, Applied)> {
        let cmd = validate::session_start(input, now_ms())?;
        match self.lookup(&cmd.id).await {
            Ok(Some(s)) if s.project != cmd.project => {
                return Err(ApiError::new(Code::SessionIdTaken).on("session_id"))
            }
            // A known session is started again only to add a child's links (the launching
            // operation is often known only when the subagent has finished).
            Ok(Some(_)) if cmd.parent.is_none() && cmd.spawned_by.is_none() => {
                return Ok((cmd.id, Applied::Yes))
            }
            Ok(_) => {}
            Err(err) if err.code() == Code::SessionNotFound => {}
            Err(err) => return Err(err),
        }
        if let Some(c) = &cmd.continues {
            self.same_project(c, &cmd.project, "continues", false)
                .await?;
        }
        if let Some(p) = &cmd.parent {
            // The parent may arrive after its child (spooled hook events, imports).
            self.same_project(p, &cmd.project, "parent", true).await?;
        }
        self.state.remember_session(
            &cmd.id,
            KnownSession {
                project: cmd.project.clone(),
                cwd: cmd.cwd.clone(),
            },
        );
        let id = cmd.id.clone();
        let end = self.submit(&Command::StartSession(cmd)).await?;
        Ok((id, self.wait_applied(end, self.sync_wait).await?))
    }

    /// `id` names a session of `project` (or none yet; with `may_be_later`, or when Neo4j
    /// cannot be asked): a session of another project is `unknown_session` on `field`.
    async fn same_project(
        &self,
        id: &str,
        project: &str,
        field: &'static str,
        may_be_later: bool,
    ) -> ApiResult<()> {
        match self.lookup(id).await {
            Ok(Some(s)) if s.project == project => Ok(()),
            Ok(None) => Ok(()),
            Err(err) if err.code() == Code::SessionNotFound && may_be_later => Ok(()),
            Err(err) if err.code() != Code::SessionNotFound => Err(err),
            Ok(Some(_)) | Err(_) => Err(ApiError::invalid(
                Code::UnknownSession,
                field,
                format!("`{field}` names no session of this project"),
            )),
        }
    }

    /// `POST /v1/sessions/{id}/close`.
    pub async fn close_session(
        &self,
        id: &str,
        project: Option<&str>,
        input: &SessionClose,
    ) -> ApiResult<Applied> {
        let (id, s) = self.session(id, project).await?;
        let cmd = validate::session_close(id, s.project, input, now_ms())?;
        let end = self.submit(&Command::CloseSession(cmd)).await?;
        self.wait_applied(end, self.sync_wait).await
    }

    /// `POST /v1/sessions/{id}/operations`: validated as a whole (a rejected batch writes
    /// nothing), durable on return; with `sync`, also in Neo4j.
    pub async fn add_operations(
        &self,
        session_id: &str,
        project: Option<&str>,
        inputs: &[OperationInput],
        sync: bool,
    ) -> ApiResult<(usize, Applied)> {
        if inputs.is_empty() {
            return Err(ApiError::invalid(
                Code::EmptyBatch,
                "operations",
                "send at least one operation",
            ));
        }
        if inputs.len() > MAX_OPERATIONS_PER_BATCH {
            return Err(ApiError::invalid(
                Code::TooManyOperations,
                "operations",
                format!(
                    "at most {MAX_OPERATIONS_PER_BATCH} operations per request; split the batch"
                ),
            ));
        }
        let started = std::time::Instant::now();
        let (session_id, session) = self.session(session_id, project).await?;
        let now = now_ms();
        let field = Field::Name("operations");
        let ops = inputs
            .iter()
            .enumerate()
            .map(|(i, op)| validate::operation(field.item(i), op, session.cwd.as_deref(), now))
            .collect::<ApiResult<Vec<_>>>()?;
        self.check_references(&session.project, &ops).await?;
        let count = ops.len();
        let batch = Operations {
            project: session.project,
            session_id,
            operations: ops,
        };
        self.state.track(&batch);
        let cmd = Command::Operations(batch);
        let checked = std::time::Instant::now();
        metrics::histogram!("cairn_capture_ack_seconds", "stage" => "validate")
            .record((checked - started).as_secs_f64());
        let end = match self.submit(&cmd).await {
            Ok(end) => {
                metrics::histogram!("cairn_capture_ack_seconds", "stage" => "spool")
                    .record(checked.elapsed().as_secs_f64());
                end
            }
            Err(err) => {
                self.state.untrack(&cmd);
                return Err(err);
            }
        };
        metrics::counter!("cairn_capture_operations_total").increment(count as u64);
        if !sync {
            return Ok((count, Applied::Queued));
        }
        match self.wait_applied(end, self.store.timeout() * 3).await? {
            Applied::Yes => Ok((count, Applied::Yes)),
            Applied::Queued => Err(ApiError::timeout("writing the batch to neo4j")),
        }
    }

    /// `triggered_by` must name an operation of the batch or of the project; `informs_belief`
    /// a belief of the project. Checks that need Neo4j are skipped while it is unreachable
    /// (capture must not stop). Operation ids are global idempotency keys: an id already stored
    /// (in any session) is not stored again.
    async fn check_references(&self, project: &str, ops: &[NewOperation]) -> ApiResult<()> {
        let mut in_batch: HashSet<&str> = HashSet::new();
        let mut ask_triggers: Vec<String> = Vec::new();
        for op in ops {
            if let Some(t) = op.triggered_by.as_deref() {
                let pending = self
                    .state
                    .in_flight
                    .lock()
                    .expect("in-flight lock")
                    .get(t)
                    .is_some_and(|p| &**p == project);
                if !in_batch.contains(t) && !pending {
                    ask_triggers.push(t.to_string());
                }
            }
            in_batch.insert(&op.id);
        }
        let beliefs: Vec<String> = ops
            .iter()
            .filter_map(|o| o.informs_belief.clone())
            .collect();
        // Both reads are skipped when there is nothing to check: the common batch is
        // acknowledged without a round trip to Neo4j.
        let (triggers, known_beliefs) = tokio::join!(
            graph::operations::known(&self.store, project, &ask_triggers),
            graph::beliefs::known(&self.store, project, &beliefs),
        );
        let unreachable = |e: &graph::StoreError| e.is_unavailable();
        match triggers {
            Ok(found) => {
                for (i, op) in ops.iter().enumerate() {
                    if let Some(t) = op.triggered_by.as_deref() {
                        if ask_triggers.iter().any(|a| a == t) && !found.contains(t) {
                            return Err(ApiError::invalid(
                Code::UnknownTriggeredBy,
                                format!("operations[{i}].triggered_by"),
                                format!("`triggered_by` names no earlier operation of this project: `{t}`"),
                            ));
                        }
                    }
                }
            }
            Err(e) if unreachable(&e) => {}
            Err(e) => return Err(e.into()),
        }
        match known_beliefs {
            Ok(found) => {
                for (i, op) in ops.iter().enumerate() {
                    if let Some(b) = op.informs_belief.as_deref() {
                        if !found.contains(b) {
                            return Err(ApiError::invalid(
                                Code::UnknownBelief,
                                format!("operations[{i}].informs_belief"),
                                format!("no belief `{b}` in this project"),
                            ));
                        }
                    }
                }
            }
            Err(e) if unreachable(&e) => {}
            Err(e) => return Err(e.into()),
        }
        Ok(())
    }

    /// `POST /v1/decisions`: returns the decision id.
    pub async fn record_decision(&self, input: &DecisionInput) -> ApiResult<(String, Applied)> {
        let project = validate::project("project", &input.project)?;
        let cwd = match &input.session_id {
            Some(sid) => self.session(sid, Some(&project)).await?.1.cwd,
            None => None,
        };
        let mut d = validate::decision(input, cwd.as_deref(), now_ms())?;
        let ids: Vec<String> = d.beliefs.iter().map(|b| b.id.clone()).collect();
        match graph::beliefs::known(&self.store, &project, &ids).await {
            Ok(found) => {
                if let Some(i) = ids.iter().position(|b| !found.contains(b)) {
                    return Err(ApiError::invalid(
                        Code::UnknownBelief,
                        format!("affects_beliefs[{i}]"),
                        format!("no belief `{}` in this project", ids[i]),
                    ));
                }
            }
            Err(e) if e.is_unavailable() => {}
            Err(e) => return Err(e.into()),
        }
        if d.session_id.is_some() {
            let summary = format!("decided {}: {}", d.subject, d.choice);
            let summary: String = summary
                .chars()
                .take(crate::domain::limits::MAX_SUMMARY_CHARS)
                .collect();
            d.operation = Some(NewOperation {
                id: validate::new_id(),
                kind: OpType::Decision,
                target: Some(d.subject.clone()),
                tokens: None,
                summary,
                tool: None,
                files_read: d.files.clone(),
                files_modified: Vec::new(),
                triggered_by: None,
                informs_belief: None,
                effect: "supports".into(),
                weight: d.confidence,
                rationale: Some(d.rationale.clone()),
                role: None,
                content: None,
                todos: None,
                status: "ok".into(),
                context: None,
                at: d.at,
            });
        }
        let id = d.id.clone();
        let end = self.submit(&Command::Decision(d)).await?;
        Ok((id, self.wait_applied(end, self.sync_wait).await?))
    }

    /// `POST /v1/memories`: returns the memory id.
    pub async fn remember(&self, input: &MemoryInput) -> ApiResult<(String, Applied)> {
        let m = validate::memory(input, self.encoding, now_ms())?;
        if let Some(sid) = &m.session_id {
            self.session(sid, Some(&m.project)).await?;
        }
        let id = m.id.clone();
        let end = self.submit(&Command::Memory(m)).await?;
        Ok((id, self.wait_applied(end, self.sync_wait).await?))
    }

    /// `DELETE /v1/sessions/{id}`: waits for the purge to be applied.
    pub async fn purge_session(&self, id: &str, project: Option<&str>) -> ApiResult<Applied> {
        let (session_id, s) = self.session(id, project).await?;
        let end = self
            .submit(&Command::PurgeSession {
                project: s.project.clone(),
                session_id,
            })
            .await?;
        let applied = self.wait_applied(end, self.store.timeout() * 3).await;
        crate::recall::held_vectors::forget(&s.project);
        applied
    }

    /// `DELETE /v1/projects/{id}`.
    pub async fn purge_project(&self, project: &str) -> ApiResult<Applied> {
        let project = validate::project("project", project)?;
        let end = self
            .submit(&Command::PurgeProject {
                project: project.clone(),
            })
            .await?;
        let applied = self.wait_applied(end, self.store.timeout() * 3).await;
        crate::recall::held_vectors::forget(&project);
        applied
    }
}
