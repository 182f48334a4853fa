//! The benchmarks end to end at a small size, against the real Neo4j (and, for faults, a real
//! `cairn serve` child: the `cairn` binary of the same target directory, which
//! `cargo test --workspace` builds).
#![recursion_limit = "256"]

mod faults;
mod ingest;
