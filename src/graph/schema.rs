//! Constraints and indexes (`cypher/schema.cypher`) and the schema version recorded in the graph.

use super::{statement, Store, StoreResult};

/// Bump when `cypher/schema.cypher` changes; `/readyz` is not ready until the graph says this.
pub const SCHEMA_VERSION: i64 = 5;

const SCHEMA: &str = include_str!("../../cypher/schema.cypher");
const VERSION_GET: &str = include_str!("../../cypher/schema_version_get.cypher");
const VERSION_SET: &str = include_str!("../../cypher/schema_version_set.cypher");

/// The statements of the schema file, comments dropped, in file order.
pub fn statements() -> Vec<String> {
    let without_comments: String = SCHEMA
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    without_comments
        .split(';')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Applies every statement (idempotent) and records [`SCHEMA_VERSION`].
pub async fn apply(store: &Store, embed_dimensions: u32) -> StoreResult<()> {
    for text in statements() {
        let q = neo4rs::query(&text);
        let q = if text.contains("$dimensions") {
            q.param("dimensions", i64::from(embed_dimensions))
        } else {
            q
        };
        store.run(q).await?;
    }
    store
        .run(
            statement(VERSION_SET)
                .param("version", SCHEMA_VERSION)
                .param("now", super::now_ms()),
        )
        .await
}

/// The schema version the graph records, if any.
pub async fn version(store: &Store) -> StoreResult<Option<i64>> {
    #[derive(serde::Deserialize)]
    struct Row {
        version: Option<i64>,
    }
    Ok(store
        .fetch_one::<Row>(statement(VERSION_GET))
        .await?
        .and_then(|r| r.version))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_splits_into_idempotent_statements() {
        let stmts = statements();
        assert!(stmts.len() > 20, "got {}", stmts.len());
        for s in &stmts {
            assert!(s.contains("IF NOT EXISTS"), "not idempotent: {s}");
        }
    }
}
