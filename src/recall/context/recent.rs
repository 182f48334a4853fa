//! The session mode's history as read from the store: each session's newest operations as
//! lines, read until the history's share is in hand — from a cached log when there is one,
//! else page by page, several sessions in one query — and the files those logs touched, so a
//! context whose logs are all in hand needs no file query. Also used by a task without
//! relevant operations (its related sessions' newest history).

use std::collections::HashMap;
use std::sync::Arc;

use crate::graph::operations::{self, FileRow, Page};
use crate::graph::{Store, StoreResult};
use crate::recall::logs::{self, Log};
use crate::recall::reconstruction::OperationView;
use crate::recall::scope::ScopeSession;
use crate::recall::touches::{file_rows, Touch};

use super::line::{line, session_header, stored_line, Line};
use super::request::Request;

/// One session's slice of the history: its header and its operations newest first.
pub(super) struct SessionLines {
    pub header: Line,
    /// `(seq, line)`, newest first.
    pub ops: Vec<(i64, Line)>,
    /// Operations the session holds, read or not.
    pub total_ops: usize,
}

/// Rough tokens per operation, to decide how many sessions one query should cover.
const TOKENS_PER_OP_GUESS: usize = 10;

/// Most operations read to complete the logs of a context's uncached sessions; beyond it
/// history is paged and files are queried instead.
const WHOLE_READ_MAX: i64 = 5_000;

/// Operations per history page for a share of `want` tokens.
fn page_size(want: usize) -> usize {
    (want / 8).clamp(50, 2_000)
}

/// The logs of the scope's sessions: cached ones brought up to date, and (with the cache on)
/// the others read whole and cached when together they hold at most four pages' worth of
/// operations (and never more than [`WHOLE_READ_MAX`]).
pub(super) async fn session_logs(
    req: &Request<'_>,
    store: &Store,
    sessions: &[ScopeSession],
    want: usize,
) -> StoreResult<HashMap<String, Arc<Log>>> {
    let mut logs = cached_logs(req, store, sessions).await?;
    let missing: Vec<&ScopeSession> = sessions
        .iter()
        .filter(|s| !logs.contains_key(&s.id))
        .collect();
    let total: i64 = missing.iter().map(|s| s.operation_count.max(0)).sum();
    // A whole read pays back only through the cache, and only when it is not much more than
    // the pages the share needs anyway (else the cache would churn on long sessions).
    let worth = WHOLE_READ_MAX.min(4 * page_size(want) as i64);
    if missing.is_empty() || total > worth || !req.logs.enabled() {
        return Ok(logs);
    }
    let pages: Vec<Page<'_>> = missing
        .iter()
        .filter(|s| s.operation_count > 0)
        .map(|s| Page {
            id: &s.id,
            before: i64::MAX,
        })
        .collect();
    let mut by_session: HashMap<String, Vec<OperationView>> = HashMap::new();
    if !pages.is_empty() {
        let rows = operations::pages(store, req.project, &pages, WHOLE_READ_MAX as usize).await?;
        for r in rows {
            by_session.entry(r.session_id.clone()).or_default().push(r);
        }
    }
    for s in missing {
        let mut ops = by_session.remove(&s.id).unwrap_or_default();
        ops.reverse();
        let log = Log::new(s.started_at, ops);
        logs.insert(s.id.clone(), req.logs.keep(req.project, &s.id, log));
    }
    Ok(logs)
}

/// The scope's sessions whose logs are cached, brought up to date, by id.
async fn cached_logs(
    req: &Request<'_>,
    store: &Store,
    sessions: &[ScopeSession],
) -> StoreResult<HashMap<String, Arc<Log>>> {
    let found = futures::future::try_join_all(sessions.iter().map(|s| {
        req.logs.cached(
            store,
            req.project,
            logs::Head {
                id: &s.id,
                started_at: s.started_at,
                operation_count: s.operation_count,
            },
        )
    }))
    .await?;
    Ok(sessions
        .iter()
        .zip(found)
        .filter_map(|(s, log)| Some((s.id.clone(), log?)))
        .collect())
}

