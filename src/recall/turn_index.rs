//! The turn indexer: gives every operation its search text (when it was captured before the
//! turn index existed) and, with an embedder, a vector recording the model and dimension that
//! made it — in the background, in batches, behind capture. Each session keeps a cursor
//! (`turns_seq`, `turns_model`; texts alone follow `turns_text_seq`, so an instance without a
//! model never hides work from one with it): the operations after it are pending, and so are
//! all of them when the configured model changed, so switching models re-embeds everything while search
//! keeps to vectors of the configured model. A failed embedding leaves the cursor where it was
//! and the session waits for a retry time; BM25 finds its operations meanwhile. Vectors made
//! but not stored (Neo4j refused the pass's write) wait in [`crate::recall::unstored`], and
//! this instance's pass that reads them next stores them without embedding their texts again. Each vector
//! is stored with its signature (`embed::signature`); those stored before signatures were
//! kept get theirs from one pass over the operations ([`Signing`]); texts stored while their
//! bound was shorter are made whole, and their operations embedded again, by another
//! ([`Retexting`]). Both take a step in every slice of the indexer's loop (`Sweep`).
//! [`run_once`] is one pass; `recall::index::run` calls it in its loop. With a model, a pass
//! claims its sessions before it embeds them (`graph::sessions::claim_for_index`), so
//! replicas on one database share the queue instead of each embedding all of it.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::domain::{compounds, passages, turn_text};
use crate::embed::{signature, Embedder};
use crate::graph::turns::{
    self as store_turns, Cursor, PassageWrite, TextWrite, Texted, TurnWrite, WorkSession,
};
use crate::graph::{sessions, SessionKey, Store, StoreResult};
use crate::recall::unstored::{self, UNSTORED};
use crate::recall::{held_vectors, speaker};

/// Sessions per pass; also the fewest texts a pass with a model embeds, so each session
/// queued gets a share however small the embedder's batches (a share left over goes to the
/// first sessions of the queue, which would otherwise keep it while they have more).
pub const SESSIONS_PER_PASS: usize = 50;
/// The embedder's batches of texts a pass embeds: about what a pass of four batches of
/// operations embedded when it counted operations (LoCoMo's turns bring three or four texts
/// each with their passages); a pass costs a few Neo4j round trips besides, and half that
/// indexed LoCoMo about 15 % slower.
const BATCHES_PER_PASS: usize = 16;
/// Operations of one session per pass, at most.
pub const OPS_PER_SESSION: usize = 200;
/// Operations of one session per pass, at least.
const MIN_OPS_PER_SESSION: usize = 16;
/// Sessions the last pass found queued.
static QUEUED: AtomicUsize = AtomicUsize::new(0);

/// How many operations of each queued session a pass reads: all it could embed when sessions
/// queue few, about twice each one's fair share of `budget` texts when `queued` (the last
/// pass's count) share it — a backlog of 50 sessions is not read 200 operations deep, content
/// and all, to embed two or three of each. Without an embedder (`budget` 0) texts alone are
/// made, which costs little: [`OPS_PER_SESSION`].
fn ops_to_read(budget: usize, queued: usize) -> usize {
    if budget == 0 {
        return OPS_PER_SESSION;
    }
    (2 * budget)
        .div_ceil(queued.max(1))
        .clamp(MIN_OPS_PER_SESSION, OPS_PER_SESSION)
}
/// Memories (and sessions) given a search text per backfill step.
const TEXT_BACKFILL_BATCH: usize = 500;
/// The model recorded while no embedder is configured (texts only).
pub const NO_MODEL: &str = "";

/// The model whose vectors search compares and the indexer makes.
pub fn model_of(embedder: Option<&Embedder>) -> &str {
    embedder.map_or(NO_MODEL, |e| e.model())
}

/// What one pass did.
#[derive(Debug, Default, PartialEq)]
pub struct Pass {
    /// Operations the cursors moved over.
    pub processed: usize,
    /// Search texts written (operations captured before the turn index).
    pub texts: usize,
    pub embedded: usize,
    /// Passage vectors made.
    pub passages: usize,
    pub failed: usize,
    /// Operations passed over: the embedder refused their texts while it embedded the rest.
    pub refused: usize,
    /// More work was left than one pass takes.
    pub more: bool,
}

/// The search text of an operation read by the indexer (when it was stored without one).
pub fn text_of(op: &store_turns::WorkOp) -> Option<String> {
    op.fields.operation_text()
}

/// What of `text` (the search text of `op`) its vector is made from: a message without the
/// speaker label it opens with ([`speaker::unlabelled`]), anything else whole.
fn meaning<'a>(op: &store_turns::WorkOp, text: &'a str) -> &'a str {
    match op.fields.kind.as_deref() {
        Some("message") => speaker::unlabelled(text),
        _ => text,
    }
}

/// Where an embedded text's vector goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    /// The operation's own vector (index into `writes`).
    Vector(usize),
    /// One of its passages' (index into `passages`).
    Passage(usize),
}

