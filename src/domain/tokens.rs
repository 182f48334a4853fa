//! Token counting with the real BPE tokenizers (tiktoken-rs), never a chars/4 estimate.
//! A context's short lines can have their counts remembered ([`count_line`]): its headers
//! and list lines come back in the next context, and counting a short line costs far more
//! than finding its count. Captured texts, each new, are counted afresh ([`count`]).

use std::sync::OnceLock;

use moka::sync::Cache;
use tiktoken_rs::CoreBPE;

use crate::config::Encoding;

/// Texts up to this many bytes have their counts remembered; a longer one is counted afresh.
const REMEMBERED_BYTES: usize = 512;
/// Bytes of remembered texts per encoding, at most (least recently used give way).
const REMEMBERED_CAPACITY: u64 = 8 << 20;

fn bpe(encoding: Encoding) -> &'static CoreBPE {
    match encoding {
        Encoding::O200kBase => tiktoken_rs::o200k_base_singleton(),
        Encoding::Cl100kBase => tiktoken_rs::cl100k_base_singleton(),
    }
}

/// Exact number of tokens of `text` in `encoding` (special-token text counted as ordinary text).
pub fn count(encoding: Encoding, text: &str) -> usize {
    bpe(encoding).encode_ordinary(text).len()
}

/// [`count`] of a text that comes back: remembered when it is short, found again at once.
pub fn count_line(encoding: Encoding, text: &str) -> usize {
    if text.len() > REMEMBERED_BYTES {
        return count(encoding, text);
    }
    let cache = remembered(encoding);
    if let Some(n) = cache.get(text) {
        return n as usize;
    }
    let n = count(encoding, text);
    cache.insert(text.into(), n as u32);
    n
}

/// The remembered counts of short texts in `encoding`.
fn remembered(encoding: Encoding) -> &'static Cache<String, u32> {
    static O200K: OnceLock<Cache<String, u32>> = OnceLock::new();
    static CL100K: OnceLock<Cache<String, u32>> = OnceLock::new();
    let cell = match encoding {
        Encoding::O200kBase => &O200K,
        Encoding::Cl100kBase => &CL100K,
    };
    cell.get_or_init(|| {
        Cache::builder()
            .weigher(|text: &String, _| u32::try_from(text.len() + 8).unwrap_or(u32::MAX))
            .max_capacity(REMEMBERED_CAPACITY)
            .build()
    })
}

/// `text` within `max_tokens`, ending in `…` when it was cut.
pub fn cut(encoding: Encoding, text: &str, max_tokens: usize) -> String {
    if count(encoding, text) <= max_tokens {
        return text.to_string();
    }
    let mut cut = truncate(encoding, text, max_tokens.saturating_sub(1));
    cut.push('…');
    if count(encoding, &cut) > max_tokens {
        cut.pop();
    }
    cut
}

/// The longest prefix of `text` (on a char boundary) whose token count is at most `max_tokens`.
pub fn truncate(encoding: Encoding, text: &str, max_tokens: usize) -> String {
    if max_tokens == 0 {
        return String::new();
    }
    let tokens = bpe(encoding).encode_ordinary(text);
    if tokens.len() <= max_tokens {
        return text.to_string();
    }
    // Decoding a token prefix can split a multi-byte character; back off until it is valid
    // and re-check the count, which can differ after re-tokenisation.
    let mut take = max_tokens;
    while take > 0 {
        if let Ok(prefix) = bpe(encoding).decode(&tokens[..take]) {
            if count(encoding, &prefix) <= max_tokens {
                return prefix;
            }
        }
        take -= 1;
    }
    String::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remembered_count_is_the_tokenizers_own_in_each_encoding() {
        let texts = [
            "### 2023-07-15: work on the parser cache",
            "- (0.74) the cache is the bottleneck",
            "<|endoftext|> counted as text",
            "  indented\ttabs and trailing spaces   ",
            "déjà vu, 東京, 🚀🚀",
            "",
        ];
        let long = "a line of words ".repeat(64);
        for enc in [Encoding::O200kBase, Encoding::Cl100kBase] {
            for text in texts.iter().copied().chain([long.as_str()]) {
                let own = bpe(enc).encode_ordinary(text).len();
                // Counted, then remembered: the same either way.
                assert_eq!(count_line(enc, text), own, "{enc:?} {text:?}");
                assert_eq!(count_line(enc, text), own, "{enc:?} {text:?} again");
            }
        }
        // One encoding's count is not the other's.
        let text = "déjà vu, 東京, 🚀🚀";
        assert_ne!(
            count_line(Encoding::O200kBase, text),
            count_line(Encoding::Cl100kBase, text)
        );
    }

    #[test]
    fn counts_differ_by_encoding_and_truncation_fits() {
        let text = "The quick brown fox jumps over the lazy dog — déjà vu, 東京.";
        let o = count(Encoding::O200kBase, text);
        let c = count(Encoding::Cl100kBase, text);
        assert!(o > 5 && c > 5);
        for max in 0..o + 2 {
            let t = truncate(Encoding::O200kBase, text, max);
            assert!(count(Encoding::O200kBase, &t) <= max);
            assert!(text.starts_with(&t));
        }
    }
}
