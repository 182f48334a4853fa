//! Who said it: a query that names one of a conversation's speakers asks, most of the time,
//! about what that speaker said. A chat captured from several people keeps each turn's
//! speaker as the label it opens with ("Caroline: I went to the support group…"); of the
//! evidence turns for LoCoMo's questions naming one of its two speakers, 83 % are that
//! speaker's own (half of the turns are). Turn search lifts the turns of the speaker a query
//! names by [`LIFT`] of their fused score ([`Named::lift`]), before re-ranking and diversity.
//! A lift, not a filter: a question may name one speaker and be answered by the other. Half
//! its score, since names are kept out of meaning (below): the vector list no longer leans
//! toward the named speaker by itself, and a lift of 0.15 left LoCoMo's and REALTALK's
//! evidence lower in a context (0.789 and 0.579 at 1,000 tokens, against 0.795 and 0.596).
//!
//! A label counts as a speaker's name only when it is one to three capitalised words opening
//! a message and followed by a colon, shared by at least [`MIN_TURNS`] of the candidates, and
//! written the same way in the query; a query naming two speakers (or none) lifts nothing. A
//! chat captured with its speakers opens nearly every message with a label; a coding
//! session's turns open with none (their speakers are roles), and the few of its messages
//! that open with "Note:" or "Fix:" name no one: labels count only when together they open
//! at least a third of the candidate messages ([`MIN_LABELLED`]), so such a session's
//! searches are untouched.
//!
//! Who said it is left out of meaning. A small sentence model weighs a proper name heavily:
//! "What activities does Melanie partake in?" lies closest to whatever Melanie said, and a
//! turn's vector to whoever said it. So a message is embedded without the label it opens with
//! ([`unlabelled`]), and a query naming speakers is embedded without their names
//! ([`Speakers::unnamed`]); the words (BM25) and the lift still read the names. On LoCoMo the
//! evidence among each question's 20 nearest turns by cosine alone went from 0.46 to 0.63, on
//! REALTALK from 0.33 to 0.41.

use std::collections::HashMap;

/// Share of its score a turn of the named speaker gains.
pub const LIFT: f64 = 0.5;
/// Candidates a label must open for it to count as a speaker's.
pub const MIN_TURNS: usize = 3;
/// The share of the candidate messages the speakers' labels must open between them (as a
/// divisor: a third).
pub const MIN_LABELLED: usize = 3;
/// Characters of a speaker's label at most.
const MAX_LABEL: usize = 40;
/// Words of a speaker's label at most.
const MAX_WORDS: usize = 3;

/// The speaker label `text` opens with: up to three capitalised words (letters, and `.`, `'`
/// or `-` inside them) before a colon and a space.
pub fn label(text: &str) -> Option<&str> {
    let (head, rest) = text.split_once(':')?;
    if !rest.starts_with([' ', '\n']) || head.is_empty() || head.len() > MAX_LABEL {
        return None;
    }
    let mut words = 0;
    for word in head.split(' ') {
        words += 1;
        let mut chars = word.chars();
        let first = chars.next()?;
        if words > MAX_WORDS
            || !first.is_uppercase()
            || !chars.all(|c| c.is_alphabetic() || matches!(c, '.' | '\'' | '-'))
        {
            return None;
        }
    }
    Some(head)
}

/// Whether `query` holds `name` as whole words, written as the label writes it.
fn names(query: &str, name: &str) -> bool {
    whole_word(query, name).is_some()
}

/// Where `query` first holds `name` as whole words.
fn whole_word(query: &str, name: &str) -> Option<usize> {
    query
        .match_indices(name)
        .find(|(at, _)| {
            let before = query[..*at].chars().next_back();
            let after = query[at + name.len()..].chars().next();
            !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
        })
        .map(|(at, _)| at)
}

/// The text a message's vector is made from: `text` without the speaker label it opens with.
pub fn unlabelled(text: &str) -> &str {
    match label(text) {
        Some(l) => text[l.len() + 1..].trim_start(),
        None => text,
    }
}

/// The speakers a query names, among the labels of its candidate messages.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Speakers(Vec<String>);

/// The speakers' labels among `texts` (the candidate messages' texts): those opening at least
/// [`MIN_TURNS`] of them, when together they open at least one in [`MIN_LABELLED`]; else none.
pub fn labels<'a>(texts: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    let mut messages = 0;
    for t in texts {
        messages += 1;
        if let Some(l) = label(t) {
            *counts.entry(l).or_default() += 1;
        }
    }
    counts.retain(|_, n| *n >= MIN_TURNS);
    if counts.values().sum::<usize>() * MIN_LABELLED < messages {
        return Vec::new();
    }
    let mut out: Vec<String> = counts.into_keys().map(str::to_string).collect();
    out.sort();
    out
}

impl Speakers {
    /// The labels that open at least [`MIN_TURNS`] of `texts` (the candidate messages' texts)
    /// and that `query` names, longest first.
    pub fn in_query<'a>(query: &str, texts: impl IntoIterator<Item = &'a str>) -> Self {
        Self::among(query, &labels(texts))
    }

    /// Those of the speakers' `labels` that `query` names, longest first.
    pub fn among(query: &str, labels: &[String]) -> Self {
        let mut named: Vec<String> = labels.iter().filter(|l| names(query, l)).cloned().collect();
        named.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
        Self(named)
    }

    /// `query` without the speakers' names (and a possessive after one), for its meaning;
    /// `None` when it names none, or holds nothing but names.
    pub fn unnamed(&self, query: &str) -> Option<String> {
        if self.0.is_empty() {
            return None;
        }
        let mut out = query.to_string();
        for name in &self.0 {
            while let Some(at) = whole_word(&out, name) {
                let mut end = at + name.len();
                for s in ["'s", "\u{2019}s"] {
                    if out[end..].starts_with(s) {
                        end += s.len();
                    }
                }
                out.replace_range(at..end, "");
            }
        }
        let out = out.split_whitespace().collect::<Vec<_>>().join(" ");
        out.chars().any(char::is_alphanumeric).then_some(out)
    }

    /// The one speaker named, when only one is.
    pub fn one(self) -> Option<Named> {
        match <[String; 1]>::try_from(self.0) {
            Ok([one]) => Some(Named(one)),
            Err(_) => None,
        }
    }
}

