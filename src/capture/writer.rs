//! The writer: drains the spool into Neo4j in log order, in batched transactions. Operation
//! batches are spread over a few lanes by session, each lane its own transaction, so Neo4j can
//! use more than one core while every session keeps its order. While Neo4j is unreachable it
//! waits and retries (the spool grows); a record Neo4j rejects outright is set aside in
//! `dead-letter.jsonl` so one bad record cannot stall capture.

use std::{collections::HashMap, io::Write, sync::Arc, time::Duration, time::Instant};

use tokio::sync::watch;

use super::command::{Command, Operations};
use super::spool::{Record, Spool, SpoolReader};
use super::State;
use crate::config::Encoding;
use crate::graph::{self, operations::Ids, Store, StoreError};

/// Records per read at most.
const MAX_RECORDS: usize = 256;
/// Bytes of records' JSON per read at most (about 2000 operations; records are compressed,
/// this counts what they expand to).
const MAX_JSON_BYTES: usize = 2 * 1024 * 1024;

pub struct Writer {
    pub(super) store: Store,
    pub(super) spool: Spool,
    pub(super) state: Arc<State>,
    pub(super) encoding: Encoding,
    pub(super) lanes: usize,
    /// End of the spool when it was opened: records up to here may be in Neo4j already (a
    /// crash came between the commit and the cursor), so their ids are looked up first.
    pub(super) replay_end: u64,
    /// The bookmarks of the transactions committed for the batch in hand.
    pub(super) made: std::sync::Mutex<Vec<String>>,
}

/// Records applied in one transaction, in log order.
type Part<'a> = Vec<(u64, &'a Command)>;

impl Writer {
    /// Starts the writer on its own thread (see `background`); the receiver resolves when it
    /// has finished, or fails if it panicked.
    pub fn spawn(
        self,
        shutdown: watch::Receiver<bool>,
    ) -> std::io::Result<tokio::sync::oneshot::Receiver<()>> {
        super::background::spawn("cairn-writer", move || self.run(shutdown))
    }

