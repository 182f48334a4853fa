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

use crate::recall::rank::is_stop_word;

/// Term-frequency saturation.
const K1: f64 = 1.2;
/// Length normalisation.
const B: f64 = 0.75;

/// The words of `text` the index keeps, each as written (lower case) and stemmed: letters
/// and digits, stop words and possessive `'s` dropped.
pub fn cut(text: &str) -> Vec<(String, String)> {
    let stemmer = Stemmer::create(Algorithm::English);
    text.split(|c: char| !c.is_alphanumeric() && c != '\'' && c != '’')
        .filter_map(|w| {
            let w = w.trim_matches(|c| c == '\'' || c == '’').to_lowercase();
            let w = match w.strip_suffix("'s").or_else(|| w.strip_suffix("’s")) {
                Some(stem) => stem.to_string(),
                None => w,
            };
            // An apostrophe inside a word ("don't") splits it, as the index's tokenizer does
            // for anything but a possessive.
            let w = w.replace(['\'', '’'], " ");
            let w = w.split_whitespace().next()?.to_string();
            if w.is_empty() || is_stop_word(&w) {
                return None;
            }
            let stem = stemmer.stem(&w).into_owned();
            Some((w, stem))
        })
        .collect()
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

/// Scores documents (already cut by [`words`]) for the query words `query` with `stats`;
/// the mean length is taken over the documents given.
pub fn score_all(query: &[String], docs: &[Vec<String>], stats: &Stats) -> Vec<f64> {
    if docs.is_empty() {
        return Vec::new();
    }
    let avg = (docs.iter().map(Vec::len).sum::<usize>() as f64 / docs.len() as f64).max(1.0);
    let idf: Vec<f64> = query.iter().map(|w| stats.idf(w)).collect();
    docs.iter()
        .map(|d| {
            let norm = K1 * (1.0 - B + B * d.len() as f64 / avg);
            query
                .iter()
                .zip(&idf)
                .map(|(w, idf)| {
                    let tf = d.iter().filter(|x| *x == w).count() as f64;
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
            words("Caroline: Caroline here, Caroline again."),
            words("Caroline: I looked into adoption agencies."),
            words("Melanie: nothing of that."),
        ];
        let s = score_all(&q, &docs, &stats);
        assert!(s[1] > s[0], "{s:?}");
        assert_eq!(s[2], 0.0);
        // A longer document with the same matches scores lower.
        let long = [
            words("adoption"),
            words("adoption and many other words besides those"),
        ];
        let s = score_all(&q, &long, &stats);
        assert!(s[0] > s[1], "{s:?}");
    }
}
