//! Words of code that a full-text index keeps whole, and the parts they are asked by.
//!
//! The index's tokenizer (Unicode word breaks) keeps `token_store.rs`, `lazy_html`,
//! `api.v2`, `foo:bar` and `parseConfig` each as one word, so "token store" or "parse config"
//! found nothing of them. A turn's text is therefore indexed with its compounds' parts beside
//! it ([`parts`], the `search_parts` property), and cairn's own words cut an identifier where
//! its case changes ([`camel_pieces`]), as they already cut at `_` and `.`.
//!
//! A compound is what the tokenizer joins: letters and digits, `_` anywhere, and one of
//! `.` `:` `,` `'` between two letters or digits (`std::io` is two words already). Its parts
//! are its runs of letters and digits, each cut where the case changes (`HTTPServer` →
//! `http`, `server`); parts of one character and numbers are left out, and so are parts the
//! text also holds as words of their own ("the handler in handler_60.rs" is found by
//! "handler" already: the index holds less, and a query matches no more than it needs).
//! Numbers (`1,000`, `3.14`) and words joined only by an apostrophe (`don't`, `Caroline's`)
//! have no parts. Pure.

use std::borrow::Cow;
use std::collections::HashSet;

/// The form of the parts: bump when [`parts`] changes, and every stored text is parted
/// again in the background.
pub const FORM: i64 = 1;

/// Characters of parts kept for one text at most.
pub const MAX_CHARS: usize = 4_000;

/// Whether `c` may stand between two letters or digits inside one word of the tokenizer.
fn joins_between(c: char) -> bool {
    matches!(c, '.' | ':' | ',' | '\'' | '’')
}

/// The tokenizer's words of `text`, as they are written.
fn tokens(text: &str) -> Vec<&str> {
    let mut words: Vec<&str> = Vec::new();
    let mut start: Option<usize> = None;
    let mut prev: Option<char> = None;
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        let inside = c.is_alphanumeric()
            || c == '_'
            || (joins_between(c)
                && start.is_some()
                && prev.is_some_and(char::is_alphanumeric)
                && chars.peek().is_some_and(|&(_, n)| n.is_alphanumeric()));
        match (inside, start) {
            (true, None) => start = Some(at),
            (false, Some(from)) => {
                words.push(&text[from..at]);
                start = None;
            }
            _ => {}
        }
        prev = Some(c);
    }
    if let Some(from) = start {
        words.push(&text[from..]);
    }
    words
}

/// `word` in lower case, borrowed when it is already.
fn lowered(word: &str) -> Cow<'_, str> {
    if word.chars().any(char::is_uppercase) {
        Cow::Owned(word.to_lowercase())
    } else {
        Cow::Borrowed(word)
    }
}

/// Whether `text` may hold a compound at all (cheap, most texts do not): an ASCII text
/// with no `_`, no `.` `:` `,` `'` between two letters or digits, no capital after a small
/// letter and no two capitals before a small letter holds none.
fn may_hold_compound(text: &str) -> bool {
    if !text.is_ascii() {
        return true;
    }
    let b = text.as_bytes();
    b.contains(&b'_')
        || b.windows(2)
            .any(|w| w[0].is_ascii_lowercase() && w[1].is_ascii_uppercase())
        || b.windows(3).any(|w| {
            (matches!(w[1], b'.' | b':' | b',' | b'\'')
                && w[0].is_ascii_alphanumeric()
                && w[2].is_ascii_alphanumeric())
                || (w[0].is_ascii_uppercase()
                    && w[1].is_ascii_uppercase()
                    && w[2].is_ascii_lowercase())
        })
}

/// The compounds of `text`: the tokenizer's words that hold more than letters and digits
/// (or change case inside), as they are written.
#[cfg(test)]
fn compounds(text: &str) -> impl Iterator<Item = &str> {
    tokens(text).into_iter().filter(|w| is_compound(w))
}

/// Whether a word of the tokenizer has parts worth indexing apart.
fn is_compound(word: &str) -> bool {
    let joined = word
        .chars()
        .any(|c| !c.is_alphanumeric() && c != '\'' && c != '’');
    let numeric = word.chars().all(|c| !c.is_alphabetic());
    !numeric && (joined || camel_pieces(word).nth(1).is_some())
}

/// Byte offsets where `word` (letters and digits) changes case: before an upper-case letter
/// after a lower-case one (`parse|Config`), and before the last of a run of capitals when two
/// lower-case letters follow (`HTTP|Server`, but `IPv4` and `ABCs` stay whole).
fn case_cuts(word: &str) -> Vec<usize> {
    let chars: Vec<(usize, char)> = word.char_indices().collect();
    let lower = |i: usize| chars.get(i).is_some_and(|&(_, c)| c.is_lowercase());
    let upper = |i: usize| chars.get(i).is_some_and(|&(_, c)| c.is_uppercase());
    (1..chars.len())
        .filter(|&i| upper(i) && (lower(i - 1) || (upper(i - 1) && lower(i + 1) && lower(i + 2))))
        .map(|i| chars[i].0)
        .collect()
}

