//! Sessions' operation logs, cached. An operation never changes once committed, and the
//! session's `op_count` moves in the same transaction as its operations, so a cached log is
//! exact while its length equals the `operation_count` a read of the session returns; a
//! shorter one is brought up to date by reading only the operations after its last seq
//! (seq is gap-free from 1). The entry also carries the session's `started_at`, so a session
//! purged and started again under the same id is never answered from the old log.
//!
//! Reconstruction loads whole logs through here; context uses a cached log instead of paging
//! the session and stores the ones its first page read completely. Bounded in bytes
//! (`CAIRN_RECALL_CACHE_MB`; 0 turns it off), least recently used first out.

use std::sync::Arc;

pub use crate::graph::operations::OperationView;
use crate::graph::{operations, Store, StoreResult};

/// One session's operations, seq 1..=n in order; shared, so extending a log copies
/// pointers, not operations.
#[derive(Debug)]
pub struct Log {
    pub started_at: i64,
    pub ops: Vec<Arc<OperationView>>,
}

impl Log {
    pub fn new(started_at: i64, ops: Vec<OperationView>) -> Self {
        Self {
            started_at,
            ops: ops.into_iter().map(Arc::new).collect(),
        }
    }
}

/// What a read of the session said about it.
#[derive(Clone, Copy, Debug)]
pub struct Head<'a> {
    pub id: &'a str,
    pub started_at: i64,
    pub operation_count: i64,
}

type Key = (String, String);

/// The cache; cheap to share behind an `Arc`.
pub struct Logs {
    cache: Option<moka::sync::Cache<Key, Arc<Log>>>,
}

impl std::fmt::Debug for Logs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Logs")
            .field("enabled", &self.cache.is_some())
            .finish()
    }
}

/// Bytes an operation is charged beyond its text: the struct (16 fields, mostly strings),
/// its `Arc`, the pointer to it and the allocator's per-allocation overhead.
const OP_OVERHEAD: usize = 512;

fn weight(log: &Log) -> u32 {
    let text = |s: &Option<String>| s.as_ref().map_or(0, String::len);
    let bytes: usize = log
        .ops
        .iter()
        .map(|o| {
            OP_OVERHEAD
                + o.id.len()
                + o.kind.len()
                + o.summary.len()
                + text(&o.target)
                + text(&o.tool)
                + text(&o.role)
                + text(&o.content)
                + text(&o.todos)
                + text(&o.status)
                + text(&o.decision_id)
                + o.files_read
                    .iter()
                    .chain(&o.files_modified)
                    .map(String::len)
                    .sum::<usize>()
        })
        .sum();
    u32::try_from(bytes).unwrap_or(u32::MAX)
}

/// True when `ops` continue a log that ended at seq `after` without a gap.
fn continues<'a>(after: i64, ops: impl IntoIterator<Item = &'a OperationView>) -> bool {
    ops.into_iter()
        .zip(after + 1..)
        .all(|(o, seq)| o.seq == seq)
}

impl Logs {
    /// A cache holding at most `max_bytes` (0: nothing is cached).
    pub fn new(max_bytes: u64) -> Self {
        let cache = (max_bytes > 0).then(|| {
            moka::sync::Cache::builder()
                .max_capacity(max_bytes)
                .weigher(|_: &Key, log: &Arc<Log>| weight(log))
                .build()
        });
        Self { cache }
    }

    /// False when the cache holds nothing (`CAIRN_RECALL_CACHE_MB=0`).
    pub fn enabled(&self) -> bool {
        self.cache.is_some()
    }

    fn key(project: &str, id: &str) -> Key {
        (project.to_string(), id.to_string())
    }

    /// The session's whole log: the cached one brought up to date, else read and kept.
    pub async fn load(
        &self,
        store: &Store,
        project: &str,
        head: Head<'_>,
    ) -> StoreResult<Arc<Log>> {
        if let Some(log) = self.cached(store, project, head).await? {
            return Ok(log);
        }
        let ops = read_after(store, project, head.id, 0).await?;
        Ok(self.keep(project, head.id, Log::new(head.started_at, ops)))
    }

