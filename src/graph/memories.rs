//! Memories: facts, assumptions, lessons and discoveries someone asked cairn to remember.

use serde::Deserialize;

use super::{statement, Store, StoreResult, Tx};
use crate::domain::{record::NewMemory, turn_text};

pub async fn create(tx: &mut Tx, m: &NewMemory) -> StoreResult<()> {
    tx.run(super::with_search_text(
        statement(include_str!("../../cypher/memories/create.cypher"))
            .param("id", m.id.as_str())
            .param("project", m.project.as_str())
            .param("session_id", m.session_id.clone())
            .param("kind", m.kind.as_str())
            .param("content", m.content.as_str())
            .param("confidence", m.confidence)
            .param("tokens", m.tokens)
            .param("at", m.at),
        turn_text::memory(&m.kind, &m.content),
    ))
    .await
}

/// A memory as a context weighs it.
#[derive(Clone, Debug, Deserialize)]
pub struct ContextMemory {
    pub kind: String,
    pub content: String,
    pub confidence: Option<f64>,
    pub session_id: Option<String>,
    pub tokens: i64,
}

impl ContextMemory {
    /// Bytes it holds, roughly.
    pub fn size(&self) -> usize {
        64 + self.kind.len() + self.content.len() + self.session_id.as_ref().map_or(0, String::len)
    }
}

/// What changes whenever a project's memories do, read without reading them: see
/// `beliefs/and_memories_fingerprint.cypher` ([`super::beliefs::fingerprints`]).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct Fingerprint {
    memories: i64,
    last: i64,
    at_sum: i64,
    tokens: i64,
}

/// The project's memories a context chooses from, at most `limit`.
pub async fn for_context(
    store: &Store,
    project: &str,
    limit: usize,
) -> StoreResult<Vec<ContextMemory>> {
    store
        .read()
        .fetch(
            statement(include_str!("../../cypher/memories/for_context.cypher"))
                .param("project", project)
                .param("limit", limit as i64),
        )
        .await
}
