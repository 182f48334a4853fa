//! The embedded backend: all-MiniLM-L6-v2 or e5-small-v2 run in-process on the CPU
//! ([`model`]; e5's weights read out of their ONNX export by [`onnx`]), on one
//! dedicated thread so the async runtime never waits on a forward pass. The model loads once,
//! in the background, and is shared by every [`Local`] handle of the process for the same
//! model and directory; when its files are missing or fail their checksums it stays
//! [`Status::Unavailable`] and cairn serves keyword-only.
//!
//! Requests queue on the thread; each is embedded in length-sorted batches, and between two
//! batches a waiting small request (a search query) goes before the rest of a large one (the
//! indexer's), so a query waits for at most one forward pass, of at most 512 tokens.

pub mod model;
pub mod onnx;

use std::{
    collections::VecDeque,
    path::{Path, PathBuf},
    sync::{mpsc, Arc, Mutex, RwLock, Weak},
};

use tokio::sync::oneshot;

use super::{EmbedError, Purpose, Status};
use crate::config::{EmbedLocalModel, EmbedSettings};
use model::Spec;

/// Length of the embedded models' vectors.
pub const DIMENSIONS: usize = 384;
/// Where `scripts/embed-model fetch` unpacks the models, relative to the working directory.
pub const MODELS_DIR: &str = ".cairn/models";

/// The model the settings name.
pub fn spec(model: EmbedLocalModel) -> &'static Spec {
    match model {
        EmbedLocalModel::E5SmallV2 => &model::E5_SMALL,
        EmbedLocalModel::AllMiniLmL6V2 => &model::MINILM,
    }
}

/// Where `scripts/embed-model fetch` unpacks `spec`'s files, relative to the working
/// directory: `.cairn/models/<name>`.
pub fn default_dir(spec: &Spec) -> PathBuf {
    PathBuf::from(MODELS_DIR).join(spec.name)
}

/// What [`crate::embed::Embedder::model`] says for vectors made by `spec`:
/// `local:<name>#unlabelled` ([`crate::embed::TEXT_FORM`]).
pub fn identity(spec: &Spec) -> String {
    format!("local:{}{}", spec.name, crate::embed::TEXT_FORM)
}

/// What to run when `spec`'s files are missing.
pub fn fetch_hint(spec: &Spec) -> String {
    format!(
        "run `scripts/embed-model fetch {name}` (or point CAIRN_EMBED_MODEL_DIR at its files from {source})",
        name = spec.name,
        source = spec.source
    )
}

/// The model directory the settings name, else the model's [`default_dir`].
pub fn model_dir(settings: &EmbedSettings) -> PathBuf {
    settings
        .model_dir
        .clone()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or_else(|| default_dir(spec(settings.local_model)))
}

/// A handle on the process's embedded model for one directory.
#[derive(Clone)]
pub struct Local {
    shared: Arc<Shared>,
    batch: usize,
}

struct Shared {
    spec: &'static Spec,
    /// `local:<name>`, made once.
    identity: String,
    dir: PathBuf,
    status: Arc<RwLock<Status>>,
    jobs: Mutex<mpsc::Sender<Job>>,
}

struct Job {
    texts: Vec<String>,
    batch: usize,
    reply: oneshot::Sender<Result<Vec<Vec<f32>>, EmbedError>>,
}

/// Models alive in this process, by model and directory: an app built twice (tests) loads
/// once.
static LOADED: Mutex<Vec<Weak<Shared>>> = Mutex::new(Vec::new());

/// Called on the embedding thread when it runs out of work (and after loading): the binary
/// sets it to have its allocator give the thread's freed buffers back to the system, so an
/// idle server does not keep the last batch's working memory.
static IDLE_HOOK: std::sync::OnceLock<fn()> = std::sync::OnceLock::new();

/// Sets the idle hook (once per process; later calls are ignored).
pub fn set_idle_hook(hook: fn()) {
    let _ = IDLE_HOOK.set(hook);
}

fn idle() {
    if let Some(hook) = IDLE_HOOK.get() {
        hook();
    }
}

impl Local {
    /// `spec`'s model in `dir`, loading on a thread of its own unless this process has it
    /// already. `batch`: texts per forward pass at most.
    pub fn shared(spec: &'static Spec, dir: &Path, batch: usize) -> Self {
        let batch = batch.clamp(1, 256);
        let mut loaded = LOADED.lock().unwrap_or_else(|e| e.into_inner());
        loaded.retain(|w| w.strong_count() > 0);
        if let Some(shared) = loaded
            .iter()
            .filter_map(Weak::upgrade)
            .find(|s| s.dir == dir && std::ptr::eq(s.spec, spec))
        {
            return Self { shared, batch };
        }
        let shared = Arc::new(Self::start(spec, dir.to_path_buf()));
        loaded.push(Arc::downgrade(&shared));
        Self { shared, batch }
    }

    fn start(spec: &'static Spec, dir: PathBuf) -> Shared {
        let status = Arc::new(RwLock::new(Status::Loading));
        let (tx, rx) = mpsc::channel();
        let thread_status = status.clone();
        let thread_dir = dir.clone();
        let spawned = std::thread::Builder::new()
            .name("cairn-embed".into())
            .spawn(move || serve(spec, &thread_dir, &thread_status, rx));
        if let Err(err) = spawned {
            *status.write().unwrap_or_else(|e| e.into_inner()) =
                Status::Unavailable(format!("could not start the embedding thread: {err}"));
        }
        Shared {
            spec,
            identity: identity(spec),
            dir,
            status,
            jobs: Mutex::new(tx),
        }
    }

    pub fn batch(&self) -> usize {
        self.batch
    }

    /// `local:<name>`.
    pub fn identity(&self) -> &str {
        &self.shared.identity
    }

    pub fn spec(&self) -> &'static Spec {
        self.shared.spec
    }

    pub fn status(&self) -> Status {
        self.shared
            .status
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// One vector per text, each prefixed as the model expects for `purpose`.
    pub async fn embed(
        &self,
        texts: &[String],
        purpose: Purpose,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
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
        let prefix = match purpose {
            Purpose::Query => self.shared.spec.query_prefix,
            Purpose::Document => self.shared.spec.document_prefix,
        };
        let job = Job {
            texts: texts
                .iter()
                .map(|t| format!("{prefix}{}", super::clip(t)))
                .collect(),
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
fn serve(spec: &'static Spec, dir: &Path, status: &RwLock<Status>, jobs: mpsc::Receiver<Job>) {
    let started = std::time::Instant::now();
    let loaded = model::Encoder::load(spec, dir);
    let identity = identity(spec);
    let set = |s: Status| *status.write().unwrap_or_else(|e| e.into_inner()) = s;
    let model = match loaded {
        Ok(m) => {
            tracing::info!(
                model = identity,
                dir = %dir.display(),
                duration_ms = started.elapsed().as_millis() as u64,
                "embedded embedding model loaded"
            );
            set(Status::Ready);
            m
        }
        Err(err) => {
            let why = format!(
                "the embedded embedding model is not available ({err}); search runs keyword-only: {}",
                fetch_hint(spec)
            );
            tracing::warn!(model = identity, dir = %dir.display(), "{why}");
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
            idle();
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
    fn new(job: Job, model: &model::Encoder) -> Self {
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
    fn step(&mut self, model: &model::Encoder) -> bool {
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
