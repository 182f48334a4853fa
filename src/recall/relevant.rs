//! The history of a task context, built from relevance: the operations turn search ranks best
//! for the task, each with the operation after it when that one carries the answer (the reply
//! after a question about the task, the result after a tool call), taken in rank order while
//! they fit the history share, then grouped by session under the session's date and shown in
//! the order they happened. Sessions come oldest first; a session's header is paid with its
//! first item. A hit up to a third of the share comes whole; a longer one is cut around what
//! bears on the task ([`excerpt`]) to a quarter of that, leaving the rest of its room to
//! further hits. The answer after a hit comes only whole, when no longer than half that third.
//! A share too small for the best hit and its header holds that hit alone, cut to fit
//! ([`History::fit`]).
//!
//! A message opening with the name of one of the project's speakers (a conversation captured
//! from several people, [`crate::recall::speaker`]) is shown as said, without the role it was
//! captured under ([`read_items`]).
//!
//! A write is shown with what it wrote, a tool call with what it answered
//! (`with_what_it_did`): turn search finds them by that text too.
//!
//! The files of a task context are the ones these operations touched ([`History::files`]), in
//! the order of the hits: what the work on the task touched, not every file its sessions did.
//!
//! Selection is pure ([`select`]); reading the operations and their sessions is one query
//! each. The session mode's newest-first window lives in `context`, untouched by this.

use std::collections::{HashMap, HashSet};

use crate::config::Encoding;
use crate::domain::operation::render_stored_line;
use crate::domain::{shown, tokens, turn_text};
use crate::graph::operations::{FileRow, OperationView};
use crate::graph::{self, operations, Store, StoreResult};
use crate::recall::answered::answered_next;
use crate::recall::scope::ScopeSession;
use crate::recall::touches::{file_rows, Touch};
use crate::recall::turns::TurnHit;
use crate::recall::{excerpt, speaker, turn_stats};

/// One operation turn search found relevant, best first.
#[derive(Clone, Debug, PartialEq)]
pub struct Found {
    pub session_id: String,
    pub seq: i64,
    /// The operation's type (`message`, `tool_call`, …).
    pub kind: String,
    pub role: Option<String>,
    /// Its searchable text (a message's content, an operation's summary).
    pub text: String,
    pub score: f64,
    /// Where its answer is, when another operation probably carries it: the one after it
    /// ([`answered_next`]), or for a request the agent worked on, what it concluded
    /// ([`crate::recall::answered::conclusions`]).
    pub answer: Option<i64>,
}

impl Found {
    /// A turn hit as found for a task with the stemmed words `task`
    /// ([`crate::recall::bm25::words`]).
    pub fn of_hit(h: TurnHit, task: &[String]) -> Self {
        let answer = answered_next(&h.kind, &h.text, task).then_some(h.seq + 1);
        Found {
            session_id: h.session_id,
            seq: h.seq,
            kind: h.kind,
            role: h.role,
            text: h.text,
            score: h.score,
            answer,
        }
    }
}

/// A position in the project's history.
pub type Key = (String, i64);

