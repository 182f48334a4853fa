//! The extraction job on a schedule (`CAIRN_EXTRACT_SCHEDULE`, read in `CAIRN_EXTRACT_TZ`):
//! every replica of `cairn serve` wakes at each tick of the cron expression and asks for the
//! `extract` lease in Neo4j for that tick. One gets it and runs the job over every project,
//! renewing the lease every third of its time to live, and releases it with the tick marked
//! done; the others wait while it is held and stop once the tick is done. When the holder
//! dies its lease expires and a waiting replica takes the tick over (the sessions the dead
//! one had in flight come back once their claims expire, which is sooner: claims live at most
//! half as long). Ticks are instants of the schedule, the same on every replica.

use std::str::FromStr;
use std::time::Duration;

use chrono::{TimeZone, Utc};
use tokio::sync::watch;

use super::{heartbeat, Job, Outcome, RunRequest, Silent};
use crate::graph::lease::{self, LeaseState};
use crate::graph::{now_ms, Store};

/// The lease a scheduled run over every project is guarded by; a run of one project takes
/// `extract:<project>`.
pub const LEASE: &str = "extract";
/// Sessions one scheduled run analyses at most.
const MAX_SESSIONS: usize = 10_000;

/// A cron expression (5 fields, or 6 with seconds first) in a named time zone.
#[derive(Clone, Debug)]
pub struct Schedule {
    cron: croner::Cron,
    tz: chrono_tz::Tz,
}

impl Schedule {
    /// Parses `expr` and `tz`; the error says what to write instead.
    pub fn parse(expr: &str, tz: &str) -> Result<Self, String> {
        let cron = croner::Cron::from_str(expr.trim()).map_err(|e| {
            format!(
                "CAIRN_EXTRACT_SCHEDULE {expr:?} is not a cron expression ({e}); write 5 fields \
                 (minute hour day month weekday, e.g. `0 3 * * *`) or 6 with seconds first"
            )
        })?;
        let tz = chrono_tz::Tz::from_str(tz.trim()).map_err(|_| {
            format!("CAIRN_EXTRACT_TZ {tz:?} is not an IANA time zone (`UTC`, `Europe/Paris`)")
        })?;
        Ok(Self { cron, tz })
    }

    /// The first tick strictly after `after_ms` (epoch ms), as epoch ms.
    pub fn next_after(&self, after_ms: i64) -> Option<i64> {
        let from = self.tz.timestamp_millis_opt(after_ms).single()?;
        self.cron
            .find_next_occurrence(&from, false)
            .ok()
            .map(|t| t.with_timezone(&Utc).timestamp_millis())
    }

    pub fn describe(&self) -> String {
        format!("{} ({})", self.cron.pattern, self.tz.name())
    }
}

/// Resolves once the stop signal is set (its guard dropped before anything else awaits).
async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|v| *v).await;
}

/// What became of one tick here.
#[derive(Debug)]
pub enum TickOutcome {
    /// This replica ran the job.
    Ran(Box<Outcome>),
    /// Another replica ran it.
    DoneElsewhere,
    /// Neither done nor taken over before `give_up_at` (or the process is stopping).
    GaveUp,
}

/// Runs the job at each tick, one replica at a time.
pub struct Scheduler {
    pub job: Job,
    pub store: Store,
    pub schedule: Schedule,
    pub lease_ttl_ms: i64,
    pub holder: String,
    /// Only this project (else every one).
    pub project: Option<String>,
}

impl Scheduler {
    /// The lease this scheduler's runs take.
    pub fn lease(&self) -> String {
        match &self.project {
            Some(p) => format!("{LEASE}:{p}"),
            None => LEASE.to_string(),
        }
    }

    fn beat(&self) -> Duration {
        heartbeat::every_third_of(self.lease_ttl_ms)
    }

    /// Asks for (or renews) the lease for `tick`.
    async fn acquire(&self, tick: i64) -> crate::graph::StoreResult<LeaseState> {
        lease::acquire(
            &self.store,
            &self.lease(),
            &self.holder,
            self.lease_ttl_ms,
            Some(tick),
        )
        .await
    }

    /// Works on `tick` until it is done, here or elsewhere, or `give_up_at` passes.
    pub async fn run_tick(
        &self,
        tick: i64,
        give_up_at: i64,
        stop: &mut watch::Receiver<bool>,
    ) -> TickOutcome {
        loop {
            if *stop.borrow() || now_ms() >= give_up_at {
                return TickOutcome::GaveUp;
            }
            match self.acquire(tick).await {
                Ok(LeaseState::Held) => return self.run_held(tick, stop).await,
                Ok(LeaseState::Done) => return TickOutcome::DoneElsewhere,
                Ok(LeaseState::Busy) => {}
                Err(e) => tracing::warn!(error = %e, "could not ask for the extraction lease"),
            }
            tokio::select! {
                _ = tokio::time::sleep(self.beat()) => {}
                _ = stopped(stop) => return TickOutcome::GaveUp,
            }
        }
    }

