//! The read path: what cairn gives back to agents. Reads the graph through `graph` and
//! `Store`; never writes captured data (the indexer only writes derived search fields).

pub mod index;
pub mod search;