    /// Runs until `shutdown` turns true and everything durable has been written (or Neo4j
    /// stayed unreachable past the grace period; the spool keeps the rest for the next start).
    async fn run(self, mut shutdown: watch::Receiver<bool>) {
        // The tokenizer's tables take a moment to build: build them before the first batch.
        crate::domain::tokens::count(self.encoding, "");
        let mut reader = Some(self.spool.reader());
        loop {
            let (r, batch) = read(reader.take().expect("reader is put back")).await;
            reader = Some(r);
            let batch = match batch {
                Ok(b) => b,
                Err(err) => {
                    tracing::error!(error = %err, "could not read the capture spool; retrying in 1 s");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
            };
            self.report_depth();
            if batch.is_empty() {
                if stopping(&shutdown) {
                    tracing::info!("capture writer drained the spool");
                    return;
                }
                let pos = reader.as_ref().map_or(0, SpoolReader::position);
                tokio::select! {
                    _ = self.spool.wait_for_data(pos) => {}
                    _ = shutdown.changed() => {}
                    _ = tokio::time::sleep(Duration::from_millis(500)) => {}
                }
                continue;
            }
            let end = batch.last().map(|r| r.end).expect("batch is not empty");
            let commands = self.prepare(batch);
            for unit in plan(&commands, self.lanes) {
                let parts = unit
                    .iter()
                    .map(|part| self.apply_until_done(part, shutdown.clone()));
                let done = futures::future::join_all(parts).await;
                if done.contains(&false) {
                    return;
                }
            }
            self.state.set_writer_ok(true);
            let made = std::mem::take(&mut *self.made.lock().expect("bookmarks lock"));
            if !made.is_empty() {
                *self.state.bookmarks.lock().expect("bookmarks lock") = made;
            }
            // What the writes changed is known before anyone waiting on the commit is woken:
            // a session purged and started again must not be found in the cache.
            for cmd in commands.iter().filter_map(|(_, c)| c.as_ref()) {
                self.state.applied(cmd);
            }
            if let Err(err) = self.spool.commit(end) {
                tracing::error!(error = %err, "could not persist the spool cursor; records may be replayed (harmlessly) after a restart");
            }
        }
    }

    fn report_depth(&self) {
        metrics::gauge!("cairn_spool_bytes").set(self.spool.used_bytes() as f64);
    }

    /// Decodes a batch and counts its operations' tokens. Records that cannot be decoded
    /// (written by an incompatible version) are dead-lettered with their raw text, never
    /// silently dropped.
    fn prepare(&self, batch: Vec<Record>) -> Vec<(u64, Option<Command>)> {
        batch
            .into_iter()
            .map(|r| match Command::decode(&r.payload) {
                Ok(mut cmd) => {
                    cmd.count_tokens(self.encoding);
                    (r.end, Some(cmd))
                }
                Err(err) => {
                    let text = Command::json(&r.payload).unwrap_or(r.payload.as_slice().into());
                    let raw =
                        serde_json::Value::String(String::from_utf8_lossy(&text).into_owned());
                    self.dead_letter(r.end, &raw, &err.to_string());
                    (r.end, None)
                }
            })
            .collect()
    }

    /// Applies `part` until it is in Neo4j: retries while Neo4j is unreachable or the
    /// transaction lost a lock conflict, applies records one by one when Neo4j rejects the
    /// whole. Returns false when shutdown gave up on an unreachable Neo4j.
    async fn apply_until_done(&self, part: &Part<'_>, mut shutdown: watch::Receiver<bool>) -> bool {
        let mut backoff = Duration::from_millis(50);
        let mut stopping_since: Option<Instant> = None;
        let mut ids = if part.iter().any(|&(end, _)| end <= self.replay_end) {
            Ids::Lookup
        } else {
            Ids::AssumeNew
        };
        loop {
            match self.apply_all(part, ids).await {
                Ok(()) => return true,
                Err(err) if ids == Ids::AssumeNew && err.is_duplicate() => {
                    // A resent operation (or one stored before a lost commit reply): the
                    // unique id constraint refused the whole transaction; redo it skipping
                    // what is stored.
                    metrics::counter!("cairn_writer_duplicate_retries_total").increment(1);
                    ids = Ids::Lookup;
                }
                Err(err) if err.is_conflict() => {
                    metrics::counter!("cairn_writer_conflicts_total").increment(1);
                    tracing::debug!(error = %err, "writer transaction lost a lock conflict; retrying");
                    tokio::time::sleep(jitter(Duration::from_millis(20))).await;
                }
                Err(err) if err.is_rejection() => {
                    tracing::warn!(error = %err, records = part.len(), "batch rejected; applying its records one by one");
                    return self.isolate(part, &shutdown).await;
                }
                Err(err) => {
                    // Unreachable, too slow, or failing for a reason that is not the batch's:
                    // what was acknowledged waits in the spool until Neo4j takes it.
                    self.state.set_writer_ok(false);
                    let stop = stopping(&shutdown);
                    if stop {
                        let since = *stopping_since.get_or_insert_with(Instant::now);
                        // Two query deadlines: long enough to ride out a blip, short
                        // enough that a stop is never held hostage by a dead server.
                        if since.elapsed() > self.store.timeout() * 2 {
                            tracing::warn!(
                                spool.bytes = self.spool.used_bytes(),
                                "neo4j unreachable at shutdown; unwritten captures stay in the spool and are replayed on the next start"
                            );
                            return false;
                        }
                    }
                    tracing::warn!(error = %err, retry_in_ms = backoff.as_millis() as u64, "neo4j unreachable or failing; capture is spooling");
                    tokio::select! {
                        _ = tokio::time::sleep(backoff) => {}
                        _ = shutdown.changed(), if !stop => {}
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(2));
                }
            }
        }
    }

    /// Applies every record of `part` in one transaction; runs of operation batches are
    /// written together, one statement for all their sessions.
    async fn apply_all(&self, part: &[(u64, &Command)], ids: Ids) -> Result<(), StoreError> {
        let started = Instant::now();
        for (_, cmd) in part {
            if let Command::PurgeProject { project } = cmd {
                graph::purge::operations_in_steps(&self.store, project).await?;
            }
        }
        let steps = merge(part.iter().map(|(_, c)| *c));
        let mut tx = self.store.begin().await?;
        let mut ops = 0usize;
        for step in &steps {
            let result = match step {
                Step::Operations(groups) => graph::operations::append(&mut tx, groups, ids)
                    .await
                    .map(|a| {
                        ops += a.created;
                        report_skips(&a);
                    }),
                Step::Other(cmd) => apply(&mut tx, cmd, self.encoding).await,
            };
            if let Err(err) = result {
                let _ = tx.rollback().await;
                return Err(err);
            }
        }
        if let Some(bookmark) = tx.commit().await? {
            self.made.lock().expect("bookmarks lock").push(bookmark);
        }
        metrics::histogram!("cairn_writer_batch_operations").record(ops as f64);
        metrics::histogram!("cairn_writer_commit_seconds").record(started.elapsed().as_secs_f64());
        metrics::counter!("cairn_writer_operations_total").increment(ops as u64);
        Ok(())
    }

    /// Applies records one at a time; a record Neo4j rejects is dead-lettered. Returns false
    /// when shutdown interrupted it while Neo4j was unreachable.
    async fn isolate(&self, part: &Part<'_>, shutdown: &watch::Receiver<bool>) -> bool {
        for &(end, cmd) in part {
            loop {
                match self.apply_all(&[(end, cmd)], Ids::Lookup).await {
                    Ok(()) => break,
                    Err(err) if err.is_rejection() => {
                        self.dead_letter(end, cmd, &err.to_string());
                        break;
                    }
                    Err(_) => {
                        if stopping(shutdown) {
                            return false;
                        }
                        tokio::time::sleep(Duration::from_millis(500)).await;
                    }
                }
            }
        }
        true
    }

    fn dead_letter(&self, end: u64, cmd: &impl serde::Serialize, err: &str) {
        tracing::error!(spool.offset = end, error = %err, "a capture record could not be applied; it was moved to dead-letter.jsonl");
        metrics::counter!("cairn_writer_dead_letters_total").increment(1);
        self.state.failed(end, err.to_string());
        let line = serde_json::json!({"offset": end, "error": err, "command": cmd});
        let path = self.state.spool_dir.join("dead-letter.jsonl");
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut f| writeln!(f, "{line}"));
        if let Err(e) = written {
            tracing::error!(error = %e, path = %path.display(), "could not write the dead-letter file");
        }
    }
}

