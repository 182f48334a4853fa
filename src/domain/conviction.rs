//! Conviction: how strongly cairn holds a belief, as a pure function of its evidence.
//!
//! Each piece of evidence has a weight `w` in 0..1 and an age; its force decays with a
//! half-life `h`: `w · 0.5^(age / h)`. The belief's creation counts as pseudo-evidence of
//! strength [`PRIOR_STRENGTH`] split by its prior conviction `p`, decaying the same way. With
//! `S` the decayed supporting and `C` the decayed contradicting force, the estimate is the mean
//! of a Beta distribution over a uniform Beta(1, 1) base:
//!
//! ```text
//! conviction = (1 + k·p·d₀ + S) / (2 + k·d₀ + S + C)        d₀ = 0.5^(age_of_belief / h)
//! ```
//!
//! So evidence raises or lowers it, a re-run that finds the same evidence changes nothing (the
//! edges are merged, not added), and a belief nobody supports fades back toward 0.5.

/// How many observations the prior conviction is worth.
pub const PRIOR_STRENGTH: f64 = 2.0;

/// The force left of `weight` after `age_ms` with the given half-life.
pub fn decayed(weight: f64, age_ms: i64, half_life_ms: i64) -> f64 {
    let age = age_ms.max(0) as f64;
    weight * 0.5f64.powf(age / half_life_ms.max(1) as f64)
}

/// The conviction given the prior, the belief's age and the decayed evidence sums.
pub fn conviction(
    prior: f64,
    belief_age_ms: i64,
    half_life_ms: i64,
    support: f64,
    contradict: f64,
) -> f64 {
    let d0 = decayed(1.0, belief_age_ms, half_life_ms);
    let a = PRIOR_STRENGTH * prior.clamp(0.0, 1.0) * d0;
    let total = PRIOR_STRENGTH * d0;
    (1.0 + a + support) / (2.0 + total + support + contradict)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: i64 = 86_400_000;

    #[test]
    fn evidence_moves_conviction_and_time_fades_it() {
        let h = 90 * DAY;
        let fresh = conviction(0.7, 0, h, 0.0, 0.0);
        assert!((fresh - (1.0 + 1.4) / 4.0).abs() < 1e-9);
        let supported = conviction(0.7, 0, h, 1.0, 0.0);
        let contradicted = conviction(0.7, 0, h, 0.0, 1.0);
        assert!(supported > fresh && contradicted < fresh);
        let old = conviction(0.9, 10 * h, h, 0.0, 0.0);
        assert!(
            (old - 0.5).abs() < 0.01,
            "an unsupported belief fades to 0.5, got {old}"
        );
        assert!((decayed(1.0, h, h) - 0.5).abs() < 1e-12);
    }
}
