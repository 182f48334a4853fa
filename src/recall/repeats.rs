//! Texts said again: a prompt sent twice, a command run in every session ("cargo test"), a
//! tool's same answer. Copies of one text have the same words, so the full-text index scores
//! them alike, and the same vector, so they stand together in the nearest list: a text said
//! more often than a list is deep fills it, and once its copies give way to the first
//! ([`drop_repeated_texts`]) a search or a task context holds a few lines where more would fit.
//!
//! So a list whose rows say fewer than half as many texts as it holds is asked again, deeper
//! ([`deeper`]), and each list keeps a few copies of a text ([`thinned`]) before fusion, so
//! the copies do not fill fusion's pool either. Two texts are the same when they are of one
//! kind and say the same words, whitespace aside.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, Hasher};

use crate::graph::turns::TurnRow;
use crate::recall::turns::TurnHit;

/// Rows a list is asked for at most when the first ones repeat a few texts ([`deeper`]): the
/// approximate vector index's widest ask. At a million operations, asking the index for 1,000
/// neighbours rather than 200 took ~5 times as long; only a list crowded by copies pays it.
pub const DEEPEST: usize = 1_000;

/// Copies of one text a list keeps for fusion ([`thinned`]): their neighbours and times differ,
/// and the best-ranked copy after fusion stands for the rest.
pub const COPIES_KEPT: usize = 3;

/// For each of `items` in order, the text it says: the index (in order of first appearance) of
/// the distinct text of its kind, whitespace aside; `of` gives an item's kind and text.
fn texts_of<T>(items: &[T], of: impl Fn(&T) -> (&str, &str)) -> Vec<usize> {
    // A fast hash (the lists are read on every search); copies are confirmed by their words.
    let state = foldhash::fast::FixedState::default();
    let key = |kind: &str, text: &str| {
        let mut hasher = state.build_hasher();
        kind.hash(&mut hasher);
        for w in text.split_whitespace() {
            w.hash(&mut hasher);
        }
        hasher.finish()
    };
    let same = |i: usize, kind: &str, text: &str| {
        let (k, t) = of(&items[i]);
        k == kind && t.split_whitespace().eq(text.split_whitespace())
    };
    // Each hash by the first item that had it; other texts sharing a hash (rare) aside.
    let mut first: HashMap<u64, usize, foldhash::fast::FixedState> =
        HashMap::with_capacity_and_hasher(items.len(), Default::default());
    let mut shared: Vec<(u64, usize)> = Vec::new();
    let mut out: Vec<usize> = Vec::with_capacity(items.len());
    let mut texts = 0;
    for (i, item) in items.iter().enumerate() {
        let (kind, text) = of(item);
        let h = key(kind, text);
        let earlier = match first.get(&h) {
            None => {
                first.insert(h, i);
                None
            }
            Some(&j) if same(j, kind, text) => Some(j),
            Some(_) => shared
                .iter()
                .find(|(sh, j)| *sh == h && same(*j, kind, text))
                .map(|(_, j)| *j),
        };
        match earlier {
            Some(j) => out.push(out[j]),
            None => {
                if first.get(&h) != Some(&i) {
                    shared.push((h, i));
                }
                out.push(texts);
                texts += 1;
            }
        }
    }
    out
}

fn row_text(r: &TurnRow) -> (&str, &str) {
    (
        r.kind.as_deref().unwrap_or_default(),
        r.text.as_deref().unwrap_or_default(),
    )
}

/// How deep to ask a list again that answered `rows` when asked for `k`: [`DEEPEST`] when it
/// came full and its rows say fewer than `k / 2` texts, since copies crowd out what else bears
/// on the query; `None` otherwise (the usual case: nothing is asked again).
pub fn deeper(rows: &[TurnRow], k: usize) -> Option<usize> {
    if rows.len() < k || k >= DEEPEST {
        return None;
    }
    let texts = texts_of(rows, row_text)
        .into_iter()
        .max()
        .map_or(0, |t| t + 1);
    (texts < k / 2).then_some(DEEPEST)
}

