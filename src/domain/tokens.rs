//! Token counting with the real BPE tokenizers (tiktoken-rs), never a chars/4 estimate.
//! A context's short lines can have their counts remembered ([`count_line`]): its headers
//! and list lines come back in the next context, and counting a short line costs far more
//! than finding its count. A context's whole text is counted as the sum of its parts between
//! clean line breaks, each remembered too ([`count_joined`]): exactly the count of the whole.
//! Captured texts, each new, are counted afresh ([`count`]).

use std::sync::OnceLock;

use moka::sync::Cache;
use tiktoken_rs::CoreBPE;

use crate::config::Encoding;

/// Texts up to this many bytes have their counts remembered; a longer one is counted afresh.
const REMEMBERED_BYTES: usize = 512;
/// Bytes of remembered texts per encoding, at most (least recently used give way).
const REMEMBERED_CAPACITY: u64 = 8 << 20;

fn bpe(encoding: Encoding) -> &'static CoreBPE {
    match encoding {
        Encoding::O200kBase => tiktoken_rs::o200k_base_singleton(),
        Encoding::Cl100kBase => tiktoken_rs::cl100k_base_singleton(),
    }
}

/// Exact number of tokens of `text` in `encoding` (special-token text counted as ordinary text).
pub fn count(encoding: Encoding, text: &str) -> usize {
    bpe(encoding).encode_ordinary(text).len()
}

/// [`count`] of a text that comes back: remembered when it is short, found again at once.
pub fn count_line(encoding: Encoding, text: &str) -> usize {
    if text.len() > REMEMBERED_BYTES {
        return count(encoding, text);
    }
    let cache = remembered(encoding);
    if let Some(n) = cache.get(text) {
        return n as usize;
    }
    let n = count(encoding, text);
    cache.insert(text.into(), n as u32);
    n
}

/// [`count`] of `lines` joined by newlines, from the counts of its parts between clean
/// breaks, each remembered like a line's ([`count_line`]): a context counted again (a refit,
/// the next prompt's recall) counts only its new lines.
///
/// Both encodings split text into pieces before pairing bytes, and a piece never reaches past
/// a newline into a line that opens with a character that is neither whitespace nor `/`: the
/// newline closes the piece it joins (after a letter, a digit or a space it stands alone;
/// after punctuation it ends the punctuation's piece, which takes in newlines and, in
/// `o200k_base`, slashes). So the count of the whole is the sum of the counts of its parts
/// broken there, each with its newline. A line that opens otherwise (empty, indented, a path)
/// is counted with the one before it.
pub fn count_joined(encoding: Encoding, lines: &[&str]) -> usize {
    let mut text = Growing::new(encoding);
    for line in lines {
        text.push(line);
    }
    text.count()
}

/// Whether nothing of the line before a newline can run on into `line` ([`count_joined`]).
fn opens_cleanly(line: &str) -> bool {
    line.chars()
        .next()
        .is_some_and(|c| !c.is_whitespace() && c != '/')
}

/// A text built a line at a time (lines joined by newlines), counted as it grows: a part
/// between clean breaks ([`count_joined`]) is counted once it is closed, so asking what one
/// more line would make costs that line and the part it joins, not the whole text again.
#[derive(Clone, Debug)]
pub struct Growing {
    encoding: Encoding,
    /// Tokens of the closed parts, each with its newline.
    closed: usize,
    /// The lines since the last clean break, joined; `None` before the first line.
    open: Option<String>,
}

impl Growing {
    pub fn new(encoding: Encoding) -> Self {
        Self {
            encoding,
            closed: 0,
            open: None,
        }
    }

    /// Exact tokens of the text so far.
    pub fn count(&self) -> usize {
        self.closed
            + self
                .open
                .as_deref()
                .map_or(0, |o| count_line(self.encoding, o))
    }

    /// Exact tokens the text would have with `line` after it.
    pub fn with(&self, line: &str) -> usize {
        let Some(open) = &self.open else {
            return count_line(self.encoding, line);
        };
        if opens_cleanly(line) {
            self.closed
                + count_line(self.encoding, &format!("{open}\n"))
                + count_line(self.encoding, line)
        } else {
            self.closed + count_line(self.encoding, &format!("{open}\n{line}"))
        }
    }