/// What a pass will write, and which texts it embeds.
#[derive(Default)]
struct Plan {
    writes: Vec<TurnWrite>,
    passages: Vec<PassageWrite>,
    embed: Vec<(Slot, String)>,
    /// Operations the texts of `embed` are of.
    embedding: usize,
    /// (session index, processed up to seq)
    cursors: Vec<(usize, i64)>,
    more: bool,
}

impl Plan {
    /// The id of the operation a text to embed is of.
    fn owner(&self, slot: Slot) -> &str {
        match slot {
            Slot::Vector(wi) => &self.writes[wi].id,
            Slot::Passage(pi) => &self.passages[pi].id,
        }
    }
}

/// What one operation needs.
struct Need {
    text: Option<String>,
    /// Its text must be stored (captured before the turn index).
    missing: bool,
    /// A vector of the model.
    vector: bool,
    /// Its passages, when the model's are wanted (made again with the vector, or added to an
    /// older one); empty for a text of one passage.
    passages: Option<Vec<String>>,
}

impl Need {
    /// How many texts it asks the model for: its own, and one per passage.
    fn texts(&self) -> usize {
        usize::from(self.vector) + self.passages.as_ref().map_or(0, Vec::len)
    }
}

/// What `op` needs with `model`.
fn needs(op: &store_turns::WorkOp, model: Option<&str>) -> Need {
    let (text, missing) = match &op.search_text {
        Some(t) => (Some(t.clone()), false),
        None => {
            let t = text_of(op);
            let missing = t.is_some();
            (t, missing)
        }
    };
    let (vector, passages) = match (model, &text) {
        (Some(m), Some(t)) => {
            let vector = op.embedding_model.as_deref() != Some(m);
            let wanted = vector || op.passages_model.as_deref() != Some(m);
            (vector, wanted.then(|| passages::of(meaning(op, t))))
        }
        _ => (false, None),
    };
    Need {
        text,
        missing,
        vector,
        passages,
    }
}

/// Shares `budget` texts between sessions wanting `wants[i]` each, max-min fairly: every
/// session gets as many as the others unless it wants fewer (one long session cannot hold
/// up the short ones queued with it).
fn fair_shares(wants: &[usize], budget: usize) -> Vec<usize> {
    let mut out = vec![0usize; wants.len()];
    let mut left = budget;
    loop {
        let open: Vec<usize> = (0..wants.len()).filter(|&i| out[i] < wants[i]).collect();
        if open.is_empty() || left == 0 {
            return out;
        }
        let each = (left / open.len()).max(1);
        for i in open {
            let give = each.min(wants[i] - out[i]).min(left);
            out[i] += give;
            left -= give;
        }
    }
}

/// What a pass over `work` does with `model`: at most about `budget` texts embedded, shared
/// fairly between the sessions (an operation's texts are its own and its passages'; a session's
/// first operation is taken whatever it costs, so no text is too long ever to be reached).
/// `per_session` is how many operations of each session the pass read: a session that gave
/// as many may have more.
fn plan(work: &[WorkSession], model: Option<&str>, budget: usize, per_session: usize) -> Plan {
    let mut p = Plan {
        more: work.len() >= SESSIONS_PER_PASS,
        ..Plan::default()
    };
    let needed: Vec<Vec<Need>> = work
        .iter()
        .map(|s| s.ops.iter().map(|op| needs(op, model)).collect())
        .collect();
    let wants: Vec<usize> = needed
        .iter()
        .map(|ops| ops.iter().map(Need::texts).sum())
        .collect();
    let shares = fair_shares(&wants, budget);
    for ((si, s), needs) in work.iter().enumerate().zip(needed) {
        let mut upto = if s.ops.is_empty() {
            s.last_seq.max(s.after)
        } else {
            s.after
        };
        let mut cut = false;
        let mut texts = 0;
        for (op, need) in s.ops.iter().zip(needs) {
            let cost = need.texts();
            if cost > 0 && (shares[si] == 0 || (texts > 0 && texts + cost > shares[si])) {
                cut = true;
                break;
            }
            if cost > 0 {
                texts += cost;
                p.embedding += 1;
            }
            if need.missing || need.vector {
                p.writes.push(TurnWrite {
                    id: op.id.clone(),
                    text: if need.missing {
                        need.text.clone()
                    } else {
                        None
                    },
                    parts: need
                        .text
                        .as_deref()
                        .filter(|_| need.missing)
                        .and_then(compounds::parts),
                    vector: None,
                    resets: s.resets,
                });
                if need.vector {
                    let slot = Slot::Vector(p.writes.len() - 1);
                    let text = need.text.as_deref().unwrap_or_default();
                    p.embed.push((slot, meaning(op, text).to_string()));
                }
            }
            if let Some(parts) = need.passages {
                p.passages.push(PassageWrite {
                    id: op.id.clone(),
                    vectors: Vec::new(),
                    resets: s.resets,
                });
                let slot = Slot::Passage(p.passages.len() - 1);
                p.embed.extend(parts.into_iter().map(|text| (slot, text)));
            }
            upto = op.seq;
        }
        if cut || s.ops.len() >= per_session {
            p.more = true;
        }
        p.cursors.push((si, upto));
    }
    p
}