/// `rows` with at most [`COPIES_KEPT`] copies of each text, in their order: the newest ones.
/// Copies score alike in a list (the same words, the same vector), so which stand for the
/// rest is for their times to say: recency ranks them next.
pub fn thinned(rows: Vec<TurnRow>) -> Vec<TurnRow> {
    let texts = texts_of(&rows, row_text);
    if texts.iter().enumerate().all(|(i, t)| *t == i) {
        // Every text once: the usual list.
        return rows;
    }
    let mut copies: HashMap<usize, Vec<usize>> = HashMap::new();
    for (i, t) in texts.iter().enumerate() {
        copies.entry(*t).or_default().push(i);
    }
    let mut kept = vec![false; rows.len()];
    for mut same in copies.into_values() {
        // Newest first; of copies made at one moment, the first in the list.
        same.sort_by_key(|&i| (std::cmp::Reverse(rows[i].at), i));
        for i in same.into_iter().take(COPIES_KEPT) {
            kept[i] = true;
        }
    }
    let mut keep = kept.into_iter();
    let mut rows = rows;
    rows.retain(|_| keep.next().unwrap_or(false));
    rows
}

/// Of the candidates of one kind saying the same words (whitespace aside: a prompt sent again,
/// a command run again in another session), only the first, the best ranked, stays. Diversity
/// only discounts a twin ([`crate::recall::turns::diversify`]), and where little else scores
/// well the copies of one turn would fill the list.
pub fn drop_repeated_texts(hits: &mut Vec<TurnHit>) {
    let texts = texts_of(hits, |h| (h.kind.as_str(), h.text.as_str()));
    let mut seen = vec![false; texts.iter().max().map_or(0, |t| t + 1)];
    let mut first = texts
        .into_iter()
        .map(|t| !std::mem::replace(&mut seen[t], true));
    hits.retain(|_| first.next().unwrap_or(true));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: usize, kind: &str, text: &str) -> TurnRow {
        TurnRow {
            id: format!("o{id}"),
            session_id: Some("s".into()),
            seq: id as i64,
            kind: Some(kind.into()),
            role: None,
            text: Some(text.into()),
            at: 0,
            score: 1.0,
            vectored: false,
            sig: None,
        }
    }

    #[test]
    fn copies_are_of_one_kind_and_the_same_words() {
        let rows = [
            row(0, "tool_call", "cargo test"),
            row(1, "tool_call", "cargo  test\n"),
            row(2, "message", "cargo test"),
            row(3, "tool_call", "cargo test --release"),
            row(4, "tool_call", "cargo test"),
        ];
        assert_eq!(texts_of(&rows, row_text), vec![0, 0, 1, 2, 0]);
    }

    #[test]
    fn the_newest_copies_stand_for_the_rest() {
        let mut rows: Vec<TurnRow> = (0..6).map(|i| row(i, "tool_call", "cargo test")).collect();
        for (r, at) in rows.iter_mut().zip([10, 60, 20, 50, 40, 30]) {
            r.at = at;
        }
        rows.insert(2, row(9, "message", "the test failed"));
        let ids: Vec<String> = thinned(rows).into_iter().map(|r| r.id).collect();
        assert_eq!(ids, ["o1", "o9", "o3", "o4"], "in list order");
    }

    #[test]
    fn a_list_crowded_by_copies_is_asked_deeper_and_thinned() {
        // 200 rows of which 150 are one command: 51 texts, fewer than half of 200.
        let mut rows: Vec<TurnRow> = (0..150)
            .map(|i| row(i, "tool_call", "cargo test"))
            .collect();
        rows.extend((150..200).map(|i| row(i, "message", &format!("the test of step {i} failed"))));
        assert_eq!(deeper(&rows, 200), Some(DEEPEST));
        // Not full: the list holds all there is.
        assert_eq!(deeper(&rows[..199], 200), None);
        // Asked that deep already.
        assert_eq!(deeper(&rows, DEEPEST), None);
        // Half of them or more say something of their own: the usual list, left alone.
        let mut varied: Vec<TurnRow> = (0..100)
            .map(|i| row(i, "tool_call", "cargo test"))
            .collect();
        varied.extend((100..200).map(|i| row(i, "message", &format!("step {i} failed"))));
        assert_eq!(deeper(&varied, 200), None);
        let thin = thinned(rows);
        assert_eq!(thin.len(), COPIES_KEPT + 50);
        let ids: Vec<&str> = thin.iter().take(4).map(|r| r.id.as_str()).collect();
        assert_eq!(
            ids,
            ["o0", "o1", "o2", "o150"],
            "the first copies, in order"
        );
    }
}
