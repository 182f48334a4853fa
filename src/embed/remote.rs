//! The remote backend: batches of texts to an OpenAI-compatible `/embeddings` endpoint
//! (async-openai), each request bounded by a deadline and retried with backoff.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, RwLock};
use std::time::{Duration, Instant};

use async_openai::{
    config::OpenAIConfig,
    types::embeddings::{CreateEmbeddingRequest, EmbeddingInput},
    Client,
};

use super::{EmbedError, Measured, MAX_TEXT_CHARS};
use crate::config::EmbedSettings;

/// An embeddings endpoint with its model and the dimension the vector index expects.
pub struct Remote {
    client: Client<OpenAIConfig>,
    /// `remote:<model>`.
    identity: String,
    model: String,
    dimensions: usize,
    timeout: Duration,
    attempts: u32,
    batch: usize,
    /// How its cosines read ([`super::calibrate`]), once measured.
    calibration: RwLock<Option<Measured>>,
    /// A measurement is under way.
    measuring: AtomicBool,
    /// When to measure again after a failed try.
    retry_at: Mutex<Option<Instant>>,
}

/// How long after a failed measurement the calibration is tried again.
const CALIBRATION_RETRY: Duration = Duration::from_secs(60);
/// How long after a measurement that fitted no line it is made again (the endpoint may have
/// answered wrongly that once: zero vectors, a model being swapped).
const CALIBRATION_REFIT: Duration = Duration::from_secs(600);

/// What [`super::Embedder::model`] says for vectors made by the remote model `model`:
/// `remote:<model>#unlabelled` ([`super::TEXT_FORM`]).
pub fn identity(model: &str) -> String {
    format!("remote:{model}{}", super::TEXT_FORM)
}

impl Remote {
    /// A client for `base` (a non-empty base URL).
    pub fn new(settings: &EmbedSettings, base: &str, dimensions: u32) -> Self {
        // One key may serve both the LLM and the embeddings endpoint.
        let key = if settings.api_key.0.is_empty() {
            std::env::var("CAIRN_LLM_API_KEY").unwrap_or_default()
        } else {
            settings.api_key.0.clone()
        };
        let timeout = Duration::from_millis(settings.timeout_ms.max(1));
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .build()
            .unwrap_or_default();
        let config = OpenAIConfig::new()
            .with_api_base(base.trim_end_matches('/'))
            .with_api_key(key);
        Self {
            client: Client::with_config(config).with_http_client(http),
            identity: identity(&settings.model),
            model: settings.model.clone(),
            dimensions: dimensions as usize,
            timeout,
            attempts: settings.attempts.max(1),
            batch: settings.batch.clamp(1, 2048),
            calibration: RwLock::new(None),
            measuring: AtomicBool::new(false),
            retry_at: Mutex::new(None),
        }
    }

    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// The model's name: stored with every vector it makes, so vectors never mix.
    pub fn model(&self) -> &str {
        &self.model
    }

    pub fn dimensions(&self) -> usize {
        self.dimensions
    }

    pub fn batch(&self) -> usize {
        self.batch
    }

    /// The calibration measured, if it was.
    pub fn measured(&self) -> Option<Measured> {
        *self.calibration.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether a measurement is due: none fitted yet, none under way, and none tried lately
    /// (a minute after a failed one, ten after one that fitted no line).
    pub(super) fn calibration_due(&self) -> bool {
        !self.measuring.load(Ordering::Acquire)
            && self.measured().is_none_or(|m| !m.fitted)
            && self
                .retry_at
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .is_none_or(|t| Instant::now() >= t)
    }

    /// Takes a due measurement, so two callers do not both measure; the taker reports it with
    /// [`Self::measured_as`].
    pub(super) fn take_calibration_turn(&self) -> bool {
        self.calibration_due()
            && self
                .measuring
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
    }

    /// Records a measurement taken: `None` when it failed (the endpoint did not answer).
    pub(super) fn measured_as(&self, m: Option<Measured>) {
        if let Some(m) = m {
            *self.calibration.write().unwrap_or_else(|e| e.into_inner()) = Some(m);
        }
        let wait = match m {
            Some(m) if m.fitted => None,
            Some(_) => Some(CALIBRATION_REFIT),
            None => Some(CALIBRATION_RETRY),
        };
        *self.retry_at.lock().unwrap_or_else(|e| e.into_inner()) = wait.map(|w| Instant::now() + w);
        self.measuring.store(false, Ordering::Release);
    }

    /// One vector per text, in order. Retries a failed request `attempts` times with
    /// backoff; a wrong number or size of vectors is an error (never stored).
    pub async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(self.batch) {
            out.extend(self.embed_chunk(chunk).await?);
        }
        Ok(out)
    }

