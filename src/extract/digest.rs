//! The session digest: one line per operation, each starting with its operation id, selected
//! newest-first until the token budget (counted with tiktoken) is spent, then presented in
//! chronological order.

use crate::config::Encoding;
use crate::domain::{operation, tokens};
use crate::graph::extraction::OpRow;

/// Characters of one operation's text kept in a line; the rest is cut with `…`.
pub const MAX_LINE_CHARS: usize = 300;

#[derive(Clone, Debug, PartialEq)]
pub struct Digest {
    pub text: String,
    /// Operations shown.
    pub shown: usize,
    /// Older operations left out for the budget.
    pub omitted: usize,
    /// Tokens of `text`.
    pub tokens: usize,
}

/// The line an operation contributes: `<id> <MM-DD HH:MM> <text>[ (failed)]`.
pub fn line(op: &OpRow) -> String {
    let summary = op.summary.as_deref().unwrap_or("");
    let text = match operation::OpType::parse(&op.kind) {
        Some(kind) => operation::render_line(
            kind,
            op.target.as_deref(),
            summary,
            op.role.as_deref(),
            op.content.as_deref(),
        ),
        None => format!("[{}] {summary}", op.kind),
    };
    let text = text.replace('\n', " ");
    let mut text = if text.chars().count() > MAX_LINE_CHARS {
        let cut: String = text.chars().take(MAX_LINE_CHARS).collect();
        format!("{cut}…")
    } else {
        text
    };
    if op.status == "failed" {
        text.push_str(" (failed)");
    }
    let when = chrono::DateTime::from_timestamp_millis(op.at)
        .map(|t| t.format("%m-%d %H:%M").to_string())
        .unwrap_or_default();
    format!("{} {when} {text}", op.id)
}

/// Tokens kept back for the "(N earlier operations omitted)" line.
const OMITTED_LINE_TOKENS: usize = 12;

/// The newest operations that fit in `budget` tokens, oldest first.
pub fn build(ops: &[OpRow], budget: usize, encoding: Encoding) -> Digest {
    let picked = pick(ops, budget, encoding);
    if picked.len() == ops.len() {
        return finish(ops.len(), picked, encoding);
    }
    let picked = pick(ops, budget.saturating_sub(OMITTED_LINE_TOKENS), encoding);
    finish(ops.len(), picked, encoding)
}

fn pick(ops: &[OpRow], budget: usize, encoding: Encoding) -> Vec<String> {
    let mut picked = Vec::new();
    let mut used = 0;
    for op in ops.iter().rev() {
        let l = line(op);
        let cost = tokens::count(encoding, &l) + 1;
        if used + cost > budget {
            break;
        }
        used += cost;
        picked.push(l);
    }
    picked.reverse();
    picked
}

fn finish(total: usize, picked: Vec<String>, encoding: Encoding) -> Digest {
    let omitted = total - picked.len();
    let mut text = String::new();
    if omitted > 0 {
        text.push_str(&format!("({omitted} earlier operations omitted)\n"));
    }
    text.push_str(&picked.join("\n"));
    Digest {
        tokens: tokens::count(encoding, &text),
        shown: picked.len(),
        omitted,
        text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(i: i64) -> OpRow {
        OpRow {
            id: format!("op-{i}"),
            seq: i,
            kind: "write".into(),
            target: Some(format!("src/file_{i}.rs")),
            summary: Some(format!("changed the parser for case {i}")),
            tool: None,
            status: if i == 3 { "failed".into() } else { "ok".into() },
            role: None,
            content: None,
            at: 1_700_000_000_000 + i * 60_000,
            decision_id: None,
            touches: Vec::new(),
        }
    }

    #[test]
    fn newest_first_under_budget_then_chronological() {
        let ops: Vec<OpRow> = (1..=50).map(op).collect();
        let all = build(&ops, 100_000, Encoding::O200kBase);
        assert_eq!((all.shown, all.omitted), (50, 0));
        assert!(all.text.lines().all(|l| l.starts_with("op-")));
        assert!(all.text.contains("op-3 ") && all.text.contains("(failed)"));

        let small = build(&ops, 120, Encoding::O200kBase);
        assert!(small.tokens <= 120, "{} tokens", small.tokens);
        assert!(small.omitted > 0 && small.shown > 0);
        let ids: Vec<&str> = small
            .text
            .lines()
            .skip(1)
            .map(|l| l.split(' ').next().unwrap_or(""))
            .collect();
        // The newest operation is kept, and lines run oldest to newest.
        assert_eq!(ids.last(), Some(&"op-50"));
        let seqs: Vec<i64> = ids.iter().map(|i| i[3..].parse().unwrap_or(0)).collect();
        assert!(seqs.windows(2).all(|w| w[0] + 1 == w[1]), "{seqs:?}");
    }
}
