//! The spool's disk on its own: record-sized writes, each followed by `fdatasync`, into a
//! preallocated file the way the spool writes its segments. An acknowledgement waits for such
//! a sync, so the disk's own tail bounds the ack's tail from below; the ingest bench measures
//! it in the same run, next to the acks: idle, and while each side writes (when Neo4j shares
//! the disk, its writes slow the spool's syncs).

use std::{
    fs::{self, OpenOptions},
    io::{self, Write},
    os::unix::fs::FileExt,
    path::{Path, PathBuf},
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

/// Bytes written per sync: a compressed batch of 100 operations is about this size.
const RECORD: usize = 4096;
/// Size of the preallocated file; writes wrap around in it.
const FILE: u64 = 1024 * 1024;

/// How a probe runs: `syncs` at most, `pause` after each, until `stop` is set (at least one).
struct Probe<'a> {
    syncs: usize,
    pause: Duration,
    stop: Option<&'a AtomicBool>,
}

/// `syncs` write + `fdatasync` pairs back to back, on a thread of its own; their latencies.
pub async fn idle(dir: PathBuf, syncs: usize) -> anyhow::Result<Vec<Duration>> {
    let how = Probe {
        syncs,
        pause: Duration::ZERO,
        stop: None,
    };
    latencies_of(tokio::task::spawn_blocking(move || {
        sync_latencies(&dir, &how)
    }))
    .await
}

async fn latencies_of(
    task: tokio::task::JoinHandle<io::Result<Vec<Duration>>>,
) -> anyhow::Result<Vec<Duration>> {
    use anyhow::Context;
    task.await?
        .context("could not time syncs on the spool's disk")
}

/// Latencies of write + `fdatasync` pairs in a scratch file in `dir` (removed afterwards).
fn sync_latencies(dir: &Path, how: &Probe) -> io::Result<Vec<Duration>> {
    fs::create_dir_all(dir)?;
    let path = dir.join(format!("disk-probe-{}.tmp", uuid::Uuid::new_v4().simple()));
    let result = probe(&path, how);
    let _ = fs::remove_file(&path);
    result
}

fn probe(path: &Path, how: &Probe) -> io::Result<Vec<Duration>> {
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(path)?;
    file.write_all(&vec![0u8; FILE as usize])?;
    file.sync_all()?;
    // Not zeros, so nothing along the way can skip the write.
    let record: Vec<u8> = (0..RECORD).map(|i| (i * 31 % 251) as u8 + 1).collect();
    let slots = FILE / RECORD as u64;
    let mut latencies = Vec::new();
    for i in 0..how.syncs as u64 {
        let started = Instant::now();
        file.write_all_at(&record, (i % slots) * RECORD as u64)?;
        file.sync_data()?;
        latencies.push(started.elapsed());
        if !how.pause.is_zero() {
            std::thread::sleep(how.pause);
        }
        if how.stop.is_some_and(|s| s.load(Ordering::Acquire)) {
            break;
        }
    }
    Ok(latencies)
}

/// A probe on a thread of its own, a sync every 5 ms, until [`Background::finish`].
pub struct Background {
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<io::Result<Vec<Duration>>>,
}

impl Background {
    pub fn start(dir: PathBuf) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let task = tokio::task::spawn_blocking(move || {
            let how = Probe {
                syncs: usize::MAX,
                pause: Duration::from_millis(5),
                stop: Some(&flag),
            };
            sync_latencies(&dir, &how)
        });
        Self { stop, task }
    }

    /// Stops the probe; its latencies.
    pub async fn finish(self) -> anyhow::Result<Vec<Duration>> {
        self.stop.store(true, Ordering::Release);
        latencies_of(self.task).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_every_sync_and_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let how = Probe {
            syncs: 20,
            pause: Duration::ZERO,
            stop: None,
        };
        let lat = sync_latencies(dir.path(), &how).unwrap();
        assert_eq!(lat.len(), 20);
        assert!(lat.iter().all(|d| *d > Duration::ZERO));
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn stops_when_told() {
        let dir = tempfile::tempdir().unwrap();
        let stop = AtomicBool::new(true);
        let how = Probe {
            syncs: usize::MAX,
            pause: Duration::from_millis(1),
            stop: Some(&stop),
        };
        assert_eq!(sync_latencies(dir.path(), &how).unwrap().len(), 1);
    }
}