/// A stop was asked for, or whoever could ask is gone (the application was dropped without a
/// stop): either way the writer drains what it can and ends.
fn stopping(shutdown: &watch::Receiver<bool>) -> bool {
    *shutdown.borrow() || shutdown.has_changed().is_err()
}

/// A random delay between `base` and twice `base`, so retrying lanes do not collide again.
fn jitter(base: Duration) -> Duration {
    base + base.mul_f64(rand::random::<f64>())
}

/// Splits a batch into units applied one after another; the parts of one unit are applied
/// concurrently. A run of operation batches becomes one unit of up to `lanes` parts, each
/// session wholly in one part (the one with the fewest operations when it is first seen), so
/// per-session order holds. A run of any other commands is one unit of one part, in order.
fn plan(commands: &[(u64, Option<Command>)], lanes: usize) -> Vec<Vec<Part<'_>>> {
    let mut units: Vec<Vec<Part<'_>>> = Vec::new();
    let mut run: Part<'_> = Vec::new();
    let mut run_is_ops = false;
    for (end, cmd) in commands {
        let Some(cmd) = cmd else { continue };
        let is_ops = matches!(cmd, Command::Operations(_));
        if is_ops != run_is_ops && !run.is_empty() {
            units.push(unit(std::mem::take(&mut run), run_is_ops, lanes));
        }
        run_is_ops = is_ops;
        run.push((*end, cmd));
    }
    if !run.is_empty() {
        units.push(unit(run, run_is_ops, lanes));
    }
    units
}

