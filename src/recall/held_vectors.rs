//! The vectors of small projects held in memory, for comparing them one by one.
//!
//! The approximate vector indexes are shared by every project (and by every model of one
//! dimension). A project they answer with too few of its own — a small project beside larger
//! ones on a like subject, or any project while another model's vectors fill the index — is
//! compared exactly ([`crate::recall::turns`]). In Neo4j that reads each of the project's
//! vectors on every search, ~20 µs a vector on 2 cores: half a second for 20,000 operations,
//! most of a prompt's deadline. Here a project's vector signatures ([`signature`], one byte a
//! dimension, the cosine within ~0.002 of the vectors') are read once, compared in memory, and
//! only the rows that rank are read from Neo4j.
//!
//! - **First search.** A project not held is compared in Neo4j, as before, while its
//!   signatures are read in the background; the searches after it use them.
//! - **Fresh.** Vectors this process's turn indexer stores join what is held as they are
//!   stored ([`stored`], also while the project is being read); what another replica stored
//!   is read again [`REFRESH`] after the last read, in the background, searches meanwhile
//!   using what is held. Deleting a session or a project lets its project go ([`forget`]);
//!   a row deleted otherwise is not read back, and the next read drops it.
//! - **Bounded.** Only projects of at most the exact comparison's size are held (a larger one
//!   is remembered as such for [`REFRESH`]), [`HELD_BYTES`] in all; a project not searched
//!   for [`IDLE`] is let go. `CAIRN_HELD_VECTORS_MB` sets the bound (64 MB); 0 holds none.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, RwLock};
use std::time::{Duration, Instant};

use moka::sync::Cache;

use crate::embed::signature;
use crate::graph::turns::{self as store_turns, Filter, HeldRow, TurnRow, Vectors};
use crate::graph::{Store, StoreResult};

/// How long what was read of a project is used before it is read again (in the background).
pub const REFRESH: Duration = Duration::from_secs(60);
/// A project not searched for this long is let go.
pub const IDLE: Duration = Duration::from_secs(600);
/// Operations (and passages) a project held has at most: as many as are compared one by one
/// in Neo4j.
pub const MOST: usize = 20_000;
/// Memory for held vectors in all, unless configured ([`configure`]).
pub const HELD_BYTES: u64 = 64 << 20;
/// The memory configured for held vectors (0: none held).
static BUDGET: AtomicU64 = AtomicU64::new(HELD_BYTES);

/// A project's vectors made by one model.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Key {
    project: String,
    model: String,
}

/// One operation held: where it is, what it is, the signature of its own vector.
struct Op {
    id: String,
    session_id: String,
    kind: String,
    sig: Box<[i8]>,
    norm: f32,
}

/// One passage held: the operation it is part of (its place in `ops`), its signature.
struct Passage {
    owner: usize,
    sig: Box<[i8]>,
    norm: f32,
    /// Replaced since it was read (the operation's passages were made again).
    gone: bool,
}

/// What is held of one project for one model.
#[derive(Default)]
struct Table {
    ops: Vec<Op>,
    places: HashMap<String, usize>,
    passages: Vec<Passage>,
}

/// A project's held vectors, with when they were read.
struct Held {
    table: RwLock<Table>,
    read_at: Instant,
    refreshing: AtomicBool,
}

/// What the indexer stored for one operation ([`stored`]).
#[derive(Clone, Debug)]
pub struct Stored {
    pub project: String,
    pub session_id: String,
    pub id: String,
    pub kind: String,
    /// Its own vector's signature, when one was stored.
    pub sig: Option<Vec<u8>>,
    /// Its passages' signatures, when its passages were made again (empty: none now).
    pub passages: Option<Vec<Vec<u8>>>,
}