    /// Puts `line` after the text.
    pub fn push(&mut self, line: &str) {
        match &mut self.open {
            None => self.open = Some(line.to_string()),
            Some(open) if opens_cleanly(line) => {
                open.push('\n');
                self.closed += count_line(self.encoding, open);
                open.clear();
                open.push_str(line);
            }
            Some(open) => {
                open.push('\n');
                open.push_str(line);
            }
        }
    }
}

/// The remembered counts of short texts in `encoding`.
fn remembered(encoding: Encoding) -> &'static Cache<String, u32> {
    static O200K: OnceLock<Cache<String, u32>> = OnceLock::new();
    static CL100K: OnceLock<Cache<String, u32>> = OnceLock::new();
    let cell = match encoding {
        Encoding::O200kBase => &O200K,
        Encoding::Cl100kBase => &CL100K,
    };
    cell.get_or_init(|| {
        Cache::builder()
            .weigher(|text: &String, _| u32::try_from(text.len() + 8).unwrap_or(u32::MAX))
            .max_capacity(REMEMBERED_CAPACITY)
            .build()
    })
}

/// `text` within `max_tokens`, ending in `…` when it was cut.
pub fn cut(encoding: Encoding, text: &str, max_tokens: usize) -> String {
    if count(encoding, text) <= max_tokens {
        return text.to_string();
    }
    let mut cut = truncate(encoding, text, max_tokens.saturating_sub(1));
    cut.push('…');
    if count(encoding, &cut) > max_tokens {
        cut.pop();
    }
    cut
}

