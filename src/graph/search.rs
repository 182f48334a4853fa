//! The write side of search that capture needs: marking a session's search document stale.
//! Building documents and embeddings is `recall::index`'s job.

use super::{statement, StoreResult, Tx};

/// Marks a session's search document stale; the indexer rebuilds it in the background.
pub async fn mark_dirty(tx: &mut Tx, project: &str, session_id: &str) -> StoreResult<()> {
    tx.run(
        statement(include_str!("../../cypher/search_mark_dirty.cypher"))
            .param("project", project)
            .param("session_id", session_id),
    )
    .await
}
