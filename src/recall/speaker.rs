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
//! a message and followed by a colon, shared by at least [`MIN_TURNS`] of the candidates. A
//! query names a speaker by the label written as it is, by a word of a longer label that no
//! other label holds ("Fahim" for "Fahim Khan"), or by that name misspelt ("Muhammad" for
//! "Muhhamed"; [`Speakers::in_texts`]); a query naming two speakers (or none) lifts nothing. A
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
/// Letters of a word of a label that names a speaker alone, at least.
const MIN_NAME: usize = 3;
/// Letters of a query's word read as a speaker's name misspelt, at least.
const MIN_SPELT: usize = 4;
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

/// The speakers a query names, among the labels of its candidate messages, and the words it
/// names them by.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Speakers {
    /// The labels named, longest first.
    named: Vec<String>,
    /// The query's words that name them, longest first.
    forms: Vec<String>,
}

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

/// The words of `labels` that name one speaker: each word of at least [`MIN_NAME`] letters
/// that no other label holds, with the label it names.
fn name_words(labels: &[String]) -> Vec<(&str, &str)> {
    let mut out: Vec<(&str, &str)> = Vec::new();
    for l in labels {
        for w in l.split(' ').filter(|w| is_name_word(w)) {
            if !out.iter().any(|(o, _)| *o == w) {
                out.push((w, l));
            }
        }
    }
    out.retain(|(w, l)| {
        !labels
            .iter()
            .any(|other| other != l && other.split(' ').any(|o| o == *w))
    });
    out
}

/// Whether `w` may be a name: letters (an apostrophe or a hyphen inside), at least
/// [`MIN_NAME`] of them, the first a capital.
fn is_name_word(w: &str) -> bool {
    w.chars().next().is_some_and(char::is_uppercase)
        && w.chars().filter(|c| c.is_alphabetic()).count() >= MIN_NAME
        && w.chars()
            .all(|c| c.is_alphabetic() || matches!(c, '\'' | '-'))
}

/// Whether `written` may be `name` misspelt: the same first letter, lengths at most a letter
/// apart (a shorter name is another name: Carol is not Caroline), and at most a few edits
/// apart (letters added, dropped, changed or swapped), more for a longer name.
fn spelt_like(written: &str, name: &str) -> bool {
    let (a, b) = (written.to_lowercase(), name.to_lowercase());
    let (la, lb) = (a.chars().count(), b.chars().count());
    let edits = match la.max(lb) {
        ..=5 => 1,
        6..=7 => 2,
        _ => 3,
    };
    a != b
        && a.chars().next() == b.chars().next()
        && la.abs_diff(lb) <= 1
        && strsim::osa_distance(&a, &b) <= edits
}

/// Whether one of `texts` holds `word` as a whole word, whatever its case.
fn held(texts: &[&str], word: &str) -> bool {
    let word = word.to_lowercase();
    texts.iter().any(|t| {
        t.split(|c: char| !c.is_alphanumeric()).any(|w| {
            if w.is_ascii() {
                w.eq_ignore_ascii_case(&word)
            } else {
                w.to_lowercase() == word
            }
        })
    })
}

