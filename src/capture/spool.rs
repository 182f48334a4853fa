//! The durable, append-only capture spool. A request is acknowledged only after its record is
//! on disk (fsync, group commit: one sync covers every record that arrived meanwhile). The
//! writer reads records back in order and marks them consumed once Neo4j has committed them.
//!
//! On disk: segment files `<start offset>.seg` holding frames `[len u32 LE][crc32 u32 LE][bytes]`,
//! plus `cursor` (the consumed offset). Offsets are global byte positions across segments, so
//! one `u64` names a place in the log. A torn frame at the tail (a crash mid-write, never
//! acknowledged) is cut off when the spool is opened.

use std::{
    fs::{self, File, OpenOptions},
    io::{self, BufWriter, Read, Seek, SeekFrom, Write},
    path::{Path, PathBuf},
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc,
    },
};

use tokio::sync::{mpsc, oneshot, watch, Notify};

const FRAME_HEADER: u64 = 8;
/// A segment is closed once it passes this size; consumed segments are deleted.
const SEGMENT_BYTES: u64 = 32 * 1024 * 1024;
/// Largest single record (a batch of operations); requests are smaller by body limits.
const MAX_RECORD: u64 = 64 * 1024 * 1024;
/// Records written under one fsync at most.
const GROUP_MAX: usize = 512;

#[derive(Debug, thiserror::Error)]
pub enum SpoolError {
    #[error("the spool is full ({used} of {max} bytes in use)")]
    Full { used: u64, max: u64 },
    #[error("spool i/o failed: {0}")]
    Io(#[from] io::Error),
    #[error("the spool is shut down")]
    Closed,
}

struct Shared {
    dir: PathBuf,
    /// End of the durable log.
    appended: AtomicU64,
    /// Everything before this is in Neo4j.
    consumed: AtomicU64,
    max_bytes: u64,
    new_data: Notify,
    committed: watch::Sender<u64>,
}

struct AppendRequest {
    payload: Vec<u8>,
    reply: oneshot::Sender<Result<u64, SpoolError>>,
}

/// Handle to the spool; cheap to clone.
#[derive(Clone)]
pub struct Spool {
    shared: Arc<Shared>,
    tx: mpsc::Sender<AppendRequest>,
}

impl Spool {
    /// Opens (or creates) the spool in `dir`, repairs a torn tail and starts the appender thread.
    pub fn open(dir: &Path, max_bytes: u64) -> io::Result<Self> {
        fs::create_dir_all(dir)?;
        let consumed = read_cursor(dir)?;
        let mut segments = list_segments(dir)?;
        if segments.is_empty() {
            File::create(segment_path(dir, consumed))?;
            sync_dir(dir)?;
            segments.push(consumed);
        }
        let last = *segments.last().expect("at least one segment");
        let valid = valid_length(&segment_path(dir, last))?;
        let file = OpenOptions::new()
            .write(true)
            .open(segment_path(dir, last))?;
        file.set_len(valid)?;
        file.sync_all()?;
        let appended = last + valid;
        let consumed = consumed.clamp(segments[0], appended);
        let (committed, _) = watch::channel(consumed);
        let shared = Arc::new(Shared {
            dir: dir.to_path_buf(),
            appended: AtomicU64::new(appended),
            consumed: AtomicU64::new(consumed),
            max_bytes,
            new_data: Notify::new(),
            committed,
        });
        let (tx, rx) = mpsc::channel(4096);
        let writer = Appender {
            shared: shared.clone(),
            segment_start: last,
            file: BufWriter::with_capacity(
                1 << 20,
                OpenOptions::new()
                    .append(true)
                    .open(segment_path(dir, last))?,
            ),
            rx,
        };
        std::thread::Builder::new()
            .name("cairn-spool".into())
            .spawn(move || writer.run())?;
        Ok(Self { shared, tx })
    }

