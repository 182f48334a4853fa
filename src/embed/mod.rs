//! Embeddings: one [`Embedder`] over two backends. [`local`] runs all-MiniLM-L6-v2 (or
//! e5-small-v2) in-process on the CPU (the default; weights from
//! `scripts/embed-model fetch`); [`remote`] calls an
//! OpenAI-compatible `/embeddings` endpoint (`CAIRN_EMBED_BASE_URL`). `CAIRN_EMBED=off`
//! builds none. Every vector is attributable to [`Embedder::model`] and
//! [`Embedder::dimensions`]; the vector indexes follow them. A stored vector carries a
//! compact [`signature`] for comparing candidates cheaply. This module knows nothing of
//! sessions or Neo4j; the indexer and search call it.

pub mod calibrate;
pub mod local;
pub mod remote;
pub mod signature;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::config::{EmbedSettings, EmbedSwitch};

/// Characters of one text embedded at most (far more than any model's token window holds).
pub const MAX_TEXT_CHARS: usize = 8_000;
/// First wait (ms) before a failed embedding is tried again (`CAIRN_EMBED_RETRY_MS`).
pub const RETRY_MS: u64 = 5_000;

#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    #[error("the embeddings endpoint did not answer within {0:?}")]
    Timeout(Duration),
    #[error("the embeddings endpoint failed: {0}")]
    Api(String),
    #[error("the embeddings endpoint answered {got} vectors of dimension {dim}; expected {want} of dimension {expected}")]
    Shape {
        got: usize,
        want: usize,
        dim: usize,
        expected: usize,
    },
    /// The embedded model is not loaded (yet, or at all): search runs keyword-only.
    #[error("{0}")]
    Unavailable(String),
    /// The embedded model failed on this input.
    #[error("the embedded model failed: {0}")]
    Model(String),
}

/// How a model's cosines read on the scale cairn's thresholds use (all-MiniLM-L6-v2's, on
/// which they were set): `(cosine − unrelated) / span`, within 0..=1. e5 puts every vector in
/// one narrow cone: a question and a random turn of its conversation lie at a median cosine
/// of 0.761 (MiniLM 0.236), an evidence turn at 0.825 (MiniLM 0.456); across both, e5's
/// cosine ≈ 0.705 + 0.25 × MiniLM's (LoCoMo, every question).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Calibration {
    /// The cosine that reads as 0.
    pub unrelated: f64,
    /// How much cosine reads as 1.
    pub span: f64,
}

impl Calibration {
    /// Cosines as they are.
    pub const PLAIN: Self = Self {
        unrelated: 0.0,
        span: 1.0,
    };

    /// `cosine` on the common scale.
    pub fn read(&self, cosine: f64) -> f64 {
        ((cosine - self.unrelated) / self.span).clamp(0.0, 1.0)
    }
}

/// A model's calibration as known: `fitted` when it is a model's own (stated for an embedded
/// model, measured for a remote one); a remote model whose cosines do not follow MiniLM's
/// has its cosines read as they are ([`Calibration::PLAIN`]), not fitted.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Measured {
    pub scale: Calibration,
    pub fitted: bool,
}

/// What a text is embedded for: models trained with prefixes (e5's `query: ` and
/// `passage: `) put a search's text and a stored text in different places.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    /// A search, a task, a prompt: what is looked for.
    Query,
    /// A turn, a passage, a session: what is stored and found.
    Document,
}

/// Whether vectors can be made now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    /// The embedded model is being loaded (at start, in the background).
    Loading,
    Ready,
    /// Keyword-only: why, and what to do about it.
    Unavailable(String),
}

impl Status {
    /// `loading`, `ready` or `unavailable`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Status::Loading => "loading",
            Status::Ready => "ready",
            Status::Unavailable(_) => "unavailable",
        }
    }
}

/// Makes vectors: cheap to clone, shared by the indexer, search and context.
#[derive(Clone)]
pub struct Embedder {
    backend: Backend,
    /// The vectors of the last few queries: a context and its session search, or a search
    /// asked again, embed the same text once.
    queries: Arc<Mutex<Remembered>>,
    /// First wait (ms) before a failed embedding is tried again.
    retry_ms: u64,
}

/// Recent queries with their vectors, newest first.
type Remembered = VecDeque<(String, Vec<f32>)>;

/// Query vectors remembered.
const QUERY_CACHE: usize = 64;

