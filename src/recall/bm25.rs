//! Project-local BM25: the candidates the full-text index found, scored again with the term
//! statistics of the project searched.
//!
//! Neo4j keeps one Lucene index for every project, so the weight (IDF) Lucene gives a word
//! comes from the whole database: a name or a piece of jargon that fills one project but is
//! rare elsewhere counts as rare, and a turn that merely mentions it outranks one that
//! answers. Here each query word weighs by how many of *this* project's turns hold it
//! ([`Stats`], counted by the index itself), with the usual BM25 saturation and length
//! normalisation (k1 = 1.2, b = 0.75, Lucene's defaults). Words are cut and stemmed the way
//! the index's English analyzer does (lower case, possessives and stop words dropped, Porter
//! stems), so a count here agrees with what Lucene matched.

use std::collections::HashMap;

use rust_stemmers::{Algorithm, Stemmer};

use crate::domain::compounds;
use crate::recall::rank::is_stop_word;

/// Term-frequency saturation.
const K1: f64 = 1.2;
/// Length normalisation.
const B: f64 = 0.75;

/// The words of `text` the index keeps, each as written (lower case) and stemmed: letters
/// and digits, stop words and possessive `'s` dropped.
pub fn cut(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    each_word(text, |w, stem| out.push((w.to_string(), stem.to_string())));
    out
}

/// Calls `f` with each word of `text` the index keeps (lower case) and its stem, as [`cut`]
/// lists them, without allocating for a word seen lately.
fn each_word(text: &str, mut f: impl FnMut(&str, &str)) {
    let mut lower = String::new();
    for w in text.split(|c: char| !c.is_alphanumeric() && c != '\'' && c != '’') {
        if compounds::may_change_case(w) {
            // An identifier is asked by its parts (`compounds`): `parseConfig` is parse, config.
            for piece in compounds::camel_pieces(w).filter(|p| p.chars().nth(1).is_some()) {
                one_word(piece, &mut lower, &mut f);
            }
        } else {
            one_word(w, &mut lower, &mut f);
        }
    }
}

/// [`each_word`] for one word, lowered into `lower`.
fn one_word(w: &str, lower: &mut String, f: &mut impl FnMut(&str, &str)) {
    let w = w.trim_matches(|c| c == '\'' || c == '’');
    if w.is_empty() {
        return;
    }
    lower.clear();
    if w.is_ascii() && !w.contains('\'') {
        lower.push_str(w);
        lower.make_ascii_lowercase();
    } else {
        lower.push_str(&kept_word(w));
    }
    if lower.is_empty() || is_stop_word(lower) {
        return;
    }
    with_stem(lower, |stem| f(lower, stem));
}

/// A word holding an apostrophe or a letter beyond ASCII, as the index keeps it: lower case,
/// a possessive `'s` dropped, and only its first part when an apostrophe splits it ("don't"),
/// as the index's tokenizer does for anything but a possessive.
fn kept_word(w: &str) -> String {
    let w = w.to_lowercase();
    let w = w
        .strip_suffix("'s")
        .or_else(|| w.strip_suffix("’s"))
        .unwrap_or(&w);
    w.split(['\'', '’'])
        .find(|part| !part.is_empty())
        .unwrap_or_default()
        .to_string()
}

/// Stems kept per thread at most (about 2 MB) before they are forgotten all at once.
const STEMS_KEPT: usize = 20_000;

thread_local! {
    /// Stems of words seen lately: a project's turns repeat their vocabulary, and stemming a
    /// word costs several times looking it up.
    static STEMS: std::cell::RefCell<HashMap<String, String>> = Default::default();
}

/// Calls `f` with the stem of `word` (lower case).
fn with_stem<R>(word: &str, f: impl FnOnce(&str) -> R) -> R {
    STEMS.with(|cell| {
        let mut stems = cell.borrow_mut();
        if let Some(stem) = stems.get(word) {
            return f(stem);
        }
        let stem = Stemmer::create(Algorithm::English).stem(word).into_owned();
        let out = f(&stem);
        if stems.len() >= STEMS_KEPT {
            stems.clear();
        }
        stems.insert(word.to_string(), stem);
        out
    })
}

/// The stemmed words of `text` (see [`cut`]).
pub fn words(text: &str) -> Vec<String> {
    cut(text).into_iter().map(|(_, stem)| stem).collect()
}

/// The distinct words of a query, stemmed, each with one way it was written (what [`Stats`]
/// is counted for, and what the index is asked).
pub fn query_words(text: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for (raw, stem) in cut(text) {
        if !out.iter().any(|(_, s)| *s == stem) {
            out.push((raw, stem));
        }
    }
    out
}

/// A project's term statistics for one query: how many turns it holds, and how many of them
/// hold each query word (counts may stop at a cap; a capped word is common anyway).
#[derive(Clone, Debug, Default)]
pub struct Stats {
    pub docs: usize,
    pub df: HashMap<String, usize>,
}

impl Stats {
    /// BM25's IDF, ln(1 + (N − n + 0.5) / (n + 0.5)); a word no turn holds weighs as a word
    /// held by one.
    pub fn idf(&self, word: &str) -> f64 {
        let n = self.df.get(word).copied().unwrap_or(0).max(1) as f64;
        let docs = (self.docs as f64).max(n);
        (1.0 + (docs - n + 0.5) / (n + 0.5)).ln()
    }
}

