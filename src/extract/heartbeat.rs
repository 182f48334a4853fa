//! Work with a heartbeat beside it: the job's session claims and the scheduler's lease are
//! renewed every third of their time to live while a run goes on. The beat is polled beside
//! the work, never instead of it: a renewal may wait on a lock the work holds (the session
//! whose results it is committing), and would wait forever if the work stood still meanwhile.
//! A beat missed while a renewal was slow is delayed, not made up in a burst.

use std::future::Future;
use std::time::Duration;

/// A beat every third of `ttl_ms` (at least every 100 ms).
pub fn every_third_of(ttl_ms: i64) -> Duration {
    Duration::from_millis((ttl_ms / 3).max(100) as u64)
}

/// Awaits `work`, calling `beat` every `every` (first after one period) until it is done.
pub async fn beside<T, B>(work: impl Future<Output = T>, every: Duration, beat: impl Fn() -> B) -> T
where
    B: Future<Output = ()>,
{
    let heartbeat = async {
        let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            beat().await;
        }
    };
    tokio::select! {
        out = work => out,
        never = heartbeat => never,
    }
}