impl Speakers {
    /// The labels that open at least [`MIN_TURNS`] of `texts` (the candidate messages' texts)
    /// that `query` names ([`Speakers::in_texts`]).
    pub fn in_query<'a>(query: &str, texts: impl IntoIterator<Item = &'a str>) -> Self {
        let texts: Vec<&str> = texts.into_iter().collect();
        Self::in_texts(query, &labels(texts.iter().copied()), &texts)
    }

    /// Those of the speakers' `labels` that `query` names ([`Speakers::in_texts`]), from the
    /// labels alone: a word spelt like a name counts as it.
    pub fn among(query: &str, labels: &[String]) -> Self {
        Self::in_texts(query, labels, &[])
    }

    /// Those of the speakers' `labels` that `query` names, with `texts` at hand (the
    /// candidate messages' texts). A query names a speaker by the label whole, written as the
    /// label writes it; by a word of a label of several ("Fahim" for "Fahim Khan") that no
    /// other label holds; or by a capitalised word of at least four letters spelt
    /// like such a word ("Muhammad" for "Muhhamed", "Aqib" for "Akib"), when it is spelt like
    /// one speaker's name only and none of `texts` holds it (a word they hold is someone's
    /// own name, or no name at all).
    pub fn in_texts(query: &str, labels: &[String], texts: &[&str]) -> Self {
        let mut found: Vec<(&str, &str)> = labels
            .iter()
            .filter(|l| names(query, l))
            .map(|l| (l.as_str(), l.as_str()))
            .collect();
        let words = name_words(labels);
        for &(w, l) in &words {
            if l.contains(' ') && names(query, w) {
                found.push((l, w));
            }
        }
        let written = query
            .split(|c: char| !c.is_alphanumeric() && c != '\'' && c != '-')
            .map(|w| w.trim_end_matches("'s").trim_end_matches('\''))
            .filter(|w| is_name_word(w) && w.chars().count() >= MIN_SPELT);
        for w in written {
            let is_label_word = labels.iter().any(|l| l.split(' ').any(|o| o == w));
            if is_label_word || found.iter().any(|(_, f)| *f == w) {
                continue;
            }
            let mut like = words
                .iter()
                .filter(|(n, _)| spelt_like(w, n))
                .map(|(_, l)| *l);
            if let Some(l) = like.next() {
                if like.all(|other| other == l) && !held(texts, w) {
                    found.push((l, w));
                }
            }
        }
        let by_length = |a: &String, b: &String| b.len().cmp(&a.len()).then(a.cmp(b));
        let mut named: Vec<String> = found.iter().map(|(l, _)| l.to_string()).collect();
        named.sort_by(by_length);
        named.dedup();
        let mut forms: Vec<String> = found.iter().map(|(_, f)| f.to_string()).collect();
        forms.sort_by(by_length);
        forms.dedup();
        Self { named, forms }
    }

    /// `query` without the words naming its speakers (and a possessive after one), for its
    /// meaning; `None` when it names none, or holds nothing but names.
    pub fn unnamed(&self, query: &str) -> Option<String> {
        if self.forms.is_empty() {
            return None;
        }
        let mut out = query.to_string();
        for name in &self.forms {
            while let Some(at) = whole_word(&out, name) {
                let mut end = at + name.len();
                // A possessive: "Melanie's", or "James'" after a name ending in s.
                let after = &out[end..];
                if let Some(s) = ["'s", "\u{2019}s", "'", "\u{2019}"]
                    .into_iter()
                    .find(|s| after.starts_with(s) && (s.ends_with('s') || name.ends_with('s')))
                {
                    end += s.len();
                }
                out.replace_range(at..end, "");
            }
        }
        let out = out.split_whitespace().collect::<Vec<_>>().join(" ");
        out.chars().any(char::is_alphanumeric).then_some(out)
    }

    /// The one speaker named, when only one is.
    pub fn one(self) -> Option<Named> {
        match <[String; 1]>::try_from(self.named) {
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
        // Whole words, written as the label writes them, or spelt like it.
        assert_eq!(Named::in_query("Is Carol a word?", turns), None);
        assert_eq!(
            Named::in_query("Did Carolines group meet?", turns),
            Some(Named("Caroline".into())),
            "a possessive without its apostrophe is the name misspelt"
        );
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
    fn a_speaker_is_named_by_a_word_of_their_label_or_a_near_spelling() {
        let known: Vec<String> = ["Akib", "Fahim Khan", "Muhhamed"].map(String::from).into();
        let read = |q: &str| {
            let s = Speakers::among(q, &known);
            (s.unnamed(q), s.one().map(|n| n.0))
        };
        assert_eq!(
            read("What book did Fahim read?"),
            (
                Some("What book did read?".into()),
                Some("Fahim Khan".into())
            ),
            "a given name alone names the label it opens"
        );
        assert_eq!(
            read("Is Khan's bakery open?").1.as_deref(),
            Some("Fahim Khan")
        );
        assert_eq!(
            read("What games did Muhammad play?"),
            (Some("What games did play?".into()), Some("Muhhamed".into())),
            "three edits apart in eight letters"
        );
        assert_eq!(
            read("Where did Faheem go?").1.as_deref(),
            Some("Fahim Khan")
        );
        assert_eq!(read("Did Aqib's trip go well?").1.as_deref(), Some("Akib"));
        assert_eq!(
            read("Did Aqib and Mohammed meet?"),
            (Some("Did and meet?".into()), None),
            "two speakers named: both left out of meaning, neither lifted"
        );
        // Too far, another first letter, too short, or not capitalised: no one.
        for q in [
            "Did Mahmoud call?",
            "Did Ubik win?",
            "Did Aki go?",
            "did muhammad go?",
        ] {
            assert_eq!(read(q), (None, None), "{q}");
        }
        // A word the conversation holds is someone's own name: Mario is not Maria.
        let chat = [
            "Maria: Mario came over.",
            "Maria: hi",
            "Maria: bye",
            "Tom: ok",
            "Tom: sure",
            "Tom: fine",
        ];
        assert_eq!(Named::in_query("What did Mario bring?", chat), None);
        let tim = [
            "Tim: what time is it?",
            "Tim: hi",
            "Tim: bye",
            "Ed: a",
            "Ed: b",
            "Ed: c",
        ];
        assert_eq!(Named::in_query("Time for what?", tim), None, "a plain word");
        assert_eq!(
            Named::in_query("Timm said what?", tim)
                .map(|n| n.0)
                .as_deref(),
            Some("Tim")
        );
        assert_eq!(
            Named::in_query("What did Marla bring?", chat)
                .map(|n| n.0)
                .as_deref(),
            Some("Maria")
        );
        // A word two labels share names neither; spelt like two speakers, it names no one.
        let pair: Vec<String> = ["Ann Lee", "Ann Smith", "Jan", "Jon"]
            .map(String::from)
            .into();
        assert_eq!(
            Speakers::among("What did Ann say?", &pair),
            Speakers::default()
        );
        assert_eq!(
            Speakers::among("What did Lee say?", &pair)
                .one()
                .map(|n| n.0)
                .as_deref(),
            Some("Ann Lee")
        );
        assert_eq!(
            Speakers::among("What did Joan say?", &pair),
            Speakers::default()
        );
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
        let james: Vec<String> = vec!["James".into(), "John".into()];
        let q = "What is James' favourite game?";
        assert_eq!(
            Speakers::among(q, &james).unnamed(q).as_deref(),
            Some("What is favourite game?")
        );
        let q = "What was Johns's reaction?";
        assert_eq!(
            Speakers::among(q, &james).unnamed(q).as_deref(),
            Some("What was reaction?"),
            "a name misspelt, with its possessive"
        );
        assert_eq!(ask("Melanie?"), None, "nothing but a name");
        assert_eq!(ask("What did Melani-Ann say?"), None, "whole words only");
    }
}