/// The longest prefix of `text` (on a char boundary) whose token count is at most `max_tokens`.
pub fn truncate(encoding: Encoding, text: &str, max_tokens: usize) -> String {
    if max_tokens == 0 {
        return String::new();
    }
    let tokens = bpe(encoding).encode_ordinary(text);
    if tokens.len() <= max_tokens {
        return text.to_string();
    }
    // Decoding a token prefix can split a multi-byte character; back off until it is valid
    // and re-check the count, which can differ after re-tokenisation.
    let mut take = max_tokens;
    while take > 0 {
        if let Ok(prefix) = bpe(encoding).decode(&tokens[..take]) {
            if count(encoding, &prefix) <= max_tokens {
                return prefix;
            }
        }
        take -= 1;
    }
    String::new()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn a_remembered_count_is_the_tokenizers_own_in_each_encoding() {
        let texts = [
            "### 2023-07-15: work on the parser cache",
            "- (0.74) the cache is the bottleneck",
            "<|endoftext|> counted as text",
            "  indented\ttabs and trailing spaces   ",
            "déjà vu, 東京, 🚀🚀",
            "",
        ];
        let long = "a line of words ".repeat(64);
        for enc in [Encoding::O200kBase, Encoding::Cl100kBase] {
            for text in texts.iter().copied().chain([long.as_str()]) {
                let own = bpe(enc).encode_ordinary(text).len();
                // Counted, then remembered: the same either way.
                assert_eq!(count_line(enc, text), own, "{enc:?} {text:?}");
                assert_eq!(count_line(enc, text), own, "{enc:?} {text:?} again");
            }
        }
        // One encoding's count is not the other's.
        let text = "déjà vu, 東京, 🚀🚀";
        assert_ne!(
            count_line(Encoding::O200kBase, text),
            count_line(Encoding::Cl100kBase, text)
        );
    }

    /// Characters where pieces begin, end or run on: letters of each case and script,
    /// digits, marks, apostrophes, punctuation, slashes, every kind of space and break.
    const EDGES: &[char] = &[
        'a', 'Z', 's', 't', 'é', '東', 'ß', '\u{301}', '7', '0', ' ', ' ', '\t', '\r', '\n',
        '\u{85}', '\u{2028}', '\u{a0}', '/', '.', '!', ':', '#', '-', '\'', '’', '"', '🚀', '…',
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3_000))]
        #[test]
        fn lines_counted_in_parts_count_as_the_whole(
            lines in proptest::collection::vec(
                proptest::collection::vec(proptest::sample::select(EDGES), 0..12)
                    .prop_map(|cs| cs.into_iter().collect::<String>()),
                0..8,
            )
        ) {
            let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
            for enc in [Encoding::O200kBase, Encoding::Cl100kBase] {
                let whole = count(enc, &lines.join("\n"));
                prop_assert_eq!(count_joined(enc, &lines), whole, "{:?} {:?}", enc, lines);
                // Grown a line at a time, asked before each line what it would make.
                let mut grown = Growing::new(enc);
                for (i, line) in lines.iter().enumerate() {
                    let with = count(enc, &lines[..=i].join("\n"));
                    prop_assert_eq!(grown.with(line), with, "{:?} {:?}", enc, &lines[..=i]);
                    grown.push(line);
                    prop_assert_eq!(grown.count(), with);
                }
            }
        }
    }

    #[test]
    fn a_context_counted_in_parts_counts_as_a_whole() {
        // Lines as contexts show them, and ones that open on what runs on from the line
        // before (an indent, a path, an empty line, punctuation after punctuation).
        let lines = [
            "# Context for task: why did the lexer token change?",
            "## History",
            "### 2023-07-03",
            "Melanie: Wow, Caroline! That's great!!",
            "User: fix it...",
            "/usr/lib/x86_64-linux-gnu/ was missing",
            "",
            "    indented   ",
            "[tool_call] cargo test 2>&1: Bash failed: Exit code 101",
            "…and 17 more",
            "- src/main.rs (write; sessions: s1, s2)",
            "東京 🚀 don't won’t I'LL",
        ];
        for enc in [Encoding::O200kBase, Encoding::Cl100kBase] {
            for n in 0..=lines.len() {
                for start in 0..n {
                    let part = &lines[start..n];
                    assert_eq!(
                        count_joined(enc, part),
                        count(enc, &part.join("\n")),
                        "{enc:?} {part:?}"
                    );
                }
            }
        }
    }

    /// Every turn of LoCoMo's ten conversations (the fixture's extract), a session at a time
    /// under its date, as a context shows them, and the Claude Code transcripts' lines as
    /// they are.
    #[test]
    fn real_conversations_counted_in_parts_count_as_a_whole() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
        let locomo: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(format!("{dir}/locomo/locomo10.json")).unwrap(),
        )
        .unwrap();
        let mut contexts: Vec<Vec<String>> = Vec::new();
        for conv in locomo["conversations"].as_array().unwrap() {
            for session in conv["sessions"].as_array().unwrap() {
                let mut lines = vec![format!("### {}", session["date"].as_str().unwrap())];
                for turn in session["turns"].as_array().unwrap() {
                    let (who, text) = (&turn["speaker"], &turn["text"]);
                    lines.push(format!(
                        "{}: {}",
                        who.as_str().unwrap(),
                        text.as_str().unwrap()
                    ));
                }
                contexts.push(lines);
            }
        }
        let transcript = std::fs::read_to_string(format!(
            "{dir}/claude-code/transcripts/v1.0-inline-sidechains/\
             5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
        ))
        .unwrap();
        contexts.push(transcript.lines().map(str::to_string).collect());
        assert!(contexts.len() > 250);
        for enc in [Encoding::O200kBase, Encoding::Cl100kBase] {
            for lines in &contexts {
                let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
                assert_eq!(count_joined(enc, &lines), count(enc, &lines.join("\n")));
            }
        }
    }

    #[test]
    fn counts_differ_by_encoding_and_truncation_fits() {
        let text = "The quick brown fox jumps over the lazy dog — déjà vu, 東京.";
        let o = count(Encoding::O200kBase, text);
        let c = count(Encoding::Cl100kBase, text);
        assert!(o > 5 && c > 5);
        for max in 0..o + 2 {
            let t = truncate(Encoding::O200kBase, text, max);
            assert!(count(Encoding::O200kBase, &t) <= max);
            assert!(text.starts_with(&t));
        }
    }
}
