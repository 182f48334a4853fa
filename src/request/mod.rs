//! Requests as the service understands them, whichever door they come in by — HTTP, MCP,
//! the Claude Code hook route, the command line, the web UI. Each parameter has one type
//! and one rule, parsed once at the edge: a [`ProjectId`], a [`SessionId`], a
//! [`TokenBudget`], a list's [`Limit`], reconstruction options ([`reconstruction`]), a search [`Query`];
//! past the edge a value of such a type is valid by construction. A door only maps its own
//! shape (query strings, tool arguments, flags) onto these parsers, and the requests built
//! from them ([`ContextAsk`], [`SearchAsk`], [`TurnSearchAsk`], [`HandoverAsk`],
//! [`KnowledgeAsk`], [`BeliefsAsk`], [`DecisionsAsk`]) carry what the read path needs.
//!
//! - `ids` — project and session ids, record ids (beliefs, runs).
//! - `project` — which project a request touches: named, else the key's (else, for a hook,
//!   the event's git root), always checked against the key.
//! - `budget` — token budgets: one range everywhere, each use's default named.
//! - `limit` — how many items a list answers with, per list.
//! - `text` — search queries, tasks, token encodings.
//! - `reconstruction` — what a reconstruction includes.
//! - `asks` — the composite requests shared by several doors.

mod asks;
mod budget;
mod ids;
mod limit;
mod project;
mod reconstruction;
mod text;

pub use asks::{
    asked_at, BeliefsAsk, ContextAsk, DecisionsAsk, HandoverAsk, KnowledgeAsk, KnowledgeFormat,
    SearchAsk, TurnSearchAsk,
};
pub use budget::TokenBudget;
pub use ids::{ProjectId, RecordId, SessionId};
pub use limit::Limit;
pub use project::{resolve, resolve_or, scoped};
pub use reconstruction::reconstruction;
pub use text::{encoding, Query, Task};

/// A command-line flag's whole number, before its rule is checked.
fn whole_number(raw: &str) -> Result<i64, String> {
    raw.trim()
        .parse()
        .map_err(|_| format!("`{raw}` is not a whole number"))
}
