//! Purges: a session or a whole project, with every node and edge they own.

use super::{statement, Store, StoreResult, Tx};

/// Operations deleted per transaction when a project is purged in steps.
const CHUNK: i64 = 5_000;
/// The smallest step: a step Neo4j has no memory for is halved down to it.
const MIN_CHUNK: i64 = 100;

pub async fn session(tx: &mut Tx, project: &str, id: &str) -> StoreResult<()> {
    tx.run(
        statement(include_str!("../../cypher/purge/session.cypher"))
            .param("project", project)
            .param("id", id),
    )
    .await?;
    orphans(tx, project).await
}

pub async fn project(tx: &mut Tx, project: &str) -> StoreResult<()> {
    tx.run(statement(include_str!("../../cypher/purge/project.cypher")).param("project", project))
        .await
}

/// Deletes a project's operations (the bulk of any project) in transactions of `CHUNK`,
/// ahead of [`project`], which then has little left to do; a transaction refused for
/// Neo4j's transaction memory (`dbms.memory.transaction.total.max`, shared by every
/// transaction running) is tried again at half the size. Returns how many were deleted.
pub async fn operations_in_steps(store: &Store, project: &str) -> StoreResult<u64> {
    #[derive(serde::Deserialize)]
    struct Deleted {
        deleted: i64,
    }
    let mut total = 0u64;
    let mut chunk = CHUNK;
    loop {
        let step = store
            .fetch_one::<Deleted>(
                statement(include_str!("../../cypher/purge/operations_chunk.cypher"))
                    .param("project", project)
                    .param("limit", chunk),
            )
            .await;
        let n = match step {
            Ok(d) => d.map_or(0, |d| d.deleted),
            Err(e) if e.is_out_of_memory() && chunk > MIN_CHUNK => {
                chunk = (chunk / 2).max(MIN_CHUNK);
                tracing::warn!(project, chunk, error = %e, "purge step too large for Neo4j's transaction memory; trying a smaller one");
                continue;
            }
            Err(e) => return Err(e),
        };
        total += n as u64;
        if n < chunk {
            return Ok(total);
        }
    }
}

/// Purges a project outside the capture path (benchmarks cleaning up after themselves).
/// A purge is idempotent: one that lost a lock conflict (a server's background pass still at
/// work on the project) is run again from its start.
pub async fn project_now(store: &Store, project: &str) -> StoreResult<()> {
    super::again_if_transient(super::StoreError::is_transient, || async {
        operations_in_steps(store, project).await?;
        let mut tx = store.begin().await?;
        self::project(&mut tx, project).await?;
        tx.commit().await.map(|_| ())
    })
    .await
}

async fn orphans(tx: &mut Tx, project: &str) -> StoreResult<()> {
    tx.run(statement(include_str!("../../cypher/purge/orphans.cypher")).param("project", project))
        .await
}
