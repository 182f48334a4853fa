//! The recall-quality baseline: plain Okapi BM25 over one conversation's turns, the ranking
//! anyone could write in a few lines — lower-cased `\w+` words, no stemming and no stop words,
//! k1 = 1.5, b = 0.75 and the IDF `ln((N − n + 0.5) / (n + 0.5))` floored at a quarter of the
//! mean IDF (the common `rank_bm25` package's `BM25Okapi`) — whose best turns fill the whole
//! budget, each as a line of its own, a turn that does not fit skipped for the next.
//! cairn's task context is measured against it in the same run.

use std::collections::HashMap;

use cairn::config::Encoding;
use cairn::domain::tokens;

const K1: f64 = 1.5;
const B: f64 = 0.75;
/// A negative IDF (a word in most turns) becomes this share of the mean IDF.
const EPSILON: f64 = 0.25;

/// Lower-cased runs of letters, digits and `_`.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// A conversation's turns, indexed once for every question asked about it.
pub struct Corpus {
    docs: Vec<HashMap<String, usize>>,
    lengths: Vec<usize>,
    mean_length: f64,
    idf: HashMap<String, f64>,
    /// Each turn's line and its cost (its tokens and the newline after it).
    lines: Vec<(String, usize)>,
}

impl Corpus {
    /// `turns` are the lines the baseline may hand back (who said it, then what was said).
    pub fn new(turns: &[String], encoding: Encoding) -> Self {
        let mut docs = Vec::with_capacity(turns.len());
        let mut holding: HashMap<String, usize> = HashMap::new();
        for t in turns {
            let mut tf: HashMap<String, usize> = HashMap::new();
            for w in words(t) {
                *tf.entry(w).or_default() += 1;
            }
            for w in tf.keys() {
                *holding.entry(w.clone()).or_default() += 1;
            }
            docs.push(tf);
        }
        let n = turns.len() as f64;
        let mut idf: HashMap<String, f64> = holding
            .into_iter()
            .map(|(w, df)| (w, ((n - df as f64 + 0.5) / (df as f64 + 0.5)).ln()))
            .collect();
        let floor = EPSILON * idf.values().sum::<f64>() / idf.len().max(1) as f64;
        for v in idf.values_mut() {
            if *v < 0.0 {
                *v = floor;
            }
        }
        let lengths: Vec<usize> = docs.iter().map(|d| d.values().sum()).collect();
        let mean_length = lengths.iter().sum::<usize>() as f64 / lengths.len().max(1) as f64;
        let lines = turns
            .iter()
            .map(|t| (t.clone(), tokens::count(encoding, t) + 1))
            .collect();
        Self {
            docs,
            lengths,
            mean_length,
            idf,
            lines,
        }
    }

    /// Each turn's score for `query`.
    fn scores(&self, query: &str) -> Vec<f64> {
        let q = words(query);
        self.docs
            .iter()
            .zip(&self.lengths)
            .map(|(tf, &len)| {
                let norm = K1 * (1.0 - B + B * len as f64 / self.mean_length.max(1.0));
                q.iter()
                    .map(|w| {
                        let f = *tf.get(w).unwrap_or(&0) as f64;
                        self.idf.get(w).copied().unwrap_or(0.0) * f * (K1 + 1.0) / (f + norm)
                    })
                    .sum()
            })
            .collect()
    }

    /// The lines of the best turns for `query` that fit `budget` tokens, best first, with
    /// what they cost.
    pub fn fill(&self, query: &str, budget: usize) -> Filled<'_> {
        let scores = self.scores(query);
        let mut order: Vec<usize> = (0..scores.len()).collect();
        order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
        let mut left = budget;
        let mut lines = Vec::new();
        for i in order {
            let (line, cost) = &self.lines[i];
            if *cost <= left {
                left -= cost;
                lines.push(line.as_str());
            }
        }
        Filled {
            lines,
            tokens: budget - left,
        }
    }
}

/// What [`Corpus::fill`] chose: the lines, best first, and the tokens they cost.
pub struct Filled<'a> {
    pub lines: Vec<&'a str>,
    pub tokens: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn corpus() -> Corpus {
        let turns = [
            "Ann: the nightly backup restore is slow",
            "Bob: I painted the fence green",
            "Ann: the backup job failed again last night",
            "Bob: lunch was great",
            "Ann: tests pass on my machine",
            "Bob: shipping it tomorrow",
            "Ann: coffee first",
            "Bob: agreed",
        ]
        .map(String::from);
        Corpus::new(&turns, Encoding::Cl100kBase)
    }

    #[test]
    fn the_turns_holding_the_rarer_query_words_come_first() {
        let c = corpus();
        let got = c.fill("why did the backup restore fail", 1_000).lines;
        assert_eq!(got[0], "Ann: the nightly backup restore is slow");
        assert_eq!(got[1], "Ann: the backup job failed again last night");
        assert_eq!(got.len(), 8);
    }

    #[test]
    fn the_budget_holds_whole_lines_and_a_line_too_long_is_skipped() {
        let c = corpus();
        let first = tokens::count(
            Encoding::Cl100kBase,
            "Ann: the nightly backup restore is slow",
        );
        let got = c.fill("restore", first + 1);
        assert_eq!(got.lines, vec!["Ann: the nightly backup restore is slow"]);
        assert_eq!(got.tokens, first + 1);
        // Too small for the best line: a shorter one that fits is taken instead.
        let got = c.fill("restore", first).lines;
        assert!(!got.contains(&"Ann: the nightly backup restore is slow"));
        assert!(got
            .iter()
            .all(|l| tokens::count(Encoding::Cl100kBase, l) < first));
    }
}