/// What every model identity ([`Embedder::model`]) ends with: the form of the texts its
/// vectors are made from. Messages are embedded without the speaker label they open with
/// (`recall::speaker`); vectors recorded under an identity without it were made from whole
/// texts, and are made again in the background as for a change of model.
pub const TEXT_FORM: &str = "#unlabelled";

#[derive(Clone)]
enum Backend {
    Remote(Arc<remote::Remote>),
    Local(local::Local),
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder")
            .field("model", &self.model())
            .field("dimensions", &self.dimensions())
            .finish()
    }
}

impl Embedder {
    /// The embedder the settings ask for: `None` with `CAIRN_EMBED=off`; a remote client when
    /// `CAIRN_EMBED_BASE_URL` is set (vectors of `dimensions`); else the embedded model,
    /// loading in the background (its status says when it is ready, or why it is not).
    pub fn from_settings(settings: &EmbedSettings, dimensions: u32) -> Option<Self> {
        if settings.switch == EmbedSwitch::Off {
            return None;
        }
        let backend = match settings.base_url.as_deref().map(str::trim) {
            Some(base) if !base.is_empty() => {
                Backend::Remote(Arc::new(remote::Remote::new(settings, base, dimensions)))
            }
            _ => Backend::Local(local::Local::shared(
                local::spec(settings.local_model),
                &local::model_dir(settings),
                settings.batch,
            )),
        };
        Some(Self {
            backend,
            queries: Arc::default(),
            // 0 only where settings are made in code (`EmbedSettings::default()`).
            retry_ms: if settings.retry_ms == 0 {
                RETRY_MS
            } else {
                settings.retry_ms
            },
        })
    }

    /// First wait (ms) before a session whose embedding failed is tried again; it doubles
    /// per failure, up to an hour.
    pub fn retry_ms(&self) -> i64 {
        self.retry_ms as i64
    }

    /// Which model makes the vectors, and from what form of text ([`TEXT_FORM`]):
    /// `local:all-MiniLM-L6-v2#unlabelled`, `local:e5-small-v2#unlabelled` or
    /// `remote:<model>#unlabelled`. Stored with each vector, so vectors of different models
    /// (or texts) are never compared.
    pub fn model(&self) -> &str {
        match &self.backend {
            Backend::Remote(r) => r.identity(),
            Backend::Local(l) => l.identity(),
        }
    }

    /// How this model's cosines read on the common scale: an embedded model's as stated, a
    /// remote model's as measured ([`Self::calibrate`]; plain until then, or when its cosines
    /// do not follow MiniLM's).
    pub fn calibration(&self) -> Calibration {
        match &self.backend {
            Backend::Remote(r) => r.measured().map_or(Calibration::PLAIN, |m| m.scale),
            Backend::Local(l) => l.spec().calibration,
        }
    }

    /// The calibration when it is known: an embedded model's always, a remote model's once
    /// measured.
    pub fn measured_calibration(&self) -> Option<Measured> {
        match &self.backend {
            Backend::Remote(r) => r.measured(),
            Backend::Local(l) => Some(Measured {
                scale: l.spec().calibration,
                fitted: true,
            }),
        }
    }

    /// Whether a remote model's calibration is due: never measured, no measurement under way
    /// and none failed within the last minute.
    pub fn calibration_due(&self) -> bool {
        matches!(&self.backend, Backend::Remote(r) if r.calibration_due())
    }

    /// Measures a remote model's calibration ([`calibrate`]) when it is due: once, retried a
    /// minute after a failure. Does nothing for an embedded model.
    pub async fn calibrate(&self) {
        let Backend::Remote(r) = &self.backend else {
            return;
        };
        if !r.take_calibration_turn() {
            return;
        }
        let measured = match calibrate::cosines(self).await {
            Ok(cosines) => Some(match calibrate::fit(&cosines) {
                Some(scale) => {
                    tracing::info!(
                        model = r.model(),
                        unrelated = scale.unrelated,
                        span = scale.span,
                        "embeddings model calibrated: its cosine of unrelated texts, and how much cosine reads as the same"
                    );
                    Measured {
                        scale,
                        fitted: true,
                    }
                }
                None => {
                    tracing::warn!(
                        model = r.model(),
                        "the embeddings model's cosines do not follow all-MiniLM-L6-v2's on the calibration pairs; they are read as they are (measured again in ten minutes), so thresholds on closeness in meaning may pass unrelated turns"
                    );
                    Measured {
                        scale: Calibration::PLAIN,
                        fitted: false,
                    }
                }
            }),
            Err(err) => {
                tracing::warn!(
                    model = r.model(),
                    error = %err,
                    "could not calibrate the embeddings model; its cosines are read as they are until it answers (retried in a minute)"
                );
                None
            }
        };
        r.measured_as(measured);
    }