/// A candidate line of history with its cost (tokens of the line plus its newline).
#[derive(Clone, Debug, PartialEq)]
pub struct Item {
    pub text: String,
    pub cost: usize,
    /// Epoch milliseconds.
    pub at: i64,
    /// The files the operation touched, each with `write` or `read`.
    pub files: Vec<(String, &'static str)>,
    /// Whether the line is longer than its cap: a hit's is then an excerpt cut to it; an
    /// answer read only for its hit is left as it is, since [`select`] never shows it. An
    /// agent's conclusion is cut to its opening instead, and not marked.
    pub cut: bool,
}

/// What [`select`] chose: positions by session, and the tokens they cost with headers.
#[derive(Debug, Default, PartialEq)]
pub struct Chosen {
    pub keys: HashSet<Key>,
    pub sessions: HashSet<String>,
    pub tokens: usize,
}

/// Takes `found` in rank order, each with its answer ([`Found::answer`]) when it is known
/// whole (an answer longer than [`answer_cap`] would come as an excerpt: a glimpse that costs
/// the room of further hits; a long answer that matters is found for itself; an agent's
/// conclusion comes as its opening) and does not say the same as the hit,
/// while the cost stays within `share`: a hit whose pair does not fit is tried alone; one that
/// does not fit at all is skipped for smaller ones further down. The first item taken from a
/// session also pays for the session's header (`header_cost`).
pub fn select(
    found: &[Found],
    items: &HashMap<Key, Item>,
    header_cost: &HashMap<String, usize>,
    share: usize,
) -> Chosen {
    let mut out = Chosen::default();
    for f in found {
        let hit = (f.session_id.clone(), f.seq);
        if !items.contains_key(&hit) {
            continue;
        }
        // An answer saying what its hit says (a command run twice in a row) adds nothing.
        let said = &items[&hit].text;
        let answers = |i: &Item| !i.cut && !i.text.split_whitespace().eq(said.split_whitespace());
        let mut group = vec![hit.clone()];
        let answer = f.answer.map(|seq| (f.session_id.clone(), seq));
        if let Some(answer) = answer.filter(|a| items.get(a).is_some_and(answers)) {
            group.push(answer);
        }
        let header = if out.sessions.contains(&f.session_id) {
            0
        } else {
            header_cost.get(&f.session_id).copied().unwrap_or(0)
        };
        while !group.is_empty() {
            let new: Vec<&Key> = group.iter().filter(|k| !out.keys.contains(*k)).collect();
            let cost: usize = new.iter().map(|k| items[*k].cost).sum();
            let cost = if new.is_empty() { 0 } else { cost + header };
            if out.tokens + cost <= share {
                out.tokens += cost;
                for k in group.drain(..) {
                    out.sessions.insert(k.0.clone());
                    out.keys.insert(k);
                }
                break;
            }
            group.pop();
        }
    }
    out
}

/// The chosen history as text lines: sessions oldest first (by their date), each under its
/// header, its operations in seq order.
pub fn present(
    chosen: &Chosen,
    items: &HashMap<Key, Item>,
    headers: &HashMap<String, (i64, String)>,
) -> Vec<String> {
    let mut sessions: Vec<&String> = chosen.sessions.iter().collect();
    sessions.sort_by_key(|s| (headers.get(*s).map_or(0, |h| h.0), (*s).clone()));
    let mut out = Vec::new();
    for s in sessions {
        if let Some((_, h)) = headers.get(s) {
            out.push(h.clone());
        }
        let mut keys: Vec<&Key> = chosen.keys.iter().filter(|k| &k.0 == s).collect();
        keys.sort_by_key(|k| k.1);
        out.extend(keys.into_iter().map(|k| items[k].text.clone()));
    }
    out
}

/// A task's relevant history in hand: what was found, the lines read for it and the headers
/// of their sessions (`(date, text, cost)`).
#[derive(Debug, Default)]
pub struct History {
    pub found: Vec<Found>,
    pub items: HashMap<Key, Item>,
    pub headers: HashMap<String, (i64, String, usize)>,
    /// The task's stemmed words ([`crate::recall::bm25::words`]): what a line cut to a small
    /// share is cut around ([`History::fit`]).
    pub task: Vec<String>,
}

impl History {
    /// Tokens everything found would cost.
    pub fn demand(&self) -> usize {
        self.items.values().map(|i| i.cost).sum::<usize>()
            + self.headers.values().map(|h| h.2).sum::<usize>()
    }

    /// What of the history fits `share`, and its lines: [`select`]'s choice when it holds the
    /// best hit. When even the best hit's line (an excerpt is at least [`excerpt_cap`]) and
    /// its session's header do not fit — a small share, which [`select`] would give to
    /// shorter, less relevant lines or to none — the best hit alone, cut to the room its
    /// header leaves around what bears on the task ([`excerpt::around`]): a small budget still
    /// shows the most relevant line. A room under [`MIN_CUT`] tokens keeps [`select`]'s choice.
    pub fn fit(&self, share: usize, encoding: Encoding) -> (Chosen, Vec<String>) {
        let chosen = self.select(share);
        let best = self
            .found
            .iter()
            .map(|f| (f.session_id.clone(), f.seq))
            .find(|k| self.items.contains_key(k));
        best.filter(|b| !chosen.keys.contains(b))
            .and_then(|b| self.cut_to(b, share, encoding))
            .unwrap_or_else(|| {
                let lines = self.present(&chosen);
                (chosen, lines)
            })
    }

    /// The line at `key` alone, cut to what `share` leaves after its session's header.
    fn cut_to(&self, key: Key, share: usize, encoding: Encoding) -> Option<(Chosen, Vec<String>)> {
        let header = self.headers.get(&key.0);
        let header_cost = header.map_or(0, |h| h.2);
        // The line's newline is a token of its cost.
        let room = share.checked_sub(header_cost + 1)?;
        if room < MIN_CUT {
            return None;
        }
        let mut item = self.items[&key].clone();
        item.text = excerpt::around(encoding, &item.text, &self.task, room);
        item.cost = tokens::count(encoding, &item.text) + 1;
        let chosen = Chosen {
            tokens: header_cost + item.cost,
            keys: HashSet::from([key.clone()]),
            sessions: HashSet::from([key.0.clone()]),
        };
        let headers: HashMap<String, (i64, String)> = header
            .map(|h| (key.0.clone(), (h.0, h.1.clone())))
            .into_iter()
            .collect();
        let lines = present(&chosen, &HashMap::from([(key, item)]), &headers);
        Some((chosen, lines))
    }

    pub fn select(&self, share: usize) -> Chosen {
        let costs: HashMap<String, usize> = self
            .headers
            .iter()
            .map(|(id, h)| (id.clone(), h.2))
            .collect();
        select(&self.found, &self.items, &costs, share)
    }

    pub fn present(&self, chosen: &Chosen) -> Vec<String> {
        let headers: HashMap<String, (i64, String)> = self
            .headers
            .iter()
            .map(|(id, h)| (id.clone(), (h.0, h.1.clone())))
            .collect();
        present(chosen, &self.items, &headers)
    }