/// The pieces of a word of letters and digits, cut where its case changes; the word itself
/// when it does not.
pub fn camel_pieces(word: &str) -> impl Iterator<Item = &str> {
    let mut bounds = vec![0];
    if may_change_case(word) {
        bounds.extend(case_cuts(word));
    }
    bounds.push(word.len());
    (0..bounds.len() - 1).map(move |i| &word[bounds[i]..bounds[i + 1]])
}

/// Whether `word` may change case inside: a capital after its first character (cheap; most
/// words do not).
pub fn may_change_case(word: &str) -> bool {
    if word.is_ascii() {
        word.bytes().skip(1).any(|b| b.is_ascii_uppercase())
    } else {
        word.chars().skip(1).any(char::is_uppercase)
    }
}

/// The parts of `text`'s compounds that the text does not also hold as words of their own
/// (it is found by those already), lower case, each once, in the order first met, joined by
/// spaces and bounded by [`MAX_CHARS`]; parts of one character and numbers are left out.
/// `None` when no part is left.
pub fn parts(text: &str) -> Option<String> {
    if !may_hold_compound(text) {
        return None;
    }
    let (compounds, words): (Vec<&str>, Vec<&str>) =
        tokens(text).into_iter().partition(|w| is_compound(w));
    if compounds.is_empty() {
        return None;
    }
    let words: HashSet<Cow<'_, str>> = words.into_iter().map(lowered).collect();
    let mut seen: HashSet<String> = HashSet::new();
    let mut out = String::new();
    'words: for word in compounds {
        for run in word.split(|c: char| !c.is_alphanumeric()) {
            for piece in camel_pieces(run) {
                if piece.chars().nth(1).is_none() || piece.chars().all(|c| c.is_numeric()) {
                    continue;
                }
                let piece = piece.to_lowercase();
                if out.len() + piece.len() + 1 > MAX_CHARS {
                    break 'words;
                }
                if !words.contains(piece.as_str()) && seen.insert(piece.clone()) {
                    if !out.is_empty() {
                        out.push(' ');
                    }
                    out.push_str(&piece);
                }
            }
        }
    }
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(text: &str) -> Vec<&str> {
        compounds(text).collect()
    }

    #[test]
    fn compounds_are_the_words_the_tokenizer_keeps_whole() {
        // Each as Neo4j's English analyzer keeps it (one term each).
        assert_eq!(
            all("edited src/auth/token_store.rs; see api.v2, foo:bar and x_1"),
            ["token_store.rs", "api.v2", "foo:bar", "x_1"]
        );
        // Two colons, a hyphen, a slash or a trailing dot cut between words already.
        assert_eq!(all("std::io user-service path/to e.g. done."), ["e.g"]);
        assert_eq!(
            all("parseConfig HTTPServer IPv4 ABCs plain"),
            ["parseConfig", "HTTPServer"]
        );
        // Numbers and an apostrophe's words have no parts.
        assert!(all("1,000 3.14 1.2.3 don't Caroline's it’s").is_empty());
        assert_eq!(all("__init__"), ["__init__"]);
    }

    #[test]
    fn parts_are_runs_cut_where_the_case_changes() {
        assert_eq!(
            parts("Read src/auth/token_store.rs and getHTTPResponse in lazy_html").as_deref(),
            Some("token store rs get http response lazy html")
        );
        assert_eq!(
            parts("api.v2 self.config").as_deref(),
            Some("api v2 self config")
        );
        // Single letters are left out, each part is kept once.
        assert_eq!(
            parts("e.g. a_b token_store tokenStore").as_deref(),
            Some("token store")
        );
        assert_eq!(parts("nothing joined here, 1,000 times"), None);
        assert_eq!(parts("HTTPServer").as_deref(), Some("http server"));
        assert_eq!(parts("Plain words. Then more, and more: done"), None);
        assert_eq!(
            parts("Étude_Über naïveCafé").as_deref(),
            Some("étude über naïve café")
        );
    }

    #[test]
    fn case_cuts_keep_acronyms_and_versions_whole() {
        let pieces = |w| camel_pieces(w).collect::<Vec<_>>();
        assert_eq!(pieces("parseConfig"), ["parse", "Config"]);
        assert_eq!(pieces("HTTPServer"), ["HTTP", "Server"]);
        assert_eq!(pieces("getHTTPResponse"), ["get", "HTTP", "Response"]);
        assert_eq!(pieces("IPv4"), ["IPv4"]);
        assert_eq!(pieces("ABCs"), ["ABCs"]);
        assert_eq!(pieces("sha256"), ["sha256"]);
        assert_eq!(pieces("JSONSchema"), ["JSON", "Schema"]);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3_000))]
        /// The cheap look never passes over a text that holds a compound.
        #[test]
        fn the_cheap_look_misses_no_compound(text in "[aZz09_.:,' /-]{0,24}") {
            let held = tokens(&text).into_iter().any(is_compound);
            proptest::prop_assert!(!held || may_hold_compound(&text), "{:?}", text);
        }
    }

    #[test]
    fn parts_are_bounded() {
        let text: String = (0..3_000).map(|i| format!("part{i}_x ")).collect();
        let p = parts(&text).unwrap();
        assert!(p.len() <= MAX_CHARS, "{}", p.len());
        assert!(p.starts_with("part0 part1 "));
    }
}