static HELD: LazyLock<Cache<Key, Arc<Held>>> = LazyLock::new(|| {
    Cache::builder()
        .max_capacity(BUDGET.load(Ordering::Relaxed))
        .weigher(|_, h: &Arc<Held>| h.weight())
        .time_to_idle(IDLE)
        .build()
});
/// Projects too large to hold when last read.
static NOT_HELD: LazyLock<Cache<Key, ()>> = LazyLock::new(|| {
    Cache::builder()
        .max_capacity(100_000)
        .time_to_live(REFRESH)
        .build()
});
/// Projects being read, with what the indexer stored for them meanwhile.
static READING: LazyLock<Mutex<HashMap<Key, Vec<Stored>>>> = LazyLock::new(Default::default);

/// Sets the memory held vectors may take in all (`CAIRN_HELD_VECTORS_MB`), before the first
/// search; 0 compares every project in Neo4j.
pub fn configure(bytes: u64) {
    BUDGET.store(bytes, Ordering::Relaxed);
}

fn key(project: &str, model: &str) -> Key {
    Key {
        project: project.to_string(),
        model: model.to_string(),
    }
}

/// The `k` nearest operations of `f.project` by `of` to `vector`, compared one by one: in
/// memory when the project is held, else in Neo4j (comparing at most `scan` vectors) while
/// the project is read to be held, unless it is larger than [`MOST`] (`size`, when known).
#[allow(clippy::too_many_arguments)]
pub async fn nearest(
    store: &Store,
    f: &Filter<'_>,
    of: Vectors,
    model: &str,
    vector: &[f32],
    k: usize,
    scan: usize,
    size: Option<usize>,
) -> StoreResult<Vec<TurnRow>> {
    if BUDGET.load(Ordering::Relaxed) == 0 {
        return Box::pin(store_turns::nearest_exact(
            store, f, of, model, vector, k, scan,
        ))
        .await;
    }
    let key = key(f.project, model);
    let query = signature::of(vector);
    if let (Some(held), Some(q)) = (HELD.get(&key), &query) {
        if held.read_at.elapsed() >= REFRESH && !held.refreshing.swap(true, Ordering::AcqRel) {
            read_later(store, key.clone());
        }
        let ranked = held.ranked(f, of, q, k);
        // On the heap, as the exact comparison below: a request's stack is already deep here.
        if let Some(rows) = Box::pin(rows_of(store, f.project, model, of, ranked)).await? {
            metrics::counter!("cairn_held_vector_searches_total").increment(1);
            return Ok(rows);
        }
        // Changed behind this process (deleted, embedded again elsewhere): read again.
        HELD.invalidate(&key);
    }
    let holdable = size.is_none_or(|n| n <= MOST) && !NOT_HELD.contains_key(&key);
    if holdable && query.is_some() {
        read_later(store, key);
    }
    Box::pin(store_turns::nearest_exact(
        store, f, of, model, vector, k, scan,
    ))
    .await
}

/// Reads `key`'s vectors in the background (unless they are being read already) and holds
/// them, with what the indexer stored meanwhile.
fn read_later(store: &Store, key: Key) {
    {
        let mut reading = READING.lock().unwrap_or_else(|e| e.into_inner());
        if reading.contains_key(&key) {
            return;
        }
        reading.insert(key.clone(), Vec::new());
    }
    let store = store.clone();
    tokio::spawn(async move {
        let read = read(&store, &key).await;
        let mut reading = READING.lock().unwrap_or_else(|e| e.into_inner());
        let meanwhile = reading.remove(&key).unwrap_or_default();
        match read {
            Ok(Some(held)) => {
                for s in &meanwhile {
                    held.add(s);
                }
                HELD.insert(key, Arc::new(held));
            }
            Ok(None) => {
                HELD.invalidate(&key);
                NOT_HELD.insert(key, ());
            }
            Err(err) => {
                tracing::warn!(error = %err, project = %key.project, "reading a project's vectors to compare them in memory failed; its searches compare them in Neo4j meanwhile");
                if let Some(h) = HELD.get(&key) {
                    h.refreshing.store(false, Ordering::Release);
                }
            }
        }
    });
}

