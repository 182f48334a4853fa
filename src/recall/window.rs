//! The sliding window: a session's newest conversation turns that fit a token limit, at least
//! one (the newest, cut to fit when it alone is too long), presented oldest first as
//! `User: …` / `Assistant: …` lines.

use poem_openapi::Object;
use serde::Serialize;

use crate::config::Encoding;
use crate::domain::operation::{render_line, OpType};
use crate::domain::{budget, tokens};
use crate::graph::{operations, Store, StoreResult};

/// Largest `token_limit` accepted.
pub const MAX_TOKEN_LIMIT: usize = 200_000;

#[derive(Clone, Debug, Serialize, Object)]
pub struct Turn {
    pub seq: i64,
    /// `user` or `assistant`.
    pub role: String,
    /// `User: …` or `Assistant: …`.
    pub text: String,
    /// True when this turn was cut to fit the limit.
    pub truncated: bool,
}

#[derive(Clone, Debug, Serialize, Object)]
pub struct Window {
    pub session_id: String,
    /// Oldest first.
    pub turns: Vec<Turn>,
    /// The turns joined by newlines.
    pub text: String,
    /// Tokens of `text` in the server's encoding; at most `token_limit` except that the
    /// newest turn is always present (cut to the limit).
    pub tokens_used: u64,
    pub token_limit: u64,
    /// Older turns left out.
    pub omitted: u64,
}

/// The window of `session_id` for `limit` tokens in `encoding` (the stored counts' encoding).
pub async fn window(
    store: &Store,
    project: &str,
    session_id: &str,
    limit: usize,
    encoding: Encoding,
) -> StoreResult<Window> {
    // Each turn costs at least two tokens ("User:"), so no more than limit/2 + 1 can fit;
    // one more row tells whether older turns exist.
    let fetch = (limit / 2 + 2).min(10_000);
    let rows = operations::window(store, project, session_id, fetch).await?;
    let total = rows.first().map_or(0, |r| r.total.max(0) as usize);
    let lines: Vec<(i64, String, String, usize)> = rows
        .into_iter()
        .map(|r| {
            let role = if r.role.as_deref() == Some("user") {
                "user"
            } else {
                "assistant"
            };
            let text = render_line(
                OpType::Message,
                None,
                &r.summary,
                Some(role),
                r.content.as_deref(),
            );
            // Stored count of the line, plus one for the newline that joins it.
            let cost = r.tokens.max(0) as usize + 1;
            (r.seq, role.to_string(), text, cost)
        })
        .collect();
    let costs: Vec<usize> = lines.iter().map(|l| l.3).collect();
    // The joined text has one newline fewer than the lines.
    let taken = budget::take_newest(&costs, limit + 1);
    let mut turns: Vec<Turn> = Vec::new();
    if taken == 0 {
        if let Some((seq, role, text, _)) = lines.first() {
            let cut = tokens::truncate(encoding, text, limit);
            turns.push(Turn {
                seq: *seq,
                role: role.clone(),
                truncated: cut.len() < text.len(),
                text: cut,
            });
        }
    } else {
        turns = lines[..taken]
            .iter()
            .map(|(seq, role, text, _)| Turn {
                seq: *seq,
                role: role.clone(),
                text: text.clone(),
                truncated: false,
            })
            .collect();
    }
    turns.reverse();
    let count = |turns: &[Turn]| {
        let parts: Vec<&str> = turns.iter().map(|t| t.text.as_str()).collect();
        tokens::count_joined(encoding, &parts)
    };
    let mut used = count(&turns);
    // Stored counts make the selection; the joined text is checked once and the oldest
    // turns dropped should a join ever tokenise longer than the parts.
    while used > limit && turns.len() > 1 {
        turns.remove(0);
        used = count(&turns);
    }
    let text = turns
        .iter()
        .map(|t| t.text.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    let omitted = total.saturating_sub(turns.len()) as u64;
    Ok(Window {
        session_id: session_id.to_string(),
        tokens_used: used as u64,
        text,
        turns,
        token_limit: limit as u64,
        omitted,
    })
}
