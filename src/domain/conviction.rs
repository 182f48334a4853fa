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

/// One piece of evidence: whether it supports the belief, its weight, when it was recorded.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Evidence {
    pub supports: bool,
    pub weight: f64,
    pub at: i64,
}

/// The conviction at `at` (epoch ms) of a belief created at `created_at` with `prior`: the
/// evidence recorded by then, each decayed to `at`. At the present moment it is what
/// extraction stores and the API reports; earlier moments draw its history.
pub fn at(prior: f64, created_at: i64, half_life_ms: i64, evidence: &[Evidence], at: i64) -> f64 {
    let (mut support, mut contradict) = (0.0, 0.0);
    for e in evidence.iter().filter(|e| e.at <= at) {
        let force = decayed(e.weight, at - e.at, half_life_ms);
        if e.supports {
            support += force;
        } else {
            contradict += force;
        }
    }
    conviction(prior, at - created_at, half_life_ms, support, contradict)
}

/// The conviction at `points` moments evenly spread from `from` to `to` (both included), and
/// at each piece of evidence's own moment, in time order: what a plot of it draws.
pub fn history(
    prior: f64,
    created_at: i64,
    half_life_ms: i64,
    evidence: &[Evidence],
    from: i64,
    to: i64,
    points: usize,
) -> Vec<(i64, f64)> {
    let points = points.max(2);
    let span = (to - from).max(0);
    let mut moments: Vec<i64> = (0..points)
        .map(|i| from + (span as f64 * i as f64 / (points - 1) as f64) as i64)
        .chain(
            evidence
                .iter()
                .map(|e| e.at)
                .filter(|t| (from..=to).contains(t)),
        )
        .collect();
    moments.sort_unstable();
    moments.dedup();
    moments
        .into_iter()
        .map(|t| (t, self::at(prior, created_at, half_life_ms, evidence, t)))
        .collect()
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

    #[test]
    fn history_replays_the_evidence_as_it_arrived() {
        let h = 90 * DAY;
        let ev = [
            Evidence {
                supports: true,
                weight: 1.0,
                at: 10 * DAY,
            },
            Evidence {
                supports: false,
                weight: 0.5,
                at: 20 * DAY,
            },
        ];
        let before = at(0.5, 0, h, &ev, 5 * DAY);
        assert!((before - conviction(0.5, 5 * DAY, h, 0.0, 0.0)).abs() < 1e-12);
        let supported = at(0.5, 0, h, &ev, 10 * DAY);
        let contradicted = at(0.5, 0, h, &ev, 20 * DAY);
        assert!(supported > before && contradicted < supported);
        let now = 30 * DAY;
        let expected = conviction(
            0.5,
            now,
            h,
            decayed(1.0, 20 * DAY, h),
            decayed(0.5, 10 * DAY, h),
        );
        assert!((at(0.5, 0, h, &ev, now) - expected).abs() < 1e-12);
        let series = history(0.5, 0, h, &ev, 0, now, 4);
        assert_eq!(series.first().map(|p| p.0), Some(0));
        assert_eq!(series.last().map(|p| p.0), Some(now));
        assert!(series.iter().any(|p| p.0 == 10 * DAY) && series.iter().any(|p| p.0 == 20 * DAY));
        assert!(series.windows(2).all(|w| w[0].0 < w[1].0));
    }
}