/// `key`'s vectors as Neo4j holds them (none yet, for a project whose operations are still
/// to be embedded: the indexer's fill it); `None` when the project has more operations or
/// passages than [`MOST`].
async fn read(store: &Store, key: &Key) -> StoreResult<Option<Held>> {
    let started = Instant::now();
    let (ops, passages) = tokio::try_join!(
        store_turns::held(store, Vectors::Operations, &key.project, &key.model, MOST),
        store_turns::held(store, Vectors::Passages, &key.project, &key.model, MOST),
    )?;
    let (Some(ops), Some(passages)) = (ops, passages) else {
        return Ok(None);
    };
    let mut v = Table::default();
    for row in ops {
        let Some(sig) = row_sig(&row) else { continue };
        v.put(row.id, row.session_id, row.kind, sig);
    }
    let mut owned: HashMap<usize, Vec<Box<[i8]>>> = HashMap::new();
    for row in passages {
        let (Some(&owner), Some(sig)) = (v.places.get(&row.id), row_sig(&row)) else {
            continue;
        };
        owned.entry(owner).or_default().push(sig);
    }
    for (owner, sigs) in owned {
        v.replace_passages(owner, sigs);
    }
    tracing::debug!(
        project = %key.project,
        operations = v.ops.len(),
        passages = v.passages.len(),
        elapsed_ms = started.elapsed().as_millis() as u64,
        "project vectors held in memory"
    );
    Ok(Some(Held {
        table: RwLock::new(v),
        read_at: Instant::now(),
        refreshing: AtomicBool::new(false),
    }))
}

/// A row's signature: as stored, or made from its vector (stored before signatures were).
fn row_sig(row: &HeldRow) -> Option<Box<[i8]>> {
    let bytes = match (&row.sig, &row.vector) {
        (Some(sig), _) => sig.clone(),
        (None, Some(v)) => signature::of(v)?,
        (None, None) => return None,
    };
    Some(bytes.into_iter().map(|b| b as i8).collect())
}

/// Adds what this process's turn indexer stored (under `model`) to the projects held, and to
/// those being read.
pub fn stored(model: &str, rows: &[Stored]) {
    if rows.is_empty() {
        return;
    }
    let mut reading = READING.lock().unwrap_or_else(|e| e.into_inner());
    for r in rows {
        let key = key(&r.project, model);
        if let Some(pending) = reading.get_mut(&key) {
            pending.push(r.clone());
        }
        if let Some(held) = HELD.get(&key) {
            held.add(r);
        }
    }
}

/// How many operation and passage vectors `model` made are held for `project`; `None` when
/// none are.
pub fn held(project: &str, model: &str) -> Option<(usize, usize)> {
    let h = HELD.get(&key(project, model))?;
    let t = h.table.read().unwrap_or_else(|e| e.into_inner());
    Some((t.ops.len(), t.passages.iter().filter(|p| !p.gone).count()))
}

/// Lets `project`'s held vectors go (its sessions or itself were deleted).
pub fn forget(project: &str) {
    let project = project.to_string();
    // Invalidation by predicate needs the cache built for it; the keys are few, so walk them.
    let keys: Vec<Key> = HELD
        .iter()
        .filter(|(k, _)| k.project == project)
        .map(|(k, _)| (*k).clone())
        .collect();
    for k in keys {
        HELD.invalidate(&k);
    }
}

impl Held {
    /// Bytes it holds, roughly (for the cache's bound).
    fn weight(&self) -> u32 {
        let v = self.table.read().unwrap_or_else(|e| e.into_inner());
        let ops: usize = v
            .ops
            .iter()
            .map(|o| o.sig.len() + 2 * o.id.len() + o.session_id.len() + o.kind.len() + 96)
            .sum();
        let passages: usize = v.passages.iter().map(|p| p.sig.len() + 40).sum();
        u32::try_from(ops + passages).unwrap_or(u32::MAX)
    }