    /// Appends one record; resolves to its end offset once it is on disk.
    pub async fn append(&self, payload: Vec<u8>) -> Result<u64, SpoolError> {
        let used = self.used_bytes();
        let need = payload.len() as u64 + FRAME_HEADER;
        if used + need > self.shared.max_bytes || need > MAX_RECORD {
            return Err(SpoolError::Full {
                used,
                max: self.shared.max_bytes,
            });
        }
        let (reply, rx) = oneshot::channel();
        self.tx
            .send(AppendRequest { payload, reply })
            .await
            .map_err(|_| SpoolError::Closed)?;
        rx.await.map_err(|_| SpoolError::Closed)?
    }

    /// Bytes written but not yet consumed.
    pub fn used_bytes(&self) -> u64 {
        self.appended()
            .saturating_sub(self.shared.consumed.load(Ordering::Acquire))
    }

    pub fn appended(&self) -> u64 {
        self.shared.appended.load(Ordering::Acquire)
    }

    pub fn consumed(&self) -> u64 {
        self.shared.consumed.load(Ordering::Acquire)
    }

    /// A reader positioned at the first unconsumed record.
    pub fn reader(&self) -> SpoolReader {
        SpoolReader {
            shared: self.shared.clone(),
            pos: self.consumed(),
            file: None,
        }
    }

    /// Waits until something is appended past `pos` (or returns at once if it already is).
    pub async fn wait_for_data(&self, pos: u64) {
        let notified = self.shared.new_data.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if self.appended() > pos {
            return;
        }
        notified.await;
    }

    /// Marks everything before `pos` as written to Neo4j: persists the cursor, deletes
    /// segments that are wholly consumed and wakes those waiting on [`Self::committed`].
    pub fn commit(&self, pos: u64) -> io::Result<()> {
        write_cursor(&self.shared.dir, pos)?;
        self.shared.consumed.store(pos, Ordering::Release);
        let segments = list_segments(&self.shared.dir)?;
        for pair in segments.windows(2) {
            if pair[1] <= pos {
                fs::remove_file(segment_path(&self.shared.dir, pair[0]))?;
            }
        }
        self.shared.committed.send_replace(pos);
        Ok(())
    }

    /// Watches the consumed offset.
    pub fn committed(&self) -> watch::Receiver<u64> {
        self.shared.committed.subscribe()
    }
}

struct Appender {
    shared: Arc<Shared>,
    segment_start: u64,
    file: BufWriter<File>,
    rx: mpsc::Receiver<AppendRequest>,
}

impl Appender {
    fn run(mut self) {
        while let Some(first) = self.rx.blocking_recv() {
            let mut group = vec![first];
            while group.len() < GROUP_MAX {
                match self.rx.try_recv() {
                    Ok(r) => group.push(r),
                    Err(_) => break,
                }
            }
            let start = self.shared.appended.load(Ordering::Acquire);
            match self.write_group(&group, start) {
                Ok(ends) => {
                    let end = *ends.last().expect("group is not empty");
                    self.shared.appended.store(end, Ordering::Release);
                    metrics::histogram!("cairn_spool_group_records").record(group.len() as f64);
                    self.shared.new_data.notify_waiters();
                    self.shared.new_data.notify_one();
                    for (req, end) in group.into_iter().zip(ends) {
                        let _ = req.reply.send(Ok(end));
                    }
                    if end - self.segment_start >= SEGMENT_BYTES {
                        if let Err(err) = self.rotate(end) {
                            tracing::error!(error = %err, "could not start a new spool segment");
                        }
                    }
                }
                Err(err) => {
                    tracing::error!(error = %err, "spool write failed; the batch was not acknowledged");
                    // Cut anything partially written so the log stays a sequence of whole frames.
                    let _ = self.file.get_ref().set_len(start - self.segment_start);
                    let _ = self.file.get_mut().seek(SeekFrom::End(0));
                    for req in group {
                        let _ = req.reply.send(Err(SpoolError::Io(io::Error::new(
                            err.kind(),
                            err.to_string(),
                        ))));
                    }
                }
            }
        }
        let _ = self.file.flush();
        let _ = self.file.get_ref().sync_data();
    }