/// Embeds texts shortest first, so each request's texts are of a like length, and returns
/// the vectors in the texts' order.
async fn embed_by_length(
    embedder: &Embedder,
    texts: &[(Slot, String)],
) -> Result<Vec<Vec<f32>>, crate::embed::EmbedError> {
    let mut order: Vec<usize> = (0..texts.len()).collect();
    order.sort_by_key(|&i| texts[i].1.len());
    let sorted: Vec<String> = order.iter().map(|&i| texts[i].1.clone()).collect();
    let vectors = embedder.embed(&sorted).await?;
    let mut out = vec![Vec::new(); texts.len()];
    for (v, &i) in vectors.into_iter().zip(&order) {
        out[i] = v;
    }
    Ok(out)
}

/// [`embed_by_length`], and when that fails for several operations, each operation's texts
/// (its own and its passages', `owners`) on their own: one text an endpoint refuses (too long
/// for its window, say) does not hold back every session of the pass for ever. An operation
/// whose texts fail while another's are embedded is `None`; when the first [`OUTAGE_TRIES`]
/// operations tried all fail, the endpoint is taken to be down and the first error returned.
async fn embed_isolating(
    embedder: &Embedder,
    texts: &[(Slot, String)],
    owners: &[&str],
) -> Result<Vec<Option<Vec<f32>>>, crate::embed::EmbedError> {
    let first = match embed_by_length(embedder, texts).await {
        Ok(vectors) => return Ok(vectors.into_iter().map(Some).collect()),
        Err(err) => err,
    };
    let mut groups: Vec<(&str, Vec<usize>)> = Vec::new();
    for (i, owner) in owners.iter().enumerate() {
        match groups.iter_mut().find(|(o, _)| o == owner) {
            Some((_, members)) => members.push(i),
            None => groups.push((owner, vec![i])),
        }
    }
    if groups.len() < 2 {
        return Err(first);
    }
    let mut out: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
    let (mut embedded, mut failed) = (0, 0);
    for (_, members) in &groups {
        let part: Vec<(Slot, String)> = members.iter().map(|&i| texts[i].clone()).collect();
        match embed_by_length(embedder, &part).await {
            Ok(vectors) => {
                embedded += 1;
                for (&i, v) in members.iter().zip(vectors) {
                    out[i] = Some(v);
                }
            }
            Err(err) => {
                failed += 1;
                tracing::debug!(error = %err, "an operation's texts failed on their own");
                if embedded == 0 && failed >= OUTAGE_TRIES {
                    return Err(first);
                }
            }
        }
    }
    if embedded == 0 {
        return Err(first);
    }
    Ok(out)
}

/// Operations tried on their own, all failing, that mean the embedder is down rather than
/// refusing one text.
const OUTAGE_TRIES: usize = 2;

/// What a pass stored, as the projects held in memory take it ([`held_vectors::stored`]).
fn held(work: &[WorkSession], p: &Plan) -> Vec<held_vectors::Stored> {
    let places: HashMap<&str, (&WorkSession, &store_turns::WorkOp)> = work
        .iter()
        .flat_map(|s| s.ops.iter().map(move |op| (op.id.as_str(), (s, op))))
        .collect();
    let mut out: HashMap<&str, held_vectors::Stored> = HashMap::new();
    for w in &p.writes {
        let (Some(v), Some((s, op))) = (&w.vector, places.get(w.id.as_str())) else {
            continue;
        };
        out.insert(&op.id, stored_of(s, op, signature::of(v), None));
    }
    for pw in &p.passages {
        let Some((s, op)) = places.get(pw.id.as_str()) else {
            continue;
        };
        let sigs: Vec<Vec<u8>> = pw.vectors.iter().filter_map(|v| signature::of(v)).collect();
        out.entry(&op.id)
            .or_insert_with(|| stored_of(s, op, None, None))
            .passages = Some(sigs);
    }
    out.into_values().collect()
}

fn stored_of(
    s: &WorkSession,
    op: &store_turns::WorkOp,
    sig: Option<Vec<u8>>,
    passages: Option<Vec<Vec<u8>>>,
) -> held_vectors::Stored {
    held_vectors::Stored {
        project: s.project.clone(),
        session_id: s.id.clone(),
        id: op.id.clone(),
        kind: op.fields.kind.clone().unwrap_or_default(),
        sig,
        passages,
    }
}