/// What BM25 needs of a document for one query: how many words it keeps and how often it
/// holds each query word.
#[derive(Clone, Debug, PartialEq)]
pub struct Doc {
    len: usize,
    tf: Vec<u32>,
}

impl Doc {
    /// `text` cut as [`cut`] does, counted for the stemmed query words `query`.
    pub fn of(text: &str, query: &[String]) -> Self {
        let mut tf = vec![0; query.len()];
        let mut len = 0;
        each_word(text, |_, stem| {
            len += 1;
            if let Some(i) = query.iter().position(|q| q == stem) {
                tf[i] += 1;
            }
        });
        Doc { len, tf }
    }
}

/// Scores documents (counted by [`Doc::of`] for `query`) with `stats`; the mean length is
/// taken over the documents given.
pub fn score_all(query: &[String], docs: &[Doc], stats: &Stats) -> Vec<f64> {
    if docs.is_empty() {
        return Vec::new();
    }
    let avg = (docs.iter().map(|d| d.len).sum::<usize>() as f64 / docs.len() as f64).max(1.0);
    let idf: Vec<f64> = query.iter().map(|w| stats.idf(w)).collect();
    docs.iter()
        .map(|d| {
            let norm = K1 * (1.0 - B + B * d.len as f64 / avg);
            d.tf.iter()
                .zip(&idf)
                .map(|(&tf, idf)| {
                    let tf = f64::from(tf);
                    if tf == 0.0 {
                        0.0
                    } else {
                        idf * tf * (K1 + 1.0) / (tf + norm)
                    }
                })
                .sum()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_cut_and_stemmed_like_the_english_analyzer() {
        assert_eq!(
            words("Caroline's research: she was RESEARCHING adoption agencies!"),
            ["carolin", "research", "research", "adopt", "agenc"]
        );
        let q: Vec<String> = query_words("What did Caroline research? research")
            .into_iter()
            .map(|(_, stem)| stem)
            .collect();
        assert_eq!(q, ["carolin", "research"]);
        // An identifier is its parts, as the index holds them beside the text.
        assert_eq!(
            words("parseConfig in token_store.rs, getHTTPResponse"),
            ["pars", "config", "token", "store", "rs", "get", "http", "respons"]
        );
    }

    /// The words as the index keeps them (with identifiers' parts), one allocation after
    /// another: what `cut` must agree with, fast path and remembered stems or not.
    fn cut_plainly(text: &str) -> Vec<(String, String)> {
        let stemmer = Stemmer::create(Algorithm::English);
        text.split(|c: char| !c.is_alphanumeric() && c != '\'' && c != '’')
            .flat_map(|w| {
                let pieces: Vec<&str> = compounds::camel_pieces(w).collect();
                if pieces.len() > 1 {
                    pieces
                        .into_iter()
                        .filter(|p| p.chars().count() > 1)
                        .collect()
                } else {
                    vec![w]
                }
            })
            .filter_map(|w| {
                let w = w.trim_matches(|c| c == '\'' || c == '’').to_lowercase();
                let w = match w.strip_suffix("'s").or_else(|| w.strip_suffix("’s")) {
                    Some(stem) => stem.to_string(),
                    None => w,
                };
                let w = w.replace(['\'', '’'], " ");
                let w = w.split_whitespace().next()?.to_string();
                if is_stop_word(&w) {
                    return None;
                }
                let stem = stemmer.stem(&w).into_owned();
                Some((w, stem))
            })
            .collect()
    }

    #[test]
    fn apostrophes_capitals_and_letters_beyond_ascii_cut_as_the_index_does() {
        let texts = [
            "Don't stop: James' cafés and ÉCOLE’s 'quoted' words’ ''s x''s rock'n'roll",
            "ΟΔΟΣ Σίσυφος naïve Straße İstanbul 42nd 3.14 user_id CamelCase",
            "getHTTPResponse iPhone IPv4 McDonald's O'Brien parseConfig's tokenStore.rs",
            "Running runners ran; the RUNNING runner's runs",
        ];
        // Twice: the second pass finds every stem remembered.
        for _ in 0..2 {
            for t in texts {
                assert_eq!(cut(t), cut_plainly(t), "{t}");
            }
        }
        let q = words("runner running");
        let d = Doc::of(texts[3], &q);
        assert_eq!(
            d,
            Doc {
                len: 6,
                tf: vec![2, 3]
            }
        );
    }

    #[test]
    fn a_word_common_in_the_project_weighs_little_whatever_it_is_elsewhere() {
        let stats = Stats {
            docs: 100,
            df: [("carolin".to_string(), 60), ("adopt".to_string(), 2)].into(),
        };
        assert!(stats.idf("adopt") > 3.0 * stats.idf("carolin"));
        let q = words("Caroline adoption");
        let docs = [
            "Caroline: Caroline here, Caroline again.",
            "Caroline: I looked into adoption agencies.",
            "Melanie: nothing of that.",
        ]
        .map(|t| Doc::of(t, &q));
        let s = score_all(&q, &docs, &stats);
        assert!(s[1] > s[0], "{s:?}");
        assert_eq!(s[2], 0.0);
        // A longer document with the same matches scores lower.
        let long =
            ["adoption", "adoption and many other words besides those"].map(|t| Doc::of(t, &q));
        let s = score_all(&q, &long, &stats);
        assert!(s[0] > s[1], "{s:?}");
    }
}