    /// Length of every vector.
    pub fn dimensions(&self) -> usize {
        match &self.backend {
            Backend::Remote(r) => r.dimensions(),
            Backend::Local(_) => local::DIMENSIONS,
        }
    }

    /// Texts per request (per forward pass of the embedded model).
    pub fn batch(&self) -> usize {
        match &self.backend {
            Backend::Remote(r) => r.batch(),
            Backend::Local(l) => l.batch(),
        }
    }

    /// Whether vectors can be made now. A remote endpoint is always `Ready` (its failures
    /// show per request).
    pub fn status(&self) -> Status {
        match &self.backend {
            Backend::Remote(_) => Status::Ready,
            Backend::Local(l) => l.status(),
        }
    }

    pub fn is_ready(&self) -> bool {
        self.status() == Status::Ready
    }

    /// One vector per stored text, in order, each of [`Self::dimensions`]. Texts longer
    /// than the model's window are truncated. `Unavailable` while the embedded model is not
    /// loaded.
    pub async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.embed_for(texts, Purpose::Document).await
    }

    /// One vector per text, embedded for `purpose`.
    pub async fn embed_for(
        &self,
        texts: &[String],
        purpose: Purpose,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        match &self.backend {
            Backend::Remote(r) => r.embed(texts).await,
            Backend::Local(l) => l.embed(texts, purpose).await,
        }
    }
}

impl Embedder {
    /// The vector of one query, from the last few queries' when it was asked lately.
    pub async fn embed_query(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        if let Some(v) = self.remembered(text) {
            return Ok(v);
        }
        let v = self
            .embed_for(&[text.to_string()], Purpose::Query)
            .await?
            .pop()
            .unwrap_or_default();
        let mut q = self.queries.lock().unwrap_or_else(|p| p.into_inner());
        if !q.iter().any(|(t, _)| t == text) {
            if q.len() == QUERY_CACHE {
                q.pop_back();
            }
            q.push_front((text.to_string(), v.clone()));
        }
        Ok(v)
    }

    fn remembered(&self, text: &str) -> Option<Vec<f32>> {
        let q = self.queries.lock().unwrap_or_else(|p| p.into_inner());
        q.iter().find(|(t, _)| t == text).map(|(_, v)| v.clone())
    }
}

/// Whether a vector points somewhere: a text with nothing to read (only punctuation, say) may
/// come back as zeros, which are close to nothing and which the vector index refuses.
pub fn has_direction(v: &[f32]) -> bool {
    v.iter().all(|x| x.is_finite()) && v.iter().any(|x| *x != 0.0)
}

/// Cosine of two vectors; 0 when their lengths differ or one has no direction.
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    if a.len() != b.len() || a.is_empty() {
        return 0.0;
    }
    let (mut dot, mut na, mut nb) = (0.0_f64, 0.0_f64, 0.0_f64);
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (f64::from(*x), f64::from(*y));
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na.sqrt() * nb.sqrt())
    }
}

/// The first `MAX_TEXT_CHARS` characters of `text`.
pub(crate) fn clip(text: &str) -> &str {
    match text.char_indices().nth(MAX_TEXT_CHARS) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_builds_no_embedder_and_a_base_url_selects_the_remote_one() {
        let mut s = EmbedSettings {
            switch: EmbedSwitch::Off,
            base_url: Some("http://127.0.0.1:9/v1".into()),
            model: "m".into(),
            batch: 8,
            ..Default::default()
        };
        assert!(Embedder::from_settings(&s, 16).is_none());
        s.switch = EmbedSwitch::On;
        let e = Embedder::from_settings(&s, 16).expect("remote");
        assert_eq!(e.model(), "remote:m#unlabelled");
        assert_eq!(e.dimensions(), 16);
        assert_eq!(e.batch(), 8);
        assert_eq!(e.status(), Status::Ready);
    }

    #[test]
    fn clip_keeps_whole_characters() {
        let long = "é".repeat(MAX_TEXT_CHARS + 5);
        assert_eq!(clip(&long).chars().count(), MAX_TEXT_CHARS);
        assert_eq!(clip("short"), "short");
    }
}
