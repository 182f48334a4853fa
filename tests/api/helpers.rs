//! The test kit's app builder and assertion helpers (`crates/testkit`), as the tests name
//! them.

pub use cairn_testkit::app::{
    client_with_key, count, eventually, mint_key, neo4j_proxy, neo4j_uri, schema_once, settle,
    split, store, TestApp,
};
pub use cairn_testkit::embed::{app_with_embeddings, embeddings_answer};
pub use cairn_testkit::Neo4jProxy;