    async fn embed_chunk(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let input: Vec<String> = texts
            .iter()
            .map(|t| {
                let t: String = t.chars().take(MAX_TEXT_CHARS).collect();
                // The API refuses empty strings.
                if t.trim().is_empty() {
                    "(empty)".to_string()
                } else {
                    t
                }
            })
            .collect();
        let mut delay = Duration::from_millis(200);
        let mut attempt = 1;
        loop {
            match self.request(&input).await {
                Ok(v) => return Ok(v),
                Err(err @ EmbedError::Shape { .. }) => return Err(err),
                Err(err) if attempt >= self.attempts => return Err(err),
                Err(err) => {
                    tracing::debug!(error = %err, attempt, retry_in_ms = delay.as_millis() as u64, "embeddings request failed; retrying");
                    tokio::time::sleep(delay).await;
                    delay *= 2;
                    attempt += 1;
                }
            }
        }
    }

    async fn request(&self, input: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let request = CreateEmbeddingRequest {
            model: self.model.clone(),
            input: EmbeddingInput::StringArray(input.to_vec()),
            encoding_format: None,
            user: None,
            dimensions: None,
        };
        let started = std::time::Instant::now();
        let answer = tokio::time::timeout(self.timeout, self.client.embeddings().create(request))
            .await
            .map_err(|_| EmbedError::Timeout(self.timeout))?
            .map_err(|e| EmbedError::Api(e.to_string()))?;
        metrics::histogram!("cairn_embed_request_seconds").record(started.elapsed().as_secs_f64());
        let mut data = answer.data;
        data.sort_by_key(|e| e.index);
        let dim = data.first().map_or(0, |e| e.embedding.len());
        if data.len() != input.len() || data.iter().any(|e| e.embedding.len() != self.dimensions) {
            return Err(EmbedError::Shape {
                got: data.len(),
                want: input.len(),
                dim,
                expected: self.dimensions,
            });
        }
        Ok(data.into_iter().map(|e| e.embedding).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::Calibration;

    fn remote() -> Remote {
        let settings = EmbedSettings {
            model: "m".into(),
            ..Default::default()
        };
        Remote::new(&settings, "http://127.0.0.1:9/v1", 16)
    }

    #[test]
    fn a_calibration_is_measured_once_at_a_time_and_again_only_when_it_did_not_fit() {
        let r = remote();
        assert!(r.calibration_due());
        assert!(r.take_calibration_turn());
        // Under way: nobody else measures.
        assert!(!r.calibration_due() && !r.take_calibration_turn());
        // Failed: tried again a minute later, not at once.
        r.measured_as(None);
        assert_eq!(r.measured(), None);
        assert!(!r.calibration_due());
        *r.retry_at.lock().unwrap() = Some(Instant::now());
        assert!(r.take_calibration_turn());
        // No line fitted: read plainly, measured again later.
        let plain = Measured {
            scale: Calibration::PLAIN,
            fitted: false,
        };
        r.measured_as(Some(plain));
        assert_eq!(r.measured(), Some(plain));
        assert!(!r.calibration_due());
        *r.retry_at.lock().unwrap() = Some(Instant::now());
        assert!(r.take_calibration_turn());
        // Fitted: kept for good.
        let fitted = Measured {
            scale: Calibration {
                unrelated: 0.7,
                span: 0.25,
            },
            fitted: true,
        };
        r.measured_as(Some(fitted));
        assert_eq!(r.measured(), Some(fitted));
        *r.retry_at.lock().unwrap() = Some(Instant::now());
        assert!(!r.calibration_due());
    }
}