    /// The files the found operations (and the neighbours read with them) touched, each once,
    /// in the order of the first hit touching it; at most `limit`. A file's mode is its newest
    /// touch's, its sessions those of the hits in order, its time the newest touch's.
    pub fn files(&self, limit: usize) -> Vec<FileRow> {
        let touches = self.found.iter().flat_map(|f| {
            std::iter::once(f.seq).chain(f.answer).flat_map(move |seq| {
                let item = self.items.get(&(f.session_id.clone(), seq));
                item.into_iter().flat_map(move |item| {
                    item.files.iter().map(move |(path, mode)| Touch {
                        path,
                        mode,
                        session: &f.session_id,
                        at: item.at,
                        seq,
                    })
                })
            })
        });
        file_rows(touches, limit)
    }

    /// Hits found but not shown.
    pub fn left_out(&self, chosen: &Chosen) -> usize {
        self.found
            .iter()
            .filter(|f| !chosen.keys.contains(&(f.session_id.clone(), f.seq)))
            .count()
    }
}

/// Fewest tokens a line cut to fit a small share may have ([`History::fit`]): a label, the
/// two "…" and a few words.
pub const MIN_CUT: usize = 12;

/// Most tokens one line may cost in a share of `share`: a long tool output or reply is cut so
/// that several relevant items still fit.
pub fn line_cap(share: usize) -> usize {
    (share / 3).max(64)
}

/// Most tokens the operation read for a hit (the reply, the result; [`Found::answer`])
/// may cost to come with it, when it is not a hit itself: half a hit's [`line_cap`]. The hit
/// is what the task matched; an answer longer than this stays out ([`select`]), which leaves
/// room for more hits.
pub fn answer_cap(share: usize) -> usize {
    line_cap(share) / 2
}

/// Most tokens the excerpt of a hit longer than its [`line_cap`] costs: a quarter of that cap,
/// at least 48. A hit that fits its cap comes whole; a longer one (a long reply or output,
/// found for one detail) shows the sentences around that detail ([`excerpt::around`]) and
/// leaves the rest of its room to further hits.
pub fn excerpt_cap(share: usize) -> usize {
    (line_cap(share) / 4).max(48)
}

/// The cap of the line at `key`: an answer read only for the hit before it
/// ([`answers_only`]) has the smaller [`answer_cap`].
fn cap_of(key: &Key, answers: &HashSet<Key>, share: usize) -> usize {
    if answers.contains(key) {
        answer_cap(share)
    } else {
        line_cap(share)
    }
}

/// A stored operation as one line of history, as every history shows it.
pub fn rendered(r: &OperationView) -> String {
    render_stored_line(
        &r.kind,
        r.target.as_deref(),
        &r.summary,
        r.role.as_deref(),
        r.content.as_deref(),
    )
}

/// How [`read_items`] makes lines: counted in `encoding` (the store's counts serve when they
/// are in `stored`), cut for a history share of `share` around what bears on `task` (its
/// stemmed words, [`crate::recall::bm25::words`]; [`excerpt`]).
#[derive(Clone, Copy, Debug)]
pub struct Lines<'a> {
    pub encoding: Encoding,
    pub stored: Encoding,
    pub share: usize,
    pub task: &'a [String],
}

/// The lines of the operations `found` names ([`keys_for`]: each hit, and the answer after it
/// where it wants one), with what each costs, read in one query. A hit longer than
/// [`line_cap`] is cut to [`excerpt_cap`]; an answer read only for the hit before it and
/// longer than [`answer_cap`] is only marked, not cut: it never comes with its hit.
pub async fn read_items(
    store: &Store,
    project: &str,
    found: &[Found],
    how: Lines<'_>,
) -> StoreResult<HashMap<Key, Item>> {
    let keys = keys_for(found);
    let answers = answers_only(found);
    let concluded = conclusions_among(found, &answers);
    let rows = operations::at(store, project, &keys).await?;
    let excerpt = excerpt_cap(how.share);
    let speakers = turn_stats::speakers(project);
    Ok(rows
        .into_iter()
        .map(|r| {
            let key = (r.session_id.clone(), r.seq);
            let cap = cap_of(&key, &answers, how.share);
            // A turn opening with its speaker's name is shown as said: counted afresh, since
            // the store counted it under its role.
            let said = r.content.as_deref().unwrap_or(&r.summary);
            let (text, tokens) = match as_said(&r.kind, said, &speakers) {
                Some(said) => (said.to_string(), 0),
                None => match with_what_it_did(&r) {
                    Some(line) => (line, 0),
                    None => (rendered(&r), r.tokens),
                },
            };
            let shorten = if concluded.contains(&key) {
                Shorten::Opening
            } else if answers.contains(&key) {
                Shorten::Not
            } else {
                Shorten::Around(how.task, excerpt)
            };
            let mut it = item(how.encoding, how.stored, text, tokens, r.at, cap, shorten);
            it.files = touched(r.files_modified, r.files_read);
            (key, it)
        })
        .collect())
}

