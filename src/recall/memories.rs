//! A project's memories for a context, remembered while they stay as they were: they are
//! written once and only ever added or purged, and a context on a project with a few hundred
//! of them spent more on reading them than on anything but turn search. Each context reads
//! their fingerprint (count, latest and summed times, tokens) and reads them again only when
//! it differs ([`Remembered`]).

use std::sync::{Arc, LazyLock};
use std::time::Duration;

use crate::graph::memories::{self, ContextMemory, Fingerprint};
use crate::graph::{Store, StoreResult};
use crate::recall::remembered::{Entry, Remembered};

/// Bytes of memories remembered in all, roughly ([`ContextMemory::size`]).
const REMEMBERED_BYTES: u64 = 32 * 1024 * 1024;
/// How long a project's memories are remembered after their last use.
const IDLE: Duration = Duration::from_secs(30 * 60);

/// Keyed by project and limit.
static REMEMBERED: LazyLock<Remembered<(String, usize), Fingerprint, Vec<ContextMemory>>> =
    LazyLock::new(|| {
        Remembered::new(REMEMBERED_BYTES, IDLE, |key, rows| {
            256 + key.0.len() + rows.iter().map(ContextMemory::size).sum::<usize>()
        })
    });

/// A project's memories as remembered: shared, never copied (it derefs to the list).
pub type Memories = Arc<Entry<Fingerprint, Vec<ContextMemory>>>;

/// The project's memories a context chooses from, newest first, at most `limit`; read again
/// unless what is remembered was read under `fingerprint`, the one read just now
/// ([`crate::graph::beliefs::fingerprints`]).
pub async fn for_context(
    store: &Store,
    project: &str,
    limit: usize,
    fingerprint: Fingerprint,
) -> StoreResult<Memories> {
    REMEMBERED
        .get_or_read((project.to_string(), limit), fingerprint, || {
            memories::for_context(store, project, limit)
        })
        .await
}