    /// The cached log brought up to date (reading only what was appended since), or `None`
    /// when the session is not cached; never reads a whole session.
    pub async fn cached(
        &self,
        store: &Store,
        project: &str,
        head: Head<'_>,
    ) -> StoreResult<Option<Arc<Log>>> {
        let Some(cache) = &self.cache else {
            return Ok(None);
        };
        let key = Self::key(project, head.id);
        let Some(log) = cache.get(&key) else {
            metrics::counter!("cairn_recall_cache_total", "result" => "miss").increment(1);
            return Ok(None);
        };
        let have = log.ops.len() as i64;
        if log.started_at != head.started_at || have > head.operation_count {
            cache.invalidate(&key);
            metrics::counter!("cairn_recall_cache_total", "result" => "stale").increment(1);
            return Ok(None);
        }
        if have == head.operation_count {
            metrics::counter!("cairn_recall_cache_total", "result" => "hit").increment(1);
            return Ok(Some(log));
        }
        let after = log.ops.last().map_or(0, |o| o.seq);
        let newer = read_after(store, project, head.id, after).await?;
        if !continues(after, &newer) {
            cache.invalidate(&key);
            metrics::counter!("cairn_recall_cache_total", "result" => "stale").increment(1);
            return Ok(None);
        }
        metrics::counter!("cairn_recall_cache_total", "result" => "extended").increment(1);
        let mut ops = Vec::with_capacity(log.ops.len() + newer.len());
        ops.extend(log.ops.iter().cloned());
        ops.extend(newer.into_iter().map(Arc::new));
        Ok(Some(self.keep(
            project,
            head.id,
            Log {
                started_at: log.started_at,
                ops,
            },
        )))
    }

    /// Keeps `log` when it is a whole log (seq 1..=n); returns it either way.
    pub fn keep(&self, project: &str, id: &str, log: Log) -> Arc<Log> {
        let log = Arc::new(log);
        if let Some(cache) = &self.cache {
            if continues(0, log.ops.iter().map(Arc::as_ref)) {
                cache.insert(Self::key(project, id), log.clone());
            }
        }
        log
    }

    /// Drops a purged session.
    pub fn forget_session(&self, project: &str, id: &str) {
        if let Some(cache) = &self.cache {
            cache.invalidate(&Self::key(project, id));
        }
    }

    /// Drops every session of a purged project.
    pub fn forget_project(&self, project: &str) {
        if let Some(cache) = &self.cache {
            let gone: Vec<Arc<Key>> = cache
                .iter()
                .filter(|(k, _)| k.0 == project)
                .map(|(k, _)| k)
                .collect();
            for k in gone {
                cache.invalidate(k.as_ref());
            }
        }
    }
}

/// The session's operations with seq above `after`, in seq order.
async fn read_after(
    store: &Store,
    project: &str,
    session_id: &str,
    after: i64,
) -> StoreResult<Vec<OperationView>> {
    operations::after(store, project, session_id, after).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(seq: i64) -> OperationView {
        OperationView {
            id: format!("o{seq}"),
            seq,
            kind: "read".into(),
            target: None,
            summary: "looked".into(),
            files_read: vec!["src/lib.rs".into()],
            at: seq,
            tokens: 3,
            ..Default::default()
        }
    }

    #[test]
    fn only_gap_free_logs_from_seq_one_are_kept() {
        let logs = Logs::new(1 << 20);
        logs.keep("p", "s", Log::new(1, vec![op(1), op(2), op(3)]));
        logs.keep("p", "gap", Log::new(1, vec![op(1), op(3)]));
        let cache = logs.cache.as_ref().unwrap();
        assert!(cache.contains_key(&Logs::key("p", "s")));
        assert!(!cache.contains_key(&Logs::key("p", "gap")));
        assert!(continues(3, &[op(4), op(5)]));
        assert!(!continues(3, &[op(5)]));
    }

    #[test]
    fn forgetting_a_project_leaves_the_others() {
        let logs = Logs::new(1 << 20);
        for (p, s) in [("a", "1"), ("a", "2"), ("b", "1")] {
            logs.keep(p, s, Log::new(1, vec![op(1)]));
        }
        logs.forget_project("a");
        let cache = logs.cache.as_ref().unwrap();
        assert!(!cache.contains_key(&Logs::key("a", "1")));
        assert!(!cache.contains_key(&Logs::key("a", "2")));
        assert!(cache.contains_key(&Logs::key("b", "1")));
    }

    #[test]
    fn the_byte_bound_holds() {
        let logs = Logs::new(12_000);
        for s in 0..50 {
            logs.keep("p", &s.to_string(), Log::new(1, (1..=5).map(op).collect()));
        }
        let cache = logs.cache.as_ref().unwrap();
        cache.run_pending_tasks();
        assert!(cache.weighted_size() <= 12_000, "{}", cache.weighted_size());
        assert!(cache.entry_count() < 50);
        assert!(Logs::new(0).cache.is_none());
    }
}
