//! One integration-test binary: the real app, the real Neo4j, a project per test.

mod auth;
mod beliefs;
mod decisions;
mod durability;
mod health;
mod helpers;
mod knowledge;
mod openapi;
mod operations;
mod purge;
mod recall;
mod search;
mod sessions;
