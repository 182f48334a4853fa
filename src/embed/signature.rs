//! A vector's signature: its direction in one signed byte per dimension (scaled so its
//! largest component is ±127). Stored beside an operation's vector, it lets search compare
//! candidates with each other (diversity) from the rows it already reads, instead of looking
//! the vectors up again and decoding hundreds of floats each. The cosine of two signatures
//! is within about 0.001 of their vectors' cosine.

/// The signature of `v`; none for an empty, zero or non-finite vector.
pub fn of(v: &[f32]) -> Option<Vec<u8>> {
    if v.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let largest = v.iter().fold(0.0_f32, |m, x| m.max(x.abs()));
    if largest == 0.0 {
        return None;
    }
    let scale = 127.0 / largest;
    Some(
        v.iter()
            .map(|x| (x * scale).round().clamp(-127.0, 127.0) as i8 as u8)
            .collect(),
    )
}

/// A vector pointing where the signature points (not normalised).
pub fn direction(sig: &[u8]) -> Vec<f32> {
    sig.iter().map(|&b| f32::from(b as i8)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cosine(a: &[f32], b: &[f32]) -> f32 {
        let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
        let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
        dot / (norm(a) * norm(b))
    }

    /// A deterministic pseudo-random unit-ish vector (xorshift), like a sentence embedding's
    /// spread of small components.
    fn vector(seed: u64, dim: usize) -> Vec<f32> {
        let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..dim)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                ((s >> 40) as f32 / (1u64 << 24) as f32) - 0.5
            })
            .collect()
    }

    #[test]
    fn signatures_keep_the_cosine_of_their_vectors() {
        for seed in 1..40 {
            let a = vector(seed, 384);
            // A neighbour of `a` (cosine near 1) and an unrelated vector (near 0).
            let near: Vec<f32> = a
                .iter()
                .zip(vector(seed + 1_000, 384))
                .map(|(x, y)| x + 0.2 * y)
                .collect();
            let far = vector(seed + 2_000, 384);
            for b in [&near, &far] {
                let exact = cosine(&a, b);
                let signed = cosine(&direction(&of(&a).unwrap()), &direction(&of(b).unwrap()));
                assert!(
                    (exact - signed).abs() < 0.002,
                    "seed {seed}: cosine {exact} became {signed}"
                );
            }
        }
    }

    #[test]
    fn the_largest_component_is_full_scale_and_signs_are_kept() {
        let sig = of(&[0.5, -1.0, 0.25, 0.0]).unwrap();
        assert_eq!(direction(&sig), vec![64.0, -127.0, 32.0, 0.0]);
        assert_eq!(sig.len(), 4);
    }

    #[test]
    fn a_vector_without_direction_has_no_signature() {
        assert_eq!(of(&[]), None);
        assert_eq!(of(&[0.0, 0.0]), None);
        assert_eq!(of(&[f32::NAN, 1.0]), None);
        assert_eq!(of(&[f32::INFINITY, 1.0]), None);
    }
}