    fn add(&self, s: &Stored) {
        let mut v = self.table.write().unwrap_or_else(|e| e.into_inner());
        let place = match &s.sig {
            Some(sig) if v.fits(sig.len()) => Some(v.put(
                s.id.clone(),
                s.session_id.clone(),
                s.kind.clone(),
                sig.iter().map(|&b| b as i8).collect(),
            )),
            _ => v.places.get(&s.id).copied(),
        };
        if let (Some(place), Some(passages)) = (place, &s.passages) {
            let sigs = passages
                .iter()
                .filter(|p| v.fits(p.len()))
                .map(|p| p.iter().map(|&b| b as i8).collect())
                .collect();
            v.replace_passages(place, sigs);
        }
    }

    /// The best `n` operations (ids, cosine) that `f` keeps, by `of`, to the signature `q`.
    fn ranked(&self, f: &Filter<'_>, of: Vectors, q: &[u8], n: usize) -> Vec<(String, f64)> {
        let q: Vec<i8> = q.iter().map(|&b| b as i8).collect();
        let qn = norm(&q);
        let v = self.table.read().unwrap_or_else(|e| e.into_inner());
        let sessions: Option<HashSet<&str>> =
            f.sessions.map(|s| s.iter().map(String::as_str).collect());
        let keeps = |o: &Op| {
            f.types.is_none_or(|t| t.contains(&o.kind))
                && sessions
                    .as_ref()
                    .is_none_or(|s| s.contains(o.session_id.as_str()))
                && f.exclude_session != Some(o.session_id.as_str())
        };
        let cos = |sig: &[i8], n: f32| {
            if qn == 0.0 || n == 0.0 || sig.len() != q.len() {
                0.0
            } else {
                f64::from(dot(&q, sig) as f32 / (qn * n))
            }
        };
        let mut best: Vec<(usize, f64)> = match of {
            Vectors::Operations => v
                .ops
                .iter()
                .enumerate()
                .filter(|(_, o)| keeps(o))
                .map(|(i, o)| (i, cos(&o.sig, o.norm)))
                .collect(),
            Vectors::Passages => {
                let mut by_op: HashMap<usize, f64> = HashMap::new();
                for p in v.passages.iter().filter(|p| !p.gone) {
                    if !keeps(&v.ops[p.owner]) {
                        continue;
                    }
                    let c = cos(&p.sig, p.norm);
                    let e = by_op.entry(p.owner).or_insert(c);
                    *e = e.max(c);
                }
                by_op.into_iter().collect()
            }
        };
        let cmp = |a: &(usize, f64), b: &(usize, f64)| {
            b.1.total_cmp(&a.1)
                .then_with(|| v.ops[a.0].id.cmp(&v.ops[b.0].id))
        };
        if best.len() > n {
            best.select_nth_unstable_by(n, cmp);
            best.truncate(n);
        }
        best.sort_by(cmp);
        best.into_iter()
            .map(|(i, c)| (v.ops[i].id.clone(), c))
            .collect()
    }
}

impl Table {
    /// Whether a vector of `dims` dimensions is of the model held (the first one held says).
    fn fits(&self, dims: usize) -> bool {
        self.ops.first().is_none_or(|o| o.sig.len() == dims)
    }

    /// Holds an operation's own vector (replacing what was held of it); its place.
    fn put(&mut self, id: String, session_id: String, kind: String, sig: Box<[i8]>) -> usize {
        let norm = norm(&sig);
        if let Some(&i) = self.places.get(&id) {
            let o = &mut self.ops[i];
            o.sig = sig;
            o.norm = norm;
            return i;
        }
        let i = self.ops.len();
        self.places.insert(id.clone(), i);
        self.ops.push(Op {
            id,
            session_id,
            kind,
            sig,
            norm,
        });
        i
    }

