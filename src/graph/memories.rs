//! Memories: facts, assumptions, lessons and discoveries someone asked cairn to remember.

use super::{statement, StoreResult, Tx};
use crate::domain::{record::NewMemory, turn_text};

pub async fn create(tx: &mut Tx, m: &NewMemory) -> StoreResult<()> {
    tx.run(
        statement(include_str!("../../cypher/memory_create.cypher"))
            .param("id", m.id.as_str())
            .param("project", m.project.as_str())
            .param("session_id", m.session_id.clone())
            .param("kind", m.kind.as_str())
            .param("content", m.content.as_str())
            .param("confidence", m.confidence)
            .param("tokens", m.tokens)
            .param("search_text", turn_text::memory(&m.kind, &m.content))
            .param("at", m.at),
    )
    .await
}
