//! Constraints and indexes (`cypher/schema.cypher`) and the schema version recorded in the graph.

use super::{statement, Store, StoreResult};

/// Bump when `cypher/schema.cypher` changes; `/readyz` is not ready until the graph says this.
pub const SCHEMA_VERSION: i64 = 11;

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

/// The full-text indexes whose properties change between versions: the name, the properties
/// today, the statement that drops it.
const FULLTEXT_INDEXES: &[(&str, &[&str], &str)] = &[
    (
        "turn_search",
        &["search_text", "search_parts", "project"],
        include_str!("../../cypher/schema_drop_turn_search.cypher"),
    ),
    (
        "session_search",
        &["search_doc", "search_doc_parts", "project"],
        include_str!("../../cypher/schema_drop_session_search.cypher"),
    ),
];

/// A full-text index as Neo4j shows it.
#[derive(serde::Deserialize)]
struct FulltextIndex {
    name: String,
    properties: Vec<String>,
    state: String,
    #[serde(rename = "populationPercent")]
    population: Option<f64>,
}

async fn fulltext_indexes(store: &Store) -> StoreResult<Vec<FulltextIndex>> {
    store
        .fetch(statement(include_str!(
            "../../cypher/schema_fulltext_indexes.cypher"
        )))
        .await
}

/// Drops each full-text index made on other properties than today's (the schema then
/// recreates it). Returns the indexes dropped.
async fn reconcile_fulltext_indexes(store: &Store) -> StoreResult<Vec<&'static str>> {
    let mut dropped = Vec::new();
    for index in fulltext_indexes(store).await? {
        let Some(&(name, properties, drop)) =
            FULLTEXT_INDEXES.iter().find(|(n, ..)| *n == index.name)
        else {
            continue;
        };
        if index.properties == properties {
            continue;
        }
        tracing::warn!(
            index = name,
            properties = ?index.properties,
            today = ?properties,
            "full-text index made on other properties; dropping and recreating it (searches wait until it is online)"
        );
        store.run(statement(drop)).await?;
        dropped.push(name);
    }
    Ok(dropped)
}

/// Waits until the full-text indexes `names` are online, logging their progress.
async fn await_online(store: &Store, names: &[&str]) -> StoreResult<()> {
    let mut logged = std::time::Instant::now();
    loop {
        let pending: Vec<FulltextIndex> = fulltext_indexes(store)
            .await?
            .into_iter()
            .filter(|i| names.contains(&i.name.as_str()) && i.state != "ONLINE")
            .collect();
        if pending.is_empty() {
            return Ok(());
        }
        if logged.elapsed() >= std::time::Duration::from_secs(5) {
            for i in &pending {
                tracing::info!(
                    index = %i.name,
                    state = %i.state,
                    percent = i.population.unwrap_or_default(),
                    "populating the full-text index; ready once it is online"
                );
            }
            logged = std::time::Instant::now();
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
}

/// Applies every statement (idempotent) and records [`SCHEMA_VERSION`]; a vector index of
/// another dimension than `embed_dimensions` is recreated, and so is a full-text index made on
/// other properties than today's (the version is recorded once it is online).
pub async fn apply(store: &Store, embed_dimensions: u32) -> StoreResult<()> {
    reconcile_vector_indexes(store, embed_dimensions).await?;
    let remade = reconcile_fulltext_indexes(store).await?;
    for text in statements() {
        let q = neo4rs::query(&text);
        let q = if text.contains("$dimensions") {
            q.param("dimensions", i64::from(embed_dimensions))
        } else {
            q
        };
        store.run(q).await?;
    }
    await_online(store, &remade).await?;
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