fn unit(run: Part<'_>, is_ops: bool, lanes: usize) -> Vec<Part<'_>> {
    if is_ops && !triggers_cross_sessions(&run) {
        spread(run, lanes)
    } else {
        vec![run]
    }
}

/// Whether an operation of the run is triggered by an operation of another session in the
/// same run: both must then be written in one transaction (the target must exist first).
fn triggers_cross_sessions(run: &Part<'_>) -> bool {
    let batches = || {
        run.iter().filter_map(|(_, c)| match c {
            Command::Operations(b) => Some(b),
            _ => None,
        })
    };
    let mut owner: HashMap<&str, (&str, &str)> = HashMap::new();
    for b in batches() {
        for op in &b.operations {
            owner.insert(&op.id, (&b.project, &b.session_id));
        }
    }
    batches().any(|b| {
        b.operations.iter().any(|op| {
            op.triggered_by
                .as_deref()
                .and_then(|t| owner.get(t))
                .is_some_and(|&(p, s)| p != b.project || s != b.session_id)
        })
    })
}

/// Spreads operation batches over at most `lanes` parts, a session never split.
fn spread(records: Vec<(u64, &Command)>, lanes: usize) -> Vec<Part<'_>> {
    let mut parts: Vec<(usize, Part<'_>)> = Vec::new();
    let mut lane_of: Vec<(&str, &str, usize)> = Vec::new();
    for (end, cmd) in records {
        let Command::Operations(b) = cmd else {
            unreachable!("only operation batches are spread")
        };
        let lane = match lane_of
            .iter()
            .find(|(p, s, _)| *p == b.project && *s == b.session_id)
        {
            Some(&(_, _, lane)) => lane,
            None => {
                let lane = if parts.len() < lanes {
                    parts.push((0, Vec::new()));
                    parts.len() - 1
                } else {
                    (0..parts.len())
                        .min_by_key(|&i| parts[i].0)
                        .expect("at least one lane")
                };
                lane_of.push((&b.project, &b.session_id, lane));
                lane
            }
        };
        parts[lane].0 += b.operations.len();
        parts[lane].1.push((end, cmd));
    }
    parts.into_iter().map(|(_, p)| p).collect()
}

async fn read(mut reader: SpoolReader) -> (SpoolReader, std::io::Result<Vec<Record>>) {
    tokio::task::spawn_blocking(move || {
        let batch = reader.read_batch_by(MAX_RECORDS, MAX_JSON_BYTES, Command::json_len);
        (reader, batch)
    })
    .await
    .expect("spool read task does not panic")
}

/// One unit of a transaction: a run of operation batches, folded per session, or any other
/// command.
enum Step<'a> {
    Operations(Vec<graph::operations::Group<'a>>),
    Other(&'a Command),
}

fn group(b: &Operations) -> graph::operations::Group<'_> {
    graph::operations::Group {
        project: &b.project,
        session_id: &b.session_id,
        ops: b.operations.iter().collect(),
    }
}

/// Folds operation batches into one group per session within each run of consecutive
/// operation commands (sessions in order of first appearance, each session's operations in
/// arrival order), so a transaction runs one statement for the whole run instead of one per
/// request. Any other command is a barrier: nothing moves across it. Nothing is copied.
fn merge<'a>(commands: impl Iterator<Item = &'a Command>) -> Vec<Step<'a>> {
    let mut out: Vec<Step<'a>> = Vec::new();
    for cmd in commands {
        match (cmd, out.last_mut()) {
            (Command::Operations(next), Some(Step::Operations(groups))) => {
                match groups
                    .iter_mut()
                    .find(|g| g.session_id == next.session_id && g.project == next.project)
                {
                    Some(g) => g.ops.extend(next.operations.iter()),
                    None => groups.push(group(next)),
                }
            }
            (Command::Operations(next), _) => out.push(Step::Operations(vec![group(next)])),
            (other, _) => out.push(Step::Other(other)),
        }
    }
    out
}

fn report_skips(a: &graph::operations::Appended) {
    if a.orphaned > 0 {
        tracing::warn!(
            count = a.orphaned,
            "operations for sessions that no longer exist were dropped"
        );
    }
    if a.duplicates > 0 {
        metrics::counter!("cairn_writer_duplicate_operations_total").increment(a.duplicates as u64);
    }
}

