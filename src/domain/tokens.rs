//! Token counting with the real BPE tokenizers (tiktoken-rs), never a chars/4 estimate.

use tiktoken_rs::CoreBPE;

use crate::config::Encoding;

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
