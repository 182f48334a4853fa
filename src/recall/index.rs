//! The search indexer: keeps each session's search document (task, summary, next steps,
//! decisions, files, the telling operations — bounded) and its embedding up to date, in the
//! background. The capture writer only marks sessions dirty (`search_dirty`, `search_rev`);
//! [`run_once`] rebuilds dirty documents in batches and embeds pending ones. A failed
//! embedding stays pending with a retry time, so it is retried later, never lost. The same
//! loop drives the turn indexer ([`turn_index`]: operations' search texts and vectors) while
//! capture has nothing waiting, and reports its lag and throughput in `/metrics`. Once per
//! database it dates the sessions imported before capture dated them by their work
//! (`graph::sessions::date_by_work`).

use std::{sync::Arc, time::Duration};

use sha2::{Digest, Sha256};
use tokio::sync::watch;

use crate::embed::Embedder;
pub use crate::graph::search::{DecisionPart, Doc, DocSource, OperationPart, Stored};
use crate::graph::{lease, search, sessions, SessionKey, Store, StoreResult};
use crate::recall::turn_index;
use crate::recall::unstored::{self, UNSTORED};

/// Characters of a search document at most.
pub const MAX_DOC_CHARS: usize = 6_000;
/// Files named in a document (and shown on a hit) at most.
pub const MAX_FILES: usize = 20;
/// Operations that go into a document at most.
pub const MAX_OPERATIONS: usize = 30;
/// Characters of one operation line at most.
const MAX_LINE_CHARS: usize = 300;
/// Sessions rebuilt per batch.
pub const BATCH: usize = 200;

fn clip(text: &str, max: usize) -> String {
    let text = text.trim();
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max).collect();
    out.push('…');
    out
}

/// Importance in 0..=1: decisions weigh most, progress (files written) some; capped.
pub fn importance(decisions: usize, writes: i64) -> f64 {
    let d = 0.25 * decisions as f64;
    let w = (0.05 * writes.max(0) as f64).min(0.5);
    (d + w).min(1.0)
}

/// Builds the document: most telling parts first, so the bound cuts the least useful.
pub fn build(src: &DocSource) -> Doc {
    let mut parts: Vec<String> = Vec::new();
    if let Some(task) = src.task.as_deref().filter(|t| !t.trim().is_empty()) {
        parts.push(format!("Task: {}", clip(task, 1_000)));
    }
    if let Some(summary) = src.summary.as_deref().filter(|t| !t.trim().is_empty()) {
        parts.push(format!("Summary: {}", clip(summary, 2_000)));
    }
    for d in &src.decisions {
        let subject = d.subject.as_deref().unwrap_or_default();
        let choice = d.choice.as_deref().unwrap_or_default();
        let why = d.rationale.as_deref().unwrap_or_default();
        parts.push(clip(
            &format!("Decision: {subject}: {choice} — {why}"),
            MAX_LINE_CHARS,
        ));
    }
    if !src.next_steps.is_empty() {
        parts.push(clip(
            &format!("Next: {}", src.next_steps.join("; ")),
            MAX_LINE_CHARS * 2,
        ));
    }
    let files: Vec<String> = src.files.iter().take(MAX_FILES).cloned().collect();
    if !files.is_empty() {
        parts.push(format!("Files: {}", files.join(" ")));
    }
    for op in src.operations.iter().take(MAX_OPERATIONS) {
        let kind = op.kind.as_deref().unwrap_or("operation");
        let text = match (kind, op.role.as_deref()) {
            // What the user asked says most about what the session was for.
            ("message", Some("user")) => op.content.as_deref().or(op.summary.as_deref()),
            // Assistant turns are long and repetitive; their summary is enough.
            _ => op.summary.as_deref(),
        };
        let Some(text) = text.filter(|t| !t.trim().is_empty()) else {
            continue;
        };
        let mut line = format!("{kind}: {text}");
        if let Some(why) = op.rationale.as_deref().filter(|t| !t.trim().is_empty()) {
            line.push_str(" — ");
            line.push_str(why);
        }
        parts.push(clip(&line, MAX_LINE_CHARS));
    }
    let mut doc = String::new();
    for part in parts {
        if doc.chars().count() + part.chars().count() + 1 > MAX_DOC_CHARS {
            break;
        }
        doc.push_str(&part);
        doc.push('\n');
    }
    let hash = hex::encode(Sha256::digest(doc.as_bytes()));
    Doc {
        id: src.id.clone(),
        project: src.project.clone(),
        rev: src.rev,
        parts: crate::domain::compounds::parts(&doc),
        doc,
        hash,
        files,
        importance: importance(src.decisions.len(), src.writes),
    }
}

