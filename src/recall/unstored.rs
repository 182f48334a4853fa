//! Vectors the indexers (turns' and session documents') made but could not store, kept for
//! their next pass.
//!
//! Embedding is an indexer's dear part (a pass of a few hundred texts takes seconds on two
//! cores); storing is one statement. When that statement fails (Neo4j timed out under load,
//! restarted, refused the write), the pass's sessions wait and are read again; without this
//! their texts would be embedded again too. A vector depends only on its text and the model,
//! so the next pass of this instance that reads them takes what it finds here by text and
//! embeds the rest (another replica that takes the sessions first embeds them itself). What is
//! kept is bounded ([`MAX_KEPT`] texts, the oldest let go first) and belongs to one model:
//! vectors of another, kept later, take their place. `cairn_vectors_reused_total` counts the
//! vectors taken.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

/// Texts kept at most: four turn-indexer passes at the default batch of 32 (a pass embeds 16
/// batches).
pub const MAX_KEPT: usize = 2_048;

struct Kept {
    model: String,
    vectors: HashMap<String, Vec<f32>>,
    /// The texts in the order they were kept, the oldest first.
    order: VecDeque<String>,
}

/// Vectors made but not stored, by text, of one model.
pub struct Unstored(Mutex<Option<Kept>>);

/// The indexers'.
pub static UNSTORED: Unstored = Unstored::new();

impl Unstored {
    pub const fn new() -> Self {
        Self(Mutex::new(None))
    }

    fn kept(&self) -> std::sync::MutexGuard<'_, Option<Kept>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes the kept vectors of `texts` made by `model`, one per text in order (`None`
    /// where none is kept). Taken vectors leave the store: a pass that fails to store them
    /// again keeps them again ([`Self::keep`]).
    pub fn take<'a>(
        &self,
        model: &str,
        texts: impl IntoIterator<Item = &'a str>,
    ) -> Vec<Option<Vec<f32>>> {
        let mut guard = self.kept();
        let Some(k) = guard.as_mut().filter(|k| k.model == model) else {
            return texts.into_iter().map(|_| None).collect();
        };
        let out: Vec<Option<Vec<f32>>> = texts.into_iter().map(|t| k.vectors.remove(t)).collect();
        if out.iter().any(Option::is_some) {
            k.order.retain(|t| k.vectors.contains_key(t));
        }
        out
    }

    /// Keeps `vectors` (text, vector) made by `model` for a later pass, letting the oldest
    /// go past [`MAX_KEPT`]; kept vectors of another model are dropped.
    pub fn keep(&self, model: &str, vectors: impl IntoIterator<Item = (String, Vec<f32>)>) {
        let mut vectors = vectors.into_iter().peekable();
        if vectors.peek().is_none() {
            return;
        }
        let mut guard = self.kept();
        let k = match guard.as_mut() {
            Some(k) if k.model == model => k,
            _ => guard.insert(Kept {
                model: model.to_string(),
                vectors: HashMap::new(),
                order: VecDeque::new(),
            }),
        };
        for (text, v) in vectors {
            if k.vectors.insert(text.clone(), v).is_none() {
                k.order.push_back(text);
            }
        }
        while k.order.len() > MAX_KEPT {
            if let Some(oldest) = k.order.pop_front() {
                k.vectors.remove(&oldest);
            }
        }
    }

    /// Lets every kept vector go.
    pub fn clear(&self) {
        *self.kept() = None;
    }

    /// How many vectors are kept.
    pub fn len(&self) -> usize {
        self.kept().as_ref().map_or(0, |k| k.vectors.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Counts `n` vectors taken from the store instead of being made again.
pub fn reused(n: usize) {
    if n > 0 {
        metrics::counter!("cairn_vectors_reused_total").increment(n as u64);
    }
}

impl Default for Unstored {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_vectors_are_taken_once_by_their_text_and_model() {
        let u = Unstored::new();
        let m = "unit:taken-once";
        u.keep(
            m,
            [("a".to_string(), vec![1.0]), ("b".to_string(), vec![2.0])],
        );
        assert_eq!(u.take("unit:other", ["a"]), vec![None]);
        assert_eq!(u.len(), 2);
        assert_eq!(u.take(m, ["b", "c"]), vec![Some(vec![2.0]), None]);
        assert_eq!(u.take(m, ["b", "a"]), vec![None, Some(vec![1.0])]);
        assert!(u.is_empty());
        // Kept by another model, the first model's go; keeping nothing changes nothing.
        u.keep(m, [("a".to_string(), vec![1.0])]);
        u.keep("unit:third", []);
        assert_eq!(u.len(), 1);
        u.keep("unit:other", [("b".to_string(), vec![3.0])]);
        assert_eq!(u.take(m, ["a"]), vec![None]);
        assert_eq!(u.take("unit:other", ["b"]), vec![Some(vec![3.0])]);
    }

    #[test]
    fn the_oldest_go_past_the_bound() {
        let u = Unstored::new();
        let m = "unit:bounded";
        u.keep(
            m,
            (0..MAX_KEPT + 3).map(|i| (format!("t{i}"), vec![i as f32])),
        );
        assert_eq!(u.len(), MAX_KEPT);
        assert_eq!(
            u.take(m, ["t0", "t2", "t3"]),
            vec![None, None, Some(vec![3.0])]
        );
        let last = format!("t{}", MAX_KEPT + 2);
        assert_eq!(
            u.take(m, [last.as_str()]),
            vec![Some(vec![(MAX_KEPT + 2) as f32])]
        );
        assert_eq!(u.len(), MAX_KEPT - 2);
        u.clear();
        assert!(u.is_empty());
    }
}