/// Fetches history newest-first until `want` tokens are in hand: a cached log when there is
/// one, else the sessions likely needed in one query, a further page of one session only
/// when its first page was not enough.
pub(super) async fn newest(
    store: &Store,
    req: &Request<'_>,
    sessions: &[ScopeSession],
    cached: &HashMap<String, Arc<Log>>,
    want: usize,
) -> StoreResult<Vec<SessionLines>> {
    let page = page_size(want);
    let to_line = |r: &OperationView| {
        let text = crate::recall::relevant::rendered(r);
        (r.seq, stored_line(req.encoding, req.stored, r.tokens, text))
    };
    let mut out = Vec::new();
    let mut have = 0usize;
    let mut next = 0usize;
    while have <= want && next < sessions.len() {
        let mut group = Vec::new();
        let mut guess = 0usize;
        while next < sessions.len() && (group.is_empty() || have + guess <= want) {
            guess += 20 + sessions[next].operation_count.max(0) as usize * TOKENS_PER_OP_GUESS;
            group.push(next);
            next += 1;
        }
        let pages = group
            .iter()
            .map(|&i| &sessions[i])
            .filter(|s| s.operation_count > 0 && !cached.contains_key(&s.id))
            .map(|s| Page {
                id: &s.id,
                before: i64::MAX,
            })
            .collect::<Vec<_>>();
        let mut by_session: HashMap<String, Vec<OperationView>> = HashMap::new();
        if !pages.is_empty() {
            for r in operations::pages(store, req.project, &pages, page).await? {
                by_session.entry(r.session_id.clone()).or_default().push(r);
            }
        }
        for i in group {
            let s = &sessions[i];
            let header = line(req.encoding, session_header(s));
            have += header.cost;
            let total = s.operation_count.max(0) as usize;
            let mut ops: Vec<(i64, Line)> = Vec::new();
            if let Some(log) = cached.get(&s.id) {
                // Newest first (the newest always), only as far back as the share can use.
                for o in log.ops.iter().rev() {
                    if have > want && !ops.is_empty() {
                        break;
                    }
                    let l = to_line(o);
                    have += l.1.cost;
                    ops.push(l);
                }
            } else {
                ops = by_session
                    .remove(&s.id)
                    .unwrap_or_default()
                    .iter()
                    .map(to_line)
                    .collect();
                have += ops.iter().map(|(_, l)| l.cost).sum::<usize>();
                // A long session: page further back only while the share still wants more.
                while have <= want
                    && ops.len() < total
                    && ops.len().is_multiple_of(page)
                    && !ops.is_empty()
                {
                    let before = ops.last().map_or(i64::MAX, |(seq, _)| *seq);
                    let more: Vec<(i64, Line)> =
                        operations::pages(store, req.project, &[Page { id: &s.id, before }], page)
                            .await?
                            .iter()
                            .map(to_line)
                            .collect();
                    if more.is_empty() {
                        break;
                    }
                    have += more.iter().map(|(_, l)| l.cost).sum::<usize>();
                    ops.extend(more);
                }
            }
            out.push(SessionLines {
                header,
                total_ops: total.max(ops.len()),
                ops,
            });
        }
    }
    Ok(out)
}

/// Files touched in the given logs, as `operations::files_of` lists them: one row per path,
/// the newest reference's mode (a write before a read of the same operation), the sessions
/// that touched it newest first, newest path first, at most `limit`.
pub(super) fn files_from_logs(logs: &[(&str, &Log)], limit: usize) -> Vec<FileRow> {
    let mut touches = Vec::new();
    for (session, log) in logs {
        for o in &log.ops {
            let modes = o
                .files_modified
                .iter()
                .map(|p| (p, "write"))
                .chain(o.files_read.iter().map(|p| (p, "read")));
            touches.extend(modes.map(|(path, mode)| Touch {
                path,
                mode,
                session,
                at: o.at,
                seq: o.seq,
            }));
        }
    }
    // Stable: an operation's write stays before its read.
    touches.sort_by_key(|t| std::cmp::Reverse((t.at, t.seq)));
    let mut out = file_rows(touches, usize::MAX);
    out.sort_by(|a, b| b.at.cmp(&a.at).then_with(|| a.path.cmp(&b.path)));
    out.truncate(limit);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_from_logs_list_each_path_once_newest_first() {
        let op = |seq: i64, at: i64, read: &[&str], write: &[&str]| OperationView {
            seq,
            at,
            files_read: read.iter().map(|p| p.to_string()).collect(),
            files_modified: write.iter().map(|p| p.to_string()).collect(),
            ..Default::default()
        };
        let older = Log::new(
            1,
            vec![op(1, 10, &["a.rs", "b.rs"], &[]), op(2, 20, &[], &["a.rs"])],
        );
        let newer = Log::new(
            2,
            vec![op(1, 30, &["b.rs"], &["b.rs"]), op(2, 40, &["c.rs"], &[])],
        );
        let files = files_from_logs(&[("new", &newer), ("old", &older)], 10);
        let row = |path: &str, mode: &str, sessions: &[&str], at: i64| FileRow {
            path: path.into(),
            mode: Some(mode.into()),
            sessions: sessions.iter().map(|s| s.to_string()).collect(),
            at,
        };
        assert_eq!(
            files,
            vec![
                row("c.rs", "read", &["new"], 40),
                row("b.rs", "write", &["new", "old"], 30),
                row("a.rs", "write", &["old"], 20),
            ]
        );
        assert_eq!(
            files_from_logs(&[("new", &newer), ("old", &older)], 1).len(),
            1
        );
    }
}
