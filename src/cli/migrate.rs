//! `cairn migrate`: applies the schema and records its version; safe to run any number of times.

use anyhow::Context;

use crate::config::Neo4jSettings;
use crate::graph::{schema, Store};

pub async fn run(neo4j: Neo4jSettings) -> anyhow::Result<()> {
    let store = Store::connect(&neo4j).context("invalid Neo4j settings")?;
    schema::apply(&store, neo4j.embed_dimensions)
        .await
        .with_context(|| {
            format!(
                "could not apply the schema to {}; is Neo4j running (scripts/neo4j-local status)?",
                neo4j.uri
            )
        })?;
    println!(
        "schema version {} applied ({} statements) to {}",
        schema::SCHEMA_VERSION,
        schema::statements().len(),
        neo4j.uri
    );
    Ok(())
}
