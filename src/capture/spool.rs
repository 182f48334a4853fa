//! The durable, append-only capture spool. A request is acknowledged only after its record is
//! on disk (fsync, group commit: one sync covers every record that arrived meanwhile). The
//! writer reads records back in order and marks them consumed once Neo4j has committed them.
//!
//! On disk: segment files `<start offset>.seg` holding frames `[len u32 LE][crc32 u32 LE][bytes]`,
//! plus `cursor` (the consumed offset). Offsets are global byte positions across segments, so
//! one `u64` names a place in the log; a segment ends where the next one starts.
//!
//! Segments are preallocated: written full of zeros and synced before the first record goes
//! in, so a record's sync writes its own blocks and nothing else (appending to a file would
//! also make every sync write the file's size and new block map, which doubles its tail
//! latency when the disk is busy). The next segment is prepared on a thread of its own while
//! the current one fills, a chunk at a time, so its writeback never queues a capture's sync
//! behind megabytes of zeros. The end of the log in the last segment is where its frames stop
//! (zeros, or a torn frame after a crash mid-write, never acknowledged, which is wiped when
//! the spool is opened).

use std::{
    fs::{self, File, OpenOptions},
    io::{self, BufWriter, Read, Seek, SeekFrom, Write},
    path::{Path, PathBuf},
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        Arc,
    },
    thread::JoinHandle,
};

use tokio::sync::{mpsc, oneshot, watch, Notify};