/// One pass over up to [`SESSIONS_PER_PASS`] pending sessions, as `holder` (this indexer,
/// among the replicas on the database): with a model it claims them first and works on
/// those it got, so replicas embed each session once.
pub async fn run_once(
    store: &Store,
    embedder: Option<&Embedder>,
    holder: &str,
) -> StoreResult<Pass> {
    let model = model_of(embedder);
    let budget = embedder.map_or(0, |e| {
        (e.batch().max(1) * BATCHES_PER_PASS).max(SESSIONS_PER_PASS)
    });
    let per_session = ops_to_read(budget, QUEUED.load(Ordering::Relaxed));
    let mut work = store_turns::work(store, model, holder, SESSIONS_PER_PASS, per_session).await?;
    QUEUED.store(work.len(), Ordering::Relaxed);
    if embedder.is_some() && !work.is_empty() {
        let keys: Vec<SessionKey> = work.iter().map(WorkSession::key).collect();
        let held = sessions::claim_for_index(store, holder, &keys).await?;
        work.retain(|s| held.contains(&s.id));
    }
    if work.is_empty() {
        return Ok(Pass::default());
    }
    let mut p = plan(&work, embedder.map(|e| e.model()), budget, per_session);
    let cursors: Vec<Cursor> = p
        .cursors
        .iter()
        .map(|&(si, seq)| Cursor {
            id: &work[si].id,
            project: &work[si].project,
            from: work[si].after,
            seq,
            resets: work[si].resets,
        })
        .collect();
    let mut out = Pass {
        more: p.more,
        texts: p.writes.iter().filter(|w| w.text.is_some()).count(),
        ..Pass::default()
    };
    // What this pass embedded (or found kept), by its text's place in `p.embed`: kept again
    // if it cannot be stored.
    let mut made: Vec<(usize, Vec<f32>)> = Vec::new();
    if let (Some(embedder), false) = (embedder, p.embed.is_empty()) {
        let mut kept = UNSTORED.take(model, p.embed.iter().map(|(_, t)| t.as_str()));
        // An operation's texts are embedded together, so a refusal passes over all of them:
        // one whose texts were not all kept is embedded whole.
        let partial: HashSet<&str> = p
            .embed
            .iter()
            .zip(&kept)
            .filter(|(_, k)| k.is_none())
            .map(|((slot, _), _)| p.owner(*slot))
            .collect();
        for ((slot, _), k) in p.embed.iter().zip(kept.iter_mut()) {
            if partial.contains(p.owner(*slot)) {
                *k = None;
            }
        }
        let wanted: Vec<usize> = (0..kept.len()).filter(|&i| kept[i].is_none()).collect();
        unstored::reused(kept.len() - wanted.len());
        let texts: Vec<(Slot, String)> = wanted.iter().map(|&i| p.embed[i].clone()).collect();
        let owners: Vec<&str> = texts.iter().map(|(slot, _)| p.owner(*slot)).collect();
        let embedded = if texts.is_empty() {
            Ok(Vec::new())
        } else {
            embed_isolating(embedder, &texts, &owners).await
        };
        match embedded {
            Ok(vectors) => {
                let mut fresh = vectors.into_iter();
                let vectors = kept
                    .into_iter()
                    .map(|k| k.or_else(|| fresh.next().flatten()));
                let mut refused: HashSet<String> = HashSet::new();
                for (i, ((slot, _), v)) in p.embed.iter().zip(vectors).enumerate() {
                    if let Some(v) = &v {
                        made.push((i, v.clone()));
                    }
                    match (*slot, v) {
                        (Slot::Vector(wi), Some(v)) => {
                            p.writes[wi].vector = Some(v);
                            out.embedded += 1;
                        }
                        (Slot::Passage(pi), Some(v)) => {
                            p.passages[pi].vectors.push(v);
                            out.passages += 1;
                        }
                        (slot, None) => {
                            refused.insert(p.owner(slot).to_string());
                        }
                    }
                }
                if !refused.is_empty() {
                    // Found by their words only: passed over, so the rest of their sessions
                    // is embedded.
                    p.passages.retain(|pw| !refused.contains(&pw.id));
                    tracing::warn!(operations = ?refused, "the embedder refused these operations' texts while it embedded the rest; they are passed over and found by their words only");
                    metrics::counter!("cairn_turn_embeddings_refused_total")
                        .increment(refused.len() as u64);
                    out.refused = refused.len();
                }
            }
            Err(err) => {
                // What was found kept waits for the next pass with the rest.
                let found = p.embed.iter().zip(kept);
                UNSTORED.keep(model, found.filter_map(|((_, t), v)| Some((t.clone(), v?))));
                let operations = p.embedding;
                tracing::warn!(error = %err, operations, "embedding operations failed; they stay pending and are retried later (found by their words meanwhile)");
                metrics::counter!("cairn_turn_embeddings_failed_total")
                    .increment(operations as u64);
                store_turns::store_turns(store, model, embedder.dimensions(), &p.writes).await?;
                store_turns::failed(store, holder, &cursors, embedder.retry_ms()).await?;
                out.failed = operations;
                return Ok(out);
            }
        }
    }
    let dim = embedder.map_or(0, |e| e.dimensions());
    let written = async {
        store_turns::store_turns(store, model, dim, &p.writes).await?;
        store_turns::store_passages(store, model, dim, &p.passages).await?;
        held_vectors::stored(model, &held(&work, &p));
        store_turns::advance(store, model, holder, &cursors).await
    };
    if let Err(err) = written.await {
        // Not stored: these sessions wait before they are read again, as after a failed
        // embedding, rather than being read again at once for as long as the cause lasts.
        // Their vectors wait with them (`recall::unstored`): the pass here that reads them
        // next stores them as made.
        tracing::warn!(error = %err, sessions = cursors.len(), vectors = made.len(), "storing embedded operations failed; they stay pending and are retried later, their vectors kept for the next pass");
        let texts = made.into_iter().map(|(i, v)| (p.embed[i].1.clone(), v));
        UNSTORED.keep(model, texts);
        let wait = embedder.map_or(crate::embed::RETRY_MS as i64, Embedder::retry_ms);
        let _ = store_turns::failed(store, holder, &cursors, wait).await;
        return Err(err);
    }
    out.processed = p
        .cursors
        .iter()
        .map(|&(si, seq)| (seq - work[si].after).max(0) as usize)
        .sum();
    metrics::counter!("cairn_turn_index_operations_total").increment(out.processed as u64);
    metrics::counter!("cairn_turn_embeddings_stored_total").increment(out.embedded as u64);
    metrics::counter!("cairn_turn_passages_stored_total").increment(out.passages as u64);
    Ok(out)
}