/// A write's line with what it wrote, a tool call's with what it answered (its outcome,
/// [`turn_text::outcome`]): turn search finds them by that text, so the history shows it,
/// cut around the task like any long line, its whitespace runs made single spaces. `None`
/// for anything else, or nothing to add.
fn with_what_it_did(r: &OperationView) -> Option<String> {
    let did = match r.kind.as_str() {
        "write" => r.content.clone(),
        "tool_call" => turn_text::stored_outcome(r.context.as_deref()),
        _ => None,
    }?;
    // Code's indentation and line breaks cost tokens and say nothing here.
    let did = did.split_whitespace().collect::<Vec<_>>().join(" ");
    let line = rendered(r);
    let did = after_repeated(&line, &did);
    (!did.is_empty()).then(|| format!("{line} → {did}"))
}

/// Characters a line's end must share with the start of what follows it to be left out there.
const REPEAT_CHARS: usize = 8;

/// `did` (its whitespace runs single spaces) without its opening words when `line` already
/// ends with them: a failed call's summary holds the first line of its error, a turned-down
/// call's what the user said. A line cut short (`…`) inside a word leaves that word to `did`.
fn after_repeated<'a>(line: &str, did: &'a str) -> &'a str {
    let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
    let tail = line.trim_end_matches('…');
    let mut starts = tail
        .char_indices()
        .filter(|&(i, _)| i == 0 || tail[..i].ends_with([' ', ':']))
        .map(|(i, _)| &tail[i..]);
    let Some(t) = starts.find(|t| t.chars().count() >= REPEAT_CHARS && did.starts_with(t)) else {
        return did;
    };
    let (said, rest) = did.split_at(t.len());
    let mid_word = said.ends_with(char::is_alphanumeric) && rest.starts_with(char::is_alphanumeric);
    let cut = if mid_word {
        match said.rfind(' ') {
            Some(i) if said[..i].chars().count() >= REPEAT_CHARS => i,
            _ => return did,
        }
    } else {
        said.len()
    };
    did[cut..].trim_start()
}

/// A message (an operation of `kind` saying `text`) that opens with the label of one of the
/// project's speakers (`speakers`, [`turn_stats::speakers`]), as said: a conversation
/// captured from several people names who spoke in each turn, and the role it was captured
/// under ("Assistant: Melanie: …") would only cost room and mislabel the speaker. Anything
/// else is shown as every history shows it ([`rendered`]).
fn as_said<'a>(kind: &str, text: &'a str, speakers: &[String]) -> Option<&'a str> {
    let label = speaker::label(text).filter(|_| kind == "message")?;
    speakers.iter().any(|s| s == label).then_some(text)
}