/// Queues sessions whose embedding another model made for embedding with `model`; returns
/// how many.
pub async fn requeue_other_models(store: &Store, model: &str) -> StoreResult<i64> {
    search::requeue_other_models(store, model).await
}

/// Marks sessions that never had a search document, or whose document lacks its identifiers'
/// parts (`domain::compounds::FORM`), as dirty; returns how many.
pub async fn backfill(store: &Store) -> StoreResult<i64> {
    search::backfill(store).await
}

/// Rebuilds up to `limit` dirty documents; returns how many.
pub async fn rebuild_dirty(store: &Store, limit: usize) -> StoreResult<usize> {
    let sources = search::dirty_sources(store, limit, MAX_FILES, MAX_OPERATIONS).await?;
    if sources.is_empty() {
        return Ok(0);
    }
    let docs: Vec<Doc> = sources.iter().map(build).collect();
    search::store_docs(store, &docs).await?;
    Ok(docs.len())
}

/// What one embedding pass did.
#[derive(Debug, Default, PartialEq)]
pub struct Embedded {
    pub stored: usize,
    pub failed: usize,
}

/// Embeds up to `limit` pending documents, as `holder`: it claims their sessions first and
/// embeds those it got, so replicas embed each document once. A failure marks them for a
/// later retry.
pub async fn embed_pending(
    store: &Store,
    embedder: &Embedder,
    limit: usize,
    holder: &str,
) -> StoreResult<Embedded> {
    let mut pending = search::pending_docs(store, limit, holder).await?;
    let keys: Vec<SessionKey> = pending.iter().map(search::Pending::key).collect();
    let held = sessions::claim_for_index(store, holder, &keys).await?;
    pending.retain(|p| held.contains(&p.id));
    if pending.is_empty() {
        return Ok(Embedded::default());
    }
    // Vectors made by a pass that could not store them are stored as made.
    let model = embedder.model();
    let kept = UNSTORED.take(model, pending.iter().map(|p| p.doc.as_str()));
    let wanted: Vec<String> = pending
        .iter()
        .zip(&kept)
        .filter(|(_, k)| k.is_none())
        .map(|(p, _)| p.doc.clone())
        .collect();
    unstored::reused(pending.len() - wanted.len());
    let embedded = if wanted.is_empty() {
        Ok(Vec::new())
    } else {
        embedder.embed(&wanted).await
    };
    match embedded {
        Ok(fresh) => {
            let mut fresh = fresh.into_iter();
            // Each row with the index of the pending document it is made from.
            let (made, rows): (Vec<usize>, Vec<Stored>) = pending
                .iter()
                .zip(kept)
                .enumerate()
                .filter_map(|(i, (p, k))| {
                    let stored = Stored {
                        id: &p.id,
                        project: &p.project,
                        hash: &p.hash,
                        vector: k.or_else(|| fresh.next())?,
                    };
                    Some((i, stored))
                })
                .unzip();
            let stored = rows.len();
            if let Err(err) =
                store_embeddings(store, holder, model, embedder.dimensions(), &rows).await
            {
                let vectors = rows.into_iter().map(|r| r.vector);
                UNSTORED.keep(
                    model,
                    made.into_iter()
                        .map(|i| pending[i].doc.clone())
                        .zip(vectors),
                );
                return Err(err);
            }
            Ok(Embedded { stored, failed: 0 })
        }
        Err(err) => {
            let found = pending.iter().zip(kept);
            UNSTORED.keep(model, found.filter_map(|(p, v)| Some((p.doc.clone(), v?))));
            tracing::warn!(error = %err, sessions = pending.len(), "embedding failed; the sessions stay pending and are retried later");
            metrics::counter!("cairn_embeddings_failed_total").increment(pending.len() as u64);
            search::embedding_failed(store, holder, &pending, embedder.retry_ms()).await?;
            Ok(Embedded {
                stored: 0,
                failed: pending.len(),
            })
        }
    }
}

