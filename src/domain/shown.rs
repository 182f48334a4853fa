//! Stored text as it may be shown in plain text — a context handed to a model, a hook's
//! `additionalContext`, a search snippet, a terminal: the characters that act instead of
//! printing are blanked. Those are the control characters (NUL, BEL, ESC and the terminal
//! escape sequences it opens, C1 controls) and the bidirectional formatting characters
//! (U+202A–U+202E, U+2066–U+2069, U+200E, U+200F, U+061C), which can make a line read
//! otherwise than it is stored ("Trojan Source"). Line breaks and tabs are kept where the
//! caller keeps lines. Pure: no I/O.

use std::borrow::Cow;

/// Whether `c` acts instead of printing: a control character other than a line break or a
/// tab, a bidirectional formatting character, or a line or paragraph separator (a line break
/// where only `\n` is expected).
pub fn acts(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(
            c,
            '\u{202A}'..='\u{202E}'
                | '\u{2066}'..='\u{2069}'
                | '\u{200E}'
                | '\u{200F}'
                | '\u{061C}'
                | '\u{2028}'
                | '\u{2029}'
        )
}

/// `text` with every character that [`acts`] as a space; borrowed when there is none.
pub fn blanked(text: &str) -> Cow<'_, str> {
    if !text.chars().any(acts) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(
        text.chars()
            .map(|c| if acts(c) { ' ' } else { c })
            .collect(),
    )
}

/// `text` owned, blanked as [`blanked`] does, and whether anything was.
pub fn blanked_owned(text: String) -> (String, bool) {
    match blanked(&text) {
        Cow::Borrowed(_) => (text, false),
        Cow::Owned(shown) => (shown, true),
    }
}

/// `text` on one line: line breaks and tabs as spaces too.
pub fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| if acts(c) || c.is_control() { ' ' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_and_direction_overrides_are_blanked_lines_kept() {
        let stored = "a\u{0}b\u{7}c\u{1b}[31mred\u{9b}x d\u{202e}evil\u{2066}e\u{200f}\nnext\tcol";
        let shown = blanked(stored);
        assert_eq!(shown, "a b c [31mred x d evil e \nnext\tcol");
        assert!(!shown.chars().any(acts));
        assert_eq!(one_line(stored), "a b c [31mred x d evil e  next col");
    }

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        let text = "refresh tokens expire — après 14 jours, 東京\nok";
        assert!(matches!(blanked(text), Cow::Borrowed(t) if t == text));
        assert_eq!(one_line("a\nb"), "a b");
    }
}