const FRAME_HEADER: u64 = 8;
/// Smallest segment size accepted.
pub const MIN_SEGMENT_BYTES: u64 = 64 * 1024;
/// Largest single record (a batch of operations); requests are smaller by body limits.
const MAX_RECORD: u64 = 64 * 1024 * 1024;
/// Records written under one fsync at most.
const GROUP_MAX: usize = 512;
/// The next segment while it is being prepared (not a `.seg`: never read as part of the log).
const SPARE: &str = "next-segment.tmp";
/// Zeros written (and synced) at a time while preparing the next segment.
const SPARE_CHUNK: u64 = 256 * 1024;
/// Pause after each chunk: a 32 MiB segment takes about half a second, while filling it
/// takes a stream of captures far longer.
const SPARE_PAUSE: std::time::Duration = std::time::Duration::from_millis(3);

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
    /// Start of the segment being written; set before any record in it is published.
    active: AtomicU64,
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
    /// Opens (or creates) the spool in `dir`, wipes a torn tail and starts the appender thread.
    /// It holds at most `max_bytes` not yet consumed, in preallocated segments of
    /// `segment_bytes` (at least [`MIN_SEGMENT_BYTES`]).
    pub fn open(dir: &Path, max_bytes: u64, segment_bytes: u64) -> io::Result<Self> {
        let segment_bytes = segment_bytes.max(MIN_SEGMENT_BYTES);
        fs::create_dir_all(dir)?;
        let _ = fs::remove_file(dir.join(SPARE));
        let consumed = read_cursor(dir)?;
        let mut segments = list_segments(dir)?;
        if segments.is_empty() {
            File::create(segment_path(dir, consumed))?;
            sync_dir(dir)?;
            segments.push(consumed);
        }
        let last = *segments.last().expect("at least one segment");
        let path = segment_path(dir, last);
        let valid = valid_length(&path)?;
        let mut file = OpenOptions::new().read(true).write(true).open(&path)?;
        let len = file.metadata()?.len();
        if !zeros_from(&mut file, valid, len)? {
            tracing::warn!(path = %path.display(), kept_bytes = valid, "wiped a torn record from the spool tail");
            zero_fill(&file, valid, len)?;
        }
        if len < segment_bytes {
            zero_fill(&file, len, segment_bytes)?;
        }
        file.sync_all()?;
        file.seek(SeekFrom::Start(valid))?;
        let appended = last + valid;
        let consumed = consumed.clamp(segments[0], appended);
        let (committed, _) = watch::channel(consumed);
        let shared = Arc::new(Shared {
            dir: dir.to_path_buf(),
            appended: AtomicU64::new(appended),
            consumed: AtomicU64::new(consumed),
            active: AtomicU64::new(last),
            max_bytes,
            new_data: Notify::new(),
            committed,
        });
        let (tx, rx) = mpsc::channel(4096);
        let writer = Appender {
            spare: Some(Spare::prepare(dir, segment_bytes)?),
            shared: shared.clone(),
            segment_start: last,
            segment_len: len.max(segment_bytes),
            segment_bytes,
            file: BufWriter::with_capacity(1 << 20, file),
            rx,
        };
        std::thread::Builder::new()
            .name("cairn-spool".into())
            .spawn(move || writer.run())?;
        Ok(Self { shared, tx })
    }

    /// Appends one record; resolves to its end offset once it is on disk.
    pub async fn append(&self, payload: Vec<u8>) -> Result<u64, SpoolError> {
        if payload.is_empty() {
            // An empty frame would read as the zeros past the end of the log.
            return Err(SpoolError::Io(io::Error::other("an empty spool record")));
        }
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
    /// Bytes the segment's file holds, zeros included.
    segment_len: u64,
    segment_bytes: u64,
    file: BufWriter<File>,
    rx: mpsc::Receiver<AppendRequest>,
    /// The next segment, being zero-filled.
    spare: Option<Spare>,
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
            let bytes: u64 = group
                .iter()
                .map(|r| FRAME_HEADER + r.payload.len() as u64)
                .sum();
            let result = self
                .make_room(start, bytes)
                .and_then(|()| self.write_group(&group, start));
            match result {
                Ok(ends) => {
                    let end = *ends.last().expect("group is not empty");
                    self.shared.appended.store(end, Ordering::Release);
                    metrics::histogram!("cairn_spool_group_records").record(group.len() as f64);
                    self.shared.new_data.notify_waiters();
                    self.shared.new_data.notify_one();
                    for (req, end) in group.into_iter().zip(ends) {
                        let _ = req.reply.send(Ok(end));
                    }
                }
                Err(err) => {
                    tracing::error!(error = %err, "spool write failed; the batch was not acknowledged");
                    self.wipe_from(start, bytes);
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

    /// Starts the next segment at `at` when `bytes` more would not fit in this one (a record
    /// larger than a segment gets one of its own, which grows).
    fn make_room(&mut self, at: u64, bytes: u64) -> io::Result<()> {
        let used = at - self.segment_start;
        if used == 0 || used + bytes <= self.segment_len {
            return Ok(());
        }
        let path = segment_path(&self.shared.dir, at);
        let spare = self.spare.take().map(Spare::finish);
        let renamed = match spare {
            Some(Ok(())) => fs::rename(self.shared.dir.join(SPARE), &path),
            Some(Err(err)) => Err(err),
            None => Err(io::Error::other("no segment was being prepared")),
        };
        if let Err(err) = renamed {
            // Not worth refusing a capture over: this segment grows as it is written.
            tracing::warn!(error = %err, "no preallocated spool segment; the next one grows as it is written");
            File::create(&path)?;
        }
        sync_dir(&self.shared.dir)?;
        let file = OpenOptions::new().write(true).open(&path)?;
        // A segment that grows still holds a segment's worth before the next rotation.
        self.segment_len = file.metadata()?.len().max(self.segment_bytes);
        self.file = BufWriter::with_capacity(1 << 20, file);
        self.segment_start = at;
        self.shared.active.store(at, Ordering::Release);
        match Spare::prepare(&self.shared.dir, self.segment_bytes) {
            Ok(h) => self.spare = Some(h),
            Err(err) => {
                tracing::warn!(error = %err, "could not start preparing the next spool segment")
            }
        }
        Ok(())
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
        self.segment_len = self.segment_len.max(pos - self.segment_start);
        Ok(ends)
    }

    /// After a failed write: drops what was buffered and zeros what may have reached the file
    /// from `start` on, so the log stays a sequence of whole frames; the next write goes there.
    fn wipe_from(&mut self, start: u64, bytes: u64) {
        if start < self.segment_start {
            return;
        }
        let clone = match self.file.get_ref().try_clone() {
            Ok(f) => f,
            Err(err) => {
                tracing::error!(error = %err, "could not reset the spool after a failed write");
                return;
            }
        };
        // The old writer's buffer is dropped unwritten.
        let _ = std::mem::replace(&mut self.file, BufWriter::with_capacity(1 << 20, clone))
            .into_parts();
        let from = start - self.segment_start;
        if let Err(err) = zero_fill(self.file.get_ref(), from, from + bytes) {
            tracing::error!(error = %err, "could not wipe a failed spool write; it is wiped when the spool is next opened");
        }
        let _ = self.file.get_mut().seek(SeekFrom::Start(from));
    }
}

/// Reads records in order from a position, never past the durable end.
pub struct SpoolReader {
    shared: Arc<Shared>,
    pos: u64,
    file: Option<Segment>,
}

/// A segment open for reading: where it starts, where the next one starts (once there is
/// one), and the file.
struct Segment {
    start: u64,
    end: Option<u64>,
    file: File,
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
        self.read_batch_by(max_records, max_bytes, <[u8]>::len)
    }

    /// Up to `max_records` whole records whose `weight`s add up to about `max_weight` at most,
    /// possibly none.
    pub fn read_batch_by(
        &mut self,
        max_records: usize,
        max_weight: usize,
        weight: impl Fn(&[u8]) -> usize,
    ) -> io::Result<Vec<Record>> {
        let mut out = Vec::new();
        let mut total = 0usize;
        while out.len() < max_records && total < max_weight {
            let end = self.shared.appended.load(Ordering::Acquire);
            if self.pos >= end {
                break;
            }
            let record = self.read_one()?;
            total = total.saturating_add(weight(&record.payload));
            out.push(record);
        }
        Ok(out)
    }

    fn read_one(&mut self) -> io::Result<Record> {
        let active = self.shared.active.load(Ordering::Acquire);
        let dir = &self.shared.dir;
        let needs_open = match &mut self.file {
            Some(seg) => {
                if seg.end.is_none() && seg.start != active {
                    seg.end = next_segment(dir, seg.start)?;
                }
                seg.end.is_some_and(|end| self.pos >= end)
            }
            None => true,
        };
        if needs_open {
            let segments = list_segments(dir)?;
            let start = segments
                .iter()
                .rev()
                .find(|s| **s <= self.pos)
                .copied()
                .ok_or_else(|| {
                    io::Error::other(format!("no spool segment holds offset {}", self.pos))
                })?;
            let mut file = File::open(segment_path(dir, start))?;
            file.seek(SeekFrom::Start(self.pos - start))?;
            let end = segments.iter().find(|s| **s > start).copied();
            self.file = Some(Segment { start, end, file });
        }
        let f = &mut self.file.as_mut().expect("opened above").file;
        let mut header = [0u8; 8];
        f.read_exact(&mut header)?;
        let len = u32::from_le_bytes(header[..4].try_into().expect("4 bytes"));
        let crc = u32::from_le_bytes(header[4..].try_into().expect("4 bytes"));
        let mut payload = vec![0u8; len as usize];
        f.read_exact(&mut payload)?;
        if len == 0 || crc32fast::hash(&payload) != crc {
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

/// Start of the segment after the one at `start`, if there is one yet.
fn next_segment(dir: &Path, start: u64) -> io::Result<Option<u64>> {
    Ok(list_segments(dir)?.into_iter().find(|s| *s > start))
}

/// Length of the prefix of a segment made of whole, checksummed, non-empty frames.
fn valid_length(path: &Path) -> io::Result<u64> {
    let mut f = io::BufReader::with_capacity(1 << 20, File::open(path)?);
    let total = f.get_ref().metadata()?.len();
    let mut pos = 0u64;
    let mut header = [0u8; 8];
    loop {
        if pos + FRAME_HEADER > total {
            break;
        }
        f.read_exact(&mut header)?;
        let len = u64::from(u32::from_le_bytes(header[..4].try_into().expect("4 bytes")));
        let crc = u32::from_le_bytes(header[4..].try_into().expect("4 bytes"));
        if len == 0 || pos + FRAME_HEADER + len > total {
            break;
        }
        let mut payload = vec![0u8; len as usize];
        f.read_exact(&mut payload)?;
        if crc32fast::hash(&payload) != crc {
            break;
        }
        pos += FRAME_HEADER + len;
    }
    Ok(pos)
}

/// Whether the file holds only zeros from `from` to `to`.
fn zeros_from(f: &mut File, from: u64, to: u64) -> io::Result<bool> {
    f.seek(SeekFrom::Start(from))?;
    let mut buf = vec![0u8; 1 << 20];
    let mut left = to.saturating_sub(from);
    while left > 0 {
        let n = left.min(buf.len() as u64) as usize;
        f.read_exact(&mut buf[..n])?;
        if buf[..n].iter().any(|b| *b != 0) {
            return Ok(false);
        }
        left -= n as u64;
    }
    Ok(true)
}

/// Writes zeros over `from..to` of `f` (growing it if needed); the caller syncs.
fn zero_fill(f: &File, from: u64, to: u64) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    let zeros = vec![0u8; 1 << 20];
    let mut at = from;
    while at < to {
        let n = (to - at).min(zeros.len() as u64) as usize;
        f.write_all_at(&zeros[..n], at)?;
        at += n as u64;
    }
    Ok(())
}

/// The next segment, being zero-filled on a thread of its own.
struct Spare {
    done: JoinHandle<io::Result<()>>,
    /// Set when the segment is needed now: the filler stops pausing between chunks.
    hurry: Arc<AtomicBool>,
}

impl Spare {
    /// Starts zero-filling `SPARE` in `dir`, paced: a chunk at a time, each synced on its own
    /// with a pause after it, so the device never holds more than a chunk of it in front of a
    /// capture's fsync (filled in one go, the segment's writeback stalls those fsyncs for tens
    /// of milliseconds).
    fn prepare(dir: &Path, len: u64) -> io::Result<Self> {
        let path = dir.join(SPARE);
        let hurry = Arc::new(AtomicBool::new(false));
        let urgent = hurry.clone();
        let done = std::thread::Builder::new()
            .name("cairn-spool-prep".into())
            .spawn(move || {
                let f = File::create(&path)?;
                let mut at = 0;
                while at < len {
                    let to = (at + SPARE_CHUNK).min(len);
                    zero_fill(&f, at, to)?;
                    f.sync_data()?;
                    at = to;
                    if !urgent.load(Ordering::Acquire) {
                        std::thread::sleep(SPARE_PAUSE);
                    }
                }
                f.sync_all()
            })?;
        Ok(Self { done, hurry })
    }

    /// Waits for the segment, without pauses from now on.
    fn finish(self) -> io::Result<()> {
        self.hurry.store(true, Ordering::Release);
        self.done
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the segment preparer panicked")))
    }
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
        let spool = Spool::open(dir.path(), 1 << 20, MIN_SEGMENT_BYTES).unwrap();
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

        // A torn frame at the tail, as after a crash mid-write: a header claiming 50 bytes,
        // two of them written, then stale bytes further on.
        let seg = list_segments(dir.path()).unwrap()[0];
        let f = OpenOptions::new()
            .write(true)
            .open(segment_path(dir.path(), seg))
            .unwrap();
        use std::os::unix::fs::FileExt;
        f.write_all_at(&[50, 0, 0, 0, 1, 2, 3, 4, 9, 9], ends[9] - seg)
            .unwrap();
        f.write_all_at(&[7; 30], ends[9] - seg + 100).unwrap();
        drop(f);

        let spool = Spool::open(dir.path(), 1 << 20, MIN_SEGMENT_BYTES).unwrap();
        assert_eq!(spool.consumed(), ends[3]);
        assert_eq!(spool.appended(), ends[9]);
        let rest = spool.reader().read_batch(100, usize::MAX).unwrap();
        assert_eq!(rest.len(), 6);
        assert_eq!(rest[0].payload, vec![4u8; 100]);
        let next = spool.append(vec![42; 10]).await.unwrap();
        assert_eq!(next, ends[9] + 18);
        drop(spool);

        // The torn bytes were wiped: nothing past the new record reads as a frame.
        let spool = Spool::open(dir.path(), 1 << 20, MIN_SEGMENT_BYTES).unwrap();
        assert_eq!(spool.appended(), next);
        assert_eq!(spool.reader().read_batch(100, usize::MAX).unwrap().len(), 7);
    }

    #[tokio::test]
    async fn segments_are_preallocated_and_read_across_after_rotation_and_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let seg_bytes = MIN_SEGMENT_BYTES;
        let spool = Spool::open(dir.path(), 16 << 20, seg_bytes).unwrap();
        let first = list_segments(dir.path()).unwrap();
        assert_eq!(first.len(), 1);
        let len = |s: u64| fs::metadata(segment_path(dir.path(), s)).unwrap().len();
        assert_eq!(
            len(first[0]),
            seg_bytes,
            "written full of zeros ahead of use"
        );
        spool.append(vec![1; 1000]).await.unwrap();
        assert_eq!(len(first[0]), seg_bytes, "a record does not grow the file");

        // Read while it rotates: ~5 segments' worth, a record larger than a segment included.
        let mut reader = spool.reader();
        let mut read = vec![reader.read_batch(100, usize::MAX).unwrap().len()];
        let mut expected = vec![vec![1u8; 1000]];
        for i in 0..300u32 {
            let size = if i == 150 {
                seg_bytes as usize + 10
            } else {
                1000 + i as usize
            };
            let payload = vec![(i % 251) as u8 + 1; size];
            spool.append(payload.clone()).await.unwrap();
            expected.push(payload);
            if i % 40 == 0 {
                read.push(reader.read_batch(1000, usize::MAX).unwrap().len());
            }
        }
        read.push(reader.read_batch(1000, usize::MAX).unwrap().len());
        assert_eq!(read.iter().sum::<usize>(), expected.len());
        let segments = list_segments(dir.path()).unwrap();
        assert!(segments.len() >= 5, "{segments:?}");
        let end = spool.appended();
        drop(spool);

        let spool = Spool::open(dir.path(), 16 << 20, seg_bytes).unwrap();
        assert_eq!(spool.appended(), end);
        let all: Vec<Vec<u8>> = spool
            .reader()
            .read_batch(1000, usize::MAX)
            .unwrap()
            .into_iter()
            .map(|r| r.payload)
            .collect();
        assert_eq!(all, expected);

        // Consumed segments are deleted; the one holding the end stays.
        spool.commit(end).unwrap();
        assert_eq!(list_segments(dir.path()).unwrap().len(), 1);
        let next = spool.append(vec![5; 10]).await.unwrap();
        assert_eq!(next, end + 18);
        let mut reader = spool.reader();
        assert_eq!(
            reader.read_batch(10, usize::MAX).unwrap()[0].payload,
            vec![5; 10]
        );
    }

    #[tokio::test]
    async fn without_a_prepared_segment_the_next_one_grows_and_still_holds_a_segments_worth() {
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::open(dir.path(), 16 << 20, MIN_SEGMENT_BYTES).unwrap();
        // Let the spare finish, then take it away: the rotation must fall back, not fail.
        spool.append(vec![1; 100]).await.unwrap();
        for _ in 0..200 {
            if fs::metadata(dir.path().join(SPARE)).is_ok_and(|m| m.len() == MIN_SEGMENT_BYTES) {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        fs::remove_file(dir.path().join(SPARE)).unwrap();
        let mut n = 1;
        while spool.appended() < MIN_SEGMENT_BYTES * 3 / 2 {
            spool.append(vec![2; 1000]).await.unwrap();
            n += 1;
        }
        let segments = list_segments(dir.path()).unwrap();
        assert_eq!(
            segments.len(),
            2,
            "one rotation, not one per write: {segments:?}"
        );
        let read = spool.reader().read_batch(10_000, usize::MAX).unwrap();
        assert_eq!(read.len(), n);
    }

    #[tokio::test]
    async fn refuses_past_its_limit() {
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::open(dir.path(), 300, MIN_SEGMENT_BYTES).unwrap();
        spool.append(vec![0; 200]).await.unwrap();
        assert!(matches!(
            spool.append(vec![0; 200]).await,
            Err(SpoolError::Full { .. })
        ));
        spool.commit(spool.appended()).unwrap();
        spool.append(vec![0; 200]).await.unwrap();
    }
}