/// Stores embeddings that `model` made (skipping sessions whose document changed meanwhile);
/// `holder`'s claims on them end.
pub async fn store_embeddings(
    store: &Store,
    holder: &str,
    model: &str,
    dim: usize,
    rows: &[Stored<'_>],
) -> StoreResult<()> {
    search::store_embeddings(store, holder, model, dim, rows).await?;
    metrics::counter!("cairn_embeddings_stored_total").increment(rows.len() as u64);
    Ok(())
}

/// What one indexer pass did.
#[derive(Debug, Default, PartialEq)]
pub struct Outcome {
    pub rebuilt: usize,
    pub embedded: Embedded,
}

/// One pass: rebuild every dirty document (in batches), then embed one batch of pending ones.
pub async fn run_once(store: &Store, embedder: Option<&Embedder>) -> StoreResult<Outcome> {
    let mut out = Outcome::default();
    loop {
        let n = rebuild_dirty(store, BATCH).await?;
        out.rebuilt += n;
        if n < BATCH {
            break;
        }
    }
    // While the embedded model loads (or when it is missing) documents stay pending.
    if let Some(embedder) = embedder.filter(|e| e.is_ready()) {
        let limit = embedder.batch().max(1) * 4;
        out.embedded = embed_pending(store, embedder, limit, lease::process_holder()).await?;
    }
    Ok(out)
}

/// Tells the indexer capture has records not yet in Neo4j: the turn indexer then waits, so
/// it runs behind capture and never slows it down.
pub type Busy = Arc<dyn Fn() -> bool + Send + Sync>;

/// How long the turn indexer works at most between two looks at the stop signal.
const TURN_SLICE: Duration = Duration::from_secs(2);
/// How often the turn index's lag is measured (and logged while it catches up).
const LAG_EVERY: Duration = Duration::from_secs(5);

/// The background loop around [`run_once`] and the turn indexer
/// ([`crate::recall::turn_index`]), until the stop signal.
pub async fn run(
    store: Store,
    embedder: Option<Arc<Embedder>>,
    every: Duration,
    capture_busy: Busy,
    mut stop: watch::Receiver<bool>,
) {
    let mut backfilled = false;
    let mut turns_backfilled = false;
    let mut dated = false;
    let mut turns = TurnProgress::default();
    loop {
        if !backfilled {
            let requeued = match embedder.as_deref() {
                Some(e) => requeue_other_models(&store, e.model()).await,
                None => Ok(0),
            };
            match requeued.and(backfill(&store).await) {
                Ok(n) => {
                    backfilled = true;
                    if n > 0 {
                        tracing::info!(
                            sessions = n,
                            "sessions queued for a search document: their first, or one with its identifiers' parts"
                        );
                    }
                }
                Err(err) => tracing::debug!(error = %err, "search backfill deferred"),
            }
        }
        if !dated {
            match sessions::date_by_work(&store).await {
                Ok(n) => {
                    dated = true;
                    if n > 0 {
                        tracing::info!(
                            sessions = n,
                            "sessions imported before they were dated by their work now start at their first operation and were last active at their last"
                        );
                    }
                }
                Err(err) => tracing::debug!(error = %err, "dating sessions by their work deferred"),
            }
        }
        if !turns_backfilled {
            match turn_index::backfill(&store, embedder.as_deref()).await {
                Ok(()) => turns_backfilled = true,
                Err(err) => tracing::debug!(error = %err, "turn index backfill deferred"),
            }
        }
        // A remote model's calibration, measured on the side: a slow endpoint holds up no pass.
        if let Some(e) = embedder.clone() {
            if e.calibration_due() {
                tokio::spawn(async move { e.calibrate().await });
            }
        }
        let started = std::time::Instant::now();
        match run_once(&store, embedder.as_deref()).await {
            Ok(o) if o.rebuilt > 0 || o.embedded != Embedded::default() => {
                tracing::debug!(
                    rebuilt = o.rebuilt,
                    embedded = o.embedded.stored,
                    embed_failed = o.embedded.failed,
                    duration_ms = started.elapsed().as_millis() as u64,
                    "search index refreshed"
                );
            }
            Ok(_) => {}
            Err(err) => tracing::debug!(error = %err, "search indexer pass skipped"),
        }
        turns
            .work(&store, embedder.as_deref(), &capture_busy, &stop)
            .await;
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = stop.wait_for(|v| *v) => return,
        }
    }
}

