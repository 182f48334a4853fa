//! Files from the operations that touched them, as a context lists them: one [`FileRow`] per
//! path, with the sessions that touched it and its newest touch's mode and time. A session's
//! context groups its logs' touches newest first; a task's, its relevant operations' touches in
//! the order of the hits. Pure.

use std::collections::HashMap;

use crate::graph::operations::FileRow;

/// One operation touching one file.
pub struct Touch<'a> {
    pub path: &'a str,
    /// `write` or `read`.
    pub mode: &'static str,
    pub session: &'a str,
    /// When the operation happened (epoch milliseconds), and its place in its session.
    pub at: i64,
    pub seq: i64,
}

/// `touches` grouped in the order given: a row per path (in the order of its first touch, at
/// most `limit` paths), its sessions in the order they first touched it, the mode and time of
/// its newest touch by `(at, seq)` — the first given of equals, so an operation's write listed
/// before its read of the same file is its mode.
pub fn file_rows<'a>(touches: impl IntoIterator<Item = Touch<'a>>, limit: usize) -> Vec<FileRow> {
    let mut index: HashMap<&str, usize> = HashMap::new();
    let mut out: Vec<FileRow> = Vec::new();
    // The newest touch (at, seq) of each row.
    let mut newest: Vec<(i64, i64)> = Vec::new();
    for t in touches {
        let i = match index.get(t.path) {
            Some(&i) => i,
            None if out.len() >= limit => continue,
            None => {
                index.insert(t.path, out.len());
                out.push(FileRow {
                    path: t.path.to_string(),
                    mode: None,
                    sessions: Vec::new(),
                    at: i64::MIN,
                });
                newest.push((i64::MIN, i64::MIN));
                out.len() - 1
            }
        };
        let row = &mut out[i];
        if !row.sessions.iter().any(|s| s == t.session) {
            row.sessions.push(t.session.to_string());
        }
        if (t.at, t.seq) > newest[i] {
            newest[i] = (t.at, t.seq);
            row.at = t.at;
            row.mode = Some(t.mode.to_string());
        }
    }
    out
}