    fn write_group(&mut self, group: &[AppendRequest], start: u64) -> io::Result<Vec<u64>> {
        let mut ends = Vec::with_capacity(group.len());
        let mut pos = start;
        for req in group {
            let len = u32::try_from(req.payload.len())
                .map_err(|_| io::Error::other("record too large"))?;
            self.file.write_all(&len.to_le_bytes())?;
            self.file
                .write_all(&crc32fast::hash(&req.payload).to_le_bytes())?;
            self.file.write_all(&req.payload)?;
            pos += FRAME_HEADER + u64::from(len);
            ends.push(pos);
        }
        let started = std::time::Instant::now();
        self.file.flush()?;
        self.file.get_ref().sync_data()?;
        metrics::histogram!("cairn_spool_sync_seconds").record(started.elapsed().as_secs_f64());
        Ok(ends)
    }

    fn rotate(&mut self, at: u64) -> io::Result<()> {
        let path = segment_path(&self.shared.dir, at);
        let file = OpenOptions::new().create(true).append(true).open(&path)?;
        sync_dir(&self.shared.dir)?;
        self.file = BufWriter::with_capacity(1 << 20, file);
        self.segment_start = at;
        Ok(())
    }
}

/// Reads records in order from a position, never past the durable end.
pub struct SpoolReader {
    shared: Arc<Shared>,
    pos: u64,
    file: Option<(u64, File)>,
}

/// One record read back: where it ends (commit up to there) and its bytes.
pub struct Record {
    pub end: u64,
    pub payload: Vec<u8>,
}

impl SpoolReader {
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// Up to `max_records` whole records (at most about `max_bytes`), possibly none.
    pub fn read_batch(&mut self, max_records: usize, max_bytes: usize) -> io::Result<Vec<Record>> {
        let mut out = Vec::new();
        let mut bytes = 0usize;
        while out.len() < max_records && bytes < max_bytes {
            let end = self.shared.appended.load(Ordering::Acquire);
            if self.pos >= end {
                break;
            }
            let record = self.read_one()?;
            bytes += record.payload.len();
            out.push(record);
        }
        Ok(out)
    }

    fn read_one(&mut self) -> io::Result<Record> {
        let needs_open = match &self.file {
            Some((start, f)) => {
                let len = f.metadata()?.len();
                self.pos >= start + len
            }
            None => true,
        };
        if needs_open {
            let segments = list_segments(&self.shared.dir)?;
            let start = segments
                .iter()
                .rev()
                .find(|s| **s <= self.pos)
                .copied()
                .ok_or_else(|| {
                    io::Error::other(format!("no spool segment holds offset {}", self.pos))
                })?;
            let mut f = File::open(segment_path(&self.shared.dir, start))?;
            f.seek(SeekFrom::Start(self.pos - start))?;
            self.file = Some((start, f));
        }
        let (_, f) = self.file.as_mut().expect("opened above");
        let mut header = [0u8; 8];
        f.read_exact(&mut header)?;
        let len = u32::from_le_bytes(header[..4].try_into().expect("4 bytes"));
        let crc = u32::from_le_bytes(header[4..].try_into().expect("4 bytes"));
        let mut payload = vec![0u8; len as usize];
        f.read_exact(&mut payload)?;
        if crc32fast::hash(&payload) != crc {
            return Err(io::Error::other(format!(
                "spool record at {} fails its checksum",
                self.pos
            )));
        }
        self.pos += FRAME_HEADER + u64::from(len);
        Ok(Record {
            end: self.pos,
            payload,
        })
    }
}

fn segment_path(dir: &Path, start: u64) -> PathBuf {
    dir.join(format!("{start:020}.seg"))
}

fn list_segments(dir: &Path) -> io::Result<Vec<u64>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir)? {
        let name = entry?.file_name();
        let name = name.to_string_lossy();
        if let Some(n) = name
            .strip_suffix(".seg")
            .and_then(|n| n.parse::<u64>().ok())
        {
            out.push(n);
        }
    }
    out.sort_unstable();
    Ok(out)
}

