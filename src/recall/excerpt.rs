//! The part of a long history line that bears on a task. A line longer than its cap is shown
//! around its pieces (sentences, lines; [`passages::pieces`]) that hold the task's words, not
//! from its start: a long reply or tool output found for one detail shows that detail. Its
//! label ("User: ", "Assistant: ") stays in front, and "…" marks what was left out on either
//! side. A line holding none of the task's words past its first piece is cut at its end, as
//! any long line was before. Pure; every count is the encoding's own.

use std::collections::{HashMap, HashSet};

use crate::config::Encoding;
use crate::domain::{passages, tokens};
use crate::recall::bm25;

/// A line's label ends within this many bytes of its start ("Assistant: ", "[read] src: ").
const LABEL_BYTES: usize = 24;

/// `line` on one line in at most `cap` tokens of `encoding`: around the pieces holding most
/// of `task` (stemmed words, [`bm25::words`]), or its start.
pub fn around(encoding: Encoding, line: &str, task: &[String], cap: usize) -> String {
    window(encoding, line, task, cap).unwrap_or_else(|| tokens::cut(encoding, &flat(line), cap))
}

/// The best piece of `line` for `task` and the pieces around it, after then before, while
/// they fit; `None` when its start is as good.
fn window(encoding: Encoding, line: &str, task: &[String], cap: usize) -> Option<String> {
    let (label, body) = split_label(line);
    let pieces = passages::pieces(body);
    let best = best_piece(&pieces, task).filter(|&b| b > 0)?;
    let label = flat(label);
    // Room for the pieces: the label and the two "…" paid first.
    let room = cap.saturating_sub(tokens::count(encoding, &label) + 2);
    let cost = |i: usize| tokens::count(encoding, pieces[i]) + 1;
    let mut used = cost(best);
    if used > room {
        // The best piece alone is longer: its start.
        let start = tokens::truncate(encoding, &flat(pieces[best]), room);
        return Some(tokens::cut(encoding, &format!("{label}…{start}…"), cap));
    }
    let (mut lo, mut hi) = (best, best);
    let (mut after, mut before) = (true, true);
    // Each piece is counted once: a side whose next piece does not fit is closed.
    let fits = |i: usize, used: usize| Some(cost(i)).filter(|c| used + c <= room);
    while after || before {
        if after {
            match pieces.get(hi + 1).and_then(|_| fits(hi + 1, used)) {
                Some(c) => {
                    hi += 1;
                    used += c;
                }
                None => after = false,
            }
        }
        if before {
            match lo.checked_sub(1).and_then(|i| fits(i, used)) {
                Some(c) => {
                    lo -= 1;
                    used += c;
                }
                None => before = false,
            }
        }
    }
    let start = offset(body, pieces[lo]);
    let end = offset(body, pieces[hi]) + pieces[hi].len();
    let mut text = label;
    if lo > 0 {
        text.push_str("… ");
    }
    text.push_str(&flat(&body[start..end]));
    if hi + 1 < pieces.len() {
        text.push_str(" …");
    }
    // Pieces counted apart may tokenise a little longer joined.
    Some(tokens::cut(encoding, &text, cap))
}

/// The label of `line` ("Assistant: ") and the rest.
fn split_label(line: &str) -> (&str, &str) {
    match line.find(": ") {
        Some(i) if i + 2 <= LABEL_BYTES => line.split_at(i + 2),
        _ => ("", line),
    }
}

/// The piece holding the most of `task`: each task word it holds weighs ln(1 + n / m) for
/// `n` pieces of which `m` hold the word, so a word every piece repeats counts little. The
/// first of equals; `None` when no piece holds a task word.
fn best_piece(pieces: &[&str], task: &[String]) -> Option<usize> {
    let task: HashSet<&str> = task.iter().map(String::as_str).collect();
    if task.is_empty() || pieces.len() < 2 {
        return None;
    }
    let held: Vec<HashSet<String>> = pieces
        .iter()
        .map(|p| {
            bm25::words(p)
                .into_iter()
                .filter(|w| task.contains(w.as_str()))
                .collect()
        })
        .collect();
    let mut holding: HashMap<&str, usize> = HashMap::new();
    for words in &held {
        for w in words {
            *holding.entry(w.as_str()).or_default() += 1;
        }
    }
    let n = pieces.len() as f64;
    let weight = |words: &HashSet<String>| -> f64 {
        words
            .iter()
            .map(|w| (1.0 + n / holding[w.as_str()] as f64).ln())
            .sum()
    };
    let mut best = None;
    let mut best_weight = 0.0;
    for (i, words) in held.iter().enumerate() {
        let w = weight(words);
        if w > best_weight {
            best = Some(i);
            best_weight = w;
        }
    }
    best
}