/// The turn indexer's share of the loop, with its throughput and lag.
#[derive(Default)]
struct TurnProgress {
    last_lag: Option<std::time::Instant>,
    done_since_lag: usize,
    busy_since_lag: Duration,
    /// Signing the vectors stored before signatures were kept: read at the first slice.
    signing: Option<turn_index::Signing>,
    /// Making whole the texts cut at an older bound: read at the first slice.
    retexting: Option<turn_index::Retexting>,
}

/// Steps `pass` while `free` holds (capture idle, not stopping): once, then while the slice
/// `in_slice` lasts, so a backlog of embeddings that fills every slice does not hold it back;
/// whether it finished in this call having changed something (a step that fails is logged
/// and retried at the next slice).
async fn sweep(
    pass: &mut impl turn_index::Sweep,
    store: &Store,
    free: impl Fn() -> bool,
    in_slice: impl Fn() -> bool,
    what: &str,
) -> bool {
    let was_done = pass.done();
    let mut first = true;
    while !pass.done() && free() && (std::mem::take(&mut first) || in_slice()) {
        if let Err(err) = pass.step(store).await {
            tracing::debug!(error = %err, pass = what, "one-off index pass step skipped");
            return false;
        }
    }
    !was_done && pass.done() && pass.changed() > 0
}