/// Length of the prefix of a segment made of whole, checksummed frames.
fn valid_length(path: &Path) -> io::Result<u64> {
    let mut f = File::open(path)?;
    let total = f.metadata()?.len();
    let mut pos = 0u64;
    let mut header = [0u8; 8];
    loop {
        if pos + FRAME_HEADER > total {
            break;
        }
        f.read_exact(&mut header)?;
        let len = u64::from(u32::from_le_bytes(header[..4].try_into().expect("4 bytes")));
        let crc = u32::from_le_bytes(header[4..].try_into().expect("4 bytes"));
        if pos + FRAME_HEADER + len > total {
            break;
        }
        let mut payload = vec![0u8; len as usize];
        f.read_exact(&mut payload)?;
        if crc32fast::hash(&payload) != crc {
            break;
        }
        pos += FRAME_HEADER + len;
    }
    if pos < total {
        tracing::warn!(path = %path.display(), kept_bytes = pos, dropped_bytes = total - pos, "cut a torn record from the spool tail");
    }
    Ok(pos)
}

fn read_cursor(dir: &Path) -> io::Result<u64> {
    match fs::read_to_string(dir.join("cursor")) {
        Ok(s) => s
            .trim()
            .parse()
            .map_err(|_| io::Error::other("spool cursor file is corrupt")),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            Ok(list_segments(dir)?.first().copied().unwrap_or(0))
        }
        Err(e) => Err(e),
    }
}

fn write_cursor(dir: &Path, pos: u64) -> io::Result<()> {
    let tmp = dir.join("cursor.tmp");
    fs::write(&tmp, pos.to_string())?;
    fs::rename(tmp, dir.join("cursor"))
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn appends_read_back_in_order_and_survive_reopen_with_torn_tail() {
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::open(dir.path(), 1 << 20).unwrap();
        let mut ends = Vec::new();
        for i in 0..10u8 {
            ends.push(spool.append(vec![i; 100]).await.unwrap());
        }
        let mut reader = spool.reader();
        let batch = reader.read_batch(4, usize::MAX).unwrap();
        assert_eq!(batch.len(), 4);
        assert_eq!(batch[3].payload, vec![3u8; 100]);
        spool.commit(batch[3].end).unwrap();
        drop(spool);

        // A torn frame at the tail, as after a crash mid-write.
        let seg = list_segments(dir.path()).unwrap()[0];
        let mut f = OpenOptions::new()
            .append(true)
            .open(segment_path(dir.path(), seg))
            .unwrap();
        f.write_all(&[50, 0, 0, 0, 1, 2]).unwrap();
        drop(f);

        let spool = Spool::open(dir.path(), 1 << 20).unwrap();
        assert_eq!(spool.consumed(), ends[3]);
        assert_eq!(spool.appended(), ends[9]);
        let rest = spool.reader().read_batch(100, usize::MAX).unwrap();
        assert_eq!(rest.len(), 6);
        assert_eq!(rest[0].payload, vec![4u8; 100]);
        let next = spool.append(vec![42; 10]).await.unwrap();
        assert_eq!(next, ends[9] + 18);
    }

    #[tokio::test]
    async fn refuses_past_its_limit() {
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::open(dir.path(), 300).unwrap();
        spool.append(vec![0; 200]).await.unwrap();
        assert!(matches!(
            spool.append(vec![0; 200]).await,
            Err(SpoolError::Full { .. })
        ));
        spool.commit(spool.appended()).unwrap();
        spool.append(vec![0; 200]).await.unwrap();
    }
}