/// What an operation touched: the files it wrote, then those it only read.
fn touched(written: Vec<String>, read: Vec<String>) -> Vec<(String, &'static str)> {
    let mut out: Vec<(String, &'static str)> = written.into_iter().map(|p| (p, "write")).collect();
    for p in read {
        if !out.iter().any(|(w, _)| *w == p) {
            out.push((p, "read"));
        }
    }
    out
}

/// How a line longer than its cap is made to fit ([`item`]).
#[derive(Clone, Copy, Debug)]
enum Shorten<'a> {
    /// A hit: the sentences around what bears on the task (its stemmed words), in at most so
    /// many tokens.
    Around(&'a [String], usize),
    /// What an agent concluded after working on a request: its opening, which says what came
    /// of the work, within the cap.
    Opening,
    /// An answer read for its hit: left as it is, marked cut, never shown ([`select`]).
    Not,
}

/// A line costed by its stored count when the encodings agree, else counted; when longer than
/// `cap`, made to fit as `shorten` says.
fn item(
    encoding: Encoding,
    stored: Encoding,
    text: String,
    tokens: i64,
    at: i64,
    cap: usize,
    shorten: Shorten<'_>,
) -> Item {
    // What acts instead of printing is blanked; the store's count is then not the line's.
    let (text, blanked) = shown::blanked_owned(text);
    let as_stored = !blanked;
    let flat = text.replace('\n', " ");
    let mut cost = if encoding == stored && tokens > 0 && as_stored {
        tokens as usize
    } else {
        tokens::count(encoding, &flat)
    };
    let mut cut = cost > cap;
    let line = match shorten {
        Shorten::Around(task, length) if cut => {
            let line = excerpt::around(encoding, &text, task, length.min(cap));
            cost = tokens::count(encoding, &line);
            line
        }
        Shorten::Opening if cut => {
            let line = tokens::cut(encoding, &flat, cap);
            cost = tokens::count(encoding, &line);
            // Made to fit: shown like a whole answer.
            cut = false;
            line
        }
        _ => flat,
    };
    Item {
        text: line,
        cost: cost + 1,
        at,
        files: Vec::new(),
        cut,
    }
}

/// The project's sessions with these ids.
pub async fn sessions(
    store: &Store,
    project: &str,
    ids: &[&str],
) -> StoreResult<Vec<ScopeSession>> {
    graph::sessions::by_ids(store, project, ids).await
}

/// The positions read only as the answer of a hit ([`Found::answer`]), unless that one is a
/// hit too.
fn answers_only(found: &[Found]) -> HashSet<Key> {
    let hits: HashSet<(&str, i64)> = found
        .iter()
        .map(|f| (f.session_id.as_str(), f.seq))
        .collect();
    found
        .iter()
        .filter_map(|f| f.answer.map(|seq| (f.session_id.as_str(), seq)))
        .filter(|k| !hits.contains(k))
        .map(|(s, seq)| (s.to_string(), seq))
        .collect()
}

/// The answers among `answers` ([`answers_only`]) that conclude a request the agent worked on
/// (not the operation right after their hit): shown by their opening when long.
fn conclusions_among(found: &[Found], answers: &HashSet<Key>) -> HashSet<Key> {
    found
        .iter()
        .filter_map(|f| {
            f.answer
                .filter(|seq| *seq != f.seq + 1)
                .map(|seq| (f.session_id.clone(), seq))
        })
        .filter(|k| answers.contains(k))
        .collect()
}

/// The positions to read for `found`: each hit, and the next one where it may carry the answer.
pub fn keys_for(found: &[Found]) -> Vec<Key> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for f in found {
        let mut push = |k: Key| {
            if seen.insert(k.clone()) {
                out.push(k);
            }
        };
        push((f.session_id.clone(), f.seq));
        if let Some(seq) = f.answer {
            push((f.session_id.clone(), seq));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recall::bm25;
    use serde_json::json;

    #[test]
    fn a_write_shows_what_it_wrote_and_a_tool_call_what_it_answered() {
        let view = |kind: &str, content: Option<&str>, context: Option<&str>| OperationView {
            kind: kind.into(),
            target: Some("mix test".into()),
            summary: "Run the tests".into(),
            content: content.map(str::to_string),
            context: context.map(str::to_string),
            ..Default::default()
        };
        let run = view(
            "tool_call",
            None,
            Some(r#"{"cwd": "/r", "response": " 1 test failed: no secret_key_base "}"#),
        );
        assert_eq!(
            with_what_it_did(&run).as_deref(),
            Some("[tool_call] mix test: Run the tests → 1 test failed: no secret_key_base")
        );
        let edit = OperationView {
            target: Some("lib/a.ex".into()),
            summary: "edited lib/a.ex".into(),
            ..view("write", Some("def sync_indicator(assigns)\n\t\tdo"), None)
        };
        assert_eq!(
            with_what_it_did(&edit).as_deref(),
            Some("[write] edited lib/a.ex → def sync_indicator(assigns) do")
        );
        // Nothing to add: a call without an outcome, a message, a write of nothing.
        assert_eq!(
            with_what_it_did(&view("tool_call", None, Some(r#"{"cwd": "/r"}"#))),
            None
        );
        assert_eq!(with_what_it_did(&view("message", Some("hi"), None)), None);
        assert_eq!(with_what_it_did(&view("write", None, None)), None);
    }

    #[test]
    fn a_failed_call_does_not_say_its_error_twice() {
        let failed = |summary: &str, response: &str| OperationView {
            kind: "tool_call".into(),
            target: Some("git status".into()),
            summary: summary.into(),
            context: Some(json!({ "response": response }).to_string()),
            ..Default::default()
        };
        let run = failed(
            "Bash failed: Exit code 128",
            "Exit code 128\nfatal: unable to read e53647ba",
        );
        assert_eq!(
            with_what_it_did(&run).as_deref(),
            Some("[tool_call] git status: Bash failed: Exit code 128 → fatal: unable to read e53647ba")
        );
        // All of it said already: no arrow.
        let sibling = failed(
            "Bash failed: Sibling tool call errored",
            "Sibling tool call errored",
        );
        assert_eq!(
            with_what_it_did(&sibling).as_deref(),
            None,
            "{:?}",
            with_what_it_did(&sibling)
        );
        // A summary cut short: what it kept is left out, the rest follows.
        let long = failed(
            "Bash failed: error[E0425]: cannot find value `x` in this…",
            "error[E0425]: cannot find value `x` in this scope --> src/main.rs:2:5",
        );
        assert_eq!(
            with_what_it_did(&long).as_deref(),
            Some("[tool_call] git status: Bash failed: error[E0425]: cannot find value `x` in this… → scope --> src/main.rs:2:5")
        );
        // Cut inside a word: the word is shown whole after the arrow.
        let mid = failed(
            "Bash failed: error[E0425]: cannot find value `x` in thi…",
            "error[E0425]: cannot find value `x` in this scope",
        );
        assert_eq!(
            with_what_it_did(&mid).as_deref(),
            Some("[tool_call] git status: Bash failed: error[E0425]: cannot find value `x` in thi… → this scope")
        );
        // Runs of spaces in the summary do not hide the repeat.
        let spaced = failed("Bash failed: exit  code   2", "exit code 2\nno such file");
        assert_eq!(
            with_what_it_did(&spaced).as_deref(),
            Some("[tool_call] git status: Bash failed: exit  code   2 → no such file")
        );
        // Words the line ends with by chance, shorter than a repeat: kept.
        let short = failed("ran it", "it passed");
        assert_eq!(
            with_what_it_did(&short).as_deref(),
            Some("[tool_call] git status: ran it → it passed")
        );
    }

    fn found(s: &str, seq: i64, role: &str, text: &str) -> Found {
        Found {
            session_id: s.into(),
            seq,
            kind: "message".into(),
            role: Some(role.into()),
            text: text.into(),
            score: 1.0,
            answer: answered_next("message", text, &[]).then_some(seq + 1),
        }
    }

    #[test]
    fn a_turn_opening_with_a_known_speaker_is_shown_as_said() {
        let speakers = vec!["Melanie".to_string(), "Caroline".to_string()];
        let said = "Melanie: I signed up for a pottery class.";
        assert_eq!(as_said("message", said, &speakers), Some(said));
        // Not a speaker of the project: a label-like opening keeps its role.
        assert_eq!(
            as_said("message", "Note: the kiln is broken.", &speakers),
            None
        );
        assert_eq!(as_said("message", said, &[]), None);
        // Not a label at all, or not a message.
        assert_eq!(as_said("message", "Melanie said hi", &speakers), None);
        assert_eq!(as_said("tool_call", said, &speakers), None);
    }

    fn items(list: &[(&str, i64, usize)]) -> HashMap<Key, Item> {
        list.iter()
            .map(|(s, seq, cost)| {
                (
                    (s.to_string(), *seq),
                    Item {
                        text: format!("{s}#{seq}"),
                        cost: *cost,
                        at: *seq,
                        files: Vec::new(),
                        cut: false,
                    },
                )
            })
            .collect()
    }

    #[test]
    fn the_reply_after_a_question_comes_with_it_and_rank_decides() {
        let its = items(&[("a", 1, 10), ("a", 2, 10), ("b", 5, 10), ("b", 6, 10)]);
        let headers: HashMap<String, usize> = [("a".into(), 5), ("b".into(), 5)].into();
        let hits = vec![
            found("b", 5, "assistant", "did you go to the lake?"),
            found("a", 1, "assistant", "I went to the lake."),
        ];
        // Room for everything: the question's reply is taken with it.
        let all = select(&hits, &its, &headers, 100);
        assert_eq!(all.keys.len(), 3, "{all:?}");
        assert!(all.keys.contains(&("b".into(), 6)));
        assert!(
            !all.keys.contains(&("a".into(), 2)),
            "a statement needs no reply"
        );
        assert_eq!(all.tokens, 10 + 10 + 5 + 10 + 5);
        // Room for one pair only: the best hit with its reply; the next hit does not fit.
        let tight = select(&hits, &its, &headers, 25);
        assert_eq!(tight.tokens, 25);
        assert_eq!(tight.sessions, HashSet::from(["b".to_string()]));
        // Room for a hit alone: the pair is dropped to the hit.
        let alone = select(&hits, &its, &headers, 20);
        assert_eq!(alone.keys, HashSet::from([("b".to_string(), 5)]));
        assert_eq!(alone.tokens, 15);
        // A hit too big for what is left is skipped for a smaller one further down.
        let mut big = its.clone();
        big.get_mut(&("b".to_string(), 5)).unwrap().cost = 500;
        let skipped = select(&hits, &big, &headers, 30);
        assert_eq!(skipped.keys, HashSet::from([("a".to_string(), 1)]));
    }

    #[test]
    fn an_answer_saying_what_its_hit_says_stays_out() {
        let mut its = items(&[("a", 1, 10), ("a", 2, 10)]);
        its.get_mut(&("a".to_string(), 2)).unwrap().text = "a#1".into();
        let headers: HashMap<String, usize> = [("a".into(), 5)].into();
        let mut call = found("a", 1, "assistant", "cargo test");
        call.kind = "tool_call".into();
        call.answer = Some(call.seq + 1);
        let chosen = select(&[call], &its, &headers, 100);
        assert_eq!(chosen.keys, HashSet::from([("a".to_string(), 1)]));
        assert_eq!(chosen.tokens, 15);
    }

    #[test]
    fn an_answer_comes_with_its_question_only_whole() {
        let mut its = items(&[("a", 1, 10), ("a", 2, 60), ("b", 1, 10)]);
        its.get_mut(&("a".to_string(), 2)).unwrap().cut = true;
        let headers: HashMap<String, usize> = [("a".into(), 5), ("b".into(), 5)].into();
        let hits = vec![
            found("a", 1, "user", "how do tokens expire?"),
            found("b", 1, "assistant", "tokens expire after an hour"),
        ];
        assert_eq!(hits[0].answer, Some(2));
        let chosen = select(&hits, &its, &headers, 100);
        assert_eq!(
            chosen.keys,
            HashSet::from([("a".to_string(), 1), ("b".to_string(), 1)]),
            "an excerpt of the reply is left out, the next hit taken"
        );
        assert_eq!(chosen.tokens, 10 + 5 + 10 + 5);
        // Whole, the same reply comes along.
        its.get_mut(&("a".to_string(), 2)).unwrap().cut = false;
        let whole = select(&hits, &its, &headers, 100);
        assert!(whole.keys.contains(&("a".to_string(), 2)), "{whole:?}");
    }

    #[test]
    fn overlapping_hits_are_paid_once_and_presented_by_session_date_then_seq() {
        let its = items(&[("a", 1, 10), ("a", 2, 10), ("b", 1, 10)]);
        let headers: HashMap<String, usize> = [("a".into(), 5), ("b".into(), 5)].into();
        let hits = vec![
            found("a", 2, "assistant", "the answer"),
            found("b", 1, "assistant", "older talk"),
            found("a", 1, "user", "the question"),
        ];
        let chosen = select(&hits, &its, &headers, 1_000);
        assert_eq!(chosen.tokens, 10 + 5 + 10 + 5 + 10);
        let shown: HashMap<String, (i64, String)> = [
            ("a".to_string(), (200, "### a".to_string())),
            ("b".to_string(), (100, "### b".to_string())),
        ]
        .into();
        assert_eq!(
            present(&chosen, &its, &shown),
            vec!["### b", "b#1", "### a", "a#1", "a#2"]
        );
    }

    #[test]
    fn a_task_lists_the_files_its_operations_touched_in_the_order_of_the_hits() {
        let mut its = items(&[("a", 1, 10), ("a", 2, 10), ("b", 7, 10), ("b", 9, 10)]);
        let mut touch = |k: (&str, i64), at: i64, files: &[(&str, &'static str)]| {
            let it = its.get_mut(&(k.0.to_string(), k.1)).unwrap();
            it.at = at;
            it.files = files.iter().map(|(p, m)| (p.to_string(), *m)).collect();
        };
        touch(("a", 1), 100, &[("src/cache.rs", "read")]);
        // The result after a tool call: read with its hit.
        touch(
            ("a", 2),
            200,
            &[("src/cache.rs", "write"), ("src/lib.rs", "read")],
        );
        touch(
            ("b", 7),
            50,
            &[("src/parser.rs", "write"), ("src/cache.rs", "read")],
        );
        // Not found and not next to a hit: its file is not the task's.
        touch(("b", 9), 300, &[("README.md", "write")]);
        let mut call = found("a", 1, "assistant", "cargo test");
        call.kind = "tool_call".into();
        call.answer = Some(call.seq + 1);
        let history = History {
            found: vec![
                found("b", 7, "assistant", "the parser reads the cache"),
                call,
            ],
            items: its,
            headers: HashMap::new(),
            task: Vec::new(),
        };
        let files = history.files(10);
        let got: Vec<(&str, Option<&str>, Vec<&str>, i64)> = files
            .iter()
            .map(|f| {
                let sessions = f.sessions.iter().map(String::as_str).collect();
                (f.path.as_str(), f.mode.as_deref(), sessions, f.at)
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("src/parser.rs", Some("write"), vec!["b"], 50),
                // Its newest touch wrote it.
                ("src/cache.rs", Some("write"), vec!["b", "a"], 200),
                ("src/lib.rs", Some("read"), vec!["a"], 200),
            ]
        );
        assert_eq!(history.files(1).len(), 1);
        assert_eq!(
            touched(vec!["x".into()], vec!["x".into(), "y".into()]),
            vec![("x".to_string(), "write"), ("y".to_string(), "read")]
        );
    }

    #[test]
    fn keys_name_each_hit_and_the_next_one_once() {
        let hits = vec![
            found("a", 1, "user", "why?"),
            found("a", 2, "assistant", "because"),
        ];
        assert_eq!(
            keys_for(&hits),
            vec![("a".to_string(), 1), ("a".to_string(), 2)]
        );
    }

    #[test]
    fn an_answer_read_only_for_its_hit_gets_half_the_cap() {
        // a1 asks, a2 answers (read for a1 only); b1 asks and b2, the answer, is a hit too.
        let hits = vec![
            found("a", 1, "user", "why?"),
            found("b", 1, "user", "how?"),
            found("b", 2, "assistant", "like so"),
        ];
        let answers = answers_only(&hits);
        assert_eq!(answers, HashSet::from([("a".to_string(), 2)]));
        assert_eq!(cap_of(&("a".into(), 2), &answers, 900), 150);
        assert_eq!(cap_of(&("a".into(), 1), &answers, 900), 300);
        assert_eq!(cap_of(&("b".into(), 2), &answers, 900), 300);
        assert_eq!(answer_cap(900), line_cap(900) / 2);
        // A small share keeps a floor under both.
        assert_eq!((line_cap(60), answer_cap(60)), (64, 32));
    }

    /// 500 words in a line capped at 64 tokens, made to fit as `shorten` says.
    fn long_item(shorten: Shorten<'_>) -> (String, Item) {
        let long = "word ".repeat(500);
        let i = item(
            Encoding::O200kBase,
            Encoding::O200kBase,
            long.clone(),
            0,
            0,
            64,
            shorten,
        );
        (long, i)
    }

    #[test]
    fn a_small_share_shows_the_best_hit_cut_to_fit_not_a_lesser_one_or_none() {
        let enc = Encoding::O200kBase;
        let task = bm25::words("the parser cache");
        let filler = "Nothing of note happened that afternoon. ".repeat(20);
        let long =
            format!("User: {filler}Then we moved the parser cache out of the lexer. {filler}");
        let best = item(
            enc,
            enc,
            long,
            0,
            0,
            line_cap(40),
            Shorten::Around(&task, excerpt_cap(40)),
        );
        assert!(best.cut && best.cost + 3 > 30, "{}", best.cost);
        let short = item(enc, enc, "User: a cache.".into(), 0, 0, 64, Shorten::Not);
        let history = History {
            found: vec![
                found("a", 1, "user", "the parser cache moved"),
                found("b", 1, "user", "a cache"),
            ],
            items: HashMap::from([(("a".to_string(), 1), best), (("b".to_string(), 1), short)]),
            headers: [
                ("a".to_string(), (1, "### a".to_string(), 3)),
                ("b".to_string(), (2, "### b".to_string(), 3)),
            ]
            .into(),
            task: task.clone(),
        };
        // The best hit's excerpt does not fit 30 tokens: select takes the lesser one ...
        let lesser = history.select(30);
        assert_eq!(lesser.keys, HashSet::from([("b".to_string(), 1)]));
        // ... fit shows the best one, cut around the task's words to what the header leaves.
        let (chosen, lines) = history.fit(30, enc);
        assert_eq!(chosen.keys, HashSet::from([("a".to_string(), 1)]));
        assert!(chosen.tokens <= 30, "{}", chosen.tokens);
        assert_eq!(lines[0], "### a");
        assert!(
            lines[1].starts_with("User: …") && lines[1].contains("parser cache"),
            "{lines:?}"
        );
        let counted = tokens::count(enc, &lines[1]) + 1 + 3;
        assert_eq!(chosen.tokens, counted);
        // A room under MIN_CUT keeps select's choice.
        let (kept, _) = history.fit(3 + MIN_CUT, enc);
        assert_eq!(kept, history.select(3 + MIN_CUT));
        assert_eq!(kept.keys, HashSet::from([("b".to_string(), 1)]));
        // Room enough: select's choice, unchanged.
        let (all, _) = history.fit(500, enc);
        assert_eq!(all, history.select(500));
        assert_eq!(all.keys.len(), 2);
    }

    #[test]
    fn long_lines_are_cut_to_the_excerpt_length() {
        let (_, i) = long_item(Shorten::Around(&[], 48));
        assert!(i.cut);
        assert!((40..=49).contains(&i.cost), "{}", i.cost);
        assert!(i.text.ends_with('…'));
        // Never longer than the cap itself.
        let (_, i) = long_item(Shorten::Around(&[], 500));
        assert!(i.cost <= 65, "{}", i.cost);
    }

    #[test]
    fn a_hit_over_its_cap_is_cut_to_a_quarter_of_it() {
        assert_eq!(excerpt_cap(900), line_cap(900) / 4);
        assert_eq!(excerpt_cap(60), 48);
        // Whole within the cap, an excerpt over it: a reply of 200 words in a share of 450.
        let task = bm25::words("which port does the proxy use?");
        let reply = format!(
            "Assistant: {} The proxy listens on port 8443. {}",
            "Some background on the setup. ".repeat(40),
            "More on other things. ".repeat(40)
        );
        let share = 450;
        let i = item(
            Encoding::O200kBase,
            Encoding::O200kBase,
            reply,
            0,
            0,
            line_cap(share),
            Shorten::Around(&task, excerpt_cap(share)),
        );
        assert!(i.cut);
        assert!(i.cost <= excerpt_cap(share) + 1, "{}", i.cost);
        assert!(i.text.contains("port 8443"), "{}", i.text);
    }

    #[test]
    fn an_answer_too_long_to_come_whole_is_marked_not_cut() {
        let (long, i) = long_item(Shorten::Not);
        assert!(i.cut);
        assert_eq!(i.text, long);
        assert!(i.cost > 65, "{}", i.cost);
    }

    #[test]
    fn a_long_conclusion_comes_as_its_opening_within_its_cap() {
        let (_, i) = long_item(Shorten::Opening);
        assert!(!i.cut, "made to fit, it comes with its request");
        assert!(
            i.text.starts_with("word word") && i.text.ends_with('…'),
            "{}",
            i.text
        );
        assert!(i.cost <= 65, "{}", i.cost);
        // A short one comes whole.
        let enc = Encoding::O200kBase;
        let short = item(
            enc,
            enc,
            "Done: retention is 14 days.".into(),
            0,
            0,
            64,
            Shorten::Opening,
        );
        assert_eq!(short.text, "Done: retention is 14 days.");
    }

    #[test]
    fn a_request_comes_with_its_conclusion_not_the_message_after_it() {
        let its = items(&[("a", 1, 10), ("a", 2, 10), ("a", 6, 10)]);
        let headers: HashMap<String, usize> = [("a".into(), 5)].into();
        let mut request = found("a", 1, "user", "why does the restore fail?");
        request.answer = Some(6);
        let chosen = select(std::slice::from_ref(&request), &its, &headers, 100);
        assert_eq!(
            chosen.keys,
            HashSet::from([("a".to_string(), 1), ("a".to_string(), 6)])
        );
        assert_eq!(
            keys_for(&[request.clone()]),
            vec![("a".to_string(), 1), ("a".to_string(), 6)]
        );
        let answers = answers_only(&[request.clone()]);
        assert_eq!(conclusions_among(&[request], &answers), answers);
    }
}