/// Queues sessions not processed with the configured model (an upgrade, a new model) and
/// gives memories and closed sessions written before turn search their search text.
pub async fn backfill(store: &Store, embedder: Option<&Embedder>) -> StoreResult<()> {
    let model = model_of(embedder);
    let mut pass = store_turns::backfill(store, model).await?;
    // Cursors name the model with the passage scheme; one naming the same model alone was
    // moved by a cairn from before passages were kept (an upgrade), not by another model.
    let others: std::collections::BTreeSet<String> = pass
        .models
        .iter()
        .map(|m| m.trim_end_matches(store_turns::PASSAGES_SCHEME).to_string())
        .filter(|m| m != model)
        .collect();
    let upgraded = others.len() < pass.models.len();
    pass.models = others;
    if upgraded {
        tracing::info!(
            model = %model,
            "turn index: sessions embedded before passages were kept are queued to have their long operations' passages embedded; progress in cairn_turn_index_pending_operations"
        );
    }
    if !pass.models.is_empty() {
        // The last instance started wins the vectors: two with different models on one
        // database re-embed each other's sessions for as long as both run.
        tracing::warn!(
            sessions = pass.sessions,
            operations = pass.operations,
            model = %model,
            other_models = ?pass.models,
            "turn index: sessions another embedding model embedded are queued to be embedded again; if a cairn with that model still runs on this database, the two will keep re-embedding each other's sessions: give every instance the same CAIRN_EMBED* settings"
        );
    } else if pass.sessions > 0 {
        tracing::info!(
            sessions = pass.sessions,
            operations = pass.operations,
            model = %model,
            "turn index: sessions queued (new index, upgrade, or vectors newly turned on); progress in cairn_turn_index_pending_operations"
        );
    }
    loop {
        let missing = store_turns::missing_texts(store, TEXT_BACKFILL_BATCH).await?;
        if missing.is_empty() {
            return Ok(());
        }
        let rows: Vec<TextWrite> = missing
            .iter()
            .map(|m| {
                let text = text_made(&m.label, &m.fields, None, &m.next_steps).unwrap_or_default();
                TextWrite {
                    label: &m.label,
                    id: &m.id,
                    parts: compounds::parts(&text),
                    text,
                }
            })
            .collect();
        store_turns::store_texts(store, &rows).await?;
        if missing.len() < TEXT_BACKFILL_BATCH {
            return Ok(());
        }
    }
}

/// Operations read per signing step.
const SIGN_PAGE: usize = 1_000;

/// Gives the vectors stored before signatures were kept theirs, one page of operations (by
/// id) per [`Signing::step`], from the first operation to the last; the database records a
/// finished pass, and the indexer makes one only until then ([`Signing::unless_done`]).
/// Search reads an unsigned vector whole meanwhile.
#[derive(Debug, Default)]
pub struct Signing {
    /// The last operation id read.
    after: String,
    pub done: bool,
    /// Operations read, and vectors signed.
    pub scanned: u64,
    pub signed: u64,
}

impl Signing {
    /// A pass over every operation, whether or not one finished before.
    pub fn pass() -> Self {
        Self::default()
    }

    /// The indexer's pass: none when one finished on this database before.
    pub async fn unless_done(store: &Store) -> StoreResult<Self> {
        Ok(Self {
            done: store_turns::signed(store).await?,
            ..Self::default()
        })
    }

    /// Signs the vectors of the next page of operations; after the last, records the pass
    /// as finished.
    pub async fn step(&mut self, store: &Store) -> StoreResult<()> {
        if self.done {
            return Ok(());
        }
        let page = store_turns::unsigned(store, &self.after, SIGN_PAGE).await?;
        let signed = store_turns::sign(store, &page.unsigned).await?;
        self.scanned += page.scanned.max(0) as u64;
        self.signed += signed as u64;
        metrics::counter!("cairn_turn_signatures_stored_total").increment(signed as u64);
        match page.last {
            Some(last) if page.scanned as usize >= SIGN_PAGE => self.after = last,
            _ => {
                store_turns::set_signed(store).await?;
                self.done = true;
            }
        }
        Ok(())
    }
}

