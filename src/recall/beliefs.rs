//! A project's active beliefs for a context, each with where its evidence lies, remembered
//! while they stay as they were.
//!
//! Reading them walks every piece of their evidence and the files it touched — the costliest
//! read of a context on a project with learned beliefs — while they change only when
//! extraction runs, a belief is reviewed or new evidence is captured. So each read first asks
//! for their [`Fingerprint`] (counts, latest times, their evidence's degree and how often it
//! was written, without reading the evidence) and reads them again only when it differs from
//! the one remembered with them ([`Remembered`]); a change made by any instance on the
//! database is seen by the next context. What is remembered is carried forward to the time
//! of the request (evidence decays by the same factor whatever its age), so conviction is as
//! a fresh read would give it.

use std::sync::LazyLock;
use std::time::Duration;

use crate::graph::beliefs::{self, BeliefRow, BeliefView, EvidencePlaces, Fingerprint};
use crate::graph::{now_ms, Store, StoreResult};
use crate::recall::remembered::Remembered;

/// Bytes of beliefs remembered in all, roughly ([`BeliefRow::size`]).
const REMEMBERED_BYTES: u64 = 32 * 1024 * 1024;
/// How long a project's beliefs are remembered after their last use.
const IDLE: Duration = Duration::from_secs(30 * 60);

/// Project, half-life and limit: a key reads what it asked for.
type Key = (String, i64, i64);
/// The rows with the time they were read at.
type Read = (i64, Vec<BeliefRow>);

static REMEMBERED: LazyLock<Remembered<Key, Fingerprint, Read>> = LazyLock::new(|| {
    Remembered::new(REMEMBERED_BYTES, IDLE, |key, (_, rows)| {
        // A project without beliefs still weighs its key and fingerprint.
        256 + key.0.len() + rows.iter().map(BeliefRow::size).sum::<usize>()
    })
});

/// The project's active beliefs (at most `limit`, newest first) with their conviction now
/// (evidence decayed with `half_life_ms`), and where each one's evidence lies; read again
/// unless what is remembered was read under `fingerprint`, the one read just now
/// ([`beliefs::fingerprints`]).
pub async fn active_with_places(
    store: &Store,
    project: &str,
    half_life_ms: i64,
    limit: i64,
    fingerprint: Fingerprint,
) -> StoreResult<Vec<(BeliefView, EvidencePlaces)>> {
    let key = (project.to_string(), half_life_ms, limit);
    let remembered = REMEMBERED
        .get_or_read(key, fingerprint, || {
            beliefs::active_with_places(store, project, half_life_ms, limit)
        })
        .await?;
    let (read_at, rows) = &remembered.value;
    let now = now_ms();
    Ok(rows
        .iter()
        .map(|row| (row.view_at(now, *read_at, half_life_ms), row.places()))
        .collect())
}
