//! cairn — a durable, queryable memory for AI coding agents and the teams that run them,
//! kept in Neo4j.
//!
//! # Layout
//!
//! Data flows one way: `api` / `mcp` / `ui` / `cli` → `request` → `capture` / `recall` →
//! `graph` → Neo4j. `domain` depends on nothing; nothing below `api` and `ui` knows about HTTP.
//!
//! This crate holds what `cairn` and its commands run, nothing else. Beside it in the
//! workspace: `crates/testkit` (test apps built with `TestApp::builder`, the Neo4j fault
//! proxy, LLM and embedding stubs, `cairn serve` children; a dev-dependency) and
//! `crates/bench` (the `cairn-bench` binary: every benchmark, with its own statements).
//!
//! - [`config`] — settings from flags and `CAIRN_*` variables; secrets never print.
//! - [`allocator`] — what a binary with mimalloc as allocator asks of the library: the idle
//!   embedding thread hands its freed memory back.
//! - [`telemetry`] — tracing (text or JSON), the current request's id, the Prometheus recorder.
//! - [`error`] — the one error table: stable code, HTTP status, what to do.
//! - [`app`] — `Application::build` → `port()` → `run_until_stopped()`; shutdown and
//!   background tasks (schema, idle-session sweep under a lease, scheduled extraction).
//! - [`state`] — `AppState`, what every handler, tool and background job shares.
//! - [`auth`] — API keys (hashed), scopes, per-key rate limits; the `/v1` and `/mcp` guard.
//! - [`api`] — one `#[OpenApi]` struct per resource, JSON errors whose statuses each route
//!   declares (`api::error`), the bearer scheme (`api::key`), parameter types that state their
//!   rules in the spec (`api::params`), what the derives cannot say (`api::spec`), 405 with
//!   `Allow` (`api::allow`), request ids, spans and metrics (`api::trace`); request
//!   bodies decoded in one serde pass (`api::body`); the `X-Cairn-Bookmark` header
//!   (`api::bookmark`).
//! - [`request`] — requests as every door (HTTP, MCP, hooks, CLI, web UI) hands them on:
//!   one type and one rule per parameter — ids, the project a request touches, token
//!   budgets, list limits, reconstruction options — parsed once at the edge.
//! - [`cli`] — one file per `cairn` subcommand.
//! - [`domain`] — operations, decisions, memories; session, belief and run states
//!   (`domain::state`); validation (field paths named lazily,
//!   `domain::field`) and size limits; paths;
//!   token counting (tiktoken); conviction math; context budgets (`domain::budget`); the
//!   bounded text a turn is searched by (`domain::turn_text`) and the parts of the
//!   identifiers in it (`domain::compounds`); the time a query names (`domain::when`).
//! - [`capture`] — the write path: durable spool (preallocated segments, fsync, group commit)
//!   and the writer that drains it into Neo4j in order, over a few lanes of transactions (a
//!   session never split); the writer runs on a thread of its own at lower CPU priority with
//!   its own connections, and new operations lean on the unique id constraint, not a lookup.
//!   `summary` sums up a session that ends without a summary (close, idle sweep).
//! - [`knowledge`] — the CI report: what is known about a set of files, as JSON and Markdown.
//! - [`recall`] — the read path: session reconstruction (narrative, unfinished work),
//!   token-budgeted context with long-term memory (`context`: gathering from the store,
//!   ranking each section's candidates, fitting them into the budget, one `SectionKind` per
//!   section), the sliding window, hybrid session search
//!   (`search`; documents and embeddings kept by `index`; sessions also ranked by the turns
//!   they hold), the ranking both searches share (`rank`: lists, weights, escaped Lucene
//!   queries, reciprocal-rank fusion), the session a context draws on (`scope`), turn-level
//!   search (`turns`: single
//!   operations, decisions, memories and summaries, the full-text list re-ranked with the
//!   project's own word statistics by `bm25`; their vectors kept by `turn_index`, each
//!   recording its model), task context built from the most relevant turns with the reply
//!   or result after them (`relevant`; a long one shown around what bears on the task by
//!   `excerpt`), prompt-time recall for UserPromptSubmit (`prompt`),
//!   the wake-up `handover`. Sessions'
//!   operation logs are cached exactly in `logs` (append-only, extended by what is new).
//!   Budget arithmetic is pure, in `domain::budget`.
//! - [`graph`] — the Neo4j store, the one module that runs statements: typed functions, one
//!   file per aggregate, their statements in `cypher/<aggregate>/`; `nodelay` turns Nagle's
//!   algorithm off on the driver's sockets; `lease` holds the leases background jobs shared
//!   by replicas run under (expiry, heartbeat, ticks done). Functions that only read go
//!   to a cluster's readers (`Store::read`), after the request's bookmarks (`causal`).
//! - [`extract`] — the pattern-extraction job: candidate mining, session digest, versioned
//!   prompts (`prompts/`), the LLM client, answer validation, applying results in one
//!   transaction per session; `ExtractionRun` records. Sessions are claimed in the graph
//!   before the LLM sees them (runs on several replicas pay once); `extract::schedule` runs
//!   the job on a cron schedule under a lease.
//! - [`claude`] — Claude Code: hook event shapes (after the SDK's types, `docs/claude-code.md`),
//!   the one event → capture mapping (subagents into child sessions), secret redaction, the
//!   fenced context hooks answer with (SessionStart handover, a file's decisions at
//!   PreToolUse), transcript parsing (both layouts: subagents as child sessions, compaction
//!   summaries, wrappers skipped), settings merging and the pinned project.
//! - [`mcp`] — MCP at `/mcp` (rmcp, streamable HTTP): the agent-facing tools.
//! - [`ui`] — the team's web UI at `/ui`: server-rendered pages (maud, no script, strict
//!   CSP), sign-in with a project's key exchanged for a cookie whose state lives in Neo4j
//!   (`ui::guard`), CSRF-checked actions; pages read through the API's own functions.
//! - [`embed`] — embeddings: one `Embedder` over the embedded all-MiniLM-L6-v2 or
//!   e5-small-v2 (`local`: candle on the CPU, its own thread, length-sorted batches;
//!   e5's weights read out of its ONNX export; the default) and an OpenAI-compatible endpoint
//!   (`remote`); `model()` names what made each vector, `calibration()` how its cosines read.

pub mod allocator;
pub mod api;
pub mod app;
pub mod auth;
pub mod capture;
pub mod claude;
pub mod cli;
pub mod config;
pub mod domain;
pub mod embed;
pub mod error;
pub mod extract;
pub mod graph;
pub mod knowledge;
pub mod mcp;
pub mod recall;
pub mod request;
pub mod state;
pub mod telemetry;
pub mod ui;
