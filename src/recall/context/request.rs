//! What a context is asked for: the [`Request`] every door builds, the [`Finder`] a task's
//! related sessions are found with, and the longest task accepted. Plain data; nothing here
//! reads the store.

use crate::config::Encoding;
use crate::domain::budget::Allocation;
use crate::embed::Embedder;
use crate::recall::logs::Logs;
use crate::recall::search::{Lists, Weights};

/// Longest `task` accepted, in characters.
pub const MAX_TASK_CHARS: usize = 4_096;

/// What to assemble.
#[derive(Clone, Debug)]
pub struct Request<'a> {
    pub project: &'a str,
    pub session_id: Option<&'a str>,
    pub task: Option<&'a str>,
    pub budget: usize,
    /// The encoding the answer is counted in.
    pub encoding: Encoding,
    /// The encoding stored operation counts are in (the server's).
    pub stored: Encoding,
    pub allocation: Allocation,
    pub half_life_ms: i64,
    pub finder: Finder<'a>,
    /// Cached session logs: used instead of reading a session's history, and filled with
    /// the small sessions a context reads whole.
    pub logs: &'a Logs,
    /// When the task is asked, in epoch milliseconds: the times it names and recency count
    /// back from then. `None`: now.
    pub asked_at: Option<i64>,
}

impl Request<'_> {
    /// The task when the context is for a task alone (no session named): its decisions are
    /// then ranked by the task's words and its history is the task's relevant operations.
    pub(super) fn task_only(&self) -> Option<&str> {
        match (self.session_id, self.task) {
            (None, Some(t)) => Some(t),
            _ => None,
        }
    }
}

/// How a task context finds related sessions: the search of `POST /v1/sessions/search`.
#[derive(Clone, Copy)]
pub struct Finder<'a> {
    /// Hybrid (BM25 + vectors) when an embedding endpoint is configured, else fulltext.
    pub embedder: Option<&'a Embedder>,
    /// The ranked lists consulted ([`Lists::Both`] but in the quality benchmark).
    pub lists: Lists,
    pub weights: Weights,
}

impl std::fmt::Debug for Finder<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Finder")
            .field("hybrid", &self.embedder.is_some())
            .field("lists", &self.lists)
            .field("weights", &self.weights)
            .finish()
    }
}
