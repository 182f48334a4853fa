//! What cairn's tests and benchmarks run cairn with; a dev-dependency of the product and a
//! dependency of `cairn-bench`, never part of the `cairn` binary.
//!
//! - [`app`] — [`TestApp`]: the real application on port 0 against the real Neo4j, built
//!   with [`TestApp::builder`] (a spool of its own, a fresh project and admin key), plus
//!   the helpers tests assert with (a store, counts, polling).
//! - [`proxy`] — [`Neo4jProxy`]: a TCP proxy in front of Neo4j that cuts, restores and slows
//!   the connections of the cairn behind it.
//! - [`embed`] — a fake OpenAI-compatible embeddings endpoint (wiremock) whose vectors know a
//!   few synonyms, and apps that use it, one at a time.
//! - [`llm_stub`] — a chat-completion endpoint that misbehaves on purpose, per session.
//! - [`stub`] — serving such a stub over HTTP on loopback, in this process.
//! - [`child`] — a real `cairn serve` child process (start, SIGKILL, SIGTERM, restart, memory), and
//!   where the `cairn` binary is.
// The app future nests deeply: the whole application is built inside it.
#![recursion_limit = "256"]

pub mod app;
pub mod child;
pub mod embed;
pub mod llm_stub;
pub mod proxy;
pub mod stub;

pub use app::TestApp;
pub use proxy::Neo4jProxy;