/// A one-off pass over stored nodes that the indexer takes a step at a time in what its
/// slice leaves ([`Signing`], [`Retexting`]).
pub(crate) trait Sweep {
    fn done(&self) -> bool;
    /// Nodes changed so far.
    fn changed(&self) -> u64;
    async fn step(&mut self, store: &Store) -> StoreResult<()>;
}

impl Sweep for Signing {
    fn done(&self) -> bool {
        self.done
    }
    fn changed(&self) -> u64 {
        self.signed
    }
    async fn step(&mut self, store: &Store) -> StoreResult<()> {
        Signing::step(self, store).await
    }
}

impl Sweep for Retexting {
    fn done(&self) -> bool {
        self.done
    }
    fn changed(&self) -> u64 {
        self.rewritten + self.parted
    }
    async fn step(&mut self, store: &Store) -> StoreResult<()> {
        Retexting::step(self, store).await
    }
}

/// The bound search texts were cut at before the bound in force was recorded.
pub const FIRST_TEXT_BOUND: usize = 2_000;
/// Nodes read per re-texting step.
const TEXT_PAGE: usize = 1_000;

/// The search text a node of `label` (`operation`, `memory`, `session`) has today, from what
/// it is made of: for an operation recording a decision, the decision; else its own fields
/// (a session's: its summary and `next_steps`).
fn text_made(
    label: &str,
    fields: &store_turns::TextFields,
    decision: Option<&store_turns::DecisionText>,
    next_steps: &[String],
) -> Option<String> {
    match (label, decision) {
        ("operation", Some(d)) => Some(turn_text::decision(
            d.subject.as_deref().unwrap_or_default(),
            d.choice.as_deref().unwrap_or_default(),
            d.rationale.as_deref().unwrap_or_default(),
            d.alternatives.as_deref().unwrap_or_default(),
        )),
        ("operation", None) => fields.operation_text(),
        ("memory", _) => turn_text::memory(
            fields.kind.as_deref().unwrap_or("memory"),
            fields.content.as_deref().unwrap_or_default(),
        ),
        ("session", _) => turn_text::session_summary(fields.summary.as_deref(), next_steps),
        _ => None,
    }
}

/// What a stored search text is made of today (`text_made`).
pub fn text_now(row: &store_turns::StoredText) -> Option<String> {
    text_made(
        &row.label,
        &row.fields,
        row.decision.as_ref(),
        &row.next_steps,
    )
}

/// Makes whole again the search texts stored while their bound was shorter than
/// [`turn_text::MAX_CHARS`] (a long turn's closing words were not indexed): one page of
/// operations, then memories, then sessions (by id) per [`Retexting::step`]; only texts at
/// least as long as the old bound are compared with what their fields make today, and only
/// those that differ are written. An operation written again is embedded again by the turn
/// indexer, its words find it at once. When the parts of identifiers were stored by another
/// form, or not at all (`domain::compounds::FORM`), the same pass parts every text again,
/// writing only the parts that differ. When the texts were made in another form
/// (`domain::turn_text::FORM`: a tool call's outcome joined its text), every text is compared,
/// whatever its length. The database records the bound and the forms once a pass is done.
#[derive(Debug)]
pub struct Retexting {
    /// Texts at least this long may have been cut.
    from: usize,
    /// Whether every text's identifiers are parted again (`domain::compounds`), whatever
    /// its length: parts were not stored, or by another form.
    parts: bool,
    /// Index into [`Texted::ALL`] of the label being read.
    label: usize,
    after: String,
    pub done: bool,
    /// Nodes read, texts written again, and texts whose parts alone were written.
    pub scanned: u64,
    pub rewritten: u64,
    pub parted: u64,
}

impl Retexting {
    /// A pass over every text at least `from` characters long, parting every text's
    /// identifiers too, whatever was recorded.
    pub fn pass(from: usize) -> Self {
        Self {
            from,
            parts: true,
            label: 0,
            after: String::new(),
            done: false,
            scanned: 0,
            rewritten: 0,
            parted: 0,
        }
    }

    /// The indexer's pass: none when the recorded bound and forms are today's. Texts made in
    /// another form (`domain::turn_text::FORM`) are all compared, whatever their length.
    pub async fn unless_done(store: &Store) -> StoreResult<Self> {
        let recorded = store_turns::texts_done(store).await?;
        let bound = recorded
            .bound
            .map_or(FIRST_TEXT_BOUND, |b| b.max(0) as usize);
        let parts = recorded.parts != Some(compounds::FORM);
        let form = recorded.form != Some(turn_text::FORM);
        let from = if form {
            0
        } else {
            bound.min(turn_text::MAX_CHARS)
        };
        Ok(Self {
            done: bound == turn_text::MAX_CHARS && !parts && !form,
            parts,
            ..Self::pass(from)
        })
    }

    /// The bound texts were cut at, when a pass is due.
    pub fn from(&self) -> usize {
        self.from
    }