/// The one speaker a query names among the labels of its candidate messages.
#[derive(Clone, Debug, PartialEq)]
pub struct Named(String);

impl Named {
    /// The speaker `query` names, of the labels that open at least [`MIN_TURNS`] of `texts`
    /// (the candidate messages' texts); `None` when it names none of them, or more than one.
    pub fn in_query<'a>(query: &str, texts: impl IntoIterator<Item = &'a str>) -> Option<Self> {
        Speakers::in_query(query, texts).one()
    }

    /// What a candidate saying `text` multiplies its score by: `1 + LIFT` for the named
    /// speaker's turns, else 1.
    pub fn lift(&self, text: &str) -> f64 {
        if label(text) == Some(self.0.as_str()) {
            1.0 + LIFT
        } else {
            1.0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_label_is_a_capitalised_name_before_a_colon() {
        assert_eq!(label("Caroline: I went there."), Some("Caroline"));
        assert_eq!(label("Mary-Jo O'Neil: hi"), Some("Mary-Jo O'Neil"));
        assert_eq!(label("Dr. Ann Lee: hi"), Some("Dr. Ann Lee"));
        assert_eq!(label("user: hello"), None, "a role, not a name");
        assert_eq!(label("Fix the parser: cache it"), None, "lower-case words");
        assert_eq!(label("Note:nothing"), None, "no space after the colon");
        assert_eq!(label("Very Long Label Here: x"), None, "four words");
        assert_eq!(label("Error 42: x"), None);
        assert_eq!(label("no colon at all"), None);
    }

    const CHAT: [&str; 7] = [
        "Caroline: I joined a support group.",
        "Melanie: That's great!",
        "Caroline: It was powerful.",
        "Melanie: I went camping.",
        "Caroline: Where?",
        "Melanie: By the lake.",
        "Melanie: With the kids.",
    ];

    #[test]
    fn the_one_speaker_a_query_names_lifts_their_turns() {
        let turns = CHAT;
        let caroline = Named::in_query("When did Caroline go to the group?", turns).unwrap();
        assert_eq!(caroline.lift(turns[0]), 1.0 + LIFT);
        assert_eq!(caroline.lift(turns[1]), 1.0);
        // Both named, or neither: nothing to lift.
        assert_eq!(
            Named::in_query("Did Caroline and Melanie meet?", turns),
            None
        );
        assert_eq!(Named::in_query("Who went camping?", turns), None);
        // Whole words only, written as the label writes them.
        assert_eq!(Named::in_query("Is Carolines a word?", turns), None);
        assert_eq!(Named::in_query("when did caroline go?", turns), None);
        // A label opening fewer than MIN_TURNS candidates is no speaker.
        let few = ["Note: cache it", "Note: or not", "Caroline: hi"];
        assert_eq!(Named::in_query("Note what Caroline said", few), None);
        // A coding session's few labelled messages name no speaker; a chat's do.
        let notes = ["Note: cache it", "Note: or not", "Note: later"];
        let plain = [
            "fix the parser",
            "run the tests",
            "ok",
            "done",
            "why?",
            "see log",
            "no",
        ];
        assert_eq!(
            Named::in_query("Note the cache", notes.into_iter().chain(plain)),
            None
        );
        assert_eq!(labels(notes.into_iter().chain(plain)), Vec::<String>::new());
        let chat = CHAT.into_iter().chain(plain[..3].iter().copied());
        assert_eq!(labels(chat), ["Caroline", "Melanie"]);
    }

    #[test]
    fn meaning_is_read_without_who_said_it() {
        assert_eq!(unlabelled("Caroline: I went there."), "I went there.");
        assert_eq!(unlabelled("Dr. Ann Lee:  hi"), "hi");
        assert_eq!(unlabelled("user: hello"), "user: hello");
        assert_eq!(unlabelled("no label"), "no label");
        let mel = ["Mel: one", "Mel: two", "Mel: three"];
        let ask = |q: &str| Speakers::in_query(q, CHAT.into_iter().chain(mel)).unnamed(q);
        assert_eq!(
            ask("What activities does Melanie partake in?").as_deref(),
            Some("What activities does partake in?")
        );
        assert_eq!(
            ask("Did Caroline\u{2019}s talk move Melanie and Mel?").as_deref(),
            Some("Did talk move and ?"),
            "every speaker named, a possessive with its name, a name inside another left whole"
        );
        assert_eq!(ask("Who went camping?"), None, "no speaker named");
        // The same read from the labels alone, as remembered from earlier searches.
        let known = labels(CHAT.into_iter().chain(mel));
        assert_eq!(known, ["Caroline", "Mel", "Melanie"]);
        assert_eq!(
            Speakers::among("What activities does Melanie partake in?", &known)
                .unnamed("What activities does Melanie partake in?")
                .as_deref(),
            Some("What activities does partake in?")
        );
        assert_eq!(
            labels(["Note: a", "Note: b", "Caroline: c"]),
            Vec::<String>::new()
        );
        assert_eq!(ask("Melanie?"), None, "nothing but a name");
        assert_eq!(ask("What did Melanies say?"), None, "whole words only");
    }
}
