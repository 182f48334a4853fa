//! Probes `/healthz` and `/readyz` on their own connections throughout a scenario, each in a
//! loop of its own (a hanging readiness check never delays a liveness sample), and keeps every
//! sample: status, latency, and the spool depth readiness reports.

use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::{sync::watch, task::JoinHandle};

use crate::quantile;

const HEALTHZ_EVERY: Duration = Duration::from_millis(100);
const READYZ_EVERY: Duration = Duration::from_millis(200);

#[derive(Clone, Copy, Debug)]
pub struct Sample {
    /// When the request was sent, since the scenario's clock started.
    pub at: Duration,
    /// `None`: no answer.
    pub status: Option<u16>,
    pub latency: Duration,
    pub spool_bytes: Option<u64>,
}

impl Sample {
    /// When the answer arrived.
    pub fn answered(&self) -> Duration {
        self.at + self.latency
    }
}

#[derive(Debug, Default)]
pub struct Samples {
    pub healthz: Vec<Sample>,
    pub readyz: Vec<Sample>,
}

impl Samples {
    /// How long after `since` readiness first answered `status` (to a request sent after it).
    pub fn readyz_became(&self, status: u16, since: Duration) -> Option<Duration> {
        self.readyz
            .iter()
            .find(|s| s.at >= since && s.status == Some(status))
            .map(|s| s.answered() - since)
    }

    /// Liveness samples in `[from, to)`: (count, not 200, p50, p99).
    pub fn healthz_between(
        &self,
        from: Duration,
        to: Duration,
    ) -> (usize, usize, Duration, Duration) {
        let window: Vec<&Sample> = self
            .healthz
            .iter()
            .filter(|s| s.at >= from && s.at < to)
            .collect();
        let failed = window.iter().filter(|s| s.status != Some(200)).count();
        let mut lat: Vec<Duration> = window.iter().map(|s| s.latency).collect();
        (
            window.len(),
            failed,
            quantile(&mut lat, 0.5),
            quantile(&mut lat, 0.99),
        )
    }

    /// The deepest spool readiness reported.
    pub fn spool_peak(&self) -> u64 {
        self.readyz
            .iter()
            .filter_map(|s| s.spool_bytes)
            .max()
            .unwrap_or(0)
    }
}

pub struct Probe {
    stop: watch::Sender<bool>,
    healthz: JoinHandle<Vec<Sample>>,
    readyz: JoinHandle<Vec<Sample>>,
    latest: watch::Receiver<Option<u64>>,
}

impl Probe {
    pub fn start(base: &str, clock: Instant) -> anyhow::Result<Self> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()?;
        let (stop, _) = watch::channel(false);
        let (spool_tx, latest) = watch::channel(None);
        let healthz = tokio::spawn(sample(
            http.clone(),
            format!("{base}/healthz"),
            HEALTHZ_EVERY,
            clock,
            stop.subscribe(),
            None,
        ));
        let readyz = tokio::spawn(sample(
            http,
            format!("{base}/readyz"),
            READYZ_EVERY,
            clock,
            stop.subscribe(),
            Some(spool_tx),
        ));
        Ok(Self {
            stop,
            healthz,
            readyz,
            latest,
        })
    }

    /// The spool depth of the latest readiness answer.
    pub fn spool_bytes(&self) -> Option<u64> {
        *self.latest.borrow()
    }

    pub async fn stop(self) -> Samples {
        self.stop.send_replace(true);
        Samples {
            healthz: self.healthz.await.unwrap_or_default(),
            readyz: self.readyz.await.unwrap_or_default(),
        }
    }
}

async fn sample(
    http: reqwest::Client,
    url: String,
    every: Duration,
    clock: Instant,
    mut stop: watch::Receiver<bool>,
    spool: Option<watch::Sender<Option<u64>>>,
) -> Vec<Sample> {
    let mut out = Vec::new();
    while !*stop.borrow() {
        let at = clock.elapsed();
        let sent = Instant::now();
        let (status, body) = match http.get(&url).send().await {
            Ok(r) => (
                Some(r.status().as_u16()),
                r.json::<Value>().await.unwrap_or_default(),
            ),
            Err(_) => (None, Value::Null),
        };
        let s = Sample {
            at,
            status,
            latency: sent.elapsed(),
            spool_bytes: body["spool_bytes"].as_u64(),
        };
        if let (Some(tx), Some(bytes)) = (&spool, s.spool_bytes) {
            tx.send_replace(Some(bytes));
        }
        out.push(s);
        tokio::select! {
            _ = tokio::time::sleep(every.saturating_sub(sent.elapsed())) => {}
            _ = stop.wait_for(|s| *s) => {}
        }
    }
    out
}
