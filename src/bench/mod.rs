//! Benchmarks run with `cairn bench …` against the real Neo4j. Each reports its figures next
//! to a baseline measured in the same run, never against a fixed threshold.

pub mod ingest;
pub mod load;
pub mod recall;
pub mod search;

use std::time::Duration;

/// The `q`-quantile (0..=1) of `samples` (sorted in place), nearest-rank.
pub fn quantile(samples: &mut [Duration], q: f64) -> Duration {
    if samples.is_empty() {
        return Duration::ZERO;
    }
    samples.sort_unstable();
    let rank = ((q * samples.len() as f64).ceil() as usize).clamp(1, samples.len());
    samples[rank - 1]
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_quantiles() {
        let mut s: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        assert_eq!(quantile(&mut s, 0.5), Duration::from_millis(50));
        assert_eq!(quantile(&mut s, 0.99), Duration::from_millis(99));
        assert_eq!(quantile(&mut s, 1.0), Duration::from_millis(100));
        assert_eq!(quantile(&mut [], 0.5), Duration::ZERO);
    }
}