async fn apply(tx: &mut graph::Tx, cmd: &Command, encoding: Encoding) -> Result<(), StoreError> {
    match cmd {
        Command::StartSession(s) => graph::sessions::start(tx, s).await,
        Command::CloseSession(c) if c.summary.is_none() => {
            // Every session ends with a summary: derived from what it holds when none is sent.
            let material = graph::sessions::summary_material(tx, &c.project, &c.id).await?;
            let mut close = c.clone();
            close.summary = super::summary::derive(&material, encoding);
            graph::sessions::close(tx, &close).await
        }
        Command::CloseSession(c) => graph::sessions::close(tx, c).await,
        Command::Operations(b) => {
            report_skips(&graph::operations::append(tx, &[group(b)], Ids::Lookup).await?);
            Ok(())
        }
        Command::Decision(d) => {
            if let (Some(op), Some(sid)) = (&d.operation, &d.session_id) {
                let group = graph::operations::Group {
                    project: &d.project,
                    session_id: sid,
                    ops: vec![op],
                };
                graph::operations::append(tx, &[group], Ids::Lookup).await?;
            }
            graph::decisions::create(tx, d).await?;
            match &d.session_id {
                Some(sid) => graph::search::mark_dirty(tx, &d.project, sid).await,
                None => Ok(()),
            }
        }
        Command::Memory(m) => graph::memories::create(tx, m).await,
        Command::PurgeSession {
            project,
            session_id,
        } => graph::purge::session(tx, project, session_id).await,
        Command::PurgeProject { project } => graph::purge::project(tx, project).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::operation::{NewOperation, OpType};

    fn op(id: &str) -> NewOperation {
        NewOperation {
            id: id.into(),
            kind: OpType::Read,
            target: None,
            summary: "s".into(),
            tool: None,
            files_read: vec![],
            files_modified: vec![],
            triggered_by: None,
            informs_belief: None,
            effect: "supports".into(),
            weight: 1.0,
            rationale: None,
            role: None,
            content: None,
            todos: None,
            status: "ok".into(),
            context: None,
            at: 0,
            tokens: Some(1),
        }
    }

    fn batch(session: &str, ids: &[&str]) -> Command {
        Command::Operations(Operations {
            project: "p".into(),
            session_id: session.into(),
            operations: ids.iter().map(|i| op(i)).collect(),
        })
    }

    /// The operation ids of each group of an operations step.
    fn ids<'a>(step: &Step<'a>) -> Vec<Vec<&'a str>> {
        match step {
            Step::Operations(groups) => groups
                .iter()
                .map(|g| g.ops.iter().map(|o| o.id.as_str()).collect())
                .collect(),
            Step::Other(c) => panic!("unexpected {c:?}"),
        }
    }

    #[test]
    fn merges_batches_per_session_up_to_a_barrier() {
        let purge = Command::PurgeProject {
            project: "p".into(),
        };
        let cmds = [
            batch("a", &["1"]),
            batch("b", &["2"]),
            batch("a", &["3", "4"]),
            purge.clone(),
            batch("a", &["5"]),
            batch("b", &["6"]),
        ];
        let steps = merge(cmds.iter());
        assert_eq!(steps.len(), 3);
        assert_eq!(ids(&steps[0]), vec![vec!["1", "3", "4"], vec!["2"]]);
        assert!(matches!(steps[1], Step::Other(c) if *c == purge));
        assert_eq!(ids(&steps[2]), vec![vec!["5"], vec!["6"]]);
    }

    /// The sessions of each part of each unit.
    fn sessions<'a>(units: &[Vec<Part<'a>>]) -> Vec<Vec<Vec<&'a str>>> {
        units
            .iter()
            .map(|u| {
                u.iter()
                    .map(|part| {
                        part.iter()
                            .map(|(_, c)| match c {
                                Command::Operations(b) => b.session_id.as_str(),
                                _ => "-",
                            })
                            .collect()
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn plans_lanes_by_session_between_barriers() {
        let purge = Command::PurgeProject {
            project: "p".into(),
        };
        let cmds: Vec<(u64, Option<Command>)> = [
            batch("a", &["1", "2", "3"]),
            batch("b", &["4"]),
            batch("c", &["5"]),
            batch("a", &["6"]),
            batch("d", &["7"]),
            purge.clone(),
            purge,
            batch("a", &["8"]),
        ]
        .into_iter()
        .enumerate()
        .map(|(i, c)| (i as u64, Some(c)))
        .collect();
        let units = plan(&cmds, 2);
        assert_eq!(
            sessions(&units),
            vec![
                // `a` stays in one lane with all its batches in order; `d` joins the
                // lighter lane.
                vec![vec!["a", "a"], vec!["b", "c", "d"]],
                vec![vec!["-", "-"]],
                vec![vec!["a"]],
            ]
        );
        let ends: Vec<u64> = units[0][0].iter().map(|(e, _)| *e).collect();
        assert_eq!(ends, vec![0, 3]);
        assert_eq!(
            sessions(&plan(&cmds, 1))[0],
            vec![vec!["a", "b", "c", "a", "d"]]
        );
    }

    fn numbered(cmds: Vec<Command>) -> Vec<(u64, Option<Command>)> {
        cmds.into_iter()
            .enumerate()
            .map(|(i, c)| (i as u64, Some(c)))
            .collect()
    }

    #[test]
    fn a_trigger_across_sessions_keeps_the_run_in_one_transaction() {
        let mut triggered = batch("b", &["2"]);
        if let Command::Operations(b) = &mut triggered {
            b.operations[0].triggered_by = Some("1".into());
        }
        let cmds = numbered(vec![batch("a", &["1"]), triggered, batch("c", &["3"])]);
        assert_eq!(sessions(&plan(&cmds, 4)), vec![vec![vec!["a", "b", "c"]]]);
        // A trigger within one session leaves the lanes as they are.
        let mut own = batch("a", &["1", "2"]);
        if let Command::Operations(b) = &mut own {
            b.operations[1].triggered_by = Some("1".into());
        }
        let cmds = numbered(vec![own, batch("c", &["3"])]);
        assert_eq!(sessions(&plan(&cmds, 4)), vec![vec![vec!["a"], vec!["c"]]]);
    }
}