    /// The passages of the operation at `owner` are now these.
    fn replace_passages(&mut self, owner: usize, sigs: Vec<Box<[i8]>>) {
        for p in self.passages.iter_mut().filter(|p| p.owner == owner) {
            p.gone = true;
        }
        self.passages.extend(sigs.into_iter().map(|sig| Passage {
            owner,
            norm: norm(&sig),
            sig,
            gone: false,
        }));
    }
}

/// The rows of `ranked` (ids with their cosine, best first) as Neo4j holds them now, scored
/// as the vector index scores, (1 + cosine) / 2; `None` when one of them is no longer there
/// as it is held (deleted, embedded by another model, its passages gone).
async fn rows_of(
    store: &Store,
    project: &str,
    model: &str,
    of: Vectors,
    ranked: Vec<(String, f64)>,
) -> StoreResult<Option<Vec<TurnRow>>> {
    if ranked.is_empty() {
        return Ok(Some(Vec::new()));
    }
    let ids: Vec<&str> = ranked.iter().map(|(id, _)| id.as_str()).collect();
    let rows = store_turns::rows_by_id(store, project, model, &ids).await?;
    let mut by_id: HashMap<String, TurnRow> = rows
        .into_iter()
        .filter(|r| of == Vectors::Operations || r.passaged)
        .map(|r| (r.row.id.clone(), r.row))
        .collect();
    let mut out = Vec::with_capacity(ranked.len());
    for (id, cos) in ranked {
        let Some(row) = by_id.remove(&id) else {
            return Ok(None);
        };
        out.push(TurnRow {
            score: (1.0 + cos) / 2.0,
            vectored: true,
            ..row
        });
    }
    Ok(Some(out))
}

fn dot(a: &[i8], b: &[i8]) -> i32 {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| i32::from(x) * i32::from(y))
        .sum()
}

