//! Texts said again: a prompt sent twice, a command run in every session ("cargo test"), a
//! tool's same answer. Copies of one text have the same words, so the full-text index scores
//! them alike, and the same vector, so they stand together in the nearest list: a text said
//! more often than a list is deep fills it, and once its copies give way to the first
//! ([`drop_repeated_texts`]) a search or a task context holds a few lines where more would fit.
//!
//! So a list whose rows say fewer than half as many texts as it holds is asked again, deeper
//! ([`past_copies`]), and fusion takes a few copies of a text ([`left_out`]: the same ones from
//! every list, after each list's scale is read from all its rows), so the copies do not fill
//! fusion's pool either. Two texts are the same when they are of one kind and say the same
//! words, whitespace aside.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::hash::{BuildHasher, Hash, Hasher};

use crate::graph::turns::TurnRow;
use crate::graph::StoreResult;
use crate::recall::turns::TurnHit;

/// Rows a list is asked for at most when the first ones repeat a few texts ([`past_copies`]): the
/// approximate vector index's widest ask. At a million operations, 400 neighbours took twice
/// as long to find as 200, and 1,000 take longer still; only a list crowded by copies pays it.
pub const DEEPEST: usize = 1_000;

/// Copies of one text fusion takes ([`left_out`]): their neighbours and times differ,
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

/// The list `ask` answers for `k` rows, asked once more as deep as `deeper` says when
/// copies crowd it.
pub async fn past_copies<F, Fut>(k: usize, ask: F) -> StoreResult<Vec<TurnRow>>
where
    F: Fn(usize) -> Fut,
    Fut: Future<Output = StoreResult<Vec<TurnRow>>>,
{
    let rows = ask(k).await?;
    match deeper(&rows, k) {
        Some(deeper) => ask(deeper).await,
        None => Ok(rows),
    }
}

/// How deep to ask a list again that answered `rows` when asked for `k`: [`DEEPEST`] when it
/// came full and its rows say fewer than `k / 2` texts, since copies crowd out what else bears
/// on the query; `None` otherwise (the usual case: nothing is asked again).
fn deeper(rows: &[TurnRow], k: usize) -> Option<usize> {
    if rows.len() < k || k >= DEEPEST {
        return None;
    }
    let texts = texts_of(rows, row_text)
        .into_iter()
        .max()
        .map_or(0, |t| t + 1);
    (texts < k / 2).then_some(DEEPEST)
}

/// The ids fusion leaves out: of each text more than [`COPIES_KEPT`] operations say among
/// `lists`' rows, all but the newest [`COPIES_KEPT`] (of copies made at one moment, the
/// smaller ids). One choice for every list, so a copy kept stands in each list that holds it
/// and keeps the score both lists give it. Copies score alike in a list (the same words, the
/// same vector): which stand for the rest is for their times to say, as recency ranks them
/// next. Empty for the usual lists, which hold no text that often.
pub fn left_out(lists: &[&[TurnRow]]) -> HashSet<String> {
    let mut seen: HashSet<&str> = HashSet::new();
    let rows: Vec<&TurnRow> = lists
        .iter()
        .flat_map(|l| l.iter())
        .filter(|r| seen.insert(r.id.as_str()))
        .collect();
    let texts = texts_of(&rows, |r| row_text(r));
    if texts.iter().enumerate().all(|(i, t)| *t == i) {
        // Every text once: nothing to leave out.
        return HashSet::new();
    }
    let mut copies: HashMap<usize, Vec<&TurnRow>> = HashMap::new();
    for (r, t) in rows.iter().zip(&texts) {
        copies.entry(*t).or_default().push(r);
    }
    let mut out = HashSet::new();
    for mut same in copies.into_values().filter(|c| c.len() > COPIES_KEPT) {
        same.sort_by(|a, b| b.at.cmp(&a.at).then_with(|| a.id.cmp(&b.id)));
        out.extend(same.into_iter().skip(COPIES_KEPT).map(|r| r.id.clone()));
    }
    out
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
    fn the_newest_copies_stand_for_the_rest_in_every_list() {
        let mut rows: Vec<TurnRow> = (0..6).map(|i| row(i, "tool_call", "cargo test")).collect();
        for (r, at) in rows.iter_mut().zip([10, 60, 20, 50, 40, 40]) {
            r.at = at;
        }
        let other = row(9, "message", "the test failed");
        // One list holds the oldest copies only, the other the rest in another order.
        let a = vec![rows[0].clone(), other.clone(), rows[2].clone()];
        let b = vec![
            rows[5].clone(),
            rows[4].clone(),
            rows[1].clone(),
            rows[3].clone(),
        ];
        let mut out: Vec<String> = left_out(&[&a, &b]).into_iter().collect();
        out.sort();
        // Kept: o1 (60), o3 (50) and o4 (40, the smaller id of the two made at 40).
        assert_eq!(out, ["o0", "o2", "o5"]);
        // No text more often than the copies kept: nothing left out.
        assert!(left_out(&[&a[..2], &b[..2]]).is_empty());
    }

    #[test]
    fn a_list_crowded_by_copies_is_asked_deeper_and_its_copies_left_out() {
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
        let out = left_out(&[&rows]);
        assert_eq!(out.len(), 150 - COPIES_KEPT);
        // Made at one moment: the smaller ids stay.
        assert!(["o0", "o1", "o10"].iter().all(|id| !out.contains(*id)));
        assert!(out.contains("o100") && !out.contains("o150"));
    }
}