    /// Reads the next page and writes again the texts that changed; after the last page of
    /// the last label, records today's bound.
    pub async fn step(&mut self, store: &Store) -> StoreResult<()> {
        let Some(&label) = Texted::ALL.get(self.label).filter(|_| !self.done) else {
            return Ok(());
        };
        let page =
            store_turns::stored_texts(store, label, &self.after, TEXT_PAGE, self.from, self.parts)
                .await?;
        let mut rewrites: Vec<store_turns::Rewrite> = Vec::new();
        let mut parted: Vec<store_turns::Parted> = Vec::new();
        for row in &page.rows {
            match text_now(row).filter(|t| row.cut && *t != row.search_text) {
                Some(text) => rewrites.push(store_turns::Rewrite {
                    eid: &row.eid,
                    was: &row.search_text,
                    parts: compounds::parts(&text),
                    text,
                }),
                None => {
                    let parts = compounds::parts(&row.search_text);
                    if self.parts && parts != row.search_parts {
                        parted.push(store_turns::Parted {
                            eid: &row.eid,
                            was: &row.search_text,
                            parts,
                        });
                    }
                }
            }
        }
        store_turns::rewrite_texts(store, &rewrites).await?;
        store_turns::store_parts(store, &parted).await?;
        self.scanned += page.scanned.max(0) as u64;
        self.rewritten += rewrites.len() as u64;
        self.parted += parted.len() as u64;
        metrics::counter!("cairn_turn_texts_rewritten_total").increment(rewrites.len() as u64);
        match page.last {
            Some(last) if page.scanned as usize >= TEXT_PAGE => self.after = last,
            _ => {
                self.label += 1;
                self.after.clear();
                if self.label == Texted::ALL.len() {
                    let done = store_turns::TextsDone {
                        bound: Some(turn_text::MAX_CHARS as i64),
                        parts: Some(compounds::FORM),
                        form: Some(turn_text::FORM),
                    };
                    store_turns::set_texts_done(store, done).await?;
                    self.done = true;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::turns::{TextFields, WorkOp};

    fn op(seq: i64, kind: &str, text: Option<&str>, model: Option<&str>) -> WorkOp {
        WorkOp {
            id: format!("o{seq}"),
            seq,
            fields: TextFields {
                kind: Some(kind.into()),
                summary: Some(format!("summary {seq}")),
                ..Default::default()
            },
            search_text: text.map(str::to_string),
            embedding_model: model.map(str::to_string),
            ..Default::default()
        }
    }

    fn session(after: i64, ops: Vec<WorkOp>) -> WorkSession {
        WorkSession {
            id: "s".into(),
            project: "p".into(),
            after,
            last_seq: ops.last().map_or(after, |o| o.seq),
            resets: 0,
            ops,
        }
    }

    #[test]
    fn texts_only_without_an_embedder() {
        let work = [session(
            0,
            vec![
                op(1, "write", None, None),
                op(2, "read", None, None),
                op(3, "message", Some("hi"), None),
            ],
        )];
        let p = plan(&work, None, 0, OPS_PER_SESSION);
        // Only the write lacked a text worth having; a read has none.
        assert_eq!(p.writes.len(), 1);
        assert_eq!(p.writes[0].text.as_deref(), Some("summary 1"));
        assert!(p.embed.is_empty());
        assert_eq!(p.cursors, vec![(0, 3)]);
        assert!(!p.more);
    }

    #[test]
    fn a_message_is_embedded_without_its_speaker_label_and_stored_whole() {
        let work = [session(
            0,
            vec![
                op(
                    1,
                    "message",
                    Some("Caroline: I joined a support group."),
                    None,
                ),
                op(2, "tool_call", Some("Error: the build failed"), None),
                op(3, "message", Some("user: fix the parser"), None),
            ],
        )];
        let p = plan(&work, Some("m"), 10, OPS_PER_SESSION);
        let embedded: Vec<&str> = p.embed.iter().map(|(_, t)| t.as_str()).collect();
        assert_eq!(
            embedded,
            [
                "I joined a support group.",
                "Error: the build failed",
                "user: fix the parser"
            ]
        );
        // Its words keep the label: the speaker is still found by name.
        let mut unstored = op(4, "message", None, None);
        unstored.fields.content = Some("Melanie: I went camping.".into());
        let p = plan(
            &[session(3, vec![unstored])],
            Some("m"),
            10,
            OPS_PER_SESSION,
        );
        assert_eq!(
            p.writes[0].text.as_deref(),
            Some("Melanie: I went camping.")
        );
        assert_eq!(p.embed[0].1, "I went camping.");
    }

    #[test]
    fn vectors_of_another_model_are_redone_within_the_budget() {
        let work = [session(
            0,
            vec![
                op(1, "message", Some("a"), Some("m")),
                op(2, "message", Some("b"), Some("old")),
                op(3, "message", Some("c"), None),
                op(4, "message", Some("d"), None),
            ],
        )];
        let p = plan(&work, Some("m"), 2, OPS_PER_SESSION);
        let embedded: Vec<&str> = p.embed.iter().map(|(_, t)| t.as_str()).collect();
        assert_eq!(embedded, ["b", "c"]);
        // The cursor stops before the operation the budget left out.
        assert_eq!(p.cursors, vec![(0, 3)]);
        assert!(p.more);
    }

    #[test]
    fn a_long_session_shares_the_pass_with_the_short_ones_queued_after_it() {
        let long: Vec<WorkOp> = (1..=100)
            .map(|i| op(i, "message", Some("long"), None))
            .collect();
        let short = |id: &str| WorkSession {
            id: id.into(),
            ..session(
                0,
                (1..=3).map(|i| op(i, "message", Some("s"), None)).collect(),
            )
        };
        let work = [session(0, long), short("a"), short("b")];
        let p = plan(&work, Some("m"), 20, OPS_PER_SESSION);
        assert_eq!(p.embed.len(), 20);
        // The short sessions are done; the long one got what they left and stays pending.
        assert_eq!(p.cursors, vec![(0, 14), (1, 3), (2, 3)]);
        assert!(p.more);
        assert_eq!(fair_shares(&[100, 3, 3], 20), vec![14, 3, 3]);
        assert_eq!(fair_shares(&[5, 5], 3), vec![2, 1]);
        assert_eq!(fair_shares(&[0, 9], 4), vec![0, 4]);
    }

    #[test]
    fn long_texts_get_passages_with_their_vector_and_older_vectors_get_them_alone() {
        let long = "The nightly backup job copies every table to the snapshot store. \
                    Restoring from those snapshots took four hours last week.";
        let mut done = op(3, "message", Some(long), Some("m"));
        done.passages_model = Some("m".into());
        let work = [session(
            0,
            vec![
                op(1, "message", Some(long), None),
                op(2, "message", Some(long), Some("m")),
                done,
                op(4, "message", Some("short"), None),
            ],
        )];
        let p = plan(&work, Some("m"), 10, OPS_PER_SESSION);
        let slots: Vec<Slot> = p.embed.iter().map(|(s, _)| *s).collect();
        // The new operation: its vector and two passages; the one embedded before passages
        // were kept: its passages alone; the short one: its vector, and no passage.
        assert_eq!(
            slots,
            [
                Slot::Vector(0),
                Slot::Passage(0),
                Slot::Passage(0),
                Slot::Passage(1),
                Slot::Passage(1),
                Slot::Vector(1),
            ]
        );
        let ids: Vec<&str> = p.passages.iter().map(|w| w.id.as_str()).collect();
        // The short one is recorded as having none.
        assert_eq!(ids, ["o1", "o2", "o4"]);
        assert_eq!(p.embedding, 3);
        assert_eq!(
            p.embed[1].1,
            "The nightly backup job copies every table to the snapshot store."
        );
        assert_eq!(p.cursors, vec![(0, 4)]);
    }

    #[test]
    fn the_budget_counts_texts_and_a_sessions_first_operation_is_taken_whatever_it_costs() {
        let long = "The nightly backup job copies every table to the snapshot store. \
                    Restoring from those snapshots took four hours last week.";
        // Each long operation asks for three texts: its vector and two passages.
        let ops = |n: i64| {
            (1..=n)
                .map(|i| op(i, "message", Some(long), None))
                .collect()
        };
        let p = plan(&[session(0, ops(5))], Some("m"), 6, OPS_PER_SESSION);
        assert_eq!(p.embed.len(), 6, "two operations, not six");
        assert_eq!(
            (p.embedding, p.cursors.clone(), p.more),
            (2, vec![(0, 2)], true)
        );
        // A share smaller than one operation's texts still takes that operation.
        let p = plan(&[session(0, ops(2))], Some("m"), 1, OPS_PER_SESSION);
        assert_eq!((p.embed.len(), p.cursors.clone()), (3, vec![(0, 1)]));
        // Two sessions with one text of budget each: each moves by one operation.
        let short = |id: &str| WorkSession {
            id: id.into(),
            ..session(0, ops(3))
        };
        let p = plan(&[short("a"), short("b")], Some("m"), 2, OPS_PER_SESSION);
        assert_eq!(p.cursors, vec![(0, 1), (1, 1)]);
    }

    #[test]
    fn a_backlog_is_read_as_deep_as_its_shares_of_the_budget() {
        assert_eq!(ops_to_read(0, 50), OPS_PER_SESSION, "texts alone");
        assert_eq!(ops_to_read(128, 0), OPS_PER_SESSION);
        assert_eq!(ops_to_read(128, 1), OPS_PER_SESSION);
        assert_eq!(ops_to_read(128, 4), 64);
        assert_eq!(ops_to_read(128, 50), MIN_OPS_PER_SESSION);
        // A session that gave all the pass read may have more; one that gave fewer is done.
        let work = [session(
            0,
            (1..=3).map(|i| op(i, "message", Some("s"), None)).collect(),
        )];
        assert!(plan(&work, Some("m"), 10, 3).more);
        assert!(!plan(&work, Some("m"), 10, 4).more);
    }

    #[test]
    fn a_session_without_operations_moves_to_its_end() {
        let work = [WorkSession {
            id: "s".into(),
            project: "p".into(),
            after: 0,
            last_seq: 7,
            resets: 0,
            ops: vec![],
        }];
        assert_eq!(
            plan(&work, Some("m"), 4, OPS_PER_SESSION).cursors,
            vec![(0, 7)]
        );
    }
}
