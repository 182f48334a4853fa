//! Fitting: the ranked candidates into the budget. The budget's text share pays for framing
//! first (a title and one heading per section with candidates; none at all when framing would
//! take more than half, so tiny budgets hold content); what is left is split between the
//! sections by [`budget::distribute`] (history, files, and metadata's third each for
//! decisions, beliefs and memories, none granted more than it asks). Each section takes what
//! fits its share; the text is joined and counted, so `tokens_used` is exact. When the joined
//! text counts longer than its lines did (a long line's stored count is of the text before it
//! was put on one line), the history is fitted again into a share smaller by the excess, which
//! leaves out its least relevant lines; the text is cut at the end only if that is not enough.
//! Pure.

use poem_openapi::Object;
use serde::Serialize;

use crate::config::Encoding;
use crate::domain::budget::{self, Plan};
use crate::domain::tokens;

use super::gather::Inputs;
use super::history::Offer;
use super::line::clip;
use super::request::Request;
use super::section::{Fitted, Listed, Section, SectionKind};

/// The assembled context.
#[derive(Clone, Debug, Serialize, Object)]
pub struct Context {
    pub text: String,
    /// Exactly the token count of `text` in `encoding`; never above `budget_tokens`.
    pub tokens_used: u64,
    pub budget_tokens: u64,
    pub encoding: String,
    /// The sessions the context was drawn from, whether or not a line of each fitted: for a
    /// session, it and the sessions it continues, newest first; for a task, the sessions of
    /// its most relevant operations, best first, then the other related sessions.
    pub sessions: Vec<String>,
    pub sections: Vec<Section>,
    /// Everything left out, in words ("4 older sessions excluded").
    pub warnings: Vec<String>,
}

/// The wire name of an encoding.
pub fn encoding_name(e: Encoding) -> &'static str {
    match e {
        Encoding::O200kBase => "o200k_base",
        Encoding::Cl100kBase => "cl100k_base",
    }
}

/// Times the history is fitted again into a smaller share when the joined text counts longer
/// than the budget.
const MAX_REFITS: usize = 4;

/// The lines of `fitted`'s sections in order, under `title` and their headings when framed:
/// oldest first for history, files and decisions; rank order for the rest (as fitted).
fn joined<'a>(title: Option<&'a str>, fitted: impl Iterator<Item = &'a Fitted>) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    out.extend(title);
    for f in fitted.filter(|f| !f.lines.is_empty()) {
        if title.is_some() {
            out.push(f.kind.heading());
        }
        out.extend(f.lines.iter().map(String::as_str));
    }
    out
}

/// The context of `inputs` within `plan`: its history and the `listed` sections' candidates
/// (files, decisions, beliefs, memories) fitted to their shares.
pub(super) fn fit(req: &Request<'_>, plan: Plan, inputs: &Inputs, listed: &[Listed]) -> Context {
    let enc = req.encoding;
    let history = Offer::new(inputs);

    let title = match (req.session_id, req.task) {
        (Some(sid), _) => format!("# Context for session {sid}"),
        (None, Some(t)) => format!("# Context for task: {}", clip(t, 120)),
        (None, None) => "# Context".to_string(),
    };
    let offered = std::iter::once((SectionKind::History, history.len()))
        .chain(listed.iter().map(|l| (l.kind, l.lines.len())));
    let mut framing = tokens::count_line(enc, &title) + 1;
    for (kind, _) in offered.filter(|(_, n)| *n > 0) {
        framing += tokens::count_line(enc, kind.heading()) + 1;
    }
    let framed = framing <= plan.text / 2;
    // Framing is paid from the overhead share; what it leaves of that share is content's.
    let content = if framed {
        plan.text.saturating_sub(framing)
    } else {
        plan.text
    };

    let a = &req.allocation;
    let weights: Vec<f64> = std::iter::once(SectionKind::History.weight(a))
        .chain(listed.iter().map(|l| l.kind.weight(a)))
        .collect();
    let demands: Vec<usize> = std::iter::once(history.demand(content))
        .chain(listed.iter().map(Listed::demand))
        .collect();
    let shares = budget::distribute(content, &weights, &demands);

    // The other sections are fitted once; the history again, smaller, while the joined text
    // counts longer than its lines did (a line's stored count is of its text before it was
    // put on one line): what gives way is the history's least relevant lines (the oldest, in
    // a session's window), not whatever the text ends with.
    let others: Vec<Fitted> = listed
        .iter()
        .zip(&shares[1..])
        .map(|(l, &s)| l.fit(s))
        .collect();
    let mut share = shares[0];
    let mut refits = 0;
    let (history, mut text, mut used, mut warnings) = loop {
        let mut warnings = Vec::new();
        let fitted = history.fit(share, enc, &mut warnings);
        let lines = joined(
            framed.then_some(title.as_str()),
            std::iter::once(&fitted).chain(&others),
        );
        // Counted as the text it makes; the lines counted before (a refit, an earlier
        // context) are not counted again.
        let used = tokens::count_joined(enc, &lines);
        let text = lines.join("\n");
        let over = used.saturating_sub(req.budget);
        if over == 0 || refits == MAX_REFITS || fitted.tokens == 0 {
            break (fitted, text, used, warnings);
        }
        share = fitted.tokens.saturating_sub(over);
        refits += 1;
    };
    for f in &others {
        if f.omitted > 0 {
            warnings.push(format!("{} {} not listed", f.omitted, f.kind.name()));
        }
    }
    if used > req.budget {
        // Still long after the refits (a section other than history, or a history line
        // longer than its count): cut the text.
        text = tokens::truncate(enc, &text, req.budget);
        used = tokens::count(enc, &text);
        warnings.push("the text was cut at the end to fit the budget".to_string());
    }
    Context {
        text,
        tokens_used: used as u64,
        budget_tokens: req.budget as u64,
        encoding: encoding_name(enc).to_string(),
        sessions: inputs.ids().into_iter().map(str::to_string).collect(),
        sections: std::iter::once(&history)
            .chain(&others)
            .map(Fitted::section)
            .collect(),
        warnings,
    }
}