/// Where, in characters, the part of `text` that bears on `task` (stemmed words) begins: the
/// piece holding most of them (`best_piece`; the whole text when it is one piece), from its
/// start, or from `lead` characters before its first task word when that lies further in;
/// `None` when no piece holds a task word.
pub fn telling_start(text: &str, task: &[String], lead: usize) -> Option<usize> {
    let pieces = passages::pieces(text);
    let best = best_piece(&pieces, task);
    let piece = best.map_or(text, |i| pieces[i]);
    // ASCII lowercasing keeps every byte where it was, so offsets hold in `piece`.
    let lower = piece.to_ascii_lowercase();
    let first = task.iter().filter_map(|w| lower.find(w.as_str())).min();
    if best.is_none() && first.is_none() {
        return None;
    }
    let piece_start = text[..offset(text, piece)].chars().count();
    Some(match first {
        Some(byte) => {
            let word = piece_start + piece[..byte].chars().count();
            word.saturating_sub(lead).max(piece_start)
        }
        None => piece_start,
    })
}

/// Where `part` (a slice of `whole`) starts in it, in bytes.
fn offset(whole: &str, part: &str) -> usize {
    part.as_ptr() as usize - whole.as_ptr() as usize
}

fn flat(s: &str) -> String {
    s.replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const ENC: Encoding = Encoding::O200kBase;

    fn long_reply() -> String {
        let mut text = String::from("Assistant: Here is what the hooks documentation says.\n");
        for i in 0..40 {
            text.push_str(&format!(
                "Point {i} of the contract is about exit codes and stdout handling.\n"
            ));
        }
        text.push_str("No additionalSystemPrompt field exists; use additionalContext instead.\n");
        for i in 40..80 {
            text.push_str(&format!(
                "Point {i} of the contract is about exit codes and stdout handling.\n"
            ));
        }
        text
    }

    #[test]
    fn a_long_line_is_shown_around_the_piece_holding_the_task() {
        let task = bm25::words("is there an additionalSystemPrompt field?");
        let text = around(ENC, &long_reply(), &task, 120);
        assert!(tokens::count(ENC, &text) <= 120, "{text}");
        assert!(text.starts_with("Assistant: … Point"), "{text}");
        assert!(
            text.contains("No additionalSystemPrompt field exists"),
            "{text}"
        );
        assert!(text.ends_with(" …"), "{text}");
        assert!(!text.contains('\n'));
        // The pieces after the match come first, then those before it.
        let at = text.find("additionalSystemPrompt").unwrap();
        assert!(text[at..].contains("Point 40 "), "{text}");
        assert!(text[..at].contains("Point 39 "), "{text}");
    }

    #[test]
    fn without_the_task_words_past_its_start_a_line_keeps_its_start() {
        let reply = long_reply();
        let cut = format!("{}…", tokens::truncate(ENC, &reply.replace('\n', " "), 119));
        for task in [
            "the weather in Lisbon",
            "what the hooks documentation says",
            "",
        ] {
            let text = around(ENC, &reply, &bm25::words(task), 120);
            assert_eq!(text, cut, "{task}");
        }
    }

    #[test]
    fn a_word_every_piece_holds_weighs_less_than_a_rare_one() {
        let pieces = [
            "the contract names exit codes",
            "the contract names exit codes and exit codes",
            "the contract names additionalContext once",
            "the contract again",
        ];
        let task = bm25::words("contract exit additionalContext");
        assert_eq!(best_piece(&pieces, &task), Some(2));
        assert_eq!(best_piece(&pieces, &bm25::words("contract")), Some(0));
        assert_eq!(best_piece(&pieces, &bm25::words("weather")), None);
    }

    #[test]
    fn a_best_piece_longer_than_the_cap_is_cut_after_the_label() {
        let mut text = String::from("User: a short opening sentence here.\n");
        text.push_str(&"filler words without the topic ".repeat(10));
        text.push_str("\nthe keychain ");
        text.push_str(&"holds refresh tokens and more words ".repeat(80));
        let out = around(ENC, &text, &bm25::words("keychain"), 40);
        assert!(tokens::count(ENC, &out) <= 40, "{out}");
        assert!(out.starts_with("User: …the keychain holds"), "{out}");
        assert!(out.ends_with('…'), "{out}");
    }

    #[test]
    fn a_label_is_only_the_start_of_a_line() {
        assert_eq!(split_label("User: hi: there"), ("User: ", "hi: there"));
        let long = "[tool_call] git add src/a.rs src/b.rs: Stage the files";
        assert_eq!(split_label(long), ("", long));
        assert_eq!(split_label("no label here"), ("", "no label here"));
    }
}
