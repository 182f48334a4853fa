//! The history section fitted into its share. A task's relevant history chooses and presents
//! itself ([`relevant::History`]). A session's is taken newest first ([`rank::newest_first`])
//! while it fits, always at least its newest item (cut to fit when even that does not), and
//! presented oldest first: sessions oldest first, each under its header, its operations in
//! the order they happened. What was left out is said in warnings. Pure.

use crate::config::Encoding;
use crate::domain::budget;
use crate::domain::tokens;
use crate::recall::relevant;

use super::gather::{History, Inputs};
use super::line::{line, Line};
use super::rank::{self, Slot};
use super::recent::SessionLines;
use super::section::{Fitted, SectionKind};

/// A context's history as offered to the budget.
pub(super) struct Offer<'a> {
    lines: Lines<'a>,
    /// Sessions in scope.
    sessions: usize,
    /// Operations the scope's sessions hold.
    all_ops: usize,
}

enum Lines<'a> {
    Relevant(&'a relevant::History),
    Newest {
        sessions: &'a [SessionLines],
        slots: Vec<Slot>,
    },
}

impl<'a> Offer<'a> {
    pub fn new(inputs: &'a Inputs) -> Self {
        let lines = match &inputs.history {
            History::Relevant(r) => Lines::Relevant(r),
            History::Newest(sessions) => Lines::Newest {
                sessions,
                slots: rank::newest_first(sessions),
            },
        };
        Offer {
            lines,
            sessions: inputs.sessions.len(),
            all_ops: inputs
                .sessions
                .iter()
                .map(|s| s.operation_count.max(0) as usize)
                .sum(),
        }
    }

    /// How many items are on offer.
    pub fn len(&self) -> usize {
        match &self.lines {
            Lines::Relevant(r) => r.items.len(),
            Lines::Newest { slots, .. } => slots.len(),
        }
    }

    /// Tokens the history asks for: all it offers, or at least the whole `content` share when
    /// a session's history was not read to its start or a session not at all.
    pub fn demand(&self, content: usize) -> usize {
        match &self.lines {
            Lines::Relevant(r) => r.demand(),
            Lines::Newest { sessions, slots } => {
                let offered: usize = slots.iter().map(|s| s.cost).sum();
                let unread = sessions.iter().any(|s| s.ops.len() < s.total_ops)
                    || sessions.len() < self.sessions;
                if unread {
                    offered.max(content)
                } else {
                    offered
                }
            }
        }
    }

    /// The history within `share`, counted in `enc`; what was left out goes to `warnings`.
    pub fn fit(&self, share: usize, enc: Encoding, warnings: &mut Vec<String>) -> Fitted {
        let (lines, tokens, shown_ops) = match &self.lines {
            Lines::Relevant(r) => {
                let (chosen, lines) = r.fit(share, enc);
                let left = r.left_out(&chosen);
                if left > 0 {
                    warnings.push(format!("{left} less relevant operations excluded"));
                }
                (lines, chosen.tokens, chosen.keys.len())
            }
            Lines::Newest { sessions, slots } => {
                self.fit_newest(sessions, slots, share, enc, warnings)
            }
        };
        Fitted {
            kind: SectionKind::History,
            share,
            tokens,
            items: shown_ops,
            omitted: self.all_ops.saturating_sub(shown_ops),
            lines,
        }
    }

    /// A session's history within `share`: its lines, their tokens and the operations shown.
    fn fit_newest(
        &self,
        sessions: &[SessionLines],
        slots: &[Slot],
        share: usize,
        enc: Encoding,
        warnings: &mut Vec<String>,
    ) -> (Vec<String>, usize, usize) {
        let costs: Vec<usize> = slots.iter().map(|s| s.cost).collect();
        let taken = budget::take_newest(&costs, share);
        let mut chosen: Vec<Vec<usize>> = vec![Vec::new(); sessions.len()];
        let mut shown: Vec<bool> = vec![false; sessions.len()];
        for slot in &slots[..taken] {
            shown[slot.session] = true;
            if let Some(oi) = slot.op {
                chosen[slot.session].push(oi);
            }
        }
        let mut tokens: usize = costs[..taken].iter().sum();
        let mut cut_newest: Option<Line> = None;
        if let (0, Some(first)) = (taken, slots.first()) {
            let s = &sessions[first.session];
            let newest = first.op.map_or(&s.header, |oi| &s.ops[oi].1);
            let text = tokens::truncate(enc, &newest.text, share.max(2) - 1);
            if !text.is_empty() {
                warnings.push("the newest history item was cut to fit the budget".to_string());
                let l = line(enc, text);
                tokens = l.cost;
                cut_newest = Some(l);
                shown[first.session] = true;
            }
        }

        let mut lines = Vec::new();
        if let Some(l) = &cut_newest {
            lines.push(l.text.clone());
        } else {
            for si in (0..sessions.len()).rev().filter(|&si| shown[si]) {
                let s = &sessions[si];
                lines.push(s.header.text.clone());
                let mut ops: Vec<&(i64, Line)> = chosen[si].iter().map(|&oi| &s.ops[oi]).collect();
                ops.sort_by_key(|(seq, _)| *seq);
                lines.extend(ops.into_iter().map(|(_, l)| l.text.clone()));
            }
        }

        let shown_ops = chosen.iter().map(Vec::len).sum::<usize>() + cut_newest.iter().count();
        let excluded_sessions = self.sessions - shown.iter().filter(|s| **s).count();
        if excluded_sessions > 0 {
            warnings.push(format!("{excluded_sessions} older sessions excluded"));
        }
        let ops_in_shown: usize = sessions
            .iter()
            .zip(&shown)
            .filter(|(_, shown)| **shown)
            .map(|(s, _)| s.total_ops)
            .sum();
        if ops_in_shown > shown_ops {
            warnings.push(format!(
                "{} older operations excluded",
                ops_in_shown - shown_ops
            ));
        }
        (lines, tokens, shown_ops)
    }
}
