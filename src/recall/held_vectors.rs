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
//!   is remembered as such for [`REFRESH`]), [`HELD_BYTES`] in all, weighed again as the
//!   indexer adds to them; the project searched longest ago makes room. One that grows past
//!   the size or the bound, or whose read failed, is let go and not read for [`REFRESH`]; one
//!   not searched for [`IDLE`] is let go, whatever the indexer adds to it.
//!   `CAIRN_HELD_VECTORS_MB` sets the bound (64 MB); 0 holds none.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, RwLock};
use std::time::{Duration, Instant};

use moka::ops::compute::Op as Compute;
use moka::policy::EvictionPolicy;
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

impl Op {
    /// Bytes it holds, roughly: its signature, its strings, its place in the map.
    fn bytes(&self) -> usize {
        self.sig.len() + 2 * self.id.len() + self.session_id.len() + self.kind.len() + 96
    }
}

/// One passage held: the operation it is part of (its place in `ops`), its signature.
struct Passage {
    owner: usize,
    sig: Box<[i8]>,
    norm: f32,
    /// Replaced since it was read (the operation's passages were made again).
    gone: bool,
}

impl Passage {
    fn bytes(&self) -> usize {
        self.sig.len() + 40
    }
}

/// What is held of one project for one model.
struct Table {
    ops: Vec<Op>,
    places: HashMap<String, usize>,
    passages: Vec<Passage>,
    /// The places in `passages` of each operation's passages held now.
    owned: HashMap<usize, Vec<usize>>,
    /// Passages replaced and not yet cleared away.
    gone: usize,
    /// Bytes held in all ([`Op::bytes`], [`Passage::bytes`]), kept as it changes.
    bytes: usize,
    /// Operations (and passages) it may hold: past that, the project is let go.
    most: usize,
}

impl Default for Table {
    fn default() -> Self {
        Self::within(MOST)
    }
}

