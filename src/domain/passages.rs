//! The passages of a search text: its sentences (and lines, and the parts `turn_text` joins),
//! each embedded on its own beside the whole text, so one sentence that answers a query is
//! not drowned by the rest of a long turn. A text of one passage has none: its own vector
//! covers it. Pure: no I/O.
//!
//! On LoCoMo's 1,981 questions (vectors only, all-MiniLM-L6-v2), the share of evidence turns
//! in the nearest 20 went 0.463 → 0.556 when a turn scored the better of its own cosine and
//! its best sentence's (docs/performance.md).

/// Most passages one text is cut into; more sentences are packed together evenly. A search
/// text's largest (`turn_text::MAX_CHARS`) then makes passages of ~500 characters, well
/// within the ~256 tokens the model reads.
pub const MAX_PASSAGES: usize = 16;
/// A piece shorter than this (characters) joins the one after it ("Thanks!", "Wow.").
const MIN_CHARS: usize = 40;
/// A piece longer than this (characters) is cut at a space: the model reads ~256 tokens of a
/// text, so a long run without sentence ends would otherwise be read only in part.
const MAX_CHARS: usize = 600;

/// The passages of `text`, in order; empty when it is one passage.
pub fn of(text: &str) -> Vec<String> {
    let pieces: Vec<String> = pieces(text).into_iter().map(str::to_string).collect();
    let pieces = join_short(pieces);
    let pieces = pack(pieces, MAX_PASSAGES);
    if pieces.len() < 2 {
        return Vec::new();
    }
    pieces
}

/// The pieces passages are made of, in order: `text`'s sentences, lines and " — "-joined
/// parts, trimmed, a long one cut at spaces; each a slice of `text`, none empty.
pub fn pieces(text: &str) -> Vec<&str> {
    sentences(text).into_iter().flat_map(cut_long).collect()
}

/// Sentences, lines and " — "-joined parts of `text`, trimmed, none empty.
fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let next = chars.peek().map(|&(_, n)| n);
        let end = match c {
            '\n' => Some(i + 1),
            '.' | '!' | '?' if next.is_none_or(char::is_whitespace) => Some(i + c.len_utf8()),
            '—' if text[..i].ends_with(' ') && next == Some(' ') => Some(i + c.len_utf8()),
            _ => None,
        };
        if let Some(end) = end {
            out.push(text[start..end].trim().trim_end_matches('—').trim());
            start = end;
        }
    }
    out.push(text[start..].trim());
    out.retain(|s| !s.is_empty());
    out
}

/// `piece` cut at spaces into parts of at most [`MAX_CHARS`] characters (a part without a
/// space is cut where it must).
fn cut_long(piece: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = piece;
    while rest.chars().count() > MAX_CHARS {
        let limit = rest
            .char_indices()
            .nth(MAX_CHARS)
            .map_or(rest.len(), |(i, _)| i);
        let at = rest[..limit].rfind(' ').filter(|&i| i > 0).unwrap_or(limit);
        out.push(rest[..at].trim());
        rest = rest[at..].trim_start();
    }
    if !rest.is_empty() {
        out.push(rest);
    }
    out
}

/// Short pieces joined to the next (the last to the one before).
fn join_short(pieces: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut carry = String::new();
    for p in pieces {
        let joined = if carry.is_empty() {
            p
        } else {
            format!("{carry} {p}")
        };
        if joined.chars().count() < MIN_CHARS {
            carry = joined;
        } else {
            out.push(joined);
            carry = String::new();
        }
    }
    if !carry.is_empty() {
        match out.last_mut() {
            Some(last) => {
                last.push(' ');
                last.push_str(&carry);
            }
            None => out.push(carry),
        }
    }
    out
}

/// At most `max` passages: consecutive pieces packed so each holds about the same share of
/// the characters.
fn pack(pieces: Vec<String>, max: usize) -> Vec<String> {
    if pieces.len() <= max {
        return pieces;
    }
    let total: usize = pieces.iter().map(|p| p.chars().count() + 1).sum();
    let each = total.div_ceil(max);
    let mut out: Vec<String> = Vec::new();
    let mut cur = String::new();
    for p in pieces {
        if !cur.is_empty()
            && cur.chars().count() + p.chars().count() + 1 > each
            && out.len() + 1 < max
        {
            out.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(&p);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turn_is_cut_at_its_sentences_and_short_ones_join_the_next() {
        let text = "Melanie: Thanks, Caroline! It's awesome seeing the kids get excited learning \
                    something new about nature. We roasted marshmallows and shared stories \
                    around the campfire. Wow.";
        assert_eq!(
            of(text),
            [
                "Melanie: Thanks, Caroline! It's awesome seeing the kids get excited learning \
                 something new about nature.",
                "We roasted marshmallows and shared stories around the campfire. Wow."
            ]
        );
    }

    #[test]
    fn one_passage_is_none() {
        assert!(of("the login form rejects valid passwords").is_empty());
        assert!(of("Yes. Sure. Ok.").is_empty());
        assert!(of("").is_empty());
        assert!(of("v1.2.3 of src/main.rs is at 3.5 GHz").is_empty());
    }

    #[test]
    fn lines_and_joined_parts_are_passages() {
        let text = "decided token expiry: 15 minutes with refresh rotation — rationale kept \
                    short so a stolen token is worth little\nrejected: 24 hour tokens, \
                    sessions stored server side";
        let p = of(text);
        assert_eq!(p.len(), 3, "{p:?}");
        assert_eq!(
            p[0],
            "decided token expiry: 15 minutes with refresh rotation"
        );
        assert!(p[2].starts_with("rejected:"), "{p:?}");
    }

    #[test]
    fn long_runs_are_cut_at_spaces_and_passages_are_bounded() {
        let run = "word ".repeat(400);
        let p = of(&run);
        assert!(p.len() >= 3, "{}", p.len());
        assert!(p.iter().all(|s| s.chars().count() <= MAX_CHARS), "{p:?}");
        assert_eq!(p.join(" ").split_whitespace().count(), 400);

        let many: String = (0..50)
            .map(|i| format!("Sentence number {i} says one more thing here. "))
            .collect();
        let p = of(&many);
        assert_eq!(p.len(), MAX_PASSAGES);
        // Nothing lost, order kept.
        assert_eq!(p.join(" "), many.trim());
    }

    #[test]
    fn multibyte_text_is_cut_on_char_boundaries() {
        let text =
            "Ünïcödé sentence that is long enough to stand alone. 日本語の文はここにあります。 \
                    Another sentence here with enough characters — ok";
        let p = of(text);
        assert!(!p.is_empty());
        assert!(p.iter().all(|s| !s.is_empty()));
    }
}