fn norm(a: &[i8]) -> f32 {
    (dot(a, a) as f32).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sig(v: &[f32]) -> Box<[i8]> {
        signature::of(v)
            .unwrap()
            .into_iter()
            .map(|b| b as i8)
            .collect()
    }

    fn held(ops: &[(&str, &str, &str, [f32; 3])]) -> Held {
        let mut v = Table::default();
        for (id, session, kind, vector) in ops {
            v.put(
                id.to_string(),
                session.to_string(),
                kind.to_string(),
                sig(vector),
            );
        }
        Held {
            table: RwLock::new(v),
            read_at: Instant::now(),
            refreshing: AtomicBool::new(false),
        }
    }

    fn filter<'a>(
        types: Option<&'a [String]>,
        sessions: Option<&'a [String]>,
        exclude: Option<&'a str>,
    ) -> Filter<'a> {
        Filter {
            project: "p",
            types,
            sessions,
            exclude_session: exclude,
        }
    }

    fn ids(ranked: &[(String, f64)]) -> Vec<&str> {
        ranked.iter().map(|(id, _)| id.as_str()).collect()
    }

    #[test]
    fn held_vectors_rank_as_their_cosine_and_keep_to_the_filter() {
        let h = held(&[
            ("a", "s1", "message", [1.0, 0.0, 0.0]),
            ("b", "s1", "tool_call", [0.9, 0.1, 0.0]),
            ("c", "s2", "message", [0.0, 1.0, 0.0]),
            ("d", "s2", "message", [0.7, 0.7, 0.0]),
        ]);
        let q = signature::of(&[1.0, 0.0, 0.0]).unwrap();
        let all = h.ranked(&filter(None, None, None), Vectors::Operations, &q, 10);
        assert_eq!(ids(&all), ["a", "b", "d", "c"]);
        assert!((all[0].1 - 1.0).abs() < 1e-6);
        let expected = 0.9 / (0.9_f64.powi(2) + 0.1_f64.powi(2)).sqrt();
        assert!((all[1].1 - expected).abs() < 0.01, "{}", all[1].1);
        assert!(all[3].1.abs() < 1e-6);
        // The best two only.
        let two = h.ranked(&filter(None, None, None), Vectors::Operations, &q, 2);
        assert_eq!(ids(&two), ["a", "b"]);
        let messages = ["message".to_string()];
        let only = h.ranked(
            &filter(Some(&messages), None, None),
            Vectors::Operations,
            &q,
            10,
        );
        assert_eq!(ids(&only), ["a", "d", "c"]);
        let s2 = ["s2".to_string()];
        let within = h.ranked(&filter(None, Some(&s2), None), Vectors::Operations, &q, 10);
        assert_eq!(ids(&within), ["d", "c"]);
        let without = h.ranked(&filter(None, None, Some("s1")), Vectors::Operations, &q, 10);
        assert_eq!(ids(&without), ["d", "c"]);
    }

    #[test]
    fn an_operation_ranks_by_its_best_passage_and_passages_made_again_replace_the_old() {
        let h = held(&[
            ("a", "s1", "message", [1.0, 0.0, 0.0]),
            ("b", "s1", "message", [0.0, 1.0, 0.0]),
        ]);
        let q = signature::of(&[0.0, 0.0, 1.0]).unwrap();
        let none = h.ranked(&filter(None, None, None), Vectors::Passages, &q, 10);
        assert!(none.is_empty(), "no passages yet: {none:?}");
        let stored = |id: &str, passages: Vec<[f32; 3]>| Stored {
            project: "p".into(),
            session_id: "s1".into(),
            id: id.into(),
            kind: "message".into(),
            sig: None,
            passages: Some(passages.iter().map(|v| signature::of(v).unwrap()).collect()),
        };
        h.add(&stored("a", vec![[0.0, 1.0, 0.0], [0.0, 0.2, 1.0]]));
        h.add(&stored("b", vec![[0.5, 0.0, 0.5]]));
        let ranked = h.ranked(&filter(None, None, None), Vectors::Passages, &q, 10);
        assert_eq!(ids(&ranked), ["a", "b"]);
        assert!(ranked[0].1 > 0.95 && ranked[1].1 < 0.75, "{ranked:?}");
        // a's passages made again, far from the query; one passage now says nothing.
        h.add(&stored("a", vec![[1.0, 0.0, 0.0]]));
        let ranked = h.ranked(&filter(None, None, None), Vectors::Passages, &q, 10);
        assert_eq!(ids(&ranked), ["b", "a"]);
        h.add(&stored("a", vec![]));
        let ranked = h.ranked(&filter(None, None, None), Vectors::Passages, &q, 10);
        assert_eq!(ids(&ranked), ["b"]);
    }

    #[test]
    fn a_vector_stored_again_replaces_the_one_held_and_a_new_one_joins() {
        let h = held(&[("a", "s1", "message", [1.0, 0.0, 0.0])]);
        let add = |id: &str, v: [f32; 3]| Stored {
            project: "p".into(),
            session_id: "s2".into(),
            id: id.into(),
            kind: "message".into(),
            sig: signature::of(&v),
            passages: None,
        };
        h.add(&add("a", [0.0, 1.0, 0.0]));
        h.add(&add("b", [1.0, 0.0, 0.0]));
        // Another dimension (another model's vector) is not held.
        h.add(&Stored {
            sig: Some(vec![1, 2]),
            ..add("c", [1.0, 0.0, 0.0])
        });
        let q = signature::of(&[1.0, 0.0, 0.0]).unwrap();
        let ranked = h.ranked(&filter(None, None, None), Vectors::Operations, &q, 10);
        assert_eq!(ids(&ranked), ["b", "a"]);
        // The one replaced kept its session.
        let s1 = ["s1".to_string()];
        let within = h.ranked(&filter(None, Some(&s1), None), Vectors::Operations, &q, 10);
        assert_eq!(ids(&within), ["a"]);
    }
}
