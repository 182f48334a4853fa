//! A context's unit of text: a [`Line`] with what it costs (its tokens plus its newline),
//! counted once when the line is made (stored text shown with what acts instead of printing
//! blanked, `domain::shown`), and the headers that open a session's history.
//! Pure; what a line says for each section is decided by `candidates` and `gather`.

use crate::config::Encoding;
use crate::domain::{shown, tokens};
use crate::recall::scope::ScopeSession;

/// A candidate line with its estimated cost (tokens of the line plus its newline).
#[derive(Clone, Debug)]
pub(super) struct Line {
    pub text: String,
    pub cost: usize,
}

/// `text` as a line, counted in `encoding`.
pub(super) fn line(encoding: Encoding, text: String) -> Line {
    let (text, _) = shown::blanked_owned(text);
    let cost = tokens::count_line(encoding, &text) + 1;
    Line { text, cost }
}

/// `text` as a line costing what the store counted for it (`stored` tokens, in `stored_in`)
/// when that is the encoding asked for, a count is known and the text is shown as stored;
/// else counted afresh.
pub(super) fn stored_line(
    encoding: Encoding,
    stored_in: Encoding,
    stored: i64,
    text: String,
) -> Line {
    if encoding == stored_in && stored > 0 && !text.chars().any(shown::acts) {
        Line {
            text,
            cost: stored as usize + 1,
        }
    } else {
        line(encoding, text)
    }
}

/// The lines of `lines` in order until they cost at least `cap` (always the first one):
/// `lines` is lazy, so what lies beyond is never tokenised.
pub(super) fn within(cap: usize, lines: impl Iterator<Item = Line>) -> Vec<Line> {
    let mut out = Vec::new();
    let mut cost = 0;
    for l in lines {
        if cost >= cap && !out.is_empty() {
            break;
        }
        cost += l.cost;
        out.push(l);
    }
    out
}

/// `s` on one line, trimmed, at most `max_chars` characters (then ending in `…`).
pub(super) fn clip(s: &str, max_chars: usize) -> String {
    let s = s.trim().replace('\n', " ");
    if s.chars().count() <= max_chars {
        return s;
    }
    let mut out: String = s.chars().take(max_chars).collect();
    out.push('…');
    out
}

/// `at` (UTC) in `format`.
fn stamp(at: i64, format: &str) -> String {
    chrono::DateTime::from_timestamp_millis(at)
        .map(|d| d.format(format).to_string())
        .unwrap_or_default()
}

fn date(at: i64) -> String {
    stamp(at, "%Y-%m-%d %H:%M")
}

/// The day of `at` (UTC), as `date` writes it.
pub(super) fn day(at: i64) -> String {
    stamp(at, "%Y-%m-%d")
}

/// The header of a session in a session's history: when it started, its id and status, its
/// task and its summary.
pub(super) fn session_header(s: &ScopeSession) -> String {
    let mut h = format!("### {} session {} ({})", date(s.started_at), s.id, s.status);
    if let Some(t) = s.task.as_deref().filter(|t| !t.trim().is_empty()) {
        h.push_str(&format!(": {}", clip(t, 200)));
    }
    let summary = s.llm_summary.as_deref().or(s.summary.as_deref());
    if let Some(sum) = summary.filter(|t| !t.trim().is_empty()) {
        h.push_str(&format!("\nSummary: {}", clip(sum, 400)));
    }
    h
}

/// The header of a session in a task's history: when it happened (its start, or its oldest
/// shown operation when that is older, as in an imported session), to the day of its newest
/// when that is a later day (`until`: a session resumed days later), and its task. The day
/// (`day`, of `when`) alone, unless another session of the history began that day
/// (`same_day`): then its time too, so the two can be told apart. A time of day costs about
/// four tokens a header, a session's worth of lines in a small context.
pub(super) fn relevant_header(
    s: &ScopeSession,
    when: i64,
    day: &str,
    same_day: bool,
    until: Option<&str>,
) -> String {
    // The id is in the answer's `sessions`; here it would cost more than the line it heads.
    let mut h = if same_day {
        format!("### {}", date(when))
    } else {
        format!("### {day}")
    };
    if let Some(until) = until {
        h.push_str(&format!(" to {until}"));
    }
    if let Some(t) = s.task.as_deref().filter(|t| !t.trim().is_empty()) {
        h.push_str(&format!(": {}", clip(t, 120)));
    }
    h
}