    async fn run_held(&self, tick: i64, stop: &mut watch::Receiver<bool>) -> TickOutcome {
        tracing::info!(tick_ms = tick, holder = %self.holder, "scheduled extraction run started");
        let req = RunRequest {
            project: self.project.clone(),
            max_sessions: MAX_SESSIONS,
            ..Default::default()
        };
        let work = self.job.run_once(&req, &Silent);
        let renew = || async {
            match self.acquire(tick).await {
                Ok(LeaseState::Held) => {}
                Ok(state) => tracing::warn!(
                    ?state,
                    "the extraction lease was lost; the run goes on, its session claims still hold"
                ),
                Err(e) => tracing::warn!(error = %e, "could not renew the extraction lease"),
            }
        };
        let outcome = tokio::select! {
            out = heartbeat::beside(work, self.beat(), renew) => out,
            _ = stopped(stop) => {
                // Released without the tick done: another replica takes it over at once.
                let _ = lease::release(&self.store, &self.lease(), &self.holder, None).await;
                return TickOutcome::GaveUp;
            }
        };
        // Done even when it failed: the failure is in the run's record and the log, and the
        // next tick tries again; retrying at once would fail the same way.
        if let Err(e) = lease::release(&self.store, &self.lease(), &self.holder, Some(tick)).await {
            tracing::warn!(error = %e, "could not release the extraction lease; it expires");
        }
        match outcome {
            Ok(out) => {
                tracing::info!(
                    sessions = out.total.sessions,
                    skipped = out.skipped,
                    failed = out.total.sessions_failed,
                    "scheduled extraction run finished"
                );
                TickOutcome::Ran(Box::new(out))
            }
            Err(e) => {
                tracing::error!(error = %format!("{e:#}"), "scheduled extraction run failed");
                TickOutcome::Ran(Box::default())
            }
        }
    }

    /// Sleeps until each tick and works on it, until stopped.
    pub async fn run(self, mut stop: watch::Receiver<bool>) {
        tracing::info!(schedule = %self.schedule.describe(), lease_ttl_ms = self.lease_ttl_ms, "extraction scheduled");
        let mut after = now_ms();
        loop {
            let Some(tick) = self.schedule.next_after(after) else {
                tracing::warn!("the extraction schedule has no next tick");
                return;
            };
            let wait = Duration::from_millis((tick - now_ms()).max(0) as u64);
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = stopped(&mut stop) => return,
            }
            // A tick not done by the next one is left to the next one.
            let give_up_at = self.schedule.next_after(tick).unwrap_or(i64::MAX);
            let outcome = self.run_tick(tick, give_up_at, &mut stop).await;
            tracing::debug!(tick_ms = tick, ?outcome, "extraction tick");
            if *stop.borrow() {
                return;
            }
            after = tick.max(now_ms() - 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(text: &str) -> i64 {
        chrono::DateTime::parse_from_rfc3339(text)
            .unwrap()
            .timestamp_millis()
    }

    #[test]
    fn nightly_ticks_are_read_in_the_stated_time_zone() {
        let utc = Schedule::parse("0 3 * * *", "UTC").unwrap();
        assert_eq!(
            utc.next_after(ms("2026-01-10T12:00:00Z")),
            Some(ms("2026-01-11T03:00:00Z"))
        );
        let paris = Schedule::parse("0 3 * * *", "Europe/Paris").unwrap();
        assert_eq!(
            paris.next_after(ms("2026-01-10T12:00:00Z")),
            Some(ms("2026-01-11T02:00:00Z"))
        );
        assert_eq!(
            paris.next_after(ms("2026-07-10T12:00:00Z")),
            Some(ms("2026-07-11T01:00:00Z"))
        );
    }

    #[test]
    fn a_seconds_field_is_allowed_and_ticks_are_strictly_after() {
        let s = Schedule::parse("*/10 * * * * *", "UTC").unwrap();
        let t = ms("2026-01-10T12:00:10Z");
        assert_eq!(s.next_after(t), Some(ms("2026-01-10T12:00:20Z")));
        assert_eq!(s.next_after(t - 1), Some(t));
    }

    #[test]
    fn bad_expressions_and_zones_are_refused_with_what_to_write() {
        let e = Schedule::parse("every night", "UTC").unwrap_err();
        assert!(e.contains("CAIRN_EXTRACT_SCHEDULE"), "{e}");
        let e = Schedule::parse("0 3 * * *", "Mars/Olympus").unwrap_err();
        assert!(e.contains("CAIRN_EXTRACT_TZ"), "{e}");
    }
}
