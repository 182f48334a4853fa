//! One integration-test binary: the real app, the real Neo4j, a project per test.
#![recursion_limit = "256"]

mod auth;
mod beliefs;
mod bench_cli;
mod bench_ingest;
mod bench_ui;
mod decisions;
mod deploy;
mod doors;
mod durability;
mod embed;
mod extraction;
mod faults;
mod health;
mod held_vectors;
mod helpers;
mod hooks;
mod hostile;
mod import;
mod knowledge;
mod mcp;
mod openapi;
mod operations;
mod purge;
mod recall;
mod recall_cache;
mod replicas;
mod routing;
mod search;
mod sessions;
mod summaries;
mod trace;
mod turns;
mod ui;
mod ui_browser;