impl TurnProgress {
    async fn work(
        &mut self,
        store: &Store,
        embedder: Option<&Embedder>,
        capture_busy: &Busy,
        stop: &watch::Receiver<bool>,
    ) {
        let slice = std::time::Instant::now();
        // While the embedded model loads (or when its files are missing) operations stay
        // pending, rather than each failing and backing off.
        let ready = embedder.is_none_or(|e| e.is_ready());
        while ready && !capture_busy() && !*stop.borrow() && slice.elapsed() < TURN_SLICE {
            let started = std::time::Instant::now();
            match turn_index::run_once(store, embedder, lease::process_holder()).await {
                Ok(pass) => {
                    let took = started.elapsed();
                    metrics::histogram!("cairn_turn_index_pass_seconds").record(took.as_secs_f64());
                    self.done_since_lag += pass.processed;
                    self.busy_since_lag += took;
                    if !pass.more || pass.failed > 0 {
                        break;
                    }
                }
                Err(err) => {
                    tracing::debug!(error = %err, "turn indexer pass skipped");
                    break;
                }
            }
        }
        // One-off passes in what is left of the slice: vectors stored before signatures were
        // kept are signed; texts cut at a shorter bound than today's are made whole again.
        if self.signing.is_none() {
            self.signing = turn_index::Signing::unless_done(store).await.ok();
        }
        if self.retexting.is_none() {
            self.retexting = turn_index::Retexting::unless_done(store).await.ok();
        }
        let free = || !capture_busy() && !*stop.borrow();
        let in_slice = || slice.elapsed() < TURN_SLICE;
        if let Some(signing) = self.signing.as_mut() {
            if sweep(signing, store, free, in_slice, "vector signing").await {
                tracing::info!(
                    operations = signing.scanned,
                    signed = signing.signed,
                    "stored vectors signed: diversity compares them without reading them again"
                );
            }
        }
        if let Some(retexting) = self.retexting.as_mut() {
            if sweep(retexting, store, free, in_slice, "search text rewriting").await {
                tracing::info!(
                    nodes = retexting.scanned,
                    rewritten = retexting.rewritten,
                    parted = retexting.parted,
                    bound = crate::domain::turn_text::MAX_CHARS,
                    "search texts are whole, in today's form, and their identifiers parted; operations written again are embedded again by the turn indexer"
                );
            }
        }
        if self.last_lag.is_some_and(|t| t.elapsed() < LAG_EVERY) {
            return;
        }
        if let Some(signing) = self.signing.as_ref().filter(|s| !s.done && s.scanned > 0) {
            tracing::info!(
                operations_read = signing.scanned,
                signed = signing.signed,
                "signing vectors stored before signatures were kept"
            );
        }
        if let Some(r) = self.retexting.as_ref().filter(|r| !r.done && r.scanned > 0) {
            tracing::info!(
                nodes_read = r.scanned,
                rewritten = r.rewritten,
                parted = r.parted,
                from = r.from(),
                to = crate::domain::turn_text::MAX_CHARS,
                "making search texts whole and in today's form (from 0 characters: every text), and parting their identifiers"
            );
        }
        let model = turn_index::model_of(embedder);
        if let Ok(pending) = crate::graph::turns::lag(store, model).await {
            metrics::gauge!("cairn_turn_index_pending_operations").set(pending as f64);
            // Operations per second of indexer work, over the last interval.
            let busy = self.busy_since_lag.as_secs_f64();
            if busy > 0.0 {
                let rate = self.done_since_lag as f64 / busy;
                metrics::gauge!("cairn_turn_index_operations_per_second").set(rate);
            }
            if pending > 0 && self.done_since_lag > 0 {
                tracing::info!(
                    pending_operations = pending,
                    indexed_operations = self.done_since_lag,
                    model = %model,
                    "turn index catching up"
                );
            }
            self.done_since_lag = 0;
            self.busy_since_lag = Duration::ZERO;
            self.last_lag = Some(std::time::Instant::now());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn document_is_bounded_and_leads_with_task_and_summary() {
        let src = DocSource {
            id: "s".into(),
            project: "p".into(),
            task: Some("fix the login redirect".into()),
            summary: Some("redirect loop fixed".into()),
            files: (0..50).map(|i| format!("src/f{i}.rs")).collect(),
            operations: (0..500)
                .map(|i| OperationPart {
                    kind: Some("write".into()),
                    summary: Some(format!("edit {i} {}", "x".repeat(400))),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        let doc = build(&src);
        assert!(doc
            .doc
            .starts_with("Task: fix the login redirect\nSummary: redirect loop"));
        assert!(doc.doc.chars().count() <= MAX_DOC_CHARS);
        assert_eq!(doc.files.len(), MAX_FILES);
        assert_eq!(doc.hash, build(&src).hash);
    }

    #[test]
    fn importance_is_capped() {
        assert_eq!(importance(0, 0), 0.0);
        assert!(importance(1, 2) > importance(1, 0));
        assert_eq!(importance(10, 100), 1.0);
    }
}
