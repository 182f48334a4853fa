//! Purges: a session or a whole project, with every node and edge they own.

use super::{statement, StoreResult, Tx};

pub async fn session(tx: &mut Tx, project: &str, id: &str) -> StoreResult<()> {
    tx.run(
        statement(include_str!("../../cypher/purge_session.cypher"))
            .param("project", project)
            .param("id", id),
    )
    .await?;
    orphans(tx, project).await
}

pub async fn project(tx: &mut Tx, project: &str) -> StoreResult<()> {
    tx.run(statement(include_str!("../../cypher/purge_project.cypher")).param("project", project))
        .await
}

async fn orphans(tx: &mut Tx, project: &str) -> StoreResult<()> {
    tx.run(statement(include_str!("../../cypher/purge_orphans.cypher")).param("project", project))
        .await
}
