//! Constraints and indexes (`cypher/schema.cypher`) and the schema version recorded in the graph.

use super::{statement, Store, StoreResult};

/// Bump when `cypher/schema.cypher` changes; `/readyz` is not ready until the graph says this.
pub const SCHEMA_VERSION: i64 = 9;

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

/// The vector indexes, each with the statement that drops it.
const VECTOR_INDEXES: &[(&str, &str)] = &[
    (
        "operation_embedding",
        include_str!("../../cypher/schema_drop_operation_embedding.cypher"),
    ),
    (
        "passage_embedding",
        include_str!("../../cypher/schema_drop_passage_embedding.cypher"),
    ),
    (
        "session_embedding",
        include_str!("../../cypher/schema_drop_session_embedding.cypher"),
    ),
];

/// Drops each vector index whose dimension differs from the configured model's (the schema
/// then recreates it): vectors of another dimension cannot be compared with the model's.
/// Returns the indexes dropped.
pub async fn reconcile_vector_indexes(
    store: &Store,
    embed_dimensions: u32,
) -> StoreResult<Vec<&'static str>> {
    #[derive(serde::Deserialize)]
    struct Row {
        name: String,
        dimensions: Option<i64>,
    }
    let rows: Vec<Row> = store
        .fetch(statement(include_str!(
            "../../cypher/schema_vector_indexes.cypher"
        )))
        .await?;
    let mut dropped = Vec::new();
    for row in rows {
        let Some(&(name, drop)) = VECTOR_INDEXES.iter().find(|(n, _)| *n == row.name) else {
            continue;
        };
        if row.dimensions == Some(i64::from(embed_dimensions)) {
            continue;
        }
        tracing::warn!(
            index = name,
            dimensions = ?row.dimensions,
            configured = embed_dimensions,
            "vector index dimension differs from the configured embedding model; dropping and recreating it (vectors are re-embedded in the background)"
        );
        store.run(statement(drop)).await?;
        dropped.push(name);
    }
    Ok(dropped)
}

/// Applies every statement (idempotent) and records [`SCHEMA_VERSION`]; a vector index of
/// another dimension than `embed_dimensions` is recreated.
pub async fn apply(store: &Store, embed_dimensions: u32) -> StoreResult<()> {
    reconcile_vector_indexes(store, embed_dimensions).await?;
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