/// A project's held vectors, with when they were read and last searched.
struct Held {
    table: RwLock<Table>,
    read_at: Instant,
    refreshing: AtomicBool,
    /// Milliseconds from [`EPOCH`] to its last search: the indexer's appends do not keep a
    /// project nobody searches held.
    searched: AtomicU64,
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

/// A project being read, with what the indexer stored for it meanwhile.
#[derive(Default)]
struct Reading {
    meanwhile: Vec<Stored>,
    /// Its sessions or itself were deleted while it was read: what was read is not held.
    forgotten: bool,
}

static HELD: LazyLock<Cache<Key, Arc<Held>>> = LazyLock::new(|| {
    Cache::builder()
        .max_capacity(BUDGET.load(Ordering::Relaxed))
        .weigher(|_, h: &Arc<Held>| h.weight())
        .time_to_idle(IDLE)
        // The project just read is the one being searched: it is always let in, and the one
        // searched longest ago makes room.
        .eviction_policy(EvictionPolicy::lru())
        .build()
});
/// Projects not to read for a while: too large to hold when last read, or their read failed.
static NOT_HELD: LazyLock<Cache<Key, ()>> = LazyLock::new(|| {
    Cache::builder()
        .max_capacity(100_000)
        .time_to_live(REFRESH)
        .build()
});
/// Projects being read.
static READING: LazyLock<Mutex<HashMap<Key, Reading>>> = LazyLock::new(Default::default);
/// What [`Held::searched`] counts from.
static EPOCH: LazyLock<Instant> = LazyLock::new(Instant::now);

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

fn since_epoch() -> u64 {
    EPOCH.elapsed().as_millis() as u64
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
    if BUDGET.load(Ordering::Relaxed) != 0 {
        // On the heap, as the exact comparison below: a request's stack is already deep.
        if let Some(rows) = Box::pin(in_memory(store, f, of, model, vector, k, size)).await? {
            return Ok(rows);
        }
    }
    Box::pin(store_turns::nearest_exact(
        store, f, of, model, vector, k, scan,
    ))
    .await
}

/// [`nearest`] compared in memory when the project is held; `None` when it is not (a read
/// begins, unless the project is too large or one is under way) or what is held no longer
/// matches Neo4j (it is let go).
async fn in_memory(
    store: &Store,
    f: &Filter<'_>,
    of: Vectors,
    model: &str,
    vector: &[f32],
    k: usize,
    size: Option<usize>,
) -> StoreResult<Option<Vec<TurnRow>>> {
    let key = key(f.project, model);
    let Some(query) = signature::of(vector) else {
        return Ok(None);
    };
    if let Some(held) = HELD.get(&key) {
        held.searched.store(since_epoch(), Ordering::Relaxed);
        if held.read_at.elapsed() >= REFRESH && !held.refreshing.swap(true, Ordering::AcqRel) {
            read_later(store, key.clone());
        }
        // `None`: the vectors held are of another length than the query's.
        if let Some(ranked) = held.ranked(f, of, &query, k) {
            if let Some(rows) = rows_of(store, f.project, model, of, ranked).await? {
                metrics::counter!("cairn_held_vector_searches_total").increment(1);
                return Ok(Some(rows));
            }
        }
        // Changed behind this process (deleted, embedded again elsewhere): read again.
        let_go(&key, &held);
    }
    if size.is_none_or(|n| n <= MOST) && !NOT_HELD.contains_key(&key) {
        read_later(store, key);
    }
    Ok(None)
}

/// Lets `key`'s vectors go if what is held of it is still `held` (not a fresher read).
fn let_go(key: &Key, held: &Arc<Held>) {
    HELD.entry(key.clone()).and_compute_with(|now| match now {
        Some(e) if Arc::ptr_eq(e.value(), held) => Compute::Remove,
        _ => Compute::Nop,
    });
}

/// Reads `key`'s vectors in the background (unless they are being read already) and holds
/// them, with what the indexer stored meanwhile.
fn read_later(store: &Store, key: Key) {
    {
        let mut reading = READING.lock().unwrap_or_else(|e| e.into_inner());
        if reading.contains_key(&key) {
            return;
        }
        reading.insert(key.clone(), Reading::default());
    }
    let store = store.clone();
    tokio::spawn(async move {
        let read = read(&store, &key).await;
        finish(key, read);
    });
}

/// Holds what was read of `key` (with what the indexer stored meanwhile), unless it was
/// forgotten meanwhile; a project too large, or whose read failed, is not read again for
/// [`REFRESH`].
fn finish(key: Key, read: StoreResult<Option<Held>>) {
    // Held (or not) before the project leaves `READING`: what the indexer stores after that
    // finds it held.
    let mut reading = READING.lock().unwrap_or_else(|e| e.into_inner());
    let Reading {
        meanwhile,
        forgotten,
    } = reading.remove(&key).unwrap_or_default();
    match read {
        Ok(_) if forgotten => {}
        Ok(Some(held)) => {
            for s in &meanwhile {
                held.add(s);
            }
            if held.holdable() {
                HELD.insert(key, Arc::new(held));
            } else {
                HELD.invalidate(&key);
                NOT_HELD.insert(key, ());
            }
        }
        Ok(None) => {
            HELD.invalidate(&key);
            NOT_HELD.insert(key, ());
        }
        Err(err) => {
            tracing::warn!(error = %err, project = %key.project, "reading a project's vectors to compare them in memory failed; its searches compare them in Neo4j, and the read is tried again in a minute");
            HELD.invalidate(&key);
            NOT_HELD.insert(key, ());
        }
    }
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
    // Passages stored before they kept signatures came whole: theirs are stored now.
    let mut unsigned: Vec<(String, i64, Vec<u8>)> = Vec::new();
    for row in &passages {
        let (Some(&owner), Some(sig)) = (v.places.get(&row.id), row_sig(row)) else {
            continue;
        };
        if let (None, Some(n)) = (&row.sig, row.n) {
            unsigned.push((row.id.clone(), n, sig.iter().map(|&b| b as u8).collect()));
        }
        owned.entry(owner).or_default().push(sig);
    }
    if !unsigned.is_empty() {
        sign_later(store, key, unsigned);
    }
    for (owner, sigs) in owned {
        v.replace_passages(owner, sigs);
    }
    tracing::debug!(
        project = %key.project,
        operations = v.ops.len(),
        passages = v.passages.len(),
        bytes = v.bytes,
        elapsed_ms = started.elapsed().as_millis() as u64,
        "project vectors held in memory"
    );
    Ok(Some(Held::new(v)))
}

/// Stores, in the background, the signatures of passages read whole (operation id, place,
/// signature), so the next read brings a byte a dimension.
fn sign_later(store: &Store, key: &Key, unsigned: Vec<(String, i64, Vec<u8>)>) {
    let (store, key) = (store.clone(), key.clone());
    tokio::spawn(async move {
        for part in unsigned.chunks(SIGN_ROWS) {
            let places: Vec<(&str, i64)> =
                part.iter().map(|(id, n, _)| (id.as_str(), *n)).collect();
            let sigs = part.iter().map(|(_, _, s)| s.clone()).collect();
            if let Err(err) = store_turns::sign_passages(&store, &key.model, &places, sigs).await {
                tracing::warn!(error = %err, project = %key.project, "storing the signatures of passages read whole failed; they are read whole again next time");
                return;
            }
        }
        tracing::debug!(project = %key.project, passages = unsigned.len(), "passages' signatures stored");
    });
}

/// Passages' signatures stored per statement.
const SIGN_ROWS: usize = 2_000;

/// A row's signature: as stored, or made from its vector (stored before signatures were).
fn row_sig(row: &HeldRow) -> Option<Box<[i8]>> {
    let bytes = match (&row.sig, &row.vector) {
        (Some(sig), _) => sig.clone(),
        (None, Some(v)) => signature::of(v)?,
        (None, None) => return None,
    };
    Some(signed(&bytes))
}

/// Adds what this process's turn indexer stored (under `model`) to the projects held, and to
/// those being read. A project that grows past [`MOST`] or the memory bound, or that nobody
/// searched for [`IDLE`], is let go instead.
pub fn stored(model: &str, rows: &[Stored]) {
    let mut by_key: HashMap<Key, Vec<&Stored>> = HashMap::new();
    for r in rows {
        by_key.entry(key(&r.project, model)).or_default().push(r);
    }
    if by_key.is_empty() {
        return;
    }
    {
        let mut reading = READING.lock().unwrap_or_else(|e| e.into_inner());
        for (key, rows) in &by_key {
            if let Some(r) = reading.get_mut(key) {
                r.meanwhile.extend(rows.iter().map(|&s| s.clone()));
            }
        }
    }
    let now = since_epoch();
    for (key, rows) in by_key {
        let Some(held) = HELD.get(&key) else { continue };
        let idle = now.saturating_sub(held.searched.load(Ordering::Relaxed));
        if idle >= IDLE.as_millis() as u64 {
            let_go(&key, &held);
            continue;
        }
        for r in rows {
            held.add(r);
        }
        let holdable = held.holdable();
        // Put again, so the cache weighs what it holds now; unless a fresher read or a
        // delete took its place meanwhile.
        HELD.entry(key.clone()).and_compute_with(|now| match now {
            Some(e) if Arc::ptr_eq(e.value(), &held) => {
                if holdable {
                    Compute::Put(held.clone())
                } else {
                    Compute::Remove
                }
            }
            _ => Compute::Nop,
        });
        if !holdable {
            NOT_HELD.insert(key, ());
        }
    }
}

/// How many operation and passage vectors `model` made are held for `project`; `None` when
/// none are.
pub fn held(project: &str, model: &str) -> Option<(usize, usize)> {
    let h = HELD.get(&key(project, model))?;
    let t = h.table.read().unwrap_or_else(|e| e.into_inner());
    Some((t.ops.len(), t.live_passages()))
}

/// Lets `project`'s held vectors go (its sessions or itself were deleted), also what is
/// being read of it now.
pub fn forget(project: &str) {
    {
        let mut reading = READING.lock().unwrap_or_else(|e| e.into_inner());
        for (_, r) in reading.iter_mut().filter(|(k, _)| k.project == project) {
            r.forgotten = true;
        }
    }
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
    fn new(table: Table) -> Self {
        Self {
            table: RwLock::new(table),
            read_at: Instant::now(),
            refreshing: AtomicBool::new(false),
            searched: AtomicU64::new(since_epoch()),
        }
    }

    /// Bytes it holds, roughly (for the cache's bound).
    fn weight(&self) -> u32 {
        let v = self.table.read().unwrap_or_else(|e| e.into_inner());
        u32::try_from(v.bytes).unwrap_or(u32::MAX)
    }

    /// Whether it may stay held: within [`MOST`] and the memory bound.
    fn holdable(&self) -> bool {
        let v = self.table.read().unwrap_or_else(|e| e.into_inner());
        !v.over() && v.bytes as u64 <= BUDGET.load(Ordering::Relaxed)
    }

    fn add(&self, s: &Stored) {
        let mut v = self.table.write().unwrap_or_else(|e| e.into_inner());
        // Past its bound it is about to be let go: it grows no further.
        if v.over() {
            return;
        }
        let place = match &s.sig {
            Some(sig) if v.fits(sig.len()) => Some(v.put(
                s.id.clone(),
                s.session_id.clone(),
                s.kind.clone(),
                signed(sig),
            )),
            _ => v.places.get(&s.id).copied(),
        };
        if let (Some(place), Some(passages)) = (place, &s.passages) {
            let sigs = passages
                .iter()
                .filter(|p| v.fits(p.len()))
                .map(|p| signed(p))
                .collect();
            v.replace_passages(place, sigs);
        }
    }

    /// The best `n` operations (ids, cosine) that `f` keeps, by `of`, to the signature `q`;
    /// `None` when what is held is of another length than `q`.
    fn ranked(
        &self,
        f: &Filter<'_>,
        of: Vectors,
        q: &[u8],
        n: usize,
    ) -> Option<Vec<(String, f64)>> {
        let q = signed(q);
        let qn = norm(&q);
        let v = self.table.read().unwrap_or_else(|e| e.into_inner());
        if !v.fits(q.len()) {
            return None;
        }
        let sessions: Option<HashSet<&str>> =
            f.sessions.map(|s| s.iter().map(String::as_str).collect());
        let keeps = |o: &Op| {
            f.types.is_none_or(|t| t.contains(&o.kind))
                && sessions
                    .as_ref()
                    .is_none_or(|s| s.contains(o.session_id.as_str()))
                && !store_turns::left_out(f.exclude_session, &o.session_id)
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
            Vectors::Passages => v
                .owned
                .iter()
                .filter(|(&owner, _)| keeps(&v.ops[owner]))
                .filter_map(|(&owner, places)| {
                    let best = places
                        .iter()
                        .map(|&p| cos(&v.passages[p].sig, v.passages[p].norm))
                        .max_by(f64::total_cmp)?;
                    Some((owner, best))
                })
                .collect(),
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
        Some(
            best.into_iter()
                .map(|(i, c)| (v.ops[i].id.clone(), c))
                .collect(),
        )
    }
}

impl Table {
    /// An empty table that may hold `most` operations and as many passages.
    fn within(most: usize) -> Self {
        Self {
            ops: Vec::new(),
            places: HashMap::new(),
            passages: Vec::new(),
            owned: HashMap::new(),
            gone: 0,
            bytes: 0,
            most,
        }
    }

    /// Whether a vector of `dims` dimensions is of the model held (the first one held says).
    fn fits(&self, dims: usize) -> bool {
        self.ops.first().is_none_or(|o| o.sig.len() == dims)
    }

    /// Passages held now (not replaced).
    fn live_passages(&self) -> usize {
        self.passages.len() - self.gone
    }

    /// Whether it holds more than it may.
    fn over(&self) -> bool {
        self.ops.len() > self.most || self.live_passages() > self.most
    }

    /// Holds an operation's own vector (replacing what was held of it); its place.
    fn put(&mut self, id: String, session_id: String, kind: String, sig: Box<[i8]>) -> usize {
        let norm = norm(&sig);
        if let Some(&i) = self.places.get(&id) {
            let o = &mut self.ops[i];
            self.bytes = self.bytes + sig.len() - o.sig.len();
            o.sig = sig;
            o.norm = norm;
            return i;
        }
        let i = self.ops.len();
        self.places.insert(id.clone(), i);
        let op = Op {
            id,
            session_id,
            kind,
            sig,
            norm,
        };
        self.bytes += op.bytes();
        self.ops.push(op);
        i
    }

    /// The passages of the operation at `owner` are now these.
    fn replace_passages(&mut self, owner: usize, sigs: Vec<Box<[i8]>>) {
        for p in self.owned.remove(&owner).unwrap_or_default() {
            let old = &mut self.passages[p];
            old.gone = true;
            self.gone += 1;
            self.bytes -= old.bytes();
        }
        if !sigs.is_empty() {
            let start = self.passages.len();
            self.passages.extend(sigs.into_iter().map(|sig| Passage {
                owner,
                norm: norm(&sig),
                sig,
                gone: false,
            }));
            self.bytes += self.passages[start..]
                .iter()
                .map(Passage::bytes)
                .sum::<usize>();
            self.owned
                .insert(owner, (start..self.passages.len()).collect());
        }
        // Replaced passages are cleared away once they are as many as the rest.
        if self.gone > 64 && self.gone >= self.live_passages() {
            self.passages.retain(|p| !p.gone);
            self.gone = 0;
            self.owned.clear();
            for (i, p) in self.passages.iter().enumerate() {
                self.owned.entry(p.owner).or_default().push(i);
            }
        }
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

/// A signature's bytes as the signed values they stand for ([`signature`]).
fn signed(bytes: &[u8]) -> Box<[i8]> {
    bytes.iter().map(|&b| b as i8).collect()
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
        signed(&signature::of(v).unwrap())
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
        Held::new(v)
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
        let all = h
            .ranked(&filter(None, None, None), Vectors::Operations, &q, 10)
            .unwrap();
        assert_eq!(ids(&all), ["a", "b", "d", "c"]);
        assert!((all[0].1 - 1.0).abs() < 1e-6);
        let expected = 0.9 / (0.9_f64.powi(2) + 0.1_f64.powi(2)).sqrt();
        assert!((all[1].1 - expected).abs() < 0.01, "{}", all[1].1);
        assert!(all[3].1.abs() < 1e-6);
        // The best two only.
        let two = h
            .ranked(&filter(None, None, None), Vectors::Operations, &q, 2)
            .unwrap();
        assert_eq!(ids(&two), ["a", "b"]);
        let messages = ["message".to_string()];
        let only = h
            .ranked(
                &filter(Some(&messages), None, None),
                Vectors::Operations,
                &q,
                10,
            )
            .unwrap();
        assert_eq!(ids(&only), ["a", "d", "c"]);
        let s2 = ["s2".to_string()];
        let within = h
            .ranked(&filter(None, Some(&s2), None), Vectors::Operations, &q, 10)
            .unwrap();
        assert_eq!(ids(&within), ["d", "c"]);
        let without = h
            .ranked(&filter(None, None, Some("s1")), Vectors::Operations, &q, 10)
            .unwrap();
        assert_eq!(ids(&without), ["d", "c"]);
    }

    #[test]
    fn an_operation_ranks_by_its_best_passage_and_passages_made_again_replace_the_old() {
        let h = held(&[
            ("a", "s1", "message", [1.0, 0.0, 0.0]),
            ("b", "s1", "message", [0.0, 1.0, 0.0]),
        ]);
        let q = signature::of(&[0.0, 0.0, 1.0]).unwrap();
        let none = h
            .ranked(&filter(None, None, None), Vectors::Passages, &q, 10)
            .unwrap();
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
        let ranked = h
            .ranked(&filter(None, None, None), Vectors::Passages, &q, 10)
            .unwrap();
        assert_eq!(ids(&ranked), ["a", "b"]);
        assert!(ranked[0].1 > 0.95 && ranked[1].1 < 0.75, "{ranked:?}");
        // a's passages made again, far from the query; one passage now says nothing.
        h.add(&stored("a", vec![[1.0, 0.0, 0.0]]));
        let ranked = h
            .ranked(&filter(None, None, None), Vectors::Passages, &q, 10)
            .unwrap();
        assert_eq!(ids(&ranked), ["b", "a"]);
        h.add(&stored("a", vec![]));
        let ranked = h
            .ranked(&filter(None, None, None), Vectors::Passages, &q, 10)
            .unwrap();
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
        let ranked = h
            .ranked(&filter(None, None, None), Vectors::Operations, &q, 10)
            .unwrap();
        assert_eq!(ids(&ranked), ["b", "a"]);
        // The one replaced kept its session.
        let s1 = ["s1".to_string()];
        let within = h
            .ranked(&filter(None, Some(&s1), None), Vectors::Operations, &q, 10)
            .unwrap();
        assert_eq!(ids(&within), ["a"]);
    }

    fn op(project: &str, id: &str, v: [f32; 3]) -> Stored {
        Stored {
            project: project.into(),
            session_id: "s1".into(),
            id: id.into(),
            kind: "message".into(),
            sig: signature::of(&v),
            passages: None,
        }
    }

    fn table(most: usize, ops: &[(&str, [f32; 3])]) -> Table {
        let mut t = Table::within(most);
        for (id, v) in ops {
            t.put(id.to_string(), "s1".into(), "message".into(), sig(v));
        }
        t
    }

    #[test]
    fn a_project_grown_past_its_bound_grows_no_further_and_is_let_go() {
        let k = key("held-bound", "m");
        let h = Arc::new(Held::new(table(
            3,
            &[("a", [1.0, 0.0, 0.0]), ("b", [0.0, 1.0, 0.0])],
        )));
        HELD.insert(k.clone(), h.clone());
        let before = h.weight();
        stored("m", &[op("held-bound", "c", [0.0, 0.0, 1.0])]);
        // Within its bound it stays held, weighed again.
        assert!(HELD.get(&k).is_some_and(|now| Arc::ptr_eq(&now, &h)));
        assert!(h.weight() > before);
        assert!(h.holdable());
        stored("m", &[op("held-bound", "d", [1.0, 1.0, 0.0])]);
        assert!(!h.holdable(), "four of at most three");
        assert!(HELD.get(&k).is_none(), "let go once past its bound");
        assert!(NOT_HELD.contains_key(&k), "and not read again for a while");
        h.add(&op("held-bound", "e", [1.0, 0.0, 1.0]));
        assert_eq!(
            h.table.read().unwrap().ops.len(),
            4,
            "past its bound it grows no further"
        );
    }

    #[test]
    fn what_is_stored_during_a_read_joins_it_and_a_delete_during_a_read_holds_nothing() {
        let k = key("held-meanwhile", "m");
        READING
            .lock()
            .unwrap()
            .insert(k.clone(), Reading::default());
        stored("m", &[op("held-meanwhile", "b", [0.0, 1.0, 0.0])]);
        finish(
            k.clone(),
            Ok(Some(Held::new(table(MOST, &[("a", [1.0, 0.0, 0.0])])))),
        );
        assert_eq!(super::held("held-meanwhile", "m"), Some((2, 0)));
        assert!(!READING.lock().unwrap().contains_key(&k));

        // Deleted while read again: what that read brings is not held.
        READING
            .lock()
            .unwrap()
            .insert(k.clone(), Reading::default());
        forget("held-meanwhile");
        assert_eq!(super::held("held-meanwhile", "m"), None);
        finish(
            k.clone(),
            Ok(Some(Held::new(table(MOST, &[("a", [1.0, 0.0, 0.0])])))),
        );
        assert_eq!(super::held("held-meanwhile", "m"), None);

        // A read that fails holds nothing, and is not tried again at once.
        READING
            .lock()
            .unwrap()
            .insert(k.clone(), Reading::default());
        finish(
            k.clone(),
            Err(crate::graph::StoreError::Timeout(Duration::from_secs(1))),
        );
        assert_eq!(super::held("held-meanwhile", "m"), None);
        assert!(NOT_HELD.contains_key(&k));
    }

    #[test]
    fn passages_made_again_are_cleared_away_and_the_weight_is_what_is_held() {
        let h = held(&[
            ("a", "s1", "message", [1.0, 0.0, 0.0]),
            ("b", "s1", "message", [0.0, 1.0, 0.0]),
        ]);
        let passages = |id: &str, vs: Vec<[f32; 3]>| Stored {
            passages: Some(vs.iter().map(|v| signature::of(v).unwrap()).collect()),
            sig: None,
            ..op("p", id, [0.0; 3])
        };
        h.add(&passages("b", vec![[0.0, 0.1, 1.0]]));
        for i in 0..300 {
            let x = i as f32 / 300.0;
            h.add(&passages("a", vec![[1.0, x, 0.0], [x, 1.0, 0.0]]));
        }
        {
            let t = h.table.read().unwrap();
            assert_eq!(t.live_passages(), 3);
            assert!(t.passages.len() < 200, "{} kept", t.passages.len());
            let ops: usize = t.ops.iter().map(Op::bytes).sum();
            let live: usize = t
                .passages
                .iter()
                .filter(|p| !p.gone)
                .map(Passage::bytes)
                .sum();
            assert_eq!(t.bytes, ops + live);
        }
        let q = signature::of(&[0.0, 0.0, 1.0]).unwrap();
        let ranked = h
            .ranked(&filter(None, None, None), Vectors::Passages, &q, 10)
            .unwrap();
        assert_eq!(ids(&ranked), ["b", "a"]);
        // A query of another length is not compared with what is held.
        let other = signature::of(&[0.0, 0.0, 1.0, 0.0]).unwrap();
        assert!(h
            .ranked(&filter(None, None, None), Vectors::Operations, &other, 10)
            .is_none());
    }
}
